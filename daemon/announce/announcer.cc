#include "daemon/announce/announcer.h"

#include <sys/socket.h>

#include <algorithm>

#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include "config/duration.h"

namespace vipd::daemon {

using namespace std::chrono_literals;

std::vector<bgp::Prefix> interfacePrefixes(netlink::AddressTable& table) {
  std::vector<bgp::Prefix> out;
  auto addresses = table.addresses();
  if (!addresses) {
    return out;
  }
  for (const auto& entry : *addresses) {
    const auto& a = entry.address;
    bgp::Prefix p;
    if (a.family == AF_INET) {
      p.address = bgp::IpAddress::v4({a.bytes[0], a.bytes[1], a.bytes[2], a.bytes[3]});
    } else if (a.family == AF_INET6) {
      p.address = bgp::IpAddress::v6(a.bytes);
    } else {
      continue;
    }
    p.length = a.prefixLength;
    out.push_back(p);
  }
  return out;
}

Announcer::Announcer(asio::io_context& io, const config::Config& config,
                     const std::vector<std::unique_ptr<PeerSession>>& peers,
                     netlink::AddressTable& table, netlink::Monitor& monitor, const Logger& log,
                     AnnouncerHost& host)
    : io_(io),
      config_(config),
      peers_(peers),
      table_(table),
      log_(log),
      host_(host),
      vips_(io, table, monitor, config.vips, log, *this),
      fabricSettleTimer_(io),
      withdrawConfirmation_(config.guard.confirmTime, config.guard.confirmTime,
                            config.routerId.v4Value()),
      withdrawConfirmTimer_(io),
      healthUnbind_(io, config.drain) {}

// ---- deciding ----

policy::Decision Announcer::decide(const std::map<bgp::Prefix, policy::VipView>& view) const {
  const auto& gate = *gate_;
  policy::PolicyInputs in;
  in.active = gate.active;
  in.shuttingDown = gate.shuttingDown;
  in.operatorWithdrawn = gate.withdrawn;
  in.draining = gate.draining;
  in.drainWithdrawSent = gate.drainWithdrawSent;
  in.healthy = gate.healthy;
  in.healthEverPassed = healthEverPassed_;
  in.degradeOnFailure = config_.health.onFailure == config::Health::OnFailure::Degrade;
  in.unbindWhenUnhealthy = config_.health.onFailure == config::Health::OnFailure::Withdraw &&
                           config_.health.unbindWhenUnhealthy;
  for (const auto& vip : config_.vips) {
    in.vips.insert(vip.prefix);
  }
  for (const auto& [vip, timer] : removing_) {
    in.removing.insert(vip);
  }
  in.bound = vips_.binder().announceable();
  for (const auto& vip : in.vips) {
    if (host_.returnPathBlocks(vip)) {
      in.returnPathBlocks.insert(vip);
    }
  }
  const auto now = std::chrono::steady_clock::now();
  for (const auto& [vip, v] : view) {
    in.fabric[vip] = {v.available, v.othersServing(), withdrawConfirmation_.confirmed(vip, now)};
  }
  return policy::decide(in);
}

std::map<bgp::Prefix, policy::VipView> Announcer::buildView() const {
  std::vector<policy::SessionView> sessions;
  for (const auto& peer : peers_) {
    policy::SessionView s;
    s.peer = peer->address();
    s.established = peer->state() == bgp::SessionState::Established;
    s.settled = s.established && peer->inState() >= kFabricSettle;
    if (auto status = peer->negotiated()) {
      s.peerAsn = status->peerAsn;
      for (const auto& family : status->addPathReceive) {
        s.addPath.insert(family.afi);
      }
    }
    s.ownNextHops = ownAddresses_;
    for (const auto& [prefix, byId] : peer->watchedPaths()) {
      auto& paths = s.paths[prefix];
      for (const auto& [id, p] : byId) {
        paths.push_back({id, p.nextHop, p.originatorId, p.clusterList, p.asPath, p.localPref,
                         p.communities});
      }
    }
    sessions.push_back(std::move(s));
  }
  std::set<bgp::Prefix> vips;
  std::set<bgp::Prefix> self;
  for (const auto& vip : config_.vips) {
    vips.insert(vip.prefix);
    if (advertised(vip.prefix)) {
      self.insert(vip.prefix);
    }
  }
  policy::FabricIdentity identity{config_.routerId.v4Value(), {}, config_.localAsn,
                                  config_.guard.nodesShareAsn};
  for (const auto& c : config_.health.degrade.communities) {
    identity.degradeCommunities.push_back(c.wire());
  }
  return policy::buildFabricView(sessions, vips, self, identity);
}

const policy::Decision& Announcer::refresh() const {
  gate_ = host_.gate();
  view_ = buildView();
  decision_ = decide(view_);
  ++decisionsTaken_;
  return decision_;
}

const policy::Decision& Announcer::decision() const {
  if (!gate_ || *gate_ != host_.gate()) {
    refresh();
  }
  return decision_;
}

const std::map<bgp::Prefix, policy::VipView>& Announcer::fabricView() const {
  (void)decision();
  return view_;
}

void Announcer::announce() {
  refresh();
  const auto now = std::chrono::steady_clock::now();
  withdrawConfirmation_.observe(decision_.wantingWithdrawal(), now);
  if (auto next = withdrawConfirmation_.nextDeadline(now); next && !host_.gate().shuttingDown) {
    withdrawConfirmTimer_.expires_at(*next);
    withdrawConfirmTimer_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec && !host_.gate().shuttingDown) {
        announce();  // the withdrawal goes out before any unbind waits for its ack
        followHealthBinding();
      }
    });
  }
  logDecisionChanges(decision_);
  const auto announced = decision_.announced();
  const auto degraded = decision_.degraded();
  for (const auto& peer : peers_) {
    peer->setAnnouncements(announced, degraded);
  }
  // What the fabric shows now, this node's own path as the peers have it from here on.
  view_ = buildView();
}

