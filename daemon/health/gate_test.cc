#include "daemon/health/gate.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace vipd::daemon {
namespace {

// Feeds a sequence ('+' success, '-' soft failure, 'x' hard failure) and returns where healthy()
// flipped, as a string of the same length: 'U' flipped up, 'D' flipped down, '.' no change.
std::string feed(HealthGate& gate, std::string_view outcomes) {
  std::string flips;
  for (char c : outcomes) {
    bool flipped = gate.record(c == '+'   ? Evidence::Success
                               : c == 'x' ? Evidence::HardFailure
                                          : Evidence::SoftFailure);
    flips += flipped ? (gate.healthy() ? 'U' : 'D') : '.';
  }
  return flips;
}

TEST(HealthGate, StartsUnhealthyWithZeroCounters) {
  HealthGate gate(2, 3);
  EXPECT_FALSE(gate.healthy());
  EXPECT_EQ(gate.consecutiveSuccesses(), 0u);
  EXPECT_EQ(gate.consecutiveFailures(), 0u);
  EXPECT_EQ(gate.checks(), 0u);
  EXPECT_EQ(gate.failures(), 0u);
}

TEST(HealthGate, BecomesHealthyExactlyAtRise) {
  HealthGate gate(3, 2);
  EXPECT_EQ(feed(gate, "++"), "..");
  EXPECT_FALSE(gate.healthy());
  EXPECT_EQ(gate.consecutiveSuccesses(), 2u);
  EXPECT_EQ(feed(gate, "+"), "U");
  EXPECT_TRUE(gate.healthy());
  // Further successes do not flip again.
  EXPECT_EQ(feed(gate, "+++"), "...");
  EXPECT_EQ(gate.consecutiveSuccesses(), 6u);
}

TEST(HealthGate, BecomesUnhealthyExactlyAtFall) {
  HealthGate gate(1, 3);
  EXPECT_EQ(feed(gate, "+"), "U");
  EXPECT_EQ(feed(gate, "--"), "..");
  EXPECT_TRUE(gate.healthy());
  EXPECT_EQ(gate.consecutiveFailures(), 2u);
  EXPECT_EQ(gate.consecutiveSuccesses(), 0u);
  EXPECT_EQ(feed(gate, "-"), "D");
  EXPECT_FALSE(gate.healthy());
  EXPECT_EQ(feed(gate, "---"), "...");
}

TEST(HealthGate, FailuresWhileStartingUpNeverFlip) {
  HealthGate gate(2, 1);
  EXPECT_EQ(feed(gate, "-----"), ".....");
  EXPECT_FALSE(gate.healthy());
  EXPECT_EQ(gate.consecutiveFailures(), 5u);
}

TEST(HealthGate, OneFailureResetsTheRiseRun) {
  HealthGate gate(3, 3);
  EXPECT_EQ(feed(gate, "++-++-++"), "........");
  EXPECT_FALSE(gate.healthy());
  EXPECT_EQ(feed(gate, "+"), "U");
}

TEST(HealthGate, OneSuccessResetsTheFallRun) {
  HealthGate gate(1, 3);
  EXPECT_EQ(feed(gate, "+--+--+--"), "U........");
  EXPECT_TRUE(gate.healthy());
  EXPECT_EQ(feed(gate, "-"), "D");
}

TEST(HealthGate, FlappingNeverReachesEitherThreshold) {
  HealthGate gate(2, 2);
  EXPECT_EQ(feed(gate, "+-+-+-+-+-"), "..........");
  EXPECT_FALSE(gate.healthy());
  EXPECT_EQ(feed(gate, "++"), ".U");
  EXPECT_EQ(feed(gate, "-+-+-+-+"), "........");
  EXPECT_TRUE(gate.healthy());
}

TEST(HealthGate, RiseOneFallOneFollowsEveryCheck) {
  HealthGate gate(1, 1);
  EXPECT_EQ(feed(gate, "+-+--++-"), "UDUD.U.D");
}

TEST(HealthGate, ZeroThresholdsActAsOne) {
  HealthGate gate(0, 0);
  EXPECT_EQ(gate.rise(), 1u);
  EXPECT_EQ(gate.fall(), 1u);
  EXPECT_FALSE(gate.healthy());  // never healthy without a check
  EXPECT_EQ(feed(gate, "+-"), "UD");
}

TEST(HealthGate, CountsChecksAndFailures) {
  HealthGate gate(2, 2);
  feed(gate, "++--+-");
  EXPECT_EQ(gate.checks(), 6u);
  EXPECT_EQ(gate.failures(), 3u);
  EXPECT_EQ(gate.consecutiveFailures(), 1u);
  EXPECT_EQ(gate.consecutiveSuccesses(), 0u);
  EXPECT_FALSE(gate.healthy());  // "++" up, "--" down, then "+-" does not reach rise
}

// Issue 20: hard evidence (the port refuses, the connection is reset) withdraws after hardFall
// in a row; soft evidence (timeouts) still needs fall, so a slow apiserver flaps no sooner.
TEST(HealthGate, HardEvidenceWithdrawsAfterHardFall) {
  HealthGate gate(1, 3, 2);
  EXPECT_EQ(feed(gate, "+"), "U");
  EXPECT_EQ(feed(gate, "xx"), ".D");
  EXPECT_EQ(gate.consecutiveHardFailures(), 2u);
  EXPECT_EQ(gate.hardFailures(), 2u);
}

TEST(HealthGate, SoftEvidenceStillNeedsFall) {
  HealthGate gate(1, 3, 1);
  EXPECT_EQ(feed(gate, "+--"), "U..");
  EXPECT_TRUE(gate.healthy());
  EXPECT_EQ(gate.consecutiveHardFailures(), 0u);
  EXPECT_EQ(feed(gate, "-"), "D");
}

TEST(HealthGate, SoftFailureOrSuccessEndsTheHardRun) {
  HealthGate gate(1, 4, 2);
  EXPECT_EQ(feed(gate, "+x-x"), "U...");  // the hard run restarts after the timeout
  EXPECT_EQ(gate.consecutiveHardFailures(), 1u);
  EXPECT_EQ(gate.consecutiveFailures(), 3u);
  EXPECT_EQ(feed(gate, "+x+x"), "....");
  EXPECT_TRUE(gate.healthy());
}

TEST(HealthGate, HardFailuresCountTowardFallToo) {
  HealthGate gate(1, 3, 3);
  // Mixed evidence: three failures in a row withdraw whatever their kind.
  EXPECT_EQ(feed(gate, "+x-x"), "U..D");
}

TEST(HealthGate, HardFallZeroCountsHardLikeSoft) {
  HealthGate gate(1, 3, 0);
  EXPECT_EQ(feed(gate, "+xx"), "U..");
  EXPECT_EQ(feed(gate, "x"), "D");
}

TEST(HealthGate, HardFallAboveFallIsCappedAtFall) {
  HealthGate gate(1, 2, 5);
  EXPECT_EQ(gate.hardFall(), 2u);
  EXPECT_EQ(feed(gate, "+xx"), "U.D");
}

TEST(HealthGate, HardEvidenceDoesNotSlowRise) {
  HealthGate gate(2, 3, 1);
  EXPECT_EQ(feed(gate, "x+x++"), "....U");
  EXPECT_EQ(feed(gate, "x"), "D");
}

// Issue 29: a reload's new thresholds keep the gate's state and totals; the runs start over.
TEST(HealthGate, NewThresholdsKeepAnOpenGateOpenUntilTheNewFall) {
  HealthGate old(1, 3, 2);
  EXPECT_EQ(feed(old, "+--"), "U..");  // two failures of three: still open
  HealthGate gate(2, 2, 0, old, old.healthy());
  EXPECT_TRUE(gate.healthy());
  EXPECT_EQ(gate.consecutiveFailures(), 0u) << "the run starts over";
  EXPECT_EQ(gate.checks(), 3u);
  EXPECT_EQ(gate.failures(), 2u);
  EXPECT_EQ(feed(gate, "+-"), "..");
  EXPECT_EQ(feed(gate, "-"), "D");
}

TEST(HealthGate, NewThresholdsKeepAClosedGateClosedUntilTheNewRise) {
  HealthGate old(5, 3, 2);
  EXPECT_EQ(feed(old, "++"), "..");
  HealthGate gate(3, 3, 2, old, old.healthy());
  EXPECT_FALSE(gate.healthy());
  EXPECT_EQ(feed(gate, "++"), "..");
  EXPECT_EQ(feed(gate, "+"), "U");
}

TEST(HealthGate, NewThresholdsTakeTheStateGivenForAGateNeverUsed) {
  // Type none reported healthy without this gate: a reload to a real check stays healthy.
  HealthGate unused(2, 3, 2);
  HealthGate gate(2, 3, 2, unused, true);
  EXPECT_TRUE(gate.healthy());
  EXPECT_EQ(feed(gate, "--"), "..");
  EXPECT_EQ(feed(gate, "-"), "D");
}

}  // namespace
}  // namespace vipd::daemon
