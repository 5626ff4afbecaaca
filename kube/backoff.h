// How long to wait before trying the API again after a failure (issue 41, part 5): capped
// exponential backoff with jitter, so N nodes whose API went away do not come back in step.
// A 429 or 503 with Retry-After waits at least that long (clamped to maxRetryAfter: a hostile
// or broken server asking for a day must not silence vipd for a day). Pure: the randomness is
// a function passed in (tests give a fixed one), no clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include "kube/error.h"

namespace vipd::kube {

class Backoff {
 public:
  struct Settings {
    std::chrono::milliseconds initial{500};
    std::chrono::milliseconds max{30000};
    std::chrono::milliseconds maxRetryAfter{300000};
  };
  // Returns a value uniformly in [0, bound] (inclusive); bound fits 32 bits.
  using Random = std::function<uint64_t(uint64_t bound)>;

  Backoff(Settings settings, Random random);

  // The wait after failure `error` (the failures counted so far included): "equal jitter", half
  // of min(max, initial * 2^(failures - 1)) plus up to as much again at random; at least
  // error.retryAfter (clamped to maxRetryAfter) for 429 and 503.
  [[nodiscard]] std::chrono::milliseconds next(const Error& error);
  // A success: the next failure starts from `initial` again.
  void reset() { failures_ = 0; }
  uint32_t failures() const { return failures_; }
  const Settings& settings() const { return settings_; }

 private:
  Settings settings_;
  Random random_;
  uint32_t failures_ = 0;
};

// Whether the operation is worth trying again by itself (with Backoff): transport failures,
// timeouts, 429, 5xx, 408. Not: Config, TLS (a wrong CA does not fix itself quickly: retried, but
// the caller logs it as such), 4xx other than those (our request is wrong; 410 has its own path).
[[nodiscard]] bool retryable(const Error& error);

}  // namespace vipd::kube
