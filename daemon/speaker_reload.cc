// The Speaker's side of a live reload (issue 29): reads the keys, takes what could fail first
// (so a failure leaves the running value in place and is reported), then carries out the plan
// config::planReload() made. speaker.h says what each change does.
#include <random>

#include <boost/asio/post.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/duration.h"
#include "daemon/session/config.h"
#include "daemon/session/key.h"
#include "daemon/speaker.h"

namespace vipd::daemon {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view kPeerRemoved = "vipd: peer removed from the config";

const config::Peer* findPeer(const std::vector<config::Peer>& peers,
                             const bgp::IpAddress& address) {
  auto it = std::find_if(peers.begin(), peers.end(),
                         [&](const config::Peer& p) { return p.address == address; });
  return it == peers.end() ? nullptr : &*it;
}

// Seeds a session's timer jitter (RFC 4271 section 10).
uint64_t jitterSeed() {
  std::random_device entropy;
  return (uint64_t{entropy()} << 32) | entropy();
}

std::string_view secretOf(const std::optional<SessionKey>& key) {
  return key ? std::string_view(key->secret) : std::string_view();
}

nlohmann::json changeJson(const config::ConfigChange& change) {
  return {{"key", change.path}, {"before", change.before}, {"after", change.after}};
}

// Whether `path` ("peers[192.0.2.1].holdTime") is `key` ("peers[192.0.2.1]") or inside it.
bool within(std::string_view path, std::string_view key) {
  return path == key || (path.starts_with(key) && path[key.size()] == '.');
}

// The changes `plan` leaves pending, each with why: a key of `failed` it is within, or a restart.
std::vector<Speaker::PendingChange> pendingOf(const config::ReloadPlan& plan,
                                              const config::Config& next,
                                              const std::map<std::string, std::string>& failed) {
  std::vector<Speaker::PendingChange> out;
  for (const auto& change : config::diffConfig(plan.applied, next)) {
    std::string reason = "needs a restart";
    for (const auto& [key, why] : failed) {
      if (within(change.path, key)) {
        reason = "could not be applied: " + why;
      }
    }
    out.push_back({change, std::move(reason)});
  }
  return out;
}

}  // namespace

std::unique_ptr<PeerSession> Speaker::makeSession(const config::Peer& peer) {
  auto session = std::make_unique<PeerSession>(
      io_, peer, sessionConfigFor(config_, peer, jitterSeed()), log_,
      [this] {
        // Checked again right before a session's first announcement.
        vips_.refreshAndAnnounce("a session is about to be established");
        return intendedAnnouncements();
      },
      [this] { onFabricChange(); });
  if (peer.bfd.enabled) {
    session->useBfdGate();
  }
  return session;
}

PeerSession* Speaker::findSession(const bgp::IpAddress& address) const {
  for (const auto& peer : peers_) {
    if (peer->address() == address) {
      return peer.get();
    }
  }
  return nullptr;
}

std::vector<std::string> Speaker::keyFiles() const {
  std::vector<std::string> out;
  for (const auto& peer : config_.peers) {
    if (peer.passwordFile) {
      out.push_back(*peer.passwordFile);
    }
  }
  return out;
}

