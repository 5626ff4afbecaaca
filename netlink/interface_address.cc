#include <arpa/inet.h>
#include <net/if.h>
#include <sys/socket.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <string>

#include "netlink/address_table.h"
#include "netlink/checks.h"

namespace vipd::netlink {

std::optional<InterfaceAddress> InterfaceAddress::parse(std::string_view cidr) {
  const auto slash = cidr.find('/');
  if (slash == std::string_view::npos) {
    return std::nullopt;
  }
  const std::string host(cidr.substr(0, slash));
  const std::string_view lengthText = cidr.substr(slash + 1);
  InterfaceAddress result;
  unsigned maxLength = 0;
  if (host.find(':') != std::string::npos) {
    result.family = AF_INET6;
    maxLength = 128;
  } else {
    result.family = AF_INET;
    maxLength = 32;
  }
  if (inet_pton(result.family, host.c_str(), result.bytes.data()) != 1) {
    return std::nullopt;
  }
  // Digits only: from_chars would accept a leading '-' for signed types and we want no "+" or
  // spaces either.
  if (lengthText.empty() || lengthText.size() > 3) {
    return std::nullopt;
  }
  unsigned length = 0;
  const auto [end, ec] =
      std::from_chars(lengthText.data(), lengthText.data() + lengthText.size(), length);
  if (ec != std::errc{} || end != lengthText.data() + lengthText.size() || length > maxLength) {
    return std::nullopt;
  }
  result.prefixLength = static_cast<uint8_t>(length);
  return result;
}

std::string InterfaceAddress::toString() const {
  char text[INET6_ADDRSTRLEN] = {};
  if (inet_ntop(family, bytes.data(), text, sizeof text) == nullptr) {
    return "<invalid address family " + std::to_string(family) + ">";
  }
  return std::string(text) + "/" + std::to_string(prefixLength);
}

std::string Error::toString() const {
  std::string text = operation;
  if (!object.empty()) {
    text += " " + object;
  }
  text += ": " + (reason.empty() ? std::string("unknown error") : reason);
  return text;
}

}  // namespace vipd::netlink

namespace vipd::netlink::checks {

std::optional<Error> address(const char* operation, const std::string& object,
                             const InterfaceAddress& address) {
  const bool valid = (address.family == AF_INET && address.prefixLength <= 32) ||
                     (address.family == AF_INET6 && address.prefixLength <= 128);
  if (valid) {
    return std::nullopt;
  }
  return Error{operation, object, "not an IPv4 or IPv6 prefix", EINVAL};
}

std::optional<Error> interfaceName(const char* operation, std::string_view name) {
  if (!name.empty() && name.size() < IFNAMSIZ) {
    return std::nullopt;
  }
  return Error{operation, std::string(name),
               "interface names are 1 to " + std::to_string(IFNAMSIZ - 1) + " bytes long", EINVAL};
}

Error notADummy(std::string_view name, const std::string& kind) {
  const std::string what =
      kind.empty() ? std::string("a device without a link kind") : "a " + kind + " device";
  return Error{
      "create dummy", std::string(name),
      "the name belongs to " + what + "; vipd does not take over an interface it did not create",
      EEXIST};
}

Error noSuchDevice(const char* operation, std::string object) {
  return Error{operation, std::move(object), std::strerror(ENODEV), ENODEV};
}

}  // namespace vipd::netlink::checks
