// The rise/fall hysteresis of the health check (issue 4): pure, no clock and no I/O. The checker
// feeds it one probe outcome at a time; tests feed it sequences.
//
// The gate starts unhealthy, so a node announces nothing until its apiserver has answered `rise`
// times in a row. It becomes healthy after `rise` consecutive successes and unhealthy again after
// `fall` consecutive failures; any other outcome only moves the counters. A single success resets
// the failure run and vice versa, so a flapping check never reaches either threshold.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

namespace vipd::daemon {

class HealthGate {
 public:
  // rise and fall are at least 1 (the config validator enforces it); 0 is treated as 1 so the
  // gate can never flip without a probe.
  HealthGate(uint32_t rise, uint32_t fall)
      : rise_(std::max<uint32_t>(rise, 1)), fall_(std::max<uint32_t>(fall, 1)) {}

  // Records one probe outcome. Returns true when healthy() changed because of it.
  bool record(bool success) {
    ++checks_;
    if (success) {
      consecutiveFailures_ = 0;
      consecutiveSuccesses_ = saturatingIncrement(consecutiveSuccesses_);
      if (!healthy_ && consecutiveSuccesses_ >= rise_) {
        healthy_ = true;
        return true;
      }
      return false;
    }
    ++failures_;
    consecutiveSuccesses_ = 0;
    consecutiveFailures_ = saturatingIncrement(consecutiveFailures_);
    if (healthy_ && consecutiveFailures_ >= fall_) {
      healthy_ = false;
      return true;
    }
    return false;
  }

  bool healthy() const { return healthy_; }
  uint32_t rise() const { return rise_; }
  uint32_t fall() const { return fall_; }
  // The current run; at most one of the two is non-zero.
  uint32_t consecutiveSuccesses() const { return consecutiveSuccesses_; }
  uint32_t consecutiveFailures() const { return consecutiveFailures_; }
  // Totals since construction.
  uint64_t checks() const { return checks_; }
  uint64_t failures() const { return failures_; }

 private:
  static uint32_t saturatingIncrement(uint32_t n) {
    return n == std::numeric_limits<uint32_t>::max() ? n : n + 1;
  }

  uint32_t rise_;
  uint32_t fall_;
  bool healthy_ = false;
  uint32_t consecutiveSuccesses_ = 0;
  uint32_t consecutiveFailures_ = 0;
  uint64_t checks_ = 0;
  uint64_t failures_ = 0;
};

}  // namespace vipd::daemon