tl::expected<Speaker::ReloadOutcome, std::string> Speaker::reload(const config::Config& next,
                                                                 std::string_view trigger) {
  // 1. Every key, by content: an unreadable one is a config that does not load.
  std::map<bgp::IpAddress, std::optional<SessionKey>> keys;
  std::set<bgp::IpAddress> keysChanged;
  for (size_t i = 0; i < next.peers.size(); ++i) {
    const auto& peer = next.peers[i];
    std::optional<SessionKey> key;
    if (peer.passwordFile) {
      auto read = readSessionKey(*peer.passwordFile);
      if (!read) {
        auto error = fmt::format("peers[{}] ({}): {}", i, peer.address.toString(), read.error());
        reloadFailed(error, trigger);
        return tl::unexpected(error);
      }
      key = std::move(*read);
    }
    if (const PeerSession* session = findSession(peer.address);
        session != nullptr && secretOf(session->sessionKey()) != secretOf(key)) {
      keysChanged.insert(peer.address);
    }
    keys[peer.address] = std::move(key);
  }

  // 2. What may fail, before anything changes: each failure keeps the running value and is
  // reported as pending with its reason; the rest of the reload goes on.
  const config::Config previous = config_;
  config::Config achievable = next;
  std::map<std::string, std::string> failed;  // path prefix -> why
  if (auto checked = HealthChecker::check(next.health);
      !checked && config::planReload(config_, next, {}).healthCheck) {
    // The checker keeps its settings; what the policy and the sessions read still applies.
    failed["health"] = checked.error();
    config::Health kept = config_.health;
    kept.degrade = next.health.degrade;
    kept.onFailure = next.health.onFailure;
    kept.unbindWhenUnhealthy = next.health.unbindWhenUnhealthy;
    achievable.health = kept;
  }
  lockAddedVips(next, achievable, failed);
  guardReload(achievable, failed);
  auto plan = config::planReload(config_, achievable, keysChanged);
  if (auto bfd = updateBfd(plan.applied); !bfd) {
    // A new BFD session could not open its socket (a port another daemon holds): the peers
    // whose BFD changed keep what they run, a peer added with BFD is not added.
    for (auto& peer : achievable.peers) {
      const config::Peer* before = findPeer(config_.peers, peer.address);
      if (before != nullptr && before->bfd != peer.bfd) {
        failed[fmt::format("peers[{}].bfd", peer.address.toString())] = bfd.error();
        peer.bfd = before->bfd;
      } else if (before == nullptr && peer.bfd.enabled) {
        failed[fmt::format("peers[{}]", peer.address.toString())] = bfd.error();
      }
    }
    std::erase_if(achievable.peers, [&](const config::Peer& p) {
      return findPeer(config_.peers, p.address) == nullptr && p.bfd.enabled;
    });
    plan = config::planReload(config_, achievable, keysChanged);
    if (auto again = updateBfd(plan.applied); !again) {
      log_.error("bfd", "{}", again.error());  // nothing new to open: cannot happen
    }
  }

  // 3. Carry it out.
  carryOut(plan, keys);
  if (plan.returnPath) {
    const bool speaking = handoff_.active() && !shuttingDown_;
    if (auto restarted = returnPath_.restart(speaking); !restarted) {
      // The old settings' port is free again now: run on with them.
      failed["returnPath"] = restarted.error();
      config_.returnPath = previous.returnPath;
      plan.applied.returnPath = previous.returnPath;
      std::erase_if(plan.live, [](const config::ConfigChange& c) {
        return within(c.path, "returnPath");
      });
      auto again = returnPath_.restart(speaking);
      log_.error("return-path", "{}; {}", restarted.error(),
                 again ? "running on with the settings it had"
                       : "the check is not running: " + again.error());
    }
  }

  ReloadOutcome outcome;
  outcome.applied = plan.live;
  outcome.pending = pendingOf(plan, next, failed);
  outcome.failedSome = !failed.empty();
  recordReload(outcome, trigger);
  return outcome;
}

void Speaker::lockAddedVips(const config::Config& next, config::Config& achievable,
                            std::map<std::string, std::string>& failed) {
  if (instanceLock_ == nullptr) {
    return;
  }
  for (const auto& vip : next.vips) {
    const bool known = std::any_of(config_.vips.begin(), config_.vips.end(),
                                   [&](const config::Vip& v) { return v.prefix == vip.prefix; });
    if (known || removingVips_.count(vip.prefix) != 0) {
      continue;  // locked since start, or still (until it is unbound)
    }
    if (auto locked = instanceLock_->lockVip(vip.prefix, io_, log_); !locked) {
      failed[fmt::format("vips[{}]", vip.prefix.toString())] = locked.error();
      std::erase_if(achievable.vips, [&](const config::Vip& v) { return v.prefix == vip.prefix; });
    }
  }
}

