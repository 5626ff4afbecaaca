// The I/O side of one configured peer: carries out the SessionFsm's actions with Asio (dials,
// writes, timers) and feeds it what happens. It decides nothing about the protocol itself.
#pragma once

#include <array>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "bgp/session_fsm.h"
#include "config/config.h"
#include "daemon/session/connection.h"
#include "daemon/base/logger.h"
#include "daemon/session/key.h"
#include "daemon/session/ttl.h"

namespace vipd::daemon {

// A snapshot for `vipctl status` and logs.
struct PeerStatus {
  std::string address;
  uint32_t asn = 0;
  bool ebgp = true;
  bool ttlSecurity = false;  // GTSM (RFC 5082) on this session's sockets
  bgp::SessionState state = bgp::SessionState::Idle;
  std::chrono::steady_clock::duration inState{};
  // Since the session was last Established (or since start): the stuck-session rule's clock,
  // which Connect/Active flapping must not reset.
  std::chrono::steady_clock::duration notEstablishedFor{};
  std::string lastError;
  std::optional<bgp::Negotiated> negotiated;
  bgp::SessionCounters counters;
  std::set<bgp::Prefix> advertised;
};

class PeerSession {
 public:
  // Returns the prefixes that may be announced now, re-read from the kernel.
  using AnnounceableNow = std::function<std::set<bgp::Prefix>()>;
  // The session changed state, or the paths the peer holds for the watched prefixes changed
  // (the fabric's view). Called from the event loop after the change, never from inside it.
  using FabricChanged = std::function<void()>;

  // `announceableNow` is asked right before the session's first announcement (the KEEPALIVE that
  // establishes it), so even a VIP lost a moment earlier is never announced.
  PeerSession(asio::io_context& io, const config::Peer& peer, bgp::SessionConfig sessionConfig,
              const Logger& log, AnnounceableNow announceableNow, FabricChanged fabricChanged);
  PeerSession(const PeerSession&) = delete;
  PeerSession& operator=(const PeerSession&) = delete;

  // The TCP-MD5 key (peers[].passwordFile), installed on every socket before it connects.
  void setSessionKey(SessionKey key) { key_ = std::move(key); }
  const std::optional<SessionKey>& sessionKey() const { return key_; }
  void start();
  // Sends Cease with `shutdownCommunication` (6/2, or `ceaseSubcode`) and closes; `done` runs
  // when the last bytes have been written (or the flush deadline passed). The session may be
  // destroyed once `done` has run: handlers still queued then do nothing.
  void stop(std::string_view shutdownCommunication, std::function<void()> done,
            uint8_t ceaseSubcode = bgp::subcode::kAdministrativeShutdown);
  // A reload changed this peer's settings or key (issue 29): sends Cease 6/6 with `why` if a
  // session is open, closes, and connects again with the new settings (SessionFsm::reconfigure).
  // Whether BFD gates the session is the caller's to set again (useBfdGate, noBfdGate).
  void reconfigure(const config::Peer& peer, bgp::SessionConfig sessionConfig,
                   std::optional<SessionKey> key, std::string_view why);
  // New communities or degraded-path attributes: re-announced, never withdrawn.
  void setRouteAttributes(const bgp::OutboundAttributes& attributes);
  // The VIPs whose paths the peer sends back are kept (SessionFsm::setWatchedPrefixes).
  void setWatchedPrefixes(std::set<bgp::Prefix> prefixes);
  // Hands the session to another vipd instance: closes without a NOTIFICATION (graceful restart)
  // and stays down until start(). `done(peerKeepsRoutes)` runs once the connection is closed;
  // peerKeepsRoutes says whether this peer negotiated graceful restart.
  void yield(std::function<void(bool peerKeepsRoutes)> done);
  // The next OPEN is a graceful restart (RFC 4724 R and F bits); see SessionFsm::setRestarting.
  void setRestarting(bool restarting) { fsm_.setRestarting(restarting); }
  bool peerSupportsGracefulRestart() const {
    return fsm_.negotiated() && fsm_.negotiated()->peerGracefulRestart.has_value();
  }
  // What to announce, and which of it with the degraded path (SessionFsm::setAnnouncements).
  void setAnnouncements(std::set<bgp::Prefix> prefixes, std::set<bgp::Prefix> degraded = {});
  // BFD protects this session (peers[].bfd.enabled): nothing is announced until setBfdUp(),
  // and bfdDown() tears an open session down at once (Cease 6/10) and withholds the routes
  // again until BFD is back Up.
  void useBfdGate() { bfdGate_ = false; }
  // BFD no longer protects this session (a reload turned it off): nothing waits for it.
  void noBfdGate();
  void setBfdUp();
  // `peerSignalled`: the peer's own BFD said Down (it is alive, and may have sent a NOTIFICATION
  // with it, a Cease for `birdc restart`): the teardown waits kBfdNotificationGrace so that the
  // NOTIFICATION already in flight is read first and the session ends with the peer's reason
  // (CI saw BIRD's BFD Down win the race and the Cease 6/4 go unread). 50 ms: both leave the
  // peer in the same loop iteration, and BFD cannot come back Up that fast (three packets).
  void bfdDown(std::string_view why, bool peerSignalled = false);
  static constexpr std::chrono::milliseconds kBfdNotificationGrace{50};
  // nullopt without BFD; else whether BFD lets the routes out.
  std::optional<bool> bfdGate() const { return bfdGate_; }
  // Drain step (1): re-announce with GRACEFUL_SHUTDOWN (RFC 8326).
  void setGracefulShutdown(bool on);
  // The prefixes announced with the degraded path.
  const std::set<bgp::Prefix>& degraded() const { return fsm_.degraded(); }
  // The paths this peer holds for the watched prefixes (the VIPs), while Established.
  const bgp::WatchedPaths& watchedPaths() const { return fsm_.watchedPaths(); }
  // Bytes written to this session that the peer's TCP has not acknowledged yet (vipd's own queue
  // plus the kernel's send queue, SIOCOUTQ). 0 when there is no connection.
  size_t unacknowledgedBytes() const;
  // A connection the listener accepted from this peer's address.
  void acceptIncoming(tcp::socket socket);

