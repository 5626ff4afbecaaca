// When to write this node's VipdNode status (issue 41, part 2): coalesced, at most one write per
// `minInterval` (a second) however often the status changes, and at least one per `refresh` (a
// minute) when it does not, so `updatedAt` says the node is alive. One write in flight at a time;
// a failed write waits what Backoff says (capped) and then writes the newest status, never a
// queue of old ones: memory stays flat however long the API is away. Pure: time passed in.
#pragma once

#include <chrono>
#include <optional>

namespace vipd::kube {

class StatusSchedule {
 public:
  using Clock = std::chrono::steady_clock;
  struct Settings {
    std::chrono::milliseconds minInterval{1000};
    std::chrono::milliseconds refresh{60000};
  };

  explicit StatusSchedule(Settings settings) : settings_(settings) {}

  // The status to report changed at `now` (the first call after start counts as a change).
  void changed(Clock::time_point now);
  // When the next write should start; nothing while one is in flight. At or before `now`: start
  // it now.
  [[nodiscard]] std::optional<Clock::time_point> dueAt() const;
  // A write started at `now` (it carries every change so far).
  void started(Clock::time_point now);
  void succeeded(Clock::time_point now);
  // The write failed; try again `retryIn` from `now` (Backoff::next()).
  void failed(Clock::time_point now, std::chrono::milliseconds retryIn);

  bool dirty() const { return dirty_; }
  bool inFlight() const { return inFlight_; }
  std::optional<Clock::time_point> lastSuccess() const { return lastSuccess_; }

 private:
  Settings settings_;
  bool dirty_ = false;
  bool inFlight_ = false;
  bool dirtyWhileInFlight_ = false;
  std::optional<Clock::time_point> lastStart_;
  std::optional<Clock::time_point> lastSuccess_;
  std::optional<Clock::time_point> retryAt_;  // after a failure
};

}  // namespace vipd::kube
