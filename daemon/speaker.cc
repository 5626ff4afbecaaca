#include "daemon/speaker.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <random>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "daemon/lifecycle/host_lock.h"
#include "daemon/session/session_config.h"
#include "daemon/session/session_key.h"

namespace vipd::daemon {
namespace {

using namespace std::chrono_literals;

// After a VIP is lost, wait this long before binding it again, so the fabric sees the withdraw
// settle instead of a flap, and an operator removing the address by hand is not fought in a loop.
constexpr auto kRebindDelay = 1s;
// A full re-read of the kernel now and then, in case a change notification was missed; it also
// retries bindings that failed.
constexpr auto kReconcileInterval = 10s;
constexpr auto kHousekeepingInterval = 1s;
constexpr std::string_view kDrainCommunication = "vipd: node draining";

}  // namespace

Speaker::Speaker(asio::io_context& io, config::Config config, netlink::AddressTable& table,
                 netlink::Monitor& monitor, const Logger& log)
    : io_(io),
      config_(std::move(config)),
      table_(table),
      monitor_(monitor),
      log_(log),
      binder_(table, config_.vips),
      control_(
          io, config_.control.socket, config_.control.group,
          [this](const nlohmann::json& request, ControlServer::Reply reply) {
            handleControl(request, std::move(reply));
          },
          log),
      health_(io, config_.health, log, [this](bool healthy, const ProbeResult&) {
        onHealthChange(healthy);
      }),
      http_(io, log, [this](std::string_view target) { return handleHttp(target); }),
      listener_(io, config_, peers_, log),
      kernelEvents_(io),
      rebindTimer_(io),
      reconcileTimer_(io),
      housekeepingTimer_(io),
      drainer_(io, config_.drain, config_.control.stateDir, log, *this),
      handoff_(io, config_, log, *this),
      bfd_(io, log, bfdPeers(), [this](const BfdStateChange& change) { onBfdChange(change); }),
      deferredStartTimer_(io),
      report_(config_, peers_, binder_, health_, bfd_, drainer_, handoff_) {
  std::random_device entropy;
  for (const auto& peer : config_.peers) {
    uint64_t seed = (uint64_t{entropy()} << 32) | entropy();
    peers_.push_back(std::make_unique<PeerSession>(
        io_, peer, sessionConfigFor(config_, peer, seed), log_, [this] {
          // Checked again right before a session's first announcement.
          refreshAndAnnounce("a session is about to be established");
          return intendedAnnouncements();
        }));
    if (peer.bfd.enabled) {
      peers_.back()->useBfdGate();
    }
  }
  deferredStart_.resize(peers_.size());
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
  for (size_t i = 0; i < peers_.size(); ++i) {
    if (const auto& file = config_.peers[i].passwordFile) {
      auto key = readSessionKey(*file);
      if (!key) {
        return tl::unexpected(fmt::format("peers[{}] ({}): {}", i,
                                          config_.peers[i].address.toString(), key.error()));
      }
      peers_[i]->setSessionKey(std::move(*key));
    }
  }
  if (auto opened = control_.open(); !opened) {
    return opened;
  }
  if (auto listening = http_.listen(config_.metrics.address.toString(), config_.metrics.port);
      !listening) {
    return listening;
  }
  // Only read the kernel here: binding is the Active instance's job (startSpeaking()).
  logBindEvents(binder_.refresh());
  // A duplicate, so the descriptor object can close its copy without closing the monitor's.
  kernelEvents_.assign(::dup(monitor_.fd()));
  watchKernel();
  scheduleReconcile();
  scheduleHousekeeping();
  if (auto checking = health_.start(); !checking) {
    return checking;
  }
  return handoff_.start();
}

tl::expected<void, std::string> Speaker::startSpeaking(bool restarting, std::string_view why) {
  // Read again on every takeover: the other instance may have been withdrawn meanwhile.
  if (auto loaded = drainer_.loadWithdrawn(); !loaded) {
    return loaded;
  }
  if (config_.listen.enabled && !listener_.isOpen()) {
    if (auto listening = listener_.open(); !listening) {
      return listening;
    }
  }
  // Before binding: a BFD port conflict must stop vipd without leaving addresses behind.
  if (auto started = bfd_.start(); !started) {
    return started;
  }
  if (const auto& withdrawn = drainer_.withdrawn()) {
    // Drained for replacement: do not bind or announce until `vipctl announce`.
    log_.warn("speaker",
              "node is withdrawn since {} ({}); not binding or announcing any VIP until "
              "`vipctl announce`",
              withdrawn->since, withdrawn->reason);
    logBindEvents(binder_.refresh());
  } else {
    logBindEvents(binder_.bind());
  }
  warnAboutArp();
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
      deferredStart_[i] = true;
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
  for (auto& peer : peers_) {
    peer->stop("vipd: cannot start speaking", nullptr);
  }
  bfd_.stop(nullptr);
}

void Speaker::yieldSessions(std::function<void(std::vector<nlohmann::json>)> done) {
  rebindTimer_.cancel();
  listener_.close();
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

std::vector<BfdPeer> Speaker::bfdPeers() const {
  std::vector<BfdPeer> out;
  for (size_t i = 0; i < config_.peers.size(); ++i) {
    const auto& p = config_.peers[i];
    if (p.bfd.enabled) {
      out.push_back({i, p.address, p.sourceAddress, p.bfd});
    }
  }
  return out;
}

void Speaker::startDeferredPeers(std::string_view why) {
  for (size_t i = 0; i < peers_.size(); ++i) {
    if (deferredStart_[i]) {
      deferredStart_[i] = false;
      log_.warn("peer " + config_.peers[i].address.toString(), "opening the BGP session: {}",
                why);
      peers_[i]->start();
    }
  }
}

void Speaker::onBfdChange(const BfdStateChange& change) {
  if (!handoff_.active() || shuttingDown_ || change.peerIndex >= peers_.size()) {
    return;  // a late report from a BFD run that has been stopped
  }
  auto& peer = *peers_[change.peerIndex];
  const std::string subject = "peer " + peer.address().toString();
  if (change.to == bfd::State::Up) {
    if (deferredStart_[change.peerIndex]) {
      deferredStart_[change.peerIndex] = false;
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
                             bfd::stateName(change.to), bfd::diagnosticName(change.diagnostic)));
  }
}

void Speaker::watchKernel() {
  kernelEvents_.async_wait(asio::posix::stream_descriptor::wait_read,
                           [this](const boost::system::error_code& ec) {
                             if (ec || shuttingDown_) {
                               return;
                             }
                             onKernelChanges();
                             watchKernel();
                           });
}

void Speaker::onKernelChanges() {
  auto started = std::chrono::steady_clock::now();
  auto changes = monitor_.readChanges();
  if (!changes) {
    log_.error("netlink", "reading kernel changes failed: {}; re-reading every address",
               changes.error().toString());
  }
  bool relevant = !changes;
  for (const auto& change : changes ? *changes : std::vector<netlink::Change>{}) {
    relevant = relevant || binder_.concerns(change);
  }
  if (!relevant) {
    return;
  }
  auto before = binder_.announceable();
  refreshAndAnnounce("the kernel reported a change");
  auto after = binder_.announceable();
  if (before != after) {
    auto took = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - started);
    log_.info("speaker",
              "announcements updated {}us after the kernel's notification; {} of {} VIP(s) "
              "announceable",
              took.count(), after.size(), config_.vips.size());
  }
}

