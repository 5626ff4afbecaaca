// The I/O side of BFD (RFC 5880 asynchronous mode; RFC 5881 single hop, RFC 5883 multihop): one
// bfd::Session per peer with `bfd.enabled`, UDP sockets and timers. The protocol itself is in
// bfd/ (pure); this file only carries out its actions. The sockets are opened and read with the
// options the RFCs require by sockets.h.
//
// BFD runs on its own thread and io_context, not on the speaker's loop: a 50 ms transmit timer
// must not slip while the speaker's loop is busy with a health check, a netlink dump or a burst
// of BGP messages (issue 6). The thread owns every Session, socket and timer. The speaker talks to
// it only through start()/stop()/status(); state changes come back as callbacks posted to the
// speaker's io_context, so the speaker never sees BFD state from another thread.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <tl/expected.hpp>

#include "bfd/bfd.h"
#include "bgp/ip_address.h"
#include "config/config.h"
#include "daemon/base/logger.h"

namespace vipd::daemon {

namespace asio = boost::asio;

// One peer's BFD session as configured. The address names the session: a reload may add and
// remove peers (issue 29), so nothing refers to one by its position in the config.
struct BfdPeer {
  bgp::IpAddress address;
  std::optional<bgp::IpAddress> sourceAddress;
  config::Bfd settings;
};

// A consistent snapshot of one session, for status, metrics and readiness.
struct BfdSessionStatus {
  bgp::IpAddress address;
  std::string peer;  // address.toString()
  bool multihop = false;
  bool running = false;  // between start() and stop()
  bfd::State state = bfd::State::AdminDown;
  bfd::State remoteState = bfd::State::Down;
  bfd::Diagnostic diagnostic = bfd::Diagnostic::None;
  bfd::Diagnostic remoteDiagnostic = bfd::Diagnostic::None;
  uint32_t localDiscriminator = 0;
  uint32_t remoteDiscriminator = 0;
  std::chrono::microseconds txInterval{0};     // negotiated, before jitter
  std::chrono::microseconds detectionTime{0};  // what this end applies
  bfd::SessionCounters counters;
  std::array<uint64_t, 4> transitionsTo{};  // indexed by bfd::State
  std::string lastReason;                   // why the last state change happened
  std::string localEndpoint;                // address:port packets are sent from
  std::string sendError;                    // the last transmit error, empty once one succeeds
  uint64_t sendErrors = 0;
  uint64_t malformed = 0;   // datagrams from the peer that failed decode()
  uint64_t ttlDropped = 0;  // single-hop packets from the peer with a TTL other than 255
  std::chrono::steady_clock::time_point since{};  // last state change
};

struct BfdStateChange {
  bgp::IpAddress peer;
  bfd::State from = bfd::State::AdminDown;
  bfd::State to = bfd::State::AdminDown;
  bfd::Diagnostic diagnostic = bfd::Diagnostic::None;
  bfd::State remoteState = bfd::State::Down;  // as last received
  std::string reason;
};

class BfdService {
 public:
  using OnStateChange = std::function<void(const BfdStateChange&)>;

  // `onChange` runs on `speakerIo`'s thread.
  BfdService(asio::io_context& speakerIo, const Logger& log, std::vector<BfdPeer> peers,
             OnStateChange onChange);
  ~BfdService();
  BfdService(const BfdService&) = delete;
  BfdService& operator=(const BfdService&) = delete;

  bool empty() const { return peers_.empty(); }
  bool running() const { return thread_.joinable(); }

  // Opens the receive sockets (UDP 3784 and/or 4784, per family in use) and one transmit socket
  // per session, then starts the thread and every session. A port already in use, or any other
  // socket error, is returned as one sentence and nothing is left open. No-op when running.
  [[nodiscard]] tl::expected<void, std::string> start();
  // A reload changed the peers (issue 29): sessions whose peer is gone or whose settings changed
  // say AdminDown (RFC 5880 section 6.8.16) and end; new ones start; the others run on untouched.
  // While not running, only the list start() uses changes. A socket that cannot be opened for a
  // new session is returned as one sentence and nothing changes.
  [[nodiscard]] tl::expected<void, std::string> setPeers(std::vector<BfdPeer> peers);
  // Clean stop (RFC 5880 section 6.8.16): every session goes AdminDown and says so to its peer
  // (so the peer does not take it for a failure), then the sockets close and the thread ends;
  // `done` runs on the speaker's io_context after that. Runs `done` at once when not running.
  void stop(std::function<void()> done);

  std::vector<BfdSessionStatus> status() const;

 private:
  struct Session;
  struct Receiver;

  tl::expected<void, std::string> openSockets();
  // A session for `peer` with a fresh discriminator, not yet started.
  std::unique_ptr<Session> makeSession(const BfdPeer& peer);
  // Its transmit socket: its own source port, TTL 255, connected to the peer.
  static tl::expected<void, std::string> openTransmitter(Session& s);
  // Logs the session's start (`why`: empty, or what started it) and starts it. BFD thread.
  void startSession(Session& s, std::string_view why);
  // The receivers `peers` need that are not open yet (one per family and hop count).
  tl::expected<std::vector<std::unique_ptr<Receiver>>, std::string> openReceivers(
      const std::vector<BfdPeer>& peers);
  void receive(Receiver& receiver);
  void onDatagram(const Receiver& receiver, std::span<const uint8_t> bytes,
                  const bgp::IpAddress& from, int ttl);
  Session* sessionFor(const bfd::ControlPacket& packet, const bgp::IpAddress& from,
                      bool multihop);
  void execute(Session& s, bfd::Actions actions);
  void transmit(Session& s, const bfd::ControlPacket& packet);
  void armTransmit(Session& s, std::chrono::microseconds after);
  void armDetect(Session& s, std::chrono::microseconds after);
  void repeatAdminDown(std::shared_ptr<asio::steady_timer> timer, int left,
                       std::function<void()> done);
  void finishStop(std::function<void()> done);
  static uint32_t newDiscriminator(const std::vector<uint32_t>& taken);

  asio::io_context& speakerIo_;
  const Logger& log_;
  std::vector<BfdPeer> peers_;
  OnStateChange onChange_;

  // Everything below belongs to the BFD thread while it runs. mutex_ guards the sessions'
  // state against status() from the speaker's thread.
  std::unique_ptr<asio::io_context> io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Session>> sessions_;
  std::vector<std::unique_ptr<Receiver>> receivers_;
  std::vector<uint32_t> usedDiscriminators_;  // never reused within one process
};

}  // namespace vipd::daemon
