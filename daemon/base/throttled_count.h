// A repeated event logged at most once per interval, with how many happened since the previous
// line: for anything a client or a fault can repeat thousands of times a second (refused
// connections, a listener at its cap, accept() failures), where a line per event would fill the
// disk.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <utility>

namespace vipd::daemon {

class ThrottledCount {
 public:
  using Clock = std::chrono::steady_clock;
  explicit ThrottledCount(std::chrono::seconds interval = std::chrono::seconds(10))
      : interval_(interval) {}

  // Counts one event; returns the count to log, or nullopt when this one is not logged.
  std::optional<uint64_t> add(Clock::time_point now) {
    ++pending_;
    if (last_ && now - *last_ < interval_) {
      return std::nullopt;
    }
    last_ = now;
    return std::exchange(pending_, 0);
  }

 private:
  std::chrono::seconds interval_;
  std::optional<Clock::time_point> last_;
  uint64_t pending_ = 0;
};

}  // namespace vipd::daemon
