// The end of a drain for a withdrawal the Speaker has already sent: the health gate's unbind
// (health.unbindWhenUnhealthy) and a VIP removed from the config. Waits until every Established
// peer has acknowledged what was sent (at most drain.timeout), then drain.unbindDelay, then
// unbinds. The order and the polling are DrainSequence's (startAfterWithdraw), the same as a
// drain's, so that the three ways an address leaves the node cannot drift apart.
// Owns: its timer and the sequence in progress.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "config/config.h"
#include "daemon/lifecycle/drain_sequence.h"

namespace vipd::daemon {

namespace asio = boost::asio;

class UnbindAfterWithdraw {
 public:
  struct Steps {
    // Every Established peer has acknowledged everything sent to it.
    std::function<bool()> acknowledged;
    // Checked before each step once the timer fires: false abandons the sequence (the health
    // check passed again, the VIP was added back, the node is shutting down).
    std::function<bool()> still;
    // Removes the addresses; the sequence is over.
    std::function<void()> unbind;
  };

  // `settings` is read when a sequence starts: a reload's new drain timings apply to the next one.
  UnbindAfterWithdraw(asio::io_context& io, const config::Drain& settings);

  // Starts the wait for acknowledgements, now; a sequence in progress is abandoned first.
  void start(Steps steps);
  void cancel();
  bool running() const { return sequence_.has_value(); }

 private:
  void run(const std::vector<DrainAction>& actions);

  const config::Drain& settings_;
  asio::steady_timer timer_;
  std::optional<DrainSequence> sequence_;
  std::chrono::steady_clock::time_point startedAt_;
  Steps steps_;
};

}  // namespace vipd::daemon
