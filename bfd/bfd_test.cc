// BFD (RFC 5880 asynchronous mode): byte-exact codec vectors both ways, every rejection decode()
// makes, and Session driven by events only. Time exists only as onTransmitTimer/onDetectTimer
// calls and the Arm actions they answer with; nothing sleeps. Two sessions are wired back to back
// through encode()/decode() for the handshakes.
#include "bfd/bfd.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <ostream>
#include <random>
#include <vector>

namespace vipd::bfd {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr uint32_t kLocal = 0x01020304;
constexpr uint32_t kRemote = 0x0A0B0C0D;

// ---- helpers ----

template <typename T>
std::vector<T> ofType(const Actions& actions) {
  std::vector<T> out;
  for (const Action& action : actions) {
    if (const T* value = std::get_if<T>(&action)) {
      out.push_back(*value);
    }
  }
  return out;
}

std::vector<ControlPacket> transmitted(const Actions& actions) {
  std::vector<ControlPacket> out;
  for (const Transmit& t : ofType<Transmit>(actions)) {
    out.push_back(t.packet);
  }
  return out;
}

// The single ArmTransmit/ArmDetect in `actions`; fails the test if there is not exactly one.
microseconds armedTransmit(const Actions& actions) {
  auto arms = ofType<ArmTransmit>(actions);
  EXPECT_EQ(arms.size(), 1u);
  return arms.empty() ? microseconds{-1} : arms.front().after;
}
microseconds armedDetect(const Actions& actions) {
  auto arms = ofType<ArmDetect>(actions);
  EXPECT_EQ(arms.size(), 1u);
  return arms.empty() ? microseconds{-1} : arms.front().after;
}

struct Transition {
  State from;
  State to;
  Diagnostic diagnostic;
  bool operator==(const Transition&) const = default;
};
std::vector<Transition> transitions(const Actions& actions) {
  std::vector<Transition> out;
  for (const StateChanged& change : ofType<StateChanged>(actions)) {
    out.push_back({change.from, change.to, change.diagnostic});
  }
  return out;
}

void PrintTo(const Transition& t, std::ostream* os) {
  *os << stateName(t.from) << "->" << stateName(t.to) << " (" << diagnosticName(t.diagnostic)
      << ")";
}

// Jittered interval bounds of RFC 5880 section 6.8.7.
void expectJittered(microseconds after, microseconds interval) {
  EXPECT_LE(after, interval);
  EXPECT_GE(after, interval * 3 / 4);
}

SessionConfig config(microseconds tx = 300ms, microseconds rx = 300ms, uint8_t mult = 3,
                     uint32_t discriminator = kLocal) {
  SessionConfig c;
  c.desiredMinTxInterval = tx;
  c.requiredMinRxInterval = rx;
  c.detectMult = mult;
  c.localDiscriminator = discriminator;
  c.jitterSeed = 42;
  return c;
}

// What the remote end sends, built by hand (not by a Session).
struct Peer {
  microseconds tx = 300ms;
  microseconds rx = 300ms;
  uint8_t mult = 3;

