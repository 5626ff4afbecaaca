#include "daemon/peers/peer_set.h"

#include <algorithm>
#include <random>

#include <boost/asio/post.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "daemon/session/config.h"

namespace vipd::daemon {
namespace {

constexpr std::string_view kPeerRemoved = "vipd: peer removed from the config";

// Seeds a session's timer jitter (RFC 4271 section 10).
uint64_t jitterSeed() {
  std::random_device entropy;
  return (uint64_t{entropy()} << 32) | entropy();
}

}  // namespace

PeerSet::PeerSet(asio::io_context& io, const config::Config& config, BfdService& bfd,
                 const Logger& log, Hooks hooks)
    : io_(io),
      config_(config),
      bfd_(bfd),
      log_(log),
      hooks_(std::move(hooks)),
      deferredStartTimer_(io) {
  for (const auto& peer : config_.peers) {
    sessions_.push_back(make(peer));
  }
}

std::unique_ptr<PeerSession> PeerSet::make(const config::Peer& peer) {
  auto session = std::make_unique<PeerSession>(
      io_, peer, sessionConfigFor(config_, peer, jitterSeed()), log_, hooks_.announceableNow,
      hooks_.onFabricChange);
  if (peer.bfd.enabled) {
    session->useBfdGate();
  }
  return session;
}

PeerSession* PeerSet::find(const bgp::IpAddress& address) const {
  for (const auto& peer : sessions_) {
    if (peer->address() == address) {
      return peer.get();
    }
  }
  return nullptr;
}

void PeerSet::start(bool restarting) {
  bool deferring = false;
  for (size_t i = 0; i < sessions_.size(); ++i) {
    sessions_[i]->setRestarting(restarting);
    if (restarting && config_.peers[i].bfd.enabled && sessions_[i]->bfdGate() == false) {
      deferredStart_.insert(sessions_[i]->address());
      deferring = true;
      log_.info("peer " + config_.peers[i].address.toString(),
                "graceful restart: opening the BGP session once BFD is Up, so the End-of-RIB "
                "carries the VIPs");
    } else {
      sessions_[i]->start();
    }
  }
  if (deferring) {
    // The peer keeps our path for the restart time; open the session in time whatever BFD does.
    deferredStartTimer_.expires_after(config_.handoff.restartTime / 2);
    deferredStartTimer_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) {
        startDeferred("BFD is not Up after half the graceful-restart time");
      }
    });
  }
}

void PeerSet::startDeferred(std::string_view why) {
  for (auto& peer : sessions_) {
    if (deferredStart_.erase(peer->address()) != 0) {
      log_.warn("peer " + peer->address().toString(), "opening the BGP session: {}", why);
      peer->start();
    }
  }
}

void PeerSet::setGracefulShutdown(bool on) {
  for (auto& peer : sessions_) {
    peer->setGracefulShutdown(on);
  }
}

