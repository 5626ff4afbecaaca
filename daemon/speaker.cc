#include "daemon/speaker.h"

#include <unistd.h>

#include <fstream>
#include <random>

namespace vipd::daemon {
namespace {

using namespace std::chrono_literals;

// After a VIP is lost, wait this long before binding it again, so the fabric sees the withdraw
// settle instead of a flap, and an operator removing the address by hand is not fought in a loop.
constexpr auto kRebindDelay = 1s;
// A full re-read of the kernel now and then, in case a change notification was missed; it also
// retries bindings that failed.
constexpr auto kReconcileInterval = 10s;

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
      control_(io, config_.control.socket,
               [this](const nlohmann::json& request) { return handleControl(request); }, log),
      kernelEvents_(io),
      rebindTimer_(io),
      reconcileTimer_(io),
      unbindTimer_(io) {
  std::random_device entropy;
  for (const auto& peer : config_.peers) {
    uint64_t seed = (uint64_t{entropy()} << 32) | entropy();
    peers_.push_back(std::make_unique<PeerSession>(
        io_, peer, sessionConfigFor(config_, peer, seed), log_, [this] {
          // Checked again right before a session's first announcement.
          refreshAndAnnounce("a session is about to be established");
          return binder_.announceable();
        }));
  }
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
  if (auto opened = control_.open(); !opened) {
    return opened;
  }
  if (config_.listen.enabled) {
    namespace ip = asio::ip;
    const auto& a = config_.listen.address;
    ip::address address;
    if (a.isV4()) {
      address = ip::address_v4(a.v4Value());
    } else {
      ip::address_v6::bytes_type b;
      std::copy(a.bytes.begin(), a.bytes.end(), b.begin());
      address = ip::address_v6(b);
    }
    ip::tcp::endpoint endpoint(address, config_.listen.port);
    boost::system::error_code ec;
    listener_.emplace(io_);
    listener_->open(endpoint.protocol(), ec);
    if (!ec) {
      listener_->set_option(ip::tcp::acceptor::reuse_address(true), ec);
      listener_->bind(endpoint, ec);
    }
    if (!ec) {
      listener_->listen(asio::socket_base::max_listen_connections, ec);
    }
    if (ec) {
      return tl::unexpected(fmt::format(
          "cannot listen for BGP on {} port {}: {} (another BGP daemon may own the port; set "
          "listen.enabled: false to dial out only)",
          a.toString(), config_.listen.port, ec.message()));
    }
    log_.info("listener", "accepting BGP connections from configured peers on {} port {}",
              a.toString(), config_.listen.port);
    acceptNext();
  }
  logBindEvents(binder_.bind());
  warnAboutArp();
  // A duplicate, so the descriptor object can close its copy without closing the monitor's.
  kernelEvents_.assign(::dup(monitor_.fd()));
  watchKernel();
  scheduleReconcile();
  for (auto& peer : peers_) {
    peer->start();
  }
  pushAnnouncements();
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
        auto text = remote.address().is_v6() && remote.address().to_v6().is_v4_mapped()
                        ? asio::ip::make_address_v4(asio::ip::v4_mapped, remote.address().to_v6())
                              .to_string()
                        : remote.address().to_string();
        for (auto& peer : peers_) {
          if (peer->address().toString() == text) {
            match = peer.get();
          }
        }
        if (match) {
          match->acceptIncoming(std::move(socket));
        } else {
          log_.warn("listener", "refused a BGP connection from {}, which is not a configured peer",
                    text);
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
  if (rebindPending_ || shuttingDown_) {
    return;
  }
  rebindPending_ = true;
  rebindTimer_.expires_after(kRebindDelay);
  rebindTimer_.async_wait([this](const boost::system::error_code& ec) {
    rebindPending_ = false;
    if (ec || shuttingDown_) {
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
    logBindEvents(binder_.bind());
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

void Speaker::pushAnnouncements() {
  std::set<bgp::Prefix> announce;
  if (!shuttingDown_) {
    announce = binder_.announceable();
  }
  for (auto& peer : peers_) {
    peer->setAnnouncements(announce);
  }
}

void Speaker::shutdown(std::string shutdownCommunication, std::function<void()> done) {
  if (shuttingDown_) {
    return;
  }
  shuttingDown_ = true;
  rebindTimer_.cancel();
  reconcileTimer_.cancel();
  kernelEvents_.cancel();
  if (listener_) {
    boost::system::error_code ignored;
    listener_->close(ignored);
  }
  log_.info("speaker", "shutting down: withdrawing every VIP, then Cease 6/2 \"{}\" to {} peer(s)",
            shutdownCommunication, peers_.size());
  pushAnnouncements();  // withdraws: shuttingDown_ empties the set
  // Remove the addresses only after every peer has the withdraw and unbindDelay has passed, so
  // connections already on their way here can finish.
  auto unbind = [this, done = std::move(done)]() mutable {
    unbindTimer_.expires_after(config_.drain.unbindDelay);
    unbindTimer_.async_wait([this, done = std::move(done)](const boost::system::error_code&) {
      logBindEvents(binder_.unbindOwned());
      if (done) {
        done();
      }
    });
  };
  auto remaining = std::make_shared<size_t>(peers_.size());
  auto finish = std::make_shared<std::function<void()>>(std::move(unbind));
  if (peers_.empty()) {
    (*finish)();
    return;
  }
  for (auto& peer : peers_) {
    peer->stop(shutdownCommunication, [remaining, finish] {
      if (--*remaining == 0) {
        (*finish)();
      }
    });
  }
}

nlohmann::json Speaker::handleControl(const nlohmann::json& request) {
  const auto command = request["command"].get<std::string>();
  if (command == "status") {
    return status();
  }
  return {{"error", fmt::format("unknown command '{}'; known: status", command)}};
}

nlohmann::json Speaker::status() const {
  nlohmann::json peers = nlohmann::json::array();
  for (const auto& peer : peers_) {
    auto s = peer->status();
    const auto& c = s.counters;
    nlohmann::json families = nlohmann::json::array();
    nlohmann::json p{
        {"address", s.address},
        {"asn", s.asn},
        {"type", s.ebgp ? "eBGP" : "iBGP"},
        {"state", bgp::sessionStateName(s.state)},
        {"stateFor", formatDuration(s.inState)},
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
    p["families"] = families;
    peers.push_back(std::move(p));
  }
  nlohmann::json vips = nlohmann::json::array();
  for (const auto& binding : binder_.status()) {
    size_t announcedTo = 0;
    for (const auto& peer : peers_) {
      if (peer->status().advertised.count(binding.vip.prefix) != 0) {
        ++announcedTo;
      }
    }
    std::string reason = binding.reason;
    if (reason.empty() && shuttingDown_) {
      reason = "shutting down";
    } else if (reason.empty() && announcedTo == 0) {
      reason = "no Established session";
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
  return {{"version", VIPD_VERSION},
          {"routerId", config_.routerId.toString()},
          {"localAsn", config_.localAsn},
          {"peers", peers},
          {"vips", vips}};
}

}  // namespace vipd::daemon