  ControlPacket packet(State state, bool poll = false, bool final = false,
                       uint32_t your = kLocal) const {
    ControlPacket p;
    p.state = state;
    p.poll = poll;
    p.final = final;
    p.detectMult = mult;
    p.myDiscriminator = kRemote;
    p.yourDiscriminator = your;
    // RFC 5880 6.8.3: a well-behaved peer advertises at least 1 s until it is Up.
    p.desiredMinTxInterval = state == State::Up ? tx : std::max(tx, kSlowTxInterval);
    p.requiredMinRxInterval = rx;
    return p;
  }
};

// A started session brought Up by a peer in Init (Down + remote Init -> Up).
Session upSession(SessionConfig c = config(), Peer peer = {}) {
  Session s(c);
  (void)s.start();
  (void)s.onPacket(peer.packet(State::Init, false, false, 0));
  EXPECT_EQ(s.state(), State::Up);
  return s;
}

// As upSession, with the Poll Sequence that going Up started answered by the peer.
Session upSessionPollDone(SessionConfig c = config(), Peer peer = {}) {
  Session s = upSession(c, peer);
  (void)s.onPacket(peer.packet(State::Up, false, true));
  EXPECT_FALSE(s.pollInProgress());
  return s;
}

// ---- codec ----

// RFC 5880 section 4.1, one row per 32-bit word.
const std::vector<uint8_t> kDownVector = {
    0x20, 0x40, 0x03, 0x18,  // version 1, diag 0 | Sta Down, no flags | Detect Mult 3 | Length 24
    0x01, 0x02, 0x03, 0x04,  // My Discriminator
    0x00, 0x00, 0x00, 0x00,  // Your Discriminator: not known yet
    0x00, 0x04, 0x93, 0xE0,  // Desired Min TX 300000 us
    0x00, 0x04, 0x93, 0xE0,  // Required Min RX 300000 us
    0x00, 0x00, 0x00, 0x00,  // Required Min Echo RX 0: no Echo
};
ControlPacket downPacket() {
  ControlPacket p;
  p.state = State::Down;
  p.detectMult = 3;
  p.myDiscriminator = 0x01020304;
  p.desiredMinTxInterval = 300ms;
  p.requiredMinRxInterval = 300ms;
  return p;
}

const std::vector<uint8_t> kUpPollVector = {
    0x20, 0xE0, 0x05, 0x18,  // version 1, diag 0 | Sta Up (0xC0) + P (0x20) | mult 5 | Length 24
    0x0A, 0x0B, 0x0C, 0x0D,  // My Discriminator
    0x01, 0x02, 0x03, 0x04,  // Your Discriminator
    0x00, 0x00, 0xC3, 0x50,  // Desired Min TX 50000 us
    0x00, 0x01, 0x86, 0xA0,  // Required Min RX 100000 us
    0x00, 0x00, 0x00, 0x00,  // Required Min Echo RX 0
};
ControlPacket upPollPacket() {
  ControlPacket p;
  p.state = State::Up;
  p.poll = true;
  p.detectMult = 5;
  p.myDiscriminator = 0x0A0B0C0D;
  p.yourDiscriminator = 0x01020304;
  p.desiredMinTxInterval = 50ms;
  p.requiredMinRxInterval = 100ms;
  return p;
}

const std::vector<uint8_t> kUpFinalVector = {
    0x20, 0xD0, 0x03, 0x18,  // version 1, diag 0 | Sta Up (0xC0) + F (0x10) | mult 3 | Length 24
    0x01, 0x02, 0x03, 0x04,  // My Discriminator
    0x0A, 0x0B, 0x0C, 0x0D,  // Your Discriminator
    0x00, 0x0F, 0x42, 0x40,  // Desired Min TX 1000000 us
    0x00, 0x00, 0x00, 0x00,  // Required Min RX 0: send me nothing
    0x00, 0x00, 0x27, 0x10,  // Required Min Echo RX 10000 us
};
ControlPacket upFinalPacket() {
  ControlPacket p;
  p.state = State::Up;
  p.final = true;
  p.detectMult = 3;
  p.myDiscriminator = 0x01020304;
  p.yourDiscriminator = 0x0A0B0C0D;
  p.desiredMinTxInterval = 1s;
  p.requiredMinRxInterval = 0us;
  p.requiredMinEchoRxInterval = 10ms;
  return p;
}

const std::vector<uint8_t> kAdminDownVector = {
    0x27, 0x00, 0x03, 0x18,  // version 1, diag 7 AdministrativelyDown | Sta AdminDown | 3 | 24
    0x01, 0x02, 0x03, 0x04,  // My Discriminator
    0x0A, 0x0B, 0x0C, 0x0D,  // Your Discriminator
    0x00, 0x0F, 0x42, 0x40,  // Desired Min TX 1000000 us (not Up: at least 1 s)
    0x00, 0x04, 0x93, 0xE0,  // Required Min RX 300000 us
    0x00, 0x00, 0x00, 0x00,  // Required Min Echo RX 0
};
ControlPacket adminDownPacket() {
  ControlPacket p;
  p.diagnostic = Diagnostic::AdministrativelyDown;
  p.state = State::AdminDown;
  p.detectMult = 3;
  p.myDiscriminator = kLocal;
  p.yourDiscriminator = kRemote;
  p.desiredMinTxInterval = 1s;
  p.requiredMinRxInterval = 300ms;
  return p;
}

// Init with diag 3, the C and D flags, and the largest interval the wire can carry.
const std::vector<uint8_t> kInitFlagsVector = {
    0x23, 0x8A, 0xFF, 0x18,  // version 1, diag 3 | Sta Init (0x80) + C (0x08) + D (0x02) | 255 | 24
    0xFF, 0xFF, 0xFF, 0xFF,  // My Discriminator
    0x80, 0x00, 0x00, 0x01,  // Your Discriminator
    0xFF, 0xFF, 0xFF, 0xFF,  // Desired Min TX 4294967295 us
    0x00, 0x00, 0x00, 0x01,  // Required Min RX 1 us
    0x00, 0x00, 0x00, 0x00,  // Required Min Echo RX 0
};
ControlPacket initFlagsPacket() {
  ControlPacket p;
  p.diagnostic = Diagnostic::NeighborSignaledSessionDown;
  p.state = State::Init;
  p.controlPlaneIndependent = true;
  p.demand = true;
  p.detectMult = 255;
  p.myDiscriminator = 0xFFFFFFFF;
  p.yourDiscriminator = 0x80000001;
  p.desiredMinTxInterval = microseconds{0xFFFFFFFFu};
  p.requiredMinRxInterval = 1us;
  return p;
}

struct Vector {
  const char* name;
  std::vector<uint8_t> bytes;
  ControlPacket packet;
};
std::vector<Vector> vectors() {
  return {{"Down", kDownVector, downPacket()},
          {"Up+P", kUpPollVector, upPollPacket()},
          {"Up+F", kUpFinalVector, upFinalPacket()},
          {"AdminDown", kAdminDownVector, adminDownPacket()},
          {"Init+C+D", kInitFlagsVector, initFlagsPacket()}};
}

TEST(BfdCodec, EncodesEachVectorByteExact) {
  for (const Vector& v : vectors()) {
    SCOPED_TRACE(v.name);
    EXPECT_EQ(encode(v.packet), v.bytes);
  }
}

TEST(BfdCodec, DecodesEachVectorToItsFields) {
  for (const Vector& v : vectors()) {
    SCOPED_TRACE(v.name);
    auto decoded = decode(v.bytes);
    ASSERT_TRUE(decoded.has_value()) << decoded.error();
    EXPECT_EQ(*decoded, v.packet);
  }
}

TEST(BfdCodec, DecodeIgnoresBytesAfterTheLengthField) {
  // UDP payload longer than Length (RFC 5880 6.8.6 only rejects a Length beyond the payload).
  std::vector<uint8_t> bytes = kDownVector;
  bytes.insert(bytes.end(), {0xde, 0xad, 0xbe, 0xef});
  auto decoded = decode(bytes);
  ASSERT_TRUE(decoded.has_value()) << decoded.error();
  EXPECT_EQ(*decoded, downPacket());
}

TEST(BfdCodec, EncodeSaturatesIntervalsAtTheWireMaximum) {
  ControlPacket p = downPacket();
  p.desiredMinTxInterval = microseconds{0x1'0000'0005};  // does not fit 32 bits
  p.requiredMinRxInterval = microseconds{-5};
  std::vector<uint8_t> bytes = encode(p);
  EXPECT_THAT(std::vector<uint8_t>(bytes.begin() + 12, bytes.begin() + 20),
              ElementsAre(0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00));
}

TEST(BfdCodec, EveryAcceptedPacketReencodesToTheSameBytes) {
  // Random 24-byte packets with version 1 and Length 24: whatever decode() accepts, encode()
  // gives back bit for bit (no field is dropped or normalised).
  std::mt19937_64 rng(7);
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::vector<uint8_t> bytes(kControlPacketSize);
    for (uint8_t& b : bytes) {
      b = static_cast<uint8_t>(rng());
    }
    bytes[0] = static_cast<uint8_t>(0x20 | (bytes[0] & 0x1f));
    bytes[3] = 24;
    auto decoded = decode(bytes);
    if (decoded) {
      ++accepted;
      ASSERT_EQ(encode(*decoded), bytes);
    }
  }
  EXPECT_GT(accepted, 4000);  // about a quarter: A and M clear
}

// ---- decode rejections (RFC 5880 6.8.6), one per check ----

std::string rejection(const std::vector<uint8_t>& bytes) {
  auto decoded = decode(bytes);
  EXPECT_FALSE(decoded.has_value());
  return decoded ? std::string("<accepted>") : decoded.error();
}

TEST(BfdDecode, RejectsADatagramShorterThan24Bytes) {
  EXPECT_EQ(rejection({}), "datagram is 0 bytes, shorter than the 24-byte BFD control packet");
  for (size_t size = 0; size < kControlPacketSize; ++size) {
    std::vector<uint8_t> truncated(kDownVector.begin(), kDownVector.begin() + size);
    EXPECT_EQ(
        rejection(truncated),
        fmt::format("datagram is {} bytes, shorter than the 24-byte BFD control packet", size));
  }
}

TEST(BfdDecode, RejectsAVersionOtherThan1) {
  std::vector<uint8_t> bytes = kDownVector;
  bytes[0] = 0x40;  // version 2
  EXPECT_EQ(rejection(bytes), "version 2 is not supported (expected 1)");
  bytes[0] = 0x00;  // version 0
  EXPECT_EQ(rejection(bytes), "version 0 is not supported (expected 1)");
}

