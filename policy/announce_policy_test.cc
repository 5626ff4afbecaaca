// The announce policy (policy/announce_policy.h): every combination of its inputs, and the
// withdraw guard.
#include "policy/announce_policy.h"

#include <gtest/gtest.h>

#include <tuple>

namespace vipd::policy {
namespace {

const bgp::Prefix kVip4 = *bgp::Prefix::parse("203.0.113.10/32");
const bgp::Prefix kVip6 = *bgp::Prefix::parse("2001:db8:ffff::10/128");

PolicyInputs healthyNode() {
  PolicyInputs in;
  in.vips = {kVip4, kVip6};
  in.bound = {kVip4, kVip6};
  return in;
}

TEST(AnnouncePolicy, AHealthyActiveNodeAnnouncesEveryBoundVipNormally) {
  auto d = decide(healthyNode());
  EXPECT_EQ(d.vips.at(kVip4).announce, Announce::Normal);
  EXPECT_EQ(d.vips.at(kVip6).announce, Announce::Normal);
  EXPECT_TRUE(d.mayBind);
  EXPECT_EQ(d.announced(), (std::set{kVip4, kVip6}));
  EXPECT_TRUE(d.degraded().empty());
}

TEST(AnnouncePolicy, AVipBoundNowhereIsNeverAnnouncedWhateverElseHolds) {
  for (bool healthy : {true, false}) {
    for (bool degrade : {true, false}) {
      for (bool othersServe : {true, false}) {
        auto in = healthyNode();
        in.bound = {kVip6};
        in.healthy = healthy;
        in.degradeOnFailure = degrade;
        in.fabric[kVip4] = {true, othersServe ? 2u : 0u};
        auto d = decide(in);
        EXPECT_EQ(d.vips.at(kVip4).announce, Announce::None);
        EXPECT_FALSE(d.vips.at(kVip4).heldByNeverZero);
        const bool wouldAnnounce = healthy || degrade || !othersServe;
        if (wouldAnnounce) {
          EXPECT_EQ(d.vips.at(kVip4).reason, "not bound on its interface");
        }
      }
    }
  }
}

TEST(AnnouncePolicy, StandbyOrShuttingDownAnnouncesNothingAndBindsNothing) {
  for (auto [active, shutting] : {std::pair{false, false}, std::pair{true, true}}) {
    auto in = healthyNode();
    in.active = active;
    in.shuttingDown = shutting;
    in.fabric[kVip4] = {true, 0};  // even as the last node: not this instance's to announce
    auto d = decide(in);
    EXPECT_TRUE(d.announced().empty());
    EXPECT_FALSE(d.mayBind);
  }
}

TEST(AnnouncePolicy, TheOperatorsWithdrawIsNeverOverriddenByNeverZero) {
  auto in = healthyNode();
  in.operatorWithdrawn = true;
  in.fabric[kVip4] = {true, 0};
  auto d = decide(in);
  EXPECT_TRUE(d.announced().empty());
  EXPECT_FALSE(d.mayBind);
  EXPECT_EQ(d.vips.at(kVip4).reason, "withdrawn by the operator");
}

TEST(AnnouncePolicy, ADrainAnnouncesUntilItsWithdrawStep) {
  auto in = healthyNode();
  in.operatorWithdrawn = true;  // vipctl withdraw persists first, then drains
  in.draining = true;
  auto d = decide(in);
  EXPECT_EQ(d.announced(), (std::set{kVip4, kVip6}));
  EXPECT_FALSE(d.mayBind);
  in.drainWithdrawSent = true;
  d = decide(in);
  EXPECT_TRUE(d.announced().empty());
  // SIGTERM's drain: no withdrawn state.
  in.operatorWithdrawn = false;
  in.drainWithdrawSent = false;
  EXPECT_EQ(decide(in).announced(), (std::set{kVip4, kVip6}));
  in.drainWithdrawSent = true;
  EXPECT_TRUE(decide(in).announced().empty());
}

// The heart of issue 28: every automatic reason, with and without a fabric view, with and
// without another serving node.
TEST(AnnouncePolicy, AnAutomaticWithdrawalNeverLeavesTheFabricWithoutAPath) {
  enum class Reason { Health, ReturnPath, Both };
  for (auto reason : {Reason::Health, Reason::ReturnPath, Reason::Both}) {
    for (int view : {0, 1, 2}) {  // 0: no view; 1: view, nobody else; 2: view, others serve
      auto in = healthyNode();
      in.unbindWhenUnhealthy = true;
      if (reason != Reason::ReturnPath) {
        in.healthy = false;
      }
      if (reason != Reason::Health) {
        in.returnPathBlocks = {kVip4};
      }
      if (view > 0) {
        in.fabric[kVip4] = {true, view == 2 ? 1u : 0u};
        in.fabric[kVip6] = {true, view == 2 ? 1u : 0u};
      }
      auto d = decide(in);
      const auto& v4 = d.vips.at(kVip4);
      SCOPED_TRACE(testing::Message() << "reason " << static_cast<int>(reason) << " view "
                                      << view << ": " << v4.reason);
      if (view == 1) {
        EXPECT_EQ(v4.announce, Announce::Degraded);
        EXPECT_TRUE(v4.heldByNeverZero);
        EXPECT_NE(v4.reason.find("no other node serves it"), std::string::npos);
        EXPECT_TRUE(d.mayBind) << "a held VIP stays bound even with unbindWhenUnhealthy";
      } else {
        EXPECT_EQ(v4.announce, Announce::None);
        EXPECT_FALSE(v4.heldByNeverZero);
        EXPECT_EQ(v4.unguardedWithdrawal, view == 0);
      }
      // The IPv6 VIP: withdrawn (or held) only for the health gate.
      const auto& v6 = d.vips.at(kVip6);
      if (reason == Reason::ReturnPath) {
        EXPECT_EQ(v6.announce, Announce::Normal);
      } else {
        EXPECT_EQ(v6.announce, view == 1 ? Announce::Degraded : Announce::None);
      }
      if (reason != Reason::ReturnPath && view != 1) {
        EXPECT_FALSE(d.mayBind) << "health.unbindWhenUnhealthy with nothing held unbinds";
      }
    }
  }
}

TEST(AnnouncePolicy, ANodeThatNeverPassedItsHealthCheckIsNotHeld) {
  // Starting up: the gate has not opened yet. Nothing says this node can serve, so an empty
  // fabric does not make it announce.
  auto in = healthyNode();
  in.healthy = false;
  in.healthEverPassed = false;
  in.unbindWhenUnhealthy = true;
  in.fabric[kVip4] = {true, 0};
  auto d = decide(in);
  EXPECT_EQ(d.vips.at(kVip4).announce, Announce::None);
  EXPECT_FALSE(d.vips.at(kVip4).heldByNeverZero);
  EXPECT_FALSE(d.vips.at(kVip4).unguardedWithdrawal);
  EXPECT_EQ(d.vips.at(kVip4).reason, "health check not passed yet");
  EXPECT_FALSE(d.mayBind);
  // The return path still counts as a reason of its own.
  in.healthy = true;
  in.returnPathBlocks = {kVip4};
  EXPECT_TRUE(decide(in).vips.at(kVip4).heldByNeverZero);
}

TEST(AnnouncePolicy, OnlyServingNodesCountAsAnotherPath) {
  // Two failing nodes each see the other's degraded path: othersServing is 0 for both, so both
  // stay announced (degraded) instead of withdrawing together.
  auto in = healthyNode();
  in.healthy = false;
  in.fabric[kVip4] = {true, 0};
  EXPECT_EQ(decide(in).vips.at(kVip4).announce, Announce::Degraded);
  // A healthy node comes back: this one withdraws.
  in.fabric[kVip4] = {true, 1};
  EXPECT_EQ(decide(in).vips.at(kVip4).announce, Announce::None);
}

TEST(AnnouncePolicy, HealthDegradeModeAnnouncesDegradedAndTheReturnPathStillHoldsBack) {
  auto in = healthyNode();
  in.healthy = false;
  in.degradeOnFailure = true;
  auto d = decide(in);
  EXPECT_EQ(d.degraded(), (std::set{kVip4, kVip6}));
  EXPECT_FALSE(d.vips.at(kVip4).heldByNeverZero);
  EXPECT_TRUE(d.mayBind);
  in.returnPathBlocks = {kVip4};
  d = decide(in);
  EXPECT_EQ(d.vips.at(kVip4).announce, Announce::None);
  EXPECT_EQ(d.vips.at(kVip6).announce, Announce::Degraded);
}

TEST(AnnouncePolicy, UnbindWhenUnhealthyUnbindsOnlyWithoutAHold) {
  auto in = healthyNode();
  in.healthy = false;
  in.unbindWhenUnhealthy = true;
  EXPECT_FALSE(decide(in).mayBind);
  in.unbindWhenUnhealthy = false;
  EXPECT_TRUE(decide(in).mayBind);
  in.unbindWhenUnhealthy = true;
  in.fabric[kVip6] = {true, 0};
  EXPECT_TRUE(decide(in).mayBind);
  // Once bound again the held VIP is announced degraded; the other one (others serve) is not.
  in.fabric[kVip4] = {true, 3};
  auto d = decide(in);
  EXPECT_EQ(d.vips.at(kVip6).announce, Announce::Degraded);
  EXPECT_EQ(d.vips.at(kVip4).announce, Announce::None);
}

// Issue 29: a VIP a reload removed from the config is withdrawn whatever else holds, the other
// VIPs are untouched, and it never keeps the VIPs bound for the never-zero rule.
TEST(AnnouncePolicy, AVipRemovedFromTheConfigIsWithdrawnWhateverElseHolds) {
  for (bool healthy : {true, false}) {
    for (bool degrade : {true, false}) {
      for (bool othersServe : {true, false}) {
        for (bool stillListed : {true, false}) {
          auto in = healthyNode();
          in.healthy = healthy;
          in.degradeOnFailure = degrade;
          in.removing = {kVip4};
          if (!stillListed) {
            in.vips = {kVip6};
          }
          in.fabric[kVip4] = {true, othersServe ? 2u : 0u};
          auto d = decide(in);
          ASSERT_EQ(d.vips.count(kVip4), 1u);
          EXPECT_EQ(d.vips.at(kVip4).announce, Announce::None);
          EXPECT_FALSE(d.vips.at(kVip4).heldByNeverZero);
          EXPECT_NE(d.vips.at(kVip4).reason.find("removed from the config"), std::string::npos);
          EXPECT_EQ(d.vips.at(kVip6).announce, healthy   ? Announce::Normal
                                               : degrade ? Announce::Degraded
                                                         : Announce::None);
          EXPECT_EQ(d.announced().count(kVip4), 0u);
        }
      }
    }
  }
}

TEST(AnnouncePolicy, ARemovedVipIsNoReasonToKeepTheVipsBound) {
  auto in = healthyNode();
  in.healthy = false;
  in.unbindWhenUnhealthy = true;
  in.removing = {kVip4};
  in.fabric[kVip4] = {true, 0};  // the last announcer, but the operator removed it
  in.fabric[kVip6] = {true, 1};
  auto d = decide(in);
  EXPECT_TRUE(d.unbindForHealth);
  EXPECT_FALSE(d.mayBind);
}

TEST(WithdrawGuard, RefusesToTakeTheLastAnnouncersOff) {
  GuardInputs in;
  in.announced = {kVip4, kVip6};
  in.othersStaying = {{kVip4, 0}, {kVip6, 2}};
  auto refusal = withdrawGuard(in);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->remaining, (std::map<bgp::Prefix, size_t>{{kVip4, 0}}));
  in.othersStaying[kVip4] = 1;
  EXPECT_FALSE(withdrawGuard(in));
  in.minAnnouncers = 2;
  refusal = withdrawGuard(in);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->remaining.size(), 1u);
  EXPECT_EQ(refusal->remaining.count(kVip4), 1u);
}

TEST(WithdrawGuard, AllowsWhatItCannotCheckOrWhatIsNotAnnounced) {
  GuardInputs in;
  in.announced = {kVip4};
  EXPECT_FALSE(withdrawGuard(in));  // no fabric view
  in.announced = {};
  in.othersStaying = {{kVip4, 0}};
  EXPECT_FALSE(withdrawGuard(in));  // not announced here: nothing to take off
  in.minAnnouncers = 0;
  in.announced = {kVip4};
  EXPECT_FALSE(withdrawGuard(in));  // guard off
}

}  // namespace
}  // namespace vipd::policy
