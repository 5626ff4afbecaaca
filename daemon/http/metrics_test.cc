// Metrics: status JSON snapshots in, Prometheus text out.
#include "daemon/http/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace vipd::daemon {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

json peer(std::string state, int transitions, int updatesSent) {
  return {{"address", "192.0.2.1"},
          {"asn", 64512},
          {"type", "eBGP"},
          {"state", state},
          {"stateFor", "5s"},
          {"lastError", ""},
          {"prefixesAdvertised", state == "Established" ? 1 : 0},
          {"updatesSent", updatesSent},
          {"updatesReceived", 2},
          {"prefixesReceived", 0},
          {"withdrawalsReceived", 0},
          {"treatAsWithdraw", 1},
          {"attributeDiscard", 0},
          {"notificationsSent", 1},
          {"notificationsReceived", 0},
          {"notificationsSentByCode", {{"6/2", 1}}},
          {"notificationsReceivedByCode", json::object()},
          {"establishedTransitions", transitions},
          {"endOfRibReceived", 1},
          {"routeRefreshReceived", 0},
          {"notEstablishedTooLong", false},
          {"stateSeconds", 5}};
}

json snapshot(json peerStatus) {
  return {{"version", "0.1.0"},
          {"routerId", "192.0.2.10"},
          {"localAsn", 64500},
          {"peers", json::array({std::move(peerStatus)})},
          {"vips", json::array({{{"address", "203.0.113.10/32"},
                                 {"interface", "lo"},
                                 {"state", "bound"},
                                 {"bound", true},
                                 {"ownedByVipd", true},
                                 {"lostCount", 2},
                                 {"announced", true},
                                 {"announcedToPeers", 1},
                                 {"reason", ""}}})},
          {"health",
           {{"type", "https"},
            {"healthy", true},
            {"consecutiveSuccesses", 3},
            {"consecutiveFailures", 0},
            {"lastLatencyMs", 12.5},
            {"checks", 10},
            {"failures", 1}}},
          {"withdrawn", {{"active", false}, {"reason", ""}, {"since", nullptr}}},
          {"mode", "normal"},
          {"ready", true},
          {"readyReasons", json::array()}};
}