void Speaker::guardReload(config::Config& achievable, std::map<std::string, std::string>& failed) {
  // What the reload would take off the fabric: the VIPs it removes, or every VIP when no
  // running peer is left to announce them to.
  const bool everyPeer = std::none_of(config_.peers.begin(), config_.peers.end(), [&](auto& p) {
    return findPeer(achievable.peers, p.address) != nullptr;
  });
  policy::GuardInputs in;
  in.minAnnouncers = config_.guard.minAnnouncers;
  const auto views = fabricView();
  for (const auto& vip : intendedAnnouncements()) {
    const bool removed = std::none_of(achievable.vips.begin(), achievable.vips.end(),
                                      [&](const config::Vip& v) { return v.prefix == vip; });
    auto view = views.find(vip);
    if ((removed || everyPeer) && view != views.end() && view->second.available) {
      in.announced.insert(vip);
      in.othersStaying[vip] = view->second.othersStaying();
    }
  }
  const auto refusal = policy::withdrawGuard(in);
  if (!refusal) {
    return;  // without a fabric view the guard cannot check, as for vipctl withdraw
  }
  // Refused: what would fall short keeps running as it is, pending with the reason, until a
  // reload finds other nodes announcing it (or `vipctl withdraw --force` takes the node off).
  std::vector<std::string> parts;
  for (const auto& [vip, remaining] : refusal->remaining) {
    parts.push_back(fmt::format("{}: {} other node(s) would remain ({})", vip.toString(),
                                remaining, policy::describeAnnouncers(views.at(vip), false)));
  }
  const std::string why = fmt::format(
      "kept: it would leave fewer than guard.minAnnouncers ({}) other nodes announcing {}",
      config_.guard.minAnnouncers, fmt::join(parts, "; "));
  if (everyPeer) {
    for (const auto& peer : config_.peers) {
      failed[fmt::format("peers[{}]", peer.address.toString())] = why;
    }
    achievable.peers = config_.peers;
  }
  for (const auto& [vip, remaining] : refusal->remaining) {
    auto running = std::find_if(config_.vips.begin(), config_.vips.end(),
                                [&](const config::Vip& v) { return v.prefix == vip; });
    const bool removed = std::none_of(achievable.vips.begin(), achievable.vips.end(),
                                      [&](const config::Vip& v) { return v.prefix == vip; });
    if (removed && running != config_.vips.end()) {
      failed[fmt::format("vips[{}]", vip.toString())] = why;
      achievable.vips.push_back(*running);
    }
  }
  log_.warn("config", "the reload would take this node off the fabric where it is needed; {}; "
            "the rest of the reload goes on", why);
}

tl::expected<void, std::string> Speaker::updateBfd(const config::Config& applied) {
  // A peer removed with BFD keeps its BFD session until carryOut's Cease to it is written.
  for (const auto& p : bfdPeersOf(config_)) {
    if (findPeer(applied.peers, p.address) == nullptr &&
        std::none_of(retiringBfd_.begin(), retiringBfd_.end(),
                     [&](const BfdPeer& r) { return r.address == p.address; })) {
      retiringBfd_.push_back(p);
    }
  }
  if (auto set = bfd_.setPeers(bfdPeersWithRetiring(applied)); !set) {
    return set;
  }
  if (handoff_.active() && !shuttingDown_ && !bfd_.running()) {
    return bfd_.start();  // the first BFD peer (a no-op without any)
  }
  return {};
}

void Speaker::carryOut(const config::ReloadPlan& plan,
                       std::map<bgp::IpAddress, std::optional<SessionKey>>& keys) {
  if (plan.empty()) {
    return;
  }
  if (plan.returnPath) {
    returnPath_.stop();  // it reads config_.returnPath: stopped before that changes
  }
  config_ = plan.applied;  // every collaborator that reads config_ sees what runs from here on
  applyPeers(plan, keys);
  applyVips(plan);
  returnPath_.setAddresses(peerAddresses(config_), vipAddresses(config_));
  if (plan.healthCheck) {
    const bool was = health_.healthy();
    if (auto reconfigured = health_.reconfigure(config_.health); !reconfigured) {
      log_.error("health", "{}; still probing with the settings it had", reconfigured.error());
    }
    if (health_.healthy() != was) {
      onHealthChange(health_.healthy());
    }
  }
  if (plan.healthPolicy || plan.healthCheck) {
    followHealthBinding();
  }
  listener_.peersChanged();
  if (!plan.peersAdded.empty()) {
    scheduleHousekeeping(1s);  // a new session may become stuck before the next planned look
  }
  pushAnnouncements();
}