bool Announcer::advertised(const bgp::Prefix& vip) const {
  return std::any_of(peers_.begin(), peers_.end(), [&](const auto& peer) {
    return peer->state() == bgp::SessionState::Established && peer->advertised().count(vip) != 0;
  });
}

void Announcer::logDecisionChanges(const policy::Decision& d) {
  for (const auto& [vip, v] : d.vips) {
    const std::string subject = "vip " + vip.toString();
    if (v.heldByNeverZero && loggedHeld_.insert(vip).second) {
      log_.warn(subject, "{}", v.reason);
    } else if (!v.heldByNeverZero && loggedHeld_.erase(vip) != 0) {
      log_.info(subject, "no longer held by the never-zero rule: {}",
                v.announce == policy::Announce::None
                    ? v.reason + " (another node serves it)"
                    : std::string(policy::announceName(v.announce)));
    }
    if (v.unguardedWithdrawal && loggedUnguarded_.insert(vip).second) {
      log_.warn(subject, "{}", v.reason);
    } else if (!v.unguardedWithdrawal) {
      loggedUnguarded_.erase(vip);
    }
  }
}

void Announcer::onFabricChange() {
  const auto gate = host_.gate();
  if (gate.shuttingDown || !gate.active) {
    return;
  }
  // A session that just opened counts once it has settled: look again then.
  for (const auto& peer : peers_) {
    if (peer->state() == bgp::SessionState::Established && peer->inState() < kFabricSettle) {
      fabricSettleTimer_.expires_after(kFabricSettle - peer->inState() + 10ms);
      fabricSettleTimer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) {
          onFabricChange();
        }
      });
      break;
    }
  }
  ownAddresses_.clear();
  for (const auto& a : interfacePrefixes(table_)) {
    ownAddresses_.insert(a.address);
  }
  for (const auto& vip : config_.vips) {
    ownAddresses_.erase(vip.prefix.address);
  }
  refresh();
  for (const auto& [vip, view] : view_) {
    for (const auto& line : view.duplicateRouterId) {
      if (loggedDuplicates_.insert(line).second) {
        log_.error("fabric", "{}; fix the router ID of one of them (routerId, or the node file "
                   "`vipd render` wrote)", line);
      }
    }
  }
  // The never-zero rule may now keep a VIP bound that the failing health check had unbound, or
  // let it go again.
  followHealthBinding();
  vips_.refreshAndAnnounce("the fabric's view changed");
}

