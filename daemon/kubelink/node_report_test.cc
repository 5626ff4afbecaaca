#include "daemon/kubelink/node_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace vipd::daemon {
namespace {

using json = nlohmann::json;
using kube::ConditionStatus;
using kube::EventReason;
using kube::VipState;
using ::testing::HasSubstr;

const auto kNow = std::chrono::system_clock::from_time_t(1796600000);  // 2026-12-07T...

// A status document as StatusReport writes it, cut to what the report reads.
json speakerStatus() {
  return json::parse(R"({
    "version": "0.3.0", "role": "active", "draining": false,
    "health": {"healthy": true},
    "withdrawn": {"active": false},
    "peers": [{"address": "192.0.2.1", "state": "Established", "stateSeconds": 61.4},
              {"address": "192.0.2.2", "state": "Active", "stateSeconds": 3.0}],
    "vips": [{"address": "203.0.113.10/32", "announced": true, "reason": ""},
             {"address": "2001:db8:ffff::10/128", "announced": false,
              "reason": "no Established session"}],
    "fabric": {"vips": {
       "203.0.113.10/32": {"available": true, "count": 3, "announce": "normal",
                           "heldByNeverZero": false},
       "2001:db8:ffff::10/128": {"available": false, "reason": "no session sends paths back",
                                 "count": 0, "announce": "none", "heldByNeverZero": false}},
       "duplicateRouterId": [], "duplicateRouterIdConfirmed": []},
    "doctor": {"counts": {"ok": 16, "warn": 1, "fail": 0}, "checks": []}
  })");
}

const kube::Condition& condition(const NodeReport& r, std::string_view type) {
  for (const auto& c : r.status.conditions) {
    if (c.type == type) {
      return c;
    }
  }
  throw std::runtime_error("no condition " + std::string(type));
}

TEST(NodeReportTest, ReadsVipsPeersAndConditions) {
  auto r = nodeReport(speakerStatus(), std::nullopt, kNow);
  ASSERT_EQ(r.status.vips.size(), 2u);
  EXPECT_EQ(r.status.vips[0].address, "203.0.113.10/32");
  EXPECT_TRUE(r.status.vips[0].announced);
  EXPECT_EQ(r.status.vips[0].state, VipState::Normal);
  EXPECT_EQ(r.status.vips[0].reason, "");
  EXPECT_EQ(r.status.vips[0].fabricAnnouncers, 3u);
  EXPECT_EQ(r.status.vips[1].state, VipState::Withdrawn);
  EXPECT_EQ(r.status.vips[1].reason, "no Established session");
  EXPECT_EQ(r.status.vips[1].fabricAnnouncers, 0u);  // no view: not a count
  ASSERT_EQ(r.status.peers.size(), 2u);
  EXPECT_EQ(r.status.peers[0].since, kube::rfc3339(kNow - std::chrono::seconds(61)));
  EXPECT_EQ(r.status.version, "0.3.0");
  EXPECT_EQ(r.status.updatedAt, kube::rfc3339(kNow));
  EXPECT_EQ(condition(r, kube::kConditionAnnouncing).status, ConditionStatus::True);
  EXPECT_EQ(condition(r, kube::kConditionAnnouncing).reason, "Announced");
  EXPECT_EQ(condition(r, kube::kConditionFabricViewAvailable).status, ConditionStatus::False);
  EXPECT_THAT(condition(r, kube::kConditionFabricViewAvailable).message,
              HasSubstr("no session sends paths back"));
  EXPECT_EQ(condition(r, kube::kConditionHeldByNeverZero).status, ConditionStatus::False);
  EXPECT_EQ(condition(r, kube::kConditionDoctorFailing).status, ConditionStatus::False);
}

TEST(NodeReportTest, SaysWhyNothingIsAnnounced) {
  auto s = speakerStatus();
  s["vips"][0]["announced"] = false;
  s["vips"][0]["reason"] = "withdrawn: annotation vipd.io/withdraw: disk swap";
  s["withdrawn"] = {{"active", true}, {"reason", "annotation vipd.io/withdraw: disk swap"},
                    {"sources", {"kubernetes"}}};
  auto r = nodeReport(s, std::nullopt, kNow);
  const auto& c = condition(r, kube::kConditionAnnouncing);
  EXPECT_EQ(c.status, ConditionStatus::False);
  EXPECT_EQ(c.reason, "WithdrawnByNode");
  EXPECT_THAT(c.message, HasSubstr("disk swap"));
  EXPECT_EQ(r.status.vips[0].reason, "withdrawn: annotation vipd.io/withdraw: disk swap");

  s["withdrawn"]["sources"] = {"vipctl"};
  EXPECT_EQ(condition(nodeReport(s, std::nullopt, kNow), kube::kConditionAnnouncing).reason,
            "WithdrawnByVipctl");
  s["withdrawn"] = {{"active", false}};
  s["health"]["healthy"] = false;
  EXPECT_EQ(condition(nodeReport(s, std::nullopt, kNow), kube::kConditionAnnouncing).reason,
            "HealthGateClosed");
  s["role"] = "standby";
  EXPECT_EQ(condition(nodeReport(s, std::nullopt, kNow), kube::kConditionAnnouncing).reason,
            "NotSpeaking");
}

