// Deterministic mutation testing of the receive path, without libFuzzer: every captured peer
// message (tests/data/captures) and a set of hand-built valid messages are mutated with fixed
// rules and a fixed-seed std::mt19937, and each result goes through decode(), a MessageFramer
// (whole and one byte at a time) and an Established SessionFsm. Nothing may crash or hang, every
// error must be a NOTIFICATION we can send, and the FSM may only stay Established or tear the
// session down with NOTIFICATION then Disconnect.
//
// Also: a long stream of valid UPDATEs must not make the FSM retain memory (it counts received
// prefixes, it does not store them), nor may a peer that sends ever more ADD-PATH paths for a
// watched VIP (at most kMaxPathsPerWatchedPrefix are kept). Allocations are counted by replacing
// the global operator new/delete for this test executable.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "bgp/captures_test_support.h"
#include "bgp/codec.h"
#include "bgp/message.h"
#include "bgp/message_framer.h"
#include "bgp/session_fsm.h"
#include "bgp/update_builder.h"
#include "bgp/codec_test_support.h"
#include "bgp/fsm_test_support.h"

namespace {

std::atomic<int64_t> liveAllocations{0};

}  // namespace

// Counting replacements of the global allocation functions. The nothrow forms are replaced too:
// libstdc++'s forward to these, but under AddressSanitizer its own interceptors would otherwise
// allocate them, and our delete would free() them (alloc-dealloc-mismatch, seen in
// std::stable_sort's temporary buffer).
void* operator new(std::size_t size) {
  void* p = std::malloc(size == 0 ? 1 : size);
  if (p == nullptr) {
    throw std::bad_alloc();
  }
  liveAllocations.fetch_add(1, std::memory_order_relaxed);
  return p;
}
void* operator new[](std::size_t size) { return ::operator new(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  void* p = std::malloc(size == 0 ? 1 : size);
  if (p != nullptr) {
    liveAllocations.fetch_add(1, std::memory_order_relaxed);
  }
  return p;
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept {
  return ::operator new(size, tag);
}
void operator delete(void* p) noexcept {
  if (p != nullptr) {
    liveAllocations.fetch_sub(1, std::memory_order_relaxed);
    std::free(p);
  }
}
void operator delete[](void* p) noexcept { ::operator delete(p); }
void operator delete(void* p, std::size_t) noexcept { ::operator delete(p); }
void operator delete[](void* p, std::size_t) noexcept { ::operator delete(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { ::operator delete(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { ::operator delete(p); }

namespace vipd::bgp::test {

namespace {

using vipd::bgp::testing::actionsOf;
using vipd::bgp::testing::decodeSent;
using vipd::bgp::testing::describe;
using vipd::bgp::testing::ip;
using vipd::bgp::testing::prefix;

constexpr uint32_t kLocalAsn = 65000;
constexpr uint32_t kPeerAsn = 65001;
constexpr uint32_t kFixedSeed = 20240601;
constexpr int kRandomMutationsPerSeed = 40;
// What a session that negotiated ADD-PATH receive in both families decodes with.
const CodecOptions kAddPath{.fourOctetAs = true, .addPath = {kIpv4Unicast, kIpv6Unicast}};

struct Seed {
  std::string name;
  Bytes wire;
  CodecOptions options;
};

// ---- Valid messages built with the codec ----

std::vector<Seed> handBuiltSeeds() {
  std::vector<Seed> seeds;
  auto add = [&](std::string name, const Message& m, CodecOptions options = {}) {
    seeds.push_back({std::move(name), encode(m, options), options});
  };

  OpenMessage open;
  open.myAs = kAsTrans;
  open.holdTimeSeconds = 90;
  open.bgpIdentifier = 0xC6336401;
  open.capabilities.multiprotocol = {kIpv4Unicast, kIpv6Unicast};
  open.capabilities.routeRefresh = true;
  open.capabilities.fourOctetAs = 4200000001;
  GracefulRestartCapability gr;
  gr.restartState = true;
  gr.restartTimeSeconds = 120;
  gr.families = {{kIpv4Unicast, true}, {kIpv6Unicast, false}};
  open.capabilities.gracefulRestart = gr;
  add("OPEN with GR and AS_TRANS", open);
  add("KEEPALIVE", KeepaliveMessage{});
  add("NOTIFICATION 6/2 with shutdown communication",
      NotificationMessage{6, subcode::kAdministrativeShutdown,
                          encodeShutdownCommunication("maintenance, back at 14:00")});
  add("ROUTE-REFRESH IPv6", RouteRefreshMessage{kIpv6Unicast, 0});

  UpdateMessage v4;
  v4.attributes.origin = Origin::Egp;
  v4.attributes.asPath = AsPath{{AsPathSegment::Type::AsSequence, {65001, 4200000001}},
                                {AsPathSegment::Type::AsSet, {64512, 64513}}};
  v4.attributes.nextHop = ip("198.51.100.1");
  v4.attributes.med = 5;
  v4.attributes.localPref = 100;
  v4.attributes.atomicAggregate = true;
  v4.attributes.communities = std::vector<uint32_t>{0xFDE80064, kGracefulShutdownCommunity};
  v4.attributes.largeCommunities = std::vector<LargeCommunity>{{65000, 1, 2}};
  v4.attributes.other = {RawAttribute{0xC0, 7, {0, 0, 0xFD, 0xE9, 192, 0, 2, 1}},  // AGGREGATOR
                         RawAttribute{0xC0, 99, {1, 2, 3}}};  // unknown optional transitive
  v4.withdrawn = {prefix("198.51.100.0/24")};
  v4.nlri = {prefix("203.0.113.10/32"), prefix("203.0.113.128/25"), prefix("10.0.0.0/8"),
             prefix("0.0.0.0/0")};
  add("UPDATE IPv4 with every attribute", v4);
  add("UPDATE IPv4 with 2-byte ASNs and AS4_PATH", v4, CodecOptions{.fourOctetAs = false});

  UpdateMessage v6;
  v6.attributes.origin = Origin::Igp;
  v6.attributes.asPath = AsPath{{AsPathSegment::Type::AsSequence, {65001}}};
  Bytes nextHop(32, 0);
  const IpAddress global = ip("2001:db8::11");
  const IpAddress linkLocal = ip("fe80::1");
  std::copy(global.bytes.begin(), global.bytes.end(), nextHop.begin());
  std::copy(linkLocal.bytes.begin(), linkLocal.bytes.end(), nextHop.begin() + 16);
  v6.attributes.mpReach = MpReachNlri{kIpv6Unicast, nextHop, {}};
  for (int i = 0; i < 40; ++i) {
    v6.attributes.mpReach->nlri.push_back(
        prefix("2001:db8:" + std::to_string(100 + i) + "::/" + std::to_string(48 + i % 81)));
  }
  add("UPDATE IPv6 MP_REACH, 40 prefixes", v6);

  UpdateMessage unreach;
  unreach.attributes.mpUnreach =
      MpUnreachNlri{kIpv6Unicast, {prefix("2001:db8:1::/48"), prefix("2001:db8:2::1/128")}};
  add("UPDATE MP_UNREACH IPv6", unreach);
  add("UPDATE End-of-RIB IPv6", buildEndOfRib(kIpv6Unicast));

  // ADD-PATH (RFC 7911): the capability, and path identifiers in every NLRI field.
  OpenMessage addPathOpen = open;
  addPathOpen.capabilities.addPath = {{kIpv4Unicast, AddPathMode::Send},
                                      {kIpv6Unicast, AddPathMode::Both}};
  add("OPEN with ADD-PATH", addPathOpen);
  UpdateMessage reflected = v4;
  reflected.withdrawnPathIds = {7};
  reflected.nlriPathIds = {1, 2, 0xFFFFFFFF, 0};
  reflected.attributes.originatorId = 0xC000020B;
  reflected.attributes.clusterList = std::vector<uint32_t>{0xC0000201, 0xC0000202};
  add("UPDATE IPv4 with path identifiers, ORIGINATOR_ID, CLUSTER_LIST", reflected, kAddPath);
  UpdateMessage v6Paths = v6;
  v6Paths.attributes.mpReach->pathIds.assign(v6Paths.attributes.mpReach->nlri.size(), 3);
  add("UPDATE IPv6 MP_REACH with path identifiers", v6Paths, kAddPath);
  UpdateMessage unreachPaths = unreach;
  unreachPaths.attributes.mpUnreach->pathIds = {1, 2};
  add("UPDATE MP_UNREACH IPv6 with path identifiers", unreachPaths, kAddPath);
  add("UPDATE End-of-RIB IPv4 with ADD-PATH", buildEndOfRib(kIpv4Unicast), kAddPath);
  return seeds;
}

std::vector<Seed> allSeeds() {
  std::vector<Seed> seeds = handBuiltSeeds();
  std::set<Bytes> seen;
  for (auto& wire : allCapturedMessages()) {
    if (seen.insert(wire).second) {  // the captures repeat KEEPALIVEs and End-of-RIBs
      seeds.push_back({"captured", std::move(wire), CodecOptions{.fourOctetAs = true}});
    }
  }
  return seeds;
}

// ---- Mutations ----

void setLength(Bytes& wire, size_t length) {
  wire.at(16) = static_cast<uint8_t>(length >> 8);
  wire.at(17) = static_cast<uint8_t>(length);
}

std::vector<Bytes> mutationsOf(const Bytes& wire, std::mt19937& rng) {
  std::vector<Bytes> out;
  // Every byte set to 0x00, 0xFF and incremented.
  for (size_t i = 0; i < wire.size(); ++i) {
    for (int kind = 0; kind < 3; ++kind) {
      Bytes m = wire;
      m[i] = kind == 0 ? 0x00 : kind == 1 ? 0xFF : static_cast<uint8_t>(m[i] + 1);
      if (m != wire) {
        out.push_back(std::move(m));
      }
    }
  }
  // Truncated at every length, with and without the header length following.
  for (size_t length = 0; length < wire.size(); ++length) {
    Bytes cut(wire.begin(), wire.begin() + static_cast<ptrdiff_t>(length));
    if (length >= kHeaderSize) {
      Bytes relabelled = cut;
      setLength(relabelled, length);
      out.push_back(std::move(relabelled));
    }
    out.push_back(std::move(cut));
  }
  // Extended with junk: trailing bytes the header does not cover, and the header length grown
  // to cover them (up to the 4096 maximum).
  for (size_t extra : {1u, 2u, 4u, 19u, 64u}) {
    Bytes m = wire;
    for (size_t i = 0; i < extra; ++i) {
      m.push_back(static_cast<uint8_t>(rng()));
    }
    out.push_back(m);
    setLength(m, m.size());
    out.push_back(std::move(m));
  }
  Bytes maximal = wire;
  while (maximal.size() < kMaxMessageSize) {
    maximal.push_back(static_cast<uint8_t>(rng()));
  }
  setLength(maximal, maximal.size());
  out.push_back(std::move(maximal));
  // The header length field swapped, off by one and at the edges.
  const size_t length = wire.size();
  for (size_t bad : {length - 1, length + 1, size_t{0}, size_t{18}, size_t{19}, size_t{4096},
                     size_t{4097}, size_t{0xFFFF}, ((length & 0xFF) << 8) | (length >> 8)}) {
    Bytes m = wire;
    setLength(m, bad);
    out.push_back(std::move(m));
  }
  // UPDATE: the two inner length fields swapped and off by one.
  if (wire.size() >= 23 && wire[18] == static_cast<uint8_t>(MessageType::Update)) {
    const size_t withdrawnLength = (size_t{wire[19]} << 8) | wire[20];
    const size_t attributesAt = 21 + withdrawnLength;
    if (attributesAt + 2 <= wire.size()) {
      Bytes swapped = wire;
      std::swap(swapped[19], swapped[attributesAt]);
      std::swap(swapped[20], swapped[attributesAt + 1]);
      out.push_back(std::move(swapped));
      for (int delta : {-1, 1}) {
        Bytes m = wire;
        m[attributesAt + 1] = static_cast<uint8_t>(m[attributesAt + 1] + delta);
        out.push_back(std::move(m));
      }
    }
  }
  // Random multi-byte mutations: overwrite 1..8 bytes, sometimes also cut or grow the tail.
  for (int n = 0; n < kRandomMutationsPerSeed; ++n) {
    Bytes m = wire;
    const size_t count = 1 + rng() % 8;
    for (size_t i = 0; i < count; ++i) {
      m[rng() % m.size()] = static_cast<uint8_t>(rng());
    }
    switch (rng() % 4) {
      case 0:
        m.resize(rng() % m.size());
        break;
      case 1:
        m.push_back(static_cast<uint8_t>(rng()));
        break;
      default:
        break;
    }
    out.push_back(std::move(m));
  }
  return out;
}

// ---- Properties ----

// A decode error must be a NOTIFICATION we can send: a defined code, a reason for the operator,
// and data that fits in one message.
void expectWellFormed(const DecodeError& error, const std::string& where) {
  EXPECT_GE(error.notification.code, 1) << where;
  EXPECT_LE(error.notification.code, 7) << where;
  EXPECT_FALSE(error.reason.empty()) << where;
  EXPECT_LE(error.notification.data.size(), kMaxMessageSize - kHeaderSize - 2)
      << where << ": " << error.reason;
}

void expectDecodeIsSafe(const Bytes& input, const CodecOptions& options, const std::string& where) {
  auto decoded = decode(input, options);
  if (!decoded) {
    expectWellFormed(decoded.error(), where);
    return;
  }
  // What decodes must re-encode to something that decodes to the same value.
  Message value = decoded->message;
  if (auto* open = std::get_if<OpenMessage>(&value)) {
    open->capabilities.unknown.clear();  // decode only; never encoded
  }
  if (auto* update = std::get_if<UpdateMessage>(&value)) {
    // The encoder writes attributes in type order (RFC 4271 section 5 recommends ascending).
    std::stable_sort(update->attributes.other.begin(), update->attributes.other.end(),
                     [](const RawAttribute& a, const RawAttribute& b) { return a.type < b.type; });
  }
  auto again = decode(encode(value, options), options);
  ASSERT_TRUE(again.has_value()) << where << ": " << again.error().reason;
  EXPECT_TRUE(again->message == value) << where << ": value changed in a round trip";
}

struct FramerResult {
  std::vector<Bytes> messages;
  std::optional<DecodeError> error;
  size_t buffered = 0;
};

FramerResult frame(const Bytes& input, size_t chunk) {
  FramerResult result;
  MessageFramer framer;
  for (size_t at = 0; at < input.size() && !result.error; at += chunk) {
    const size_t n = std::min(chunk, input.size() - at);
    framer.append(std::span(input).subspan(at, n));
    // Each message is at least 19 bytes, so this bounds the loop whatever next() does.
    for (size_t guard = 0; guard <= input.size() / kHeaderSize + 1; ++guard) {
      auto next = framer.next();
      if (!next) {
        result.error = next.error();
        break;
      }
      if (!next->has_value()) {
        break;
      }
      result.messages.push_back(**next);
    }
  }
  result.buffered = framer.bufferedBytes();
  return result;
}

void expectFramerIsSafe(const Bytes& input, const std::string& where) {
  const FramerResult whole = frame(input, input.size() + 1);
  const FramerResult bytewise = frame(input, 1);
  EXPECT_EQ(whole.messages, bytewise.messages) << where;
  EXPECT_EQ(whole.error.has_value(), bytewise.error.has_value()) << where;
  size_t delivered = 0;
  for (const auto& m : whole.messages) {
    ASSERT_LE(delivered + m.size(), input.size()) << where;
    EXPECT_TRUE(std::equal(m.begin(), m.end(), input.begin() + static_cast<ptrdiff_t>(delivered)))
        << where << ": delivered bytes that were not sent";
    delivered += m.size();
  }
  if (whole.error) {
    expectWellFormed(*whole.error, where);
    EXPECT_EQ(whole.error->notification, bytewise.error->notification) << where;
  } else {
    EXPECT_EQ(delivered + whole.buffered, input.size()) << where;
    EXPECT_LT(whole.buffered, kMaxMessageSize) << where;
  }
}

SessionConfig peerConfig() {
  SessionConfig config;
  config.localAsn = kLocalAsn;
  config.peerAsn = kPeerAsn;
  config.routerId = 0xC0000201;
  config.holdTime = std::chrono::seconds(9);
  config.keepaliveTime = std::chrono::seconds(3);
  config.families = {kIpv4Unicast, kIpv6Unicast};
  config.outbound.ebgp = true;
  config.outbound.localAsn = kLocalAsn;
  config.outbound.nextHopV6 = ip("2001:db8::1");
  config.jitterSeed = 1;
  config.addPathReceive = {kIpv4Unicast, kIpv6Unicast};
  config.watchedPrefixes = {prefix("203.0.113.10/32"), prefix("2001:db8:ffff::10/128")};
  return config;
}

// An Established session announcing one prefix per family and watching the same two prefixes;
// with `addPath` the peer sends path identifiers in both families.
SessionFsm establishedFsm(bool addPath = false) {
  SessionFsm fsm(peerConfig());
  (void)fsm.setAnnouncements({prefix("203.0.113.10/32"), prefix("2001:db8:ffff::10/128")});
  (void)fsm.start();
  (void)fsm.onConnected(ip("192.0.2.1"));
  OpenMessage open;
  open.myAs = kPeerAsn;
  open.holdTimeSeconds = 9;
  open.bgpIdentifier = 0xC000020B;
  open.capabilities.multiprotocol = {kIpv4Unicast, kIpv6Unicast};
  open.capabilities.routeRefresh = true;
  open.capabilities.fourOctetAs = kPeerAsn;
  if (addPath) {
    open.capabilities.addPath = {{kIpv4Unicast, AddPathMode::Send},
                                 {kIpv6Unicast, AddPathMode::Send}};
  }
  (void)fsm.onBytes(encode(open));
  (void)fsm.onBytes(encode(KeepaliveMessage{}));
  EXPECT_EQ(fsm.state(), SessionState::Established) << fsm.lastError();
  EXPECT_EQ(fsm.negotiated()->addPathReceive.size(), addPath ? 2u : 0u);
  return fsm;
}

// Established + arbitrary bytes: stay Established (answering at most a ROUTE-REFRESH with
// UPDATEs), or go Idle after at most one NOTIFICATION and exactly one Disconnect, with nothing
// sent after it. Without a NOTIFICATION sent, the peer must have sent one.
void expectFsmIsSafe(const SessionFsm& established, const Bytes& input, const std::string& where) {
  SessionFsm fsm = established;
  const Actions actions = fsm.onBytes(input);
  const std::string what = where + ": " + describe(actions);
  size_t disconnects = 0;
  size_t notifications = 0;
  for (const auto& action : actions) {
    ASSERT_TRUE(
        std::holds_alternative<Send>(action) || std::holds_alternative<Arm>(action) ||
        std::holds_alternative<Cancel>(action) || std::holds_alternative<Disconnect>(action) ||
        std::holds_alternative<StateChanged>(action) || std::holds_alternative<Notice>(action) ||
        std::holds_alternative<WatchedPathsChanged>(action))
        << what;
    if (std::holds_alternative<Disconnect>(action)) {
      ++disconnects;
    }
    if (const auto* send = std::get_if<Send>(&action)) {
      EXPECT_EQ(disconnects, 0u) << what << ": Send after Disconnect";
      if (send->type == MessageType::Notification) {
        ++notifications;
        Message sent = decodeSent(*send);
        EXPECT_TRUE(fsm.counters().lastNotificationSent &&
                    sent == Message{*fsm.counters().lastNotificationSent})
            << what;
        const auto& n = std::get<NotificationMessage>(sent);
        EXPECT_GE(n.code, 1) << what;
        EXPECT_LE(n.code, 7) << what;
      } else {
        EXPECT_EQ(send->type, MessageType::Update) << what;
      }
    }
  }
  if (fsm.state() == SessionState::Established) {
    EXPECT_EQ(disconnects, 0u) << what;
    EXPECT_EQ(notifications, 0u) << what;
    EXPECT_TRUE(actionsOf<StateChanged>(actions).empty()) << what;
    return;
  }
  EXPECT_EQ(fsm.state(), SessionState::Idle) << what;
  EXPECT_EQ(disconnects, 1u) << what;
  EXPECT_LE(notifications, 1u) << what;
  if (notifications == 0) {
    EXPECT_TRUE(fsm.counters().lastNotificationReceived.has_value())
        << what << ": closed without a NOTIFICATION either way";
  }
  EXPECT_TRUE(fsm.advertised().empty()) << what;
  EXPECT_TRUE(fsm.watchedPaths().empty()) << what;
}

TEST(Robustness, MutatedMessagesNeverCrashAndFailCleanly) {
  const SessionFsm established = establishedFsm();
  ASSERT_EQ(established.state(), SessionState::Established);
  const SessionFsm establishedAddPath = establishedFsm(true);
  ASSERT_EQ(establishedAddPath.state(), SessionState::Established);
  std::mt19937 rng(kFixedSeed);
  const auto seeds = allSeeds();
  ASSERT_GT(seeds.size(), 30u);
  size_t cases = 0;
  size_t decodeErrors = 0;
  for (const auto& seed : seeds) {
    // The unmutated message itself is valid.
    ASSERT_TRUE(decode(seed.wire, seed.options).has_value()) << seed.name;
    const std::string seedHex = fmt::format("{:02x}", fmt::join(seed.wire, ""));
    const auto mutations = mutationsOf(seed.wire, rng);
    for (size_t i = 0; i < mutations.size(); ++i) {
      const Bytes& input = mutations[i];
      const std::string where = seed.name + " " + seedHex + " mutation " + std::to_string(i) +
                                ": " + fmt::format("{:02x}", fmt::join(input, ""));
      expectDecodeIsSafe(input, seed.options, where);
      expectFramerIsSafe(input, where);
      expectFsmIsSafe(seed.options.addPath.empty() ? established : establishedAddPath, input,
                      where);
      decodeErrors += !decode(input, seed.options).has_value();
      ++cases;
      if (::testing::Test::HasFatalFailure() || ::testing::Test::HasNonfatalFailure()) {
        return;  // one mutation's failures are enough to read
      }
    }
  }
  // Enough cases ran, and the mutations were not all harmless.
  EXPECT_GT(cases, 5000u);
  EXPECT_GT(decodeErrors, cases / 4);
}

// Found by the mutations above: MP_UNREACH_NLRI of 1 byte has no room for AFI and SAFI. It is a
// malformed MP_UNREACH_NLRI, which resets the session (RFC 7606 section 7.11); it must not be
// read as a family.
TEST(Robustness, OneByteMpUnreachResetsTheSession) {
  for (uint8_t value : {0x00, 0x01, 0x02}) {
    expectDecodeError(updateMessage({}, {0x80, 0x0F, 0x01, value}, {}), ErrorCode::UpdateMessage,
                      subcode::kMalformedAttributeList, {});
  }
}

// Found by the mutations above: a ROUTE-REFRESH of the maximum length is answered with 7/1, whose
// data is the message (RFC 7313 section 5); it must be cut to fit in a NOTIFICATION rather than
// make the encoder abort.
TEST(Robustness, MaximumLengthRouteRefreshIsAnsweredNotFatal) {
  Bytes wire = withHeader(MessageType::RouteRefresh, Bytes(kMaxMessageSize - kHeaderSize, 0x01));
  MessageFramer framer;
  framer.append(wire);
  auto next = framer.next();
  ASSERT_FALSE(next.has_value());
  EXPECT_EQ(next.error().notification.code, static_cast<uint8_t>(ErrorCode::RouteRefreshMessage));
  EXPECT_EQ(next.error().notification.subcode, subcode::kInvalidMessageLength);
  EXPECT_LE(encode(next.error().notification).size(), kMaxMessageSize);

  SessionFsm fsm = establishedFsm();
  const Actions actions = fsm.onBytes(wire);
  EXPECT_EQ(fsm.state(), SessionState::Idle);
  auto sends = actionsOf<Send>(actions);
  ASSERT_EQ(sends.size(), 1u) << describe(actions);
  EXPECT_EQ(sends[0].type, MessageType::Notification);
  EXPECT_EQ(sends[0].bytes.size(), kMaxMessageSize);
}

// 10,000 valid UPDATEs, each with a prefix the FSM has not seen: counters advance, what we
// advertise is untouched, and the number of live heap allocations does not grow with the stream.
TEST(Robustness, ReceivedUpdatesAreCountedNotStored) {
  constexpr size_t kUpdates = 10000;
  OutboundAttributes peer;
  peer.ebgp = true;
  peer.localAsn = kPeerAsn;
  peer.nextHopV4 = ip("192.0.2.11");
  peer.nextHopV6 = ip("2001:db8::11");
  peer.communities = {0xFDE80064};
  std::vector<Bytes> stream;
  size_t announced = 0;
  size_t withdrawn = 0;
  for (size_t i = 0; i < kUpdates; ++i) {
    const std::string v4 = "10." + std::to_string(i >> 8) + "." + std::to_string(i & 0xFF) + ".1";
    const Prefix p =
        i % 2 == 0 ? prefix(v4 + "/32") : prefix("2001:db8:" + std::to_string(i) + "::1/128");
    const std::vector<Prefix> one{p};
    std::vector<UpdateMessage> updates =
        i % 5 == 4 ? buildWithdrawals(one) : buildAnnouncements(one, peer);
    ASSERT_EQ(updates.size(), 1u);
    (i % 5 == 4 ? withdrawn : announced)++;
    stream.push_back(encode(updates[0], CodecOptions{.fourOctetAs = true}));
  }

  // The counter sees allocations at all (the replacement operator new is in effect).
  const int64_t probeBefore = liveAllocations.load();
  auto probe = std::make_unique<int>(1);
  ASSERT_EQ(liveAllocations.load() - probeBefore, 1);

  SessionFsm fsm = establishedFsm();
  const std::set<Prefix> advertised = fsm.advertised();
  ASSERT_EQ(advertised.size(), 2u);
  const SessionCounters before = fsm.counters();
  constexpr size_t kWarmUp = 100;
  size_t unexpectedActions = 0;
  int64_t liveAfterWarmUp = 0;
  for (size_t i = 0; i < stream.size(); ++i) {
    if (i == kWarmUp) {
      liveAfterWarmUp = liveAllocations.load();
    }
    const Actions actions = fsm.onBytes(stream[i]);
    // Each UPDATE only restarts the hold timer.
    unexpectedActions += !(actions.size() == 1 && std::holds_alternative<Arm>(actions[0]));
  }
  const int64_t growth = liveAllocations.load() - liveAfterWarmUp;

  EXPECT_EQ(unexpectedActions, 0u);
  EXPECT_EQ(fsm.state(), SessionState::Established);
  EXPECT_EQ(fsm.advertised(), advertised);
  const auto& after = fsm.counters();
  EXPECT_EQ(after.messagesReceived[static_cast<size_t>(MessageType::Update)] -
                before.messagesReceived[static_cast<size_t>(MessageType::Update)],
            kUpdates);
  EXPECT_EQ(after.prefixesReceived - before.prefixesReceived, announced);
  EXPECT_EQ(after.withdrawalsReceived - before.withdrawalsReceived, withdrawn);
  // Storing anything per received prefix would add thousands of allocations.
  EXPECT_LT(growth, 16) << "live allocations grew by " << growth << " over " << kUpdates - kWarmUp
                        << " UPDATEs";
}

// A peer with ADD-PATH churns the paths of a watched VIP: path identifiers 0..999 over and over,
// each announcement with other attributes (a long AS_PATH, many communities), and every tenth
// UPDATE withdrawing one of the first 64. The FSM keeps at most kMaxPathsPerWatchedPrefix paths,
// counts the rest, and its live allocations do not grow with the stream.
TEST(Robustness, WatchedPathsStayBoundedUnderAHostilePeer) {
  constexpr uint32_t kUpdates = 10000;
  const Prefix vip = prefix("203.0.113.10/32");
  std::vector<Bytes> stream;
  uint64_t withdrawals = 0;
  for (uint32_t i = 0; i < kUpdates; ++i) {
    UpdateMessage u;
    u.attributes.origin = Origin::Igp;
    u.attributes.asPath =
        AsPath{{AsPathSegment::Type::AsSequence, std::vector<uint32_t>(200 + i % 7, kPeerAsn)}};
    u.attributes.nextHop = ip("192.0.2.11");
    u.attributes.localPref = i;
    u.attributes.communities = std::vector<uint32_t>(100, 0xFDE80064 + i);
    u.nlri = {vip};
    u.nlriPathIds = {i % 1000};
    if (i % 10 == 9) {
      u.withdrawn = {vip};
      u.withdrawnPathIds = {(i / 10) % 64};
      ++withdrawals;
    }
    stream.push_back(encode(u, kAddPath));
  }

  SessionFsm fsm = establishedFsm(true);
  constexpr size_t kWarmUp = 1000;
  int64_t liveAfterWarmUp = 0;
  size_t changes = 0;
  for (size_t i = 0; i < stream.size(); ++i) {
    if (i == kWarmUp) {
      liveAfterWarmUp = liveAllocations.load();
    }
    const Actions actions = fsm.onBytes(stream[i]);
    changes += actionsOf<WatchedPathsChanged>(actions).size();
    ASSERT_EQ(fsm.state(), SessionState::Established) << fsm.lastError();
    ASSERT_LE(fsm.watchedPaths().at(vip).size(), kMaxPathsPerWatchedPrefix);
  }
  const int64_t growth = liveAllocations.load() - liveAfterWarmUp;

  const auto& c = fsm.counters();
  EXPECT_EQ(fsm.watchedPaths().at(vip).size(), kMaxPathsPerWatchedPrefix);
  EXPECT_EQ(c.watchedPathsReceived, kUpdates);
  EXPECT_EQ(c.watchedPathsWithdrawn, withdrawals);
  EXPECT_GT(c.watchedPathsDropped, kUpdates / 2);
  EXPECT_GT(changes, 500u);  // the map did churn
  // A replaced path frees what the old one held; a path in a freed slot takes what it left.
  EXPECT_LT(growth, 16) << "live allocations grew by " << growth;
}

}  // namespace
}  // namespace vipd::bgp::test
