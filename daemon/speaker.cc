#include "daemon/speaker.h"

#include "daemon/control/request.h"

#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <random>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "daemon/lifecycle/host_lock.h"
#include "daemon/session/config.h"
#include "daemon/session/key.h"

namespace vipd::daemon {
namespace {

using namespace std::chrono_literals;

// How long a session is Established before its fabric view counts as complete: a peer sends what
// it holds right after the session opens (milliseconds here); this leaves a loaded one room.
constexpr auto kFabricSettle = 2s;
constexpr std::string_view kDrainCommunication = "vipd: node draining";

// A listener's address as the config spells it: 127.0.0.1:9472, [::1]:9472.
std::string hostPort(const bgp::IpAddress& address, uint16_t port) {
  return address.isV6() ? fmt::format("[{}]:{}", address.toString(), port)
                        : fmt::format("{}:{}", address.toString(), port);
}

// Every address of this node with its prefix length (for the return-path relay policy: the
// node networks and this node's own addresses). Empty when the kernel cannot be read.
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

}  // namespace

std::vector<bgp::IpAddress> Speaker::peerAddresses(const config::Config& config) {
  std::vector<bgp::IpAddress> out;
  for (const auto& peer : config.peers) {
    out.push_back(peer.address);
  }
  return out;
}

std::vector<bgp::IpAddress> Speaker::vipAddresses(const config::Config& config) {
  std::vector<bgp::IpAddress> out;
  for (const auto& vip : config.vips) {
    out.push_back(vip.prefix.address);
  }
  return out;
}

Speaker::Speaker(asio::io_context& io, config::Config config, netlink::AddressTable& table,
                 netlink::Monitor& monitor, const Logger& log)
    : io_(io),
      config_(std::move(config)),
      table_(table),
      monitor_(monitor),
      log_(log),
      vips_(io, table, monitor, config_.vips, log, *this),
      control_(
          io, config_.control.socket, config_.control.group,
          [this](const nlohmann::json& request, ControlServer::Reply reply) {
            handleControl(request, std::move(reply));
          },
          log),
      instanceControl_(
          config_.control.instanceSocket
              ? std::make_unique<ControlServer>(
                    io, *config_.control.instanceSocket, config_.control.group,
                    [this](const nlohmann::json& request, ControlServer::Reply reply) {
                      handleControl(request, std::move(reply));
                    },
                    log)
              : nullptr),
      health_(io, config_.health, log, [this](bool healthy, const CallResult&) {
        onHealthChange(healthy);
      }),
      http_(io, log,
            [this](std::string_view target) {
              return handleHttp(target, config_.metrics.health ? Endpoints::Metrics
                                                               : Endpoints::All);
            }),
      listener_(io, config_, peers_, log),
      housekeepingTimer_(io),
      drainer_(io, config_.drain, config_.control.stateDir, log, *this),
      handoff_(io, config_, log, *this),
      healthUnbind_(io, config_.drain),
      returnPath_(io, config_.returnPath, peerAddresses(config_), vipAddresses(config_), log,
                  {.vips =
                       [this] {
                         // Not a VIP a reload removed, while it waits to be unbound.
                         auto vips = vips_.binder().announceable();
                         for (const auto& [vip, timer] : removingVips_) {
                           vips.erase(vip);
                         }
                         return vips;
                       },
                   .announced = [this](const bgp::Prefix& vip) { return announced(vip); },
                   .onChange = [this] { pushAnnouncements(); },
                   .interfaceAddresses = [this] { return interfacePrefixes(table_); },
                   .fabricAnnouncers =
                       [this](const bgp::Prefix& vip) {
                         // The other nodes the fabric holds a path from: witnesses to ask.
                         std::vector<bgp::IpAddress> out;
                         auto view = fabricView();
                         if (auto it = view.find(vip); it != view.end()) {
                           for (const auto& a : it->second.announcers) {
                             if (!a.self) {
                               out.push_back(a.nextHop);
                             }
                           }
                         }
                         return out;
                       }}),
      fabricSettleTimer_(io),
      withdrawConfirmation_(policy::kWithdrawConfirmBase, policy::kWithdrawConfirmJitter,
                            config_.routerId.v4Value()),
      withdrawConfirmTimer_(io),
      doctor_(io, log),
      bfd_(io, log, bfdPeers(), [this](const BfdStateChange& change) { onBfdChange(change); }),
      deferredStartTimer_(io),
      report_(config_, peers_, vips_.binder(), health_, bfd_, drainer_, handoff_) {
  for (const auto& peer : config_.peers) {
    peers_.push_back(makeSession(peer));
  }
  if (config_.metrics.health) {
    healthHttp_.emplace(
        io, log,
        [this](std::string_view target) { return handleHttp(target, Endpoints::Health); },
        HttpServerOptions{.name = "health", .purpose = "the health endpoints"});
  }
  configLoads_.loadedAt = utcNow();
}

tl::expected<void, std::string> Speaker::start() {
  if (!config_.allowNonLocalRouterId) {
    auto addresses = table_.addresses();
    if (!addresses) {
      return tl::unexpected(addresses.error().toString());
    }
    if (auto problem = checkRouterIdIsLocal(config_.routerId, *addresses)) {
      return tl::unexpected(*problem);
    }
  }
  // The same reading `vipd validate` does (main.cc), so it refuses every file this refuses.
  auto keys = readSessionKeys(config_.peers);
  if (!keys) {
    std::string problems;
    for (const auto& error : keys.error()) {
      problems += fmt::format("{}{}: {}", problems.empty() ? "" : "; ", error.path, error.message);
    }
    return tl::unexpected(problems);
  }
  for (size_t i = 0; i < peers_.size(); ++i) {
    if ((*keys)[i]) {
      peers_[i]->setSessionKey(std::move(*(*keys)[i]));
    }
  }
  fitClientLimits();
  if (instanceControl_) {
    if (auto opened = instanceControl_->open(); !opened) {
      return opened;
    }
  }
  // A daemonset instance started beside the one it replaces (a rollout with maxSurge) finds the
  // node's control socket and the listeners held by it: it takes them over once that one has
  // yielded (openListeners() in startSpeaking()). Anything else in the way is an error now.
  if (auto opened = openListeners(/*mayWait=*/config_.mode == config::Mode::DaemonSet);
      !opened) {
    return opened;
  }
  // Only read the kernel here: binding is the Active instance's job (startSpeaking()).
  vips_.start();
  scheduleHousekeeping(StatusReport::kHousekeepingInterval);
  if (auto checking = health_.start(); !checking) {
    return checking;
  }
  if (auto role = handoff_.start(); !role) {
    return role;
  }
  // After the role is taken, so this instance's own listener and sessions are its own in the
  // checks' view of port 179.
  doctor_.run(config_, "start");
  return {};
}

tl::expected<void, std::string> Speaker::openListeners(bool mayWait) {
  auto inUse = [&](bool listenerInUse, std::string_view what) {
    if (mayWait && listenerInUse) {
      log_.info("speaker", "{} is held by another daemonset instance (the pod this one replaces, "
                "or a conflict): taking it over once this instance speaks",
                what);
      return true;
    }
    return false;
  };
  if (!control_.bound()) {
    if (!(mayWait && ControlServer::answering(io_, control_.path()))) {
      if (auto opened = control_.open(); !opened) {
        return opened;
      }
    } else {
      inUse(true, fmt::format("the node's control socket {}", control_.path()));
    }
  }
  if (!http_.listening()) {
    if (auto listening = http_.listen(config_.metrics.address.toString(), config_.metrics.port);
        !listening && !inUse(http_.lastListenInUse(), "the metrics port")) {
      return listening;
    }
  }
  if (healthHttp_ && !healthHttp_->listening()) {
    if (auto listening = healthHttp_->listen(config_.metrics.health->address.toString(),
                                             config_.metrics.health->port);
        !listening && !inUse(healthHttp_->lastListenInUse(), "the health endpoints' port")) {
      return listening;
    }
  }
  return {};
}

tl::expected<void, std::string> Speaker::startSpeaking(bool restarting, std::string_view why) {
  // A daemonset instance taking over from the one it replaces takes its listeners now (that one
  // closed them when it yielded); in the way now, they are an error.
  if (auto opened = openListeners(/*mayWait=*/false); !opened) {
    return opened;
  }
  // Read again on every takeover: the other instance may have been withdrawn meanwhile. A bad
  // file does not stop vipd: it leaves the node withdrawn, and says why (status, /readyz, log).
  drainer_.loadWithdrawn();
  if (config_.listen.enabled && !listener_.isOpen()) {
    if (auto listening = listener_.open(); !listening) {
      return listening;
    }
  }
  // Before binding: a BFD port conflict must stop vipd without leaving addresses behind.
  if (auto started = bfd_.start(); !started) {
    return started;
  }
  if (auto checking = returnPath_.start(); !checking) {
    return checking;
  }
  if (const auto& withdrawn = drainer_.withdrawn()) {
    // Drained for replacement: do not bind or announce until `vipctl announce`.
    log_.warn("speaker",
              "node is withdrawn since {} ({}); not binding or announcing any VIP until "
              "`vipctl announce`",
              withdrawn->since, withdrawn->reason);
    // Nor keep any bound: vipd killed during `vipctl withdraw` (persisted before the drain
    // unbinds) leaves its addresses behind. unbindOwned() removes only the addresses vipd added,
    // which it recognises after a restart by the marking it adds them with (deprecated and
    // permanent, see VipBinder): an operator's `ip addr add` of the same address stays.
    vips_.unbindOwned();
  } else if (unbindForHealth()) {
    // health.unbindWhenUnhealthy: the VIPs are bound once the check passes (onHealthChange).
    log_.info("speaker", "not binding the VIPs until the health check passes "
              "(health.unbindWhenUnhealthy)");
    vips_.unbindOwned();
    vipsHeldForHealth_ = true;
  } else {
    vips_.bind();
  }
  if (config_.mode != config::Mode::Standalone) {
    log_.info("speaker", "speaking BGP as the {} instance: {}{}", config::modeName(config_.mode),
              why,
              restarting ? "; sessions reopen as a graceful restart (RFC 4724), so the peers "
                           "keep this node's path"
                         : "");
  }
  startPeers(restarting);
  pushAnnouncements();
  return {};
}

void Speaker::startPeers(bool restarting) {
  bool deferring = false;
  for (size_t i = 0; i < peers_.size(); ++i) {
    peers_[i]->setRestarting(restarting);
    if (restarting && config_.peers[i].bfd.enabled && peers_[i]->bfdGate() == false) {
      deferredStart_.insert(peers_[i]->address());
      deferring = true;
      log_.info("peer " + config_.peers[i].address.toString(),
                "graceful restart: opening the BGP session once BFD is Up, so the End-of-RIB "
                "carries the VIPs");
    } else {
      peers_[i]->start();
    }
  }
  if (deferring) {
    // The peer keeps our path for the restart time; open the session in time whatever BFD does.
    deferredStartTimer_.expires_after(config_.handoff.restartTime / 2);
    deferredStartTimer_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) {
        startDeferredPeers("BFD is not Up after half the graceful-restart time");
      }
    });
  }
}

