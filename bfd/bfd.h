// Bidirectional Forwarding Detection (RFC 5880, asynchronous mode; RFC 5881 single hop and
// RFC 5883 multihop framing is the daemon's job): the control packet codec and one session's
// state machine. Pure, like bgp/: no sockets, no clock. The daemon feeds a Session decoded
// packets and timer expiries and carries out the Actions it returns, in order; time exists only
// as Arm actions, so tests drive every transition without sleeping.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <tl/expected.hpp>

namespace vipd::bfd {

using std::chrono::microseconds;

inline constexpr uint16_t kSingleHopPort = 3784;  // RFC 5881
inline constexpr uint16_t kMultihopPort = 4784;   // RFC 5883
inline constexpr size_t kControlPacketSize = 24;  // without authentication
// RFC 5880 section 6.8.3: at most one packet per second while the session is not Up.
inline constexpr microseconds kSlowTxInterval{1000000};

enum class State : uint8_t { AdminDown = 0, Down = 1, Init = 2, Up = 3 };
std::string_view stateName(State state);

enum class Diagnostic : uint8_t {
  None = 0,
  ControlDetectionTimeExpired = 1,
  EchoFunctionFailed = 2,
  NeighborSignaledSessionDown = 3,
  ForwardingPlaneReset = 4,
  PathDown = 5,
  ConcatenatedPathDown = 6,
  AdministrativelyDown = 7,
  ReverseConcatenatedPathDown = 8,
};
std::string_view diagnosticName(Diagnostic diagnostic);

// RFC 5880 section 4.1, the mandatory section only (vipd does not authenticate BFD; a packet
// with the A bit set is rejected by decode()).
struct ControlPacket {
  uint8_t version = 1;
  Diagnostic diagnostic = Diagnostic::None;
  State state = State::Down;
  bool poll = false;
  bool final = false;
  bool controlPlaneIndependent = false;
  bool authenticationPresent = false;
  bool demand = false;
  bool multipoint = false;
  uint8_t detectMult = 3;
  uint32_t myDiscriminator = 0;
  uint32_t yourDiscriminator = 0;
  microseconds desiredMinTxInterval{0};
  microseconds requiredMinRxInterval{0};
  microseconds requiredMinEchoRxInterval{0};
  auto operator<=>(const ControlPacket&) const = default;
};

std::vector<uint8_t> encode(const ControlPacket& packet);
// The reception checks of RFC 5880 section 6.8.6 that need no session: version 1, length at
// least 24 and at most the datagram, detect mult not zero, multipoint clear, my discriminator
// not zero, your discriminator zero only in state Down or AdminDown, no authentication. The
// error says which check failed.
tl::expected<ControlPacket, std::string> decode(std::span<const uint8_t> datagram);

struct SessionConfig {
  microseconds desiredMinTxInterval{300000};
  microseconds requiredMinRxInterval{300000};
  uint8_t detectMult = 3;
  uint32_t localDiscriminator = 1;  // non-zero, unique per session in the daemon
  uint64_t jitterSeed = 0;
};

// ---- Actions ----

// Send this packet now.
struct Transmit {
  ControlPacket packet;
};
// (Re)start the periodic transmit timer: the next packet is due after `after` (already
// jittered as RFC 5880 section 6.8.7 says).
struct ArmTransmit {
  microseconds after;
};
// (Re)start the detection timer: the session goes Down if no packet arrives within `after`.
struct ArmDetect {
  microseconds after;
};
struct CancelDetect {};
// The session changed state; `diagnostic` is the local diagnostic after the change.
struct StateChanged {
  State from;
  State to;
  Diagnostic diagnostic;
  std::string reason;
};
using Action = std::variant<Transmit, ArmTransmit, ArmDetect, CancelDetect, StateChanged>;
using Actions = std::vector<Action>;

struct SessionCounters {
  uint64_t packetsSent = 0;
  uint64_t packetsReceived = 0;
  uint64_t packetsDropped = 0;  // failed a session-level check (section 6.8.6)
  uint64_t upTransitions = 0;
  uint64_t downTransitions = 0;  // Up -> Down/AdminDown
};

class Session {
 public:
  explicit Session(SessionConfig config);