void Speaker::refreshAndAnnounce(std::string_view why) {
  auto events = binder_.refresh();
  logBindEvents(events);
  pushAnnouncements();
  bool lost = std::any_of(events.begin(), events.end(),
                          [](const BindEvent& e) { return e.kind == BindEvent::Kind::Lost; });
  if (lost) {
    log_.debug("speaker", "binding lost ({}); binding again in {}ms", why,
               std::chrono::duration_cast<std::chrono::milliseconds>(kRebindDelay).count());
    scheduleRebind();
  }
}

void Speaker::scheduleRebind() {
  // A withdrawn or draining node has unbound its VIPs on purpose: never fight that. An instance
  // that is not speaking leaves the addresses to the one that is.
  if (rebindPending_ || shuttingDown_ || drainer_.withdrawn() || drainer_.draining() || !handoff_.active()) {
    return;
  }
  rebindPending_ = true;
  rebindTimer_.expires_after(kRebindDelay);
  rebindTimer_.async_wait([this](const boost::system::error_code& ec) {
    rebindPending_ = false;
    if (ec || shuttingDown_ || drainer_.withdrawn() || drainer_.draining() || !handoff_.active()) {
      return;
    }
    logBindEvents(binder_.bind());
    pushAnnouncements();
  });
}

void Speaker::scheduleReconcile() {
  reconcileTimer_.expires_after(kReconcileInterval);
  reconcileTimer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || shuttingDown_) {
      return;
    }
    bool mayBind = handoff_.active() && !drainer_.withdrawn() && !drainer_.draining();
    logBindEvents(mayBind ? binder_.bind() : binder_.refresh());
    pushAnnouncements();
    scheduleReconcile();
  });
}