void Speaker::applyPeers(const config::ReloadPlan& plan,
                         std::map<bgp::IpAddress, std::optional<SessionKey>>& keys) {
  const bool speaking = handoff_.active() && !shuttingDown_;
  // The sessions in config_.peers' order: StatusReport reads the two side by side.
  std::vector<std::unique_ptr<PeerSession>> sessions;
  for (const auto& peer : config_.peers) {
    auto it = std::find_if(peers_.begin(), peers_.end(),
                           [&](const auto& s) { return s && s->address() == peer.address; });
    if (it != peers_.end()) {
      sessions.push_back(std::move(*it));
      continue;
    }
    sessions.push_back(makeSession(peer));
    auto& added = *sessions.back();
    if (auto& key = keys[peer.address]) {
      added.setSessionKey(*key);
    }
    log_.info("peer " + peer.address.toString(), "added by a config reload; {}",
              speaking ? "connecting (the other sessions are untouched)"
                       : "it starts when this instance speaks");
  }
  for (auto& left : peers_) {
    if (!left) {
      continue;
    }
    const std::string address = left->address().toString();
    log_.info("peer " + address, "removed from the config; sending Cease 6/3 \"{}\" and closing "
              "the session (the other sessions are untouched)", kPeerRemoved);
    deferredStart_.erase(left->address());
    PeerSession* raw = left.get();
    retiredPeers_.push_back(std::move(left));
    raw->stop(
        kPeerRemoved,
        [this, raw, peer = raw->address()] {
          asio::post(io_, [this, raw, peer] {
            std::erase_if(retiredPeers_, [raw](const auto& p) { return p.get() == raw; });
            // The Cease is out: now its BFD session goes (AdminDown).
            if (std::erase_if(retiringBfd_, [&](const BfdPeer& r) { return r.address == peer; })) {
              if (auto set = bfd_.setPeers(bfdPeersWithRetiring(config_)); !set) {
                log_.error("bfd", "{}", set.error());  // only removes: opens nothing
              }
            }
          });
        },
        bgp::subcode::kPeerDeconfigured);
  }
  peers_ = std::move(sessions);

  for (const auto& reset : plan.peersReset) {
    PeerSession* session = findSession(reset.peer);
    const auto& peer = *findPeer(config_.peers, reset.peer);
    const std::string why = fmt::format("{}", fmt::join(reset.why, ", "));
    const auto state = session->state();
    const bool open = state == bgp::SessionState::OpenSent ||
                      state == bgp::SessionState::OpenConfirm ||
                      state == bgp::SessionState::Established;
    log_.warn("peer " + reset.peer.toString(), "reset for a config change ({}): {}{}", why,
              open ? "sending Cease 6/6 (Other Configuration Change) and connecting again with "
                     "the new settings"
                   : "connecting again with the new settings",
              !reset.bfdChanged ? ""
              : peer.bfd.enabled
                  ? "; its BFD session is replaced, and the VIPs wait for it to be Up"
                  : "; BFD is off for it now");
    session->reconfigure(peer, sessionConfigFor(config_, peer, jitterSeed()), keys[reset.peer],
                         fmt::format("vipd: config change: {}", why));
    if (reset.bfdChanged) {
      if (peer.bfd.enabled) {
        session->useBfdGate();
      } else {
        session->noBfdGate();
      }
    }
  }
  // Every session takes the new attributes and watched VIPs (a no-op where nothing changed, and
  // for the sessions just reset or added, which have them already).
  for (size_t i = 0; i < peers_.size(); ++i) {
    const auto wanted = sessionConfigFor(config_, config_.peers[i], 0);
    peers_[i]->setRouteAttributes(wanted.outbound);
    peers_[i]->setWatchedPrefixes(wanted.watchedPrefixes);
  }
  if (plan.routeAttributes) {
    log_.info("config", "route attributes changed: re-announcing to every Established peer with "
              "the new ones (an implicit replace: nothing is withdrawn)");
  }
  if (speaking) {
    for (const auto& peer : plan.peersAdded) {
      findSession(peer.address)->start();
    }
  }
}

void Speaker::applyVips(const config::ReloadPlan& plan) {
  for (const auto& vip : plan.vipsRemoved) {
    removeVip(vip);
  }
  for (const auto& vip : plan.vipsChanged) {
    vips_.addOrUpdate(vip);
  }
  for (const auto& vip : plan.vipsAdded) {
    if (removingVips_.erase(vip.prefix) != 0) {
      log_.info("vip " + vip.prefix.toString(), "added again before it was unbound: kept");
    } else {
      log_.info("vip " + vip.prefix.toString(), "added by a config reload; binding it, then "
                "announcing it once bound (and the health gate allows)");
    }
    vips_.addOrUpdate(vip);
  }
  if (!plan.vipsAdded.empty() && mayBind()) {
    vips_.bind();
  }
}

