// Checks and error texts shared by the kernel table and the fake, so both answer alike.
// Private to netlink/.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "netlink/address_table.h"

namespace vipd::netlink::checks {

// An Error when `address` is not an IPv4 or IPv6 prefix of a valid length.
std::optional<Error> address(const char* operation, const std::string& object,
                             const InterfaceAddress& address);
// An Error when the kernel could never hold an interface called `name` (1 to 15 bytes).
std::optional<Error> interfaceName(const char* operation, std::string_view name);
// The refusal to turn an existing non-dummy interface into one of vipd's dummies.
Error notADummy(std::string_view name, const std::string& kind);
// "No such device", as the kernel says it.
Error noSuchDevice(const char* operation, std::string object);

}  // namespace vipd::netlink::checks
