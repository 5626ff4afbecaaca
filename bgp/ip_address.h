// IP addresses and prefixes as plain values, shared by the codec, the FSM and config validation.
// Pure: no sockets, no resolver. Text forms follow inet_pton/inet_ntop.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace vipd::bgp {

// Address family identifiers (RFC 4760 section 3; IANA AFI registry).
enum class Afi : uint16_t { Ipv4 = 1, Ipv6 = 2 };
// Subsequent address family identifiers; vipd only speaks unicast.
enum class Safi : uint8_t { Unicast = 1 };

struct AfiSafi {
  Afi afi = Afi::Ipv4;
  Safi safi = Safi::Unicast;
  auto operator<=>(const AfiSafi&) const = default;
};

inline constexpr AfiSafi kIpv4Unicast{Afi::Ipv4, Safi::Unicast};
inline constexpr AfiSafi kIpv6Unicast{Afi::Ipv6, Safi::Unicast};

// An IPv4 or IPv6 address. IPv4 uses the first 4 bytes of `bytes`; the rest stay zero so that
// comparison and hashing work on the whole value.
struct IpAddress {
  Afi family = Afi::Ipv4;
  std::array<uint8_t, 16> bytes{};

  static IpAddress v4(uint32_t hostOrder);
  static IpAddress v4(std::array<uint8_t, 4> b);
  static IpAddress v6(const std::array<uint8_t, 16>& b);
  // Parses dotted-quad or RFC 4291 text; nullopt on anything else (no hostnames, no scope ids).
  static std::optional<IpAddress> parse(std::string_view text);

  bool isV4() const { return family == Afi::Ipv4; }
  bool isV6() const { return family == Afi::Ipv6; }
  size_t size() const { return isV4() ? 4 : 16; }
  bool isZero() const;
  bool isLinkLocalV6() const { return isV6() && bytes[0] == 0xfe && (bytes[1] & 0xc0) == 0x80; }
  // Host-order value of an IPv4 address (precondition: isV4()).
  uint32_t v4Value() const;
  std::string toString() const;

  auto operator<=>(const IpAddress&) const = default;
};

// A prefix: address plus length. Bits past `length` are zero in every Prefix the codec produces.
struct Prefix {
  IpAddress address;
  uint8_t length = 0;

  // "203.0.113.10/32", "2001:db8::10/128"; nullopt when malformed or the length is too long.
  static std::optional<Prefix> parse(std::string_view text);
  uint8_t maxLength() const { return address.isV4() ? 32 : 128; }
  bool isHost() const { return length == maxLength(); }
  // Whether `a` lies in this prefix: the same family and the first `length` bits equal.
  bool contains(const IpAddress& a) const;
  std::string toString() const;

  auto operator<=>(const Prefix&) const = default;
};

}  // namespace vipd::bgp
