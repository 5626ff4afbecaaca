#include "policy/withdraw_confirmation.h"

namespace vipd::policy {

WithdrawConfirmation::WithdrawConfirmation(std::chrono::milliseconds base,
                                           std::chrono::milliseconds jitter, uint32_t seed)
    : base_(base), jitter_(jitter) {
  // Spread by seed_seq: router IDs differ in their last bits, and minstd_rand's first draws for
  // nearby seeds are nearly equal.
  std::seed_seq spread{seed};
  random_.seed(spread);
}

void WithdrawConfirmation::observe(const std::set<bgp::Prefix>& wanting, Clock::time_point now) {
  for (auto it = deadlines_.begin(); it != deadlines_.end();) {
    it = wanting.count(it->first) == 0 ? deadlines_.erase(it) : std::next(it);
  }
  for (const auto& vip : wanting) {
    if (deadlines_.count(vip) == 0) {
      std::chrono::milliseconds extra{0};
      if (jitter_.count() > 0) {
        extra = std::chrono::milliseconds(
            std::uniform_int_distribution<int64_t>(0, jitter_.count())(random_));
      }
      deadlines_.emplace(vip, now + base_ + extra);
    }
  }
}

bool WithdrawConfirmation::confirmed(const bgp::Prefix& vip, Clock::time_point now) const {
  auto it = deadlines_.find(vip);
  return it != deadlines_.end() && it->second <= now;
}

std::optional<WithdrawConfirmation::Clock::time_point> WithdrawConfirmation::nextDeadline(
    Clock::time_point now) const {
  std::optional<Clock::time_point> out;
  for (const auto& [vip, deadline] : deadlines_) {
    if (deadline > now && (!out || deadline < *out)) {
      out = deadline;
    }
  }
  return out;
}

}  // namespace vipd::policy
