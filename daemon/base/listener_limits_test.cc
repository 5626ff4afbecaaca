// The pure parts of how listeners survive floods and descriptor exhaustion (issue 17, items 2
// and 3): the accept-failure backoff, the log throttle and each listener's share of the
// descriptor limit. Time is injected; nothing sleeps.
#include <gtest/gtest.h>

#include "daemon/base/accept_backoff.h"
#include "daemon/base/listener_stats.h"
#include "daemon/base/throttled_count.h"

namespace vipd::daemon {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(AcceptFailurePolicy, DelayDoublesFrom50msUpTo1s) {
  AcceptFailurePolicy policy;
  const auto t0 = Clock::time_point{} + 1h;
  std::vector<long> delays;
  for (int i = 0; i < 8; ++i) {
    delays.push_back(static_cast<long>(policy.failed(t0).retryAfter.count()));
  }
  EXPECT_EQ(delays, (std::vector<long>{50, 100, 200, 400, 800, 1000, 1000, 1000}));
  policy.succeeded();
  EXPECT_EQ(policy.failed(t0).retryAfter, 50ms);
  EXPECT_EQ(policy.total(), 9u);
}

// 100 failures a second for a minute: 6 log lines, each with the count since the previous one,
// instead of 6,000 (the spin logged ~300,000 a second).
TEST(AcceptFailurePolicy, LogsOncePerIntervalWithTheCount) {
  AcceptFailurePolicy policy;
  const auto t0 = Clock::time_point{} + 1h;
  std::vector<uint64_t> logged;
  for (int i = 0; i < 6000; ++i) {
    if (auto count = policy.failed(t0 + i * 10ms).logWithCount) {
      logged.push_back(*count);
    }
  }
  EXPECT_EQ(logged, (std::vector<uint64_t>{1, 1000, 1000, 1000, 1000, 1000}));
}

TEST(ThrottledCount, CountsWhatItDoesNotLog) {
  ThrottledCount throttle(10s);
  const auto t0 = Clock::time_point{} + 1h;
  EXPECT_EQ(throttle.add(t0), 1u);
  EXPECT_EQ(throttle.add(t0 + 1s), std::nullopt);
  EXPECT_EQ(throttle.add(t0 + 9s), std::nullopt);
  EXPECT_EQ(throttle.add(t0 + 10s), 3u);
  EXPECT_EQ(throttle.add(t0 + 30s), 1u);
}

TEST(ClientLimit, EachListenerGetsItsShareOfTheDescriptorsLeftAfterTheReserve) {
  EXPECT_EQ(clientLimitFor(1024, 2, 64, 32), 32u);      // plenty: the preferred cap
  EXPECT_EQ(clientLimitFor(1048576, 2, 64, 32), 32u);
  EXPECT_EQ(clientLimitFor(100, 2, 64, 32), 18u);       // (100 - 64) / 2
  EXPECT_EQ(clientLimitFor(64, 2, 64, 32), 1u);         // nothing left: still one client
  EXPECT_EQ(clientLimitFor(10, 2, 64, 32), 1u);
  EXPECT_EQ(clientLimitFor(1024, 0, 64, 32), 1u);
}

TEST(ListenerStats, JsonNamesEveryCounter) {
  ListenerStats stats{3, 32, 4, 5, 6, 7};
  EXPECT_EQ(stats.toJson(), nlohmann::json::parse(R"({"open":3,"limit":32,"limitHits":4,
      "idleTimeouts":5,"acceptFailures":6,"refused":7})"));
}

}  // namespace
}  // namespace vipd::daemon
