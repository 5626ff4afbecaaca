// backoff.h: the waits, with the randomness fixed at its two ends.
#include "kube/backoff.h"

#include <gtest/gtest.h>

#include <vector>

namespace vipd::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

Backoff::Random lowest() {
  return [](uint64_t) { return uint64_t{0}; };
}
Backoff::Random highest() {
  return [](uint64_t bound) { return bound; };
}

const Error kTimeout{ErrorKind::Timeout, "timed out"};

std::vector<int64_t> waits(Backoff& b, int n, const Error& e = kTimeout) {
  std::vector<int64_t> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(b.next(e).count());
  }
  return out;
}

TEST(Backoff, DoublesUpToTheCapWithEqualJitter) {
  Backoff::Settings s{milliseconds{500}, milliseconds{30000}, milliseconds{300000}};
  Backoff low(s, lowest());
  EXPECT_EQ(waits(low, 9),
            (std::vector<int64_t>{250, 500, 1000, 2000, 4000, 8000, 15000, 15000, 15000}));
  Backoff high(s, highest());
  EXPECT_EQ(waits(high, 9),
            (std::vector<int64_t>{500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000}));
  EXPECT_EQ(high.failures(), 9u);
}

TEST(Backoff, ResetStartsOver) {
  Backoff b({milliseconds{100}, milliseconds{1000}, milliseconds{5000}}, highest());
  waits(b, 5);
  b.reset();
  EXPECT_EQ(b.next(kTimeout), milliseconds{100});
}

TEST(Backoff, ManyFailuresNeverOverflow) {
  Backoff b({milliseconds{500}, milliseconds{30000}, milliseconds{300000}}, highest());
  waits(b, 100000);
  EXPECT_EQ(b.next(kTimeout), milliseconds{30000});
}

TEST(Backoff, RetryAfterHonouredAndClamped) {
  Backoff b({milliseconds{100}, milliseconds{1000}, milliseconds{60000}}, highest());
  Error tooMany{ErrorKind::Http, "429", 429, seconds{5}};
  EXPECT_EQ(b.next(tooMany), milliseconds{5000}) << "above the backoff's cap: asked for";
  Error unavailable{ErrorKind::Http, "503", 503, seconds{86400}};
  EXPECT_EQ(b.next(unavailable), milliseconds{60000}) << "a day: clamped to maxRetryAfter";
  Error small{ErrorKind::Http, "429", 429, seconds{0}};
  EXPECT_EQ(b.next(small), milliseconds{400}) << "never less than the backoff";
  Error internal{ErrorKind::Http, "500", 500, seconds{30}};
  EXPECT_EQ(b.next(internal), milliseconds{800}) << "Retry-After only on 429 and 503";
}

TEST(Backoff, Retryable) {
  EXPECT_TRUE(retryable(kTimeout));
  EXPECT_TRUE(retryable({ErrorKind::Connect, ""}));
  EXPECT_TRUE(retryable({ErrorKind::Tls, ""}));
  EXPECT_TRUE(retryable({ErrorKind::Protocol, ""}));
  EXPECT_TRUE(retryable({ErrorKind::Http, "", 429}));
  EXPECT_TRUE(retryable({ErrorKind::Http, "", 500}));
  EXPECT_TRUE(retryable({ErrorKind::Http, "", 503}));
  EXPECT_TRUE(retryable({ErrorKind::Http, "", 408}));
  EXPECT_FALSE(retryable({ErrorKind::Http, "", 403}));
  EXPECT_FALSE(retryable({ErrorKind::Http, "", 422}));
  EXPECT_FALSE(retryable({ErrorKind::Config, ""}));
  EXPECT_FALSE(retryable({ErrorKind::Cancelled, ""}));
}

}  // namespace
}  // namespace vipd::kube