TEST(BfdDecode, RejectsALengthBelow24) {
  std::vector<uint8_t> bytes = kDownVector;
  bytes[3] = 20;
  EXPECT_EQ(rejection(bytes), "length field 20 is less than the 24-byte mandatory section");
  bytes[3] = 0;
  EXPECT_EQ(rejection(bytes), "length field 0 is less than the 24-byte mandatory section");
}

TEST(BfdDecode, RejectsALengthBeyondTheDatagram) {
  std::vector<uint8_t> bytes = kDownVector;
  bytes[3] = 48;
  EXPECT_EQ(rejection(bytes), "length field 48 exceeds the 24-byte datagram");
  bytes.push_back(0);
  bytes[3] = 26;
  EXPECT_EQ(rejection(bytes), "length field 26 exceeds the 25-byte datagram");
}

TEST(BfdDecode, RejectsDetectMultZero) {
  std::vector<uint8_t> bytes = kDownVector;
  bytes[2] = 0;
  EXPECT_EQ(rejection(bytes), "detect mult is 0");
}

TEST(BfdDecode, RejectsTheMultipointBit) {
  std::vector<uint8_t> bytes = kDownVector;
  bytes[1] |= 0x01;
  EXPECT_EQ(rejection(bytes), "multipoint (M) bit is set");
}

TEST(BfdDecode, RejectsMyDiscriminatorZero) {
  std::vector<uint8_t> bytes = kDownVector;
  std::fill(bytes.begin() + 4, bytes.begin() + 8, 0);
  EXPECT_EQ(rejection(bytes), "my discriminator is 0");
}

TEST(BfdDecode, RejectsYourDiscriminatorZeroUnlessDownOrAdminDown) {
  std::vector<uint8_t> bytes = kUpPollVector;
  std::fill(bytes.begin() + 8, bytes.begin() + 12, 0);
  EXPECT_EQ(rejection(bytes),
            "your discriminator is 0 in state Up (allowed only in Down or AdminDown)");
  bytes[1] = 0x80;  // Init
  EXPECT_EQ(rejection(bytes),
            "your discriminator is 0 in state Init (allowed only in Down or AdminDown)");
  bytes[1] = 0x40;  // Down: fine
  EXPECT_TRUE(decode(bytes).has_value());
  bytes[1] = 0x00;  // AdminDown: fine
  EXPECT_TRUE(decode(bytes).has_value());
}

TEST(BfdDecode, RejectsAuthentication) {
  std::vector<uint8_t> bytes = kDownVector;
  bytes[1] |= 0x04;  // A bit, no authentication section
  EXPECT_EQ(rejection(bytes), "authentication is not supported (A bit set)");
  // With a well-formed Simple Password section (type 1, length 7, key id 1, "abcd").
  bytes.insert(bytes.end(), {0x01, 0x07, 0x01, 'a', 'b', 'c', 'd'});
  bytes[3] = 31;
  EXPECT_EQ(rejection(bytes), "authentication is not supported (A bit set)");
}

TEST(BfdNames, NameStatesAndDiagnostics) {
  EXPECT_EQ(stateName(State::AdminDown), "AdminDown");
  EXPECT_EQ(stateName(State::Up), "Up");
  EXPECT_EQ(diagnosticName(Diagnostic::ControlDetectionTimeExpired),
            "Control Detection Time Expired");
  EXPECT_EQ(diagnosticName(Diagnostic::NeighborSignaledSessionDown),
            "Neighbor Signaled Session Down");
  EXPECT_EQ(diagnosticName(static_cast<Diagnostic>(31)), "Reserved");
}

// ---- two sessions back to back ----

// Every Transmit of one session is encoded, decoded and handed to the other, in FIFO order.
// Every packet is checked: it round-trips through the codec and never has both P and F.
class Wire {
 public:
  Wire(SessionConfig a, SessionConfig b) : a_(a), b_(b) {}

  Session& a() { return a_; }
  Session& b() { return b_; }
  // Everything each session returned, in order.
  const Actions& aLog() const { return aLog_; }
  const Actions& bLog() const { return bLog_; }

  void fromA(Actions actions) { route(true, std::move(actions)); }
  void fromB(Actions actions) { route(false, std::move(actions)); }

  // Delivers packets until none is in flight; returns how many were delivered.
  int pump() {
    int delivered = 0;
    while (!inFlight_.empty()) {
      auto [toB, bytes] = inFlight_.front();
      inFlight_.pop_front();
      auto packet = decode(bytes);
      EXPECT_TRUE(packet.has_value()) << packet.error();
      if (!packet) {
        continue;
      }
      ++delivered;
      if (toB) {
        fromB(b_.onPacket(*packet));
      } else {
        fromA(a_.onPacket(*packet));
      }
      if (delivered > 1000) {
        ADD_FAILURE() << "packets never stop flowing";
        break;
      }
    }
    return delivered;
  }

  // Drops whatever is in flight (a lost packet, or a link going down).
  void dropInFlight() { inFlight_.clear(); }

 private:
  void route(bool fromA, Actions actions) {
    for (const ControlPacket& packet : transmitted(actions)) {
      EXPECT_FALSE(packet.poll && packet.final) << "P and F together";
      std::vector<uint8_t> bytes = encode(packet);
      auto back = decode(bytes);
      EXPECT_TRUE(back.has_value()) << back.error();
      if (back) {
        EXPECT_EQ(*back, packet);
      }
      inFlight_.push_back({fromA, bytes});
    }
    Actions& log = fromA ? aLog_ : bLog_;
    log.insert(log.end(), actions.begin(), actions.end());
  }

  Session a_;
  Session b_;
  Actions aLog_;
  Actions bLog_;
  std::deque<std::pair<bool, std::vector<uint8_t>>> inFlight_;
};

TEST(BfdSession, StartsAdminDownAndStartGoesDownSendingSlowly) {
  Session s(config(50ms, 50ms));
  EXPECT_EQ(s.state(), State::AdminDown);
  EXPECT_EQ(s.remoteState(), State::Down);
  EXPECT_EQ(s.localDiagnostic(), Diagnostic::None);
  EXPECT_EQ(s.localDiscriminator(), kLocal);
  EXPECT_EQ(s.remoteDiscriminator(), 0u);

  Actions actions = s.start();
  EXPECT_THAT(transitions(actions),
              ElementsAre(Transition{State::AdminDown, State::Down, Diagnostic::None}));
  auto packets = transmitted(actions);
  ASSERT_EQ(packets.size(), 1u);
  ControlPacket expected;
  expected.state = State::Down;
  expected.detectMult = 3;
  expected.myDiscriminator = kLocal;
  expected.desiredMinTxInterval = 1s;  // 6.8.3: 50 ms configured, but at least 1 s until Up
  expected.requiredMinRxInterval = 50ms;
  EXPECT_EQ(packets[0], expected);
  EXPECT_EQ(s.transmitInterval(), kSlowTxInterval);
  expectJittered(armedTransmit(actions), 1s);
  EXPECT_EQ(s.counters().packetsSent, 1u);

  EXPECT_TRUE(s.start().empty()) << "start() while already started does nothing";
}

