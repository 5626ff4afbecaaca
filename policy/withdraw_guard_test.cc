// The withdraw guard as one function (policy/withdraw_guard.h): at the request and when the
// withdrawal takes effect, with the tie-break among nodes withdrawn at the same time (issue 40).
#include "policy/withdraw_guard.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <string>

namespace vipd::policy {
namespace {

const bgp::Prefix kVip4 = *bgp::Prefix::parse("203.0.113.10/32");
const bgp::IpAddress kFabric = *bgp::IpAddress::parse("192.0.2.1");

bgp::IpAddress node(int i) { return *bgp::IpAddress::parse(fmt::format("192.0.2.{}", 10 + i)); }

// An announcer as a route reflector shows it (ORIGINATOR_ID), or as an eBGP ToR that keeps the
// next hop (no ORIGINATOR_ID), or with the next hop rewritten to the router's own.
enum class Named { RouterId, NextHop, Rewritten };

Announcer other(int i, bool draining, Named named) {
  Announcer a;
  a.key = fmt::format("node {}", i);
  a.nextHop = named == Named::Rewritten ? kFabric : node(i);
  if (named == Named::RouterId) {
    a.originatorId = node(i).v4Value();
  }
  a.via = {kFabric};
  a.draining = draining;
  return a;
}

GuardSelf self(int i) { return GuardSelf{node(i).v4Value(), {node(i)}}; }

VipView view(std::vector<Announcer> others) {
  VipView v;
  v.available = true;
  Announcer me;
  me.key = "this node";
  me.self = true;
  v.announcers.push_back(me);
  for (auto& a : others) {
    v.announcers.push_back(std::move(a));
  }
  return v;
}

TEST(WithdrawGuard, AtTheRequestOnlyNodesNotDrainingStay) {
  auto v = view({other(2, false, Named::NextHop), other(3, true, Named::NextHop)});
  EXPECT_EQ(othersStayingAt(v, self(1), GuardMoment::Request), 1u);
  auto check = checkWithdraw({{kVip4, v}}, {kVip4}, 2, self(1), GuardMoment::Request);
  ASSERT_TRUE(check.refusal);
  EXPECT_NE(check.refusal->find("refused: fewer than guard.minAnnouncers (2)"), std::string::npos);
  EXPECT_NE(check.refusal->find("1 other node(s) would remain"), std::string::npos);
  EXPECT_NE(check.refusal->find("--force"), std::string::npos);
  EXPECT_FALSE(checkWithdraw({{kVip4, v}}, {kVip4}, 1, self(1), GuardMoment::Request).refusal);
}

// What falls short is also given apart from the operator's sentence, for a caller that words the
// refusal its own way (a reload keeps the VIPs it would remove: daemon/speaker_reload.cc).
TEST(WithdrawGuard, ARefusalSaysWhichVipsFallShortAndByHowMuch) {
  auto v = view({other(2, false, Named::NextHop), other(3, true, Named::NextHop)});
  auto check = checkWithdraw({{kVip4, v}}, {kVip4}, 2, self(1), GuardMoment::Request);
  ASSERT_TRUE(check.refusal);
  EXPECT_EQ(check.shortOf, (std::map<bgp::Prefix, size_t>{{kVip4, 1}}));
  EXPECT_EQ(check.shortfall.rfind("203.0.113.10/32: 1 other node(s) would remain (", 0), 0u)
      << check.shortfall;
  EXPECT_NE(check.refusal->find(check.shortfall), std::string::npos);
  auto allowed = checkWithdraw({{kVip4, v}}, {kVip4}, 1, self(1), GuardMoment::Request);
  EXPECT_TRUE(allowed.shortOf.empty());
  EXPECT_TRUE(allowed.shortfall.empty());
}

TEST(WithdrawGuard, WhatItCannotCheckIsAllowedAndSaidSo) {
  VipView none;
  none.available = false;
  auto check = checkWithdraw({{kVip4, none}}, {kVip4}, 1, self(1), GuardMoment::Effect);
  EXPECT_FALSE(check.refusal);
  EXPECT_NE(check.note.find("not checked for 203.0.113.10/32"), std::string::npos);
  EXPECT_TRUE(checkWithdraw({}, {}, 1, self(1), GuardMoment::Effect).note.empty());
}

// Every node of three withdrawn at the same instant, each seeing the other two draining at the
// end of its GRACEFUL_SHUTDOWN phase: exactly the lowest-ranked min(minAnnouncers, 3) stay, in
// every topology that names the nodes; where the paths do not name them, every node stays.
TEST(WithdrawGuard, NodesWithdrawnAtOnceKeepExactlyTheLowestRankedOnes) {
  for (auto named : {Named::RouterId, Named::NextHop, Named::Rewritten}) {
    for (size_t min : {0u, 1u, 2u, 3u}) {
      std::array<bool, 3> refused{};
      for (int me = 1; me <= 3; ++me) {
        std::vector<Announcer> others;
        for (int j = 1; j <= 3; ++j) {
          if (j != me) {
            others.push_back(other(j, true, named));
          }
        }
        auto check =
            checkWithdraw({{kVip4, view(others)}}, {kVip4}, min, self(me), GuardMoment::Effect);
        refused[me - 1] = check.refusal.has_value();
      }
      SCOPED_TRACE(testing::Message() << "named " << static_cast<int>(named) << " min " << min);
      const auto stay = static_cast<size_t>(std::count(refused.begin(), refused.end(), true));
      if (named == Named::Rewritten) {
        EXPECT_EQ(stay, min == 0 ? 0u : 3u) << "unnamed: nobody counts on another; all stay";
      } else {
        EXPECT_EQ(stay, std::min<size_t>(min, 3));
        for (size_t i = 0; i < stay; ++i) {
          EXPECT_TRUE(refused[i]) << "the lowest router IDs stay";
        }
      }
    }
  }
}

TEST(WithdrawGuard, AtTheEffectANodeNotDrainingStillCountsAndAHigherDrainingOneDoesNot) {
  // Node 2 drains with node 3 serving: node 2 may go (node 3 stays), whatever node 1 does.
  auto v = view({other(1, true, Named::NextHop), other(3, false, Named::NextHop)});
  EXPECT_EQ(othersStayingAt(v, self(2), GuardMoment::Effect), 2u);
  // Node 1 sees node 2 draining (ranked after it) and nobody else: it stays.
  auto v1 = view({other(2, true, Named::NextHop)});
  EXPECT_EQ(othersStayingAt(v1, self(1), GuardMoment::Effect), 0u);
  EXPECT_TRUE(checkWithdraw({{kVip4, v1}}, {kVip4}, 1, self(1), GuardMoment::Effect).refusal);
  // Node 2 sees node 1 draining (ranked before it): node 1 will be refused, so node 2 goes.
  auto v2 = view({other(1, true, Named::NextHop)});
  auto check = checkWithdraw({{kVip4, v2}}, {kVip4}, 1, self(2), GuardMoment::Effect);
  EXPECT_FALSE(check.refusal);
  // A next hop of the other family is not compared with this node's IPv4 one.
  Announcer v6 = other(1, true, Named::NextHop);
  v6.nextHop = *bgp::IpAddress::parse("2001:db8::1");
  EXPECT_EQ(othersStayingAt(view({v6}), self(2), GuardMoment::Effect), 0u);
}

}  // namespace
}  // namespace vipd::policy
