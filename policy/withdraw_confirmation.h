// Never zero at the same instant (issue 40): the clock behind FabricCount::withdrawConfirmed.
//
// An automatic withdrawal (health gate, return path) is weighed against the fabric's view, and
// that view lags: when a shared cause (etcd losing quorum, a CA rotation every check rejects)
// fails every node within milliseconds, each still sees the others' normal paths and would
// withdraw, and the fabric would be left with none. So a node that wants to withdraw a VIP first
// announces it degraded (decide(): confirmingWithdrawal), and only after `base` plus a jitter
// (up to `jitter`, drawn per VIP) does decide() weigh the view again: by then the nodes that
// failed with it have announced their own degraded paths, nobody counts them as serving, and
// all of them stay, held by the never-zero rule. A single failing node leaves `base` + jitter
// later than before; the jitter keeps nodes that failed together from looking at the same
// instant, so one's withdrawal has reached the others before they decide.
//
// Pure: the caller passes the time in and arms its own timer for nextDeadline(). The jitter
// comes from a seeded generator (the router ID), so a test replays it exactly.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <random>
#include <set>

#include "bgp/ip_address.h"

namespace vipd::policy {


// The daemon passes guard.confirmTime (config/config.h, default 300 ms) as both the base and the
// jitter: long enough for a degraded path to reach the other nodes through a fabric that forwards
// updates at once (BIRD, FRR and GoBGP by default, route reflectors included: milliseconds), and a
// single failing node leaves at most twice that later than its health check says.
class WithdrawConfirmation {
 public:
  using Clock = std::chrono::steady_clock;

  WithdrawConfirmation(std::chrono::milliseconds base, std::chrono::milliseconds jitter,
                       uint32_t seed);

  // The VIPs that want an automatic withdrawal now (Decision::wantingWithdrawal()), at `now`:
  // a VIP new to the set starts its clock; one no longer in it forgets (its cause cleared, or
  // the operator or a drain took over), and starts again from zero the next time.
  void observe(const std::set<bgp::Prefix>& wanting, Clock::time_point now);

  // Whether the VIP's clock has run out at `now` (FabricCount::withdrawConfirmed).
  bool confirmed(const bgp::Prefix& vip, Clock::time_point now) const;

  // The earliest clock that has not yet run out at `now`: when decide() must run again.
  std::optional<Clock::time_point> nextDeadline(Clock::time_point now) const;

  // The longest a withdrawal waits: base + jitter (for docs, status and tests).
  std::chrono::milliseconds longest() const { return base_ + jitter_; }

 private:
  std::chrono::milliseconds base_;
  std::chrono::milliseconds jitter_;
  std::minstd_rand random_;
  std::map<bgp::Prefix, Clock::time_point> deadlines_;
};

}  // namespace vipd::policy