void Speaker::stopSpeaking() {
  returnPath_.stop();
  for (auto& peer : peers_) {
    peer->stop("vipd: cannot start speaking", nullptr);
  }
  bfd_.stop(nullptr);
}

void Speaker::yieldSessions(bool toSuccessor,
                            std::function<void(std::vector<nlohmann::json>)> done) {
  vips_.cancelRebind();
  listener_.close();
  returnPath_.stop();
  if (toSuccessor) {
    // The daemonset instance that replaces this one serves the node's control socket and the
    // ports from now on; this one keeps only its own socket (control.instanceSocket), which its
    // pod's preStop hook and probes use. The yield request in hand is answered all the same:
    // its caller is that instance, and the answer tells it the sessions are closed.
    control_.handOver();
    http_.close();
    if (healthHttp_) {
      healthHttp_->close();
    }
  }
  if (peers_.empty()) {
    done({});
    return;
  }
  deferredStartTimer_.cancel();
  auto remaining = std::make_shared<size_t>(peers_.size());
  auto results = std::make_shared<std::vector<nlohmann::json>>();
  auto finish = [results, done = std::move(done)]() { done(*results); };
  // The sessions close first (without a NOTIFICATION, so graceful restart keeps our path), then
  // BFD says AdminDown (RFC 5880 6.8.16) so a peer that follows RFC 5882 3.2 does not take the
  // handover for a failure, and the BFD ports are free before the lock is: the daemonset
  // instance binds them as soon as it holds the lock. In this order the session state that
  // decides "the peer keeps our path" is read before any BFD change can close it.
  for (auto& peer : peers_) {
    std::string address = peer->address().toString();
    peer->yield([remaining, results, finish, address, this](bool peerKeepsRoutes) {
      results->push_back({{"address", address}, {"gracefulRestart", peerKeepsRoutes}});
      if (!peerKeepsRoutes) {
        log_.warn("peer " + address,
                  "no graceful restart with this peer: it drops this node's path until the "
                  "daemonset instance announces it again (the other nodes carry the traffic)");
      }
      if (--*remaining == 0) {
        bfd_.stop(finish);
      }
    });
  }
}

