// The Speaker's side of a live reload (issue 29): reads the keys, tries what could fail first
// (so a failure leaves the running value in place and is reported), plans once
// (config::planReload()), then carries the plan out step by step; the return-path check's port
// is the one step that can still fail, and rolls back alone. speaker.h says what each change
// does.
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

std::string_view secretOf(const std::optional<SessionKey>& key) {
  return key ? std::string_view(key->secret) : std::string_view();
}

// Whether `path` ("peers[192.0.2.1].holdTime") is `key` ("peers[192.0.2.1]") or inside it.
bool within(std::string_view path, std::string_view key) {
  return path == key || (path.starts_with(key) && path[key.size()] == '.');
}

// The changes left pending once `applied` runs, each with why: a key of `failed` it is within
// (not applied), or a restart.
std::vector<PendingChange> pendingOf(const config::Config& applied, const config::Config& next,
                                     const std::map<std::string, std::string>& failed) {
  std::vector<PendingChange> out;
  for (const auto& change : config::diffConfig(applied, next)) {
    PendingChange pending{change, PendingChange::Why::NeedsRestart, ""};
    for (const auto& [key, why] : failed) {
      if (within(change.path, key)) {
        pending.why = PendingChange::Why::NotApplied;
        pending.detail = why;
      }
    }
    out.push_back(std::move(pending));
  }
  return out;
}

}  // namespace

std::vector<std::string> Speaker::keyFiles() const {
  std::vector<std::string> out;
  for (const auto& peer : config_.peers) {
    if (peer.passwordFile) {
      out.push_back(*peer.passwordFile);
    }
  }
  return out;
}

tl::expected<ReloadOutcome, std::string> Speaker::reload(const config::Config& next,
                                                        std::string_view trigger) {
  // 1. Every key, by content: an unreadable one is a config that does not load.
  PeerKeys keys;
  std::set<bgp::IpAddress> keysChanged;
  if (auto read = readKeys(next, keys, keysChanged); !read) {
    reloadFailed(read.error(), trigger);
    return tl::unexpected(read.error());
  }
  // 2. What may fail, before anything changes: each failure keeps the running value and is
  // reported as pending with its reason; the rest of the reload goes on.
  config::Config achievable = next;
  NotApplied failed;
  keepUnusableHealthCheck(next, achievable, failed);
  lockAddedVips(next, achievable, failed);
  guardReload(achievable, failed);
  openBfd(achievable, failed);
  // 3. The plan, once: what changes now, and what waits for a restart.
  const auto previousReturnPath = config_.returnPath;
  auto plan = config::planReload(config_, achievable, keysChanged);
  // 4. Carried out.
  carryOut(plan, keys);
  if (plan.returnPath) {
    restartReturnPath(previousReturnPath, plan, failed);
  }
  ReloadOutcome outcome{plan.live, pendingOf(plan.applied, next, failed), !failed.empty()};
  recordReload(outcome, trigger);
  return outcome;
}

tl::expected<void, std::string> Speaker::readKeys(const config::Config& next, PeerKeys& keys,
                                                  std::set<bgp::IpAddress>& changed) const {
  for (size_t i = 0; i < next.peers.size(); ++i) {
    const auto& peer = next.peers[i];
    std::optional<SessionKey> key;
    if (peer.passwordFile) {
      auto read = readSessionKey(*peer.passwordFile);
      if (!read) {
        return tl::unexpected(
            fmt::format("peers[{}] ({}): {}", i, peer.address.toString(), read.error()));
      }
      key = std::move(*read);
    }
    if (const PeerSession* session = peers_.find(peer.address);
        session != nullptr && secretOf(session->sessionKey()) != secretOf(key)) {
      changed.insert(peer.address);
    }
    keys[peer.address] = std::move(key);
  }
  return {};
}

void Speaker::keepUnusableHealthCheck(const config::Config& next, config::Config& achievable,
                                      NotApplied& failed) const {
  auto checked = HealthChecker::check(next.health);
  if (checked ||
      config::sameHealthCheck(config_.health, config::liveConfig(config_, next).health)) {
    return;
  }
  // The checker keeps its settings; what the policy and the sessions read still applies.
  failed["health"] = checked.error();
  config::Health kept = config_.health;
  kept.degrade = next.health.degrade;
  kept.onFailure = next.health.onFailure;
  kept.unbindWhenUnhealthy = next.health.unbindWhenUnhealthy;
  achievable.health = kept;
}

void Speaker::openBfd(config::Config& achievable, NotApplied& failed) {
  auto bfd = peers_.updateBfd(config::liveConfig(config_, achievable));
  if (bfd) {
    return;
  }
  // A new BFD session could not open its socket (a port another daemon holds): the peers whose
  // BFD changed keep what they run, a peer added with BFD is not added.
  for (auto& peer : achievable.peers) {
    const config::Peer* before = config::findPeer(config_.peers, peer.address);
    if (before != nullptr && before->bfd != peer.bfd) {
      failed[fmt::format("peers[{}].bfd", peer.address.toString())] = bfd.error();
      peer.bfd = before->bfd;
    } else if (before == nullptr && peer.bfd.enabled) {
      failed[fmt::format("peers[{}]", peer.address.toString())] = bfd.error();
    }
  }
  std::erase_if(achievable.peers, [&](const config::Peer& p) {
    return config::findPeer(config_.peers, p.address) == nullptr && p.bfd.enabled;
  });
  if (auto again = peers_.updateBfd(config::liveConfig(config_, achievable)); !again) {
    log_.error("bfd", "{}", again.error());  // nothing new to open: cannot happen
  }
}

