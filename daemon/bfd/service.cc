#include "daemon/bfd/service.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <fmt/format.h>

#include "daemon/bfd/sockets.h"

namespace vipd::daemon {
namespace {

using namespace std::chrono_literals;
using std::chrono::microseconds;
using udp = asio::ip::udp;

// On stop, the AdminDown packet is sent at once and repeated this many times at kStopRepeat
// intervals (a single lost packet would otherwise turn a clean stop into a detected failure).
constexpr int kStopRepeats = 2;
constexpr auto kStopRepeat = 40ms;

std::string describeError(int err) { return std::strerror(err); }

}  // namespace

struct BfdService::Session {
  Session(asio::io_context& io, BfdPeer p, bfd::SessionConfig config)
      : peer(std::move(p)),
        subject("bfd " + peer.address.toString()),
        session(config),
        socket(io),
        txTimer(io),
        detectTimer(io) {}

  BfdPeer peer;
  std::string subject;
  bfd::Session session;
  udp::socket socket;  // connected to the peer's BFD port
  asio::steady_timer txTimer;
  asio::steady_timer detectTimer;
  uint64_t txGeneration = 0;
  uint64_t detectGeneration = 0;
  bfd::Diagnostic remoteDiagnostic = bfd::Diagnostic::None;
  std::array<uint64_t, 4> transitionsTo{};
  std::string lastReason = "not started";
  std::string localEndpoint;
  std::string sendError;
  uint64_t sendErrors = 0;
  uint64_t malformed = 0;
  uint64_t ttlDropped = 0;
  std::optional<bfd::ControlPacket> adminDownPacket;  // set by stop()
  std::chrono::steady_clock::time_point since = std::chrono::steady_clock::now();
};

struct BfdService::Receiver {
  explicit Receiver(asio::io_context& io) : socket(io) {}
  udp::socket socket;
  bool v6 = false;
  bool multihop = false;
  std::array<uint8_t, 512> buffer{};
};

BfdService::BfdService(asio::io_context& speakerIo, const Logger& log, std::vector<BfdPeer> peers,
                       OnStateChange onChange)
    : speakerIo_(speakerIo), log_(log), peers_(std::move(peers)), onChange_(std::move(onChange)) {}

BfdService::~BfdService() {
  if (io_) {
    io_->stop();
  }
  if (thread_.joinable()) {
    thread_.join();
  }
}

uint32_t BfdService::newDiscriminator(const std::vector<uint32_t>& taken) {
  // Random, so that a restarted vipd does not reuse the discriminator a peer may still hold
  // for the previous process's session (RFC 5880 section 6.3: unique, and preferably random).
  static thread_local std::mt19937 rng{std::random_device{}()};
  for (;;) {
    uint32_t d = rng();
    if (d != 0 && std::find(taken.begin(), taken.end(), d) == taken.end()) {
      return d;
    }
  }
}

std::unique_ptr<BfdService::Session> BfdService::makeSession(const BfdPeer& p) {
  static thread_local std::random_device seed;
  uint32_t discriminator = newDiscriminator(usedDiscriminators_);
  usedDiscriminators_.push_back(discriminator);
  bfd::SessionConfig config;
  config.desiredMinTxInterval = p.settings.minTx;
  config.requiredMinRxInterval = p.settings.minRx;
  config.detectMult = p.settings.multiplier;
  config.localDiscriminator = discriminator;
  config.jitterSeed = (uint64_t{seed()} << 32) | seed();
  return std::make_unique<Session>(*io_, p, config);
}

tl::expected<void, std::string> BfdService::start() {
  if (running() || peers_.empty()) {
    return {};
  }
  {
    // The previous run's sessions go before the io_context their sockets belong to.
    std::lock_guard lock(mutex_);
    sessions_.clear();
    receivers_.clear();
    io_ = std::make_unique<asio::io_context>(1);
    for (const auto& p : peers_) {
      sessions_.push_back(makeSession(p));
    }
  }
  if (auto opened = openSockets(); !opened) {
    std::lock_guard lock(mutex_);
    sessions_.clear();
    receivers_.clear();
    io_.reset();
    return opened;
  }
  work_.emplace(asio::make_work_guard(*io_));
  for (auto& r : receivers_) {
    receive(*r);
  }
  asio::post(*io_, [this] {
    std::lock_guard lock(mutex_);
    for (auto& s : sessions_) {
      startSession(*s, "");
    }
  });
  thread_ = std::thread([this] { io_->run(); });
  return {};
}

void BfdService::startSession(Session& s, std::string_view why) {
  log_.info(s.subject, "starting {} BFD{}: min TX {}ms, min RX {}ms, multiplier {}, from {}",
            s.peer.settings.multihop ? "multihop (RFC 5883, UDP 4784)"
                                     : "single-hop (RFC 5881, UDP 3784, TTL 255)",
            why, s.peer.settings.minTx.count(), s.peer.settings.minRx.count(),
            s.peer.settings.multiplier, s.localEndpoint);
  execute(s, s.session.start());
}

tl::expected<std::vector<std::unique_ptr<BfdService::Receiver>>, std::string>
BfdService::openReceivers(const std::vector<BfdPeer>& peers) {
  std::vector<std::unique_ptr<Receiver>> out;
  // One per (family, single hop or multihop) that some session uses.
  for (bool v6 : {false, true}) {
    for (bool multihop : {false, true}) {
      bool used = std::any_of(peers.begin(), peers.end(), [&](const BfdPeer& p) {
        return p.address.isV6() == v6 && p.settings.multihop == multihop;
      });
      bool open = std::any_of(receivers_.begin(), receivers_.end(), [&](const auto& r) {
        return r->v6 == v6 && r->multihop == multihop && r->socket.is_open();
      });
      if (!used || open) {
        continue;
      }
      auto r = std::make_unique<Receiver>(*io_);
      r->v6 = v6;
      r->multihop = multihop;
      if (auto opened = openBfdReceiver(r->socket, v6, multihop); !opened) {
        return tl::unexpected(opened.error());
      }
      out.push_back(std::move(r));
    }
  }
  return out;
}

tl::expected<void, std::string> BfdService::openTransmitter(Session& s) {
  static thread_local std::mt19937 rng{std::random_device{}()};
  auto local = openBfdTransmitter(s.socket, s.peer.address, s.peer.sourceAddress,
                                  s.peer.settings.multihop, rng);
  if (!local) {
    return tl::unexpected(local.error());
  }
  s.localEndpoint = std::move(*local);
  return {};
}

tl::expected<void, std::string> BfdService::openSockets() {
  auto receivers = openReceivers(peers_);
  if (!receivers) {
    return tl::unexpected(receivers.error());
  }
  for (auto& r : *receivers) {
    receivers_.push_back(std::move(r));
  }
  for (auto& s : sessions_) {
    if (auto opened = openTransmitter(*s); !opened) {
      return opened;
    }
  }
  return {};
}

tl::expected<void, std::string> BfdService::setPeers(std::vector<BfdPeer> next) {
  auto same = [](const BfdPeer& a, const BfdPeer& b) {
    return a.address == b.address && a.sourceAddress == b.sourceAddress &&
           a.settings == b.settings;
  };
  auto in = [&same](const std::vector<BfdPeer>& list, const BfdPeer& p) {
    return std::any_of(list.begin(), list.end(), [&](const BfdPeer& q) { return same(p, q); });
  };
  std::vector<BfdPeer> added;
  std::vector<BfdPeer> removed;
  for (const auto& p : next) {
    if (!in(peers_, p)) {
      added.push_back(p);
    }
  }
  for (const auto& p : peers_) {
    if (!in(next, p)) {
      removed.push_back(p);
    }
  }
  if (!running()) {
    peers_ = std::move(next);
    return {};
  }
  // Sockets first, on this thread as start() does: a failure leaves everything as it was.
  std::vector<std::unique_ptr<Session>> fresh;
  std::vector<std::unique_ptr<Receiver>> receivers;
  {
    std::lock_guard lock(mutex_);  // receivers_ and usedDiscriminators_ are read
    auto opened = openReceivers(added);
    if (!opened) {
      return tl::unexpected(opened.error());
    }
    receivers = std::move(*opened);
    for (const auto& p : added) {
      fresh.push_back(makeSession(p));
      if (auto ok = openTransmitter(*fresh.back()); !ok) {
        return ok;
      }
    }
  }
  peers_ = std::move(next);
  auto carried = std::make_shared<std::pair<decltype(fresh), decltype(receivers)>>(
      std::move(fresh), std::move(receivers));
  asio::post(*io_, [this, carried, removed = std::move(removed)] {
    auto dying = std::make_shared<std::vector<std::unique_ptr<Session>>>();
    std::lock_guard lock(mutex_);
    for (const auto& p : removed) {
      auto it = std::find_if(sessions_.begin(), sessions_.end(),
                             [&](const auto& s) { return s->peer.address == p.address; });
      if (it == sessions_.end()) {
        continue;
      }
      Session& s = **it;
      log_.info(s.subject, "BFD session removed by a config reload: sending AdminDown");
      execute(s, s.session.adminDown());
      ++s.txGeneration;
      ++s.detectGeneration;
      s.txTimer.cancel();
      s.detectTimer.cancel();
      boost::system::error_code ignored;
      s.socket.close(ignored);
      dying->push_back(std::move(*it));
      sessions_.erase(it);
    }
    for (auto& r : carried->second) {
      receivers_.push_back(std::move(r));
      receive(*receivers_.back());
    }
    for (auto& s : carried->first) {
      sessions_.push_back(std::move(s));
      startSession(*sessions_.back(), " (a config reload added it)");
    }
    // Destroyed after the handlers already queued for them (cancelled timers) have run.
    asio::post(*io_, [dying] {});
  });
  return {};
}

void BfdService::receive(Receiver& r) {
  r.socket.async_wait(udp::socket::wait_read, [this, &r](const boost::system::error_code& ec) {
    if (ec) {
      return;  // closed by stop()
    }
    // Drain what is queued, a bounded number at a time.
    for (int budget = 64; budget > 0; --budget) {
      auto datagram = receiveBfdDatagram(r.socket, r.buffer);
      if (!datagram) {
        break;
      }
      if (datagram->from) {
        onDatagram(r, std::span<const uint8_t>(r.buffer.data(), datagram->size), *datagram->from,
                   datagram->ttl);
      }
    }
    receive(r);
  });
}

BfdService::Session* BfdService::sessionFor(const bfd::ControlPacket& packet,
                                            const bgp::IpAddress& from, bool multihop) {
  // RFC 5880 section 6.8.6: a non-zero Your Discriminator selects the session; a zero one is
  // matched by the source address (RFC 5881 section 3 / RFC 5883 section 3). Either way the
  // source must be the session's peer: a packet for our discriminator from elsewhere is forged
  // or misrouted.
  for (auto& s : sessions_) {
    if (s->peer.settings.multihop != multihop || s->peer.address != from) {
      continue;
    }
    if (packet.yourDiscriminator == 0 ||
        packet.yourDiscriminator == s->session.localDiscriminator()) {
      return s.get();
    }
  }
  return nullptr;
}

void BfdService::onDatagram(const Receiver& r, std::span<const uint8_t> bytes,
                            const bgp::IpAddress& from, int ttl) {
  std::lock_guard lock(mutex_);
  auto decoded = bfd::decode(bytes);
  if (!decoded) {
    auto peer = std::find_if(sessions_.begin(), sessions_.end(),
                             [&](const auto& s) { return s->peer.address == from; });
    if (peer == sessions_.end()) {
      log_.debug("bfd", "dropped a malformed BFD packet from {}: {}", from.toString(),
                 decoded.error());
    } else if ((*peer)->malformed++ % 1000 == 0) {
      // The first one and every 1000th: a broken peer must not flood the log.
      log_.warn((*peer)->subject, "dropped a malformed BFD packet ({} so far): {}",
                (*peer)->malformed, decoded.error());
    }
    return;
  }
  Session* s = sessionFor(*decoded, from, r.multihop);
  if (s == nullptr) {
    log_.debug("bfd", "dropped a BFD packet from {} (your discriminator {}): no such session",
               from.toString(), decoded->yourDiscriminator);
    return;
  }
  if (!r.multihop && ttl != kBfdSingleHopTtl) {
    // RFC 5881 section 5: anything else came from beyond the link.
    if (s->ttlDropped++ % 1000 == 0) {
      log_.warn(s->subject, "dropped a single-hop BFD packet from {} with TTL {} ({} so far): "
                "RFC 5881 accepts only 255, so it came from beyond the link",
                from.toString(), ttl, s->ttlDropped);
    }
    return;
  }
  s->remoteDiagnostic = decoded->diagnostic;
  execute(*s, s->session.onPacket(*decoded));
}

void BfdService::execute(Session& s, bfd::Actions actions) {
  for (auto& action : actions) {
    std::visit(
        [&](auto& a) {
          using T = std::decay_t<decltype(a)>;
          if constexpr (std::is_same_v<T, bfd::Transmit>) {
            transmit(s, a.packet);
          } else if constexpr (std::is_same_v<T, bfd::ArmTransmit>) {
            armTransmit(s, a.after);
          } else if constexpr (std::is_same_v<T, bfd::ArmDetect>) {
            armDetect(s, a.after);
          } else if constexpr (std::is_same_v<T, bfd::CancelDetect>) {
            ++s.detectGeneration;
            s.detectTimer.cancel();
          } else if constexpr (std::is_same_v<T, bfd::StateChanged>) {
            s.since = std::chrono::steady_clock::now();
            s.lastReason = a.reason;
            ++s.transitionsTo[static_cast<size_t>(a.to)];
            bool failure = a.from == bfd::State::Up && a.to != bfd::State::Up &&
                           s.session.remoteState() != bfd::State::AdminDown &&
                           a.to != bfd::State::AdminDown;
            log_.log(failure ? LogLevel::Warn : LogLevel::Info, s.subject,
                     fmt::format("{} -> {} ({}): {}; TX every {}ms, detection time {}ms",
                                 bfd::stateName(a.from), bfd::stateName(a.to),
                                 bfd::diagnosticName(a.diagnostic), a.reason,
                                 s.session.transmitInterval().count() / 1000,
                                 s.session.detectionTime().count() / 1000));
            BfdStateChange change{s.peer.address, a.from,  a.to, a.diagnostic,
                                  s.session.remoteState(), a.reason};
            asio::post(speakerIo_, [this, change] { onChange_(change); });
          }
        },
        action);
  }
}

void BfdService::transmit(Session& s, const bfd::ControlPacket& packet) {
  auto bytes = bfd::encode(packet);
  ssize_t sent = ::send(s.socket.native_handle(), bytes.data(), bytes.size(), MSG_DONTWAIT);
  if (sent == static_cast<ssize_t>(bytes.size())) {
    if (!s.sendError.empty()) {
      log_.info(s.subject, "sending BFD packets again");
      s.sendError.clear();
    }
    return;
  }
  // ECONNREFUSED: an ICMP port unreachable for an earlier packet (the peer runs no BFD yet).
  std::string why = sent < 0 ? describeError(errno) : "short write";
  ++s.sendErrors;
  if (s.sendError != why) {
    log_.warn(s.subject, "cannot send BFD packets to {}: {}", s.peer.address.toString(), why);
    s.sendError = why;
  }
}

void BfdService::armTransmit(Session& s, microseconds after) {
  auto generation = ++s.txGeneration;
  s.txTimer.expires_after(after);
  s.txTimer.async_wait([this, &s, generation](const boost::system::error_code& ec) {
    if (ec || generation != s.txGeneration) {
      return;
    }
    std::lock_guard lock(mutex_);
    execute(s, s.session.onTransmitTimer());
  });
}

void BfdService::armDetect(Session& s, microseconds after) {
  auto generation = ++s.detectGeneration;
  s.detectTimer.expires_after(after);
  s.detectTimer.async_wait([this, &s, generation](const boost::system::error_code& ec) {
    if (ec || generation != s.detectGeneration) {
      return;
    }
    std::lock_guard lock(mutex_);
    execute(s, s.session.onDetectTimer());
  });
}

void BfdService::stop(std::function<void()> done) {
  if (!running()) {
    if (done) {
      done();
    }
    return;
  }
  asio::post(*io_, [this, done = std::move(done)]() mutable {
    {
      std::lock_guard lock(mutex_);
      for (auto& s : sessions_) {
        auto actions = s->session.adminDown();
        for (const auto& a : actions) {
          if (const auto* t = std::get_if<bfd::Transmit>(&a)) {
            s->adminDownPacket = t->packet;
          }
        }
        execute(*s, std::move(actions));
      }
    }
    repeatAdminDown(std::make_shared<asio::steady_timer>(*io_), kStopRepeats, std::move(done));
  });
}

void BfdService::repeatAdminDown(std::shared_ptr<asio::steady_timer> timer, int left,
                                 std::function<void()> done) {
  if (left == 0) {
    finishStop(std::move(done));
    return;
  }
  timer->expires_after(kStopRepeat);
  timer->async_wait([this, timer, left, done = std::move(done)](
                        const boost::system::error_code&) mutable {
    {
      std::lock_guard lock(mutex_);
      for (auto& s : sessions_) {
        if (s->adminDownPacket) {
          transmit(*s, *s->adminDownPacket);
        }
      }
    }
    repeatAdminDown(std::move(timer), left - 1, std::move(done));
  });
}

void BfdService::finishStop(std::function<void()> done) {
  {
    std::lock_guard lock(mutex_);
    boost::system::error_code ignored;
    for (auto& s : sessions_) {
      ++s->txGeneration;
      ++s->detectGeneration;
      s->txTimer.cancel();
      s->detectTimer.cancel();
      s->socket.close(ignored);
    }
    for (auto& r : receivers_) {
      r->socket.close(ignored);
    }
  }
  work_.reset();
  asio::post(speakerIo_, [this, done = std::move(done)] {
    // The thread ends once the closed sockets' cancelled handlers have run.
    if (thread_.joinable()) {
      thread_.join();
    }
    if (done) {
      done();
    }
  });
}

std::vector<BfdSessionStatus> BfdService::status() const {
  std::vector<BfdSessionStatus> out;
  std::lock_guard lock(mutex_);
  if (sessions_.empty()) {
    for (const auto& p : peers_) {
      BfdSessionStatus st;
      st.address = p.address;
      st.peer = p.address.toString();
      st.multihop = p.settings.multihop;
      st.lastReason = "not started (this instance is not speaking)";
      out.push_back(std::move(st));
    }
    return out;
  }
  for (const auto& s : sessions_) {
    BfdSessionStatus st;
    st.address = s->peer.address;
    st.peer = s->peer.address.toString();
    st.multihop = s->peer.settings.multihop;
    st.running = s->socket.is_open();
    st.state = s->session.state();
    st.remoteState = s->session.remoteState();
    st.diagnostic = s->session.localDiagnostic();
    st.remoteDiagnostic = s->remoteDiagnostic;
    st.localDiscriminator = s->session.localDiscriminator();
    st.remoteDiscriminator = s->session.remoteDiscriminator();
    st.txInterval = s->session.transmitInterval();
    st.detectionTime = s->session.detectionTime();
    st.counters = s->session.counters();
    st.transitionsTo = s->transitionsTo;
    st.lastReason = s->lastReason;
    st.localEndpoint = s->localEndpoint;
    st.sendError = s->sendError;
    st.sendErrors = s->sendErrors;
    st.malformed = s->malformed;
    st.ttlDropped = s->ttlDropped;
    st.since = s->since;
    out.push_back(std::move(st));
  }
  return out;
}

}  // namespace vipd::daemon