void Speaker::removeVip(const bgp::Prefix& vip) {
  const std::string subject = "vip " + vip.toString();
  log_.info(subject, "removed from the config; withdrawing it from every peer, then unbinding it "
            "once they have acknowledged (at most drain.timeout {}, then drain.unbindDelay {})",
            config::formatDuration(config_.drain.timeout),
            config::formatDuration(config_.drain.unbindDelay));
  auto& removal = removingVips_[vip];
  removal = std::make_unique<UnbindAfterWithdraw>(io_, config_.drain);
  // The withdrawal goes out first (the caller pushes every announcement after the plan); then
  // the rest of a drain: the peers' acknowledgements, drain.unbindDelay, the unbind.
  asio::post(io_, [this, vip] {
    auto it = removingVips_.find(vip);
    if (it == removingVips_.end()) {
      return;  // added again meanwhile
    }
    it->second->start(
        {.acknowledged = [this] { return unacknowledgedPeers().empty(); },
         .still = [this, vip] { return removingVips_.count(vip) != 0; },
         .unbind =
             [this, vip] {
               // Only the instance that speaks owns the addresses (a standby leaves them alone).
               const bool owner = handoff_.active();
               vips_.remove(vip, owner);
               if (instanceLock_ != nullptr) {
                 instanceLock_->releaseVip(vip);
               }
               log_.info("vip " + vip.toString(), "{}: removed from the config",
                         owner ? "withdrawn and unbound"
                               : "forgotten (this instance does not speak)");
               // Not from inside its own timer's handler.
               asio::post(io_, [this, vip] {
                 removingVips_.erase(vip);
                 pushAnnouncements();
               });
             }});
  });
}

void Speaker::reloadFailed(std::string error, std::string_view trigger) {
  ++configLoads_.reloadFailures;
  configLoads_.lastReloadAt = utcNow();
  configLoads_.lastReloadTrigger = trigger;
  configLoads_.lastReloadResult = "failed";
  configLoads_.lastReloadSuccessful = false;
  configLoads_.lastReloadError = std::move(error);
}

void Speaker::recordReload(const ReloadOutcome& outcome, std::string_view trigger) {
  for (const auto& change : outcome.applied) {
    log_.info("config", "{} changed from {} to {}: applied", change.path, change.before,
              change.after);
  }
  for (const auto& p : outcome.pending) {
    log_.warn("config", "{} changed from {} to {}: {}; still running with {}", p.change.path,
              p.change.before, p.change.after, p.reason, p.change.before);
  }
  ++(outcome.failedSome ? configLoads_.reloadFailures : configLoads_.reloads);
  configLoads_.lastReloadAt = utcNow();
  configLoads_.lastReloadTrigger = trigger;
  if (!outcome.applied.empty()) {
    configLoads_.loadedAt = configLoads_.lastReloadAt;
    configLoads_.lastApplied = outcome.applied;
  }
  configLoads_.pending = outcome.pending;
  if (outcome.pending.empty()) {
    configLoads_.lastReloadResult = outcome.applied.empty() ? "nothing to apply" : "applied";
  } else {
    configLoads_.lastReloadResult = outcome.applied.empty() ? "pending restart" : "partly applied";
  }
  configLoads_.lastReloadSuccessful = !outcome.failedSome;
  configLoads_.lastReloadError.clear();
  if (outcome.failedSome) {
    for (const auto& p : outcome.pending) {
      if (p.reason != "needs a restart") {
        configLoads_.lastReloadError = fmt::format("{}: {}", p.change.path, p.reason);
        break;
      }
    }
  }
  // The doctor's checks again, over what runs now (a new VIP must be in the certificate too).
  doctor_.run(config_, fmt::format("reload ({})", trigger));
}

nlohmann::json Speaker::configStatus() const {
  const auto& c = configLoads_;
  nlohmann::json applied = nlohmann::json::array();
  for (const auto& change : c.lastApplied) {
    applied.push_back(changeJson(change));
  }
  nlohmann::json pending = nlohmann::json::array();
  for (const auto& p : c.pending) {
    pending.push_back({{"key", p.change.path},
                       {"running", p.change.before},
                       {"file", p.change.after},
                       {"reason", p.reason}});
  }
  nlohmann::json out{{"loadedAt", c.loadedAt},
                     {"lastReloadSuccessful", c.lastReloadSuccessful},
                     {"reloads", c.reloads},
                     {"reloadFailures", c.reloadFailures},
                     {"lastApplied", std::move(applied)},
                     {"pendingRestart", std::move(pending)}};
  if (!c.lastReloadAt.empty()) {
    out["lastReloadAt"] = c.lastReloadAt;
    out["lastReloadTrigger"] = c.lastReloadTrigger;
    out["lastReloadResult"] = c.lastReloadResult;
  }
  if (!c.lastReloadSuccessful) {
    out["lastReloadError"] = c.lastReloadError;
  }
  if (!configWatch_.is_null()) {
    out["watch"] = configWatch_;
  }
  return out;
}

}  // namespace vipd::daemon
