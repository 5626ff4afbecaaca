// The BGP listener (listen.enabled): accepts connections on listen.address/port and hands each
// to the PeerSession of the configured peer it comes from; refuses every other address. Sets
// on the listening socket what must hold before accept(): every peer's TCP-MD5 key, and TTL 255
// when every peer uses GTSM. Owns the listening socket only.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <tl/expected.hpp>

#include "config/config.h"
#include "daemon/base/accept_backoff.h"
#include "daemon/base/listener_stats.h"
#include "daemon/base/logger.h"
#include "daemon/base/throttled_count.h"
#include "daemon/session/peer_session.h"

namespace vipd::daemon {

class BgpListener {
 public:
  // `peers` must outlive the listener.
  BgpListener(asio::io_context& io, const config::Config& config,
              const std::vector<std::unique_ptr<PeerSession>>& peers, const Logger& log);

  // Opens the socket and starts accepting. An error is one sentence saying what to fix.
  [[nodiscard]] tl::expected<void, std::string> open();
  // Stops accepting; a connection already handed to a session is the session's.
  void close();
  // A reload changed the peers or their keys (issue 29): the listening socket takes every
  // current key and drops those of peers that have none now. The GTSM requirement it was opened
  // with (TTL 255 when every peer used GTSM) stays until a restart: a peer added without GTSM
  // is then dialled, never accepted (logged). Errors are logged; the session dials out anyway.
  void peersChanged();
  bool isOpen() const { return acceptor_.has_value(); }
  const ListenerStats& stats() const { return stats_; }

 private:
  tl::expected<void, std::string> applySocketOptions(const bgp::IpAddress& address);
  void acceptNext();

  asio::io_context& io_;
  const config::Config& config_;
  const std::vector<std::unique_ptr<PeerSession>>& peers_;
  const Logger& log_;
  std::optional<asio::ip::tcp::acceptor> acceptor_;
  bool gtsmOnly_ = false;                // opened requiring TTL 255 of every connection
  std::set<bgp::IpAddress> keyed_;       // peers whose TCP-MD5 key the socket holds
  AcceptBackoff backoff_;
  ThrottledCount strangerWarnings_;
  ListenerStats stats_;
};

}  // namespace vipd::daemon