// ---- the withdraw guard ----

policy::GuardCheck Announcer::checkWithdraw(
    policy::GuardMoment moment, const std::function<bool(const bgp::Prefix&)>& takesOff) const {
  policy::GuardSelf self{config_.routerId.v4Value(), {}};
  for (const auto& peer : config_.peers) {
    for (const auto& hop : {peer.sourceAddress, peer.nextHopIpv6}) {
      if (hop) {
        self.nextHops.insert(*hop);
      }
    }
  }
  auto announced = refresh().announced();
  if (takesOff) {
    std::erase_if(announced, [&](const bgp::Prefix& vip) { return !takesOff(vip); });
  }
  return policy::checkWithdraw(view_, announced, config_.guard.minAnnouncers, self, moment);
}

// ---- binding ----

bool Announcer::mayBind() const { return decision().mayBind; }

void Announcer::takeAddresses() {
  if (refresh().unbindForHealth) {
    // health.unbindWhenUnhealthy: the VIPs are bound once the check passes (onHealthChange).
    log_.info("speaker", "not binding the VIPs until the health check passes "
              "(health.unbindWhenUnhealthy)");
    vips_.unbindOwned();
    vipsHeldForHealth_ = true;
  } else {
    vips_.bind();
  }
}

void Announcer::bindAndAnnounce() {
  vips_.bind();
  announce();
}

bool Announcer::degradedNow() const {
  return config_.health.onFailure == config::Health::OnFailure::Degrade && !host_.gate().healthy;
}

bool Announcer::healthOwnsBinding() const {
  const auto gate = host_.gate();
  return gate.active && !gate.withdrawn && !gate.draining && !gate.shuttingDown;
}

void Announcer::onHealthChange(bool healthy) {
  if (healthy) {
    healthEverPassed_ = true;
    healthUnbind_.cancel();
    const auto gate = host_.gate();
    if (!gate.withdrawn && !gate.draining && gate.active) {
      if (vipsHeldForHealth_) {
        // Bound before the path returns: never a path to a node that lacks the address. Only
        // what the health gate unbound: the first opening at start precedes startSpeaking(),
        // whose checks (a BFD port conflict, say) must pass before anything is bound.
        vipsHeldForHealth_ = false;
        vips_.bind();
      }
      vips_.refreshAndAnnounce("health gate opened");
    }
    return;
  }
  if (degradedNow()) {
    log_.warn("health", "degrading instead of withdrawing (health.onFailure degrade): the VIPs "
              "stay announced with {} (iBGP: LOCAL_PREF {}), so the fabric prefers healthy "
              "nodes and, if every node fails, still reaches this one",
              config_.health.degrade.prepend == 1
                  ? std::string("the AS prepended once more")
                  : fmt::format("the AS prepended {} more times", config_.health.degrade.prepend),
              config_.health.degrade.localPref);
  }
  announce();
  if (decision().unbindForHealth && healthOwnsBinding()) {
    unbindForHealthOnceAcknowledged();
  }
}

void Announcer::followHealthBinding() {
  if (!healthOwnsBinding()) {
    return;
  }
  const bool unbind = decision().unbindForHealth;
  if (vipsHeldForHealth_ && !unbind) {
    vipsHeldForHealth_ = false;
    healthUnbind_.cancel();
    vips_.bind();
  } else if (!vipsHeldForHealth_ && unbind && !healthUnbind_.running()) {
    unbindForHealthOnceAcknowledged();
  }
}

// The withdrawal went out with announce(); the rest is a drain's (UnbindAfterWithdraw).
void Announcer::unbindForHealthOnceAcknowledged() {
  healthUnbind_.start(
      {.acknowledged = [this] { return unacknowledgedPeers().empty(); },
       .still = [this] { return decision().unbindForHealth && healthOwnsBinding(); },
       .unbind =
           [this] {
             log_.info("health", "removing the VIPs this node added while its health check "
                       "fails (health.unbindWhenUnhealthy), so node-local clients reach a "
                       "healthy node through the fabric; bound again before they are announced");
             vips_.unbindOwned();
             vipsHeldForHealth_ = true;
             announce();
           }});
}

