#include "daemon/session/peer_session.h"

#include "daemon/base/asio_address.h"
#include "daemon/session/kernel_counters.h"

#include <netinet/in.h>
#include <linux/sockios.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>

#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>

namespace vipd::daemon {
namespace {

using namespace std::chrono_literals;

// How long a closing connection may take to write its last messages (the final NOTIFICATION).
constexpr std::chrono::milliseconds kFlushTimeout = 2s;
// How long a session with a TCP-MD5 key fails, without an OPEN from the peer, before its status
// says the keys may differ: longer than a peer's usual restart, short enough to help during a
// key rotation.
constexpr auto kMd5HintAfter = 10s;

uint64_t opensReceived(const bgp::SessionCounters& c) {
  return c.messagesReceived[static_cast<size_t>(bgp::MessageType::Open)];
}

uint64_t md5DropsNow() {
  auto drops = md5Drops(kernelTcpExt());
  return drops ? drops->total() : 0;
}

size_t timerIndex(bgp::TimerKind t) { return static_cast<size_t>(t); }

}  // namespace

PeerSession::PeerSession(asio::io_context& io, const config::Peer& peer,
                         bgp::SessionConfig sessionConfig, const Logger& log,
                         AnnounceableNow announceableNow, FabricChanged fabricChanged)
    : io_(io),
      peer_(peer),
      ebgp_(sessionConfig.peerAsn != sessionConfig.localAsn),
      ttl_(sessionTtl(peer, ebgp_)),
      subject_("peer " + peer.address.toString()),
      log_(log),
      fsm_(std::move(sessionConfig)),
      timers_{asio::steady_timer(io), asio::steady_timer(io), asio::steady_timer(io)},
      announceableNow_(std::move(announceableNow)),
      fabricChanged_(std::move(fabricChanged)),
      bfdGrace_(io) {}

void PeerSession::postFabricChange() {
  if (!fabricChanged_ || fabricChangePosted_) {
    return;
  }
  fabricChangePosted_ = true;
  // Posted, not called: the speaker answers by setting every session's announcements, which
  // must not run in the middle of this session's actions (an UPDATE before the KEEPALIVE that
  // establishes the session, say).
  asio::post(io_, guarded([this] {
    fabricChangePosted_ = false;
    fabricChanged_();
  }));
}

void PeerSession::restartMd5Watch() {
  md5Since_ = std::chrono::steady_clock::now();
  opensAtDown_ = opensReceived(fsm_.counters());
  md5DropsAtDown_ = key_ ? md5DropsNow() : 0;
  md5Noted_ = false;
}

void PeerSession::start() {
  restartMd5Watch();
  log_.info(subject_, "starting {} session to AS{} port {}", ebgp_ ? "eBGP" : "iBGP", peer_.asn,
            peer_.port);
  execute(fsm_.start());
}

void PeerSession::stop(std::string_view shutdownCommunication, std::function<void()> done,
                       uint8_t ceaseSubcode) {
  auto connection = current_;
  execute(fsm_.stop(shutdownCommunication, ceaseSubcode));
  // execute() queued the NOTIFICATION and began closing; `done` runs once it is written.
  if (connection) {
    connection->closeAfterFlush(kFlushTimeout, std::move(done));
  } else if (done) {
    done();
  }
}

void PeerSession::yield(std::function<void(bool peerKeepsRoutes)> done) {
  auto connection = current_;
  bool keeps = false;
  execute(fsm_.yieldForRestart(keeps));
  if (connection) {
    connection->closeAfterFlush(kFlushTimeout, [done = std::move(done), keeps] { done(keeps); });
  } else {
    done(keeps);
  }
}

void PeerSession::reconfigure(const config::Peer& peer, bgp::SessionConfig sessionConfig,
                              std::optional<SessionKey> key, std::string_view why) {
  peer_ = peer;
  ebgp_ = sessionConfig.peerAsn != sessionConfig.localAsn;
  ttl_ = sessionTtl(peer, ebgp_);
  key_ = std::move(key);
  restartMd5Watch();  // the new key gets a fresh kMd5HintAfter
  execute(fsm_.reconfigure(std::move(sessionConfig), why));
}

void PeerSession::setRouteAttributes(const bgp::OutboundAttributes& attributes) {
  execute(fsm_.setRouteAttributes(attributes));
}

void PeerSession::setWatchedPrefixes(std::set<bgp::Prefix> prefixes) {
  execute(fsm_.setWatchedPrefixes(std::move(prefixes)));
}

void PeerSession::noBfdGate() {
  if (!bfdGate_) {
    return;
  }
  bfdDownPending_ = false;
  bfdGrace_.cancel();
  bfdGate_.reset();
  execute(fsm_.setAnnouncements(wanted_, wantedDegraded_));
}

void PeerSession::setAnnouncements(std::set<bgp::Prefix> prefixes,
                                   std::set<bgp::Prefix> degraded) {
  wanted_ = std::move(prefixes);
  wantedDegraded_ = std::move(degraded);
  execute(fsm_.setAnnouncements(gated(wanted_), wantedDegraded_));
}

std::set<bgp::Prefix> PeerSession::gated(std::set<bgp::Prefix> prefixes) const {
  if (bfdGate_ && !*bfdGate_) {
    return {};
  }
  return prefixes;
}

void PeerSession::setBfdUp() {
  if (bfdDownPending_) {  // back Up within the grace: nothing to tear down
    bfdDownPending_ = false;
    bfdGrace_.cancel();
  }
  if (!bfdGate_ || *bfdGate_) {
    return;
  }
  bfdGate_ = true;
  if (!wanted_.empty() && fsm_.state() == bgp::SessionState::Established) {
    log_.info(subject_, "BFD is Up: announcing");
  }
  execute(fsm_.setAnnouncements(wanted_, wantedDegraded_));
}

void PeerSession::bfdDown(std::string_view why, bool peerSignalled) {
  if (!bfdGate_ || bfdDownPending_) {
    return;
  }
  if (peerSignalled && current_ && fsm_.state() == bgp::SessionState::Established) {
    bfdDownPending_ = true;
    bfdGrace_.expires_after(kBfdNotificationGrace);
    bfdGrace_.async_wait(guarded([this, why = std::string(why)](const boost::system::error_code& ec) {
      if (!ec && bfdDownPending_) {
        bfdDownPending_ = false;
        tearDownForBfd(why);
      }
    }));
    return;
  }
  tearDownForBfd(why);
}

void PeerSession::tearDownForBfd(std::string_view why) {
  bfdGate_ = false;
  // Tear down first (nothing more is sent on that session), then clear what the FSM would
  // announce when the session comes back, so it waits for BFD Up again.
  execute(fsm_.onBfdDown(why));
  execute(fsm_.setAnnouncements({}));
}

void PeerSession::setGracefulShutdown(bool on) { execute(fsm_.setGracefulShutdown(on)); }


size_t PeerSession::unacknowledgedBytes() const {
  if (!current_) {
    return 0;
  }
  int inKernel = 0;
  if (::ioctl(current_->socket().native_handle(), SIOCOUTQ, &inKernel) != 0) {
    inKernel = 0;
  }
  return current_->queuedBytes() + static_cast<size_t>(std::max(inKernel, 0));
}

void PeerSession::execute(bgp::Actions actions) {
  for (auto& action : actions) {
    std::visit(
        [&](auto& a) {
          using T = std::decay_t<decltype(a)>;
          if constexpr (std::is_same_v<T, bgp::Connect>) {
            dial();
          } else if constexpr (std::is_same_v<T, bgp::Send>) {
            if (current_) {
              current_->send(std::move(a.bytes));
            }
          } else if constexpr (std::is_same_v<T, bgp::Arm>) {
            if (a.timer == bgp::TimerKind::ConnectRetry &&
                (fsm_.state() == bgp::SessionState::Idle ||
                 fsm_.state() == bgp::SessionState::Active)) {
              log_.info(subject_, "next connection attempt in {}ms", a.after.count());
            }
            arm(a.timer, a.after);
          } else if constexpr (std::is_same_v<T, bgp::Cancel>) {
            cancel(a.timer);
          } else if constexpr (std::is_same_v<T, bgp::Disconnect>) {
            disconnect(a.reason);
          } else if constexpr (std::is_same_v<T, bgp::AdoptIncoming>) {
            current_ = std::exchange(incoming_, nullptr);
            log_.info(subject_, "using the connection the peer opened");
          } else if constexpr (std::is_same_v<T, bgp::RejectIncoming>) {
            if (incoming_) {
              log_.info(subject_, "closing the connection the peer opened: {}", a.reason);
              if (!a.bytes.empty()) {
                incoming_->send(std::move(a.bytes));
              }
              std::exchange(incoming_, nullptr)->closeAfterFlush(kFlushTimeout);
            }
          } else if constexpr (std::is_same_v<T, bgp::HoldIncoming>) {
            log_.info(subject_, "peer connected while a session is opening; resolving the "
                                "collision when its OPEN arrives");
          } else if constexpr (std::is_same_v<T, bgp::StateChanged>) {
            stateSince_ = std::chrono::steady_clock::now();
            if (a.from == bgp::SessionState::Established) {
              downSince_ = stateSince_;
              restartMd5Watch();
            }
            auto level = a.to == bgp::SessionState::Idle && !a.reason.starts_with("stopped")
                             ? LogLevel::Warn
                             : LogLevel::Info;
            log_.log(level, subject_,
                     fmt::format("{} -> {}: {}", bgp::sessionStateName(a.from),
                                 bgp::sessionStateName(a.to), a.reason));
            if (peer_.ttlSecurity) {
              noteGtsmDrops(a);
            }
            if (key_) {
              noteMd5(a);
            }
            if (a.to == bgp::SessionState::Established || a.from == bgp::SessionState::Established) {
              postFabricChange();
            }
          } else if constexpr (std::is_same_v<T, bgp::Notice>) {
            log_.warn(subject_, "{}", a.text);
          } else if constexpr (std::is_same_v<T, bgp::WatchedPathsChanged>) {
            postFabricChange();
          }
        },
        action);
  }
}

std::optional<std::string> PeerSession::gtsmNote() const {
  auto drops = peer_.ttlSecurity ? kernelMinTtlDrops() : std::nullopt;
  if (!drops || *drops <= gtsmDropsSeen_) {
    return std::nullopt;
  }
  return fmt::format(
      "ttlSecurity (GTSM) is on and the kernel dropped {} TCP segments for arriving with TTL "
      "below 255 during this attempt (TcpExt TCPMinTTLDrop {}, whole network namespace): the "
      "peer likely does not send with TTL 255 (BIRD `ttl security on`, FRR `neighbor X "
      "ttl-security hops 1`) or is not on the link",
      *drops - gtsmDropsSeen_, *drops);
}

void PeerSession::noteGtsmDrops(const bgp::StateChanged& change) {
  using S = bgp::SessionState;
  if (change.to == S::Established) {
    gtsmDropsSeen_ = kernelMinTtlDrops().value_or(0);
    return;
  }
  // An attempt that failed before Established: TCP connect, OPEN or KEEPALIVE exchange.
  bool failed = (change.to == S::Active || change.to == S::Idle) &&
                (change.from == S::Connect || change.from == S::OpenSent ||
                 change.from == S::OpenConfirm);
  if (auto note = failed ? gtsmNote() : std::nullopt) {
    log_.warn(subject_, "{}", *note);
  }
}

std::optional<std::string> PeerSession::md5Note() const {
  if (!key_ || fsm_.state() == bgp::SessionState::Established ||
      std::chrono::steady_clock::now() - md5Since_ < kMd5HintAfter ||
      opensReceived(fsm_.counters()) != opensAtDown_) {
    return std::nullopt;
  }
  auto drops = md5Drops(kernelTcpExt());
  std::string counted;
  if (drops && drops->total() > md5DropsAtDown_) {
    counted = fmt::format(
        "; meanwhile the kernel dropped {} TCP segments for their TCP-MD5 signature (TcpExt "
        "TCPMD5Failure {}, TCPMD5NotFound {}, TCPMD5Unexpected {}, whole network namespace)",
        drops->total() - md5DropsAtDown_, drops->failure, drops->notFound, drops->unexpected);
  }
  return fmt::format(
      "TCP-MD5 is on (passwordFile {}) and the peer has sent no OPEN for {}s: the keys may "
      "differ (the peer's kernel drops segments with a wrong signature silently, so the "
      "connection only times out); compare the key with the peer's (BIRD `password`, FRR "
      "`neighbor X password`){}",
      peer_.passwordFile.value_or("?"),
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() -
                                                       md5Since_)
          .count(),
      counted);
}

