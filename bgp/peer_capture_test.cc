// Messages real peers sent, captured by tests/e2e/capture_peer_messages.py into
// tests/data/captures/<peer>.hex (BIRD 2.0.12, FRR 8.4, GoBGP 3.10, ExaBGP 4.2; one eBGP and one
// iBGP session each). Every message goes through the decoder, the encoder, the framer (one byte at
// a time) and a SessionFsm, and the facts the capture script configured are checked field by field.
//
// What the peers were given (capture_peer_messages.py): the peer is 192.0.2.11 (2001:db8::11), AS
// 65001 for eBGP and 65000 for iBGP, hold time 9; it originates 203.0.113.10/32 and
// 2001:db8:ffff::10/128 with community 65000:100 and large community 65000:1:2. All four advertise
// the 4-octet AS capability, so everything decodes with CodecOptions{.fourOctetAs = true}.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "bgp/captures_test_support.h"
#include "bgp/codec.h"
#include "bgp/message.h"
#include "bgp/message_framer.h"
#include "bgp/session_fsm.h"
#include "bgp/codec_test_support.h"
#include "bgp/fsm_test_support.h"

namespace vipd::bgp::test {

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using vipd::bgp::testing::actionsOf;
using vipd::bgp::testing::describe;
using vipd::bgp::testing::ip;
using vipd::bgp::testing::prefix;
using vipd::bgp::testing::sentMessages;

constexpr CodecOptions kFourOctet{.fourOctetAs = true};
constexpr uint32_t kPeerRouterId = 0xC000020B;  // 192.0.2.11
constexpr uint32_t kOurRouterId = 0xC0000201;   // 192.0.2.1, the capture speaker
constexpr uint32_t kOurAsn = 65000;
constexpr uint32_t kPeerEbgpAsn = 65001;
constexpr uint32_t kCommunity = (65000u << 16) | 100;  // 65000:100
const LargeCommunity kLargeCommunity{65000, 1, 2};

std::vector<CapturedMessage> sessionOf(std::string_view peer, bool ibgp) {
  std::vector<CapturedMessage> result;
  for (auto& m : loadCapture(peer)) {
    if (m.ibgp == ibgp) {
      result.push_back(std::move(m));
    }
  }
  return result;
}

Message decodeCaptured(const CapturedMessage& m) {
  auto decoded = decode(m.wire, kFourOctet);
  if (!decoded) {
    ADD_FAILURE() << m.label << ": " << decoded.error().reason;
    return NotificationMessage{};
  }
  return decoded->message;
}

template <class T>
std::vector<T> messagesOf(const std::vector<CapturedMessage>& session) {
  std::vector<T> result;
  for (const auto& m : session) {
    Message message = decodeCaptured(m);
    if (auto* typed = std::get_if<T>(&message)) {
      result.push_back(std::move(*typed));
    }
  }
  return result;
}

// Number of capabilities in each optional parameter of an OPEN, read from the raw bytes (not
// through our decoder): RFC 5492 allows one parameter per capability or all in one.
std::vector<size_t> capabilitiesPerParameter(const Bytes& open) {
  std::vector<size_t> result;
  const size_t end = 29 + open.at(28);
  for (size_t p = 29; p + 2 <= end; p += 2 + open.at(p + 1)) {
    EXPECT_EQ(open.at(p), 2) << "optional parameter type";
    size_t count = 0;
    for (size_t c = p + 2; c + 2 <= p + 2 + open.at(p + 1); c += 2 + open.at(c + 1)) {
      ++count;
    }
    result.push_back(count);
  }
  return result;
}

// ---- What each peer was observed to send ----

struct PeerFacts {
  std::string_view peer;
  std::vector<size_t> capabilitiesPerParameter;  // layout of the OPEN's optional parameters
  bool routeRefresh = false;
  std::optional<GracefulRestartCapability> gracefulRestart;
  std::vector<uint8_t> unknownCapabilities;  // codes, in order; 128 (Cisco refresh) is dropped
  std::optional<uint32_t> med;               // MULTI_EXIT_DISC on the UPDATEs
  size_t ipv6NextHopEbgp = 16;               // MP_REACH next hop length: 32 = global + link-local
  size_t ipv6NextHopIbgp = 16;
  std::set<AfiSafi> endOfRib;      // End-of-RIB markers sent in each session
  std::vector<uint8_t> ceaseEbgp;  // trailing Cease subcodes after SIGTERM
  std::vector<uint8_t> ceaseIbgp;
  std::vector<int> nonCanonical;  // message numbers our encoder does not reproduce byte for byte
  std::vector<AddPathFamily> addPath;  // ADD-PATH tuples of the OPEN (RFC 7911)
};

GracefulRestartCapability gr(bool restartState, bool notification, uint16_t seconds) {
  GracefulRestartCapability g;
  g.restartState = restartState;
  g.notification = notification;
  g.restartTimeSeconds = seconds;
  return g;
}

const std::vector<PeerFacts>& allFacts() {
  static const std::vector<PeerFacts> kFacts{
      // BIRD: all 7 capabilities in one parameter; GR aware (no flags, 120 s, no families);
      // enhanced route refresh (70) and LLGR (71) are unknown to us. Not canonical: the OPEN
      // (70/71 are not re-encoded) and the IPv6 UPDATE (MP_REACH first, extended length).
      {"bird2",
       {7},
       true,
       gr(false, false, 120),
       {70, 71},
       std::nullopt,
       32,
       16,
       {kIpv4Unicast, kIpv6Unicast},
       {2},
       {2},
       {1, 5}},
      // FRR: one parameter per capability; GR with R and N set; ADD-PATH receive (not send) for
      // both families, which FRR advertises unless told not to; MED 0; 32-byte IPv6 next hops
      // on both sessions. Not canonical: the OPEN (layout, unknown capabilities) and both
      // UPDATEs (AS_PATH with the extended-length flag; MP_REACH first).
      {"frr8",
       {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
       true,
       gr(true, true, 120),
       {70, 6, 73, 71},
       0,
       32,
       32,
       {},
       {3, 2},
       {3, 2},
       {1, 4, 5},
       {{kIpv4Unicast, AddPathMode::Receive}, {kIpv6Unicast, AddPathMode::Receive}}},
      // GoBGP: like BIRD, one parameter for all 6 capabilities (route refresh first); no GR;
      // FQDN (73) and extended next hop (5). Its UPDATEs are canonical; its OPEN is not.
      {"gobgp3", {6}, true, std::nullopt, {73, 5}, std::nullopt, 16, 16, {}, {3}, {3}, {1}},
      // ExaBGP: one parameter per capability, no route refresh, no GR capability at all (so no
      // R bit to see), extended message (6). Not canonical: the OPEN, the IPv6 UPDATE
      // (MP_REACH last) and the IPv6 End-of-RIB (extended-length MP_UNREACH).
      {"exabgp4",
       {1, 1, 1, 1},
       false,
       std::nullopt,
       {6},
       std::nullopt,
       16,
       16,
       {kIpv4Unicast, kIpv6Unicast},
       {},
       {},
       {1, 4, 6}},
  };
  return kFacts;
}

class PeerCaptureTest : public ::testing::TestWithParam<PeerFacts> {
 protected:
  const PeerFacts& facts() const { return GetParam(); }
  std::vector<CapturedMessage> all() const { return loadCapture(facts().peer); }
  std::vector<CapturedMessage> session(bool ibgp) const { return sessionOf(facts().peer, ibgp); }
};

INSTANTIATE_TEST_SUITE_P(Peers, PeerCaptureTest, ::testing::ValuesIn(allFacts()),
                         [](const auto& info) { return std::string(info.param.peer); });

TEST_P(PeerCaptureTest, EachSessionStartsWithOpenAndKeepalive) {
  for (bool ibgp : {false, true}) {
    auto messages = session(ibgp);
    ASSERT_GE(messages.size(), 4u) << facts().peer << (ibgp ? " ibgp" : " ebgp");
    for (size_t i = 0; i < messages.size(); ++i) {
      EXPECT_EQ(messages[i].number, static_cast<int>(i + 1)) << messages[i].label;
    }
    EXPECT_EQ(messages[0].wire.at(18), static_cast<uint8_t>(MessageType::Open));
    EXPECT_EQ(messages[1].wire.at(18), static_cast<uint8_t>(MessageType::Keepalive));
  }
}

TEST_P(PeerCaptureTest, EveryMessageDecodesWithoutRfc7606Action) {
  auto messages = all();
  ASSERT_FALSE(messages.empty());
  for (const auto& m : messages) {
    auto decoded = decode(m.wire, kFourOctet);
    ASSERT_TRUE(decoded.has_value()) << m.label << ": " << decoded.error().reason;
    EXPECT_EQ(decoded->handling, UpdateHandling::Normal) << m.label;
    EXPECT_TRUE(decoded->notes.empty())
        << m.label << ": " << ::testing::PrintToString(decoded->notes);
    EXPECT_EQ(static_cast<uint8_t>(messageTypeOf(decoded->message)), m.wire.at(18)) << m.label;
  }
}

// Canonical messages re-encode byte for byte. The others are listed in PeerFacts with the reason;
// they must still differ (so the list stays true) and must survive a value round trip.
TEST_P(PeerCaptureTest, ReencodesByteIdenticallyWhereOurEncoderIsCanonical) {
  for (const auto& m : all()) {
    auto decoded = decode(m.wire, kFourOctet);
    ASSERT_TRUE(decoded.has_value()) << m.label;
    Message value = decoded->message;
    const Bytes again = encode(value, kFourOctet);
    const auto& skip = facts().nonCanonical;
    if (std::find(skip.begin(), skip.end(), m.number) == skip.end()) {
      EXPECT_EQ(again, m.wire) << m.label;
      continue;
    }
    EXPECT_NE(again, m.wire) << m.label << ": now canonical; update nonCanonical";
    if (auto* open = std::get_if<OpenMessage>(&value)) {
      open->capabilities.unknown.clear();  // decode only; never encoded
    }
    auto redecoded = decode(again, kFourOctet);
    ASSERT_TRUE(redecoded.has_value()) << m.label;
    EXPECT_TRUE(redecoded->message == value) << m.label;
  }
}

TEST_P(PeerCaptureTest, FramerFedOneByteAtATimeYieldsTheSameMessages) {
  auto messages = all();
  Bytes stream;
  for (const auto& m : messages) {
    expectFramedByteByByte(m.wire);
    stream.insert(stream.end(), m.wire.begin(), m.wire.end());
  }
  MessageFramer framer;
  std::vector<Bytes> framed;
  for (uint8_t byte : stream) {
    framer.append(std::span(&byte, 1));
    auto next = framer.next();
    ASSERT_TRUE(next.has_value()) << next.error().reason;
    if (next->has_value()) {
      framed.push_back(**next);
    }
  }
  EXPECT_EQ(framer.bufferedBytes(), 0u);
  ASSERT_EQ(framed.size(), messages.size());
  for (size_t i = 0; i < messages.size(); ++i) {
    EXPECT_EQ(framed[i], messages[i].wire) << messages[i].label;
  }
}

TEST_P(PeerCaptureTest, OpenCarriesTheConfiguredIdentityAndCapabilities) {
  for (bool ibgp : {false, true}) {
    auto s = session(ibgp);
    ASSERT_FALSE(s.empty());
    EXPECT_EQ(capabilitiesPerParameter(s[0].wire), facts().capabilitiesPerParameter) << s[0].label;
    auto opens = messagesOf<OpenMessage>(s);
    ASSERT_EQ(opens.size(), 1u);
    const OpenMessage& open = opens[0];
    const uint32_t asn = ibgp ? kOurAsn : kPeerEbgpAsn;
    EXPECT_EQ(open.version, 4);
    EXPECT_EQ(open.myAs, asn);
    EXPECT_EQ(open.holdTimeSeconds, 9);
    EXPECT_EQ(open.bgpIdentifier, kPeerRouterId);
    EXPECT_THAT(open.capabilities.multiprotocol, ElementsAre(kIpv4Unicast, kIpv6Unicast));
    EXPECT_EQ(open.capabilities.fourOctetAs, asn);
    EXPECT_EQ(open.capabilities.routeRefresh, facts().routeRefresh);
    EXPECT_EQ(open.capabilities.gracefulRestart, facts().gracefulRestart);
    EXPECT_EQ(open.capabilities.addPath, facts().addPath);
    std::vector<uint8_t> unknown;
    for (const auto& c : open.capabilities.unknown) {
      unknown.push_back(c.code);
    }
    EXPECT_EQ(unknown, facts().unknownCapabilities);
  }
}

TEST_P(PeerCaptureTest, UpdatesCarryTheConfiguredRoutes) {
  for (bool ibgp : {false, true}) {
    const std::string where = std::string(facts().peer) + (ibgp ? " ibgp" : " ebgp");
    std::vector<UpdateMessage> v4;
    std::vector<UpdateMessage> v6;
    std::set<AfiSafi> endOfRib;
    for (const auto& update : messagesOf<UpdateMessage>(session(ibgp))) {
      if (auto family = update.endOfRibFamily()) {
        EXPECT_TRUE(endOfRib.insert(*family).second) << where << ": End-of-RIB twice";
      } else if (update.attributes.mpReach) {
        v6.push_back(update);
      } else {
        v4.push_back(update);
      }
    }
    EXPECT_EQ(endOfRib, facts().endOfRib) << where;
    ASSERT_EQ(v4.size(), 1u) << where;
    ASSERT_EQ(v6.size(), 1u) << where;

    const AsPath ebgpPath{{AsPathSegment::Type::AsSequence, {kPeerEbgpAsn}}};
    const AsPath expectedPath = ibgp ? AsPath{} : ebgpPath;
    const std::optional<uint32_t> localPref = ibgp ? std::optional<uint32_t>(100) : std::nullopt;
    for (const auto* update : {&v4[0], &v6[0]}) {
      const PathAttributes& a = update->attributes;
      EXPECT_EQ(a.origin, Origin::Igp) << where;
      EXPECT_EQ(a.asPath, expectedPath) << where;
      EXPECT_EQ(a.med, facts().med) << where;
      EXPECT_EQ(a.localPref, localPref) << where;
      EXPECT_EQ(a.communities, std::vector<uint32_t>{kCommunity}) << where;
      EXPECT_EQ(a.largeCommunities, std::vector<LargeCommunity>{kLargeCommunity}) << where;
      EXPECT_FALSE(a.atomicAggregate) << where;
      EXPECT_TRUE(a.other.empty()) << where;
      EXPECT_TRUE(update->withdrawn.empty()) << where;
    }
    EXPECT_THAT(v4[0].nlri, ElementsAre(prefix("203.0.113.10/32"))) << where;
    EXPECT_EQ(v4[0].attributes.nextHop, ip("192.0.2.11")) << where;
    EXPECT_FALSE(v4[0].attributes.mpReach) << where;

    const MpReachNlri& mp = *v6[0].attributes.mpReach;
    EXPECT_TRUE(v6[0].nlri.empty()) << where;
    EXPECT_FALSE(v6[0].attributes.nextHop) << where;
    EXPECT_EQ(mp.family, kIpv6Unicast) << where;
    EXPECT_THAT(mp.nlri, ElementsAre(prefix("2001:db8:ffff::10/128"))) << where;
    const size_t nextHopLength = ibgp ? facts().ipv6NextHopIbgp : facts().ipv6NextHopEbgp;
    ASSERT_EQ(mp.nextHop.size(), nextHopLength) << where;
    const IpAddress global = ip("2001:db8::11");
    EXPECT_TRUE(std::equal(mp.nextHop.begin(), mp.nextHop.begin() + 16, global.bytes.begin()))
        << where;
    if (nextHopLength == 32) {
      // RFC 2545 section 3: the second address is the peer's link-local one (fe80::/10).
      EXPECT_EQ(mp.nextHop[16], 0xfe) << where;
      EXPECT_EQ(mp.nextHop[17] & 0xc0, 0x80) << where;
    }
  }
}

TEST_P(PeerCaptureTest, TrailingNotificationsAreCease) {
  for (bool ibgp : {false, true}) {
    std::vector<uint8_t> subcodes;
    for (const auto& n : messagesOf<NotificationMessage>(session(ibgp))) {
      EXPECT_EQ(n.code, static_cast<uint8_t>(ErrorCode::Cease));
      EXPECT_TRUE(n.data.empty());  // no RFC 9003 shutdown communication configured
      EXPECT_THAT(describeNotification(n.code, n.subcode), HasSubstr("Cease"));
      subcodes.push_back(n.subcode);
    }
    EXPECT_EQ(subcodes, ibgp ? facts().ceaseIbgp : facts().ceaseEbgp);
  }
}

// ---- The two non-canonical differences spelled out byte by byte ----

// BIRD's OPEN minus enhanced route refresh (70) and LLGR (71), which we never encode: message
// length 0x3b -> 0x37, optional parameters 0x1e -> 0x1a, capabilities parameter 0x1c -> 0x18.
TEST(PeerCaptureVectors, BirdOpenReencodesWithoutTheUnknownCapabilities) {
  auto s = sessionOf("bird2", false);
  ASSERT_FALSE(s.empty());
  const Bytes expected = *parseHex(
      "ffffffffffffffffffffffffffffffff00370104fde90009c000020b1a02180104000100010104000200010200"
      "4002007841040000fde9");
  EXPECT_EQ(encode(decodeCaptured(s[0]), kFourOctet), expected);
}

// FRR sends AS_PATH with the extended-length flag (0x50, 2-byte length) although it is 6 bytes;
// we use the 1-byte length (0x40) whenever the value fits, one byte shorter.
TEST(PeerCaptureVectors, FrrUpdateReencodesWithoutTheExtendedLengthAsPath) {
  auto s = sessionOf("frr8", false);
  ASSERT_GE(s.size(), 4u);
  ASSERT_THAT(s[3].label, HasSubstr("UPDATE ipv4 NLRI"));
  const Bytes expected = *parseHex(
      "ffffffffffffffffffffffffffffffff004d02000000314001010040020602010000fde9400304c000020b8004"
      "0400000000c00804fde80064c0200c0000fde8000000010000000220cb00710a");
  EXPECT_EQ(encode(decodeCaptured(s[3]), kFourOctet), expected);
}

// ---- The session FSM fed each peer's captured session ----

struct FsmCase {
  const PeerFacts* facts;
  bool ibgp;
};

class PeerCaptureFsmTest : public ::testing::TestWithParam<FsmCase> {
 protected:
  SessionConfig config() const {
    SessionConfig c;
    c.localAsn = kOurAsn;
    c.peerAsn = GetParam().ibgp ? kOurAsn : kPeerEbgpAsn;
    c.routerId = kOurRouterId;
    c.holdTime = std::chrono::seconds(9);
    c.keepaliveTime = std::chrono::seconds(3);
    c.families = {kIpv4Unicast, kIpv6Unicast};
    c.outbound.ebgp = !GetParam().ibgp;
    c.outbound.localAsn = kOurAsn;
    return c;
  }

  // Starts a session and connects it; the FSM has sent its OPEN.
  SessionFsm connected() const {
    SessionFsm fsm(config());
    (void)fsm.start();
    (void)fsm.onConnected(ip("192.0.2.1"));
    EXPECT_EQ(fsm.state(), SessionState::OpenSent);
    return fsm;
  }

  // The captured session up to (not including) the first NOTIFICATION, and the rest.
  std::pair<std::vector<CapturedMessage>, std::vector<CapturedMessage>> split() const {
    auto s = sessionOf(GetParam().facts->peer, GetParam().ibgp);
    auto firstNotification = std::find_if(s.begin(), s.end(), [](const CapturedMessage& m) {
      return m.wire.at(18) == static_cast<uint8_t>(MessageType::Notification);
    });
    return {{s.begin(), firstNotification}, {firstNotification, s.end()}};
  }

  void expectNoNotificationSent(const Actions& actions, const std::string& where) const {
    for (const auto& send : actionsOf<Send>(actions)) {
      EXPECT_NE(send.type, MessageType::Notification) << where << ": " << describe(actions);
    }
    for (const auto& d : actionsOf<Disconnect>(actions)) {
      ADD_FAILURE() << where << ": Disconnect(" << d.reason << ")";
    }
  }

  void expectEstablishedWithRoutes(const SessionFsm& fsm, size_t updates) const {
    const PeerFacts& f = *GetParam().facts;
    EXPECT_EQ(fsm.state(), SessionState::Established) << fsm.lastError();
    EXPECT_EQ(fsm.counters().prefixesReceived, 2u);  // 203.0.113.10/32, 2001:db8:ffff::10/128
    EXPECT_EQ(fsm.counters().withdrawalsReceived, 0u);
    EXPECT_EQ(fsm.counters().endOfRibReceived, f.endOfRib.size());
    EXPECT_EQ(fsm.counters().messagesReceived[static_cast<size_t>(MessageType::Update)], updates);
    EXPECT_EQ(fsm.counters().treatAsWithdraw, 0u);
    EXPECT_EQ(fsm.counters().attributeDiscard, 0u);
    EXPECT_FALSE(fsm.counters().lastNotificationSent);
    EXPECT_EQ(fsm.counters().messagesSent[static_cast<size_t>(MessageType::Notification)], 0u);
    ASSERT_TRUE(fsm.negotiated());
    const Negotiated& n = *fsm.negotiated();
    EXPECT_EQ(n.peerAsn, GetParam().ibgp ? kOurAsn : kPeerEbgpAsn);
    EXPECT_EQ(n.peerRouterId, kPeerRouterId);
    EXPECT_EQ(n.holdTime, std::chrono::seconds(9));
    EXPECT_TRUE(n.fourOctetAs);
    EXPECT_EQ(n.routeRefresh, f.routeRefresh);
    EXPECT_THAT(n.families, ElementsAre(kIpv4Unicast, kIpv6Unicast));
    EXPECT_EQ(n.peerGracefulRestart, f.gracefulRestart);
  }
};

std::vector<FsmCase> fsmCases() {
  std::vector<FsmCase> cases;
  for (const auto& f : allFacts()) {
    cases.push_back({&f, false});
    cases.push_back({&f, true});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Peers, PeerCaptureFsmTest, ::testing::ValuesIn(fsmCases()),
                         [](const auto& info) {
                           return std::string(info.param.facts->peer) +
                                  (info.param.ibgp ? "_ibgp" : "_ebgp");
                         });

TEST_P(PeerCaptureFsmTest, MessageByMessageReachesEstablishedAndCountsPrefixes) {
  auto [beforeCease, cease] = split();
  ASSERT_GE(beforeCease.size(), 4u);
  SessionFsm fsm = connected();
  size_t updates = 0;
  for (const auto& m : beforeCease) {
    Actions actions = fsm.onBytes(m.wire);
    expectNoNotificationSent(actions, m.label);
    updates += m.wire.at(18) == static_cast<uint8_t>(MessageType::Update);
    if (m.number == 1) {
      EXPECT_EQ(fsm.state(), SessionState::OpenConfirm) << m.label << ": " << describe(actions);
      // The KEEPALIVE answering the OPEN.
      auto sent = sentMessages(actions, kFourOctet);
      ASSERT_EQ(sent.size(), 1u);
      EXPECT_TRUE(std::holds_alternative<KeepaliveMessage>(sent[0]));
    } else {
      EXPECT_EQ(fsm.state(), SessionState::Established) << m.label << ": " << describe(actions);
    }
  }
  expectEstablishedWithRoutes(fsm, updates);

  // The peer's Cease after SIGTERM: close without answering it.
  if (!cease.empty()) {
    Actions actions = fsm.onBytes(cease[0].wire);
    EXPECT_EQ(fsm.state(), SessionState::Idle);
    EXPECT_TRUE(actionsOf<Send>(actions).empty()) << describe(actions);
    EXPECT_EQ(actionsOf<Disconnect>(actions).size(), 1u) << describe(actions);
    Message expected = decodeCaptured(cease[0]);
    ASSERT_TRUE(std::holds_alternative<NotificationMessage>(expected));
    EXPECT_EQ(fsm.counters().lastNotificationReceived, std::get<NotificationMessage>(expected));
  }
}

TEST_P(PeerCaptureFsmTest, WholeSessionOneByteAtATime) {
  auto [beforeCease, cease] = split();
  SessionFsm fsm = connected();
  Bytes stream;
  size_t updates = 0;
  for (const auto& m : beforeCease) {
    stream.insert(stream.end(), m.wire.begin(), m.wire.end());
    updates += m.wire.at(18) == static_cast<uint8_t>(MessageType::Update);
  }
  for (uint8_t byte : stream) {
    Actions actions = fsm.onBytes(std::span(&byte, 1));
    expectNoNotificationSent(actions, "byte stream");
  }
  expectEstablishedWithRoutes(fsm, updates);
}

// The same sessions with vipd advertising ADD-PATH receive and watching both routes as VIPs. No
// captured peer sends path identifiers (FRR advertises receive only), so each route is kept as
// the peer's one path, path identifier 0, until the peer's Cease ends the session.
TEST_P(PeerCaptureFsmTest, WatchedRoutesKeepThePeersPathWithPathIdZero) {
  auto [beforeCease, cease] = split();
  SessionConfig c = config();
  c.addPathReceive = {kIpv4Unicast, kIpv6Unicast};
  c.watchedPrefixes = {prefix("203.0.113.10/32"), prefix("2001:db8:ffff::10/128")};
  SessionFsm fsm(c);
  (void)fsm.start();
  (void)fsm.onConnected(ip("192.0.2.1"));
  size_t changes = 0;
  for (const auto& m : beforeCease) {
    Actions actions = fsm.onBytes(m.wire);
    expectNoNotificationSent(actions, m.label);
    changes += actionsOf<WatchedPathsChanged>(actions).size();
  }
  ASSERT_EQ(fsm.state(), SessionState::Established) << fsm.lastError();
  EXPECT_TRUE(fsm.negotiated()->addPathReceive.empty());
  EXPECT_EQ(changes, 2u);

  const bool ibgp = GetParam().ibgp;
  ReceivedPath v4;
  v4.nextHop = ip("192.0.2.11");
  v4.asPath = ibgp ? AsPath{} : AsPath{{AsPathSegment::Type::AsSequence, {kPeerEbgpAsn}}};
  v4.localPref = ibgp ? std::optional<uint32_t>(100) : std::nullopt;
  v4.communities = {kCommunity};
  ReceivedPath v6 = v4;
  v6.nextHop = ip("2001:db8::11");
  EXPECT_EQ(fsm.watchedPaths(), (WatchedPaths{{prefix("203.0.113.10/32"), {{0, v4}}},
                                              {prefix("2001:db8:ffff::10/128"), {{0, v6}}}}));
  EXPECT_EQ(fsm.counters().watchedPathsReceived, 2u);

  if (!cease.empty()) {
    Actions actions = fsm.onBytes(cease[0].wire);
    EXPECT_TRUE(fsm.watchedPaths().empty());
    EXPECT_EQ(actionsOf<WatchedPathsChanged>(actions).size(), 1u) << describe(actions);
  }
}

}  // namespace

}  // namespace vipd::bgp::test