// ---- a reload's VIPs ----

void Announcer::applyReload(const ReloadChanges& changes,
                            const std::function<void(const bgp::Prefix&)>& released) {
  for (const auto& vip : changes.vipsRemoved) {
    removeVip(vip, [released, vip] {
      if (released) {
        released(vip);
      }
    });
  }
  for (const auto& vip : changes.vipsChanged) {
    vips_.addOrUpdate(vip);
  }
  for (const auto& vip : changes.vipsAdded) {
    if (keepVip(vip.prefix)) {
      log_.info("vip " + vip.prefix.toString(), "added again before it was unbound: kept");
    } else {
      log_.info("vip " + vip.prefix.toString(), "added by a config reload; binding it, then "
                "announcing it once bound (and the health gate allows)");
    }
    vips_.addOrUpdate(vip);
  }
  // Decided again over the new VIPs and health settings (changes the gate does not show).
  if (!changes.vipsAdded.empty() || changes.healthSettings) {
    if (refresh().mayBind && !changes.vipsAdded.empty()) {
      vips_.bind();
    }
  }
  if (changes.healthFlipped) {
    onHealthChange(*changes.healthFlipped);  // it announces
  }
  if (changes.healthSettings) {
    followHealthBinding();
  }
  announce();
}

void Announcer::removeVip(const bgp::Prefix& vip, std::function<void()> forgotten) {
  const std::string subject = "vip " + vip.toString();
  log_.info(subject, "removed from the config; withdrawing it from every peer, then unbinding it "
            "once they have acknowledged (at most drain.timeout {}, then drain.unbindDelay {})",
            config::formatDuration(config_.drain.timeout),
            config::formatDuration(config_.drain.unbindDelay));
  auto& removal = removing_[vip];
  removal = std::make_unique<UnbindAfterWithdraw>(io_, config_.drain);
  // The withdrawal goes out first (the caller announces after the plan); then the rest of a
  // drain: the peers' acknowledgements, drain.unbindDelay, the unbind.
  asio::post(io_, [this, vip, forgotten = std::move(forgotten)] {
    auto it = removing_.find(vip);
    if (it == removing_.end()) {
      return;  // added again meanwhile
    }
    it->second->start(
        {.acknowledged = [this] { return unacknowledgedPeers().empty(); },
         .still = [this, vip] { return removing_.count(vip) != 0; },
         .unbind =
             [this, vip, forgotten] {
               // Only the instance that speaks owns the addresses (a standby leaves them alone).
               const bool owner = host_.gate().active;
               vips_.remove(vip, owner);
               if (forgotten) {
                 forgotten();
               }
               log_.info("vip " + vip.toString(), "{}: removed from the config",
                         owner ? "withdrawn and unbound"
                               : "forgotten (this instance does not speak)");
               // Not from inside its own timer's handler.
               asio::post(io_, [this, vip] {
                 removing_.erase(vip);
                 announce();
               });
             }});
  });
}

std::set<bgp::Prefix> Announcer::announceableVips() const {
  auto vips = vips_.binder().announceable();
  for (const auto& [vip, timer] : removing_) {
    vips.erase(vip);
  }
  return vips;
}

std::vector<std::string> Announcer::unacknowledgedPeers() const {
  std::vector<std::string> out;
  for (const auto& peer : peers_) {
    if (peer->state() == bgp::SessionState::Established && peer->unacknowledgedBytes() > 0) {
      out.push_back(fmt::format("{} has {} bytes unacknowledged", peer->address().toString(),
                                peer->unacknowledgedBytes()));
    }
  }
  return out;
}

void Announcer::stop() {
  vips_.stop();
  healthUnbind_.cancel();
  fabricSettleTimer_.cancel();
  withdrawConfirmTimer_.cancel();
}

}  // namespace vipd::daemon
