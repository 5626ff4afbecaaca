// What every accept loop (BGP listener, control socket, metrics listener, instance lock) does
// when accept() fails. Out of descriptors (EMFILE, ENFILE) or kernel memory (ENOBUFS, ENOMEM),
// the connection stays queued, so accepting again at once fails again at once: a loop that
// retries immediately spins at 100% CPU and, logging each failure, fills the disk (issue 17,
// item 2). Instead the loop waits, doubling from 50 ms to 1 s while failures go on, and logs at
// most one line per 10 s, with the count of failures since the previous line.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "daemon/base/logger.h"
#include "daemon/base/throttled_count.h"

namespace vipd::daemon {

// The pure part: delays and log throttling, driven by the caller's clock.
class AcceptFailurePolicy {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kFirstDelay{50};
  static constexpr std::chrono::milliseconds kMaxDelay{1000};
  static constexpr std::chrono::seconds kLogInterval{10};

  struct Decision {
    std::chrono::milliseconds retryAfter;
    // Set when this failure is to be logged: failures since the previous line, this one
    // included.
    std::optional<uint64_t> logWithCount;
  };

  Decision failed(Clock::time_point now);
  void succeeded() { delay_ = kFirstDelay; }
  uint64_t total() const { return total_; }

 private:
  std::chrono::milliseconds delay_ = kFirstDelay;
  ThrottledCount logs_{kLogInterval};
  uint64_t total_ = 0;
};

class AcceptBackoff {
 public:
  // `subject` names the listener in the log ("control socket /run/vipd/vipd.sock").
  AcceptBackoff(boost::asio::io_context& io, const Logger& log, std::string subject);

  // After a failed accept: logs (throttled) and calls `retry` after the delay, on the io thread.
  // operation_aborted (the listener closing) is not a failure: nothing is retried.
  void failed(const boost::system::error_code& ec, std::function<void()> retry);
  void succeeded() { policy_.succeeded(); }
  void cancel() { timer_.cancel(); }
  void setSubject(std::string subject) { subject_ = std::move(subject); }

  uint64_t failures() const { return policy_.total(); }

 private:
  const Logger& log_;
  std::string subject_;
  AcceptFailurePolicy policy_;
  boost::asio::steady_timer timer_;
};

}  // namespace vipd::daemon
