// The rise/fall hysteresis of the health check (issue 4): pure, no clock and no I/O. The checker
// feeds it one check outcome at a time; tests feed it sequences.
//
// The gate starts unhealthy, so a node announces nothing until its apiserver has answered `rise`
// times in a row. It becomes healthy after `rise` consecutive successes and unhealthy again after
// `fall` consecutive failures; any other outcome only moves the counters. A single success resets
// the failure run and vice versa, so a flapping check never reaches either threshold.
//
// Failures come in two kinds (issue 20). Soft evidence (a timeout, an unreachable address, an
// answer saying "not ready") may be a slow or lossy moment, so only `fall` in a row withdraw.
// Hard evidence says the apiserver process is not there (the port refuses, the connection is
// reset, the TLS handshake fails, a non-apiserver answers): `hardFall` hard failures in a row
// withdraw, sooner than `fall`. A soft failure or a success ends the hard run. hardFall 0 counts
// hard evidence like soft.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

namespace vipd::daemon {

enum class Evidence { Success, SoftFailure, HardFailure };

class HealthGate {
 public:
  // rise and fall are at least 1 (the config validator enforces it); 0 is treated as 1 so the
  // gate can never flip without a check. hardFall above fall would never act first: it is
  // capped at fall.
  HealthGate(uint32_t rise, uint32_t fall, uint32_t hardFall = 0)
      : rise_(std::max<uint32_t>(rise, 1)),
        fall_(std::max<uint32_t>(fall, 1)),
        hardFall_(std::min(hardFall, fall_)) {}

  // A reload's new thresholds (issue 29): the gate starts `healthy` (what the checker reported
  // before, which for type none was not this gate's) with `from`'s totals, and the runs start
  // over under the new rise/fall/hardFall. So a healthy gate stays healthy until `fall` new
  // failures (an apiserver that stays healthy is never withdrawn by a reload), and a closed one
  // stays closed until `rise` new successes.
  HealthGate(uint32_t rise, uint32_t fall, uint32_t hardFall, const HealthGate& from, bool healthy)
      : HealthGate(rise, fall, hardFall) {
    healthy_ = healthy;
    checks_ = from.checks_;
    failures_ = from.failures_;
    hardFailures_ = from.hardFailures_;
  }

  // Records one check outcome; a bool is a success or a soft failure. Returns true when
  // healthy() changed because of it.
  bool record(bool success) { return record(success ? Evidence::Success : Evidence::SoftFailure); }
  bool record(Evidence evidence) {
    ++checks_;
    if (evidence == Evidence::Success) {
      consecutiveHardFailures_ = 0;
      consecutiveFailures_ = 0;
      consecutiveSuccesses_ = saturatingIncrement(consecutiveSuccesses_);
      if (!healthy_ && consecutiveSuccesses_ >= rise_) {
        healthy_ = true;
        return true;
      }
      return false;
    }
    ++failures_;
    if (evidence == Evidence::HardFailure) {
      ++hardFailures_;
    }
    consecutiveSuccesses_ = 0;
    consecutiveFailures_ = saturatingIncrement(consecutiveFailures_);
    consecutiveHardFailures_ = evidence == Evidence::HardFailure
                                   ? saturatingIncrement(consecutiveHardFailures_)
                                   : 0;
    bool hardRunComplete = hardFall_ > 0 && consecutiveHardFailures_ >= hardFall_;
    if (healthy_ && (consecutiveFailures_ >= fall_ || hardRunComplete)) {
      healthy_ = false;
      return true;
    }
    return false;
  }

  bool healthy() const { return healthy_; }
  uint32_t rise() const { return rise_; }
  uint32_t fall() const { return fall_; }
  uint32_t hardFall() const { return hardFall_; }
  // The current run; at most one of the first two is non-zero. The hard run is the tail of the
  // failure run made of hard failures only.
  uint32_t consecutiveSuccesses() const { return consecutiveSuccesses_; }
  uint32_t consecutiveFailures() const { return consecutiveFailures_; }
  uint32_t consecutiveHardFailures() const { return consecutiveHardFailures_; }
  // Totals since construction.
  uint64_t checks() const { return checks_; }
  uint64_t failures() const { return failures_; }
  uint64_t hardFailures() const { return hardFailures_; }  // of failures()

 private:
  static uint32_t saturatingIncrement(uint32_t n) {
    return n == std::numeric_limits<uint32_t>::max() ? n : n + 1;
  }

  uint32_t rise_;
  uint32_t fall_;
  uint32_t hardFall_;
  bool healthy_ = false;
  uint32_t consecutiveSuccesses_ = 0;
  uint32_t consecutiveFailures_ = 0;
  uint32_t consecutiveHardFailures_ = 0;
  uint64_t checks_ = 0;
  uint64_t failures_ = 0;
  uint64_t hardFailures_ = 0;
};

}  // namespace vipd::daemon