  PeerStatus status() const;
  const std::optional<bgp::Negotiated>& negotiated() const { return fsm_.negotiated(); }
  // How long the session has been in its current state.
  std::chrono::steady_clock::duration inState() const {
    return std::chrono::steady_clock::now() - stateSince_;
  }
  const bgp::IpAddress& address() const { return peer_.address; }
  bool ttlSecurity() const { return peer_.ttlSecurity; }
  bgp::SessionState state() const { return fsm_.state(); }
  // What the peer has from us now; cheaper than status() when that is all a caller needs.
  const std::set<bgp::Prefix>& advertised() const { return fsm_.advertised(); }

 private:
  void execute(bgp::Actions actions);
  // Tells the speaker (fabricChanged_) once the current handler is done, at most once a turn.
  void postFabricChange();
  void dial();
  void arm(bgp::TimerKind timer, std::chrono::milliseconds after);
  void cancel(bgp::TimerKind timer);
  void disconnect(const std::string& reason);
  void watch(const std::shared_ptr<Connection>& connection);
  // GTSM drops are silent to the socket. With ttlSecurity, when the kernel's minimum-TTL drop
  // count grew during the current attempt (since dial()), gtsmNote() says so: status() adds it
  // to lastError while not Established, and noteGtsmDrops() logs it when an attempt fails.
  std::optional<std::string> gtsmNote() const;
  void noteGtsmDrops(const bgp::StateChanged& change);
  // A session with a TCP-MD5 key that has been failing for kMd5HintAfter without an OPEN from
  // the peer: the kernel drops segments whose signature does not verify without telling the
  // socket, so a key that differs on the two sides looks like a peer that never answers. md5Note()
  // says so (with the namespace's TCPMD5* drop counts when they grew since the session was last
  // up): status() adds it to lastError while not Established, noteMd5() logs it once per outage.
  std::optional<std::string> md5Note() const;
  void noteMd5(const bgp::StateChanged& change);
  // The session left Established, started, or took a new key: md5Note() counts from now.
  void restartMd5Watch();
  // The handler of a timer, a post or a connect: runs `f` unless the session was destroyed.
  template <typename F>
  auto guarded(F f) {
    return [alive = std::weak_ptr<int>(alive_), f = std::move(f)](auto&&... args) mutable {
      if (!alive.expired()) {
        f(std::forward<decltype(args)>(args)...);
      }
    };
  }
  static std::optional<bgp::IpAddress> localAddressOf(tcp::socket& socket);
  // What may go out now: everything wanted, unless a closed BFD gate holds it all back.
  std::set<bgp::Prefix> gated(std::set<bgp::Prefix> prefixes) const;

  asio::io_context& io_;
  config::Peer peer_;
  bool ebgp_;
  SessionTtl ttl_;  // on every socket of this session, dialled or accepted
  std::string subject_;
  const Logger& log_;
  bgp::SessionFsm fsm_;
  std::shared_ptr<Connection> current_;   // the session's connection (connecting or open)
  std::shared_ptr<Connection> incoming_;  // held during a collision
  std::optional<tcp::socket> dialing_;
  uint64_t dialGeneration_ = 0;
  std::array<asio::steady_timer, 3> timers_;
  std::array<uint64_t, 3> timerGeneration_{};
  std::chrono::steady_clock::time_point stateSince_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point downSince_ = std::chrono::steady_clock::now();
  AnnounceableNow announceableNow_;
  std::optional<SessionKey> key_;
  uint64_t gtsmDropsSeen_ = 0;  // kernelMinTtlDrops() when this attempt began
  // Since the session last left Established, started or took a new key (restartMd5Watch()), and
  // the OPENs received and the namespace's TCP-MD5 drops then, for md5Note().
  std::chrono::steady_clock::time_point md5Since_ = std::chrono::steady_clock::now();
  uint64_t opensAtDown_ = 0;
  uint64_t md5DropsAtDown_ = 0;
  bool md5Noted_ = false;  // logged for this outage
  std::set<bgp::Prefix> wanted_;  // the speaker's last setAnnouncements()
  std::set<bgp::Prefix> wantedDegraded_;
  FabricChanged fabricChanged_;
  bool fabricChangePosted_ = false;
  std::optional<bool> bfdGate_;
  // bfdDown(peerSignalled) waiting out kBfdNotificationGrace; setBfdUp() or a session that ended
  // on its own in the meantime makes the teardown moot.
  asio::steady_timer bfdGrace_;
  bool bfdDownPending_ = false;
  // What bfdDown() does once nothing more is to be read: Cease 6/10, routes withheld.
  void tearDownForBfd(std::string_view why);
  // Expires with the session; handlers holding a weak_ptr to it (guarded()) know whether `this`
  // is still alive. Last: it goes first.
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace vipd::daemon
