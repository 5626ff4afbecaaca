// The fabric's view (policy/fabric_view.h): announcers from a route reflector's and from eBGP
// ToRs' paths, this node's own path, degraded and draining paths, duplicate router IDs, and an
// unavailable view; then each topology docs/config.md names (issue 40), each asserting that the
// count is the nodes that really announce.
#include "policy/fabric_view.h"

#include <algorithm>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "bgp/update_builder.h"

namespace vipd::policy {
namespace {

const bgp::Prefix kVip4 = *bgp::Prefix::parse("203.0.113.10/32");
const bgp::Prefix kVip6 = *bgp::Prefix::parse("2001:db8:ffff::10/128");
bgp::IpAddress ip(const char* text) { return *bgp::IpAddress::parse(text); }
uint32_t id(const char* text) { return ip(text).v4Value(); }

// This node: router ID 192.0.2.11, next hop 192.0.2.11 towards every peer, AS 65000 (iBGP with
// the route reflectors).
const FabricIdentity kIdentity{id("192.0.2.11"), {}, 65000, false};

bgp::AsPath path(std::vector<uint32_t> asns) {
  return {bgp::AsPathSegment{bgp::AsPathSegment::Type::AsSequence, std::move(asns)}};
}

SessionView reflector(std::vector<FabricPath> paths) {
  SessionView s;
  s.peer = ip("192.0.2.1");
  s.peerAsn = 65000;
  s.established = true;
  s.settled = true;
  s.addPath = {bgp::Afi::Ipv4};
  s.ownNextHops = {ip("192.0.2.11")};
  s.paths[kVip4] = std::move(paths);
  return s;
}

// A route reflector (iBGP): ORIGINATOR_ID names each node, next hops kept, LOCAL_PREF 100.
FabricPath reflected(uint32_t pathId, const char* node) {
  return {pathId, ip(node), id(node), {id("192.0.2.1")}, {}, 100, {}};
}

TEST(FabricView, CountsEveryNodeARouteReflectorHoldsAndThisOne) {
  auto view = buildFabricView({reflector({reflected(1, "192.0.2.12"), reflected(2, "192.0.2.13")})},
                              {kVip4}, {kVip4}, kIdentity)
                  .at(kVip4);
  EXPECT_TRUE(view.available);
  EXPECT_EQ(view.count(), 3u);
  EXPECT_EQ(view.others(), 2u);
  EXPECT_EQ(view.othersServing(), 2u);
  EXPECT_TRUE(view.announcers[0].self);
  EXPECT_EQ(view.announcers[1].key, "router 192.0.2.12");
  EXPECT_EQ(view.announcers[2].key, "router 192.0.2.13");
  EXPECT_TRUE(view.duplicateRouterId.empty());
  // One node stops: 2.
  view = buildFabricView({reflector({reflected(1, "192.0.2.12")})}, {kVip4}, {kVip4}, kIdentity)
             .at(kVip4);
  EXPECT_EQ(view.count(), 2u);
}

TEST(FabricView, TwoReflectorsHoldingTheSameNodesCountEachNodeOnce) {
  auto second = reflector({reflected(5, "192.0.2.12"), reflected(6, "192.0.2.13")});
  second.peer = ip("192.0.2.2");
  auto view = buildFabricView(
                  {reflector({reflected(1, "192.0.2.12"), reflected(2, "192.0.2.13")}), second},
                  {kVip4}, {kVip4}, kIdentity)
                  .at(kVip4);
  EXPECT_EQ(view.count(), 3u);
  EXPECT_EQ(view.announcers[1].via.size(), 2u);
}

TEST(FabricView, EbgpPathsAreKnownByTheirNextHopEvenWithThisNodesAsInThePath) {
  // Nodes share AS 65001 behind a ToR in AS 65000 that keeps the next hop (third party).
  FabricPath a{7, ip("192.0.2.12"), std::nullopt, {}, path({65000, 65001}), std::nullopt, {}};
  FabricPath b{8, ip("192.0.2.13"), std::nullopt, {}, path({65000, 65001}), std::nullopt, {}};
  auto tor = reflector({a, b});
  FabricIdentity shared{id("192.0.2.11"), {}, 65001, true};
  auto view = buildFabricView({tor}, {kVip4}, {}, shared).at(kVip4);
  EXPECT_EQ(view.count(), 2u);  // this node does not announce
  EXPECT_EQ(view.announcers[0].key, "next hop 192.0.2.12");
  EXPECT_FALSE(view.announcers[0].self);
  // Not told that the nodes share the AS: this node's AS as origin is taken for its own path,
  // and the count errs low, never high.
  shared.sharedAsn = false;
  EXPECT_EQ(buildFabricView({tor}, {kVip4}, {}, shared).at(kVip4).others(), 0u);
}

TEST(FabricView, ARewrittenNextHopLeavesTheOriginAsToTellNodesApart) {
  FabricPath a{7, ip("192.0.2.1"), std::nullopt, {}, path({65000, 65002}), std::nullopt, {}};
  FabricPath b{8, ip("192.0.2.1"), std::nullopt, {}, path({65000, 65003}), std::nullopt, {}};
  auto tor = reflector({a, b});
  const FabricIdentity ebgp{id("192.0.2.11"), {}, 65001, false};
  auto view = buildFabricView({tor}, {kVip4}, {}, ebgp).at(kVip4);
  EXPECT_EQ(view.count(), 2u);
  EXPECT_EQ(view.announcers[0].key, "AS 65002");
  EXPECT_EQ(view.announcers[1].key, "AS 65003");
}

TEST(FabricView, ThisNodesOwnPathSentBackIsThisNode) {
  auto view = buildFabricView({reflector({reflected(1, "192.0.2.11"), reflected(2, "192.0.2.12")})},
                              {kVip4}, {kVip4}, kIdentity)
                  .at(kVip4);
  EXPECT_EQ(view.count(), 2u);
  EXPECT_EQ(view.others(), 1u);
  EXPECT_TRUE(view.duplicateRouterId.empty());
}

TEST(FabricView, AnotherNodeWithThisNodesRouterIdIsReportedAndCountsAsThisNode) {
  FabricPath clone = reflected(3, "192.0.2.14");
  clone.originatorId = id("192.0.2.11");
  auto view = buildFabricView({reflector({clone})}, {kVip4}, {kVip4}, kIdentity).at(kVip4);
  ASSERT_EQ(view.duplicateRouterId.size(), 1u);
  EXPECT_NE(view.duplicateRouterId[0].find("192.0.2.14"), std::string::npos);
  EXPECT_NE(view.duplicateRouterId[0].find("same router ID"), std::string::npos);
  // A path with this node's router ID is this node's (errs low: a forged one adds nothing).
  EXPECT_EQ(view.others(), 0u);
  // One session alone may be a forgery: not confirmed, so /readyz does not fail on it.
  EXPECT_TRUE(view.duplicateRouterIdConfirmed.empty());
  // The same path from a second route reflector confirms it.
  auto second = reflector({clone});
  second.peer = ip("192.0.2.2");
  view = buildFabricView({reflector({clone}), second}, {kVip4}, {kVip4}, kIdentity).at(kVip4);
  ASSERT_EQ(view.duplicateRouterIdConfirmed.size(), 1u);
  EXPECT_NE(view.duplicateRouterIdConfirmed[0].find("sent by 192.0.2.1, 192.0.2.2"),
            std::string::npos);
}

TEST(FabricView, TwoOtherNodesWithOneRouterIdAreCountedApartAndReported) {
  auto twin = reflected(3, "192.0.2.14");
  twin.originatorId = id("192.0.2.12");
  auto view = buildFabricView({reflector({reflected(1, "192.0.2.12"), twin})}, {kVip4}, {kVip4},
                              kIdentity)
                  .at(kVip4);
  EXPECT_EQ(view.others(), 2u);
  EXPECT_EQ(view.announcers[1].key, "next hop 192.0.2.12");
  EXPECT_EQ(view.announcers[2].key, "next hop 192.0.2.14");
  ASSERT_EQ(view.duplicateRouterId.size(), 1u);
  EXPECT_NE(view.duplicateRouterId[0].find("192.0.2.12, 192.0.2.14"), std::string::npos);
}

TEST(FabricView, DegradedAndDrainingPathsAreNotServing) {
  auto lowPref = reflected(1, "192.0.2.12");
  lowPref.localPref = 50;  // iBGP degrade
  FabricPath prepended{2, ip("192.0.2.13"), id("192.0.2.13"), {},
                       path({65000, 65003, 65003, 65003, 65003}), std::nullopt, {}};
  auto draining = reflected(3, "192.0.2.14");
  draining.communities = {bgp::kGracefulShutdownCommunity};
  auto tagged = reflected(4, "192.0.2.15");
  tagged.communities = {(65000u << 16) | 666u};
  FabricIdentity identity = kIdentity;
  identity.degradeCommunities = {(65000u << 16) | 666u};
  auto view = buildFabricView({reflector({lowPref, prepended, draining, tagged})}, {kVip4},
                              {kVip4}, identity)
                  .at(kVip4);
  EXPECT_EQ(view.others(), 4u);
  EXPECT_EQ(view.othersServing(), 0u);
  EXPECT_EQ(view.othersStaying(), 3u);  // the draining one is leaving
  auto healthy = reflected(5, "192.0.2.16");
  view = buildFabricView({reflector({lowPref, healthy})}, {kVip4}, {kVip4}, identity).at(kVip4);
  EXPECT_EQ(view.othersServing(), 1u);
  EXPECT_NE(describeAnnouncers(view, false).find("(degraded)"), std::string::npos);
}

TEST(FabricView, UnavailableWithoutAnEstablishedAddPathSessionForTheFamily) {
  auto s = reflector({reflected(1, "192.0.2.12")});
  auto views = buildFabricView({s}, {kVip4, kVip6}, {kVip4, kVip6}, kIdentity);
  EXPECT_TRUE(views.at(kVip4).available);
  EXPECT_FALSE(views.at(kVip6).available);
  EXPECT_NE(views.at(kVip6).unavailableReason.find("ADD-PATH"), std::string::npos);
  EXPECT_EQ(views.at(kVip6).count(), 0u);  // never a guess
  s.established = false;
  auto down = buildFabricView({s}, {kVip4}, {kVip4}, kIdentity).at(kVip4);
  EXPECT_FALSE(down.available);
  EXPECT_EQ(down.unavailableReason, "fabric view unavailable: no Established peer");
  s.established = true;
  s.settled = false;  // just opened: the peer may not have sent everything yet
  EXPECT_FALSE(buildFabricView({s}, {kVip4}, {kVip4}, kIdentity).at(kVip4).available);
  s.settled = true;
  s.addPath.clear();  // the peer sends only its best path: not a count
  EXPECT_FALSE(buildFabricView({s}, {kVip4}, {kVip4}, kIdentity).at(kVip4).available);
}

// ---- Topologies (docs/config.md): three nodes 192.0.2.11-13 announce; this node is .11 ----

SessionView session(const char* peer, uint32_t peerAsn, std::vector<FabricPath> paths) {
  auto s = reflector(std::move(paths));
  s.peer = ip(peer);
  s.peerAsn = peerAsn;
  return s;
}

// An eBGP path: ASes crossed (the sender's first), next hop.
FabricPath ebgp(uint32_t pathId, const char* nextHop, std::vector<uint32_t> asns) {
  return {pathId, ip(nextHop), std::nullopt, {}, path(std::move(asns)), std::nullopt, {}};
}

// Per-node ASes 65001-65003 behind ToRs in 65000 (and 65100).
const FabricIdentity kNode1Ebgp{id("192.0.2.11"), {}, 65001, false};

TEST(FabricTopology, PairOfRouteReflectors) {
  // Each reflector sends the other nodes' paths it got directly and through the other reflector
  // (a longer CLUSTER_LIST), and this node's own path through the other reflector.
  auto viaOther = [](FabricPath p, const char* other) {
    p.clusterList.insert(p.clusterList.begin(), id(other));
    return p;
  };
  auto rr1 = session("192.0.2.1", 65000,
                     {reflected(1, "192.0.2.12"), reflected(2, "192.0.2.13"),
                      viaOther(reflected(3, "192.0.2.12"), "192.0.2.2"),
                      viaOther(reflected(4, "192.0.2.11"), "192.0.2.2")});
  auto rr2 = session("192.0.2.2", 65000,
                     {reflected(1, "192.0.2.13"), reflected(2, "192.0.2.12"),
                      viaOther(reflected(3, "192.0.2.11"), "192.0.2.1")});
  auto view = buildFabricView({rr1, rr2}, {kVip4}, {kVip4}, kIdentity).at(kVip4);
  EXPECT_EQ(view.count(), 3u);
  EXPECT_EQ(view.others(), 2u);
  EXPECT_EQ(view.announcers[1].via.size(), 2u);
  ASSERT_EQ(view.sessions.size(), 2u);
  EXPECT_TRUE(view.sessions[0].used && view.sessions[0].self);
  EXPECT_EQ(view.sessions[0].others,
            (std::vector<std::string>{"router 192.0.2.12", "router 192.0.2.13"}));
  // Node 3 stops: both reflectors drop it.
  rr1.paths[kVip4].erase(rr1.paths[kVip4].begin() + 1);
  rr2.paths[kVip4].erase(rr2.paths[kVip4].begin());
  EXPECT_EQ(buildFabricView({rr1, rr2}, {kVip4}, {kVip4}, kIdentity).at(kVip4).count(), 2u);
}

TEST(FabricTopology, SingleEbgpTorKeepingTheNextHop) {
  auto tor = session("192.0.2.1", 65000,
                     {ebgp(1, "192.0.2.12", {65000, 65002}),
                      ebgp(2, "192.0.2.13", {65000, 65003})});
  auto view = buildFabricView({tor}, {kVip4}, {kVip4}, kNode1Ebgp).at(kVip4);
  EXPECT_EQ(view.count(), 3u);
  // Both names of each node are kept; the status shows the next hop.
  EXPECT_EQ(view.announcers[1].key, "next hop 192.0.2.12");
  EXPECT_EQ(view.announcers[1].identities,
            (std::set<std::string>{"AS 65002", "next hop 192.0.2.12"}));
  EXPECT_EQ(view.announcers[1].nextHop, ip("192.0.2.12"));
}

// FRR and GoBGP with `next hop self`, the IPv6 VIP over the IPv4 session: the IPv6 paths come
// back with the router's own IPv6 address (GoBGP: the session's IPv4 address, mapped) as next
// hop on every node's path. That address names no node; the origin ASes tell the nodes apart
// (e2e_router_configs found main counting 2 for 3 nodes).
TEST(FabricTopology, Ipv6PathsOverAnIpv4SessionWithTheRoutersNextHop) {
  for (const char* routerHop : {"2001:db8::1", "::ffff:192.0.2.1"}) {
    auto tor = session("192.0.2.1", 65000, {});
    tor.addPath = {bgp::Afi::Ipv4, bgp::Afi::Ipv6};
    tor.ownNextHops = {ip("192.0.2.11"), ip("2001:db8::11")};
    tor.paths[kVip6] = {ebgp(1, routerHop, {65000, 65002}), ebgp(2, routerHop, {65000, 65003})};
    auto view = buildFabricView({tor}, {kVip6}, {kVip6}, kNode1Ebgp).at(kVip6);
    EXPECT_EQ(view.count(), 3u) << routerHop;
    EXPECT_EQ(view.announcers[1].identities, (std::set<std::string>{"AS 65002"})) << routerHop;
  }
  // A node's own IPv6 next hop, kept by the router, still names that node.
  auto tor = session("192.0.2.1", 65000, {});
  tor.addPath = {bgp::Afi::Ipv4, bgp::Afi::Ipv6};
  tor.paths[kVip6] = {ebgp(1, "2001:db8::12", {65000, 65002}),
                      ebgp(2, "2001:db8::13", {65000, 65003})};
  auto view = buildFabricView({tor}, {kVip6}, {kVip6}, kNode1Ebgp).at(kVip6);
  EXPECT_EQ(view.count(), 3u);
  EXPECT_EQ(view.announcers[1].key, "next hop 2001:db8::12");
}

// The issue 40 report: two ToRs (65000 at .1, 65100 at .2) peering with each other, both with
// `next hop self` and `add paths tx`, every node dual-homed. Each ToR sends the other nodes'
// paths directly and through the other ToR, and this node's own path through the other ToR:
// AS paths 65000 65100 65001 and 65100 65000 65001 (main counted those as two more nodes: 5).
TEST(FabricTopology, TwoEbgpTorsWithNextHopSelfAndDualHomedNodes) {
  auto tor1 = session("192.0.2.1", 65000,
                      {ebgp(1, "192.0.2.1", {65000, 65002}), ebgp(2, "192.0.2.1", {65000, 65003}),
                       ebgp(3, "192.0.2.1", {65000, 65100, 65002}),
                       ebgp(4, "192.0.2.1", {65000, 65100, 65003}),
                       ebgp(5, "192.0.2.1", {65000, 65100, 65001})});
  auto tor2 = session("192.0.2.2", 65100,
                      {ebgp(1, "192.0.2.2", {65100, 65002}), ebgp(2, "192.0.2.2", {65100, 65003}),
                       ebgp(3, "192.0.2.2", {65100, 65000, 65002}),
                       ebgp(4, "192.0.2.2", {65100, 65000, 65003}),
                       ebgp(5, "192.0.2.2", {65100, 65000, 65001})});
  auto view = buildFabricView({tor1, tor2}, {kVip4}, {kVip4}, kNode1Ebgp).at(kVip4);
  EXPECT_EQ(view.count(), 3u) << describeAnnouncers(view, true);
  EXPECT_EQ(view.others(), 2u);
  EXPECT_EQ(view.announcers[0].via.size(), 2u);  // its own path came back through both
  EXPECT_EQ(view.announcers[1].key, "AS 65002");
  EXPECT_EQ(view.announcers[1].pathIds, (std::set<uint32_t>{1, 3}));
  EXPECT_TRUE(view.notCounted.empty());
  // A ToR that keeps the next hop of its own clients (third party) and passes the other ToR's
  // as next hop: the same nodes, named by next hop on one session and by AS on the other.
  tor1.paths[kVip4][0].nextHop = ip("192.0.2.12");
  tor1.paths[kVip4][1].nextHop = ip("192.0.2.13");
  for (size_t i = 2; i < 5; ++i) {
    tor1.paths[kVip4][i].nextHop = ip("192.0.2.2");
  }
  view = buildFabricView({tor1, tor2}, {kVip4}, {kVip4}, kNode1Ebgp).at(kVip4);
  EXPECT_EQ(view.count(), 3u) << describeAnnouncers(view, true);
  // Node 3 withdraws: gone from both.
  for (auto* s : {&tor1, &tor2}) {
    auto& p = s->paths[kVip4];
    p.erase(std::remove_if(p.begin(), p.end(),
                           [](const FabricPath& f) { return f.asPath[0].asns.back() == 65003; }),
            p.end());
  }
  EXPECT_EQ(buildFabricView({tor1, tor2}, {kVip4}, {kVip4}, kNode1Ebgp).at(kVip4).count(), 2u);
}

TEST(FabricTopology, NodesSharingOneAsAreToldApartByNextHopOrNotAtAll) {
  const FabricIdentity shared{id("192.0.2.11"), {}, 65001, true};
  auto keeps = session("192.0.2.1", 65000,
                       {ebgp(1, "192.0.2.12", {65000, 65001}),
                        ebgp(2, "192.0.2.13", {65000, 65001})});
  auto view = buildFabricView({keeps}, {kVip4}, {kVip4}, shared).at(kVip4);
  EXPECT_EQ(view.count(), 3u);
  // A ToR that rewrites the next hop: the paths name no node. Unavailable, never a guess.
  auto rewrites = session("192.0.2.1", 65000,
                          {ebgp(1, "192.0.2.1", {65000, 65001}),
                           ebgp(2, "192.0.2.1", {65000, 65001})});
  view = buildFabricView({rewrites}, {kVip4}, {kVip4}, shared).at(kVip4);
  EXPECT_FALSE(view.available);
  EXPECT_EQ(view.count(), 0u);
  EXPECT_NE(view.unavailableReason.find("cannot tell the nodes apart"), std::string::npos)
      << view.unavailableReason;
  EXPECT_NE(view.unavailableReason.find("guard.nodesShareAsn"), std::string::npos);
  EXPECT_FALSE(view.sessions[0].used);
  // Beside a session that can tell them apart, that one counts and the other is shown unused.
  auto second = keeps;
  second.peer = ip("192.0.2.2");
  view = buildFabricView({rewrites, second}, {kVip4}, {kVip4}, shared).at(kVip4);
  EXPECT_TRUE(view.available);
  EXPECT_EQ(view.count(), 3u);
  EXPECT_FALSE(view.sessions[0].used);
  EXPECT_TRUE(view.sessions[1].used);
}

// The issue 40 report: a neighbour sending five paths from next hops that do not exist made
// node 1 count 8 announcers while the fabric held 3.
TEST(FabricTopology, AHostileSessionCannotRaiseTheCount) {
  auto tor = session("192.0.2.1", 65000,
                     {ebgp(1, "192.0.2.12", {65000, 65002}),
                      ebgp(2, "192.0.2.13", {65000, 65003})});
  std::vector<FabricPath> invented = {ebgp(1, "192.0.2.12", {65200, 65002}),
                                      ebgp(2, "192.0.2.13", {65200, 65003})};
  for (uint32_t i = 0; i < 5; ++i) {
    invented.push_back(
        ebgp(10 + i, fmt::format("198.51.100.{}", i + 1).c_str(), {65200, 65300 + i}));
  }
  auto hostile = session("192.0.2.3", 65200, invented);
  auto view = buildFabricView({tor, hostile}, {kVip4}, {kVip4}, kNode1Ebgp).at(kVip4);
  EXPECT_EQ(view.count(), 3u) << describeAnnouncers(view, true);
  ASSERT_EQ(view.notCounted.size(), 5u);
  EXPECT_EQ(view.notCounted[0], "next hop 198.51.100.1 (only via 192.0.2.3)");
  EXPECT_EQ(view.sessions[1].others.size(), 7u);  // the status shows what it said
  // Only invented paths: it can lower the count (a node held a little longer), never raise it.
  hostile.paths[kVip4].erase(hostile.paths[kVip4].begin(), hostile.paths[kVip4].begin() + 2);
  view = buildFabricView({tor, hostile}, {kVip4}, {kVip4}, kNode1Ebgp).at(kVip4);
  EXPECT_EQ(view.count(), 1u);
  // The same five over iBGP through a reflector beside the real one: the same bound.
  auto rr = reflector({reflected(1, "192.0.2.12"), reflected(2, "192.0.2.13")});
  auto forger =
      session("192.0.2.3", 65000, {reflected(1, "192.0.2.12"), reflected(2, "192.0.2.13")});
  for (uint32_t i = 0; i < 5; ++i) {
    forger.paths[kVip4].push_back(reflected(10 + i, fmt::format("198.51.100.{}", i + 1).c_str()));
  }
  EXPECT_EQ(buildFabricView({rr, forger}, {kVip4}, {kVip4}, kIdentity).at(kVip4).count(), 3u);
}

// The issue 40 report: one iBGP peer sending a path with this node's router ID as
// ORIGINATOR_ID made /readyz fail on every node.
TEST(FabricTopology, ASpoofedRouterIdFromOneSessionIsReportedNotConfirmed) {
  auto rr = reflector({reflected(1, "192.0.2.12"), reflected(2, "192.0.2.13")});
  auto spoof = reflected(9, "198.51.100.9");
  spoof.originatorId = id("192.0.2.11");
  auto forger = session("192.0.2.3", 65000,
                        {reflected(1, "192.0.2.12"), reflected(2, "192.0.2.13"), spoof});
  auto view = buildFabricView({rr, forger}, {kVip4}, {kVip4}, kIdentity).at(kVip4);
  EXPECT_EQ(view.count(), 3u);
  ASSERT_EQ(view.duplicateRouterId.size(), 1u);
  EXPECT_NE(view.duplicateRouterId[0].find("sent by 192.0.2.3"), std::string::npos);
  EXPECT_TRUE(view.duplicateRouterIdConfirmed.empty());
}

TEST(FabricTopology, SessionsThatCannotCountAreShownWithTheirReason) {
  auto rr = reflector({reflected(1, "192.0.2.12")});
  auto best = session("192.0.2.2", 65000, {reflected(1, "192.0.2.13")});
  best.addPath.clear();
  auto down = session("192.0.2.3", 65000, {});
  down.established = false;
  auto view = buildFabricView({rr, best, down}, {kVip4}, {kVip4}, kIdentity).at(kVip4);
  EXPECT_EQ(view.count(), 2u);  // the best-path session neither adds nor removes
  ASSERT_EQ(view.sessions.size(), 3u);
  EXPECT_NE(view.sessions[1].reason.find("only its best path"), std::string::npos);
  EXPECT_EQ(view.sessions[2].reason, "not Established");
}

}  // namespace
}  // namespace vipd::policy