std::vector<BfdPeer> Speaker::bfdPeersOf(const config::Config& config) {
  std::vector<BfdPeer> out;
  for (const auto& p : config.peers) {
    if (p.bfd.enabled) {
      out.push_back({p.address, p.sourceAddress, p.bfd});
    }
  }
  return out;
}

std::vector<BfdPeer> Speaker::bfdPeersWithRetiring(const config::Config& config) const {
  auto out = bfdPeersOf(config);
  for (const auto& r : retiringBfd_) {
    if (std::none_of(out.begin(), out.end(), [&](const BfdPeer& p) { return p.address == r.address; })) {
      out.push_back(r);
    }
  }
  return out;
}

void Speaker::startDeferredPeers(std::string_view why) {
  for (auto& peer : peers_) {
    if (deferredStart_.erase(peer->address()) != 0) {
      log_.warn("peer " + peer->address().toString(), "opening the BGP session: {}", why);
      peer->start();
    }
  }
}

void Speaker::onBfdChange(const BfdStateChange& change) {
  PeerSession* session = findSession(change.peer);
  if (!handoff_.active() || shuttingDown_ || session == nullptr) {
    return;  // a late report from a BFD run that has been stopped, or a peer a reload removed
  }
  auto& peer = *session;
  const std::string subject = "peer " + peer.address().toString();
  if (change.to == bfd::State::Up) {
    if (deferredStart_.erase(peer.address()) != 0) {
      log_.info(subject, "BFD is Up: opening the BGP session (graceful restart)");
      peer.start();
    }
    peer.setBfdUp();
    return;
  }
  if (change.to == bfd::State::AdminDown) {
    return;  // our own stop(): the BGP side is being stopped or handed over as well
  }
  // RFC 5882 section 3.2: a peer that signals AdminDown is turning BFD off, not failing; the
  // BGP session stays as it is (and keeps its routes) until BFD comes back or BGP itself fails.
  if (change.remoteState == bfd::State::AdminDown) {
    log_.info(subject, "the peer turned BFD off (AdminDown); keeping the BGP session");
    return;
  }
  if (change.from == bfd::State::Up || change.from == bfd::State::Init) {
    log_.warn(subject, "BFD went {} ({}): closing the BGP session and withholding the VIPs "
              "until BFD is Up again", bfd::stateName(change.to),
              bfd::diagnosticName(change.diagnostic));
    peer.bfdDown(fmt::format("BFD {} -> {} ({})", bfd::stateName(change.from),
                             bfd::stateName(change.to), bfd::diagnosticName(change.diagnostic)),
                 change.diagnostic == bfd::Diagnostic::NeighborSignaledSessionDown);
  }
}

