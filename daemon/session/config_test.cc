// sessionConfigFor() and peers[].families: a config parsed from YAML, its session settings, and a
// SessionFsm built from them driven to Established by events. A session carries only its
// families: the multiprotocol capabilities in its OPEN (RFC 4760), the VIPs it announces and
// withdraws, and its End-of-RIB markers (RFC 4724 section 2). No sockets, no clock.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "config/parser.h"
#include "daemon/session/config.h"
#include "bgp/fsm_test_support.h"

namespace vipd::daemon {
namespace {

using bgp::kIpv4Unicast;
using bgp::kIpv6Unicast;
using bgp::testing::ip;
using bgp::testing::prefix;

constexpr uint32_t kPeerAsn = 65000;

// Two VIPs (one per family) and the peers given, as a dual-stack node's config.
config::Config parse(const std::string& peers) {
  std::string yaml =
      "apiVersion: vipd.io/v1alpha1\nkind: SpeakerConfiguration\nrouterId: 192.0.2.11\n"
      "localAsn: 65001\n"
      "vips:\n  - address: 203.0.113.10/32\n  - address: 2001:db8:ffff::10/128\n"
      "peers:\n" +
      peers + "health: {type: none}\n";
  auto parsed = config::parseConfig(yaml, "vipd.yaml");
  EXPECT_TRUE(parsed.has_value()) << (parsed ? "" : parsed.error().front().toString());
  return parsed.value_or(config::Config{});
}

const std::string kPerFamilyPeers =
    "  - address: 192.0.2.1\n    asn: 65000\n"
    "  - address: 2001:db8::1\n    asn: 65000\n";

// Dials from `local`, then the peer answers with an OPEN offering both unicast families.
bgp::OpenMessage establish(bgp::SessionFsm& fsm, const bgp::IpAddress& local,
                           std::vector<bgp::UpdateMessage>& first) {
  (void)fsm.start();
  auto opened = fsm.onConnected(local);
  auto opens = bgp::testing::sentOf<bgp::OpenMessage>(opened);
  EXPECT_EQ(opens.size(), 1u) << bgp::testing::describe(opened);
  bgp::OpenMessage peer;
  peer.myAs = kPeerAsn;
  peer.holdTimeSeconds = 90;
  peer.bgpIdentifier = 0xC0000201u;
  peer.capabilities.multiprotocol = {kIpv4Unicast, kIpv6Unicast};
  peer.capabilities.fourOctetAs = kPeerAsn;
  peer.capabilities.routeRefresh = true;
  (void)fsm.onBytes(bgp::encode(peer));
  auto up = fsm.onBytes(bgp::encode(bgp::KeepaliveMessage{}));
  EXPECT_EQ(fsm.state(), bgp::SessionState::Established) << bgp::testing::describe(up);
  first = bgp::testing::sentOf<bgp::UpdateMessage>(up, bgp::CodecOptions{true});
  return opens.empty() ? bgp::OpenMessage{} : opens.front();
}

// The families of the End-of-RIB markers among `updates`, and the prefixes they announce.
std::vector<bgp::AfiSafi> endOfRibs(const std::vector<bgp::UpdateMessage>& updates) {
  std::vector<bgp::AfiSafi> out;
  for (const auto& u : updates) {
    if (auto family = u.endOfRibFamily()) {
      out.push_back(*family);
    }
  }
  return out;
}

std::set<bgp::Prefix> announced(const std::vector<bgp::UpdateMessage>& updates) {
  std::set<bgp::Prefix> out;
  for (const auto& u : updates) {
    out.insert(u.nlri.begin(), u.nlri.end());
    if (u.attributes.mpReach) {
      out.insert(u.attributes.mpReach->nlri.begin(), u.attributes.mpReach->nlri.end());
    }
  }
  return out;
}

std::set<bgp::Prefix> withdrawn(const std::vector<bgp::UpdateMessage>& updates) {
  std::set<bgp::Prefix> out;
  for (const auto& u : updates) {
    out.insert(u.withdrawn.begin(), u.withdrawn.end());
    if (u.attributes.mpUnreach) {
      out.insert(u.attributes.mpUnreach->withdrawn.begin(),
                 u.attributes.mpUnreach->withdrawn.end());
    }
  }
  return out;
}

const std::set<bgp::Prefix> kBothVips = {prefix("203.0.113.10/32"),
                                         prefix("2001:db8:ffff::10/128")};

TEST(SessionConfig, SessionPerFamilyCarriesOnlyItsOwnFamily) {
  config::Config c = parse(kPerFamilyPeers);
  ASSERT_EQ(c.peers.size(), 2u);
  struct Case {
    const config::Peer& peer;
    bgp::IpAddress local;
    bgp::AfiSafi family;
    bgp::Prefix vip;
  };
  for (const Case& k : {Case{c.peers[0], ip("192.0.2.11"), kIpv4Unicast, prefix("203.0.113.10/32")},
                        Case{c.peers[1], ip("2001:db8::11"), kIpv6Unicast,
                             prefix("2001:db8:ffff::10/128")}}) {
    SCOPED_TRACE(k.peer.address.toString());
    bgp::SessionConfig s = sessionConfigFor(c, k.peer, 1);
    EXPECT_EQ(s.families, std::vector<bgp::AfiSafi>{k.family});
    bgp::SessionFsm fsm(s);
    (void)fsm.setAnnouncements(kBothVips);
    std::vector<bgp::UpdateMessage> first;
    bgp::OpenMessage open = establish(fsm, k.local, first);
    // RFC 4760: the OPEN offers this session's family only, though the peer offers both.
    EXPECT_EQ(open.capabilities.multiprotocol, std::vector<bgp::AfiSafi>{k.family});
    ASSERT_TRUE(fsm.negotiated().has_value());
    EXPECT_EQ(fsm.negotiated()->families, std::vector<bgp::AfiSafi>{k.family});
    EXPECT_EQ(announced(first), std::set<bgp::Prefix>{k.vip});
    EXPECT_EQ(endOfRibs(first), std::vector<bgp::AfiSafi>{k.family});
    EXPECT_EQ(fsm.advertised(), std::set<bgp::Prefix>{k.vip});
    // Withdrawing everything withdraws only what this session announced.
    auto gone = fsm.setAnnouncements({});
    EXPECT_EQ(withdrawn(bgp::testing::sentOf<bgp::UpdateMessage>(gone, bgp::CodecOptions{true})),
              std::set<bgp::Prefix>{k.vip});
  }
}

TEST(SessionConfig, Ipv4SessionWithNextHopIpv6CarriesBoth) {
  // Today's dual-stack configs keep working: one IPv4 session with nextHopIpv6 carries both.
  config::Config c = parse("  - address: 192.0.2.1\n    asn: 65000\n"
                           "    nextHopIpv6: 2001:db8::11\n");
  bgp::SessionConfig s = sessionConfigFor(c, c.peers[0], 1);
  EXPECT_EQ(s.families, (std::vector<bgp::AfiSafi>{kIpv4Unicast, kIpv6Unicast}));
  bgp::SessionFsm fsm(s);
  (void)fsm.setAnnouncements(kBothVips);
  std::vector<bgp::UpdateMessage> first;
  bgp::OpenMessage open = establish(fsm, ip("192.0.2.11"), first);
  EXPECT_EQ(open.capabilities.multiprotocol,
            (std::vector<bgp::AfiSafi>{kIpv4Unicast, kIpv6Unicast}));
  EXPECT_EQ(announced(first), kBothVips);
  EXPECT_EQ(endOfRibs(first), (std::vector<bgp::AfiSafi>{kIpv4Unicast, kIpv6Unicast}));
}

TEST(SessionConfig, ExplicitFamiliesNarrowAnIpv4Session) {
  // families: [ipv6] on an IPv4 session with nextHopIpv6: the IPv4 VIP stays off it.
  config::Config c = parse("  - address: 192.0.2.1\n    asn: 65000\n"
                           "    nextHopIpv6: 2001:db8::11\n    families: [ipv6]\n"
                           "  - address: 192.0.2.2\n    asn: 65000\n");
  bgp::SessionConfig s = sessionConfigFor(c, c.peers[0], 1);
  EXPECT_EQ(s.families, std::vector<bgp::AfiSafi>{kIpv6Unicast});
  bgp::SessionFsm fsm(s);
  (void)fsm.setAnnouncements(kBothVips);
  std::vector<bgp::UpdateMessage> first;
  bgp::OpenMessage open = establish(fsm, ip("192.0.2.11"), first);
  EXPECT_EQ(open.capabilities.multiprotocol, std::vector<bgp::AfiSafi>{kIpv6Unicast});
  EXPECT_EQ(announced(first), std::set<bgp::Prefix>{prefix("2001:db8:ffff::10/128")});
  EXPECT_EQ(endOfRibs(first), std::vector<bgp::AfiSafi>{kIpv6Unicast});
}

}  // namespace
}  // namespace vipd::daemon