void Speaker::logBindEvents(const std::vector<BindEvent>& events) {
  for (const auto& e : events) {
    std::string subject = "vip " + e.vip.toString();
    switch (e.kind) {
      case BindEvent::Kind::Bound:
      case BindEvent::Kind::InterfaceCreated:
      case BindEvent::Kind::Unbound:
        log_.info(subject, "{}", e.text);
        break;
      case BindEvent::Kind::Lost:
        log_.warn(subject, "{}", e.text);
        break;
      case BindEvent::Kind::Problem:
        log_.error(subject, "{}", e.text);
        break;
    }
  }
}

void Speaker::warnAboutArp() const {
  // A VIP on a non-loopback interface is answered for in ARP on every interface unless
  // arp_ignore >= 1, and may be used as an ARP source unless arp_announce >= 2: the node would
  // then attract the VIP's traffic at layer 2, outside BGP's control.
  auto readSysctl = [](const std::string& name) -> std::optional<int> {
    std::ifstream in("/proc/sys/net/ipv4/conf/all/" + name);
    int value = 0;
    if (in >> value) {
      return value;
    }
    return std::nullopt;
  };
  auto arpIgnore = readSysctl("arp_ignore");
  auto arpAnnounce = readSysctl("arp_announce");
  for (const auto& binding : binder_.status()) {
    const auto& vip = binding.vip;
    // Only VIPs actually on a non-loopback interface matter; a missing one is reported already.
    bool onInterface =
        binding.state == BindState::Bound || binding.state == BindState::InterfaceDown;
    if (vip.interface == "lo" || !vip.prefix.address.isV4() || !onInterface) {
      continue;
    }
    if (arpIgnore.value_or(0) < 1 || arpAnnounce.value_or(0) < 2) {
      log_.warn("vip " + vip.prefix.toString(),
                "on {} with net.ipv4.conf.all.arp_ignore={} and arp_announce={}: this node may "
                "answer ARP for the VIP on the fabric side; set arp_ignore=1 and arp_announce=2",
                vip.interface, arpIgnore.value_or(-1), arpAnnounce.value_or(-1));
    }
  }
}

std::set<bgp::Prefix> Speaker::intendedAnnouncements() const {
  if (shuttingDown_ || !health_.healthy() || !handoff_.active()) {
    return {};
  }
  if (drainer_.draining()) {
    // Until its withdraw step, a drain keeps announcing (with GRACEFUL_SHUTDOWN) even though a
    // `vipctl withdraw` has already persisted the withdrawn state.
    return drainer_.withdrawSent() ? std::set<bgp::Prefix>{} : binder_.announceable();
  }
  if (drainer_.withdrawn()) {
    return {};
  }
  return binder_.announceable();
}