TEST(Metrics, ProjectsAFullSnapshot) {
  Metrics metrics;
  metrics.update(snapshot(peer("Established", 1, 4)));
  const auto text = metrics.serialize();

  EXPECT_THAT(text, HasSubstr("vipd_build_info{version=\"0.1.0\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("vipd_mode{mode=\"normal\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("vipd_ready 1\n"));
  EXPECT_THAT(text, HasSubstr("vipd_withdrawn 0\n"));
  EXPECT_THAT(text, HasSubstr("vipd_withdrawn_since_timestamp_seconds 0\n"));

  EXPECT_THAT(text, HasSubstr("vipd_peer_state{peer=\"192.0.2.1\",state=\"Established\"} 1\n"));
  for (const char* other : {"Idle", "Connect", "Active", "OpenSent", "OpenConfirm"}) {
    EXPECT_THAT(text, HasSubstr("vipd_peer_state{peer=\"192.0.2.1\",state=\"" + std::string(other) +
                                "\"} 0\n"));
  }
  EXPECT_THAT(text, HasSubstr("vipd_peer_established{peer=\"192.0.2.1\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("vipd_peer_state_seconds{peer=\"192.0.2.1\"} 5\n"));
  EXPECT_THAT(text, HasSubstr("vipd_peer_not_established_too_long{peer=\"192.0.2.1\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("vipd_peer_flaps_total{peer=\"192.0.2.1\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("vipd_updates_sent_total{peer=\"192.0.2.1\"} 4\n"));
  EXPECT_THAT(text, HasSubstr("vipd_updates_received_total{peer=\"192.0.2.1\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("vipd_prefixes_received_total{peer=\"192.0.2.1\"} 0\n"));
  EXPECT_THAT(
      text,
      HasSubstr("vipd_update_errors_total{handling=\"treat-as-withdraw\",peer=\"192.0.2.1\"} 1\n"));
  EXPECT_THAT(
      text,
      HasSubstr("vipd_update_errors_total{handling=\"attribute-discard\",peer=\"192.0.2.1\"} 0\n"));
  EXPECT_THAT(text,
              HasSubstr("vipd_notifications_sent_total{code=\"6/2\",peer=\"192.0.2.1\"} 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("vipd_notifications_received_total{")));
  EXPECT_THAT(text, HasSubstr("vipd_end_of_rib_received_total{peer=\"192.0.2.1\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("vipd_prefixes_advertised{peer=\"192.0.2.1\"} 1\n"));

  EXPECT_THAT(text, HasSubstr("vipd_vip_bound{interface=\"lo\",vip=\"203.0.113.10/32\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("vipd_vip_announced{vip=\"203.0.113.10/32\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("vipd_vip_announced_peers{vip=\"203.0.113.10/32\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("vipd_vip_owned_by_vipd{vip=\"203.0.113.10/32\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("vipd_vip_lost_total{vip=\"203.0.113.10/32\"} 2\n"));

  EXPECT_THAT(text, HasSubstr("vipd_health_healthy 1\n"));
  EXPECT_THAT(text, HasSubstr("vipd_health_consecutive_successes 3\n"));
  EXPECT_THAT(text, HasSubstr("vipd_health_check_latency_seconds 0.0125\n"));
  EXPECT_THAT(text, HasSubstr("vipd_health_checks_total 10\n"));
  EXPECT_THAT(text, HasSubstr("vipd_health_check_failures_total 1\n"));

  // Every family is documented and typed; counters end in _total.
  EXPECT_THAT(text, HasSubstr("# HELP vipd_peer_flaps_total "));
  EXPECT_THAT(text, HasSubstr("# TYPE vipd_peer_flaps_total counter\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE vipd_peer_state gauge\n"));
}

TEST(Metrics, FabricViewHoldsAndTheGuard) {
  Metrics metrics;
  auto status = snapshot(peer("Established", 1, 4));
  status["fabric"] = {
      {"vips",
       {{"203.0.113.10/32", {{"available", true}, {"count", 3}, {"heldByNeverZero", false}}},
        {"2001:db8:ffff::10/128",
         {{"available", false}, {"count", 0}, {"reason", "fabric view unavailable"}}}}},
      {"duplicateRouterId", json::array({"a path ..."})},
      {"guard", {{"minAnnouncers", 1}, {"expectedAnnouncers", 3}}}};
  metrics.update(status);
  auto text = metrics.serialize();
  EXPECT_THAT(text, HasSubstr("vipd_fabric_view_available{vip=\"203.0.113.10/32\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("vipd_fabric_view_available{vip=\"2001:db8:ffff::10/128\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("vipd_fabric_announcers{vip=\"203.0.113.10/32\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("vipd_fabric_announcers{vip=\"2001:db8:ffff::10/128\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("vipd_fabric_held_by_never_zero{vip=\"203.0.113.10/32\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("vipd_fabric_duplicate_router_id 1\n"));
  EXPECT_THAT(text, HasSubstr("vipd_fabric_expected_announcers 3\n"));
  EXPECT_THAT(text, HasSubstr("vipd_guard_min_announcers 1\n"));
  status["fabric"]["vips"]["203.0.113.10/32"]["heldByNeverZero"] = true;
  status["fabric"]["vips"]["203.0.113.10/32"]["count"] = 1;
  metrics.update(status);
  text = metrics.serialize();
  EXPECT_THAT(text, HasSubstr("vipd_fabric_held_by_never_zero{vip=\"203.0.113.10/32\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("vipd_fabric_announcers{vip=\"203.0.113.10/32\"} 1\n"));
}

TEST(Metrics, CountersAdvanceByTheDeltaAndNeverDecrease) {
  Metrics metrics;
  metrics.update(snapshot(peer("Established", 1, 4)));
  metrics.update(snapshot(peer("Established", 1, 7)));
  EXPECT_THAT(metrics.serialize(), HasSubstr("vipd_updates_sent_total{peer=\"192.0.2.1\"} 7\n"));

  // A lower value (not expected within a process) adds nothing...
  metrics.update(snapshot(peer("Established", 1, 3)));
  EXPECT_THAT(metrics.serialize(), HasSubstr("vipd_updates_sent_total{peer=\"192.0.2.1\"} 7\n"));
  // ...and becomes the baseline for later growth.
  metrics.update(snapshot(peer("Established", 1, 5)));
  EXPECT_THAT(metrics.serialize(), HasSubstr("vipd_updates_sent_total{peer=\"192.0.2.1\"} 9\n"));
}

TEST(Metrics, FlapsCountEstablishedToDownTransitions) {
  Metrics metrics;
  metrics.update(snapshot(peer("Active", 0, 0)));
  EXPECT_THAT(metrics.serialize(), HasSubstr("vipd_peer_flaps_total{peer=\"192.0.2.1\"} 0\n"));
  metrics.update(snapshot(peer("Established", 1, 1)));
  EXPECT_THAT(metrics.serialize(), HasSubstr("vipd_peer_flaps_total{peer=\"192.0.2.1\"} 0\n"));
  metrics.update(snapshot(peer("Idle", 1, 1)));
  auto text = metrics.serialize();
  EXPECT_THAT(text, HasSubstr("vipd_peer_flaps_total{peer=\"192.0.2.1\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("vipd_peer_established{peer=\"192.0.2.1\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("vipd_peer_state{peer=\"192.0.2.1\",state=\"Idle\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("vipd_peer_state{peer=\"192.0.2.1\",state=\"Established\"} 0\n"));
  metrics.update(snapshot(peer("Established", 2, 2)));
  EXPECT_THAT(metrics.serialize(), HasSubstr("vipd_peer_flaps_total{peer=\"192.0.2.1\"} 1\n"));
  metrics.update(snapshot(peer("Connect", 2, 2)));
  EXPECT_THAT(metrics.serialize(), HasSubstr("vipd_peer_flaps_total{peer=\"192.0.2.1\"} 2\n"));
}

TEST(Metrics, NotificationsByCode) {
  Metrics metrics;
  auto p = peer("Idle", 0, 0);
  p["notificationsReceivedByCode"] = {{"6/2", 1}, {"4/0", 2}};
  metrics.update(snapshot(p));
  p["notificationsReceivedByCode"] = {{"6/2", 3}, {"4/0", 2}};
  metrics.update(snapshot(p));
  auto text = metrics.serialize();
  EXPECT_THAT(text,
              HasSubstr("vipd_notifications_received_total{code=\"6/2\",peer=\"192.0.2.1\"} 3\n"));
  EXPECT_THAT(text,
              HasSubstr("vipd_notifications_received_total{code=\"4/0\",peer=\"192.0.2.1\"} 2\n"));
}

json bfdStatus(std::string state, int toDown, int toUp, int sent) {
  return {{"enabled", true},
          {"state", state},
          {"remoteState", state},
          {"detectionTimeMs", 150.0},
          {"txIntervalMs", 50.0},
          {"packetsSent", sent},
          {"packetsReceived", 7},
          {"packetsDropped", 1},
          {"malformedReceived", 2},
          {"ttlDropped", 3},
          {"transitionsTo", {{"AdminDown", 0}, {"Down", toDown}, {"Init", 0}, {"Up", toUp}}}};
}

TEST(Metrics, BfdStateDetectionTimeTransitionsAndPackets) {
  Metrics metrics;
  auto p = peer("Established", 1, 1);
  p["bfd"] = bfdStatus("Up", 1, 1, 10);
  metrics.update(snapshot(p));
  auto text = metrics.serialize();
  EXPECT_THAT(text, HasSubstr("vipd_bfd_state{peer=\"192.0.2.1\",state=\"Up\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("vipd_bfd_state{peer=\"192.0.2.1\",state=\"Down\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("vipd_bfd_detection_time_seconds{peer=\"192.0.2.1\"} 0.15\n"));
  EXPECT_THAT(text, HasSubstr("vipd_bfd_tx_interval_seconds{peer=\"192.0.2.1\"} 0.05\n"));
  EXPECT_THAT(text,
              HasSubstr("vipd_bfd_transitions_total{peer=\"192.0.2.1\",to=\"Up\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("vipd_bfd_packets_total{direction=\"sent\",peer=\"192.0.2.1\"} "
                              "10\n"));
  // dropped = session-level drops + malformed + wrong TTL.
  EXPECT_THAT(text, HasSubstr("vipd_bfd_packets_total{direction=\"dropped\",peer=\"192.0.2.1\"} "
                              "6\n"));

  p["bfd"] = bfdStatus("Down", 2, 1, 12);
  metrics.update(snapshot(p));
  text = metrics.serialize();
  EXPECT_THAT(text, HasSubstr("vipd_bfd_state{peer=\"192.0.2.1\",state=\"Up\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("vipd_bfd_state{peer=\"192.0.2.1\",state=\"Down\"} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("vipd_bfd_transitions_total{peer=\"192.0.2.1\",to=\"Down\"} 2\n"));
}

TEST(Metrics, NoBfdSeriesForAPeerWithoutBfd) {
  Metrics metrics;
  auto p = peer("Established", 1, 1);
  p["bfd"] = {{"enabled", false}};
  metrics.update(snapshot(p));
  EXPECT_THAT(metrics.serialize(), Not(HasSubstr("vipd_bfd_state{")));
}

TEST(Metrics, WithdrawnCarriesNoFreeTextLabel) {
  Metrics metrics;
  auto status = snapshot(peer("Established", 1, 1));
  status["withdrawn"] = {
      {"active", true}, {"reason", "etcd \"upgrade\""}, {"since", "2024-01-02T03:04:05Z"}};
  metrics.update(status);
  auto text = metrics.serialize();
  EXPECT_THAT(text, HasSubstr("vipd_withdrawn 1\n"));
  EXPECT_THAT(text, HasSubstr("vipd_withdrawn_since_timestamp_seconds 1704164645\n"));
  EXPECT_THAT(text, Not(HasSubstr("upgrade")));

  // A hand-written "since" vipd cannot read: no timestamp rather than 1970.
  status["withdrawn"] = {{"active", true}, {"reason", "x"}, {"since", "yesterday"}};
  metrics.update(status);
  text = metrics.serialize();
  EXPECT_THAT(text, HasSubstr("vipd_withdrawn 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("vipd_withdrawn_since_timestamp_seconds ")));

  status["withdrawn"] = {{"active", false}};
  metrics.update(status);
  text = metrics.serialize();
  EXPECT_THAT(text, HasSubstr("vipd_withdrawn 0\n"));
  EXPECT_THAT(text, HasSubstr("vipd_withdrawn_since_timestamp_seconds 0\n"));
}

TEST(Metrics, NotificationCodesFromAPeerAreBounded) {
  Metrics metrics;
  auto p = peer("Idle", 0, 0);
  p["notificationsReceivedByCode"] = {{"6/2", 1}, {"2/15", 1}, {"9/1", 2}, {"6/200", 3}};
  metrics.update(snapshot(p));
  p["notificationsReceivedByCode"] = {{"6/2", 1}, {"2/15", 1}, {"9/1", 2}, {"6/200", 4},
                                      {"255/255", 1}};
  metrics.update(snapshot(p));
  auto text = metrics.serialize();
  EXPECT_THAT(text, HasSubstr("vipd_notifications_received_total{code=\"2/15\","
                              "peer=\"192.0.2.1\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("vipd_notifications_received_total{code=\"other\","
                              "peer=\"192.0.2.1\"} 7\n"));
  EXPECT_THAT(text, Not(HasSubstr("9/1")));
  EXPECT_THAT(text, Not(HasSubstr("6/200")));
}

TEST(Metrics, RoleIsOneSeriesPerRole) {
  Metrics metrics;
  auto status = snapshot(peer("Established", 1, 1));
  status["role"] = "standby";
  status["handoff"] = {{"refused", true}, {"lastRefusal", "router ID 192.0.2.1 differs"}};
  metrics.update(status);
  auto text = metrics.serialize();
  EXPECT_THAT(text, HasSubstr("vipd_role{role=\"standby\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("vipd_role{role=\"active\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("vipd_role{role=\"contending\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("vipd_handoff_refused 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("differs")));
  status["role"] = "active";
  status["handoff"] = {{"refused", false}, {"lastRefusal", ""}};
  metrics.update(status);
  text = metrics.serialize();
  EXPECT_THAT(text, HasSubstr("vipd_role{role=\"active\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("vipd_role{role=\"standby\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("vipd_handoff_refused 0\n"));
}

TEST(Metrics, ConfigReloads) {
  Metrics metrics;
  auto status = snapshot(peer("Established", 1, 1));
  status["config"] = {{"loadedAt", "2024-01-02T03:04:05Z"},
                      {"lastReloadSuccessful", true},
                      {"reloads", 0},
                      {"reloadFailures", 0}};
  metrics.update(status);
  auto text = metrics.serialize();
  EXPECT_THAT(text, HasSubstr("vipd_config_last_reload_successful 1\n"));
  EXPECT_THAT(text, HasSubstr("vipd_config_last_reload_success_timestamp_seconds 1704164645\n"));
  EXPECT_THAT(text, HasSubstr("vipd_config_reloads_total{result=\"success\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("vipd_config_reloads_total{result=\"failure\"} 0\n"));
  status["config"]["lastReloadSuccessful"] = false;
  status["config"]["reloadFailures"] = 2;
  status["config"]["lastReloadError"] = "vipd.yaml:3:1: bad";
  metrics.update(status);
  text = metrics.serialize();
  EXPECT_THAT(text, HasSubstr("vipd_config_last_reload_successful 0\n"));
  EXPECT_THAT(text, HasSubstr("vipd_config_reloads_total{result=\"failure\"} 2\n"));
  EXPECT_THAT(text, Not(HasSubstr("bad")));
  // Issue 29: keys the file changed that wait for a restart, counted (named in vipctl status).
  EXPECT_THAT(text, Not(HasSubstr("vipd_config_pending_restart ")));
  status["config"]["pendingRestart"] = nlohmann::json::array(
      {{{"key", "routerId"}, {"running", "192.0.2.11"}, {"file", "192.0.2.99"},
        {"reason", "needs a restart"}},
       {{"key", "metrics.port"}, {"running", "9472"}, {"file", "9999"},
        {"reason", "needs a restart"}}});
  metrics.update(status);
  text = metrics.serialize();
  EXPECT_THAT(text, HasSubstr("vipd_config_pending_restart 2\n"));
  EXPECT_THAT(text, Not(HasSubstr("192.0.2.99")));
  status["config"]["pendingRestart"] = nlohmann::json::array();
  metrics.update(status);
  EXPECT_THAT(metrics.serialize(), HasSubstr("vipd_config_pending_restart 0\n"));
}

// vipd doctor's last run in the daemon (issue 30): its counts by result, no series before a run
// has ended, and no check's text in a label.
TEST(Metrics, DoctorChecksByResult) {
  Metrics metrics;
  auto status = snapshot(peer("Established", 1, 1));
  status["doctor"] = {{"running", true}};
  metrics.update(status);
  EXPECT_THAT(metrics.serialize(), Not(HasSubstr("vipd_doctor_checks{")));
  status["doctor"] = {
      {"running", false},
      {"result", "fail"},
      {"counts", {{"ok", 11}, {"warn", 1}, {"fail", 1}}},
      {"checks", json::array({{{"name", "rp-filter"}, {"result", "warn"}, {"detail", "strict"}}})}};
  metrics.update(status);
  auto text = metrics.serialize();
  EXPECT_THAT(text, HasSubstr("vipd_doctor_checks{result=\"ok\"} 11\n"));
  EXPECT_THAT(text, HasSubstr("vipd_doctor_checks{result=\"warn\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("vipd_doctor_checks{result=\"fail\"} 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("rp-filter")));
  status["doctor"]["counts"] = {{"ok", 13}, {"warn", 0}, {"fail", 0}};
  metrics.update(status);
  EXPECT_THAT(metrics.serialize(), HasSubstr("vipd_doctor_checks{result=\"fail\"} 0\n"));
}

// Prometheus' naming rules, checked on every family a full snapshot creates: counters and only
// counters end in _total, no unit abbreviations (ms, sec), timestamps and durations in seconds.
TEST(Metrics, NamesFollowPrometheusConventions) {
  Metrics metrics;
  auto status = snapshot(peer("Established", 1, 1));
  status["peers"][0]["bfd"] = bfdStatus("Up", 1, 1, 10);
  status["role"] = "active";
  status["handoff"] = {{"refused", false}, {"tookOver", 0}};
  status["listeners"] = {{"metrics", {{"open", 1}, {"limit", 32}, {"limitHits", 0}}}};
  status["config"] = {{"loadedAt", "2024-01-02T03:04:05Z"}, {"lastReloadSuccessful", true},
                      {"reloads", 0}, {"reloadFailures", 0}};
  status["doctor"] = {{"counts", {{"ok", 13}, {"warn", 0}, {"fail", 0}}}};
  metrics.update(status);
  std::istringstream lines(metrics.serialize());
  size_t families = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("# TYPE ", 0) != 0) {
      continue;
    }
    ++families;
    std::istringstream words(line.substr(7));
    std::string name;
    std::string type;
    words >> name >> type;
    EXPECT_EQ(name.rfind("vipd_", 0), 0u) << name;
    const bool total = name.size() > 6 && name.substr(name.size() - 6) == "_total";
    EXPECT_EQ(total, type == "counter") << name << " is a " << type;
    std::istringstream parts(name);
    for (std::string part; std::getline(parts, part, '_');) {
      for (const char* abbreviation : {"ms", "millis", "milliseconds", "sec", "secs", "percent"}) {
        EXPECT_NE(part, abbreviation) << name << ": use base units (seconds, ratios)";
      }
    }
  }
  EXPECT_GE(families, 40u);
}

TEST(Metrics, TheCurrentStatusShapeWithoutNewerFields) {
  // What Speaker::status() emits before health, withdrawn, mode and ready exist.
  Metrics metrics;
  json p = peer("OpenSent", 0, 0);
  for (const char* key : {"notificationsSentByCode", "notificationsReceivedByCode",
                          "notEstablishedTooLong", "stateSeconds"}) {
    p.erase(key);
  }
  json status = {{"version", "0.1.0"}, {"peers", json::array({p})}, {"vips", json::array()}};
  metrics.update(status);
  auto text = metrics.serialize();
  EXPECT_THAT(text, HasSubstr("vipd_peer_state{peer=\"192.0.2.1\",state=\"OpenSent\"} 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("vipd_health_healthy ")));
  EXPECT_THAT(text, Not(HasSubstr("vipd_ready ")));
  EXPECT_THAT(text, Not(HasSubstr("vipd_peer_not_established_too_long{")));
}

TEST(Metrics, MalformedInputIsIgnoredNotFatal) {
  Metrics metrics;
  metrics.update(json());
  metrics.update(json::array({1, 2}));
  metrics.update({{"peers", "nope"}, {"vips", 3}, {"health", json::array()}, {"withdrawn", 1}});
  metrics.update({{"peers", json::array({1, json::object(), {{"address", 7}}})}});
  metrics.update({{"peers", json::array({{{"address", "192.0.2.1"},
                                          {"state", 3},
                                          {"updatesSent", "many"},
                                          {"notificationsSentByCode", {{"6/2", "x"}}}}})}});
  metrics.update({{"version", nullptr}, {"ready", "yes"}});
  const auto text = metrics.serialize();
  EXPECT_THAT(text, Not(HasSubstr("192.0.2.1")));
  EXPECT_THAT(text, Not(HasSubstr("vipd_ready ")));
}

TEST(Metrics, UnknownStateSetsAllStatesToZero) {
  Metrics metrics;
  metrics.update(snapshot(peer("Established", 1, 1)));
  metrics.update(snapshot(peer("Bogus", 1, 1)));
  auto text = metrics.serialize();
  EXPECT_THAT(text, HasSubstr("vipd_peer_state{peer=\"192.0.2.1\",state=\"Established\"} 0\n"));
  EXPECT_THAT(text, Not(HasSubstr("state=\"Bogus\"")));
}

}  // namespace
}  // namespace vipd::daemon
