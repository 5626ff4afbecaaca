#include "daemon/status_report.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "daemon/base/version.h"

namespace vipd::daemon {
namespace {

using namespace std::chrono_literals;

// A session not Established for longer than this many hold times is stuck (Active forever after a
// misconfiguration, a firewall, a wrong ASN): it fails readiness and is logged every minute.
constexpr int kStuckHoldTimes = 3;
// Hold time 0 has no natural bound; use the default hold time's.
constexpr auto kStuckFloor = 27s;
constexpr auto kStuckWarningInterval = 60s;

std::string formatDuration(std::chrono::steady_clock::duration d) {
  auto s = std::chrono::duration_cast<std::chrono::seconds>(d).count();
  if (s < 120) {
    return fmt::format("{}s", s);
  }
  if (s < 7200) {
    return fmt::format("{}m{}s", s / 60, s % 60);
  }
  return fmt::format("{}h{}m", s / 3600, (s / 60) % 60);
}

std::string notificationText(const std::optional<bgp::NotificationMessage>& n) {
  return n ? bgp::describeNotification(n->code, n->subcode) : "";
}

nlohmann::json byCode(const std::map<std::pair<uint8_t, uint8_t>, uint64_t>& counts) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [code, n] : counts) {
    out[fmt::format("{}/{}", code.first, code.second)] = n;
  }
  return out;
}

std::chrono::steady_clock::duration stuckAfter(const config::Peer& peer) {
  auto bound = peer.holdTime * kStuckHoldTimes;
  return bound.count() == 0 ? std::chrono::steady_clock::duration(kStuckFloor)
                            : std::chrono::steady_clock::duration(bound);
}

double milliseconds(std::chrono::microseconds us) { return static_cast<double>(us.count()) / 1000; }

nlohmann::json bfdJson(const BfdSessionStatus& b) {
  const auto& c = b.counters;
  nlohmann::json transitions = nlohmann::json::object();
  for (auto state : {bfd::State::AdminDown, bfd::State::Down, bfd::State::Init, bfd::State::Up}) {
    transitions[std::string(bfd::stateName(state))] = b.transitionsTo[static_cast<size_t>(state)];
  }
  return {
      {"enabled", true},
      {"mode", b.multihop ? "multihop" : "single-hop"},
      {"running", b.running},
      {"state", bfd::stateName(b.state)},
      {"remoteState", bfd::stateName(b.remoteState)},
      {"diagnostic", bfd::diagnosticName(b.diagnostic)},
      {"remoteDiagnostic", bfd::diagnosticName(b.remoteDiagnostic)},
      {"stateFor", formatDuration(std::chrono::steady_clock::now() - b.since)},
      {"lastReason", b.lastReason},
      {"localDiscriminator", b.localDiscriminator},
      {"remoteDiscriminator", b.remoteDiscriminator},
      {"localEndpoint", b.localEndpoint},
      {"txIntervalMs", milliseconds(b.txInterval)},
      {"detectionTimeMs", milliseconds(b.detectionTime)},
      {"packetsSent", c.packetsSent},
      {"packetsReceived", c.packetsReceived},
      {"packetsDropped", c.packetsDropped},
      {"malformedReceived", b.malformed},
      {"ttlDropped", b.ttlDropped},
      {"sendErrors", b.sendErrors},
      {"lastSendError", b.sendError},
      {"upTransitions", c.upTransitions},
      {"downTransitions", c.downTransitions},
      {"transitionsTo", transitions},
  };
}

}  // namespace

StatusReport::StatusReport(const config::Config& config,
                           const std::vector<std::unique_ptr<PeerSession>>& peers,
                           const Announcer& announcer, const HealthChecker& health,
                           const BfdService& bfd, const Drainer& drainer, const Handoff& handoff,
                           const ReturnPathChecker& returnPath)
    : config_(config),
      peers_(peers),
      announcer_(announcer),
      binder_(announcer.vips().binder()),
      health_(health),
      bfd_(bfd),
      drainer_(drainer),
      handoff_(handoff),
      returnPath_(returnPath) {}

