// vipd_node.h: the VipdNode status patch and object, byte for byte.
#include "kube/vipd_node.h"

#include <gtest/gtest.h>

#include <chrono>

namespace vipd::kube {
namespace {

using namespace std::chrono_literals;

TEST(VipdNode, StatusMergePatchBytes) {
  VipdNodeStatus s;
  s.vips = {{"192.0.2.10", true, VipState::Normal, "", 3},
            {"2001:db8::10", false, VipState::Withdrawn, "health check failing", 2}};
  s.peers = {{"192.0.2.1", "Established", "2026-12-07T20:00:00Z"}};
  s.version = "0.2.0";
  s.updatedAt = "2026-12-07T20:42:47Z";
  s.conditions = {{"Announcing", ConditionStatus::True, "Announced", "1 of 2 VIPs announced",
                   "2026-12-07T20:00:01Z"},
                  {"HeldByNeverZero", ConditionStatus::False, "NotHeld", "", ""}};
  // Keys sorted at every level; every list whole (a merge patch replaces lists).
  EXPECT_EQ(statusMergePatch(s),
            R"({"status":{"conditions":[)"
            R"({"lastTransitionTime":"2026-12-07T20:00:01Z","message":"1 of 2 VIPs announced",)"
            R"("reason":"Announced","status":"True","type":"Announcing"},)"
            R"({"lastTransitionTime":"","message":"","reason":"NotHeld","status":"False",)"
            R"("type":"HeldByNeverZero"}],)"
            R"("peers":[{"address":"192.0.2.1","since":"2026-12-07T20:00:00Z",)"
            R"("state":"Established"}],)"
            R"("updatedAt":"2026-12-07T20:42:47Z","version":"0.2.0",)"
            R"("vips":[{"address":"192.0.2.10","announced":true,"fabricAnnouncers":3,)"
            R"("reason":"","state":"normal"},)"
            R"({"address":"2001:db8::10","announced":false,"fabricAnnouncers":2,)"
            R"("reason":"health check failing","state":"withdrawn"}]}})");
}

TEST(VipdNode, EmptyStatusKeepsItsLists) {
  EXPECT_EQ(statusMergePatch({}),
            R"({"status":{"conditions":[],"peers":[],"updatedAt":"","version":"","vips":[]}})")
      << "an empty list clears what an older write left";
}

TEST(VipdNode, TextIsEscapedNeverRaw) {
  VipdNodeStatus s;
  s.vips = {{"192.0.2.10", false, VipState::Degraded, "a \"quoted\"\nreason \xff", 1}};
  std::string patch = statusMergePatch(s);
  // Quotes and the newline escaped; the byte that is not UTF-8 replaced by U+FFFD.
  EXPECT_NE(patch.find("\"reason\":\"a \\\"quoted\\\"\\nreason \xef\xbf\xbd\""),
            std::string::npos)
      << patch;
}

TEST(VipdNode, ObjectAndPaths) {
  EXPECT_EQ(vipdNodeObject("cp-1"),
            R"({"apiVersion":"vipd.io/v1alpha1","kind":"VipdNode","metadata":{"name":"cp-1"}})");
  EXPECT_EQ(vipdNodesPath(), "/apis/vipd.io/v1alpha1/vipdnodes");
  EXPECT_EQ(vipdNodeStatusPath("cp-1"), "/apis/vipd.io/v1alpha1/vipdnodes/cp-1/status");
}

TEST(VipdNode, Rfc3339) {
  std::chrono::system_clock::time_point t{1796676167s + 999ms};  // 2026-12-07T20:42:47.999Z
  EXPECT_EQ(rfc3339(t), "2026-12-07T20:42:47Z") << "whole seconds, UTC";
  EXPECT_EQ(rfc3339(std::chrono::system_clock::time_point{}), "1970-01-01T00:00:00Z");
}

TEST(VipdNode, TransitionTimesKeptWhileTheStatusHolds) {
  std::vector<Condition> before = {
      {"Announcing", ConditionStatus::True, "Announced", "", "2026-12-07T20:00:00Z"},
      {"DoctorFailing", ConditionStatus::False, "Passed", "", "2026-12-07T20:00:00Z"}};
  std::vector<Condition> next = {
      {"Announcing", ConditionStatus::True, "Announced", "again", ""},
      {"DoctorFailing", ConditionStatus::True, "Failed", "", ""},
      {"HeldByNeverZero", ConditionStatus::False, "NotHeld", "", ""}};
  auto out = withTransitionTimes(before, next, "2026-12-07T21:00:00Z");
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].lastTransitionTime, "2026-12-07T20:00:00Z") << "unchanged status";
  EXPECT_EQ(out[0].message, "again");
  EXPECT_EQ(out[1].lastTransitionTime, "2026-12-07T21:00:00Z") << "changed";
  EXPECT_EQ(out[2].lastTransitionTime, "2026-12-07T21:00:00Z") << "new";
}

TEST(VipdNode, StateNames) {
  EXPECT_EQ(vipStateName(VipState::Normal), "normal");
  EXPECT_EQ(vipStateName(VipState::Degraded), "degraded");
  EXPECT_EQ(vipStateName(VipState::Withdrawn), "withdrawn");
}

}  // namespace
}  // namespace vipd::kube
