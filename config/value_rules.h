// Pure rules for the scalar values a vipd config holds: decimal numbers, colon-separated
// community fields, address:port, DNS names, classes of IP address, and the "did you mean"
// suggestion for a misspelt key. No YAML and no error collection: reader.h turns these
// answers into ConfigErrors.
//
// Private to config/ (shared by its translation units); include parser.h instead.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bgp/ip_address.h"

namespace vipd::config::internal {

// `text` as an unsigned decimal: digits only (no sign, no spaces), at most 20 of them, no
// overflow. Nothing otherwise.
[[nodiscard]] std::optional<uint64_t> parseDecimal(std::string_view text);

// True when `text` is one or more of the ASCII digits 0-9 and nothing else.
bool isAllDigits(std::string_view text);

// Splits "a:b:c" into exactly `parts` decimal fields, each no larger than `max`; nothing when the
// count, a field's syntax or a field's value is wrong.
[[nodiscard]] std::optional<std::vector<uint32_t>> parseColonFields(std::string_view text,
                                                                    size_t parts, uint64_t max);

// "127.0.0.1:6443", "[::1]:6443": an IP address (no host names: resolving would make the config's
// meaning depend on DNS at start-up) and a port 1..65535. IPv6 only in brackets, IPv4 never.
[[nodiscard]] std::optional<std::pair<bgp::IpAddress, uint16_t>> parseAddressPort(
    std::string_view text);

// Why `text` is not a DNS name as a certificate carries one (RFC 1123 labels: letters, digits and
// '-', not at either end of a label; no empty label, so no leading, trailing or doubled dot; no
// wildcard), or nothing when it is one. The reason is one clause, for "... is not a DNS name: ".
[[nodiscard]] std::optional<std::string> dnsNameProblem(std::string_view text);

// Levenshtein distance: insertions, deletions and substitutions, each costing 1.
size_t editDistance(std::string_view a, std::string_view b);

// The message for a key that is not in `known`: names the closest known key when it is close
// enough (case ignored, so "holdtime" points at "holdTime"), else lists them all.
std::string unknownKeyMessage(std::string_view key, std::initializer_list<std::string_view> known);

// An unknown key as errors show it (issue 43): at most kMaxKeyShown characters, then "...", and
// anything outside printable ASCII as '?'. A key vipd does not know is whatever the file holds
// (a line of /etc/shadow once, renamed over the config), and its errors go to the log and to
// `vipctl status`; a typo is short, so nothing an operator needs is lost.
inline constexpr size_t kMaxKeyShown = 24;
std::string shortKey(std::string_view key);

// Address classes that can never be a VIP, a peer or a next hop.
bool isMulticast(const bgp::IpAddress& a);  // 224.0.0.0/4, ff00::/8
bool isLoopback(const bgp::IpAddress& a);   // 127.0.0.0/8, ::1
bool isV4MappedV6(const bgp::IpAddress& a);  // ::ffff:0:0/96
bool isBroadcast(const bgp::IpAddress& a);  // 255.255.255.255

// "IPv4" or "IPv6", for messages.
const char* familyName(const bgp::IpAddress& a);

}  // namespace vipd::config::internal