std::chrono::steady_clock::duration StatusReport::warnAboutStuckPeers(const Logger& log) {
  auto now = std::chrono::steady_clock::now();
  // An Established session cannot be stuck sooner than a full stuckAfter from now; with no
  // session at all there is nothing to check (an hour is a sleep without overflow).
  std::chrono::steady_clock::duration next = std::chrono::hours(1);
  // Keyed by address: a peer a reload removed is forgotten, one it added starts afresh.
  std::map<bgp::IpAddress, std::chrono::steady_clock::time_point> kept;
  for (size_t i = 0; i < peers_.size(); ++i) {
    auto s = peers_[i]->status();
    auto bound = stuckAfter(config_.peers[i]);
    auto& last = kept[peers_[i]->address()];
    if (auto it = lastStuckWarning_.find(peers_[i]->address()); it != lastStuckWarning_.end()) {
      last = it->second;
    }
    if (s.state == bgp::SessionState::Established || s.notEstablishedFor <= bound) {
      last = {};
      next = std::min(next, s.state == bgp::SessionState::Established
                                ? bound
                                : bound - s.notEstablishedFor + std::chrono::milliseconds(1));
      continue;
    }
    if (last != std::chrono::steady_clock::time_point{} && now - last < kStuckWarningInterval) {
      next = std::min(next, last + kStuckWarningInterval - now);
      continue;
    }
    last = now;
    next = std::min<std::chrono::steady_clock::duration>(next, kStuckWarningInterval);
    log.warn("peer " + s.address,
             "not Established for {} (more than {}x the hold time), now {}; last error: {}; "
             "readiness fails until it is; warning again in 1m",
             formatDuration(s.notEstablishedFor), kStuckHoldTimes, bgp::sessionStateName(s.state),
             s.lastError.empty() ? "none" : s.lastError);
  }
  lastStuckWarning_ = std::move(kept);
  return std::max<std::chrono::steady_clock::duration>(next, kHousekeepingInterval);
}

const PeerSession* StatusReport::find(const bgp::IpAddress& address) const {
  for (const auto& peer : peers_) {
    if (peer->address() == address) {
      return peer.get();
    }
  }
  return nullptr;
}

std::vector<std::string> StatusReport::notReadyReasons(const SpeakerIntent& intent) const {
  std::vector<std::string> reasons;
  for (auto& check : readinessChecks(intent)) {
    if (check.failure) {
      reasons.push_back(std::move(*check.failure));
    }
  }
  return reasons;
}

std::vector<ReadinessCheck> StatusReport::readinessChecks(const SpeakerIntent& intent) const {
  std::vector<ReadinessCheck> checks;
  // A state file vipd cannot use needs an operator, even though the node is safely withdrawn.
  checks.push_back({"state files", drainer_.stateError()});
  if (handoff_.role() == Handoff::Role::Contending) {
    // A DaemonSet pod that has not taken over is not done rolling out.
    checks.push_back({"role", fmt::format("not speaking yet: {}", handoff_.waitingFor())});
    return checks;
  }
  if (handoff_.role() == Handoff::Role::Standby) {
    // A yielded static-pod instance on standby is doing its job; a daemonset instance on standby
    // (another daemonset instance holds the lock) is not.
    checks.push_back({"role", config_.mode == config::Mode::StaticPod
                                  ? std::nullopt
                                  : std::optional(fmt::format("on standby: {}",
                                                              handoff_.waitingFor()))});
    // Not when the instance it waits behind has stopped speaking (issue 29 part 3).
    checks.push_back({"speaker", handoff_.holderSilent()});
    return checks;
  }
  checks.push_back({"role", std::nullopt});
  addPeerChecks(checks, intent.shuttingDown);
  addVipChecks(checks, intent);
  checks.insert(checks.end(), intent.speakerChecks.begin(), intent.speakerChecks.end());
  return checks;
}

