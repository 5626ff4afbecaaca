#include "daemon/http/metrics.h"

#include <fmt/format.h>

#include <array>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>
#include <string_view>

#include "daemon/base/json_fields.h"

namespace vipd::daemon {
namespace {

using nlohmann::json;
using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Labels;

// The RFC 4271 section 8.2.2 states, spelled as bgp::sessionStateName spells them.
constexpr std::array<std::string_view, 6> kSessionStates = {
    "Idle", "Connect", "Active", "OpenSent", "OpenConfirm", "Established"};

// Field readers: absent fields and fields of another type read as nullopt, never throw.
using json_fields::boolean;
using json_fields::member;
using json_fields::number;
using json_fields::string;

double flag(bool value) { return value ? 1.0 : 0.0; }

// prometheus-cpp's builders, shortened for the fifty families below.
Family<Gauge>& gauges(prometheus::Registry& registry, const std::string& name,
                      const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(registry);
}

Family<Counter>& counters(prometheus::Registry& registry, const std::string& name,
                          const std::string& help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(registry);
}

// "2024-05-01T12:00:00Z" (how vipd writes times in its status and state files) as Unix seconds;
// nullopt for anything else (withdrawn.json's "since" may have been written by hand).
std::optional<double> unixSeconds(const std::string& utc) {
  std::tm tm{};
  char zone = 0;
  int consumed = 0;
  if (std::sscanf(utc.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &zone, &consumed) != 7 ||
      zone != 'Z' || static_cast<size_t>(consumed) != utc.size() || tm.tm_mon < 1 ||
      tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
      tm.tm_sec > 60) {
    return std::nullopt;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(::timegm(&tm));
}

// The `code` label of a NOTIFICATION counter: "code/subcode" as RFC 4271 section 4.5 numbers
// them when the code is one of the seven defined (1-7) and the subcode below 16, "other" for
// anything else a peer may send, so a peer cannot create more than 113 series per direction.
std::string notificationCodeLabel(const std::string& key) {
  unsigned code = 0;
  unsigned subcode = 0;
  int consumed = 0;
  if (std::sscanf(key.c_str(), "%3u/%3u%n", &code, &subcode, &consumed) == 2 &&
      static_cast<size_t>(consumed) == key.size() && code >= 1 && code <= 7 && subcode <= 15) {
    return fmt::format("{}/{}", code, subcode);
  }
  return "other";
}

}  // namespace

Metrics::Metrics()
    : registry_(std::make_unique<prometheus::Registry>()),
      // vipd_build_info{version} 1. Reads: version.
      buildInfo_{&gauges(*registry_, "vipd_build_info",
                         "Always 1; the version label is the running vipd's version.")},
      // vipd_mode{mode} 1. Reads: mode. One series: a new mode replaces the old one.
      mode_{&gauges(*registry_, "vipd_mode",
                    "Always 1; the mode label is vipd's current operating mode.")},
      // vipd_withdrawn: 1 while the operator has withdrawn the node with vipctl (the reason is
      // free text: it is in `vipctl status`, not in a label), 0 otherwise. Reads:
      // withdrawn.active.
      withdrawn_(gauges(*registry_, "vipd_withdrawn",
                        "1 while the node is withdrawn by the operator (vipctl withdraw), 0 "
                        "otherwise; vipctl status gives the reason.")),
      // vipd_withdrawn_since_timestamp_seconds: when the withdraw began (Unix time), 0 while not
      // withdrawn. Reads: withdrawn.since (absent when it is not vipd's UTC format).
      withdrawnSince_(gauges(*registry_, "vipd_withdrawn_since_timestamp_seconds",
                             "Unix time the operator's withdraw began; 0 while not withdrawn.")),
      // vipd_ready: the /readyz verdict. Reads: ready.
      ready_(gauges(*registry_, "vipd_ready",
                    "1 when vipd reports ready (/readyz answers 200), 0 otherwise.")),
      // peers[], peers[].bfd, vips[] and health: documented in their factories below.
      peer_(peerFamilies(*registry_)),
      bfd_(bfdFamilies(*registry_)),
      vip_(vipFamilies(*registry_)),
      health_(healthFamilies(*registry_)),
      // vipd_role{role}: one series per role (active, standby, contending), 1 for the current
      // one. Reads: role.
      role_(gauges(*registry_, "vipd_role",
                   "1 for this instance's role, 0 for the others: active (speaks BGP), standby "
                   "(waits to take the node back) or contending (waits to take over).")),
      // vipd_handoff_refused: 1 while the last takeover attempt was refused, 0 otherwise (the
      // refusal, free text, is handoff.lastRefusal in the status). Reads: handoff.refused.
      handoffRefused_(gauges(*registry_, "vipd_handoff_refused",
                             "1 while this instance's takeover is refused (vipctl status says "
                             "why), 0 otherwise.")),
      // vipd_handoff_holder_silent: 1 while this waiting instance sees no BGP session of the
      // instance that holds the speaker lock for longer than the hold time (issue 29: frozen or
      // stuck; the node announces nothing). Reads: handoff.holderSilent.
      handoffHolderSilent_(
          gauges(*registry_, "vipd_handoff_holder_silent",
                 "1 while the instance holding the speaker lock has had no BGP session "
                 "for longer than the hold time (frozen or stuck), 0 otherwise.")),
      // vipd_handoffs_total{event}: took_over, yielded, took_back, refused. Reads:
      // handoff.tookOver, handoff.yielded, handoff.tookBack, handoff.refusals.
      handoffs_(counters(*registry_, "vipd_handoffs_total",
                         "Handoffs between this node's vipd instances, by event.")),
      // Per listener (listener = control, metrics, bgp), from listeners.<name>:
      // vipd_listener_connections (open), vipd_listener_connection_limit (limit; 0 = none),
      // vipd_listener_closed_total{reason} (limit: closed because the cap was reached (limitHits);
      // idle: sent no request in time (idleTimeouts); refused: not allowed (refused)),
      // vipd_listener_accept_failures_total (acceptFailures).
      listenerOpen_(gauges(*registry_, "vipd_listener_connections",
                           "Clients connected to each of vipd's listeners.")),
      listenerLimit_(gauges(*registry_, "vipd_listener_connection_limit",
                            "Clients each listener holds at most (0: no cap).")),
      listenerClosed_(counters(*registry_, "vipd_listener_closed_total",
                               "Clients a listener closed or turned away, by reason: limit (the "
                               "cap was reached), idle (no request in time), refused (not "
                               "allowed).")),
      listenerAcceptFailures_(counters(*registry_, "vipd_listener_accept_failures_total",
                                       "accept() failures on each listener (out of file "
                                       "descriptors, typically).")),
      // vipd_config_last_reload_successful: 0 after a reload (SIGHUP or a change to the files)
      // whose file did not load or validate, or with a change that could not be applied (vipd
      // runs on with what it ran before), 1 at start and after a good one, changes waiting for
      // a restart included. Reads: config.lastReloadSuccessful.
      configLastReloadSuccessful_(
          gauges(*registry_, "vipd_config_last_reload_successful",
                 "1 unless the last reload failed: the file did not load, or a "
                 "change could not be applied (what runs is then unchanged).")),
      // vipd_config_last_reload_success_timestamp_seconds: when the config that runs was loaded
      // (start, or the last reload that applied something). Reads: config.loadedAt.
      configLoadedAt_(gauges(*registry_, "vipd_config_last_reload_success_timestamp_seconds",
                             "Unix time the config that runs was loaded (start, or the last "
                             "reload that applied a change).")),
      // vipd_config_reloads_total{result}: reloads (SIGHUP or a change to the files), result
      // success or failure. Reads: config.reloads, config.reloadFailures.
      configReloads_(counters(*registry_, "vipd_config_reloads_total",
                              "Config reloads (SIGHUP or a change to the files), by "
                              "result: success, failure.")),
      // vipd_config_pending_restart: keys whose new value in the file waits for a restart (or
      // could not be applied): what runs differs from the file. Reads: config.pendingRestart.
      configPendingRestart_(
          gauges(*registry_, "vipd_config_pending_restart",
                 "Config keys whose value in the file the running vipd does not run "
                 "(a restart applies them; vipctl status lists them).")),
      // vipd_doctor_checks{result}: the checks of vipd doctor's last run in the daemon (at start,
      // after a reload) by result: ok, warn, fail. Reads: doctor.counts.<result>.
      doctorChecks_(gauges(*registry_, "vipd_doctor_checks",
                           "vipd doctor's checks in its last run (at start, after a reload), by "
                           "result: ok, warn, fail (vipctl status names them).")),
      // returnPath and fabric: documented in their factories below.
      returnPath_(returnPathFamilies(*registry_)),
      fabric_(fabricFamilies(*registry_)),
      kube_(kubeFamilies(*registry_)) {}

// The BGP session of each peer, from peers[]: series labelled with the peer's address, created
// when the peer is first seen.
Metrics::PeerFamilies Metrics::peerFamilies(prometheus::Registry& registry) {
  return {
      // vipd_peer_state{peer,state}: one series per RFC 4271 state, 1 for the current one.
      // Reads: peers[].address, peers[].state. An unknown state name sets all six to 0.
      .state = gauges(registry, "vipd_peer_state",
                      "1 for the BGP session's current RFC 4271 state, 0 for the other five."),
      // vipd_peer_established{peer}. Reads: peers[].state.
      .established = gauges(registry, "vipd_peer_established",
                            "1 while the BGP session is Established, 0 otherwise."),
      // vipd_peer_state_seconds{peer}. Reads: peers[].stateSeconds.
      .stateSeconds = gauges(registry, "vipd_peer_state_seconds",
                             "Seconds the BGP session has been in its current state."),
      // vipd_peer_not_established_too_long{peer}. Reads: peers[].notEstablishedTooLong.
      .notEstablishedTooLong = gauges(
          registry, "vipd_peer_not_established_too_long",
          "1 when the BGP session has been out of Established for longer than vipd tolerates."),
      // vipd_peer_flaps_total{peer}: Established -> down transitions, computed as
      // establishedTransitions - (1 if Established now else 0). Reads: peers[].state,
      // peers[].establishedTransitions.
      .flaps =
          counters(registry, "vipd_peer_flaps_total", "Times the BGP session left Established."),
      // vipd_updates_sent_total{peer}. Reads: peers[].updatesSent.
      .updatesSent =
          counters(registry, "vipd_updates_sent_total", "BGP UPDATE messages sent to the peer."),
      // vipd_updates_received_total{peer}. Reads: peers[].updatesReceived.
      .updatesReceived = counters(registry, "vipd_updates_received_total",
                                  "BGP UPDATE messages received from the peer."),
      // vipd_prefixes_received_total{peer}. Reads: peers[].prefixesReceived. vipd installs no
      // routes; a peer that sends prefixes is usually misconfigured (missing export filter).
      .prefixesReceived = counters(registry, "vipd_prefixes_received_total",
                                   "NLRI prefixes received from the peer (vipd ignores them)."),
      // vipd_withdrawals_received_total{peer}. Reads: peers[].withdrawalsReceived.
      .withdrawalsReceived = counters(registry, "vipd_withdrawals_received_total",
                                      "Withdrawn prefixes received from the peer."),
      // vipd_update_errors_total{peer,handling}: malformed UPDATEs handled without resetting the
      // session (RFC 7606), by handling: "treat-as-withdraw" (peers[].treatAsWithdraw) or
      // "attribute-discard" (peers[].attributeDiscard).
      .updateErrors = counters(registry, "vipd_update_errors_total",
                               "Malformed UPDATE messages handled per RFC 7606 without a session "
                               "reset, by handling."),
      // vipd_end_of_rib_received_total{peer}. Reads: peers[].endOfRibReceived.
      .endOfRibReceived = counters(registry, "vipd_end_of_rib_received_total",
                                   "End-of-RIB markers (RFC 4724) received from the peer."),
      // vipd_route_refresh_received_total{peer}. Reads: peers[].routeRefreshReceived.
      .routeRefreshReceived = counters(registry, "vipd_route_refresh_received_total",
                                       "ROUTE-REFRESH messages (RFC 2918) received from the peer."),
      // vipd_notifications_sent_total{peer,code}: code is "code/subcode" as in RFC 4271 section
      // 4.5, e.g. "6/2". Reads: peers[].notificationsSentByCode (an object code -> count).
      .notificationsSent = counters(registry, "vipd_notifications_sent_total",
                                    "BGP NOTIFICATION messages sent to the peer, by code/subcode."),
      // vipd_notifications_received_total{peer,code}. Reads: peers[].notificationsReceivedByCode.
      // The codes come from the peer: anything but code 1-7 with subcode 0-15 is code="other"
      // (at most 113 series per peer).
      .notificationsReceived = counters(registry, "vipd_notifications_received_total",
                                        "BGP NOTIFICATION messages received from the peer, by "
                                        "code/subcode."),
      // vipd_prefixes_advertised{peer}. Reads: peers[].prefixesAdvertised.
      .prefixesAdvertised = gauges(registry, "vipd_prefixes_advertised",
                                   "Prefixes (VIPs) currently advertised to the peer."),
  };
}

// BFD, from peers[].bfd, for peers with bfd.enabled only (no series for the others).
Metrics::BfdFamilies Metrics::bfdFamilies(prometheus::Registry& registry) {
  return {
      // vipd_bfd_state{peer,state}: one series per RFC 5880 state, 1 for the current one.
      // Reads: peers[].bfd.enabled, peers[].bfd.state.
      .state = gauges(registry, "vipd_bfd_state",
                      "BFD session state towards the peer: 1 for the current state."),
      // vipd_bfd_detection_time_seconds{peer}: the detection time this end applies (RFC 5880
      // section 6.8.4). Reads: peers[].bfd.detectionTimeMs.
      .detectionTime = gauges(registry, "vipd_bfd_detection_time_seconds",
                              "BFD detection time: the peer is declared down after this long "
                              "without a packet."),
      // vipd_bfd_tx_interval_seconds{peer}: the negotiated transmit interval before jitter.
      // Reads: peers[].bfd.txIntervalMs.
      .txInterval = gauges(registry, "vipd_bfd_tx_interval_seconds",
                           "Negotiated BFD transmit interval (before jitter)."),
      // vipd_bfd_transitions_total{peer,to}: state changes by new state (AdminDown, Down, Init,
      // Up). Reads: peers[].bfd.transitionsTo.
      .transitions = counters(registry, "vipd_bfd_transitions_total",
                              "BFD session state changes, by the state entered."),
      // vipd_bfd_packets_total{peer,direction}: sent, received (accepted by the session) and
      // dropped (failed a check: wrong discriminator, TTL, malformed). Reads:
      // peers[].bfd.packetsSent, packetsReceived, packetsDropped + malformedReceived +
      // ttlDropped.
      .packets = counters(registry, "vipd_bfd_packets_total",
                          "BFD control packets, by direction (sent, received, dropped)."),
  };
}

// Each VIP, from vips[]: series labelled with the VIP, created when it is first seen.
Metrics::VipFamilies Metrics::vipFamilies(prometheus::Registry& registry) {
  return {
      // vipd_vip_bound{vip,interface}. Reads: vips[].address, vips[].interface, vips[].bound.
      .bound = gauges(registry, "vipd_vip_bound",
                      "1 while the VIP address is present on its interface, 0 otherwise."),
      // vipd_vip_owned_by_vipd{vip}. Reads: vips[].ownedByVipd.
      .owned = gauges(registry, "vipd_vip_owned_by_vipd",
                      "1 when vipd added the VIP address (and will remove it), 0 when it found "
                      "it already present."),
      // vipd_vip_announced{vip}. Reads: vips[].announced.
      .announced = gauges(registry, "vipd_vip_announced",
                          "1 while the VIP is advertised to at least one peer, 0 otherwise."),
      // vipd_vip_announced_peers{vip}. Reads: vips[].announcedToPeers.
      .announcedPeers = gauges(registry, "vipd_vip_announced_peers",
                               "Number of peers the VIP is currently advertised to."),
      // vipd_vip_lost_total{vip}: someone else removed the address and vipd put it back.
      // Reads: vips[].lostCount.
      .lost = counters(registry, "vipd_vip_lost_total",
                       "Times the VIP address disappeared from its interface while vipd held "
                       "it."),
  };
}

// The health gate, from health.
Metrics::HealthFamilies Metrics::healthFamilies(prometheus::Registry& registry) {
  return {
      // vipd_health_healthy. Reads: health.healthy. Absent when no health gate is configured.
      .healthy = gauges(registry, "vipd_health_healthy",
                        "1 while the local control-plane health check passes, 0 otherwise."),
      // vipd_health_consecutive_successes. Reads: health.consecutiveSuccesses.
      .consecutiveSuccesses =
          gauges(registry, "vipd_health_consecutive_successes", "Health checks passed in a row."),
      // vipd_health_consecutive_failures. Reads: health.consecutiveFailures.
      .consecutiveFailures =
          gauges(registry, "vipd_health_consecutive_failures", "Health checks failed in a row."),
      // vipd_health_check_latency_seconds: a gauge of the most recent check, not a histogram:
      // metrics only see snapshots, not every check. Reads: health.lastLatencyMs.
      .latency = gauges(registry, "vipd_health_check_latency_seconds",
                        "Duration of the most recent health check, in seconds."),
      // vipd_health_checks_total. Reads: health.checks.
      .checks = counters(registry, "vipd_health_checks_total", "Health checks run."),
      // vipd_health_check_failures_total. Reads: health.failures.
      .failures =
          counters(registry, "vipd_health_check_failures_total", "Health checks that failed."),
      // vipd_health_check_hard_failures_total: of those, the ones that say the apiserver is
      // gone (refused, reset, TLS failure, not an apiserver). Reads: health.hardFailures.
      .hardFailures = counters(registry, "vipd_health_check_hard_failures_total",
                               "Health checks that failed with hard evidence (connection "
                               "refused or reset, TLS failure, an answer not from an "
                               "apiserver)."),
      // vipd_health_connect_resends_total: connects that went unanswered and were raced by a
      // fresh one (a lost SYN or SYN-ACK on the way to the apiserver). Reads:
      // health.connectResends.
      .connectResends =
          counters(registry, "vipd_health_connect_resends_total",
                   "Health check connects that went unanswered for 200 ms and were raced by a new "
                   "connect (a SYN or SYN-ACK lost on the way to the apiserver)."),
      // vipd_health_held_connection: 1 while the last successful check's connection is held
      // open, so its close starts a check at once. Reads: health.heldConnection.
      .heldConnection = gauges(registry, "vipd_health_held_connection",
                               "1 while the health check holds its keep-alive connection to "
                               "the apiserver open, 0 otherwise."),
      // vipd_health_degraded: 1 while health.onFailure is degrade and the check fails, so the
      // node announces the worse path. Reads: health.degraded.
      .degraded = gauges(registry, "vipd_health_degraded",
                         "1 while the node announces a degraded path (health.onFailure degrade "
                         "and the check failing), 0 otherwise."),
      // vipd_health_vips_unbound: 1 while the VIPs are kept off the node because the check
      // fails (health.unbindWhenUnhealthy). Reads: health.vipsUnbound.
      .vipsUnbound = gauges(registry, "vipd_health_vips_unbound",
                            "1 while the VIPs are unbound because the health check fails "
                            "(health.unbindWhenUnhealthy), 0 otherwise."),
  };
}

// The return-path check (issue 19), from returnPath; absent in mode off.
Metrics::ReturnPathFamilies Metrics::returnPathFamilies(prometheus::Registry& registry) {
  return {
      // vipd_return_path_available: 1 while the check runs (0: no CAP_NET_RAW, say; the status
      // says why). Reads: returnPath.available.
      .available = gauges(registry, "vipd_return_path_available",
                          "1 while the return-path check can run, 0 when it cannot "
                          "(vipctl status says why)."),
      // vipd_return_path_state{vip,state}: one series per state (unverified, passing, broken,
      // retrying), 1 for the VIP's current one. Reads: returnPath.vips.<vip>.state.
      .state = gauges(registry, "vipd_return_path_state",
                      "1 for each VIP's return-path state: unverified, passing, broken "
                      "(its packets get no answer; withdrawn in enforce mode) or "
                      "retrying."),
      // vipd_return_path_probes_total{source}: echoes sent from the node's address (node) and
      // from the VIPs (vip). Reads: returnPath.counters.nodeProbes, vipProbes.
      .echoes = counters(registry, "vipd_return_path_probes_total",
                         "Return-path echoes sent, by source: node, vip."),
      // vipd_return_path_answers_total{source,via}: of those, answered; via direct (this node
      // got the answer) or relay (another node got it and sent it back). Reads:
      // returnPath.counters.nodeAnswered, vipAnswered, vipAnsweredRelayed.
      .answers = counters(registry, "vipd_return_path_answers_total",
                          "Return-path echoes answered, by source (node, vip) and via "
                          "(direct, relay)."),
      // vipd_return_path_relays_total{result}: answers to other nodes' echoes this node received
      // and sent back (sent) or did not relay (dropped, for any reason). Reads:
      // returnPath.counters.relaysSent, relaysDropped.
      .relays = counters(registry, "vipd_return_path_relays_total",
                         "Answers to other nodes' return-path probes relayed to them, by "
                         "result: sent, dropped."),
      // vipd_return_path_relay_drops_total{reason}: echo replies not relayed (issue 28), by
      // reason: source (not from a peer or target), destination (not to a VIP), relay_address
      // (not a node on a node network), relay_port, duplicate (nonce relayed already), budget
      // (the named sender's relay budget spent: a flood), malformed (vipd's echo magic in a
      // truncated or garbled packet). Reads: returnPath.counters.relaysDroppedByReason,
      // malformedReplies.
      .relayDrops = counters(registry, "vipd_return_path_relay_drops_total",
                             "Echo replies carrying vipd probe data that were not relayed, by "
                             "reason: source, destination, relay_address, relay_port, "
                             "duplicate, budget, malformed."),
      // vipd_return_path_witness_total{event}: witness queries (issue 28): query_sent (this
      // node asked whether answers still reach another), answer_received, query_answered
      // (another node asked this one), query_refused (not from a node network, or over the
      // rate). Reads: returnPath.counters.witness*.
      .witness = counters(registry, "vipd_return_path_witness_total",
                          "Return-path witness queries, by event: query_sent, "
                          "answer_received, query_answered, query_refused."),
      // vipd_return_path_silences_uncounted_total: rounds in which the VIP's echoes went
      // unanswered but nothing said this node alone loses them (the node that relayed its
      // answers froze or left), so the round was not counted against it. Reads:
      // returnPath.counters.silencesUncounted.
      .silences = counters(registry, "vipd_return_path_silences_uncounted_total",
                           "Rounds with unanswered VIP echoes not counted against this node: "
                           "no evidence that it alone loses them."),
  };
}

// The fabric's view (issue 28), from fabric; series per VIP, the VIP label as vipd_vip_bound
// writes it. And the withdraw guard's settings.
Metrics::FabricFamilies Metrics::fabricFamilies(prometheus::Registry& registry) {
  return {
      // vipd_fabric_view_available{vip}: 1 while an Established peer sends every path for the
      // VIP back (ADD-PATH), 0 when it is unavailable. Reads: fabric.vips.<vip>.available.
      .available = gauges(registry, "vipd_fabric_view_available",
                          "1 while the fabric's view of the VIP is available (a "
                          "peer sends every path back), 0 when it is not."),
      // vipd_fabric_announcers{vip}: the nodes the fabric holds a path from, this node included;
      // absent while the view is unavailable. Reads: fabric.vips.<vip>.count.
      .announcers = gauges(registry, "vipd_fabric_announcers",
                           "Nodes the fabric holds a path from for the VIP, this "
                           "node included (only with a fabric view)."),
      // vipd_fabric_held_by_never_zero{vip}: 1 while the never-zero rule keeps the VIP
      // announced, degraded, instead of withdrawing it. Reads: fabric.vips.<vip>.heldByNeverZero.
      .held = gauges(registry, "vipd_fabric_held_by_never_zero",
                     "1 while an automatic withdrawal of the VIP is held back "
                     "because no other node serves it (announced degraded)."),
      // vipd_fabric_duplicate_router_id: paths from another next hop that carry this node's
      // router ID as ORIGINATOR_ID (a cloned node). Reads: fabric.duplicateRouterId.
      .duplicateRouterId = gauges(
          registry, "vipd_fabric_duplicate_router_id",
          "Paths in the fabric from another node that carry this node's router ID."),
      // vipd_fabric_expected_announcers: guard.expectedAnnouncers, when set (the alert compares
      // vipd_fabric_announcers with it). Reads: fabric.guard.expectedAnnouncers.
      .expectedAnnouncers = gauges(
          registry, "vipd_fabric_expected_announcers",
          "How many nodes should announce each VIP (guard.expectedAnnouncers)."),
      // vipd_guard_min_announcers: guard.minAnnouncers, the other announcers vipctl withdraw
      // leaves at least. Reads: fabric.guard.minAnnouncers.
      .guardMinAnnouncers = gauges(
          registry, "vipd_guard_min_announcers",
          "Other announcers vipctl withdraw must leave (guard.minAnnouncers)."),
  };
}

void Metrics::update(const json& status) {
  if (!status.is_object()) {
    return;
  }
  if (auto version = string(status, "version")) {
    set(buildInfo_, {{"version", *version}}, 1);
  }
  if (auto mode = string(status, "mode")) {
    set(mode_, {{"mode", *mode}}, 1);
  }
  if (auto ready = boolean(status, "ready")) {
    ready_.Add({}).Set(flag(*ready));
  }
  if (const json* peers = member(status, "peers"); peers != nullptr && peers->is_array()) {
    for (const auto& peer : *peers) {
      updatePeer(peer);
    }
  }
  if (const json* vips = member(status, "vips"); vips != nullptr && vips->is_array()) {
    for (const auto& vip : *vips) {
      updateVip(vip);
    }
  }
  if (const json* health = member(status, "health"); health != nullptr) {
    updateHealth(*health);
  }
  if (const json* withdrawn = member(status, "withdrawn"); withdrawn != nullptr) {
    updateWithdrawn(*withdrawn);
  }
  if (auto role = string(status, "role")) {
    for (auto name : {"active", "standby", "contending"}) {
      role_.Add({{"role", name}}).Set(flag(*role == name));
    }
  }
  if (const json* handoff = member(status, "handoff"); handoff != nullptr) {
    updateHandoff(*handoff);
  }
  if (const json* listeners = member(status, "listeners");
      listeners != nullptr && listeners->is_object()) {
    for (const auto& [name, listener] : listeners->items()) {
      updateListener(name, listener);
    }
  }
  if (const json* config = member(status, "config"); config != nullptr) {
    updateConfigLoads(*config);
  }
  if (const json* returnPath = member(status, "returnPath"); returnPath != nullptr) {
    updateReturnPath(*returnPath);
  }
  if (const json* doctor = member(status, "doctor"); doctor != nullptr) {
    updateDoctor(*doctor);
  }
  if (const json* fabric = member(status, "fabric"); fabric != nullptr) {
    updateFabric(*fabric);
  }
  if (const json* kubernetes = member(status, "kubernetes"); kubernetes != nullptr) {
    updateKubernetes(*kubernetes);
  }
}

void Metrics::updateFabric(const json& fabric) {
  if (const json* vips = member(fabric, "vips"); vips != nullptr && vips->is_object()) {
    for (const auto& [vip, view] : vips->items()) {
      const Labels labels{{"vip", vip}};
      if (auto available = boolean(view, "available")) {
        fabric_.available.Add(labels).Set(flag(*available));
      }
      if (auto count = number(view, "count")) {
        fabric_.announcers.Add(labels).Set(static_cast<double>(*count));
      }
      if (auto held = boolean(view, "heldByNeverZero")) {
        fabric_.held.Add(labels).Set(flag(*held));
      }
    }
  }
  if (const json* duplicates = member(fabric, "duplicateRouterId");
      duplicates != nullptr && duplicates->is_array()) {
    fabric_.duplicateRouterId.Add({}).Set(static_cast<double>(duplicates->size()));
  }
  if (const json* guard = member(fabric, "guard"); guard != nullptr) {
    if (auto n = number(*guard, "minAnnouncers")) {
      fabric_.guardMinAnnouncers.Add({}).Set(static_cast<double>(*n));
    }
    if (auto n = number(*guard, "expectedAnnouncers")) {
      fabric_.expectedAnnouncers.Add({}).Set(static_cast<double>(*n));
    }
  }
}

void Metrics::updateReturnPath(const json& returnPath) {
  if (string(returnPath, "mode") == "off") {
    return;
  }
  if (auto available = boolean(returnPath, "available")) {
    returnPath_.available.Add({}).Set(flag(*available));
  }
  if (const json* vips = member(returnPath, "vips"); vips != nullptr && vips->is_object()) {
    for (const auto& [vip, check] : vips->items()) {
      if (auto state = string(check, "state")) {
        for (auto name : {"unverified", "passing", "broken", "retrying"}) {
          returnPath_.state.Add({{"vip", vip}, {"state", name}}).Set(flag(*state == name));
        }
      }
    }
  }
  const json* c = member(returnPath, "counters");
  if (c == nullptr) {
    return;
  }
  if (auto n = number(*c, "nodeProbes")) {
    advance(returnPath_.echoes, {{"source", "node"}}, *n);
  }
  if (auto n = number(*c, "vipProbes")) {
    advance(returnPath_.echoes, {{"source", "vip"}}, *n);
  }
  if (auto n = number(*c, "nodeAnswered")) {
    advance(returnPath_.answers, {{"source", "node"}, {"via", "direct"}}, *n);
  }
  auto vipAnswered = number(*c, "vipAnswered");
  auto relayed = number(*c, "vipAnsweredRelayed");
  if (vipAnswered && relayed) {
    advance(returnPath_.answers, {{"source", "vip"}, {"via", "direct"}}, *vipAnswered - *relayed);
    advance(returnPath_.answers, {{"source", "vip"}, {"via", "relay"}}, *relayed);
  }
  if (auto n = number(*c, "relaysSent")) {
    advance(returnPath_.relays, {{"result", "sent"}}, *n);
  }
  if (auto n = number(*c, "relaysDropped")) {
    advance(returnPath_.relays, {{"result", "dropped"}}, *n);
  }
  if (const json* reasons = member(*c, "relaysDroppedByReason");
      reasons != nullptr && reasons->is_object()) {
    for (const auto& [reason, count] : reasons->items()) {
      if (count.is_number_unsigned()) {
        advance(returnPath_.relayDrops, {{"reason", reason}}, count.get<uint64_t>());
      }
    }
  }
  if (auto n = number(*c, "witnessQueriesSent")) {
    advance(returnPath_.witness, {{"event", "query_sent"}}, *n);
  }
  if (auto n = number(*c, "witnessAnswersReceived")) {
    advance(returnPath_.witness, {{"event", "answer_received"}}, *n);
  }
  if (auto n = number(*c, "witnessQueriesAnswered")) {
    advance(returnPath_.witness, {{"event", "query_answered"}}, *n);
  }
  if (auto n = number(*c, "witnessQueriesRefused")) {
    advance(returnPath_.witness, {{"event", "query_refused"}}, *n);
  }
  if (auto n = number(*c, "silencesUncounted")) {
    advance(returnPath_.silences, {}, *n);
  }
  if (auto n = number(*c, "malformedReplies")) {
    advance(returnPath_.relayDrops, {{"reason", "malformed"}}, *n);
  }
}

void Metrics::updateConfigLoads(const json& config) {
  if (auto ok = boolean(config, "lastReloadSuccessful")) {
    configLastReloadSuccessful_.Add({}).Set(flag(*ok));
  }
  if (auto at = string(config, "loadedAt")) {
    if (auto seconds = unixSeconds(*at)) {
      configLoadedAt_.Add({}).Set(*seconds);
    }
  }
  if (auto n = number(config, "reloads")) {
    advance(configReloads_, {{"result", "success"}}, *n);
  }
  if (auto n = number(config, "reloadFailures")) {
    advance(configReloads_, {{"result", "failure"}}, *n);
  }
  if (const json* pending = member(config, "pendingRestart");
      pending != nullptr && pending->is_array()) {
    configPendingRestart_.Add({}).Set(static_cast<double>(pending->size()));
  }
}

void Metrics::updateDoctor(const json& doctor) {
  const json* counts = member(doctor, "counts");
  if (counts == nullptr) {
    return;  // no run has ended yet
  }
  for (auto result : {"ok", "warn", "fail"}) {
    if (auto n = number(*counts, result)) {
      doctorChecks_.Add({{"result", result}}).Set(*n);
    }
  }
}

void Metrics::updateListener(const std::string& name, const json& listener) {
  const Labels labels{{"listener", name}};
  if (auto n = number(listener, "open")) {
    listenerOpen_.Add(labels).Set(*n);
  }
  if (auto n = number(listener, "limit")) {
    listenerLimit_.Add(labels).Set(*n);
  }
  const std::pair<const char*, const char*> reasons[] = {
      {"limitHits", "limit"}, {"idleTimeouts", "idle"}, {"refused", "refused"}};
  for (const auto& [key, reason] : reasons) {
    if (auto n = number(listener, key)) {
      advance(listenerClosed_, {{"listener", name}, {"reason", reason}}, *n);
    }
  }
  if (auto n = number(listener, "acceptFailures")) {
    advance(listenerAcceptFailures_, labels, *n);
  }
}

void Metrics::updateHandoff(const json& handoff) {
  if (auto refused = boolean(handoff, "refused")) {
    handoffRefused_.Add({}).Set(flag(*refused));
  }
  if (auto silent = boolean(handoff, "holderSilent")) {
    handoffHolderSilent_.Add({}).Set(flag(*silent));
  }
  const std::pair<const char*, const char*> events[] = {{"tookOver", "took_over"},
                                                        {"yielded", "yielded"},
                                                        {"tookBack", "took_back"},
                                                        {"refusals", "refused"}};
  for (const auto& [key, event] : events) {
    if (auto n = number(handoff, key)) {
      advance(handoffs_, {{"event", event}}, *n);
    }
  }
}

void Metrics::updatePeer(const json& peer) {
  auto address = string(peer, "address");
  if (!address) {
    return;
  }
  const Labels labels{{"peer", *address}};
  auto state = string(peer, "state");
  if (state) {
    for (auto name : kSessionStates) {
      peer_.state.Add({{"peer", *address}, {"state", std::string(name)}}).Set(flag(*state == name));
    }
    peer_.established.Add(labels).Set(flag(*state == "Established"));
  }
  if (auto seconds = number(peer, "stateSeconds")) {
    peer_.stateSeconds.Add(labels).Set(*seconds);
  }
  if (auto tooLong = boolean(peer, "notEstablishedTooLong")) {
    peer_.notEstablishedTooLong.Add(labels).Set(flag(*tooLong));
  }
  if (auto transitions = number(peer, "establishedTransitions"); transitions && state) {
    const double up = *state == "Established" ? 1 : 0;
    advance(peer_.flaps, labels, *transitions >= up ? *transitions - up : 0);
  }
  const std::pair<const char*, CounterFamily*> counters[] = {
      {"updatesSent", &peer_.updatesSent},
      {"updatesReceived", &peer_.updatesReceived},
      {"prefixesReceived", &peer_.prefixesReceived},
      {"withdrawalsReceived", &peer_.withdrawalsReceived},
      {"endOfRibReceived", &peer_.endOfRibReceived},
      {"routeRefreshReceived", &peer_.routeRefreshReceived}};
  for (const auto& [key, family] : counters) {
    if (auto n = number(peer, key)) {
      advance(*family, labels, *n);
    }
  }
  if (auto n = number(peer, "treatAsWithdraw")) {
    advance(peer_.updateErrors, {{"peer", *address}, {"handling", "treat-as-withdraw"}}, *n);
  }
  if (auto n = number(peer, "attributeDiscard")) {
    advance(peer_.updateErrors, {{"peer", *address}, {"handling", "attribute-discard"}}, *n);
  }
  const std::pair<const char*, Family<Counter>*> byCode[] = {
      {"notificationsSentByCode", &peer_.notificationsSent},
      {"notificationsReceivedByCode", &peer_.notificationsReceived}};
  for (const auto& [key, family] : byCode) {
    const json* codes = member(peer, key);
    if (codes == nullptr || !codes->is_object()) {
      continue;
    }
    // Several status codes may share the "other" label: sum them before advancing.
    std::map<std::string, double> byLabel;
    for (const auto& [code, count] : codes->items()) {
      if (count.is_number()) {
        byLabel[notificationCodeLabel(code)] += count.get<double>();
      }
    }
    for (const auto& [code, count] : byLabel) {
      advance(*family, {{"peer", *address}, {"code", code}}, count);
    }
  }
  if (auto n = number(peer, "prefixesAdvertised")) {
    peer_.prefixesAdvertised.Add(labels).Set(*n);
  }
  if (const json* bfd = member(peer, "bfd"); bfd != nullptr && bfd->is_object()) {
    updateBfd(*address, *bfd);
  }
}

void Metrics::updateBfd(const std::string& peer, const json& bfd) {
  if (boolean(bfd, "enabled") != std::optional<bool>(true)) {
    return;
  }
  const Labels labels{{"peer", peer}};
  if (auto state = string(bfd, "state")) {
    for (auto name : {"AdminDown", "Down", "Init", "Up"}) {
      bfd_.state.Add({{"peer", peer}, {"state", name}}).Set(flag(*state == name));
    }
  }
  if (auto ms = number(bfd, "detectionTimeMs")) {
    bfd_.detectionTime.Add(labels).Set(*ms / 1000);
  }
  if (auto ms = number(bfd, "txIntervalMs")) {
    bfd_.txInterval.Add(labels).Set(*ms / 1000);
  }
  if (const json* to = member(bfd, "transitionsTo"); to != nullptr && to->is_object()) {
    for (const auto& [state, count] : to->items()) {
      if (count.is_number()) {
        advance(bfd_.transitions, {{"peer", peer}, {"to", state}}, count.get<double>());
      }
    }
  }
  if (auto n = number(bfd, "packetsSent")) {
    advance(bfd_.packets, {{"peer", peer}, {"direction", "sent"}}, *n);
  }
  if (auto n = number(bfd, "packetsReceived")) {
    advance(bfd_.packets, {{"peer", peer}, {"direction", "received"}}, *n);
  }
  if (auto n = number(bfd, "packetsDropped")) {
    advance(
        bfd_.packets, {{"peer", peer}, {"direction", "dropped"}},
        *n + number(bfd, "malformedReceived").value_or(0) + number(bfd, "ttlDropped").value_or(0));
  }
}

void Metrics::updateVip(const json& vip) {
  auto address = string(vip, "address");
  if (!address) {
    return;
  }
  const Labels labels{{"vip", *address}};
  if (auto bound = boolean(vip, "bound")) {
    vip_.bound.Add({{"vip", *address}, {"interface", string(vip, "interface").value_or("")}})
        .Set(flag(*bound));
  }
  if (auto owned = boolean(vip, "ownedByVipd")) {
    vip_.owned.Add(labels).Set(flag(*owned));
  }
  if (auto announced = boolean(vip, "announced")) {
    vip_.announced.Add(labels).Set(flag(*announced));
  }
  if (auto peers = number(vip, "announcedToPeers")) {
    vip_.announcedPeers.Add(labels).Set(*peers);
  }
  if (auto lost = number(vip, "lostCount")) {
    advance(vip_.lost, labels, *lost);
  }
}

void Metrics::updateHealth(const json& health) {
  if (auto healthy = boolean(health, "healthy")) {
    health_.healthy.Add({}).Set(flag(*healthy));
  }
  if (auto n = number(health, "consecutiveSuccesses")) {
    health_.consecutiveSuccesses.Add({}).Set(*n);
  }
  if (auto n = number(health, "consecutiveFailures")) {
    health_.consecutiveFailures.Add({}).Set(*n);
  }
  if (auto ms = number(health, "lastLatencyMs")) {
    health_.latency.Add({}).Set(*ms / 1000.0);
  }
  if (auto n = number(health, "checks")) {
    advance(health_.checks, {}, *n);
  }
  if (auto n = number(health, "failures")) {
    advance(health_.failures, {}, *n);
  }
  if (auto n = number(health, "hardFailures")) {
    advance(health_.hardFailures, {}, *n);
  }
  if (auto n = number(health, "connectResends")) {
    advance(health_.connectResends, {}, *n);
  }
  if (auto held = boolean(health, "heldConnection")) {
    health_.heldConnection.Add({}).Set(flag(*held));
  }
  if (auto degraded = boolean(health, "degraded")) {
    health_.degraded.Add({}).Set(flag(*degraded));
  }
  if (auto unbound = boolean(health, "vipsUnbound")) {
    health_.vipsUnbound.Add({}).Set(flag(*unbound));
  }
}

void Metrics::updateWithdrawn(const json& withdrawn) {
  auto active = boolean(withdrawn, "active");
  if (!active) {
    return;
  }
  withdrawn_.Add({}).Set(flag(*active));
  if (!*active) {
    withdrawnSince_.Add({}).Set(0);
  } else if (auto seconds = unixSeconds(string(withdrawn, "since").value_or(""))) {
    withdrawnSince_.Add({}).Set(*seconds);
  } else {
    // Withdrawn since a time nobody can read (a hand-written withdrawn.json): no series, rather
    // than a 0 that reads as "withdrawn since 1970".
    withdrawnSince_.Remove(&withdrawnSince_.Add({}));
  }
}

void Metrics::advance(Family<Counter>& family, const Labels& labels, double current) {
  auto& series = family.Add(labels);
  auto it = lastSeen_.try_emplace(&series, 0.0).first;
  if (current > it->second) {
    series.Increment(current - it->second);
  }
  it->second = current;
}

void Metrics::set(SingleSeries& series, const Labels& labels, double value) {
  if (series.gauge != nullptr && series.labels != labels) {
    series.family->Remove(series.gauge);
    series.gauge = nullptr;
  }
  if (series.gauge == nullptr) {
    series.gauge = &series.family->Add(labels);
    series.labels = labels;
  }
  series.gauge->Set(value);
}

std::string Metrics::serialize() const { return exposition::serialize(*registry_); }

}  // namespace vipd::daemon
