// The BGP sessions of a running vipd and what ties them to BFD (issue 43: a room of its own): one
// PeerSession per configured peer, in the config's order; a removed peer's session until its
// Cease is written, and its BFD session until then too; the sessions held back after a
// graceful-restart takeover until their BFD is Up. Starts, yields and stops every session, and
// carries out a reload's peer changes (added, removed, reset, new route attributes).
//
// Owns: the sessions (and the retired ones), the deferred starts and their timer, the BFD
// sessions kept for a retired peer. Uses the Speaker's BfdService (declared after everything its
// callbacks touch) and running config by reference; reaches the rest through Hooks.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

#include "config/config.h"
#include "config/reload_plan.h"
#include "daemon/base/logger.h"
#include "daemon/bfd/service.h"
#include "daemon/session/key.h"
#include "daemon/session/peer_session.h"

namespace vipd::daemon {

class PeerSet {
 public:
  using Sessions = std::vector<std::unique_ptr<PeerSession>>;
  // Each peer's TCP-MD5 key, by content (nullopt: none).
  using Keys = std::map<bgp::IpAddress, std::optional<SessionKey>>;
  struct Hooks {
    // What a session about to be established may announce (the Announcer's decision).
    PeerSession::AnnounceableNow announceableNow;
    // A session changed state or the paths its peer holds for the VIPs changed.
    std::function<void()> onFabricChange;
    // This instance speaks and is not shutting down: sessions start, BFD runs.
    std::function<bool()> speaking;
  };

  // One session per `config.peers` entry. `config` (the running config) and `bfd` must outlive
  // the set; `bfd` may be constructed after it (it is only used once the set is running).
  PeerSet(asio::io_context& io, const config::Config& config, BfdService& bfd, const Logger& log,
          Hooks hooks);

  const Sessions& sessions() const { return sessions_; }
  PeerSession* find(const bgp::IpAddress& address) const;

  // Starts every session; `restarting` (a graceful-restart takeover): a session with BFD opens
  // only once its BFD is Up, or when half the restart time is gone.
  void start(bool restarting);
  void setGracefulShutdown(bool on);
  // Closes every session without a NOTIFICATION, then BFD with AdminDown; `done` gets one object
  // per peer: {"address", "gracefulRestart": whether that peer keeps this node's path}.
  void yield(std::function<void(std::vector<nlohmann::json>)> done);
  // BFD AdminDown first, then Cease 6/2 with `communication` to every peer; `done` once written.
  void stop(std::string communication, std::function<void()> done);
  // After a failed start: every session stops, BFD too.
  void abandon();

  // A BFD session changed state (BfdService's callback).
  void onBfdChange(const BfdStateChange& change);
  // The BFD sessions of `config`'s peers.
  static std::vector<BfdPeer> bfdPeersOf(const config::Config& config);

  // ---- a reload ----
  // BFD for the peers of `applied`: sessions added, removed, replaced; started for the first BFD
  // peer while speaking. An error (a socket that cannot open) changes nothing.
  tl::expected<void, std::string> updateBfd(const config::Config& applied);
  // Carries out the plan's peer changes; the running config is plan.applied already. `keys` are
  // the new keys by peer.
  void apply(const config::ReloadPlan& plan, Keys& keys);

 private:
  std::unique_ptr<PeerSession> make(const config::Peer& peer);
  void startDeferred(std::string_view why);
  // bfdPeersOf(config) and the BFD sessions of the peers whose Cease is still being written.
  std::vector<BfdPeer> bfdPeersWithRetiring(const config::Config& config) const;
  // A removed peer: Cease 6/3, then its BFD session goes.
  void retire(std::unique_ptr<PeerSession> session);
  void reset(const config::PeerReset& reset, Keys& keys);

  asio::io_context& io_;
  const config::Config& config_;
  BfdService& bfd_;
  const Logger& log_;
  Hooks hooks_;
  // One per config_.peers entry, in the same order (StatusReport reads them side by side).
  Sessions sessions_;
  // Sessions a reload removed, until their Cease has been written.
  Sessions retired_;
  // Their BFD sessions, kept until the Cease is written: an AdminDown sent with the Cease races
  // it, and a peer that takes BGP down on BFD first (BIRD does) never reads why it was dropped.
  std::vector<BfdPeer> retiringBfd_;
  // After a graceful-restart takeover, a session with BFD opens only once its BFD is Up (or
  // the restart time is half gone): an End-of-RIB sent while BFD still held the routes back
  // would make the peer drop the path it kept for us.
  std::set<bgp::IpAddress> deferredStart_;
  asio::steady_timer deferredStartTimer_;
};

}  // namespace vipd::daemon