void StatusReport::addPeerChecks(std::vector<ReadinessCheck>& checks, bool shuttingDown) const {
  bool anyEstablished = false;
  for (size_t i = 0; i < peers_.size(); ++i) {
    auto s = peers_[i]->status();
    anyEstablished = anyEstablished || s.state == bgp::SessionState::Established;
    bool stuck = s.state != bgp::SessionState::Established &&
                 s.notEstablishedFor > stuckAfter(config_.peers[i]);
    checks.push_back({"peer " + s.address,
                      stuck ? std::optional(fmt::format("peer {} not Established for {}",
                                                        s.address,
                                                        formatDuration(s.notEstablishedFor)))
                            : std::nullopt});
  }
  checks.push_back({"bgp", anyEstablished
                               ? std::nullopt
                               : std::optional<std::string>("no BGP session is Established")});
  for (const auto& b : bfd_.status()) {
    std::optional<std::string> failure;
    if (b.state != bfd::State::Up && !shuttingDown) {
      const PeerSession* session = find(b.address);
      bool holding = session != nullptr && session->bfdGate() == false;
      failure = fmt::format("peer {}: BFD is {} ({}){}", b.peer, bfd::stateName(b.state),
                            b.lastReason,
                            holding ? "; its routes are held back until BFD is Up"
                                    : "; the peer turned BFD off, so failures are "
                                      "detected by the hold timer only");
    }
    checks.push_back({"bfd " + b.peer, std::move(failure)});
  }
}

void StatusReport::addVipChecks(std::vector<ReadinessCheck>& checks,
                                const SpeakerIntent& intent) const {
  const auto& intended = intent.announcements;
  bool wantAnnounced = !intent.shuttingDown && !drainer_.withdrawn() && !drainer_.draining() &&
                       health_.healthy();
  for (const auto& binding : binder_.status()) {
    const auto& prefix = binding.vip.prefix;
    bool announcedSomewhere = false;
    bool missingSomewhere = false;
    for (size_t i = 0; i < peers_.size(); ++i) {
      const auto& peer = peers_[i];
      const auto& carries = config_.peers[i].families;
      if (peer->state() != bgp::SessionState::Established ||
          std::find(carries.begin(), carries.end(), prefix.address.family) == carries.end()) {
        // A session that does not carry this VIP's family (peers[].families) never has it.
        continue;
      }
      bool has = peer->advertised().count(prefix) != 0;
      announcedSomewhere = announcedSomewhere || has;
      missingSomewhere = missingSomewhere || (intended.count(prefix) != 0 && !has);
    }
    std::optional<std::string> failure;
    if (wantAnnounced && binding.state != BindState::Bound) {
      failure = fmt::format("vip {} should be announced but is {}: {}", prefix.toString(),
                            bindStateName(binding.state), binding.reason);
    } else if (missingSomewhere) {
      failure = fmt::format("vip {} is not yet announced to every Established peer carrying {}",
                            prefix.toString(), config::familyKeyword(prefix.address.family));
    } else if (intended.count(prefix) == 0 && announcedSomewhere) {
      failure = fmt::format("vip {} is still announced but should not be", prefix.toString());
    }
    checks.push_back({"vip " + prefix.toString(), std::move(failure)});
  }
}