void PeerSession::noteMd5(const bgp::StateChanged& change) {
  using S = bgp::SessionState;
  bool failed = (change.to == S::Active || change.to == S::Idle) &&
                (change.from == S::Connect || change.from == S::OpenSent);
  if (md5Noted_ || !failed) {
    return;
  }
  if (auto note = md5Note()) {
    md5Noted_ = true;
    log_.warn(subject_, "{}; said once until the session is up again", *note);
  }
}

void PeerSession::dial() {
  auto generation = ++dialGeneration_;
  if (peer_.ttlSecurity) {
    gtsmDropsSeen_ = kernelMinTtlDrops().value_or(0);  // gtsmNote() counts from here
  }
  auto remote = toAsio(peer_.address);
  tcp::socket socket(io_);
  boost::system::error_code ec;
  socket.open(remote.is_v4() ? tcp::v4() : tcp::v6(), ec);
  if (!ec && peer_.sourceAddress) {
    socket.bind(tcp::endpoint(toAsio(*peer_.sourceAddress), 0), ec);
  }
  if (!ec) {
    socket.set_option(tcp::no_delay(true), ec);
  }
  std::string failure = ec ? ec.message() : "";
  // Before connect(): the SYN itself must carry the TTL, the GTSM check and the signature.
  if (failure.empty()) {
    if (auto set = applySessionTtl(socket.native_handle(), peer_.address, ttl_); !set) {
      failure = set.error();
    }
  }
  if (failure.empty() && key_) {
    if (auto keyed = applySessionKey(socket.native_handle(), peer_.address, *key_); !keyed) {
      failure = keyed.error();
    }
  }
  if (!failure.empty()) {
    if (!ec) {
      log_.error(subject_, "{}; this connection attempt fails", failure);
    }
    // Post, so the FSM is never re-entered from inside execute().
    asio::post(io_, guarded([this, generation, failure] {
      if (generation == dialGeneration_) {
        dialing_.reset();
        execute(fsm_.onConnectFailed(failure));
      }
    }));
    return;
  }
  dialing_.emplace(std::move(socket));
  dialing_->async_connect(
      tcp::endpoint(remote, peer_.port),
      guarded([this, generation](const boost::system::error_code& ec) {
        if (generation != dialGeneration_ || !dialing_) {
          return;  // abandoned attempt
        }
        auto socket = std::move(*dialing_);
        dialing_.reset();
        if (ec) {
          execute(fsm_.onConnectFailed(ec.message()));
          return;
        }
        auto local = localAddressOf(socket);
        if (!local) {
          execute(fsm_.onConnectFailed("connected socket has no local address"));
          return;
        }
        current_ = std::make_shared<Connection>(std::move(socket));
        watch(current_);
        execute(fsm_.onConnected(*local));
      }));
}