policy::Decision Speaker::decision() const {
  policy::PolicyInputs in;
  in.active = handoff_.active();
  in.shuttingDown = shuttingDown_;
  in.operatorWithdrawn = drainer_.withdrawn().has_value();
  in.draining = drainer_.draining();
  in.drainWithdrawSent = drainer_.withdrawSent();
  in.healthy = health_.healthy();
  in.healthEverPassed = healthEverPassed_;
  in.degradeOnFailure = config_.health.onFailure == config::Health::OnFailure::Degrade;
  in.unbindWhenUnhealthy = config_.health.onFailure == config::Health::OnFailure::Withdraw &&
                           config_.health.unbindWhenUnhealthy;
  for (const auto& vip : config_.vips) {
    in.vips.insert(vip.prefix);
  }
  for (const auto& [vip, timer] : removingVips_) {
    in.removing.insert(vip);
  }
  in.bound = vips_.binder().announceable();
  for (const auto& vip : in.vips) {
    if (returnPath_.blocks(vip)) {
      in.returnPathBlocks.insert(vip);
    }
  }
  const auto now = std::chrono::steady_clock::now();
  for (const auto& [vip, view] : fabricView()) {
    in.fabric[vip] = {view.available, view.othersServing(),
                      withdrawConfirmation_.confirmed(vip, now)};
  }
  return policy::decide(in);
}

