#include "daemon/speaker.h"

#include <random>

#include "daemon/vip_presence.h"

namespace vipd::daemon {
namespace {

using namespace std::chrono_literals;

// How often VIP presence is re-read from the kernel. A stopgap until the netlink monitor
// (issue 3) reports changes as they happen; every announcement is checked as well.
constexpr auto kVipCheckInterval = 1s;

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

Speaker::Speaker(asio::io_context& io, config::Config config, const Logger& log)
    : io_(io),
      config_(std::move(config)),
      log_(log),
      control_(io, config_.control.socket,
               [this](const nlohmann::json& request) { return handleControl(request); }, log),
      vipCheckTimer_(io) {
  std::random_device entropy;
  for (const auto& peer : config_.peers) {
    uint64_t seed = (uint64_t{entropy()} << 32) | entropy();
    peers_.push_back(std::make_unique<PeerSession>(io_, peer,
                                                   sessionConfigFor(config_, peer, seed), log_));
  }
  for (const auto& vip : config_.vips) {
    vips_.push_back(VipState{vip});
  }
}

tl::expected<void, std::string> Speaker::start() {
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
  checkVips();
  for (auto& peer : peers_) {
    peer->start();
  }
  pushAnnouncements();
  scheduleVipCheck();
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

void Speaker::scheduleVipCheck() {
  vipCheckTimer_.expires_after(kVipCheckInterval);
  vipCheckTimer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || shuttingDown_) {
      return;
    }
    checkVips();
    pushAnnouncements();
    scheduleVipCheck();
  });
}

void Speaker::checkVips() {
  for (auto& state : vips_) {
    auto presence = checkVipPresence(state.vip.prefix.address, state.vip.interface);
    std::string subject = "vip " + state.vip.prefix.toString();
    bool first = !state.checked;
    if (!presence.interfaceExists && (first || state.interfaceExists)) {
      log_.error(subject, "interface {} does not exist; not announcing this VIP",
                 state.vip.interface);
    } else if (presence.bound && (first || !state.bound)) {
      log_.info(subject, "bound on {}; announcing to peers", state.vip.interface);
    } else if (!presence.bound && first) {
      log_.warn(subject, "not bound on {}; not announcing it until it is (ghost-VIP guard)",
                state.vip.interface);
    } else if (!presence.bound && state.bound) {
      log_.warn(subject, "no longer bound on {}; withdrawing it from every peer (ghost-VIP guard)",
                state.vip.interface);
    }
    state.checked = true;
    state.interfaceExists = presence.interfaceExists;
    state.bound = presence.bound;
  }
}

void Speaker::pushAnnouncements() {
  std::set<bgp::Prefix> announce;
  if (!shuttingDown_) {
    for (const auto& state : vips_) {
      if (state.bound) {
        announce.insert(state.vip.prefix);
      }
    }
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
  vipCheckTimer_.cancel();
  if (listener_) {
    boost::system::error_code ignored;
    listener_->close(ignored);
  }
  log_.info("speaker", "shutting down: withdrawing every VIP, then Cease 6/2 \"{}\" to {} peer(s)",
            shutdownCommunication, peers_.size());
  pushAnnouncements();  // withdraws: shuttingDown_ empties the set
  auto remaining = std::make_shared<size_t>(peers_.size());
  auto finish = std::make_shared<std::function<void()>>(std::move(done));
  if (peers_.empty()) {
    (*finish)();
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
  for (const auto& state : vips_) {
    size_t announcedTo = 0;
    for (const auto& peer : peers_) {
      if (peer->status().advertised.count(state.vip.prefix) != 0) {
        ++announcedTo;
      }
    }
    std::string reason;
    if (!state.interfaceExists) {
      reason = fmt::format("interface {} does not exist", state.vip.interface);
    } else if (!state.bound) {
      reason = fmt::format("address not bound on {}", state.vip.interface);
    } else if (shuttingDown_) {
      reason = "shutting down";
    } else if (announcedTo == 0) {
      reason = "no Established session";
    }
    vips.push_back({{"address", state.vip.prefix.toString()},
                    {"interface", state.vip.interface},
                    {"bound", state.bound},
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
