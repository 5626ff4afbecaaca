// Conversions between bgp::IpAddress (the pure code's address value) and Asio's, in one place
// for every socket the daemon opens. An IPv4-mapped IPv6 address (a dual-stack listener's view of
// an IPv4 peer) converts to the IPv4 address it stands for.
#pragma once

#include <algorithm>
#include <array>

#include <boost/asio/ip/address.hpp>

#include "bgp/ip_address.h"

namespace vipd::daemon {

inline boost::asio::ip::address toAsio(const bgp::IpAddress& a) {
  if (a.isV4()) {
    return boost::asio::ip::address_v4(a.v4Value());
  }
  boost::asio::ip::address_v6::bytes_type b;
  std::copy(a.bytes.begin(), a.bytes.end(), b.begin());
  return boost::asio::ip::address_v6(b);
}

inline bgp::IpAddress fromAsio(const boost::asio::ip::address& a) {
  if (a.is_v4()) {
    return bgp::IpAddress::v4(a.to_v4().to_uint());
  }
  auto v6 = a.to_v6();
  if (v6.is_v4_mapped()) {
    return bgp::IpAddress::v4(
        boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, v6).to_uint());
  }
  auto b = v6.to_bytes();
  std::array<uint8_t, 16> raw;
  std::copy(b.begin(), b.end(), raw.begin());
  return bgp::IpAddress::v6(raw);
}

}  // namespace vipd::daemon