nlohmann::json StatusReport::peersJson() const {
  nlohmann::json peers = nlohmann::json::array();
  for (size_t i = 0; i < peers_.size(); ++i) {
    auto s = peers_[i]->status();
    const auto& c = s.counters;
    nlohmann::json families = nlohmann::json::array();
    nlohmann::json p{
        {"address", s.address},
        {"asn", s.asn},
        {"type", s.ebgp ? "eBGP" : "iBGP"},
        {"ttlSecurity", s.ttlSecurity},
        {"state", bgp::sessionStateName(s.state)},
        {"stateFor", formatDuration(s.inState)},
        {"stateSeconds",
         std::chrono::duration_cast<std::chrono::duration<double>>(s.inState).count()},
        {"notEstablishedSeconds",
         std::chrono::duration_cast<std::chrono::duration<double>>(s.notEstablishedFor).count()},
        {"notEstablishedTooLong", s.state != bgp::SessionState::Established &&
                                      s.notEstablishedFor > stuckAfter(config_.peers[i])},
        {"lastError", s.lastError},
        {"prefixesAdvertised", s.advertised.size()},
        {"updatesSent", c.messagesSent[static_cast<size_t>(bgp::MessageType::Update)]},
        {"updatesReceived", c.messagesReceived[static_cast<size_t>(bgp::MessageType::Update)]},
        {"prefixesReceived", c.prefixesReceived},
        {"withdrawalsReceived", c.withdrawalsReceived},
        {"treatAsWithdraw", c.treatAsWithdraw},
        {"attributeDiscard", c.attributeDiscard},
        {"endOfRibReceived", c.endOfRibReceived},
        {"routeRefreshReceived", c.routeRefreshReceived},
        {"establishedTransitions", c.establishedTransitions},
        {"notificationsSent",
         c.messagesSent[static_cast<size_t>(bgp::MessageType::Notification)]},
        {"notificationsReceived",
         c.messagesReceived[static_cast<size_t>(bgp::MessageType::Notification)]},
        {"notificationsSentByCode", byCode(c.notificationsSentByCode)},
        {"notificationsReceivedByCode", byCode(c.notificationsReceivedByCode)},
        {"lastNotificationSent", notificationText(c.lastNotificationSent)},
        {"lastNotificationReceived", notificationText(c.lastNotificationReceived)},
    };
    if (s.negotiated) {
      for (const auto& f : s.negotiated->families) {
        families.push_back(f == bgp::kIpv4Unicast ? "ipv4-unicast" : "ipv6-unicast");
      }
      p["holdTimeSeconds"] = s.negotiated->holdTime.count();
      p["keepaliveSeconds"] = s.negotiated->keepaliveTime.count();
      p["peerRouterId"] = bgp::IpAddress::v4(s.negotiated->peerRouterId).toString();
    }
    // What the session carries (config) and what the OPEN exchange settled: a family carried but
    // not negotiated is one the peer refused, and its VIPs do not reach this peer.
    nlohmann::json carries = nlohmann::json::array();
    for (bgp::Afi family : config_.peers[i].families) {
      carries.push_back(config::familyKeyword(family));
    }
    p["carries"] = carries;
    p["families"] = families;
    p["bfd"] = nlohmann::json{{"enabled", false}};
    if (auto gate = peers_[i]->bfdGate()) {
      p["bfd"]["announcing"] = *gate;
    }
    peers.push_back(std::move(p));
  }
  for (const auto& b : bfd_.status()) {
    for (size_t i = 0; i < peers_.size(); ++i) {
      if (peers_[i]->address() == b.address) {
        peers[i]["bfd"].update(bfdJson(b));
      }
    }
  }
  return peers;
}

nlohmann::json StatusReport::vipsJson(const SpeakerIntent& intent) const {
  nlohmann::json vips = nlohmann::json::array();
  for (const auto& binding : binder_.status()) {
    size_t announcedTo = 0;
    for (const auto& peer : peers_) {
      if (peer->advertised().count(binding.vip.prefix) != 0) {
        ++announcedTo;
      }
    }
    // The operator's decisions explain more than the binding they caused (a withdrawn node has
    // unbound its VIPs on purpose), so they come first.
    std::string reason = binding.reason;
    const auto withheld = intent.withheld.find(binding.vip.prefix);
    if (intent.shuttingDown) {
      reason = "shutting down";
    } else if (drainer_.draining()) {
      reason = "draining";
    } else if (const auto& withdrawn = drainer_.withdrawn()) {
      reason = fmt::format("withdrawn: {}", withdrawn->reason);
    } else if (auto held = intent.held.find(binding.vip.prefix); held != intent.held.end()) {
      reason = held->second;
    } else if (withheld != intent.withheld.end() && announcedTo == 0) {
      reason = withheld->second;
    } else if (reason.empty()) {
      if (!health_.healthy()) {
        reason = "health gate closed";
      } else if (announcedTo == 0) {
        reason = "no Established session";
      }
    }
    vips.push_back({{"address", binding.vip.prefix.toString()},
                    {"interface", binding.vip.interface},
                    {"state", bindStateName(binding.state)},
                    {"bound", binding.state == BindState::Bound},
                    {"ownedByVipd", binding.ownedByVipd},
                    {"lostCount", binding.lostCount},
                    {"announced", announcedTo > 0},
                    {"announcedToPeers", announcedTo},
                    {"reason", reason}});
  }
  return vips;
}

