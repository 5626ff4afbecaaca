#include "daemon/session/bgp_listener.h"

#include <algorithm>

#include <boost/asio/error.hpp>
#include <boost/asio/socket_base.hpp>

#include <fmt/format.h>

#include "daemon/base/asio_address.h"
#include "daemon/base/port_bind_error.h"
#include "daemon/session/key.h"
#include "daemon/session/ttl.h"

namespace vipd::daemon {

BgpListener::BgpListener(asio::io_context& io, const config::Config& config,
                         const std::vector<std::unique_ptr<PeerSession>>& peers,
                         const Logger& log)
    : io_(io), config_(config), peers_(peers), log_(log), backoff_(io, log, "listener") {}

tl::expected<void, std::string> BgpListener::open() {
  namespace ip = asio::ip;
  const auto& a = config_.listen.address;
  ip::tcp::endpoint endpoint(toAsio(a), config_.listen.port);
  boost::system::error_code ec;
  acceptor_.emplace(io_);
  acceptor_->open(endpoint.protocol(), ec);
  if (!ec) {
    acceptor_->set_option(ip::tcp::acceptor::reuse_address(true), ec);
    acceptor_->bind(endpoint, ec);
  }
  if (!ec) {
    if (auto applied = applySocketOptions(a); !applied) {
      return applied;
    }
    acceptor_->listen(asio::socket_base::max_listen_connections, ec);
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

tl::expected<void, std::string> BgpListener::applySocketOptions(const bgp::IpAddress& address) {
  // When every peer uses GTSM, the listener requires TTL 255 itself: the kernel then checks the
  // SYN and whatever arrives before accept() too (accepted sockets inherit it). Otherwise each
  // accepted socket gets it from PeerSession::acceptIncoming(), after the handshake.
  bool gtsmOnly = std::all_of(config_.peers.begin(), config_.peers.end(),
                              [](const config::Peer& p) { return p.ttlSecurity; });
  gtsmOnly_ = gtsmOnly && !config_.peers.empty();
  if (gtsmOnly_) {
    // A dual-stack (IPv6) listener also takes IPv4 peers: it needs the options of both.
    std::vector<bgp::IpAddress> families{bgp::IpAddress::v4(0u)};
    if (!address.isV4()) {
      families.push_back(bgp::IpAddress::v6({}));
    }
    for (const auto& family : families) {
      if (auto set = applySessionTtl(acceptor_->native_handle(), family, kGtsmTtl); !set) {
        return tl::unexpected(fmt::format("BGP listener: {}", set.error()));
      }
    }
  }
  keyed_.clear();
  for (const auto& peer : peers_) {
    if (peer->sessionKey()) {
      auto keyed =
          applySessionKey(acceptor_->native_handle(), peer->address(), *peer->sessionKey());
      if (!keyed) {
        return tl::unexpected(keyed.error());
      }
      keyed_.insert(peer->address());
    }
  }
  return {};
}

void BgpListener::peersChanged() {
  if (!acceptor_) {
    return;
  }
  std::set<bgp::IpAddress> keyed;
  for (const auto& peer : peers_) {
    if (gtsmOnly_ && !peer->ttlSecurity()) {
      log_.warn("listener", "peer {} has no ttlSecurity but the listener was opened requiring "
                "TTL 255 (every peer had GTSM): its connections are dialled, not accepted, until "
                "a restart", peer->address().toString());
    }
    if (!peer->sessionKey()) {
      continue;
    }
    if (auto set = applySessionKey(acceptor_->native_handle(), peer->address(),
                                   *peer->sessionKey());
        !set) {
      log_.error("listener", "{}; connections from it are dialled, not accepted", set.error());
      continue;
    }
    keyed.insert(peer->address());
  }
  for (const auto& address : keyed_) {
    if (keyed.count(address) != 0) {
      continue;
    }
    if (auto removed = removeSessionKey(acceptor_->native_handle(), address); !removed) {
      log_.warn("listener", "{}", removed.error());
    }
  }
  keyed_ = std::move(keyed);
}

void BgpListener::close() {
  if (acceptor_) {
    boost::system::error_code ignored;
    acceptor_->close(ignored);
    acceptor_.reset();
    backoff_.cancel();
  }
}

void BgpListener::acceptNext() {
  acceptor_->async_accept([this](const boost::system::error_code& ec,
                                 asio::ip::tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_) {
      return;
    }
    if (ec) {
      ++stats_.acceptFailures;
      backoff_.failed(ec, [this] {
        if (acceptor_) {
          acceptNext();
        }
      });
      return;
    }
    backoff_.succeeded();
    {
      boost::system::error_code remoteError;
      auto remote = socket.remote_endpoint(remoteError);
      if (!remoteError) {
        auto from = fromAsio(remote.address());
        PeerSession* match = nullptr;
        for (const auto& peer : peers_) {
          if (peer->address() == from) {
            match = peer.get();
          }
        }
        if (match) {
          match->acceptIncoming(std::move(socket));
        } else {
          ++stats_.refused;
          if (auto count = strangerWarnings_.add(ThrottledCount::Clock::now())) {
            log_.warn("listener",
                      "refused a BGP connection from {}, which is not a configured peer ({} "
                      "refused since the last report)",
                      from.toString(), *count);
          }
        }
      }
    }
    acceptNext();
  });
}

}  // namespace vipd::daemon