TEST(BfdSession, ThreeWayHandshakeDownInitUpOnBothSides) {
  Wire wire(config(300ms, 300ms, 3, 0x11), config(300ms, 300ms, 3, 0x22));
  wire.fromA(wire.a().start());
  wire.fromB(wire.b().start());
  wire.pump();

  const std::vector<Transition> expected = {
      {State::AdminDown, State::Down, Diagnostic::None},
      {State::Down, State::Init, Diagnostic::None},
      {State::Init, State::Up, Diagnostic::None},
  };
  EXPECT_EQ(transitions(wire.aLog()), expected);
  EXPECT_EQ(transitions(wire.bLog()), expected);
  for (Session* s : {&wire.a(), &wire.b()}) {
    EXPECT_EQ(s->state(), State::Up);
    EXPECT_EQ(s->remoteState(), State::Up);
    EXPECT_EQ(s->counters().upTransitions, 1u);
    EXPECT_EQ(s->counters().packetsDropped, 0u);
    // Going Up started a Poll Sequence (1 s -> 300 ms); the other side's Final ended it.
    EXPECT_FALSE(s->pollInProgress());
    EXPECT_EQ(s->transmitInterval(), 300ms);
    EXPECT_EQ(s->detectionTime(), 900ms);
  }
  EXPECT_EQ(wire.a().remoteDiscriminator(), 0x22u);
  EXPECT_EQ(wire.b().remoteDiscriminator(), 0x11u);
  EXPECT_EQ(wire.a().counters().packetsReceived, wire.b().counters().packetsSent);
  EXPECT_EQ(wire.b().counters().packetsReceived, wire.a().counters().packetsSent);

  // Periodic packets keep both Up and carry no flags.
  for (int i = 0; i < 5; ++i) {
    Actions aTick = wire.a().onTransmitTimer();
    auto packets = transmitted(aTick);
    ASSERT_EQ(packets.size(), 1u);
    EXPECT_FALSE(packets[0].poll || packets[0].final);
    expectJittered(armedTransmit(aTick), 300ms);
    wire.fromA(std::move(aTick));
    wire.fromB(wire.b().onTransmitTimer());
    wire.pump();
  }
  EXPECT_EQ(wire.a().state(), State::Up);
  EXPECT_EQ(wire.b().state(), State::Up);
}

TEST(BfdSession, OneSidedStartDownToUpViaInit) {
  // B is started only after A's first packet was lost: B goes Down -> Init on A's next packet,
  // A goes Down -> Up directly on B's Init.
  Wire wire(config(300ms, 300ms, 3, 0x11), config(300ms, 300ms, 3, 0x22));
  wire.fromA(wire.a().start());
  wire.dropInFlight();
  wire.fromB(wire.b().start());
  wire.dropInFlight();
  wire.fromA(wire.a().onTransmitTimer());
  wire.pump();
  EXPECT_EQ(transitions(wire.aLog()),
            (std::vector<Transition>{{State::AdminDown, State::Down, Diagnostic::None},
                                     {State::Down, State::Up, Diagnostic::None}}));
  EXPECT_EQ(wire.b().state(), State::Up);
}

TEST(BfdSession, StateTableForReceivedStates) {
  Peer peer;
  {
    SCOPED_TRACE("Down + remote Up stays Down");
    Session s(config());
    (void)s.start();
    EXPECT_TRUE(transitions(s.onPacket(peer.packet(State::Up))).empty());
    EXPECT_EQ(s.state(), State::Down);
    EXPECT_EQ(s.remoteState(), State::Up);
  }
  {
    SCOPED_TRACE("Init + remote Down stays Init");
    Session s(config());
    (void)s.start();
    (void)s.onPacket(peer.packet(State::Down, false, false, 0));
    ASSERT_EQ(s.state(), State::Init);
    EXPECT_TRUE(transitions(s.onPacket(peer.packet(State::Down))).empty());
    EXPECT_EQ(s.state(), State::Init);
  }
  {
    SCOPED_TRACE("Init + remote Up goes Up");
    Session s(config());
    (void)s.start();
    (void)s.onPacket(peer.packet(State::Down, false, false, 0));
    EXPECT_THAT(transitions(s.onPacket(peer.packet(State::Up))),
                ElementsAre(Transition{State::Init, State::Up, Diagnostic::None}));
  }
  {
    SCOPED_TRACE("Up + remote Init stays Up");
    Session s = upSessionPollDone();
    EXPECT_TRUE(transitions(s.onPacket(peer.packet(State::Init))).empty());
    EXPECT_EQ(s.state(), State::Up);
  }
}

TEST(BfdSession, RemoteDownWhileUpGoesDownWithNeighborSignaled) {
  Peer peer;
  Session s = upSessionPollDone();
  Actions actions = s.onPacket(peer.packet(State::Down));
  EXPECT_THAT(
      transitions(actions),
      ElementsAre(Transition{State::Up, State::Down, Diagnostic::NeighborSignaledSessionDown}));
  EXPECT_EQ(s.localDiagnostic(), Diagnostic::NeighborSignaledSessionDown);
  EXPECT_EQ(s.counters().downTransitions, 1u);
  // The peer hears about it at once; its discriminator is still known (6.8.1 clears it only
  // after a Detection Time of silence).
  auto packets = transmitted(actions);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_EQ(packets[0].state, State::Down);
  EXPECT_EQ(packets[0].diagnostic, Diagnostic::NeighborSignaledSessionDown);
  EXPECT_EQ(packets[0].yourDiscriminator, kRemote);
  EXPECT_EQ(s.transmitInterval(), kSlowTxInterval);
}

TEST(BfdSession, RemoteAdminDownGoesDownWithNeighborSignaled) {
  Peer peer;
  for (State from : {State::Init, State::Up}) {
    SCOPED_TRACE(stateName(from));
    Session s(config());
    (void)s.start();
    (void)s.onPacket(peer.packet(State::Down, false, false, 0));
    if (from == State::Up) {
      (void)s.onPacket(peer.packet(State::Up));
    }
    ASSERT_EQ(s.state(), from);
    ControlPacket adminDown = peer.packet(State::AdminDown);
    adminDown.diagnostic = Diagnostic::AdministrativelyDown;
    Actions actions = s.onPacket(adminDown);
    EXPECT_THAT(
        transitions(actions),
        ElementsAre(Transition{from, State::Down, Diagnostic::NeighborSignaledSessionDown}));
    EXPECT_EQ(s.remoteState(), State::AdminDown);
    ASSERT_EQ(ofType<StateChanged>(actions).size(), 1u);
    EXPECT_THAT(ofType<StateChanged>(actions)[0].reason, HasSubstr("AdminDown"));
    // Down + remote AdminDown: no further change, and the remote cannot bring it Up.
    EXPECT_TRUE(transitions(s.onPacket(adminDown)).empty());
    EXPECT_EQ(s.state(), State::Down);
    EXPECT_EQ(s.localDiagnostic(), Diagnostic::NeighborSignaledSessionDown);
  }
}

