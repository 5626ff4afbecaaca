// status_schedule.h: when writes start, driven by events with time passed in.
#include "kube/status_schedule.h"

#include <gtest/gtest.h>

namespace vipd::kube {
namespace {

using std::chrono::milliseconds;
using Clock = StatusSchedule::Clock;

const Clock::time_point t0 = Clock::time_point{} + std::chrono::hours{1};

StatusSchedule schedule() { return StatusSchedule({milliseconds{1000}, milliseconds{60000}}); }

TEST(StatusSchedule, FirstWriteAtOnce) {
  auto s = schedule();
  s.changed(t0);
  ASSERT_TRUE(s.dueAt());
  EXPECT_LE(*s.dueAt(), t0);
}

TEST(StatusSchedule, ChangesCoalescedToOneWriteASecond) {
  auto s = schedule();
  s.changed(t0);
  s.started(t0);
  EXPECT_FALSE(s.dueAt()) << "one write in flight at a time";
  for (int i = 1; i <= 5; ++i) {
    s.changed(t0 + milliseconds{i * 10});
  }
  s.succeeded(t0 + milliseconds{80});
  ASSERT_TRUE(s.dueAt());
  EXPECT_EQ(*s.dueAt(), t0 + milliseconds{1000}) << "five changes, one write, a second on";
  s.started(t0 + milliseconds{1000});
  s.succeeded(t0 + milliseconds{1050});
  EXPECT_FALSE(s.dirty());
  EXPECT_EQ(*s.dueAt(), t0 + milliseconds{61050}) << "nothing changed: the minute's refresh";
  EXPECT_EQ(s.lastSuccess(), t0 + milliseconds{1050});
}

TEST(StatusSchedule, AChangeLongAfterTheLastWriteGoesAtOnce) {
  auto s = schedule();
  s.changed(t0);
  s.started(t0);
  s.succeeded(t0 + milliseconds{20});
  s.changed(t0 + milliseconds{30000});
  EXPECT_EQ(*s.dueAt(), t0 + milliseconds{1000}) << "already past: start now";
}

TEST(StatusSchedule, FailureRetriesAfterTheBackoffWithTheNewestStatus) {
  auto s = schedule();
  s.changed(t0);
  s.started(t0);
  s.failed(t0 + milliseconds{100}, milliseconds{4000});
  EXPECT_TRUE(s.dirty()) << "still to be written";
  EXPECT_EQ(*s.dueAt(), t0 + milliseconds{4100});
  s.changed(t0 + milliseconds{200});
  EXPECT_EQ(*s.dueAt(), t0 + milliseconds{4100}) << "a change does not cut the backoff short";
  s.started(t0 + milliseconds{4100});
  s.succeeded(t0 + milliseconds{4200});
  EXPECT_FALSE(s.dirty());
  EXPECT_EQ(*s.dueAt(), t0 + milliseconds{64200});
}

TEST(StatusSchedule, ChangeDuringTheWriteIsWrittenNext) {
  auto s = schedule();
  s.changed(t0);
  s.started(t0);
  s.changed(t0 + milliseconds{500});
  s.succeeded(t0 + milliseconds{600});
  EXPECT_TRUE(s.dirty());
  EXPECT_EQ(*s.dueAt(), t0 + milliseconds{1000});
}

}  // namespace
}  // namespace vipd::kube