void PeerSession::watch(const std::shared_ptr<Connection>& connection) {
  connection->startReading(
      guarded([this](Connection& c, std::span<const uint8_t> bytes) {
        if (&c == current_.get()) {
          if (fsm_.state() == bgp::SessionState::OpenConfirm && announceableNow_) {
            // These bytes may hold the KEEPALIVE that establishes the session and triggers the
            // initial announcement: check the bindings first (no-op while not Established).
            execute(fsm_.setAnnouncements(gated(announceableNow_())));
          }
          execute(fsm_.onBytes(bytes));
        } else if (&c == incoming_.get()) {
          execute(fsm_.onIncomingBytes(bytes));
        }
      }),
      guarded([this](Connection& c, const boost::system::error_code& ec) {
        std::string why = ec == asio::error::eof ? "peer closed the connection" : ec.message();
        if (&c == current_.get()) {
          current_.reset();
          execute(fsm_.onClosed(why));
        } else if (&c == incoming_.get()) {
          incoming_.reset();
          fsm_.onIncomingClosed();
          log_.info(subject_, "incoming connection closed before its OPEN: {}", why);
        }
      }));
}

void PeerSession::acceptIncoming(tcp::socket socket) {
  auto local = localAddressOf(socket);
  if (!local) {
    return;
  }
  // The kernel completed this handshake before vipd saw it, so GTSM holds from here on.
  if (auto set = applySessionTtl(socket.native_handle(), peer_.address, ttl_); !set) {
    log_.error(subject_, "{}; closing the connection the peer opened", set.error());
    return;  // the socket closes here
  }
  if (incoming_) {
    // Only one collision is resolved at a time; the newer connection replaces the held one.
    std::exchange(incoming_, nullptr)->closeNow();
    fsm_.onIncomingClosed();
  }
  incoming_ = std::make_shared<Connection>(std::move(socket));
  boost::system::error_code ec;
  incoming_->socket().set_option(tcp::no_delay(true), ec);
  watch(incoming_);
  execute(fsm_.onIncomingConnection(*local));
}

