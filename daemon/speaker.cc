#include "daemon/speaker.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <random>

#include "daemon/base/asio_address.h"
#include "daemon/base/port_bind_error.h"

namespace vipd::daemon {
namespace {

using namespace std::chrono_literals;

// After a VIP is lost, wait this long before binding it again, so the fabric sees the withdraw
// settle instead of a flap, and an operator removing the address by hand is not fought in a loop.
constexpr auto kRebindDelay = 1s;
// A full re-read of the kernel now and then, in case a change notification was missed; it also
// retries bindings that failed.
constexpr auto kReconcileInterval = 10s;

bgp::SessionConfig sessionConfigFor(const config::Config& config, const config::Peer& peer,
                                    uint64_t seed) {
  bgp::SessionConfig s;
  s.localAsn = config.localAsn;
  s.peerAsn = peer.asn;
  s.routerId = config.routerId.v4Value();
  s.holdTime = std::chrono::duration_cast<std::chrono::seconds>(peer.holdTime);
  s.keepaliveTime = std::chrono::duration_cast<std::chrono::seconds>(peer.keepaliveTime);
  s.connectRetryTime = peer.connectRetryTime;
  s.maxConnectRetryTime = config::kMaxConnectRetry;
  s.openHoldTime = peer.openHoldTime;
  bool anyV6 = false;
  for (const auto& vip : config.vips) {
    anyV6 = anyV6 || vip.prefix.address.isV6();
  }
  bool anyV4 = !anyV6 || std::any_of(config.vips.begin(), config.vips.end(),
                                     [](const auto& v) { return v.prefix.address.isV4(); });
  if (anyV4) {
    s.families.push_back(bgp::kIpv4Unicast);
  }
  if (anyV6) {
    s.families.push_back(bgp::kIpv6Unicast);
  }
  s.outbound.ebgp = peer.asn != config.localAsn;
  s.outbound.localAsn = config.localAsn;
  if (peer.sourceAddress && peer.sourceAddress->isV4()) {
    s.outbound.nextHopV4 = peer.sourceAddress;
  }
  if (peer.nextHopIpv6) {
    s.outbound.nextHopV6 = peer.nextHopIpv6;
  } else if (peer.sourceAddress && peer.sourceAddress->isV6()) {
    s.outbound.nextHopV6 = peer.sourceAddress;
  }
  for (const auto& c : config.communities) {
    s.outbound.communities.push_back(c.wire());
  }
  s.outbound.largeCommunities = config.largeCommunities;
  s.jitterSeed = seed;
  if (config.mode != config::Mode::Standalone) {
    // Graceful restart exists for the handoff between the two instances (and upgrades); a
    // standalone vipd never needs a peer to keep a path it is not announcing.
    s.gracefulRestartTime =
        std::chrono::duration_cast<std::chrono::seconds>(config.handoff.restartTime);
  }
  return s;
}

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
      withdrawnState_(config_.control.stateDir),
      kernelEvents_(io),
      rebindTimer_(io),
      reconcileTimer_(io),
      housekeepingTimer_(io),
      drainTimer_(io),
      bfd_(io, log, bfdPeers(), [this](const BfdStateChange& change) { onBfdChange(change); }),
      deferredStartTimer_(io),
      lockTimer_(io) {
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
  lastStuckWarning_.resize(peers_.size());
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
  // Only read the kernel here: binding is the Active instance's job (becomeActive()).
  logBindEvents(binder_.refresh());
  // A duplicate, so the descriptor object can close its copy without closing the monitor's.
  kernelEvents_.assign(::dup(monitor_.fd()));
  watchKernel();
  scheduleReconcile();
  scheduleHousekeeping();
  if (auto checking = health_.start(); !checking) {
    return checking;
  }
  return startRole();
}

tl::expected<void, std::string> Speaker::becomeActive(bool restarting, std::string_view why) {
  role_ = Role::Active;
  handoff_.state.clear();
  handoff_.lastRestarting = restarting;
  // Read again on every takeover: the other instance may have been withdrawn meanwhile.
  auto persisted = withdrawnState_.load();
  if (!persisted) {
    return tl::unexpected(persisted.error());
  }
  withdrawn_ = *persisted;
  withdrawnPersisted_ = true;
  if (config_.listen.enabled && !listener_) {
    if (auto listening = openBgpListener(); !listening) {
      return listening;
    }
  }
  // Before binding: a BFD port conflict must stop vipd without leaving addresses behind.
  if (auto started = bfd_.start(); !started) {
    return started;
  }
  if (withdrawn_) {
    // Drained for replacement: do not bind or announce until `vipctl announce`.
    log_.warn("speaker",
              "node is withdrawn since {} ({}); not binding or announcing any VIP until "
              "`vipctl announce`",
              withdrawn_->since, withdrawn_->reason);
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
  pushAnnouncements();
  return {};
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
  if (role_ != Role::Active || shuttingDown_ || change.peerIndex >= peers_.size()) {
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

tl::expected<void, std::string> Speaker::openBgpListener() {
  namespace ip = asio::ip;
  const auto& a = config_.listen.address;
  ip::tcp::endpoint endpoint(toAsio(a), config_.listen.port);
  boost::system::error_code ec;
  listener_.emplace(io_);
  listener_->open(endpoint.protocol(), ec);
  if (!ec) {
    listener_->set_option(ip::tcp::acceptor::reuse_address(true), ec);
    listener_->bind(endpoint, ec);
  }
  // When every peer uses GTSM, the listener requires TTL 255 itself: the kernel then checks the
  // SYN and whatever arrives before accept() too (accepted sockets inherit it). Otherwise each
  // accepted socket gets it from PeerSession::acceptIncoming(), after the handshake.
  bool gtsmOnly = std::all_of(config_.peers.begin(), config_.peers.end(),
                              [](const config::Peer& p) { return p.ttlSecurity; });
  if (!ec && gtsmOnly && !config_.peers.empty()) {
    // A dual-stack (IPv6) listener also takes IPv4 peers: it needs the options of both.
    std::vector<bgp::IpAddress> families{bgp::IpAddress::v4(0u)};
    if (!a.isV4()) {
      families.push_back(bgp::IpAddress::v6({}));
    }
    for (const auto& family : families) {
      if (auto set = applySessionTtl(listener_->native_handle(), family, kGtsmTtl); !set) {
        return tl::unexpected(fmt::format("BGP listener: {}", set.error()));
      }
    }
  }
  for (const auto& peer : peers_) {
    if (!ec && peer->sessionKey()) {
      auto keyed = applySessionKey(listener_->native_handle(), peer->address(), *peer->sessionKey());
      if (!keyed) {
        return tl::unexpected(keyed.error());
      }
    }
  }
  if (!ec) {
    listener_->listen(asio::socket_base::max_listen_connections, ec);
  }
  if (ec) {
    return tl::unexpected(portBindError(
        fmt::format("cannot listen for BGP on {} port {}", a.toString(), config_.listen.port),
        config_.listen.port, ec.value(), ec.message(),
        {.inUse = "another BGP daemon may own the port; set listen.enabled: false to dial out only",
         .unprivilegedPort = "set listen.port above 1023"}));
  }
  log_.info("listener", "accepting BGP connections from configured peers on {} port {}",
            a.toString(), config_.listen.port);
  acceptNext();
  return {};
}

void Speaker::acceptNext() {
  listener_->async_accept([this](const boost::system::error_code& ec,
                                 asio::ip::tcp::socket socket) {
    if (ec == asio::error::operation_aborted || shuttingDown_) {
      return;
    }
    if (!ec) {
      boost::system::error_code remoteError;
      auto remote = socket.remote_endpoint(remoteError);
      PeerSession* match = nullptr;
      if (!remoteError) {
        auto from = fromAsio(remote.address());
        for (auto& peer : peers_) {
          if (peer->address() == from) {
            match = peer.get();
          }
        }
        if (match) {
          match->acceptIncoming(std::move(socket));
        } else {
          log_.warn("listener", "refused a BGP connection from {}, which is not a configured peer",
                    from.toString());
        }
      }
    }
    acceptNext();
  });
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
  if (rebindPending_ || shuttingDown_ || withdrawn_ || drain_ || role_ != Role::Active) {
    return;
  }
  rebindPending_ = true;
  rebindTimer_.expires_after(kRebindDelay);
  rebindTimer_.async_wait([this](const boost::system::error_code& ec) {
    rebindPending_ = false;
    if (ec || shuttingDown_ || withdrawn_ || drain_ || role_ != Role::Active) {
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
    bool mayBind = role_ == Role::Active && !withdrawn_ && !drain_;
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
  if (shuttingDown_ || !health_.healthy() || role_ != Role::Active) {
    return {};
  }
  if (drain_) {
    // Until its withdraw step, a drain keeps announcing (with GRACEFUL_SHUTDOWN) even though a
    // `vipctl withdraw` has already persisted the withdrawn state.
    return drain_->withdrawSent ? std::set<bgp::Prefix>{} : binder_.announceable();
  }
  if (withdrawn_) {
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
  if (healthy && !withdrawn_ && !drain_) {
    refreshAndAnnounce("health gate opened");
  } else {
    pushAnnouncements();
  }
}

}  // namespace vipd::daemon
