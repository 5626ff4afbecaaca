#include "kube/backoff.h"

#include <algorithm>
#include <utility>

namespace vipd::kube {

Backoff::Backoff(Settings settings, Random random)
    : settings_(settings), random_(std::move(random)) {}

std::chrono::milliseconds Backoff::next(const Error& error) {
  using std::chrono::milliseconds;
  ++failures_;
  // initial * 2^(failures - 1), saturating at max without overflowing.
  milliseconds ceiling = settings_.initial;
  for (uint32_t i = 1; i < failures_ && ceiling < settings_.max; ++i) {
    ceiling *= 2;
  }
  ceiling = std::min(ceiling, settings_.max);
  auto half = static_cast<uint64_t>(ceiling.count() / 2);
  milliseconds wait{static_cast<int64_t>(half + std::min(random_(half), half))};
  bool asksToWait = error.kind == ErrorKind::Http &&
                    (error.httpStatus == 429 || error.httpStatus == 503) && error.retryAfter;
  if (asksToWait) {
    milliseconds asked = std::min<milliseconds>(*error.retryAfter, settings_.maxRetryAfter);
    wait = std::max(wait, asked);
  }
  return wait;
}

bool retryable(const Error& error) {
  switch (error.kind) {
    case ErrorKind::Config:
    case ErrorKind::Cancelled:
      return false;
    case ErrorKind::Http:
      return error.httpStatus == 408 || error.httpStatus == 429 || error.httpStatus >= 500;
    default:
      return true;
  }
}

}  // namespace vipd::kube
