// Test-only helpers shared by the config tests beside the library: addresses, prefixes, peers and
// VIPs spelled as text (the production code parses them from YAML).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string_view>

#include "config/config.h"

namespace vipd::config::testing {

inline bgp::IpAddress ip(std::string_view text) {
  auto a = bgp::IpAddress::parse(text);
  EXPECT_TRUE(a.has_value()) << text;
  return a.value_or(bgp::IpAddress{});
}

inline bgp::Prefix prefix(std::string_view text) {
  auto p = bgp::Prefix::parse(text);
  EXPECT_TRUE(p.has_value()) << text;
  return p.value_or(bgp::Prefix{});
}

inline Peer peer(std::string_view address, uint32_t asn = 65000) {
  Peer p;
  p.address = ip(address);
  p.asn = asn;
  return p;
}

inline Vip vip(std::string_view address) {
  Vip v;
  v.prefix = prefix(address);
  return v;
}

// A config as the parser leaves one, with this node's identity (router ID 192.0.2.11, AS 65001)
// and nothing else: each test adds its peers and VIPs.
inline Config nodeConfig() {
  Config c;
  c.apiVersion = "vipd.io/v1alpha1";
  c.kind = "SpeakerConfiguration";
  c.routerId = ip("192.0.2.11");
  c.localAsn = 65001;
  return c;
}

}  // namespace vipd::config::testing