void PeerSet::yield(std::function<void(std::vector<nlohmann::json>)> done) {
  if (sessions_.empty()) {
    done({});
    return;
  }
  deferredStartTimer_.cancel();
  auto remaining = std::make_shared<size_t>(sessions_.size());
  auto results = std::make_shared<std::vector<nlohmann::json>>();
  auto finish = [results, done = std::move(done)]() { done(*results); };
  // The sessions close first (without a NOTIFICATION, so graceful restart keeps our path), then
  // BFD says AdminDown (RFC 5880 6.8.16) so a peer that follows RFC 5882 3.2 does not take the
  // handover for a failure, and the BFD ports are free before the lock is: the daemonset
  // instance binds them as soon as it holds the lock. In this order the session state that
  // decides "the peer keeps our path" is read before any BFD change can close it.
  for (auto& peer : sessions_) {
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

void PeerSet::stop(std::string communication, std::function<void()> done) {
  deferredStartTimer_.cancel();
  if (bfd_.running()) {
    // AdminDown first (RFC 5880 section 6.8.16), so no peer takes the stop for a failure.
    log_.info("speaker", "sending BFD AdminDown to {} peer(s)", bfd_.status().size());
    bfd_.stop([this, communication = std::move(communication), done = std::move(done)]() mutable {
      stop(std::move(communication), std::move(done));
    });
    return;
  }
  log_.info("speaker", "sending Cease 6/2 \"{}\" to {} peer(s)", communication,
            sessions_.size());
  auto remaining = std::make_shared<size_t>(sessions_.size());
  auto finish = std::make_shared<std::function<void()>>(std::move(done));
  if (sessions_.empty()) {
    if (*finish) {
      (*finish)();
    }
    return;
  }
  for (auto& peer : sessions_) {
    peer->stop(communication, [remaining, finish] {
      if (--*remaining == 0 && *finish) {
        (*finish)();
      }
    });
  }
}

void PeerSet::abandon() {
  for (auto& peer : sessions_) {
    peer->stop("vipd: cannot start speaking", nullptr);
  }
  bfd_.stop(nullptr);
}

// ---- BFD ----

std::vector<BfdPeer> PeerSet::bfdPeersOf(const config::Config& config) {
  std::vector<BfdPeer> out;
  for (const auto& p : config.peers) {
    if (p.bfd.enabled) {
      out.push_back({p.address, p.sourceAddress, p.bfd});
    }
  }
  return out;
}

std::vector<BfdPeer> PeerSet::bfdPeersWithRetiring(const config::Config& config) const {
  auto out = bfdPeersOf(config);
  for (const auto& r : retiringBfd_) {
    if (std::none_of(out.begin(), out.end(),
                     [&](const BfdPeer& p) { return p.address == r.address; })) {
      out.push_back(r);
    }
  }
  return out;
}

void PeerSet::onBfdChange(const BfdStateChange& change) {
  PeerSession* session = find(change.peer);
  if (!hooks_.speaking() || session == nullptr) {
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

// ---- a reload ----

tl::expected<void, std::string> PeerSet::updateBfd(const config::Config& applied) {
  // A peer removed with BFD keeps its BFD session until apply()'s Cease to it is written.
  for (const auto& p : bfdPeersOf(config_)) {
    if (config::findPeer(applied.peers, p.address) == nullptr &&
        std::none_of(retiringBfd_.begin(), retiringBfd_.end(),
                     [&](const BfdPeer& r) { return r.address == p.address; })) {
      retiringBfd_.push_back(p);
    }
  }
  if (auto set = bfd_.setPeers(bfdPeersWithRetiring(applied)); !set) {
    return set;
  }
  if (hooks_.speaking() && !bfd_.running()) {
    return bfd_.start();  // the first BFD peer (a no-op without any)
  }
  return {};
}

void PeerSet::apply(const config::ReloadPlan& plan, Keys& keys) {
  const bool speaking = hooks_.speaking();
  // The sessions in config_.peers' order: StatusReport reads the two side by side.
  Sessions sessions;
  for (const auto& peer : config_.peers) {
    auto it = std::find_if(sessions_.begin(), sessions_.end(),
                           [&](const auto& s) { return s && s->address() == peer.address; });
    if (it != sessions_.end()) {
      sessions.push_back(std::move(*it));
      continue;
    }
    sessions.push_back(make(peer));
    auto& added = *sessions.back();
    if (auto& key = keys[peer.address]) {
      added.setSessionKey(*key);
    }
    log_.info("peer " + peer.address.toString(), "added by a config reload; {}",
              speaking ? "connecting (the other sessions are untouched)"
                       : "it starts when this instance speaks");
  }
  for (auto& left : sessions_) {
    if (left) {
      retire(std::move(left));
    }
  }
  sessions_ = std::move(sessions);
  for (const auto& reset : plan.peersReset) {
    this->reset(reset, keys);
  }
  // Every session takes the new attributes and watched VIPs (a no-op where nothing changed, and
  // for the sessions just reset or added, which have them already).
  for (size_t i = 0; i < sessions_.size(); ++i) {
    const auto wanted = sessionConfigFor(config_, config_.peers[i], 0);
    sessions_[i]->setRouteAttributes(wanted.outbound);
    sessions_[i]->setWatchedPrefixes(wanted.watchedPrefixes);
  }
  if (plan.routeAttributes) {
    log_.info("config", "route attributes changed: re-announcing to every Established peer with "
              "the new ones (an implicit replace: nothing is withdrawn)");
  }
  if (speaking) {
    for (const auto& peer : plan.peersAdded) {
      find(peer.address)->start();
    }
  }
}

void PeerSet::retire(std::unique_ptr<PeerSession> session) {
  const std::string address = session->address().toString();
  log_.info("peer " + address, "removed from the config; sending Cease 6/3 \"{}\" and closing "
            "the session (the other sessions are untouched)", kPeerRemoved);
  deferredStart_.erase(session->address());
  PeerSession* raw = session.get();
  retired_.push_back(std::move(session));
  raw->stop(
      kPeerRemoved,
      [this, raw, peer = raw->address()] {
        asio::post(io_, [this, raw, peer] {
          std::erase_if(retired_, [raw](const auto& p) { return p.get() == raw; });
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

void PeerSet::reset(const config::PeerReset& reset, Keys& keys) {
  PeerSession* session = find(reset.peer);
  const auto& peer = *config::findPeer(config_.peers, reset.peer);
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

}  // namespace vipd::daemon