TEST(BfdSession, RemoteAdminDownWhileDownChangesNothing) {
  Session s(config());
  (void)s.start();
  Actions actions = s.onPacket(Peer{}.packet(State::AdminDown, false, false, 0));
  EXPECT_TRUE(transitions(actions).empty());
  EXPECT_TRUE(transmitted(actions).empty());
  EXPECT_EQ(s.state(), State::Down);
  EXPECT_EQ(s.localDiagnostic(), Diagnostic::None);
}

TEST(BfdSession, DetectionTimeExpiryWhileUpGoesDown) {
  Session s = upSessionPollDone();
  EXPECT_EQ(s.detectionTime(), 900ms);
  Actions actions = s.onDetectTimer();
  EXPECT_THAT(
      transitions(actions),
      ElementsAre(Transition{State::Up, State::Down, Diagnostic::ControlDetectionTimeExpired}));
  ASSERT_EQ(ofType<StateChanged>(actions).size(), 1u);
  EXPECT_THAT(ofType<StateChanged>(actions)[0].reason, HasSubstr("900 ms"));
  EXPECT_EQ(s.state(), State::Down);
  EXPECT_EQ(s.localDiagnostic(), Diagnostic::ControlDetectionTimeExpired);
  EXPECT_EQ(s.counters().downTransitions, 1u);
  // RFC 5880 6.8.1: bfd.RemoteDiscr is zero once a Detection Time passed without a packet.
  EXPECT_EQ(s.remoteDiscriminator(), 0u);
  EXPECT_EQ(s.remoteState(), State::Down);
  auto packets = transmitted(actions);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_EQ(packets[0].state, State::Down);
  EXPECT_EQ(packets[0].diagnostic, Diagnostic::ControlDetectionTimeExpired);
  EXPECT_EQ(packets[0].yourDiscriminator, 0u);
  EXPECT_FALSE(packets[0].poll) << "no poll towards a remote that is gone";
  EXPECT_EQ(packets[0].desiredMinTxInterval, 1s);
  expectJittered(armedTransmit(actions), 1s);
  // A second (stale) expiry does nothing.
  EXPECT_TRUE(s.onDetectTimer().empty());
}

TEST(BfdSession, DetectionTimeExpiryWhileInitGoesDown) {
  Session s(config());
  (void)s.start();
  (void)s.onPacket(Peer{}.packet(State::Down, false, false, 0));
  ASSERT_EQ(s.state(), State::Init);
  EXPECT_THAT(
      transitions(s.onDetectTimer()),
      ElementsAre(Transition{State::Init, State::Down, Diagnostic::ControlDetectionTimeExpired}));
  EXPECT_EQ(s.counters().downTransitions, 0u) << "only Up -> Down counts";
}

TEST(BfdSession, DetectionTimeExpiryWhileDownForgetsTheRemoteQuietly) {
  Peer peer;
  peer.rx = 3s;  // the remote asked for a slow rate; after silence 6.8.18 resets that
  Session s(config());
  (void)s.start();
  Actions rx = s.onPacket(peer.packet(State::Up));  // Down + Up: no change
  EXPECT_EQ(armedDetect(rx), 900ms) << "the detection timer runs in Down too (6.8.1)";
  EXPECT_EQ(s.transmitInterval(), 3s);
  EXPECT_EQ(s.remoteDiscriminator(), kRemote);
  Actions actions = s.onDetectTimer();
  EXPECT_TRUE(transitions(actions).empty());
  EXPECT_TRUE(transmitted(actions).empty());
  EXPECT_EQ(s.remoteDiscriminator(), 0u);
  EXPECT_EQ(s.transmitInterval(), 1s);
  expectJittered(armedTransmit(actions), 1s);
  EXPECT_EQ(transmitted(s.onTransmitTimer())[0].yourDiscriminator, 0u);
}

TEST(BfdSession, StaleDetectTimerBeforeAnyPacketDoesNothing) {
  Session s(config());
  EXPECT_TRUE(s.onDetectTimer().empty());
  (void)s.start();
  EXPECT_TRUE(s.onDetectTimer().empty());
  EXPECT_EQ(s.detectionTime(), 0us);
}

TEST(BfdSession, ReceptionLearnsTheRemoteAndArmsDetection) {
  Peer peer{.tx = 200ms, .rx = 400ms, .mult = 4};
  Session s(config(300ms, 300ms));
  (void)s.start();
  Actions actions = s.onPacket(peer.packet(State::Down, false, false, 0));
  EXPECT_EQ(s.remoteDiscriminator(), kRemote);
  EXPECT_EQ(s.remoteState(), State::Down);
  // Remote not Up advertises 1 s: 4 x max(300 ms, 1 s).
  EXPECT_EQ(s.detectionTime(), 4s);
  EXPECT_EQ(armedDetect(actions), 4s);
  EXPECT_EQ(s.counters().packetsReceived, 1u);
  // Our transmit interval while Init: max(1 s, remote's 400 ms).
  EXPECT_EQ(s.transmitInterval(), 1s);
}

TEST(BfdSession, PacketForAnotherDiscriminatorIsDroppedAndCounted) {
  Session s = upSessionPollDone();
  const SessionCounters before = s.counters();
  ControlPacket stray = Peer{}.packet(State::Down, true, false, kLocal + 1);
  Actions actions = s.onPacket(stray);
  EXPECT_TRUE(actions.empty());
  EXPECT_EQ(s.state(), State::Up);
  EXPECT_EQ(s.counters().packetsDropped, before.packetsDropped + 1);
  EXPECT_EQ(s.counters().packetsReceived, before.packetsReceived);
  EXPECT_EQ(s.counters().packetsSent, before.packetsSent) << "its Poll is not answered";
}

TEST(BfdSession, TransmitIntervalIsSlowUntilUpAndNegotiatedAfter) {
  Peer peer{.tx = 50ms, .rx = 20ms};
  Session s(config(50ms, 50ms));
  (void)s.start();
  EXPECT_EQ(s.transmitInterval(), 1s);
  (void)s.onPacket(peer.packet(State::Down, false, false, 0));
  ASSERT_EQ(s.state(), State::Init);
  EXPECT_EQ(s.transmitInterval(), 1s);
  for (int i = 0; i < 3; ++i) {
    Actions tick = s.onTransmitTimer();
    EXPECT_EQ(transmitted(tick)[0].desiredMinTxInterval, 1s);
    expectJittered(armedTransmit(tick), 1s);
  }
  // The remote may ask for an even slower rate than 1 s.
  Peer slowPeer{.tx = 50ms, .rx = 2s};
  (void)s.onPacket(slowPeer.packet(State::Down));
  EXPECT_EQ(s.transmitInterval(), 2s);

  (void)s.onPacket(peer.packet(State::Up));
  ASSERT_EQ(s.state(), State::Up);
  EXPECT_EQ(s.transmitInterval(), 50ms) << "max(local 50 ms, remote min rx 20 ms)";
  (void)s.onPacket(peer.packet(State::Down));
  ASSERT_EQ(s.state(), State::Down);
  EXPECT_EQ(s.transmitInterval(), 1s);
}