nlohmann::json StatusReport::status(const SpeakerIntent& intent) const {
  auto reasons = notReadyReasons(intent);
  return {{"version", version()},
          {"mode", config::modeName(config_.mode)},
          {"role", handoff_.roleName()},
          {"handoff", handoff_.status()},
          {"routerId", config_.routerId.toString()},
          {"localAsn", config_.localAsn},
          {"peers", peersJson()},
          {"vips", vipsJson(intent)},
          {"health", health_.status()},
          {"withdrawn", drainer_.withdrawnStatus()},
          {"draining", drainer_.draining()},
          {"lastDrainResult", drainer_.lastResult()},
          {"ready", reasons.empty()},
          {"readyReasons", reasons}};
}

// The apiserver's verbose /readyz format: "[+]name ok" or "[-]name failed: why" per check, then
// the verdict.
std::string verboseReadiness(const std::vector<ReadinessCheck>& checks) {
  bool ready = std::none_of(checks.begin(), checks.end(),
                            [](const ReadinessCheck& c) { return c.failure.has_value(); });
  std::string out;
  for (const auto& check : checks) {
    out += check.failure ? fmt::format("[-]{} failed: {}\n", check.name, *check.failure)
                         : fmt::format("[+]{} ok\n", check.name);
  }
  out += ready ? "readyz check passed\n" : "readyz check failed\n";
  return out;
}

namespace {

std::vector<std::string> addressTexts(const std::set<bgp::IpAddress>& addresses) {
  std::vector<std::string> out;
  for (const auto& a : addresses) {
    out.push_back(a.toString());
  }
  return out;
}

nlohmann::json announcerJson(const policy::Announcer& a) {
  nlohmann::json one{{"node", a.key}, {"self", a.self}};
  if (a.self && a.via.empty()) {
    return one;
  }
  one["nextHop"] = a.nextHop.toString();
  one["via"] = addressTexts(a.via);
  one["pathIds"] = std::vector<uint32_t>(a.pathIds.begin(), a.pathIds.end());
  one["identities"] = std::vector<std::string>(a.identities.begin(), a.identities.end());
  if (a.originatorId) {
    one["originatorId"] = bgp::IpAddress::v4(*a.originatorId).toString();
  }
  std::vector<std::string> asPath;
  for (const auto& segment : a.asPath) {
    for (uint32_t asn : segment.asns) {
      asPath.push_back(std::to_string(asn));
    }
  }
  one["asPath"] = fmt::format("{}", fmt::join(asPath, " "));
  one["degraded"] = a.degraded;
  one["draining"] = a.draining;
  return one;
}

}  // namespace

nlohmann::json fabricVipJson(const policy::VipView& view) {
  nlohmann::json v{{"available", view.available}, {"count", view.count()}};
  nlohmann::json sessions = nlohmann::json::array();
  for (const auto& s : view.sessions) {
    nlohmann::json one{{"peer", s.peer.toString()}, {"used", s.used}};
    if (s.used) {
      one["paths"] = s.paths;
      one["self"] = s.self;
      one["others"] = s.others;
    } else {
      one["reason"] = s.reason;
    }
    sessions.push_back(std::move(one));
  }
  v["sessions"] = std::move(sessions);
  if (!view.available) {
    v["reason"] = view.unavailableReason;
    return v;
  }
  nlohmann::json announcers = nlohmann::json::array();
  for (const auto& a : view.announcers) {
    announcers.push_back(announcerJson(a));
  }
  v["announcers"] = std::move(announcers);
  v["othersServing"] = view.othersServing();
  if (!view.notCounted.empty()) {
    v["notCounted"] = view.notCounted;
  }
  return v;
}

