// The announce policy (policy/announce_policy.h): every combination of its inputs, and the
// withdraw guard.
#include "policy/announce_policy.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

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
        // Confirmed: announced degraded long enough (the unconfirmed case has its own test).
        in.fabric[kVip4] = {true, view == 2 ? 1u : 0u, true};
        in.fabric[kVip6] = {true, view == 2 ? 1u : 0u, true};
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
  // A healthy node comes back: this one withdraws (its degraded path has long been seen).
  in.fabric[kVip4] = {true, 1, true};
  EXPECT_EQ(decide(in).vips.at(kVip4).announce, Announce::None);
}

// Issue 40: never zero at the same instant. A view showing others serving may predate their
// failure; until the withdrawal is confirmed (this node announced degraded for the confirmation
// time) the VIP stays announced, degraded, and bound, for every automatic cause.
TEST(AnnouncePolicy, AnAutomaticWithdrawalIsAnnouncedDegradedUntilConfirmed) {
  for (int cause : {0, 1, 2}) {  // health, return path, both
    auto in = healthyNode();
    in.unbindWhenUnhealthy = true;
    in.healthy = cause == 1;
    if (cause != 0) {
      in.returnPathBlocks = {kVip4, kVip6};
    }
    in.fabric[kVip4] = {true, 2, false};
    in.fabric[kVip6] = {true, 2, false};
    auto d = decide(in);
    SCOPED_TRACE(testing::Message() << "cause " << cause << ": " << d.vips.at(kVip4).reason);
    const auto& v4 = d.vips.at(kVip4);
    EXPECT_EQ(v4.announce, Announce::Degraded);
    EXPECT_TRUE(v4.confirmingWithdrawal);
    EXPECT_FALSE(v4.heldByNeverZero);
    EXPECT_TRUE(v4.wantsWithdrawal);
    EXPECT_NE(v4.reason.find("announced degraded first"), std::string::npos);
    EXPECT_TRUE(d.mayBind) << "announced, so bound, even with unbindWhenUnhealthy";
    EXPECT_FALSE(d.unbindForHealth);
    EXPECT_EQ(d.wantingWithdrawal(), (std::set{kVip4, kVip6}));
    in.fabric[kVip4].withdrawConfirmed = true;
    in.fabric[kVip6].withdrawConfirmed = true;
    d = decide(in);
    EXPECT_EQ(d.vips.at(kVip4).announce, Announce::None);
    EXPECT_TRUE(d.vips.at(kVip4).wantsWithdrawal) << "the clock keeps running while withdrawn";
    EXPECT_EQ(d.unbindForHealth, cause != 1);
  }
  // Without a view nothing is confirmed or held: withdrawn at once, unguarded, as before.
  auto in = healthyNode();
  in.healthy = false;
  auto d = decide(in);
  EXPECT_EQ(d.vips.at(kVip4).announce, Announce::None);
  EXPECT_TRUE(d.vips.at(kVip4).unguardedWithdrawal);
  EXPECT_TRUE(d.wantingWithdrawal().empty());
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
  in.fabric[kVip4] = {true, 3, true};
  auto d = decide(in);
  EXPECT_EQ(d.vips.at(kVip6).announce, Announce::Degraded);
  EXPECT_EQ(d.vips.at(kVip4).announce, Announce::None);
}

// Issue 29: a VIP a reload removed from the config is withdrawn whatever else holds, the other
// VIPs are untouched, and it never keeps the VIPs bound for the never-zero rule.
// Found by the exhaustive test below: a drain that had not yet withdrawn, on a node whose health
// check failed with unbindWhenUnhealthy, kept its VIP announced by the never-zero rule and at the
// same time asked for it to be unbound.
TEST(AnnouncePolicy, ADrainBeforeItsWithdrawStepKeepsAHeldVipBound) {
  auto in = healthyNode();
  in.healthy = false;
  in.unbindWhenUnhealthy = true;
  in.draining = true;
  in.fabric[kVip4] = {true, 0};
  auto d = decide(in);
  EXPECT_EQ(d.vips.at(kVip4).announce, Announce::Degraded);
  EXPECT_TRUE(d.vips.at(kVip4).heldByNeverZero);
  EXPECT_FALSE(d.unbindForHealth);
  EXPECT_FALSE(d.mayBind);  // the drain owns the binding: it unbinds after its withdraw
  in.drainWithdrawSent = true;
  d = decide(in);
  EXPECT_EQ(d.vips.at(kVip4).announce, Announce::None);
}

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
  in.fabric[kVip6] = {true, 1, true};
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