TEST(BfdSession, GoingUpStartsAPollSequenceToLeaveTheSlowRate) {
  Peer peer;
  Session s(config(300ms, 300ms));
  (void)s.start();
  Actions actions = s.onPacket(peer.packet(State::Init, false, false, 0));
  EXPECT_THAT(transitions(actions),
              ElementsAre(Transition{State::Down, State::Up, Diagnostic::None}));
  EXPECT_TRUE(s.pollInProgress());
  auto packets = transmitted(actions);
  ASSERT_EQ(packets.size(), 1u) << "sent at once, not at the next slow tick";
  EXPECT_EQ(packets[0].state, State::Up);
  EXPECT_TRUE(packets[0].poll);
  EXPECT_FALSE(packets[0].final);
  EXPECT_EQ(packets[0].desiredMinTxInterval, 300ms);
  // A decrease takes effect at once (only an increase waits for the Final).
  EXPECT_EQ(s.transmitInterval(), 300ms);
  expectJittered(armedTransmit(actions), 300ms);
  // P on every packet until the Final.
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(transmitted(s.onTransmitTimer())[0].poll);
  }
  Actions final = s.onPacket(peer.packet(State::Up, false, true));
  EXPECT_TRUE(transmitted(final).empty()) << "a Final needs no answer";
  EXPECT_FALSE(s.pollInProgress());
  EXPECT_FALSE(transmitted(s.onTransmitTimer())[0].poll);
}

TEST(BfdSession, GoingUpWithAnIntervalOfAtLeastOneSecondNeedsNoPoll) {
  Session s = upSession(config(2s, 2s));
  EXPECT_FALSE(s.pollInProgress());
  EXPECT_FALSE(transmitted(s.onTransmitTimer())[0].poll);
  EXPECT_EQ(s.transmitInterval(), 2s);
}

TEST(BfdSession, AFinalWithoutAPollIsIgnored) {
  Session s = upSessionPollDone();
  Actions actions = s.onPacket(Peer{}.packet(State::Up, false, true));
  EXPECT_TRUE(actions.size() == 1 && std::holds_alternative<ArmDetect>(actions[0]));
  EXPECT_FALSE(s.pollInProgress());
}

TEST(BfdSession, AReceivedPollIsAnsweredAtOnceWithFinal) {
  Session s = upSessionPollDone();
  const uint64_t sent = s.counters().packetsSent;
  Actions actions = s.onPacket(Peer{}.packet(State::Up, true));
  auto packets = transmitted(actions);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_TRUE(packets[0].final);
  EXPECT_FALSE(packets[0].poll);
  EXPECT_EQ(packets[0].state, State::Up);
  EXPECT_TRUE(ofType<ArmTransmit>(actions).empty()) << "the periodic timer is left alone";
  EXPECT_EQ(s.counters().packetsSent, sent + 1);
}

TEST(BfdSession, AnsweringAPollDuringOurOwnPollClearsPOnlyOnTheFinal) {
  Session s = upSession();  // our poll (1 s -> 300 ms) is running
  ASSERT_TRUE(s.pollInProgress());
  auto answer = transmitted(s.onPacket(Peer{}.packet(State::Up, true)));
  ASSERT_EQ(answer.size(), 1u);
  EXPECT_TRUE(answer[0].final);
  EXPECT_FALSE(answer[0].poll) << "never P and F together";
  EXPECT_TRUE(s.pollInProgress());
  EXPECT_TRUE(transmitted(s.onTransmitTimer())[0].poll);
}

TEST(BfdSession, AReceivedPollIsAnsweredEvenWhileDown) {
  Session s(config());
  (void)s.start();
  Actions actions = s.onPacket(Peer{}.packet(State::Up, true));  // Down + Up: no change
  auto packets = transmitted(actions);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_EQ(packets[0].state, State::Down);
  EXPECT_TRUE(packets[0].final);
}

TEST(BfdSession, IncreasedDesiredMinTxWaitsForTheFinal) {
  Session s = upSessionPollDone();
  ASSERT_EQ(s.transmitInterval(), 300ms);
  Actions actions = s.setIntervals(600ms, 300ms);
  EXPECT_TRUE(s.pollInProgress());
  auto packets = transmitted(actions);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_TRUE(packets[0].poll);
  EXPECT_EQ(packets[0].desiredMinTxInterval, 600ms) << "advertised at once";
  // 6.8.3: the actual interval must not grow before the remote has seen the new value.
  EXPECT_EQ(s.transmitInterval(), 300ms);
  expectJittered(armedTransmit(actions), 300ms);
  Actions tick = s.onTransmitTimer();
  EXPECT_TRUE(transmitted(tick)[0].poll);
  expectJittered(armedTransmit(tick), 300ms);

  Actions final = s.onPacket(Peer{}.packet(State::Up, false, true));
  EXPECT_FALSE(s.pollInProgress());
  EXPECT_EQ(s.transmitInterval(), 600ms);
  expectJittered(armedTransmit(final), 600ms);
}

TEST(BfdSession, DecreasedDesiredMinTxTakesEffectAtOnce) {
  Peer peer{.tx = 300ms, .rx = 50ms};
  Session s = upSessionPollDone(config(300ms, 300ms), peer);
  ASSERT_EQ(s.transmitInterval(), 300ms);
  Actions actions = s.setIntervals(100ms, 300ms);
  EXPECT_EQ(s.transmitInterval(), 100ms);
  expectJittered(armedTransmit(actions), 100ms);
  auto packets = transmitted(actions);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_TRUE(packets[0].poll) << "still a Poll Sequence (6.8.3: any change)";
  EXPECT_EQ(packets[0].desiredMinTxInterval, 100ms);
  (void)s.onPacket(peer.packet(State::Up, false, true));
  EXPECT_FALSE(s.pollInProgress());
  EXPECT_EQ(s.transmitInterval(), 100ms);
}

TEST(BfdSession, DecreasedRequiredMinRxWaitsForTheFinalForDetection) {
  Peer peer{.tx = 50ms, .rx = 300ms};
  Session s = upSessionPollDone(config(300ms, 300ms), peer);
  ASSERT_EQ(s.detectionTime(), 900ms);  // 3 x max(our 300 ms, their 50 ms)
  Actions actions = s.setIntervals(300ms, 50ms);
  EXPECT_TRUE(s.pollInProgress());
  EXPECT_EQ(transmitted(actions)[0].requiredMinRxInterval, 50ms) << "advertised at once";
  EXPECT_EQ(s.detectionTime(), 900ms) << "the old value until the remote sends faster";
  EXPECT_TRUE(ofType<ArmDetect>(actions).empty());
  // A packet without F keeps the old detection time.
  EXPECT_EQ(armedDetect(s.onPacket(peer.packet(State::Up))), 900ms);
  Actions final = s.onPacket(peer.packet(State::Up, false, true));
  EXPECT_EQ(s.detectionTime(), 150ms);
  EXPECT_EQ(armedDetect(final), 150ms);
}