void PeerSession::disconnect(const std::string& reason) {
  ++dialGeneration_;  // abandon any connect in flight
  if (dialing_) {
    boost::system::error_code ignored;
    dialing_->close(ignored);
    dialing_.reset();
  }
  if (current_) {
    log_.debug(subject_, "closing connection: {}", reason);
    std::exchange(current_, nullptr)->closeAfterFlush(kFlushTimeout);
  }
}

void PeerSession::arm(bgp::TimerKind timer, std::chrono::milliseconds after) {
  auto i = timerIndex(timer);
  auto generation = ++timerGeneration_[i];
  timers_[i].expires_after(after);
  timers_[i].async_wait(guarded([this, timer, i, generation](const boost::system::error_code& ec) {
    // A cancelled or re-armed timer may still deliver an expiry already queued; the generation
    // tells a stale expiry from the current one.
    if (ec || generation != timerGeneration_[i]) {
      return;
    }
    execute(fsm_.onTimer(timer));
  }));
}

void PeerSession::cancel(bgp::TimerKind timer) {
  auto i = timerIndex(timer);
  ++timerGeneration_[i];
  timers_[i].cancel();
}

std::optional<bgp::IpAddress> PeerSession::localAddressOf(tcp::socket& socket) {
  boost::system::error_code ec;
  auto endpoint = socket.local_endpoint(ec);
  if (ec) {
    return std::nullopt;
  }
  return fromAsio(endpoint.address());
}

PeerStatus PeerSession::status() const {
  PeerStatus s;
  s.address = peer_.address.toString();
  s.asn = peer_.asn;
  s.ebgp = ebgp_;
  s.ttlSecurity = peer_.ttlSecurity;
  s.state = fsm_.state();
  s.inState = std::chrono::steady_clock::now() - stateSince_;
  s.notEstablishedFor = s.state == bgp::SessionState::Established
                            ? std::chrono::steady_clock::duration{}
                            : std::chrono::steady_clock::now() - downSince_;
  s.lastError = fsm_.lastError();
  if (s.state != bgp::SessionState::Established) {
    for (const auto& note : {gtsmNote(), md5Note()}) {
      if (note) {
        s.lastError += (s.lastError.empty() ? "" : "; ") + *note;
      }
    }
  }
  s.negotiated = fsm_.negotiated();
  s.counters = fsm_.counters();
  s.advertised = fsm_.advertised();
  return s;
}

}  // namespace vipd::daemon