// Every combination of the inputs for one VIP (9 node-wide flags, 3 per-VIP sets, 4 fabric
// views: 16,384 cases), each checked against the rules announce_policy.h states, written here as
// predicates rather than a second decide(). A case that breaks one is printed whole.
struct Case {
  PolicyInputs in;
  bool bound, removing, returnPathBlocks;
  enum class Fabric { None, Unavailable, NoOtherServes, OthersServe } fabric;
  bool confirmed;  // FabricCount::withdrawConfirmed
};

std::string describe(const Case& c) {
  const auto& in = c.in;
  return fmt::format(
      "active {} shuttingDown {} operatorWithdrawn {} draining {} drainWithdrawSent {} healthy {} "
      "healthEverPassed {} degradeOnFailure {} unbindWhenUnhealthy {} bound {} removing {} "
      "returnPathBlocks {} fabric {} confirmed {}",
      in.active, in.shuttingDown, in.operatorWithdrawn, in.draining, in.drainWithdrawSent,
      in.healthy, in.healthEverPassed, in.degradeOnFailure, in.unbindWhenUnhealthy, c.bound,
      c.removing, c.returnPathBlocks, static_cast<int>(c.fabric), c.confirmed);
}

std::vector<Case> everyCase() {
  std::vector<Case> out;
  for (unsigned bits = 0; bits < (1u << 13); ++bits) {
    for (auto fabric : {Case::Fabric::None, Case::Fabric::Unavailable, Case::Fabric::NoOtherServes,
                        Case::Fabric::OthersServe}) {
      auto bit = [&](unsigned i) { return ((bits >> i) & 1u) != 0; };
      Case c{{}, bit(9), bit(10), bit(11), fabric, bit(12)};
      PolicyInputs& in = c.in;
      in.active = bit(0);
      in.shuttingDown = bit(1);
      in.operatorWithdrawn = bit(2);
      in.draining = bit(3);
      in.drainWithdrawSent = bit(4);
      in.healthy = bit(5);
      in.healthEverPassed = bit(6);
      in.degradeOnFailure = bit(7);
      in.unbindWhenUnhealthy = bit(8);
      in.vips = {kVip4};
      if (c.bound) in.bound = {kVip4};
      if (c.removing) in.removing = {kVip4};
      if (c.returnPathBlocks) in.returnPathBlocks = {kVip4};
      if (fabric != Case::Fabric::None) {
        in.fabric[kVip4] = FabricCount{fabric != Case::Fabric::Unavailable,
                                       fabric == Case::Fabric::OthersServe ? 2u : 0u,
                                       c.confirmed};
      }
      out.push_back(c);
    }
  }
  return out;
}

