#include "bgp/ip_address.h"

#include <arpa/inet.h>

#include <charconv>
#include <cstring>

#include "bytes/big_endian.h"

namespace vipd::bgp {

IpAddress IpAddress::v4(uint32_t hostOrder) {
  std::array<uint8_t, 4> b{};
  vipd::bytes::store32(b, 0, hostOrder);
  return v4(b);
}

IpAddress IpAddress::v4(std::array<uint8_t, 4> b) {
  IpAddress a;
  a.family = Afi::Ipv4;
  std::memcpy(a.bytes.data(), b.data(), 4);
  return a;
}

IpAddress IpAddress::v6(const std::array<uint8_t, 16>& b) {
  IpAddress a;
  a.family = Afi::Ipv6;
  a.bytes = b;
  return a;
}

std::optional<IpAddress> IpAddress::parse(std::string_view text) {
  // inet_pton needs a NUL-terminated string; addresses are short, so bound the copy.
  if (text.empty() || text.size() > 45) {
    return std::nullopt;
  }
  char buf[46];
  std::memcpy(buf, text.data(), text.size());
  buf[text.size()] = '\0';
  std::array<uint8_t, 16> raw{};
  if (text.find(':') == std::string_view::npos) {
    if (inet_pton(AF_INET, buf, raw.data()) != 1) {
      return std::nullopt;
    }
    return v4(std::array<uint8_t, 4>{raw[0], raw[1], raw[2], raw[3]});
  }
  if (inet_pton(AF_INET6, buf, raw.data()) != 1) {
    return std::nullopt;
  }
  return v6(raw);
}

bool IpAddress::isZero() const {
  for (size_t i = 0; i < size(); ++i) {
    if (bytes[i] != 0) {
      return false;
    }
  }
  return true;
}

uint32_t IpAddress::v4Value() const {
  // Qualified: inside IpAddress, `bytes` alone is the member array.
  return vipd::bytes::load32(bytes, 0);
}

std::string IpAddress::toString() const {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(isV4() ? AF_INET : AF_INET6, bytes.data(), buf, sizeof buf);
  return buf;
}

std::optional<Prefix> Prefix::parse(std::string_view text) {
  auto slash = text.find('/');
  if (slash == std::string_view::npos) {
    return std::nullopt;
  }
  auto addr = IpAddress::parse(text.substr(0, slash));
  if (!addr) {
    return std::nullopt;
  }
  auto lenText = text.substr(slash + 1);
  unsigned len = 0;
  auto [ptr, ec] = std::from_chars(lenText.data(), lenText.data() + lenText.size(), len);
  if (lenText.empty() || ec != std::errc{} || ptr != lenText.data() + lenText.size()) {
    return std::nullopt;
  }
  Prefix p{*addr, static_cast<uint8_t>(len)};
  if (len > p.maxLength()) {
    return std::nullopt;
  }
  return p;
}

bool Prefix::contains(const IpAddress& a) const {
  if (address.family != a.family || length > maxLength()) {
    return false;
  }
  const size_t whole = length / 8;
  if (std::memcmp(address.bytes.data(), a.bytes.data(), whole) != 0) {
    return false;
  }
  const unsigned rest = length % 8;
  if (rest == 0) {
    return true;
  }
  const auto mask = static_cast<uint8_t>(0xFF << (8 - rest));
  return (address.bytes[whole] & mask) == (a.bytes[whole] & mask);
}

std::string Prefix::toString() const { return address.toString() + "/" + std::to_string(length); }

}  // namespace vipd::bgp
