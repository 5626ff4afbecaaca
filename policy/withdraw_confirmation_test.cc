// WithdrawConfirmation (policy/withdraw_confirmation.h), driven with time as an input, and with
// decide() the way the Speaker runs them: nodes failing at the same instant never all withdraw.
#include "policy/withdraw_confirmation.h"

#include <gtest/gtest.h>

#include <array>

#include "policy/announce_policy.h"

namespace vipd::policy {
namespace {

using namespace std::chrono_literals;
using Clock = WithdrawConfirmation::Clock;

const bgp::Prefix kVip4 = *bgp::Prefix::parse("203.0.113.10/32");
const bgp::Prefix kVip6 = *bgp::Prefix::parse("2001:db8:ffff::10/128");

TEST(WithdrawConfirmation, AClockRunsFromTheFirstWantAndOnlyWhileWanted) {
  WithdrawConfirmation c(300ms, 0ms, 7);
  const auto t0 = Clock::time_point{} + 1h;
  EXPECT_FALSE(c.confirmed(kVip4, t0)) << "never wanted: not confirmed";
  c.observe({kVip4}, t0);
  EXPECT_FALSE(c.confirmed(kVip4, t0 + 299ms));
  EXPECT_EQ(c.nextDeadline(t0), t0 + 300ms);
  c.observe({kVip4}, t0 + 200ms);  // wanted again: the clock is not restarted
  EXPECT_TRUE(c.confirmed(kVip4, t0 + 300ms));
  EXPECT_FALSE(c.nextDeadline(t0 + 300ms)) << "nothing left to wait for";
  EXPECT_FALSE(c.confirmed(kVip6, t0 + 1h));
  c.observe({}, t0 + 400ms);  // the cause cleared
  EXPECT_FALSE(c.confirmed(kVip4, t0 + 400ms));
  c.observe({kVip4}, t0 + 500ms);  // failing again: from zero
  EXPECT_FALSE(c.confirmed(kVip4, t0 + 700ms));
  EXPECT_TRUE(c.confirmed(kVip4, t0 + 800ms));
}

TEST(WithdrawConfirmation, TheJitterIsBoundedPerVipAndReplaysFromItsSeed) {
  const auto t0 = Clock::time_point{} + 1h;
  for (uint32_t seed : {1u, 2u, 0xc0000201u}) {
    WithdrawConfirmation a(300ms, 300ms, seed), b(300ms, 300ms, seed);
    a.observe({kVip4, kVip6}, t0);
    b.observe({kVip4, kVip6}, t0);
    for (auto at = 0ms; at <= 700ms; at += 1ms) {
      EXPECT_EQ(a.confirmed(kVip4, t0 + at), b.confirmed(kVip4, t0 + at));
      if (at < 300ms) {
        EXPECT_FALSE(a.confirmed(kVip4, t0 + at));
      }
      if (at >= 600ms) {
        EXPECT_TRUE(a.confirmed(kVip4, t0 + at) && a.confirmed(kVip6, t0 + at));
      }
    }
    EXPECT_EQ(a.longest(), 600ms);
  }
  // Different seeds (router IDs) draw different delays, so nodes failing together look apart.
  std::set<Clock::time_point> deadlines;
  for (uint32_t seed = 1; seed <= 8; ++seed) {
    WithdrawConfirmation c(300ms, 300ms, seed);
    c.observe({kVip4}, t0);
    deadlines.insert(*c.nextDeadline(t0));
  }
  EXPECT_GT(deadlines.size(), 4u);
}

// Three nodes as the Speaker runs them: each decides from what it sees of the others (their last
// announcement, as the fabric delivers it 1 + `lag` ms later), announces, and looks again when its
// clock runs out. Events only: every node re-decides at every millisecond of a simulated second.
struct Node {
  bool healthy = true;
  WithdrawConfirmation confirm;
  Announce announced = Announce::Normal;
};

struct Seen {
  Announce announce;
  std::chrono::milliseconds at;
};

// Returns the number of milliseconds during which no node announced the VIP at all.
int simulate(std::array<bool, 3> fails, std::chrono::milliseconds failAt, int lagMs,
             std::array<Announce, 3>* end = nullptr) {
  std::array<Node, 3> nodes{Node{true, WithdrawConfirmation(300ms, 300ms, 11), Announce::Normal},
                            Node{true, WithdrawConfirmation(300ms, 300ms, 22), Announce::Normal},
                            Node{true, WithdrawConfirmation(300ms, 300ms, 33), Announce::Normal}};
  // What each node announced at each millisecond: the others see it `lagMs` later.
  std::array<std::vector<Announce>, 3> history;
  const auto t0 = Clock::time_point{} + 1h;
  int empty = 0;
  for (int ms = 0; ms < 3000; ++ms) {
    for (size_t i = 0; i < 3; ++i) {
      if (fails[i] && std::chrono::milliseconds(ms) >= failAt) {
        nodes[i].healthy = false;
      }
    }
    for (size_t i = 0; i < 3; ++i) {
      PolicyInputs in;
      in.vips = {kVip4};
      in.bound = {kVip4};
      in.healthy = nodes[i].healthy;
      size_t serving = 0;
      for (size_t j = 0; j < 3; ++j) {
        if (j == i) {
          continue;
        }
        const int seenAt = ms - 1 - lagMs;  // announced last millisecond at the earliest
        const Announce seen = seenAt < 0 ? Announce::Normal : history[j][seenAt];
        serving += seen == Announce::Normal;
      }
      const auto now = t0 + std::chrono::milliseconds(ms);
      in.fabric[kVip4] = {true, serving, nodes[i].confirm.confirmed(kVip4, now)};
      auto d = decide(in);
      nodes[i].confirm.observe(d.wantingWithdrawal(), now);
      nodes[i].announced = d.vips.at(kVip4).announce;
    }
    bool any = false;
    for (size_t i = 0; i < 3; ++i) {
      history[i].push_back(nodes[i].announced);
      any = any || nodes[i].announced != Announce::None;
    }
    empty += any ? 0 : 1;
  }
  if (end) {
    for (size_t i = 0; i < 3; ++i) {
      (*end)[i] = nodes[i].announced;
    }
  }
  return empty;
}

TEST(WithdrawConfirmation, NodesFailingAtTheSameInstantNeverAllWithdraw) {
  for (int lag : {0, 1, 5, 50, 100}) {
    std::array<Announce, 3> end{};
    EXPECT_EQ(simulate({true, true, true}, 100ms, lag, &end), 0) << "lag " << lag << " ms";
    for (auto a : end) {
      EXPECT_EQ(a, Announce::Degraded) << "every node held, degraded; lag " << lag;
    }
    EXPECT_EQ(simulate({true, true, false}, 100ms, lag, &end), 0);
    EXPECT_EQ(end[0], Announce::None) << "a healthy node serves: the failing ones leave";
    EXPECT_EQ(end[1], Announce::None);
    EXPECT_EQ(end[2], Announce::Normal);
  }
}

TEST(WithdrawConfirmation, ASingleFailingNodeLeavesWithinTheConfirmationTime) {
  std::array<Announce, 3> end{};
  EXPECT_EQ(simulate({true, false, false}, 100ms, 5, &end), 0);
  EXPECT_EQ(end[0], Announce::None);
  EXPECT_EQ(end[1], Announce::Normal);
  EXPECT_EQ(end[2], Announce::Normal);
}

// What the confirmation fixes: without it (a clock of 0, the old rule) the same three nodes
// failing at once all withdraw on the strength of each other's stale paths.
TEST(WithdrawConfirmation, WithoutTheConfirmationTimeNodesFailingTogetherAllLeave) {
  const auto t0 = Clock::time_point{} + 1h;
  PolicyInputs in;
  in.vips = {kVip4};
  in.bound = {kVip4};
  in.healthy = false;
  in.fabric[kVip4] = {true, 2, true};  // confirmed at once: sees the others' stale paths
  EXPECT_EQ(decide(in).vips.at(kVip4).announce, Announce::None);
  WithdrawConfirmation c(300ms, 0ms, 1);
  in.fabric[kVip4].withdrawConfirmed = c.confirmed(kVip4, t0);
  EXPECT_EQ(decide(in).vips.at(kVip4).announce, Announce::Degraded);
}

}  // namespace
}  // namespace vipd::policy