std::map<bgp::Prefix, policy::VipView> Speaker::fabricView() const {
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
    if (announced(vip.prefix)) {
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

void Speaker::onFabricChange() {
  if (shuttingDown_ || !handoff_.active()) {
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
  for (const auto& [vip, view] : fabricView()) {
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

void Speaker::followHealthBinding() {
  if (!healthOwnsBinding()) {
    return;
  }
  if (vipsHeldForHealth_ && !unbindForHealth()) {
    vipsHeldForHealth_ = false;
    healthUnbind_.cancel();
    vips_.bind();
  } else if (!vipsHeldForHealth_ && unbindForHealth() && !healthUnbind_.running()) {
    unbindForHealthOnceAcknowledged();
  }
}

void Speaker::logDecisionChanges(const policy::Decision& d) {
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

bool Speaker::announced(const bgp::Prefix& vip) const {
  return std::any_of(peers_.begin(), peers_.end(), [&](const auto& peer) {
    return peer->state() == bgp::SessionState::Established && peer->advertised().count(vip) != 0;
  });
}

void Speaker::pushAnnouncements() {
  const auto d = decision();
  const auto now = std::chrono::steady_clock::now();
  withdrawConfirmation_.observe(d.wantingWithdrawal(), now);
  if (auto next = withdrawConfirmation_.nextDeadline(now); next && !shuttingDown_) {
    withdrawConfirmTimer_.expires_at(*next);
    withdrawConfirmTimer_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec && !shuttingDown_) {
        pushAnnouncements();  // the withdrawal goes out before any unbind waits for its ack
        followHealthBinding();
      }
    });
  }
  logDecisionChanges(d);
  const auto announce = d.announced();
  const auto degraded = d.degraded();
  for (auto& peer : peers_) {
    peer->setAnnouncements(announce, degraded);
  }
}

bool Speaker::degradedNow() const {
  return config_.health.onFailure == config::Health::OnFailure::Degrade && !health_.healthy();
}

bool Speaker::unbindForHealth() const { return decision().unbindForHealth; }

bool Speaker::healthOwnsBinding() const {
  return handoff_.active() && !drainer_.withdrawn() && !drainer_.draining() && !shuttingDown_;
}

void Speaker::onHealthChange(bool healthy) {
  // The checker has logged the transition; make the announcements follow it at once.
  if (healthy) {
    healthEverPassed_ = true;
    healthUnbind_.cancel();
    // The static pod starts before the apiserver it gates: the certificate could not be read at
    // start. Now it answers.
    if (!doctorRanOnHealth_ && doctor_.apiserverUnchecked()) {
      doctorRanOnHealth_ = true;
      doctor_.run(config_, "health gate opened");
    }
    if (!drainer_.withdrawn() && !drainer_.draining() && handoff_.active()) {
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
  pushAnnouncements();
  if (unbindForHealth() && healthOwnsBinding()) {
    unbindForHealthOnceAcknowledged();
  }
}

// The withdrawal went out with pushAnnouncements(); the rest is a drain's (UnbindAfterWithdraw).
void Speaker::unbindForHealthOnceAcknowledged() {
  healthUnbind_.start(
      {.acknowledged = [this] { return unacknowledgedPeers().empty(); },
       .still = [this] { return unbindForHealth() && healthOwnsBinding(); },
       .unbind =
           [this] {
             log_.info("health", "removing the VIPs this node added while its health check "
                       "fails (health.unbindWhenUnhealthy), so node-local clients reach a "
                       "healthy node through the fabric; bound again before they are announced");
             vips_.unbindOwned();
             vipsHeldForHealth_ = true;
             pushAnnouncements();
           }});
}

void Speaker::scheduleHousekeeping(std::chrono::steady_clock::duration after) {
  housekeepingTimer_.expires_after(after);
  housekeepingTimer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || shuttingDown_) {
      return;
    }
    // Sleeps until a session could first be stuck (3 hold times) rather than waking every
    // second: an idle vipd's wake-ups are its CPU cost.
    scheduleHousekeeping(report_.warnAboutStuckPeers(log_));
  });
}

void Speaker::setGracefulShutdown(bool on) {
  for (auto& peer : peers_) {
    peer->setGracefulShutdown(on);
  }
}

std::vector<std::string> Speaker::unacknowledgedPeers() const {
  std::vector<std::string> out;
  for (const auto& peer : peers_) {
    if (peer->state() == bgp::SessionState::Established && peer->unacknowledgedBytes() > 0) {
      out.push_back(fmt::format("{} has {} bytes unacknowledged", peer->address().toString(),
                                peer->unacknowledgedBytes()));
    }
  }
  return out;
}

void Speaker::unbindOwned() { vips_.unbindOwned(); }

void Speaker::bindAndAnnounce() {
  vips_.bind();
  pushAnnouncements();
}

bool Speaker::mayBind() const { return decision().mayBind; }

void Speaker::handleControl(const nlohmann::json& request, ControlServer::Reply reply) {
  const auto& name = request["command"].get_ref<const std::string&>();
  const auto command = commandNamed(name);
  if (!command) {
    reply({{"error", fmt::format("unknown command '{}'; known: {}", name, knownCommands())}});
    return;
  }
  using enum ControlCommand;
  if (*command == Withdraw && !request.value("persist", true) && !handoff_.active()) {
    // A pod's preStop hook on an instance that is not speaking: there is nothing to drain, and
    // failing the hook would only raise a FailedPreStopHook event.
    reply({{"ok", true},
           {"acknowledged", true},
           {"detail", fmt::format("this instance is {} and announces nothing; nothing to drain",
                                  handoff_.roleName())}});
    return;
  }
  if (*command == Withdraw && !request.value("persist", true) && handoff_.handBack(reply)) {
    return;  // the pod's preStop with a static pod on standby: handed back, nothing drained
  }
  if ((*command == Withdraw || *command == Announce) && !handoff_.active()) {
    auto holder = handoff_.holder();
    log_.warn("control", "refused vipctl {}: this instance is {} and announces nothing",
              name, handoff_.roleName());
    reply({{"refused", "role"},
           {"error",
            fmt::format("this {} instance is {} and announces nothing; run vipctl against the "
                        "instance that speaks BGP{}",
                        config::modeName(config_.mode), handoff_.roleName(),
                        holder ? fmt::format(" ({}, --socket {})", describe(*holder),
                                             holder->controlSocket)
                               : std::string())}});
    return;
  }
  switch (*command) {
    case Status:
      reply(status());
      return;
    case HandoffCheck:
      handoff_.handleCheck(request, std::move(reply));
      return;
    case HandoffYield:
      handoff_.handleYield(request, std::move(reply));
      return;
    case Announce:
      drainer_.handleAnnounce(std::move(reply));
      return;
    case Withdraw:
      handleWithdraw(request, std::move(reply));
      return;
  }
}

void Speaker::handleWithdraw(const nlohmann::json& request, ControlServer::Reply reply) {
  auto [refusal, note] = checkWithdraw(policy::GuardMoment::Request);
  const bool force = request.value("force", false);
  if (refusal && !force) {
    log_.warn("control", "vipctl withdraw {}", *refusal);
    reply({{"error", *refusal}, {"refused", "guard"}});
    return;
  }
  if (refusal) {
    log_.warn("control", "vipctl withdraw --force: the guard would have refused ({})",
              *refusal);
  }
  if (!note.empty()) {
    log_.info("control", "vipctl withdraw: guard {}", note);
  }
  // Checked again when the withdrawal would take effect (the others' drains visible by then).
  Drainer::Guard guard;
  if (!force) {
    guard = [this] { return checkWithdraw(policy::GuardMoment::Effect).refusal; };
  }
  drainer_.handleWithdraw(request, [reply = std::move(reply), note = note](nlohmann::json answer) {
    if (!note.empty() && answer.is_object()) {
      answer["guard"] = note;
    }
    reply(std::move(answer));
  }, std::move(guard));
}

SpeakerIntent Speaker::intent() const {
  const auto d = decision();
  SpeakerIntent out{d.announced(), shuttingDown_, {}, {}};
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
    for (const auto& [vip, view] : fabricView()) {
      fabric.insert(fabric.end(), view.duplicateRouterIdConfirmed.begin(),
                    view.duplicateRouterIdConfirmed.end());
    }
    out.speakerChecks.push_back(
        {"fabric", fabric.empty() ? std::nullopt
                                  : std::optional(fmt::format("{}", fmt::join(fabric, "; ")))});
  }
  for (const auto& vip : vips_.binder().announceable()) {
    const auto& v = d.vips.at(vip);
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
  for (const auto& [vip, timer] : removingVips_) {
    out.withheld[vip] = d.vips.at(vip).reason;  // removed from the config, being unbound
  }
  if (vipsHeldForHealth_) {
    // The gate's unbinding, not a lost address, is why these VIPs are absent.
    for (const auto& binding : vips_.binder().status()) {
      if (binding.state != BindState::Bound) {
        out.withheld[binding.vip.prefix] =
            "health gate closed; unbound until the check passes (health.unbindWhenUnhealthy)";
      }
    }
  }
  return out;
}

nlohmann::json Speaker::status() const {
  auto out = report_.status(intent());
  out["listeners"] = {{"control", control_.stats().toJson()},
                      {"metrics", http_.stats().toJson()},
                      {"bgp", listener_.stats().toJson()}};
  if (healthHttp_) {
    out["listeners"]["health"] = healthHttp_->stats().toJson();
  }
  if (instanceControl_) {
    out["listeners"]["instanceControl"] = instanceControl_->stats().toJson();
  }
  out["returnPath"] = returnPath_.status();
  out["fabric"] = fabricStatus(decision());
  out["health"]["onFailure"] =
      config_.health.onFailure == config::Health::OnFailure::Degrade ? "degrade" : "withdraw";
  out["health"]["degraded"] = degradedNow() && handoff_.active();
  out["health"]["vipsUnbound"] = vipsHeldForHealth_ && handoff_.active();
  out["config"] = configStatus();
  out["doctor"] = doctor_.status();
  return out;
}

nlohmann::json Speaker::fabricStatus(const policy::Decision& decision) const {
  nlohmann::json vips = nlohmann::json::object();
  std::vector<std::string> duplicates;
  std::vector<std::string> confirmed;
  for (const auto& [vip, view] : fabricView()) {
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

policy::GuardCheck Speaker::checkWithdraw(policy::GuardMoment moment) const {
  policy::GuardSelf self{config_.routerId.v4Value(), {}};
  for (const auto& peer : config_.peers) {
    for (const auto& hop : {peer.sourceAddress, peer.nextHopIpv6}) {
      if (hop) {
        self.nextHops.insert(*hop);
      }
    }
  }
  return policy::checkWithdraw(fabricView(), intendedAnnouncements(),
                               config_.guard.minAnnouncers, self, moment);
}

// Every capped listener gets its share of the descriptor limit (raised to the hard limit by
// main()), so a flood of clients on every listener at once still leaves descriptors for what
// keeps the VIP announced: sessions, BFD, netlink, the health check, state files.
void Speaker::fitClientLimits() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return;
  }
  constexpr size_t kPreferred = 32;
  const size_t reserved = 64 + 4 * config_.peers.size();
  const size_t listeners = 2 + (healthHttp_ ? 1 : 0) + (instanceControl_ ? 1 : 0);
  const size_t cap = clientLimitFor(limit.rlim_cur, listeners, reserved, kPreferred);
  control_.setMaxClients(cap);
  if (instanceControl_) {
    instanceControl_->setMaxClients(cap);
  }
  http_.setMaxConnections(cap);
  if (healthHttp_) {
    healthHttp_->setMaxConnections(cap);
  }
  if (cap < kPreferred) {
    log_.warn("speaker",
              "the open-file limit {} leaves room for {} client(s) per listener (control socket, "
              "metrics) instead of {}; raise it (ulimit -n, LimitNOFILE=)",
              static_cast<uint64_t>(limit.rlim_cur), cap, kPreferred);
  }
}

HttpResponse Speaker::handleHttp(std::string_view target, Endpoints endpoints) {
  // The query string never changes which endpoint answers (`/metrics?x=1` is /metrics); only
  // /readyz reads it: `?verbose` lists every check, as the apiserver's /readyz does.
  auto [path, query] = splitTarget(target);
  const bool health = path == "/healthz" || path == "/readyz";
  if (endpoints == Endpoints::Metrics && health) {
    const auto& h = *config_.metrics.health;
    return {404, "text/plain",
            fmt::format("not found; {} is served on {} (metrics.healthListen)\n", path,
                        hostPort(h.address, h.port))};
  }
  if (endpoints == Endpoints::Health && !health) {
    return {404, "text/plain",
            path == "/metrics"
                ? fmt::format("not found; /metrics is served on {} (metrics.listen)\n",
                              hostPort(config_.metrics.address, config_.metrics.port))
                : std::string("not found; try /healthz or /readyz\n")};
  }
  if (path == "/metrics") {
    metrics_.update(status());
    return {200, std::string(kPrometheusContentType), metrics_.serialize()};
  }
  if (path == "/healthz") {
    return {200, "text/plain", "ok\n"};
  }
  if (path == "/readyz") {
    const auto now = intent();
    auto checks = report_.readinessChecks(now);
    bool ready = std::none_of(checks.begin(), checks.end(),
                              [](const ReadinessCheck& c) { return c.failure.has_value(); });
    if (hasQueryFlag(query, "verbose")) {
      return {ready ? 200u : 503u, "text/plain", verboseReadiness(checks)};
    }
    if (ready) {
      return {200, "text/plain", "ok\n"};
    }
    return {503, "text/plain",
            fmt::format("not ready: {}\n", fmt::join(report_.notReadyReasons(now), "; "))};
  }
  return {404, "text/plain",
          endpoints == Endpoints::Metrics ? "not found; try /metrics\n"
                                          : "not found; try /metrics, /healthz or /readyz\n"};
}

void Speaker::shutdown(std::function<void()> done) {
  if (shuttingDown_) {
    return;
  }
  if (!handoff_.active()) {
    // Standby or contending: the other instance speaks and owns the addresses. Nothing here is
    // announced, so nothing is withdrawn or unbound.
    shuttingDown_ = true;
    log_.info("speaker", "{} instance stopping: it announces nothing, so nothing is withdrawn "
              "and no address is touched", handoff_.roleName());
    handoff_.stop();
    done();
    return;
  }
  auto stop = [this, done = std::move(done)]() mutable {
    stopPeers(std::string(kDrainCommunication), std::move(done));
  };
  if (drainer_.draining()) {
    // SIGTERM in the middle of `vipctl withdraw`: let that drain finish, then close and exit.
    log_.info("speaker", "SIGTERM during a drain: exiting once the drain has finished");
    drainer_.thenRun(std::move(stop));
    return;
  }
  if (drainer_.withdrawn()) {
    // Already drained by vipctl withdraw: nothing is announced or bound by us; just close.
    log_.info("speaker", "SIGTERM while withdrawn: closing sessions");
    stop();
    return;
  }
  drainer_.start("SIGTERM", std::nullopt, nullptr, std::move(stop));
}

void Speaker::stopPeers(std::string shutdownCommunication, std::function<void()> done) {
  shuttingDown_ = true;
  vips_.stop();
  housekeepingTimer_.cancel();
  health_.stop();
  healthUnbind_.cancel();
  fabricSettleTimer_.cancel();
  withdrawConfirmTimer_.cancel();
  returnPath_.stop();
  listener_.close();
  deferredStartTimer_.cancel();
  if (bfd_.running()) {
    // AdminDown first (RFC 5880 section 6.8.16), so no peer takes the stop for a failure.
    log_.info("speaker", "sending BFD AdminDown to {} peer(s)", bfd_.status().size());
    bfd_.stop([this, shutdownCommunication = std::move(shutdownCommunication),
               done = std::move(done)]() mutable {
      stopPeers(std::move(shutdownCommunication), std::move(done));
    });
    return;
  }
  log_.info("speaker", "sending Cease 6/2 \"{}\" to {} peer(s)", shutdownCommunication,
            peers_.size());
  auto remaining = std::make_shared<size_t>(peers_.size());
  auto finish = std::make_shared<std::function<void()>>(std::move(done));
  if (peers_.empty()) {
    if (*finish) {
      (*finish)();
    }
    return;
  }
  for (auto& peer : peers_) {
    peer->stop(shutdownCommunication, [remaining, finish] {
      if (--*remaining == 0 && *finish) {
        (*finish)();
      }
    });
  }
}

}  // namespace vipd::daemon