TEST(AnnouncePolicy, EveryCombinationOfInputsKeepsTheStatedRules) {
  const auto cases = everyCase();
  ASSERT_EQ(cases.size(), 32768u);
  size_t normal = 0, degraded = 0, held = 0, unguarded = 0, confirming = 0;
  for (const Case& c : cases) {
    const PolicyInputs& in = c.in;
    const Decision decision = decide(in);
    ASSERT_EQ(decision.vips.size(), 1u) << describe(c);
    const VipDecision& d = decision.vips.at(kVip4);
    SCOPED_TRACE(describe(c));

    const bool speaking = in.active && !in.shuttingDown;
    const bool operatorOff = in.drainWithdrawSent || (in.operatorWithdrawn && !in.draining);
    const bool healthWithdraws = !in.healthy && !in.degradeOnFailure;
    const bool automatic = (healthWithdraws && in.healthEverPassed) || c.returnPathBlocks;
    const bool viewed =
        c.fabric == Case::Fabric::NoOtherServes || c.fabric == Case::Fabric::OthersServe;
    // Everything that rules an announcement out before the automatic reasons are weighed.
    const bool eligible = speaking && !operatorOff && c.bound && !c.removing &&
                          !(healthWithdraws && !in.healthEverPassed);

    // A ghost VIP is never announced; nor is one the config no longer has.
    if (!c.bound || c.removing) {
      EXPECT_EQ(d.announce, Announce::None);
    }
    // Nothing from an instance that does not speak, or that the operator or a drain took off.
    if (!speaking || operatorOff) {
      EXPECT_EQ(d.announce, Announce::None);
    }
    if (!speaking || in.operatorWithdrawn || in.draining) {
      EXPECT_FALSE(decision.mayBind);
    }
    // A node that never passed its health check is not announced, not even held.
    if (healthWithdraws && !in.healthEverPassed) {
      EXPECT_EQ(d.announce, Announce::None);
    }
    if (eligible && !automatic) {
      // Healthy (or failing with onFailure degrade) and nothing holds it back.
      EXPECT_EQ(d.announce, in.healthy ? Announce::Normal : Announce::Degraded);
      EXPECT_FALSE(d.heldByNeverZero);
    }
    if (eligible && automatic) {
      // Never zero: withdrawn only when the fabric shows another node serving it.
      if (c.fabric == Case::Fabric::NoOtherServes) {
        EXPECT_EQ(d.announce, Announce::Degraded);
        EXPECT_TRUE(d.heldByNeverZero);
      } else if (c.fabric == Case::Fabric::OthersServe && !c.confirmed) {
        // Never zero at the same instant: degraded first, withdrawn once confirmed.
        EXPECT_EQ(d.announce, Announce::Degraded);
        EXPECT_TRUE(d.confirmingWithdrawal);
        EXPECT_FALSE(d.heldByNeverZero);
      } else {
        EXPECT_EQ(d.announce, Announce::None);
        EXPECT_EQ(d.unguardedWithdrawal, !viewed);
      }
    }
    if (d.heldByNeverZero) {
      EXPECT_EQ(d.announce, Announce::Degraded);
    }
    if (d.unguardedWithdrawal) {
      EXPECT_FALSE(viewed);
    }
    // The confirmation clock runs exactly while an automatic cause meets a fabric view.
    EXPECT_EQ(d.wantsWithdrawal, eligible && automatic && viewed);
    if (d.confirmingWithdrawal) {
      EXPECT_EQ(d.announce, Announce::Degraded);
      EXPECT_FALSE(c.confirmed);
    }
    // Normal exactly when there is nothing to explain.
    EXPECT_EQ(d.announce == Announce::Normal, d.reason.empty());

    // Binding: the health check unbinds only with unbindWhenUnhealthy and onFailure withdraw,
    // never while a VIP is held announced, and a VIP the speaker may bind is not unbound by it.
    if (decision.unbindForHealth) {
      EXPECT_TRUE(healthWithdraws && in.unbindWhenUnhealthy);
      EXPECT_FALSE(decision.anyHeldByNeverZero());
      EXPECT_FALSE(d.confirmingWithdrawal) << "announced degraded, so it must stay bound";
      EXPECT_FALSE(decision.mayBind);
    }
    if (healthWithdraws && in.unbindWhenUnhealthy && c.fabric != Case::Fabric::NoOtherServes &&
        !(c.fabric == Case::Fabric::OthersServe && !c.confirmed)) {
      EXPECT_TRUE(decision.unbindForHealth);
    }
    if (speaking && !in.operatorWithdrawn && !in.draining && !decision.unbindForHealth) {
      EXPECT_TRUE(decision.mayBind);
    }
    normal += d.announce == Announce::Normal;
    degraded += d.announce == Announce::Degraded;
    held += d.heldByNeverZero;
    unguarded += d.unguardedWithdrawal;
    confirming += d.confirmingWithdrawal;
  }
  // Every outcome occurs, so no rule above was checked only vacuously.
  EXPECT_GT(normal, 0u);
  EXPECT_GT(degraded, 0u);
  EXPECT_GT(held, 0u);
  EXPECT_GT(unguarded, 0u);
  EXPECT_GT(confirming, 0u);
}

}  // namespace
}  // namespace vipd::policy
