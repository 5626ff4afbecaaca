// The fabric's view (policy/fabric_view.h): announcers from a route reflector's and from eBGP
// ToRs' paths, this node's own path, degraded and draining paths, duplicate router IDs, and an
// unavailable view.
#include "policy/fabric_view.h"

#include <gtest/gtest.h>

#include "bgp/update_builder.h"

namespace vipd::policy {
namespace {

const bgp::Prefix kVip4 = *bgp::Prefix::parse("203.0.113.10/32");
const bgp::Prefix kVip6 = *bgp::Prefix::parse("2001:db8:ffff::10/128");
bgp::IpAddress ip(const char* text) { return *bgp::IpAddress::parse(text); }
uint32_t id(const char* text) { return ip(text).v4Value(); }

// This node: router ID 192.0.2.11, next hop 192.0.2.11 towards every peer.
const FabricIdentity kIdentity{id("192.0.2.11"), {}};

bgp::AsPath path(std::vector<uint32_t> asns) {
  return {bgp::AsPathSegment{bgp::AsPathSegment::Type::AsSequence, std::move(asns)}};
}

SessionView reflector(std::vector<FabricPath> paths) {
  SessionView s;
  s.peer = ip("192.0.2.1");
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
  auto view = buildFabricView({reflector({a, b})}, {kVip4}, {}, kIdentity).at(kVip4);
  EXPECT_EQ(view.count(), 2u);  // this node does not announce
  EXPECT_EQ(view.announcers[0].key, "next hop 192.0.2.12");
  EXPECT_FALSE(view.announcers[0].self);
}

TEST(FabricView, ARewrittenNextHopLeavesOnlyThePathIdToTellNodesApart) {
  FabricPath a{7, ip("192.0.2.1"), std::nullopt, {}, path({65000, 65002}), std::nullopt, {}};
  FabricPath b{8, ip("192.0.2.1"), std::nullopt, {}, path({65000, 65003}), std::nullopt, {}};
  auto view = buildFabricView({reflector({a, b})}, {kVip4}, {}, kIdentity).at(kVip4);
  EXPECT_EQ(view.count(), 2u);
  EXPECT_EQ(view.announcers[0].key, "peer 192.0.2.1 path 7");
}

TEST(FabricView, ThisNodesOwnPathSentBackIsThisNode) {
  auto view = buildFabricView({reflector({reflected(1, "192.0.2.11"), reflected(2, "192.0.2.12")})},
                              {kVip4}, {kVip4}, kIdentity)
                  .at(kVip4);
  EXPECT_EQ(view.count(), 2u);
  EXPECT_EQ(view.others(), 1u);
  EXPECT_TRUE(view.duplicateRouterId.empty());
}

TEST(FabricView, AnotherNodeWithThisNodesRouterIdIsReported) {
  FabricPath clone = reflected(3, "192.0.2.14");
  clone.originatorId = id("192.0.2.11");
  auto view = buildFabricView({reflector({clone})}, {kVip4}, {kVip4}, kIdentity).at(kVip4);
  ASSERT_EQ(view.duplicateRouterId.size(), 1u);
  EXPECT_NE(view.duplicateRouterId[0].find("192.0.2.14"), std::string::npos);
  EXPECT_NE(view.duplicateRouterId[0].find("same router ID"), std::string::npos);
  EXPECT_EQ(view.others(), 1u);  // it still holds a path: counted by its next hop
  EXPECT_EQ(view.announcers[1].key, "next hop 192.0.2.14");
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
  FabricPath prepended{2, ip("192.0.2.13"), std::nullopt, {},
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

}  // namespace
}  // namespace vipd::policy
