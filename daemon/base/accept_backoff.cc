#include "daemon/base/accept_backoff.h"

#include <algorithm>
#include <cerrno>

#include <boost/asio/error.hpp>

namespace vipd::daemon {

AcceptFailurePolicy::Decision AcceptFailurePolicy::failed(Clock::time_point now) {
  ++total_;
  Decision decision{delay_, logs_.add(now)};
  delay_ = std::min(delay_ * 2, kMaxDelay);
  return decision;
}

AcceptBackoff::AcceptBackoff(boost::asio::io_context& io, const Logger& log, std::string subject)
    : log_(log), subject_(std::move(subject)), timer_(io) {}

void AcceptBackoff::failed(const boost::system::error_code& ec, std::function<void()> retry) {
  if (ec == boost::asio::error::operation_aborted) {
    return;
  }
  const auto decision = policy_.failed(AcceptFailurePolicy::Clock::now());
  if (decision.logWithCount) {
    const bool outOfFiles = ec == boost::asio::error::no_descriptors ||
                            ec.value() == ENFILE;
    log_.warn(subject_,
              "accept failed {} time(s) since the last report ({} in all): {}{}; retrying in {}ms, "
              "established connections are not affected",
              *decision.logWithCount, policy_.total(), ec.message(),
              outOfFiles ? " (out of file descriptors: see /proc/<pid>/limits and the open "
                           "connections in vipctl status)"
                         : "",
              decision.retryAfter.count());
  }
  timer_.expires_after(decision.retryAfter);
  timer_.async_wait([retry = std::move(retry)](const boost::system::error_code& waitError) {
    if (!waitError) {
      retry();
    }
  });
}

}  // namespace vipd::daemon