TEST(NodeReportTest, ARefusedRequestAndAHeldVipShow) {
  auto s = speakerStatus();
  s["fabric"]["vips"]["203.0.113.10/32"]["announce"] = "degraded";
  s["fabric"]["vips"]["203.0.113.10/32"]["heldByNeverZero"] = true;
  auto r = nodeReport(s, std::string("refused: 0 other node(s) would remain"), kNow);
  EXPECT_EQ(r.status.vips[0].state, VipState::Degraded);
  EXPECT_THAT(r.status.vips[0].reason, HasSubstr("never-zero"));
  EXPECT_EQ(condition(r, kube::kConditionAnnouncing).reason, "WithdrawRefused");
  EXPECT_THAT(condition(r, kube::kConditionAnnouncing).message, HasSubstr("0 other node"));
  EXPECT_EQ(condition(r, kube::kConditionHeldByNeverZero).status, ConditionStatus::True);
  EXPECT_THAT(condition(r, kube::kConditionHeldByNeverZero).message,
              HasSubstr("203.0.113.10/32"));
}

TEST(NodeReportTest, DoctorFailuresNameTheChecks) {
  auto s = speakerStatus();
  s["doctor"] = {{"counts", {{"ok", 10}, {"warn", 0}, {"fail", 1}}},
                 {"checks", {{{"name", "vip-identity"}, {"result", "fail"}}}}};
  const auto report = nodeReport(s, std::nullopt, kNow);
  const auto& c = condition(report, kube::kConditionDoctorFailing);
  EXPECT_EQ(c.status, ConditionStatus::True);
  EXPECT_THAT(c.message, HasSubstr("vip-identity"));
  s.erase("doctor");
  EXPECT_EQ(condition(nodeReport(s, std::nullopt, kNow), kube::kConditionDoctorFailing).status,
            ConditionStatus::Unknown);
}

TEST(NodeReportTest, GarbageGivesDefaultsNotACrash) {
  for (const char* text : {"null", "[]", "{\"vips\": 3}", "{\"vips\": [1, \"x\", null]}",
                           "{\"peers\": [{\"stateSeconds\": \"x\"}], \"fabric\": []}"}) {
    auto r = nodeReport(json::parse(text), std::nullopt, kNow);
    EXPECT_EQ(r.status.conditions.size(), 4u) << text;
  }
}

TEST(NodeEventsTest, AnnouncedAtStartThenWithdrawnWithTheReason) {
  auto first = nodeReport(speakerStatus(), std::nullopt, kNow);
  auto events = nodeEvents(nullptr, first);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].reason, EventReason::VipAnnounced);
  EXPECT_THAT(events[0].message, HasSubstr("203.0.113.10/32"));
  EXPECT_TRUE(nodeEvents(&first, first).empty()) << "nothing changed, nothing said";

  auto s = speakerStatus();
  s["vips"][0]["announced"] = false;
  s["vips"][0]["reason"] = "draining";
  auto second = nodeReport(s, std::nullopt, kNow);
  events = nodeEvents(&first, second);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].reason, EventReason::VipWithdrawn);
  EXPECT_THAT(events[0].message, HasSubstr("draining"));
}

TEST(NodeEventsTest, HeldAndDuplicateRouterIdOnceEach) {
  auto before = nodeReport(speakerStatus(), std::nullopt, kNow);
  auto s = speakerStatus();
  s["fabric"]["vips"]["203.0.113.10/32"]["heldByNeverZero"] = true;
  s["fabric"]["duplicateRouterIdConfirmed"] = {"192.0.2.11 via 192.0.2.1, 192.0.2.2"};
  auto after = nodeReport(s, std::nullopt, kNow);
  auto events = nodeEvents(&before, after);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].reason, EventReason::HeldByNeverZero);
  EXPECT_EQ(events[1].reason, EventReason::DuplicateRouterId);
  EXPECT_THAT(events[1].message, HasSubstr("192.0.2.11"));
  EXPECT_TRUE(nodeEvents(&after, after).empty());
}

}  // namespace
}  // namespace vipd::daemon