TEST(BfdSession, IncreasedRequiredMinRxLengthensDetectionAtOnce) {
  Session s = upSessionPollDone();
  ASSERT_EQ(s.detectionTime(), 900ms);
  Actions actions = s.setIntervals(300ms, 600ms);
  EXPECT_EQ(s.detectionTime(), 1800ms);
  EXPECT_EQ(armedDetect(actions), 1800ms);
  EXPECT_TRUE(s.pollInProgress());
}

TEST(BfdSession, UnchangedIntervalsNeedNoPoll) {
  Session s = upSessionPollDone();
  EXPECT_TRUE(s.setIntervals(300ms, 300ms).empty());
  EXPECT_FALSE(s.pollInProgress());
}

TEST(BfdSession, AChangeDuringAPollNeedsASecondFinal) {
  // The first Final may answer a packet that carried the older values: the newer ones (here a
  // larger desired min TX) wait for a Final to a poll that began after them.
  Session s = upSessionPollDone();
  (void)s.setIntervals(400ms, 300ms);
  (void)s.setIntervals(800ms, 300ms);
  (void)s.onPacket(Peer{}.packet(State::Up, false, true));
  EXPECT_TRUE(s.pollInProgress());
  EXPECT_EQ(s.transmitInterval(), 300ms);
  EXPECT_TRUE(transmitted(s.onTransmitTimer())[0].poll);
  (void)s.onPacket(Peer{}.packet(State::Up, false, true));
  EXPECT_FALSE(s.pollInProgress());
  EXPECT_EQ(s.transmitInterval(), 800ms);
}

TEST(BfdSession, SetIntervalsWhileDownAppliesAtOnceAndKeepsTheSlowFloor) {
  Session s(config(300ms, 300ms));
  (void)s.start();
  Actions actions = s.setIntervals(2s, 100ms);
  EXPECT_EQ(s.transmitInterval(), 2s);
  expectJittered(armedTransmit(actions), 2s);
  EXPECT_TRUE(transmitted(actions).empty()) << "no remote: the next periodic packet tells";
  EXPECT_FALSE(s.pollInProgress());
  (void)s.setIntervals(50ms, 100ms);
  EXPECT_EQ(s.transmitInterval(), 1s);
  EXPECT_EQ(transmitted(s.onTransmitTimer())[0].desiredMinTxInterval, 1s);
}

TEST(BfdSession, SetIntervalsOnBothEndsThroughTheWire) {
  Wire wire(config(300ms, 300ms, 3, 0x11), config(300ms, 300ms, 3, 0x22));
  wire.fromA(wire.a().start());
  wire.fromB(wire.b().start());
  wire.pump();
  ASSERT_EQ(wire.a().state(), State::Up);
  wire.fromA(wire.a().setIntervals(1500ms, 100ms));
  wire.pump();
  EXPECT_FALSE(wire.a().pollInProgress());
  EXPECT_EQ(wire.a().transmitInterval(), 1500ms);
  EXPECT_EQ(wire.b().transmitInterval(), 300ms) << "max(B's 300 ms, A's min rx 100 ms)";
  EXPECT_EQ(wire.b().detectionTime(), 4500ms) << "3 x A's 1.5 s";
  EXPECT_EQ(wire.a().detectionTime(), 900ms) << "3 x max(100 ms, B's 300 ms)";
}

TEST(BfdSession, DetectionTimeWithAsymmetricSettings) {
  // Local 50 ms / 50 ms / 3 against remote 300 ms / 300 ms / 5 (RFC 5880 6.8.4): each end
  // detects with the other's multiplier and the slower of its own min rx and the other's tx.
  Wire wire(config(50ms, 50ms, 3, 0x11), config(300ms, 300ms, 5, 0x22));
  wire.fromA(wire.a().start());
  wire.fromB(wire.b().start());
  wire.pump();
  ASSERT_EQ(wire.a().state(), State::Up);
  ASSERT_EQ(wire.b().state(), State::Up);
  EXPECT_EQ(wire.a().detectionTime(), 1500ms);    // 5 x max(50 ms, 300 ms)
  EXPECT_EQ(wire.b().detectionTime(), 900ms);     // 3 x max(300 ms, 50 ms)
  EXPECT_EQ(wire.a().transmitInterval(), 300ms);  // max(50 ms, B's min rx 300 ms)
  EXPECT_EQ(wire.b().transmitInterval(), 300ms);  // max(300 ms, A's min rx 50 ms)
  // The detection timer each reception arms uses the same value.
  wire.fromB(wire.b().onTransmitTimer());
  wire.pump();
  auto aDetects = ofType<ArmDetect>(wire.aLog());
  ASSERT_FALSE(aDetects.empty());
  EXPECT_EQ(aDetects.back().after, 1500ms);
  // While B was not Up it advertised 1 s, so A's first detection time was 5 x 1 s.
  EXPECT_EQ(aDetects.front().after, 5s);
}

TEST(BfdSession, JitterStaysWithin75And100Percent) {
  Session s(config());
  (void)s.start();
  microseconds low = 1h;
  microseconds high = 0us;
  for (int i = 0; i < 20000; ++i) {
    microseconds after = armedTransmit(s.onTransmitTimer());
    ASSERT_GE(after, 750ms);
    ASSERT_LE(after, 1s);
    low = std::min(low, after);
    high = std::max(high, after);
  }
  // The whole range is used, not a fixed reduction.
  EXPECT_LT(low, 755ms);
  EXPECT_GT(high, 995ms);
}

TEST(BfdSession, JitterWithDetectMultOneStaysWithin75And90Percent) {
  Session s(config(300ms, 300ms, 1));
  (void)s.start();
  microseconds low = 1h;
  microseconds high = 0us;
  for (int i = 0; i < 20000; ++i) {
    microseconds after = armedTransmit(s.onTransmitTimer());
    ASSERT_GE(after, 750ms);
    ASSERT_LE(after, 900ms);
    low = std::min(low, after);
    high = std::max(high, after);
  }
  EXPECT_LT(low, 755ms);
  EXPECT_GT(high, 895ms);
}

TEST(BfdSession, JitterFollowsTheSeed) {
  auto draws = [](uint64_t seed) {
    SessionConfig c = config();
    c.jitterSeed = seed;
    Session s(c);
    (void)s.start();
    std::vector<microseconds> out;
    for (int i = 0; i < 20; ++i) {
      out.push_back(armedTransmit(s.onTransmitTimer()));
    }
    return out;
  };
  EXPECT_EQ(draws(1), draws(1));
  EXPECT_NE(draws(1), draws(2));
}