void Speaker::restartReturnPath(const config::ReturnPath& previous, config::ReloadPlan& plan,
                                NotApplied& failed) {
  const bool speaking = handoff_.active() && !shuttingDown_;
  auto restarted = returnPath_.restart(speaking);
  if (restarted) {
    return;
  }
  // The old settings' port is free again now: run on with them.
  failed["returnPath"] = restarted.error();
  config_.returnPath = previous;
  plan.applied.returnPath = previous;
  std::erase_if(plan.live,
                [](const config::ConfigChange& c) { return within(c.path, "returnPath"); });
  auto again = returnPath_.restart(speaking);
  log_.error("return-path", "{}; {}", restarted.error(),
             again ? "running on with the settings it had"
                   : "the check is not running: " + again.error());
}

void Speaker::lockAddedVips(const config::Config& next, config::Config& achievable,
                            NotApplied& failed) {
  if (instanceLock_ == nullptr) {
    return;
  }
  for (const auto& vip : next.vips) {
    const bool known = std::any_of(config_.vips.begin(), config_.vips.end(),
                                   [&](const config::Vip& v) { return v.prefix == vip.prefix; });
    if (known || announcer_.removing(vip.prefix)) {
      continue;  // locked since start, or still (until it is unbound)
    }
    if (auto locked = instanceLock_->lockVip(vip.prefix, io_, log_); !locked) {
      failed[fmt::format("vips[{}]", vip.prefix.toString())] = locked.error();
      std::erase_if(achievable.vips, [&](const config::Vip& v) { return v.prefix == vip.prefix; });
    }
  }
}

void Speaker::guardReload(config::Config& achievable, NotApplied& failed) {
  // What the reload would take off the fabric: the VIPs it removes, or every VIP when no
  // running peer is left to announce them to.
  const bool everyPeer = std::none_of(config_.peers.begin(), config_.peers.end(), [&](auto& p) {
    return config::findPeer(achievable.peers, p.address) != nullptr;
  });
  auto removed = [&](const bgp::Prefix& vip) {
    return std::none_of(achievable.vips.begin(), achievable.vips.end(),
                        [&](const config::Vip& v) { return v.prefix == vip; });
  };
  // The one withdraw guard, as for vipctl withdraw at its request. Without a fabric view it
  // cannot check (as for vipctl withdraw).
  const auto check = announcer_.checkWithdraw(
      policy::GuardMoment::Request,
      [&](const bgp::Prefix& vip) { return everyPeer || removed(vip); });
  if (!check.refusal) {
    return;
  }
  // Refused: what would fall short keeps running as it is, pending with the reason, until a
  // reload finds other nodes announcing it (or `vipctl withdraw --force` takes the node off).
  const std::string why = fmt::format(
      "kept: it would leave fewer than guard.minAnnouncers ({}) other nodes announcing {}",
      config_.guard.minAnnouncers, check.shortfall);
  if (everyPeer) {
    for (const auto& peer : config_.peers) {
      failed[fmt::format("peers[{}]", peer.address.toString())] = why;
    }
    achievable.peers = config_.peers;
  }
  for (const auto& [vip, remaining] : check.shortOf) {
    auto running = std::find_if(config_.vips.begin(), config_.vips.end(),
                                [&](const config::Vip& v) { return v.prefix == vip; });
    if (removed(vip) && running != config_.vips.end()) {
      failed[fmt::format("vips[{}]", vip.toString())] = why;
      achievable.vips.push_back(*running);
    }
  }
  log_.warn("config", "the reload would take this node off the fabric where it is needed; {}; "
            "the rest of the reload goes on", why);
}

void Speaker::carryOut(const config::ReloadPlan& plan, PeerKeys& keys) {
  if (plan.empty()) {
    return;
  }
  if (plan.returnPath) {
    returnPath_.stop();  // it reads config_.returnPath: stopped before that changes
  }
  config_ = plan.applied;  // every collaborator that reads config_ sees what runs from here on
  peers_.apply(plan, keys);
  returnPath_.setAddresses(peerAddresses(config_), vipAddresses(config_));
  Announcer::ReloadChanges changes{plan.vipsRemoved, plan.vipsChanged, plan.vipsAdded,
                                   plan.healthPolicy || plan.healthCheck, std::nullopt};
  if (plan.healthCheck) {
    const bool was = health_.healthy();
    if (auto reconfigured = health_.reconfigure(config_.health); !reconfigured) {
      log_.error("health", "{}; still probing with the settings it had", reconfigured.error());
    }
    if (health_.healthy() != was) {
      changes.healthFlipped = health_.healthy();
    }
  }
  // The Announcer once, for everything the reload changes in what is announced and bound.
  announcer_.applyReload(changes, [this](const bgp::Prefix& vip) {
    if (instanceLock_ != nullptr) {
      instanceLock_->releaseVip(vip);
    }
  });
  listener_.peersChanged();
  if (!plan.peersAdded.empty()) {
    scheduleHousekeeping(1s);  // a new session may become stuck before the next planned look
  }
}

void Speaker::reloadFailed(std::string error, std::string_view trigger) {
  reloads_.failed(std::move(error), trigger, utcNow());
}

void Speaker::recordReload(const ReloadOutcome& outcome, std::string_view trigger) {
  for (const auto& change : outcome.applied) {
    log_.info("config", "{} changed from {} to {}: applied", change.path, change.before,
              change.after);
  }
  for (const auto& p : outcome.pending) {
    log_.warn("config", "{} changed from {} to {}: {}; still running with {}", p.change.path,
              p.change.before, p.change.after, p.reason(), p.change.before);
  }
  reloads_.record(outcome, trigger, utcNow());
  // The doctor's checks again, over what runs now (a new VIP must be in the certificate too).
  doctor_.run(config_, fmt::format("reload ({})", trigger));
}

}  // namespace vipd::daemon
