// UnbindAfterWithdraw on a real io_context: the sequence itself is DrainSequence's (tested
// without a clock in drain_sequence_test); here, that the executor polls, abandons and unbinds
// as it says. Timings are a few milliseconds; the io_context runs until no work is left.
#include "daemon/lifecycle/unbind_after_withdraw.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

namespace vipd::daemon {
namespace {

using namespace std::chrono_literals;

config::Drain drainSettings(std::chrono::milliseconds timeout,
                            std::chrono::milliseconds unbindDelay) {
  config::Drain d;
  d.timeout = timeout;
  d.unbindDelay = unbindDelay;
  return d;
}

TEST(UnbindAfterWithdraw, UnbindsOnceEveryPeerHasAcknowledged) {
  asio::io_context io;
  const auto settings = drainSettings(10s, 1ms);
  UnbindAfterWithdraw u(io, settings);
  int polls = 0, unbinds = 0;
  u.start({.acknowledged = [&] { return ++polls >= 3; },
           .still = [] { return true; },
           .unbind = [&] { ++unbinds; }});
  EXPECT_TRUE(u.running());
  io.run();
  EXPECT_EQ(polls, 3);  // polled until acknowledged, not once more
  EXPECT_EQ(unbinds, 1);
  EXPECT_FALSE(u.running());
}

TEST(UnbindAfterWithdraw, UnbindsAtTheTimeoutWhenAPeerNeverAcknowledges) {
  asio::io_context io;
  const auto settings = drainSettings(30ms, 0ms);
  UnbindAfterWithdraw u(io, settings);
  int polls = 0, unbinds = 0;
  u.start({.acknowledged = [&] { ++polls; return false; },
           .still = [] { return true; },
           .unbind = [&] { ++unbinds; }});
  io.run();
  EXPECT_EQ(unbinds, 1);
  EXPECT_GT(polls, 1);
}

TEST(UnbindAfterWithdraw, AbandonsWhenNoLongerWanted) {
  asio::io_context io;
  const auto settings = drainSettings(10s, 1ms);
  UnbindAfterWithdraw u(io, settings);
  int unbinds = 0;
  bool still = true;
  int polls = 0;
  u.start({.acknowledged = [&] { still = ++polls < 2; return false; },
           .still = [&] { return still; },
           .unbind = [&] { ++unbinds; }});
  io.run();
  EXPECT_EQ(unbinds, 0);
  EXPECT_FALSE(u.running());
}

TEST(UnbindAfterWithdraw, CancelStopsItAndStartRestartsIt) {
  asio::io_context io;
  const auto settings = drainSettings(10s, 1ms);
  UnbindAfterWithdraw u(io, settings);
  int first = 0, second = 0;
  u.start({.acknowledged = [] { return false; },
           .still = [] { return true; },
           .unbind = [&] { ++first; }});
  u.cancel();
  EXPECT_FALSE(u.running());
  io.run();
  io.restart();
  u.start({.acknowledged = [] { return false; },
           .still = [] { return true; },
           .unbind = [&] { ++first; }});
  u.start({.acknowledged = [] { return true; },
           .still = [] { return true; },
           .unbind = [&] { ++second; }});
  io.run();
  EXPECT_EQ(first, 0);
  EXPECT_EQ(second, 1);
}

TEST(UnbindAfterWithdraw, AnUnbindMayStartTheNextSequence) {
  asio::io_context io;
  const auto settings = drainSettings(10s, 0ms);
  UnbindAfterWithdraw u(io, settings);
  int unbinds = 0;
  std::function<void()> again = [&] {
    if (++unbinds < 2) {
      u.start({.acknowledged = [] { return true; }, .still = [] { return true; },
               .unbind = again});
    }
  };
  u.start({.acknowledged = [] { return true; }, .still = [] { return true; }, .unbind = again});
  io.run();
  EXPECT_EQ(unbinds, 2);
  EXPECT_FALSE(u.running());
}

}  // namespace
}  // namespace vipd::daemon