SpeakerIntent StatusReport::intent(bool shuttingDown) const {
  const auto& d = announcer_.decision();
  SpeakerIntent out{d.announced(), shuttingDown, {}, {}};
  if (handoff_.active() && config_.returnPath.mode != config::ReturnPath::Mode::Off) {
    out.speakerChecks.push_back({"return-path", returnPath_.readinessFailure()});
  }
  if (handoff_.active()) {
    // The never-zero rule's holds and unchecked withdrawals, and duplicates of this node's router
    // ID that two sessions confirm (one alone may be a forgery, issue 40): /readyz names them (a
    // held node is unhealthy or broken anyway; this says why it still announces).
    std::vector<std::string> fabric;
    for (const auto& [vip, v] : d.vips) {
      if (v.heldByNeverZero) {
        fabric.push_back(fmt::format("vip {}: {}", vip.toString(), v.reason));
      }
    }
    for (const auto& [vip, view] : announcer_.fabricView()) {
      fabric.insert(fabric.end(), view.duplicateRouterIdConfirmed.begin(),
                    view.duplicateRouterIdConfirmed.end());
    }
    out.speakerChecks.push_back(
        {"fabric", fabric.empty() ? std::nullopt
                                  : std::optional(fmt::format("{}", fmt::join(fabric, "; ")))});
  }
  for (const auto& vip : announcer_.vips().binder().announceable()) {
    auto decided = d.vips.find(vip);
    if (decided == d.vips.end()) {
      continue;  // bound since the last decision (which follows at once): nothing to say yet
    }
    const auto& v = decided->second;
    if (v.announce == policy::Announce::None && returnPath_.blocks(vip)) {
      out.withheld[vip] = "withheld: VIP-sourced packets get no answer (return path; see "
                          "returnPath)" +
                          std::string(v.unguardedWithdrawal ? "; no fabric view to check that "
                                                              "another node serves it"
                                                            : "");
    } else if (v.heldByNeverZero) {
      out.held[vip] = "announced degraded: " + v.reason;
    }
  }
  for (const auto& [vip, timer] : announcer_.removals()) {
    // Removed from the config, being unbound.
    auto decided = d.vips.find(vip);
    out.withheld[vip] = decided != d.vips.end() ? decided->second.reason
                                                : std::string("removed from the config");
  }
  if (announcer_.heldForHealth()) {
    // The gate's unbinding, not a lost address, is why these VIPs are absent.
    for (const auto& binding : announcer_.vips().binder().status()) {
      if (binding.state != BindState::Bound) {
        out.withheld[binding.vip.prefix] =
            "health gate closed; unbound until the check passes (health.unbindWhenUnhealthy)";
      }
    }
  }
  return out;
}

nlohmann::json StatusReport::fabricStatus() const {
  const auto& decision = announcer_.decision();
  nlohmann::json vips = nlohmann::json::object();
  std::vector<std::string> duplicates;
  std::vector<std::string> confirmed;
  for (const auto& [vip, view] : announcer_.fabricView()) {
    nlohmann::json v = fabricVipJson(view);
    if (auto d = decision.vips.find(vip); d != decision.vips.end()) {
      v["announce"] = std::string(policy::announceName(d->second.announce));
      v["heldByNeverZero"] = d->second.heldByNeverZero;
      if (d->second.unguardedWithdrawal) {
        v["unguardedWithdrawal"] = d->second.reason;
      }
    }
    duplicates.insert(duplicates.end(), view.duplicateRouterId.begin(),
                      view.duplicateRouterId.end());
    confirmed.insert(confirmed.end(), view.duplicateRouterIdConfirmed.begin(),
                     view.duplicateRouterIdConfirmed.end());
    vips[vip.toString()] = std::move(v);
  }
  nlohmann::json out{{"vips", std::move(vips)},
                     {"duplicateRouterId", duplicates},
                     {"duplicateRouterIdConfirmed", confirmed},
                     {"guard", {{"minAnnouncers", config_.guard.minAnnouncers}}}};
  if (config_.guard.expectedAnnouncers != 0) {
    out["guard"]["expectedAnnouncers"] = config_.guard.expectedAnnouncers;
  }
  out["guard"]["nodesShareAsn"] = config_.guard.nodesShareAsn;
  return out;
}

}  // namespace vipd::daemon
