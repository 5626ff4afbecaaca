// RFC 5880 asynchronous mode: the control packet codec (section 4.1) and one session's state
// machine (sections 6.2, 6.5, 6.8). Demand mode and the Echo function are not used by this end:
// we never set D or C and advertise a Required Min Echo RX Interval of zero.
#include "bfd/bfd.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

#include "bytes/big_endian.h"

namespace vipd::bfd {

namespace {

constexpr uint8_t kVersion = 1;
// Intervals are 32-bit microsecond counts on the wire.
constexpr microseconds kMaxWireInterval{std::numeric_limits<uint32_t>::max()};

uint32_t wireMicroseconds(microseconds interval) {
  return static_cast<uint32_t>(std::clamp(interval, microseconds{0}, kMaxWireInterval).count());
}

// Flag bits of the second octet (section 4.1: Sta(2) P F C A D M).
constexpr uint8_t kPollBit = 0x20;
constexpr uint8_t kFinalBit = 0x10;
constexpr uint8_t kControlPlaneIndependentBit = 0x08;
constexpr uint8_t kAuthenticationBit = 0x04;
constexpr uint8_t kDemandBit = 0x02;
constexpr uint8_t kMultipointBit = 0x01;

// The daemon's configuration is validated before it reaches us; these two would make every packet
// we send invalid (section 6.8.6), so they are our bug, not input to handle.
void checkConfig(const SessionConfig& config) {
  if (config.localDiscriminator == 0) {
    std::fprintf(stderr, "bfd::Session: local discriminator must not be 0 (RFC 5880 6.8.1)\n");
    std::abort();
  }
  if (config.detectMult == 0) {
    std::fprintf(stderr, "bfd::Session: detect mult must not be 0 (RFC 5880 4.1)\n");
    std::abort();
  }
}

// Desired Min TX must be non-zero (section 4.1); both intervals must fit the 32-bit wire field.
SessionConfig clampIntervals(SessionConfig config) {
  config.desiredMinTxInterval =
      std::clamp(config.desiredMinTxInterval, microseconds{1}, kMaxWireInterval);
  config.requiredMinRxInterval =
      std::clamp(config.requiredMinRxInterval, microseconds{0}, kMaxWireInterval);
  return config;
}

std::string formatMs(microseconds interval) {
  return fmt::format("{:g} ms", static_cast<double>(interval.count()) / 1000.0);
}

}  // namespace

std::string_view stateName(State state) {
  switch (state) {
    case State::AdminDown:
      return "AdminDown";
    case State::Down:
      return "Down";
    case State::Init:
      return "Init";
    case State::Up:
      return "Up";
  }
  return "Invalid";
}

std::string_view diagnosticName(Diagnostic diagnostic) {
  switch (diagnostic) {
    case Diagnostic::None:
      return "No Diagnostic";
    case Diagnostic::ControlDetectionTimeExpired:
      return "Control Detection Time Expired";
    case Diagnostic::EchoFunctionFailed:
      return "Echo Function Failed";
    case Diagnostic::NeighborSignaledSessionDown:
      return "Neighbor Signaled Session Down";
    case Diagnostic::ForwardingPlaneReset:
      return "Forwarding Plane Reset";
    case Diagnostic::PathDown:
      return "Path Down";
    case Diagnostic::ConcatenatedPathDown:
      return "Concatenated Path Down";
    case Diagnostic::AdministrativelyDown:
      return "Administratively Down";
    case Diagnostic::ReverseConcatenatedPathDown:
      return "Reverse Concatenated Path Down";
  }
  // decode() keeps the 5-bit field as it is; values 9-31 are reserved in RFC 5880.
  return "Reserved";
}

std::vector<uint8_t> encode(const ControlPacket& packet) {
  bytes::ByteWriter out;
  out.u8(static_cast<uint8_t>(((packet.version & 0x07) << 5) |
                              (static_cast<uint8_t>(packet.diagnostic) & 0x1f)));
  uint8_t flags = static_cast<uint8_t>((static_cast<uint8_t>(packet.state) & 0x03) << 6);
  flags |= packet.poll ? kPollBit : 0;
  flags |= packet.final ? kFinalBit : 0;
  flags |= packet.controlPlaneIndependent ? kControlPlaneIndependentBit : 0;
  flags |= packet.authenticationPresent ? kAuthenticationBit : 0;
  flags |= packet.demand ? kDemandBit : 0;
  flags |= packet.multipoint ? kMultipointBit : 0;
  out.u8(flags);
  out.u8(packet.detectMult);
  out.u8(static_cast<uint8_t>(kControlPacketSize));
  out.u32(packet.myDiscriminator);
  out.u32(packet.yourDiscriminator);
  out.u32(wireMicroseconds(packet.desiredMinTxInterval));
  out.u32(wireMicroseconds(packet.requiredMinRxInterval));
  out.u32(wireMicroseconds(packet.requiredMinEchoRxInterval));
  return std::move(out).take();
}

tl::expected<ControlPacket, std::string> decode(std::span<const uint8_t> datagram) {
  if (datagram.size() < kControlPacketSize) {
    return tl::unexpected(
        fmt::format("datagram is {} bytes, shorter than the {}-byte BFD control packet",
                    datagram.size(), kControlPacketSize));
  }
  ControlPacket packet;
  // Checks in the order of RFC 5880 section 6.8.6.
  packet.version = datagram[0] >> 5;
  if (packet.version != kVersion) {
    return tl::unexpected(
        fmt::format("version {} is not supported (expected {})", packet.version, kVersion));
  }
  const size_t length = datagram[3];
  if (length < kControlPacketSize) {
    return tl::unexpected(fmt::format("length field {} is less than the {}-byte mandatory section",
                                      length, kControlPacketSize));
  }
  if (length > datagram.size()) {
    return tl::unexpected(
        fmt::format("length field {} exceeds the {}-byte datagram", length, datagram.size()));
  }
  packet.diagnostic = static_cast<Diagnostic>(datagram[0] & 0x1f);
  const uint8_t flags = datagram[1];
  packet.state = static_cast<State>(flags >> 6);
  packet.poll = (flags & kPollBit) != 0;
  packet.final = (flags & kFinalBit) != 0;
  packet.controlPlaneIndependent = (flags & kControlPlaneIndependentBit) != 0;
  packet.authenticationPresent = (flags & kAuthenticationBit) != 0;
  packet.demand = (flags & kDemandBit) != 0;
  packet.multipoint = (flags & kMultipointBit) != 0;
  packet.detectMult = datagram[2];
  packet.myDiscriminator = bytes::load32(datagram, 4);
  packet.yourDiscriminator = bytes::load32(datagram, 8);
  packet.desiredMinTxInterval = microseconds{bytes::load32(datagram, 12)};
  packet.requiredMinRxInterval = microseconds{bytes::load32(datagram, 16)};
  packet.requiredMinEchoRxInterval = microseconds{bytes::load32(datagram, 20)};
  if (packet.detectMult == 0) {
    return tl::unexpected(std::string("detect mult is 0"));
  }
  if (packet.multipoint) {
    return tl::unexpected(std::string("multipoint (M) bit is set"));
  }
  if (packet.myDiscriminator == 0) {
    return tl::unexpected(std::string("my discriminator is 0"));
  }
  if (packet.yourDiscriminator == 0 && packet.state != State::Down &&
      packet.state != State::AdminDown) {
    return tl::unexpected(
        fmt::format("your discriminator is 0 in state {} (allowed only in Down or AdminDown)",
                    stateName(packet.state)));
  }
  if (packet.authenticationPresent) {
    return tl::unexpected(std::string("authentication is not supported (A bit set)"));
  }
  return packet;
}

// ---- Session ----

Session::Session(SessionConfig config) : config_(clampIntervals(config)), rng_(config.jitterSeed) {
  checkConfig(config_);
  // Section 6.8.1: bfd.DesiredMinTxInterval starts at no less than one second.
  advertisedDesiredMinTx_ = std::max(config_.desiredMinTxInterval, kSlowTxInterval);
  advertisedRequiredMinRx_ = config_.requiredMinRxInterval;
  activeDesiredMinTx_ = advertisedDesiredMinTx_;
  activeRequiredMinRx_ = advertisedRequiredMinRx_;
}

microseconds Session::transmitInterval() const {
  // Section 6.8.2: the larger of what we want and what the remote can take.
  return std::max(activeDesiredMinTx_, remoteMinRx_);
}

microseconds Session::detectionTime() const {
  // Section 6.8.4: the remote's Detect Mult times the interval agreed for its packets.
  return remoteDetectMult_ * std::max(activeRequiredMinRx_, remoteDesiredMinTx_);
}

ControlPacket Session::buildPacket(bool final) const {
  ControlPacket packet;
  packet.version = kVersion;
  packet.diagnostic = localDiag_;
  packet.state = state_;
  // Section 6.5: Poll and Final never together; the next periodic packet carries P again.
  packet.poll = pollActive_ && !final;
  packet.final = final;
  packet.detectMult = config_.detectMult;
  packet.myDiscriminator = config_.localDiscriminator;
  packet.yourDiscriminator = remoteDiscr_;
  packet.desiredMinTxInterval = advertisedDesiredMinTx_;
  packet.requiredMinRxInterval = advertisedRequiredMinRx_;
  packet.requiredMinEchoRxInterval = microseconds{0};
  return packet;
}

void Session::emitTransmit(Actions& out, bool final) {
  out.push_back(Transmit{buildPacket(final)});
  ++counters_.packetsSent;
}

void Session::armTransmit(Actions& out) {
  out.push_back(ArmTransmit{jittered(transmitInterval())});
}

microseconds Session::jittered(microseconds interval) {
  // Section 6.8.7: reduce each interval by 0-25%, or by 10-25% when bfd.DetectMult is 1 (so that
  // a single packet is never late relative to the remote's detection time).
  const int64_t us = interval.count();
  if (us <= 0) {
    return interval;
  }
  const int64_t maxReduction = us / 4;
  int64_t minReduction = config_.detectMult == 1 ? (us + 9) / 10 : 0;
  minReduction = std::min(minReduction, maxReduction);
  std::uniform_int_distribution<int64_t> reduction(minReduction, maxReduction);
  return microseconds{us - reduction(rng_)};
}

void Session::transition(Actions& out, State to, Diagnostic diag, std::string reason) {
  const State from = state_;
  state_ = to;
  localDiag_ = diag;
  if (to == State::Up) {
    ++counters_.upTransitions;
  }
  if (from == State::Up) {
    ++counters_.downTransitions;
  }
  out.push_back(StateChanged{from, to, diag, std::move(reason)});
}

// Recomputes bfd.DesiredMinTxInterval / bfd.RequiredMinRxInterval from the configuration and the
// state, applies them as section 6.8.3 allows, and starts (or extends) a Poll Sequence when they
// changed. Returns whether they changed.
bool Session::updateIntervals() {
  const bool up = state_ == State::Up;
  // Section 6.8.3: while not Up, bfd.DesiredMinTxInterval is at least one second.
  const microseconds desiredTx =
      up ? config_.desiredMinTxInterval : std::max(config_.desiredMinTxInterval, kSlowTxInterval);
  const microseconds requiredRx = config_.requiredMinRxInterval;
  const bool changed =
      desiredTx != advertisedDesiredMinTx_ || requiredRx != advertisedRequiredMinRx_;
  advertisedDesiredMinTx_ = desiredTx;
  advertisedRequiredMinRx_ = requiredRx;
  if (!up) {
    // The timing rules below protect a session that is Up; otherwise the values apply at once.
    activeDesiredMinTx_ = desiredTx;
    activeRequiredMinRx_ = requiredRx;
  } else {
    // A faster transmit rate and a longer detection time are safe at once; a slower rate waits
    // until the remote has seen it (its detection time), a shorter detection time until the
    // remote sends faster.
    activeDesiredMinTx_ = std::min(activeDesiredMinTx_, desiredTx);
    activeRequiredMinRx_ = std::max(activeRequiredMinRx_, requiredRx);
  }
  // "If either bfd.DesiredMinTxInterval or bfd.RequiredMinRxInterval is changed, a Poll Sequence
  // MUST be initiated." Not without a remote to answer it (as BIRD), nor while AdminDown, when
  // no Final is ever accepted.
  if (changed && remoteDiscr_ != 0 && state_ != State::AdminDown) {
    if (pollActive_) {
      // A Final may answer a packet sent before this change: poll again once it arrives.
      pollRepeat_ = true;
    } else {
      pollActive_ = true;
    }
  }
  return changed;
}

void Session::forgetRemote() {
  // Section 6.8.1 (bfd.RemoteDiscr) and 6.8.18 (bfd.RemoteMinRxInterval back to 1): after a
  // Detection Time of silence nothing learned from the remote holds any more.
  remoteDiscr_ = 0;
  remoteState_ = State::Down;
  remoteDetectMult_ = 0;
  remoteDemand_ = false;
  remoteMinRx_ = microseconds{1};
  remoteDesiredMinTx_ = microseconds{0};
  pollActive_ = false;
  pollRepeat_ = false;
}

Actions Session::start() {
  Actions out;
  if (state_ != State::AdminDown) {
    return out;
  }
  forgetRemote();
  adminDownPacketsLeft_ = 0;
  transition(out, State::Down, Diagnostic::None,
             "session enabled; sending at most one packet per second until Up");
  updateIntervals();
  emitTransmit(out, false);
  armTransmit(out);
  return out;
}

Actions Session::adminDown() {
  Actions out;
  if (state_ == State::AdminDown) {
    return out;
  }
  transition(out, State::AdminDown, Diagnostic::AdministrativelyDown,
             "session administratively disabled");
  // Section 6.8.6 discards everything received while AdminDown, so no Final could end a poll.
  pollActive_ = false;
  pollRepeat_ = false;
  updateIntervals();
  emitTransmit(out, false);
  out.push_back(CancelDetect{});
  // Section 6.8.16: keep sending AdminDown for at least a Detection Time. The remote's detection
  // time is our Detect Mult times the transmit interval, and jitter may cut each interval to 75%.
  adminDownPacketsLeft_ = (4 * config_.detectMult + 2) / 3;
  armTransmit(out);
  return out;
}

Actions Session::onPacket(const ControlPacket& packet) {
  Actions out;
  // Section 6.8.6: a non-zero Your Discriminator selects the session; this is not ours.
  if (packet.yourDiscriminator != 0 && packet.yourDiscriminator != config_.localDiscriminator) {
    ++counters_.packetsDropped;
    return out;
  }
  // "If bfd.SessionState is AdminDown: Discard the packet." We drop it before learning anything
  // from it: no detection timer runs while AdminDown, so what we learnt could not expire.
  if (state_ == State::AdminDown) {
    ++counters_.packetsDropped;
    return out;
  }
  ++counters_.packetsReceived;
  const microseconds intervalBefore = transmitInterval();

  remoteDiscr_ = packet.myDiscriminator;
  remoteState_ = packet.state;
  remoteDemand_ = packet.demand;
  remoteMinRx_ = packet.requiredMinRxInterval;
  remoteDesiredMinTx_ = packet.desiredMinTxInterval;
  remoteDetectMult_ = packet.detectMult;

  if (pollActive_ && packet.final) {
    if (pollRepeat_) {
      pollRepeat_ = false;  // the poll goes on for the values changed after it began
    } else {
      // Section 6.8.3: the remote has seen our values; the deferred ones take effect now.
      pollActive_ = false;
      activeDesiredMinTx_ = advertisedDesiredMinTx_;
      activeRequiredMinRx_ = advertisedRequiredMinRx_;
    }
  }

  // Section 6.8.6, the state machine of section 6.2.
  const State before = state_;
  if (remoteState_ == State::AdminDown) {
    if (state_ != State::Down) {
      transition(out, State::Down, Diagnostic::NeighborSignaledSessionDown,
                 fmt::format("neighbor (discriminator {:#x}) went AdminDown with diagnostic '{}'",
                             packet.myDiscriminator, diagnosticName(packet.diagnostic)));
    }
  } else if (state_ == State::Down) {
    if (remoteState_ == State::Down) {
      transition(out, State::Init, Diagnostic::None, "neighbor is Down: three-way handshake");
    } else if (remoteState_ == State::Init) {
      transition(out, State::Up, Diagnostic::None, "neighbor is in Init");
    }
  } else if (state_ == State::Init) {
    if (remoteState_ == State::Init || remoteState_ == State::Up) {
      transition(out, State::Up, Diagnostic::None,
                 fmt::format("neighbor is {}", stateName(remoteState_)));
    }
  } else if (state_ == State::Up && remoteState_ == State::Down) {
    transition(out, State::Down, Diagnostic::NeighborSignaledSessionDown,
               fmt::format("neighbor signaled Down with diagnostic '{}'",
                           diagnosticName(packet.diagnostic)));
  }
  const bool stateChanged = state_ != before;
  const bool intervalsChanged = stateChanged && updateIntervals();

  // Section 6.5: answer a Poll at once, whatever the transmit timer says. A state change (and the
  // Poll Sequence that going Up starts, section 6.8.3) is sent at once too, so the handshake and
  // the switch to the fast rate do not wait for the slow timer.
  if (stateChanged || intervalsChanged || packet.poll) {
    emitTransmit(out, packet.poll);
  }
  if (stateChanged || intervalsChanged || transmitInterval() != intervalBefore) {
    // Section 6.8.3: a smaller bfd.RemoteMinRxInterval is honoured immediately.
    armTransmit(out);
  }
  out.push_back(ArmDetect{detectionTime()});
  return out;
}

Actions Session::onTransmitTimer() {
  Actions out;
  if (state_ == State::AdminDown) {
    if (adminDownPacketsLeft_ <= 0) {
      return out;  // the final AdminDown packets are out (or the session never started)
    }
    --adminDownPacketsLeft_;
    if (remoteMinRx_ != microseconds{0}) {
      emitTransmit(out, false);
    }
    if (adminDownPacketsLeft_ > 0) {
      armTransmit(out);
    }
    return out;
  }
  // Section 6.8.7: no periodic packets if the remote asked for none, nor while the remote is in
  // Demand mode with both ends Up and no Poll Sequence to send.
  const bool remoteWantsNone = remoteMinRx_ == microseconds{0};
  const bool demandQuiet =
      remoteDemand_ && state_ == State::Up && remoteState_ == State::Up && !pollActive_;
  if (!remoteWantsNone && !demandQuiet) {
    emitTransmit(out, false);
  }
  // Keep the timer running even when silent, so that sending resumes when the remote allows it.
  armTransmit(out);
  return out;
}

Actions Session::onDetectTimer() {
  Actions out;
  if (state_ == State::AdminDown || remoteDetectMult_ == 0) {
    return out;  // a stale expiry: nothing is being detected
  }
  const microseconds expired = detectionTime();
  const microseconds intervalBefore = transmitInterval();
  const bool live = state_ == State::Init || state_ == State::Up;
  forgetRemote();
  if (!live) {
    // Down: nothing to report, but the remote's discriminator and limits are forgotten.
    if (transmitInterval() != intervalBefore) {
      armTransmit(out);
    }
    return out;
  }
  // Section 6.8.4.
  transition(
      out, State::Down, Diagnostic::ControlDetectionTimeExpired,
      fmt::format("no packet from the neighbor within the detection time ({})", formatMs(expired)));
  updateIntervals();
  emitTransmit(out, false);
  armTransmit(out);
  return out;
}

Actions Session::setIntervals(microseconds desiredMinTx, microseconds requiredMinRx) {
  Actions out;
  SessionConfig updated = config_;
  updated.desiredMinTxInterval = desiredMinTx;
  updated.requiredMinRxInterval = requiredMinRx;
  config_ = clampIntervals(updated);
  const microseconds intervalBefore = transmitInterval();
  const microseconds detectionBefore = detectionTime();
  if (!updateIntervals() || state_ == State::AdminDown) {
    return out;
  }
  // Start the Poll Sequence now rather than at the next timer, which may be a slow second away.
  // Without a poll (no remote yet) the next periodic packet carries the new values.
  if (pollActive_) {
    emitTransmit(out, false);
  }
  if (pollActive_ || transmitInterval() != intervalBefore) {
    armTransmit(out);
  }
  if (remoteDetectMult_ != 0 && detectionTime() != detectionBefore) {
    // A detection time that grew applies at once (measured from now, which errs on the long
    // side); while not Up a shorter one applies at once too.
    out.push_back(ArmDetect{detectionTime()});
  }
  return out;
}

}  // namespace vipd::bfd
