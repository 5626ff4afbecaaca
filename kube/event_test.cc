// event.h: the Event body byte for byte, and the limiter over time.
#include "kube/event.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace vipd::kube {
namespace {

using namespace std::chrono_literals;
using Clock = EventLimiter::Clock;

TEST(Event, NodeEventBytes) {
  std::chrono::system_clock::time_point t{1796676167s + 5ns};
  EXPECT_EQ(nodeEvent("cp-1", EventReason::WithdrawRefused,
                      "withdraw refused: 1 other node would stay, the guard asks for 2", t, 7),
            R"({"apiVersion":"v1","count":1,"firstTimestamp":"2026-12-07T20:42:47Z",)"
            R"("involvedObject":{"apiVersion":"v1","kind":"Node","name":"cp-1","uid":"cp-1"},)"
            R"("kind":"Event","lastTimestamp":"2026-12-07T20:42:47Z",)"
            R"("message":"withdraw refused: 1 other node would stay, the guard asks for 2",)"
            R"("metadata":{"name":"cp-1.vipd.18ef137466720605.7","namespace":"default"},)"
            R"("reason":"WithdrawRefused","reportingComponent":"vipd.io/vipd",)"
            R"("reportingInstance":"cp-1","source":{"component":"vipd","host":"cp-1"},)"
            R"("type":"Warning"})");
  EXPECT_EQ(eventsPath(), "/api/v1/namespaces/default/events");
}

TEST(Event, ReasonsAndTypes) {
  EXPECT_EQ(eventReasonName(EventReason::VipAnnounced), "VipAnnounced");
  EXPECT_EQ(eventTypeName(EventReason::VipAnnounced), "Normal");
  EXPECT_EQ(eventReasonName(EventReason::VipWithdrawn), "VipWithdrawn");
  EXPECT_EQ(eventTypeName(EventReason::VipWithdrawn), "Normal");
  EXPECT_EQ(eventReasonName(EventReason::HeldByNeverZero), "HeldByNeverZero");
  EXPECT_EQ(eventTypeName(EventReason::HeldByNeverZero), "Warning");
  EXPECT_EQ(eventReasonName(EventReason::DuplicateRouterId), "DuplicateRouterId");
  EXPECT_EQ(eventTypeName(EventReason::DuplicateRouterId), "Warning");
}

TEST(Event, MessageCut) {
  auto body = nlohmann::json::parse(nodeEvent("n", EventReason::VipAnnounced,
                                              std::string(5000, 'm'), {}, 1));
  EXPECT_EQ(body["message"].get<std::string>().size(), kMaxEventMessageBytes);
}

TEST(EventLimiter, BurstThenOneAnInterval) {
  EventLimiter limiter(3, 60s);
  Clock::time_point t0{};
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(limiter.allow(EventReason::VipWithdrawn, t0)) << i;
  }
  EXPECT_FALSE(limiter.allow(EventReason::VipWithdrawn, t0 + 1s)) << "a flapping VIP";
  EXPECT_FALSE(limiter.allow(EventReason::VipWithdrawn, t0 + 59s));
  EXPECT_TRUE(limiter.allow(EventReason::VipAnnounced, t0 + 59s)) << "each reason its own bucket";
  EXPECT_TRUE(limiter.allow(EventReason::VipWithdrawn, t0 + 60s)) << "one token a minute";
  EXPECT_FALSE(limiter.allow(EventReason::VipWithdrawn, t0 + 61s));
  EXPECT_EQ(limiter.dropped(), 3u);
  // An hour of quiet refills the bucket to its burst, no more.
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(limiter.allow(EventReason::VipWithdrawn, t0 + 3600s)) << i;
  }
  EXPECT_FALSE(limiter.allow(EventReason::VipWithdrawn, t0 + 3600s));
}

}  // namespace
}  // namespace vipd::kube