  // AdminDown -> Down: start sending (slowly, at least 1 s apart, until Up).
  [[nodiscard]] Actions start();
  // Clean stop: go AdminDown with diagnostic AdministrativelyDown and send that once, so the
  // peer does not treat the stop as a failure (section 6.8.16). The daemon may send the packet
  // returned here a few more times before closing.
  // The returned actions are StateChanged, Transmit, CancelDetect and ArmTransmit. While the
  // daemon keeps the transmit timer running, onTransmitTimer() goes on sending AdminDown for at
  // least a Detection Time (section 6.8.16: ceil(4 x detect mult / 3) more packets, since jitter
  // may shorten an interval to 75%), then returns nothing, so the timer stops by itself. Packets
  // received while AdminDown are dropped. Calling adminDown() again, or before start(), does
  // nothing; start() afterwards begins a fresh session (the remote's state is forgotten).
  [[nodiscard]] Actions adminDown();
  // A packet from the peer that passed decode() and the daemon's TTL/hop-limit check.
  [[nodiscard]] Actions onPacket(const ControlPacket& packet);
  [[nodiscard]] Actions onTransmitTimer();
  [[nodiscard]] Actions onDetectTimer();
  // New local intervals (e.g. config reload): a Poll sequence while Up (section 6.8.3).
  [[nodiscard]] Actions setIntervals(microseconds desiredMinTx, microseconds requiredMinRx);

  State state() const { return state_; }
  State remoteState() const { return remoteState_; }
  Diagnostic localDiagnostic() const { return localDiag_; }
  uint32_t localDiscriminator() const { return config_.localDiscriminator; }
  uint32_t remoteDiscriminator() const { return remoteDiscr_; }
  // The negotiated periodic transmit interval before jitter (section 6.8.7).
  microseconds transmitInterval() const;
  // The detection time this end applies (section 6.8.4, asynchronous mode).
  microseconds detectionTime() const;
  const SessionCounters& counters() const { return counters_; }
  bool pollInProgress() const { return pollActive_; }

 private:
  // implementation detail members; see bfd.cc
  ControlPacket buildPacket(bool final) const;
  void emitTransmit(Actions& out, bool final);
  void armTransmit(Actions& out);
  void transition(Actions& out, State to, Diagnostic diag, std::string reason);
  bool updateIntervals();
  void forgetRemote();
  microseconds jittered(microseconds interval);

  SessionConfig config_;  // the configured intervals; setIntervals() replaces them
  State state_ = State::AdminDown;
  State remoteState_ = State::Down;
  Diagnostic localDiag_ = Diagnostic::None;
  uint32_t remoteDiscr_ = 0;
  uint8_t remoteDetectMult_ = 0;  // 0: no packet since start or since the last detection expiry
  bool remoteDemand_ = false;
  microseconds remoteMinRx_{1};  // bfd.RemoteMinRxInterval starts at 1 us
  microseconds remoteDesiredMinTx_{0};
  // bfd.DesiredMinTxInterval and bfd.RequiredMinRxInterval: what every packet advertises.
  microseconds advertisedDesiredMinTx_;
  microseconds advertisedRequiredMinRx_;
  // What this end's own timing uses (transmit interval, detection time). While Up, a larger
  // desired min TX and a smaller required min RX wait for the Final (section 6.8.3).
  microseconds activeDesiredMinTx_;
  microseconds activeRequiredMinRx_;
  bool pollActive_ = false;
  bool pollRepeat_ = false;  // the intervals changed again while the poll was running
  int adminDownPacketsLeft_ = 0;
  std::mt19937_64 rng_;
  SessionCounters counters_;
};

}  // namespace vipd::bfd