void Speaker::pushAnnouncements() {
  auto announce = intendedAnnouncements();
  for (auto& peer : peers_) {
    peer->setAnnouncements(announce);
  }
}

void Speaker::onHealthChange(bool healthy) {
  // The checker has logged the transition; make the announcements follow it at once.
  if (healthy && !drainer_.withdrawn() && !drainer_.draining()) {
    refreshAndAnnounce("health gate opened");
  } else {
    pushAnnouncements();
  }
}

void Speaker::scheduleHousekeeping() {
  housekeepingTimer_.expires_after(kHousekeepingInterval);
  housekeepingTimer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || shuttingDown_) {
      return;
    }
    report_.warnAboutStuckPeers(log_);
    scheduleHousekeeping();
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

void Speaker::unbindOwned() { logBindEvents(binder_.unbindOwned()); }

void Speaker::bindAndAnnounce() {
  logBindEvents(binder_.bind());
  pushAnnouncements();
}

void Speaker::handleControl(const nlohmann::json& request, ControlServer::Reply reply) {
  const auto command = request["command"].get<std::string>();
  if (command == "withdraw" && !request.value("persist", true) && !handoff_.active()) {
    // A pod's preStop hook on an instance that is not speaking: there is nothing to drain, and
    // failing the hook would only raise a FailedPreStopHook event.
    reply({{"ok", true},
           {"acknowledged", true},
           {"detail", fmt::format("this instance is {} and announces nothing; nothing to drain",
                                  handoff_.roleName())}});
    return;
  }
  if ((command == "withdraw" || command == "announce") && !handoff_.active()) {
    auto holder = handoff_.holder();
    reply({{"error",
            fmt::format("this {} instance is {} and announces nothing; run vipctl against the "
                        "instance that speaks BGP{}",
                        config::modeName(config_.mode), handoff_.roleName(),
                        holder ? fmt::format(" ({}, --socket {})", describe(*holder),
                                             holder->controlSocket)
                               : std::string())}});
    return;
  }
  if (command == "status") {
    reply(status());
  } else if (command == "handoff-check") {
    handoff_.handleCheck(request, std::move(reply));
  } else if (command == "handoff-yield") {
    handoff_.handleYield(request, std::move(reply));
  } else if (command == "withdraw") {
    drainer_.handleWithdraw(request, std::move(reply));
  } else if (command == "announce") {
    drainer_.handleAnnounce(std::move(reply));
  } else {
    reply({{"error",
            fmt::format("unknown command '{}'; known: status, withdraw, announce, "
                        "handoff-check, handoff-yield",
                        command)}});
  }
}

SpeakerIntent Speaker::intent() const { return {intendedAnnouncements(), shuttingDown_}; }

nlohmann::json Speaker::status() const { return report_.status(intent()); }

HttpResponse Speaker::handleHttp(std::string_view target) {
  if (target == "/metrics") {
    metrics_.update(status());
    return {200, "text/plain; version=0.0.4", metrics_.serialize()};
  }
  if (target == "/healthz") {
    return {200, "text/plain", "ok\n"};
  }
  if (target == "/readyz") {
    auto reasons = report_.notReadyReasons(intent());
    if (reasons.empty()) {
      return {200, "text/plain", "ok\n"};
    }
    return {503, "text/plain", fmt::format("not ready: {}\n", fmt::join(reasons, "; "))};
  }
  return {404, "text/plain", "not found; try /metrics, /healthz or /readyz\n"};
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
  rebindTimer_.cancel();
  reconcileTimer_.cancel();
  housekeepingTimer_.cancel();
  kernelEvents_.cancel();
  health_.stop();
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
