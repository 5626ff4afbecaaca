#include "kube/status_schedule.h"

#include <algorithm>

namespace vipd::kube {

void StatusSchedule::changed(Clock::time_point) {
  if (inFlight_) {
    dirtyWhileInFlight_ = true;
  } else {
    dirty_ = true;
  }
}

std::optional<StatusSchedule::Clock::time_point> StatusSchedule::dueAt() const {
  if (inFlight_) {
    return std::nullopt;
  }
  if (retryAt_) {
    return *retryAt_;
  }
  if (!lastStart_) {
    return Clock::time_point::min();  // never written: at once
  }
  if (dirty_) {
    return *lastStart_ + settings_.minInterval;
  }
  return (lastSuccess_ ? *lastSuccess_ : *lastStart_) + settings_.refresh;
}

void StatusSchedule::started(Clock::time_point now) {
  inFlight_ = true;
  dirty_ = false;
  dirtyWhileInFlight_ = false;
  retryAt_.reset();
  lastStart_ = now;
}

void StatusSchedule::succeeded(Clock::time_point now) {
  inFlight_ = false;
  lastSuccess_ = now;
  dirty_ = dirtyWhileInFlight_;
  dirtyWhileInFlight_ = false;
}

void StatusSchedule::failed(Clock::time_point now, std::chrono::milliseconds retryIn) {
  inFlight_ = false;
  dirty_ = true;  // what failed to be written still has to be
  dirtyWhileInFlight_ = false;
  retryAt_ = now + retryIn;
}

}  // namespace vipd::kube
