// Runs an io_context one handler at a time until a condition holds or a deadline passes: the
// loop the daemon's unit tests drive their real sockets and timers with.
#pragma once

#include <chrono>

#include <boost/asio/io_context.hpp>

namespace vipd::daemon {

// Whether `done()` held before `timeout` (checked before each handler; each wait at most 10 ms).
template <typename Predicate>
bool runUntil(boost::asio::io_context& io, Predicate done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return false;
    }
    io.run_one_for(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace vipd::daemon