TEST(BfdSession, NoPeriodicPacketsWhenTheRemoteWantsNone) {
  Peer peer{.tx = 300ms, .rx = 0us};
  Session s = upSessionPollDone(config(), peer);
  Actions tick = s.onTransmitTimer();
  EXPECT_TRUE(transmitted(tick).empty());
  EXPECT_EQ(ofType<ArmTransmit>(tick).size(), 1u) << "the timer keeps running";
  // A Poll is still answered.
  EXPECT_EQ(transmitted(s.onPacket(peer.packet(State::Up, true))).size(), 1u);
  // Once the remote accepts packets again, they flow.
  (void)s.onPacket(Peer{}.packet(State::Up));
  EXPECT_EQ(transmitted(s.onTransmitTimer()).size(), 1u);
}

TEST(BfdSession, NoPeriodicPacketsWhileTheRemoteIsInDemandModeUnlessPolling) {
  Peer peer;
  Session s = upSessionPollDone(config(), peer);
  ControlPacket demand = peer.packet(State::Up);
  demand.demand = true;
  (void)s.onPacket(demand);
  EXPECT_TRUE(transmitted(s.onTransmitTimer()).empty());
  (void)s.setIntervals(200ms, 300ms);
  EXPECT_EQ(transmitted(s.onTransmitTimer()).size(), 1u) << "a Poll Sequence is sent anyway";
}

TEST(BfdSession, AdminDownSendsAdministrativelyDownAndCancelsDetection) {
  Session s = upSessionPollDone();
  Actions actions = s.adminDown();
  EXPECT_THAT(transitions(actions), ElementsAre(Transition{State::Up, State::AdminDown,
                                                           Diagnostic::AdministrativelyDown}));
  EXPECT_EQ(s.state(), State::AdminDown);
  EXPECT_EQ(s.localDiagnostic(), Diagnostic::AdministrativelyDown);
  EXPECT_EQ(s.counters().downTransitions, 1u);
  auto packets = transmitted(actions);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_EQ(packets[0], adminDownPacket());
  EXPECT_EQ(encode(packets[0]), kAdminDownVector);
  EXPECT_EQ(ofType<CancelDetect>(actions).size(), 1u);
  expectJittered(armedTransmit(actions), 1s);

  // 6.8.16: AdminDown for at least a Detection Time (mult 3: 4 more packets), then silence.
  for (int i = 0; i < 4; ++i) {
    Actions tick = s.onTransmitTimer();
    ASSERT_EQ(transmitted(tick).size(), 1u) << "tick " << i;
    EXPECT_EQ(transmitted(tick)[0], adminDownPacket());
    EXPECT_EQ(ofType<ArmTransmit>(tick).size(), i < 3 ? 1u : 0u) << "tick " << i;
  }
  EXPECT_TRUE(s.onTransmitTimer().empty());

  // Nothing received while AdminDown is acted on.
  Actions rx = s.onPacket(Peer{}.packet(State::Up, true));
  EXPECT_TRUE(rx.empty());
  EXPECT_EQ(s.counters().packetsDropped, 1u);
  EXPECT_TRUE(s.adminDown().empty()) << "already AdminDown";
  EXPECT_TRUE(s.onDetectTimer().empty());

  // Enabled again: a fresh session that does not remember the old remote.
  Actions restart = s.start();
  EXPECT_THAT(transitions(restart),
              ElementsAre(Transition{State::AdminDown, State::Down, Diagnostic::None}));
  EXPECT_EQ(transmitted(restart)[0].yourDiscriminator, 0u);
}

TEST(BfdSession, AdminDownBeforeStartDoesNothing) {
  Session s(config());
  EXPECT_TRUE(s.adminDown().empty());
  EXPECT_TRUE(s.onTransmitTimer().empty());
  EXPECT_TRUE(s.onPacket(Peer{}.packet(State::Down, false, false, 0)).empty());
  EXPECT_EQ(s.counters().packetsDropped, 1u);
}

TEST(BfdSession, PeerSeesOurAdminDownAsNeighborSignaledSessionDown) {
  Wire wire(config(300ms, 300ms, 3, 0x11), config(300ms, 300ms, 3, 0x22));
  wire.fromA(wire.a().start());
  wire.fromB(wire.b().start());
  wire.pump();
  ASSERT_EQ(wire.b().state(), State::Up);
  wire.fromA(wire.a().adminDown());
  wire.pump();
  EXPECT_EQ(wire.b().state(), State::Down);
  EXPECT_EQ(wire.b().localDiagnostic(), Diagnostic::NeighborSignaledSessionDown);
  EXPECT_EQ(wire.b().remoteState(), State::AdminDown);
  EXPECT_EQ(wire.a().state(), State::AdminDown) << "B's Down packets do not revive A";
  // A comes back: the two handshake again.
  wire.fromA(wire.a().start());
  wire.pump();
  wire.fromB(wire.b().onTransmitTimer());
  wire.pump();
  EXPECT_EQ(wire.a().state(), State::Up);
  EXPECT_EQ(wire.b().state(), State::Up);
}

TEST(BfdSession, SessionsRecoverAfterADetectionTimeout) {
  Wire wire(config(50ms, 50ms, 3, 0x11), config(50ms, 50ms, 3, 0x22));
  wire.fromA(wire.a().start());
  wire.fromB(wire.b().start());
  wire.pump();
  ASSERT_EQ(wire.a().state(), State::Up);
  // The link drops everything; both detection timers expire.
  wire.fromA(wire.a().onDetectTimer());
  wire.fromB(wire.b().onDetectTimer());
  wire.dropInFlight();
  EXPECT_EQ(wire.a().state(), State::Down);
  EXPECT_EQ(wire.b().state(), State::Down);
  // The link heals.
  wire.fromA(wire.a().onTransmitTimer());
  wire.pump();
  wire.fromB(wire.b().onTransmitTimer());
  wire.pump();
  EXPECT_EQ(wire.a().state(), State::Up);
  EXPECT_EQ(wire.b().state(), State::Up);
  EXPECT_EQ(wire.a().counters().upTransitions, 2u);
  EXPECT_EQ(wire.a().counters().downTransitions, 1u);
  EXPECT_EQ(wire.a().transmitInterval(), 50ms);
}

TEST(BfdSession, ConfiguredIntervalsAreClampedToTheWire) {
  Session s(config(0us, microseconds{0x1'0000'0000}));
  (void)s.start();
  ControlPacket p = transmitted(s.onTransmitTimer())[0];
  EXPECT_EQ(p.desiredMinTxInterval, 1s);
  EXPECT_EQ(p.requiredMinRxInterval, microseconds{0xFFFFFFFFu});
}

}  // namespace
}  // namespace vipd::bfd
