// SessionFsm driven by events only: the peer's side is built with the codec and fed as bytes, time
// exists only as onTimer events, and every message the FSM sends is decoded (and framed one byte at
// a time) before it is checked.
#include "bgp/session_fsm.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bgp/codec.h"
#include "bgp/message.h"
#include "bgp/fsm_test_support.h"

namespace vipd::bgp {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;
using namespace vipd::bgp::testing;

constexpr uint32_t kLocalAsn = 65001;
constexpr uint32_t kPeerAsn = 65002;
constexpr uint32_t kLargeAsn = 4200000001;
constexpr uint32_t kOurRouterId = 0xC0000205;     // 192.0.2.5
constexpr uint32_t kHigherRouterId = 0xC0000209;  // 192.0.2.9
constexpr uint32_t kLowerRouterId = 0xC0000201;   // 192.0.2.1
constexpr uint32_t kCommunity = (65001u << 16) | 42;
const LargeCommunity kLargeCommunity{65001, 1, 2};

IpAddress localV4() { return ip("198.51.100.1"); }
IpAddress localV6() { return ip("2001:db8:51::1"); }
IpAddress configuredNextHopV6() { return ip("2001:db8::1"); }
Prefix vipA() { return prefix("203.0.113.10/32"); }
Prefix vipB() { return prefix("203.0.113.11/32"); }
Prefix vipC() { return prefix("203.0.113.12/32"); }
Prefix vip6() { return prefix("2001:db8:100::10/128"); }

SessionConfig ebgpConfig() {
  SessionConfig config;
  config.localAsn = kLocalAsn;
  config.peerAsn = kPeerAsn;
  config.routerId = kOurRouterId;
  config.holdTime = seconds(9);
  config.keepaliveTime = seconds(3);
  config.families = {kIpv4Unicast, kIpv6Unicast};
  config.outbound.ebgp = true;
  config.outbound.localAsn = kLocalAsn;
  config.outbound.nextHopV6 = configuredNextHopV6();
  config.outbound.communities = {kCommunity};
  config.outbound.largeCommunities = {kLargeCommunity};
  config.jitterSeed = 7;
  return config;
}

SessionConfig ibgpConfig() {
  SessionConfig config = ebgpConfig();
  config.peerAsn = kLocalAsn;
  config.outbound.ebgp = false;
  return config;
}

// The OPEN a well-behaved peer sends: 4-octet AS, route refresh, both unicast families.
OpenMessage peerOpen(uint32_t asn = kPeerAsn, uint16_t holdTimeSeconds = 90,
                     uint32_t routerId = kHigherRouterId) {
  OpenMessage open;
  open.myAs = asn > 0xFFFF ? kAsTrans : static_cast<uint16_t>(asn);
  open.holdTimeSeconds = holdTimeSeconds;
  open.bgpIdentifier = routerId;
  open.capabilities.multiprotocol = {kIpv4Unicast, kIpv6Unicast};
  open.capabilities.fourOctetAs = asn;
  open.capabilities.routeRefresh = true;
  return open;
}

std::vector<uint8_t> bytesOf(const Message& message, const CodecOptions& options = {}) {
  return encode(message, options);
}

std::vector<uint8_t> concat(std::vector<uint8_t> a, const std::vector<uint8_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

class SessionFsmTest : public ::testing::Test {
 protected:
  // The FSM is built on first use, so a test can adjust config_ before.
  SessionFsm& fsm() {
    if (!fsm_) {
      fsm_.emplace(config_);
    }
    return *fsm_;
  }

  // Codec options matching what the session negotiated (for decoding what it sent).
  CodecOptions sessionOptions() {
    const auto& n = fsm().negotiated();
    return CodecOptions{n ? n->fourOctetAs : true};
  }

  Actions feed(const Message& message) { return fsm().onBytes(bytesOf(message, peerOptions_)); }

  Actions toOpenSent(const IpAddress& local) {
    Actions started = fsm().start();
    EXPECT_EQ(fsm().state(), SessionState::Connect);
    Actions connected = fsm().onConnected(local);
    EXPECT_EQ(fsm().state(), SessionState::OpenSent) << describe(connected);
    return connected;
  }
  Actions toOpenSent() { return toOpenSent(localV4()); }

  // Continues from the current state when the test already got to OpenSent another way.
  Actions toOpenConfirm(const OpenMessage& open = peerOpen()) {
    if (fsm().state() != SessionState::OpenSent) {
      toOpenSent();
    }
    Actions actions = feed(open);
    EXPECT_EQ(fsm().state(), SessionState::OpenConfirm) << describe(actions);
    return actions;
  }

  Actions toEstablished(const OpenMessage& open = peerOpen()) {
    toOpenConfirm(open);
    Actions actions = feed(KeepaliveMessage{});
    EXPECT_EQ(fsm().state(), SessionState::Established) << describe(actions);
    return actions;
  }

  // The UPDATEs sent in `actions`, decoded with the session's options.
  std::vector<UpdateMessage> updatesIn(const Actions& actions) {
    return sentOf<UpdateMessage>(actions, sessionOptions());
  }

  SessionConfig config_ = ebgpConfig();
  CodecOptions peerOptions_;
  std::optional<SessionFsm> fsm_;
};

// Expects exactly one NOTIFICATION in `actions`, sent before the Disconnect, and returns it.
NotificationMessage sentNotificationThenDisconnect(const Actions& actions) {
  auto notifications = sentOf<NotificationMessage>(actions);
  EXPECT_EQ(notifications.size(), 1u) << describe(actions);
  auto send = indexOf<Send>(actions);
  auto disconnect = indexOf<Disconnect>(actions);
  EXPECT_TRUE(send && disconnect && *send < *disconnect)
      << "NOTIFICATION must be queued before the Disconnect: " << describe(actions);
  return notifications.empty() ? NotificationMessage{} : notifications.front();
}

// ---- Idle, Connect, Active ----

TEST_F(SessionFsmTest, StartEntersConnectDialsAndArmsConnectRetry) {
  Actions actions = fsm().start();

  EXPECT_EQ(fsm().state(), SessionState::Connect);
  EXPECT_EQ(actionsOf<Connect>(actions).size(), 1u);
  auto states = actionsOf<StateChanged>(actions);
  ASSERT_EQ(states.size(), 1u);
  EXPECT_EQ(states[0].from, SessionState::Idle);
  EXPECT_EQ(states[0].to, SessionState::Connect);
  auto arms = armsOf(actions, TimerKind::ConnectRetry);
  ASSERT_EQ(arms.size(), 1u) << describe(actions);
  EXPECT_GT(arms[0].after, milliseconds(0));
  EXPECT_TRUE(actionsOf<Send>(actions).empty());
}

TEST_F(SessionFsmTest, StartWhileRunningIsIgnored) {
  (void)fsm().start();
  EXPECT_TRUE(fsm().start().empty());
  EXPECT_EQ(fsm().state(), SessionState::Connect);
}

TEST_F(SessionFsmTest, ConnectFailureBacksOffExponentiallyWithJitterUpToTheCap) {
  (void)fsm().start();
  const std::vector<milliseconds> expectedBase = {
      milliseconds(1000),  milliseconds(2000),  milliseconds(4000),  milliseconds(8000),
      milliseconds(16000), milliseconds(30000), milliseconds(30000), milliseconds(30000)};
  for (auto base : expectedBase) {
    SCOPED_TRACE(base.count());
    EXPECT_EQ(fsm().currentRetryInterval(), base);
    Actions failed = fsm().onConnectFailed("connection refused");
    EXPECT_EQ(fsm().state(), SessionState::Active);
    EXPECT_THAT(fsm().lastError(), HasSubstr("connection refused"));
    auto arms = armsOf(failed, TimerKind::ConnectRetry);
    ASSERT_EQ(arms.size(), 1u) << describe(failed);
    // RFC 4271 section 10: jitter multiplies by a factor in [0.75, 1.0].
    EXPECT_GE(arms[0].after, base * 3 / 4);
    EXPECT_LE(arms[0].after, base);

    Actions retry = fsm().onTimer(TimerKind::ConnectRetry);
    EXPECT_EQ(fsm().state(), SessionState::Connect);
    EXPECT_EQ(actionsOf<Connect>(retry).size(), 1u) << describe(retry);
  }
}

TEST_F(SessionFsmTest, ConnectRetryJitterIsNotConstant) {
  config_.connectRetryTime = milliseconds(30000);
  std::set<int64_t> seen;
  (void)fsm().start();
  for (int i = 0; i < 8; ++i) {
    auto arms = armsOf(fsm().onConnectFailed("refused"), TimerKind::ConnectRetry);
    ASSERT_EQ(arms.size(), 1u);
    seen.insert(arms[0].after.count());
    (void)fsm().onTimer(TimerKind::ConnectRetry);
  }
  EXPECT_GT(seen.size(), 1u) << "every retry used the same interval: no jitter";
}

TEST_F(SessionFsmTest, ConnectRetryExpiryInActiveDialsAgain) {
  (void)fsm().start();
  (void)fsm().onConnectFailed("no route to host");
  ASSERT_EQ(fsm().state(), SessionState::Active);

  Actions actions = fsm().onTimer(TimerKind::ConnectRetry);

  EXPECT_EQ(fsm().state(), SessionState::Connect);
  EXPECT_EQ(actionsOf<Connect>(actions).size(), 1u);
  EXPECT_EQ(armsOf(actions, TimerKind::ConnectRetry).size(), 1u);
}

TEST_F(SessionFsmTest, ConnectTimeoutInConnectDropsTheAttemptAndGoesActive) {
  (void)fsm().start();

  Actions actions = fsm().onTimer(TimerKind::ConnectRetry);

  EXPECT_EQ(fsm().state(), SessionState::Active);
  EXPECT_EQ(actionsOf<Disconnect>(actions).size(), 1u) << describe(actions);
  EXPECT_TRUE(actionsOf<Connect>(actions).empty());
  auto arms = armsOf(actions, TimerKind::ConnectRetry);
  ASSERT_EQ(arms.size(), 1u);
  EXPECT_GE(arms[0].after, milliseconds(750));
  EXPECT_LE(arms[0].after, milliseconds(1000));
  EXPECT_THAT(fsm().lastError(), HasSubstr("timed out"));
}

TEST_F(SessionFsmTest, StaleConnectCompletionIsClosed) {
  (void)fsm().start();
  (void)fsm().onConnectFailed("refused");

  Actions actions = fsm().onConnected(localV4());

  EXPECT_EQ(fsm().state(), SessionState::Active);
  EXPECT_EQ(actionsOf<Disconnect>(actions).size(), 1u);
  EXPECT_TRUE(actionsOf<Send>(actions).empty());
}

// ---- OpenSent ----

TEST_F(SessionFsmTest, ConnectedSendsOpenWithOurParameters) {
  (void)fsm().start();
  Actions actions = fsm().onConnected(localV4());

  EXPECT_EQ(fsm().state(), SessionState::OpenSent);
  EXPECT_TRUE(cancels(actions, TimerKind::ConnectRetry));
  auto opens = sentOf<OpenMessage>(actions);
  ASSERT_EQ(opens.size(), 1u) << describe(actions);
  EXPECT_EQ(opens[0].version, 4);
  EXPECT_EQ(opens[0].myAs, kLocalAsn);
  EXPECT_EQ(opens[0].holdTimeSeconds, 9);
  EXPECT_EQ(opens[0].bgpIdentifier, kOurRouterId);
  EXPECT_THAT(opens[0].capabilities.multiprotocol, ElementsAre(kIpv4Unicast, kIpv6Unicast));
  EXPECT_EQ(opens[0].capabilities.fourOctetAs, kLocalAsn);
  EXPECT_TRUE(opens[0].capabilities.routeRefresh);
  // RFC 4271 section 8.2.2: a large hold timer (4 minutes suggested) while waiting for the OPEN.
  auto holds = armsOf(actions, TimerKind::Hold);
  ASSERT_EQ(holds.size(), 1u);
  EXPECT_EQ(holds[0].after, milliseconds(240000));
  EXPECT_EQ(fsm().counters().messagesSent[static_cast<int>(MessageType::Open)], 1u);
}

TEST_F(SessionFsmTest, OpenAdvertisesOnlyConfiguredFamilies) {
  config_.families = {kIpv6Unicast};
  auto opens = sentOf<OpenMessage>(toOpenSent());
  ASSERT_EQ(opens.size(), 1u);
  EXPECT_THAT(opens[0].capabilities.multiprotocol, ElementsAre(kIpv6Unicast));
}

TEST_F(SessionFsmTest, OpenWithFourOctetAsnUsesAsTrans) {
  config_.localAsn = kLargeAsn;
  config_.outbound.localAsn = kLargeAsn;
  auto opens = sentOf<OpenMessage>(toOpenSent());
  ASSERT_EQ(opens.size(), 1u);
  EXPECT_EQ(opens[0].myAs, kAsTrans);
  EXPECT_EQ(opens[0].capabilities.fourOctetAs, kLargeAsn);
}

TEST_F(SessionFsmTest, ConfiguredOpenHoldTimeIsArmedInOpenSent) {
  // peers[].openHoldTime: a peer that accepts TCP and never sends OPEN is given up on sooner.
  config_.openHoldTime = seconds(5);
  auto holds = armsOf(toOpenSent(), TimerKind::Hold);
  ASSERT_EQ(holds.size(), 1u);
  EXPECT_EQ(holds[0].after, milliseconds(5000));
  Actions actions = fsm().onTimer(TimerKind::Hold);
  EXPECT_EQ(sentNotificationThenDisconnect(actions), notification(ErrorCode::HoldTimerExpired, 0));
  EXPECT_THAT(fsm().lastError(), HasSubstr("hold timer expired after 5s in OpenSent"));
}

TEST_F(SessionFsmTest, HoldTimerExpiryInOpenSentSendsHoldTimerExpired) {
  toOpenSent();
  Actions actions = fsm().onTimer(TimerKind::Hold);
  EXPECT_EQ(sentNotificationThenDisconnect(actions), notification(ErrorCode::HoldTimerExpired, 0));
  EXPECT_EQ(fsm().state(), SessionState::Idle);
}

TEST_F(SessionFsmTest, ConnectionClosedInOpenSentGoesIdleAndRetries) {
  toOpenSent();
  Actions actions = fsm().onClosed("connection reset by peer");
  EXPECT_EQ(fsm().state(), SessionState::Idle);
  EXPECT_TRUE(actionsOf<Send>(actions).empty());
  EXPECT_EQ(armsOf(actions, TimerKind::ConnectRetry).size(), 1u) << describe(actions);
  EXPECT_THAT(fsm().lastError(), HasSubstr("connection reset by peer"));
}

// ---- The peer's OPEN ----

TEST_F(SessionFsmTest, AcceptableOpenSendsKeepaliveAndEntersOpenConfirm) {
  Actions actions = toOpenConfirm(peerOpen(kPeerAsn, 90));

  auto sent = sentMessages(actions);
  ASSERT_EQ(sent.size(), 1u) << describe(actions);
  EXPECT_TRUE(std::holds_alternative<KeepaliveMessage>(sent[0]));
  const auto& n = fsm().negotiated();
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->peerAsn, kPeerAsn);
  EXPECT_EQ(n->peerRouterId, kHigherRouterId);
  EXPECT_EQ(n->holdTime, seconds(9));  // min(ours 9, theirs 90)
  EXPECT_EQ(n->keepaliveTime, seconds(3));
  EXPECT_TRUE(n->fourOctetAs);
  EXPECT_TRUE(n->routeRefresh);
  EXPECT_THAT(n->families, ElementsAre(kIpv4Unicast, kIpv6Unicast));
  auto holds = armsOf(actions, TimerKind::Hold);
  ASSERT_EQ(holds.size(), 1u);
  EXPECT_EQ(holds[0].after, milliseconds(9000));
  auto keepalives = armsOf(actions, TimerKind::Keepalive);
  ASSERT_EQ(keepalives.size(), 1u);
  EXPECT_GE(keepalives[0].after, milliseconds(2250));
  EXPECT_LE(keepalives[0].after, milliseconds(3000));
}

TEST_F(SessionFsmTest, HoldIsTheSmallerProposalAndKeepaliveAThirdOfIt) {
  config_.holdTime = seconds(90);
  config_.keepaliveTime = seconds(30);
  Actions actions = toOpenConfirm(peerOpen(kPeerAsn, 30));

  ASSERT_TRUE(fsm().negotiated().has_value());
  EXPECT_EQ(fsm().negotiated()->holdTime, seconds(30));
  EXPECT_EQ(fsm().negotiated()->keepaliveTime, seconds(10));
  auto holds = armsOf(actions, TimerKind::Hold);
  ASSERT_EQ(holds.size(), 1u);
  EXPECT_EQ(holds[0].after, milliseconds(30000));
  auto keepalives = armsOf(actions, TimerKind::Keepalive);
  ASSERT_EQ(keepalives.size(), 1u);
  EXPECT_LE(keepalives[0].after, milliseconds(10000));
  EXPECT_GE(keepalives[0].after, milliseconds(7500));
}

TEST_F(SessionFsmTest, ZeroHoldTimeRunsNoHoldOrKeepaliveTimers) {
  Actions confirm = toOpenConfirm(peerOpen(kPeerAsn, 0));

  EXPECT_EQ(fsm().negotiated()->holdTime, seconds(0));
  EXPECT_TRUE(armsOf(confirm, TimerKind::Hold).empty()) << describe(confirm);
  EXPECT_TRUE(armsOf(confirm, TimerKind::Keepalive).empty()) << describe(confirm);
  EXPECT_TRUE(cancels(confirm, TimerKind::Hold));  // the 240 s OpenSent timer must not fire
  EXPECT_EQ(sentOf<KeepaliveMessage>(confirm).size(), 1u);

  Actions established = feed(KeepaliveMessage{});
  EXPECT_EQ(fsm().state(), SessionState::Established);
  EXPECT_TRUE(armsOf(established, TimerKind::Hold).empty()) << describe(established);
  EXPECT_TRUE(armsOf(established, TimerKind::Keepalive).empty()) << describe(established);
}

class UnacceptableHoldTimeTest : public SessionFsmTest,
                                 public ::testing::WithParamInterface<uint16_t> {};

TEST_P(UnacceptableHoldTimeTest, IsRejectedWithOpenError26) {
  toOpenSent();
  Actions actions = feed(peerOpen(kPeerAsn, GetParam()));

  EXPECT_EQ(sentNotificationThenDisconnect(actions).code, 2);
  EXPECT_EQ(sentNotificationThenDisconnect(actions).subcode, subcode::kUnacceptableHoldTime);
  EXPECT_EQ(fsm().state(), SessionState::Idle);
  EXPECT_FALSE(fsm().negotiated().has_value());
  EXPECT_EQ(fsm().counters().lastNotificationSent->subcode, subcode::kUnacceptableHoldTime);
}

INSTANTIATE_TEST_SUITE_P(OneAndTwoSeconds, UnacceptableHoldTimeTest, ::testing::Values(1, 2));

TEST_F(SessionFsmTest, HoldTimeThreeIsAccepted) {
  toOpenConfirm(peerOpen(kPeerAsn, 3));
  EXPECT_EQ(fsm().negotiated()->holdTime, seconds(3));
  EXPECT_EQ(fsm().negotiated()->keepaliveTime, seconds(1));
}

TEST_F(SessionFsmTest, WrongPeerAsIsRejectedWithBadPeerAs) {
  toOpenSent();
  Actions actions = feed(peerOpen(64999));

  NotificationMessage sent = sentNotificationThenDisconnect(actions);
  EXPECT_EQ(sent.code, 2);
  EXPECT_EQ(sent.subcode, subcode::kBadPeerAs);
  EXPECT_EQ(fsm().state(), SessionState::Idle);
  EXPECT_THAT(fsm().lastError(), HasSubstr("64999"));
}

TEST_F(SessionFsmTest, FourOctetCapabilityOverridesAsTransForThePeerAsn) {
  config_.peerAsn = kLargeAsn;
  toOpenConfirm(peerOpen(kLargeAsn));
  EXPECT_EQ(fsm().negotiated()->peerAsn, kLargeAsn);
}

TEST_F(SessionFsmTest, IbgpPeerWithOurRouterIdIsRejectedWithBadBgpIdentifier) {
  config_ = ibgpConfig();
  toOpenSent();
  Actions actions = feed(peerOpen(kLocalAsn, 90, kOurRouterId));

  NotificationMessage sent = sentNotificationThenDisconnect(actions);
  EXPECT_EQ(sent.code, 2);
  EXPECT_EQ(sent.subcode, subcode::kBadBgpIdentifier);
  EXPECT_EQ(fsm().state(), SessionState::Idle);
}

TEST_F(SessionFsmTest, EbgpPeerWithOurRouterIdIsAccepted) {
  // RFC 6286 section 2.2 only forbids a duplicate BGP Identifier within one AS.
  toOpenConfirm(peerOpen(kPeerAsn, 90, kOurRouterId));
}

TEST_F(SessionFsmTest, PeerWithOnlyTwoOctetAsnIsAccepted) {
  OpenMessage open = peerOpen();
  open.capabilities.fourOctetAs.reset();
  peerOptions_.fourOctetAs = false;
  toEstablished(open);

  EXPECT_FALSE(fsm().negotiated()->fourOctetAs);
  auto updates = updatesIn(fsm().setAnnouncements({vipA()}));
  ASSERT_EQ(updates.size(), 1u);
  ASSERT_TRUE(updates[0].attributes.asPath.has_value());
  EXPECT_THAT(*updates[0].attributes.asPath,
              ElementsAre(AsPathSegment{AsPathSegment::Type::AsSequence, {kLocalAsn}}));
}

TEST_F(SessionFsmTest, FourOctetLocalAsnTowardsTwoOctetPeerUsesAsTransAndAs4Path) {
  config_.localAsn = kLargeAsn;
  config_.outbound.localAsn = kLargeAsn;
  OpenMessage open = peerOpen();
  open.capabilities.fourOctetAs.reset();
  peerOptions_.fourOctetAs = false;
  toEstablished(open);

  auto actions = fsm().setAnnouncements({vipA()});
  auto sends = actionsOf<Send>(actions);
  ASSERT_EQ(sends.size(), 1u);
  // Decoded as a 2-octet speaker sees it: AS_TRANS in AS_PATH, the real ASN in AS4_PATH.
  auto update = std::get<UpdateMessage>(decodeSent(sends[0], CodecOptions{false}));
  EXPECT_EQ(update.attributes.asPath, (AsPath{{AsPathSegment::Type::AsSequence, {kAsTrans}}}));
  EXPECT_EQ(update.attributes.as4Path, (AsPath{{AsPathSegment::Type::AsSequence, {kLargeAsn}}}));
}

TEST_F(SessionFsmTest, PeerWithoutMultiprotocolCapabilitiesIsIpv4Only) {
  OpenMessage open = peerOpen();
  open.capabilities.multiprotocol.clear();
  (void)fsm().setAnnouncements({vipA(), vip6()});
  Actions actions = toEstablished(open);

  EXPECT_THAT(fsm().negotiated()->families, ElementsAre(kIpv4Unicast));
  auto updates = updatesIn(actions);
  ASSERT_EQ(updates.size(), 2u);  // the IPv4 announcement and the IPv4 End-of-RIB
  EXPECT_THAT(updates[0].nlri, ElementsAre(vipA()));
  EXPECT_FALSE(updates[0].attributes.mpReach.has_value());
  EXPECT_EQ(updates[1].endOfRibFamily(), kIpv4Unicast);
  EXPECT_EQ(fsm().advertised(), std::set<Prefix>{vipA()});
}

TEST_F(SessionFsmTest, OpenAndKeepaliveInOneChunkOrByteByByteBothEstablish) {
  auto wire = concat(bytesOf(peerOpen()), bytesOf(KeepaliveMessage{}));
  {
    toOpenSent();
    Actions actions = fsm().onBytes(wire);
    EXPECT_EQ(fsm().state(), SessionState::Established) << describe(actions);
  }
  fsm_.reset();
  toOpenSent();
  for (uint8_t byte : wire) {
    (void)fsm().onBytes(std::span<const uint8_t>(&byte, 1));
  }
  EXPECT_EQ(fsm().state(), SessionState::Established);
}

// ---- OpenConfirm -> Established and the initial announcement ----

TEST_F(SessionFsmTest, KeepaliveInOpenConfirmEstablishesAndRestartsHold) {
  Actions actions = toEstablished();

  auto states = actionsOf<StateChanged>(actions);
  ASSERT_EQ(states.size(), 1u);
  EXPECT_EQ(states[0].from, SessionState::OpenConfirm);
  EXPECT_EQ(states[0].to, SessionState::Established);
  auto holds = armsOf(actions, TimerKind::Hold);
  ASSERT_EQ(holds.size(), 1u);
  EXPECT_EQ(holds[0].after, milliseconds(9000));
  EXPECT_EQ(fsm().counters().establishedTransitions, 1u);
}

TEST_F(SessionFsmTest, EstablishedWithNothingToAnnounceSendsOnlyEndOfRibPerFamily) {
  auto updates = updatesIn(toEstablished());
  ASSERT_EQ(updates.size(), 2u);
  EXPECT_EQ(updates[0].endOfRibFamily(), kIpv4Unicast);
  EXPECT_EQ(updates[1].endOfRibFamily(), kIpv6Unicast);
}

TEST_F(SessionFsmTest, EbgpInitialAnnouncementCarriesOurAttributesThenEndOfRib) {
  (void)fsm().setAnnouncements({vipA(), vipB(), vip6()});
  auto updates = updatesIn(toEstablished());

  ASSERT_EQ(updates.size(), 4u);
  const UpdateMessage& v4 = updates[0];
  EXPECT_THAT(v4.nlri, UnorderedElementsAre(vipA(), vipB()));
  EXPECT_TRUE(v4.withdrawn.empty());
  EXPECT_EQ(v4.attributes.origin, Origin::Igp);
  EXPECT_EQ(v4.attributes.asPath, (AsPath{{AsPathSegment::Type::AsSequence, {kLocalAsn}}}));
  EXPECT_EQ(v4.attributes.nextHop, localV4());  // the session's local address
  EXPECT_FALSE(v4.attributes.localPref.has_value()) << "LOCAL_PREF is never sent to eBGP peers";
  EXPECT_EQ(v4.attributes.communities, std::vector<uint32_t>{kCommunity});
  EXPECT_EQ(v4.attributes.largeCommunities, std::vector<LargeCommunity>{kLargeCommunity});
  EXPECT_FALSE(v4.attributes.mpReach.has_value());

  const UpdateMessage& v6 = updates[1];
  EXPECT_TRUE(v6.nlri.empty());
  ASSERT_TRUE(v6.attributes.mpReach.has_value());
  EXPECT_EQ(v6.attributes.mpReach->family, kIpv6Unicast);
  EXPECT_THAT(v6.attributes.mpReach->nlri, ElementsAre(vip6()));
  const auto& nh = configuredNextHopV6().bytes;
  EXPECT_EQ(v6.attributes.mpReach->nextHop, std::vector<uint8_t>(nh.begin(), nh.end()));
  EXPECT_EQ(v6.attributes.origin, Origin::Igp);
  EXPECT_EQ(v6.attributes.asPath, v4.attributes.asPath);
  EXPECT_FALSE(v6.attributes.nextHop.has_value());

  EXPECT_EQ(updates[2].endOfRibFamily(), kIpv4Unicast);
  EXPECT_EQ(updates[3].endOfRibFamily(), kIpv6Unicast);
  EXPECT_EQ(fsm().advertised(), (std::set<Prefix>{vipA(), vipB(), vip6()}));
  EXPECT_EQ(fsm().counters().messagesSent[static_cast<int>(MessageType::Update)], 4u);
}

TEST_F(SessionFsmTest, IbgpAnnouncementHasEmptyAsPathAndLocalPref100) {
  config_ = ibgpConfig();
  (void)fsm().setAnnouncements({vipA(), vip6()});
  auto updates = updatesIn(toEstablished(peerOpen(kLocalAsn)));

  ASSERT_EQ(updates.size(), 4u);
  for (int i : {0, 1}) {
    SCOPED_TRACE(i);
    EXPECT_EQ(updates[i].attributes.asPath, AsPath{});
    EXPECT_EQ(updates[i].attributes.localPref, 100u);
    EXPECT_EQ(updates[i].attributes.origin, Origin::Igp);
  }
}

TEST_F(SessionFsmTest, ConfiguredNextHopOverridesTheLocalAddress) {
  config_.outbound.nextHopV4 = ip("192.0.2.77");
  (void)fsm().setAnnouncements({vipA()});
  auto updates = updatesIn(toEstablished());
  ASSERT_FALSE(updates.empty());
  EXPECT_EQ(updates[0].attributes.nextHop, ip("192.0.2.77"));
}

TEST_F(SessionFsmTest, Ipv6SessionUsesItsLocalAddressAsIpv6NextHopAndSkipsIpv4) {
  config_.outbound.nextHopV6.reset();
  (void)fsm().setAnnouncements({vipA(), vip6()});
  toOpenSent(localV6());
  (void)feed(peerOpen());
  auto updates = updatesIn(feed(KeepaliveMessage{}));

  // No IPv4 next hop on an IPv6-only connection: IPv4 prefixes cannot be announced.
  ASSERT_EQ(updates.size(), 3u);
  ASSERT_TRUE(updates[0].attributes.mpReach.has_value());
  const auto& nh = localV6().bytes;
  EXPECT_EQ(updates[0].attributes.mpReach->nextHop, std::vector<uint8_t>(nh.begin(), nh.end()));
  EXPECT_EQ(fsm().advertised(), std::set<Prefix>{vip6()});
}

// ---- Changing announcements while Established ----

TEST_F(SessionFsmTest, SetAnnouncementsWithdrawsRemovedBeforeAnnouncingNew) {
  (void)fsm().setAnnouncements({vipA(), vipB(), vip6()});
  toEstablished();

  auto updates = updatesIn(fsm().setAnnouncements({vipA(), vipC()}));

  ASSERT_EQ(updates.size(), 3u);
  EXPECT_THAT(updates[0].withdrawn, ElementsAre(vipB()));
  EXPECT_TRUE(updates[0].nlri.empty());
  ASSERT_TRUE(updates[1].attributes.mpUnreach.has_value());
  EXPECT_THAT(updates[1].attributes.mpUnreach->withdrawn, ElementsAre(vip6()));
  EXPECT_THAT(updates[2].nlri, ElementsAre(vipC()));
  EXPECT_TRUE(updates[2].withdrawn.empty());
  EXPECT_EQ(fsm().advertised(), (std::set<Prefix>{vipA(), vipC()}));
}

TEST_F(SessionFsmTest, SetAnnouncementsUnchangedSendsNothing) {
  (void)fsm().setAnnouncements({vipA(), vip6()});
  toEstablished();
  Actions actions = fsm().setAnnouncements({vipA(), vip6()});
  EXPECT_TRUE(actionsOf<Send>(actions).empty()) << describe(actions);
}

TEST_F(SessionFsmTest, SetAnnouncementsBeforeEstablishedSendsNothing) {
  toOpenConfirm();
  Actions actions = fsm().setAnnouncements({vipA()});
  EXPECT_TRUE(actions.empty()) << describe(actions);
  EXPECT_TRUE(fsm().advertised().empty());
}

// ---- Graceful shutdown (RFC 8326) ----

TEST_F(SessionFsmTest, GracefulShutdownOnIbgpReannouncesWithCommunityAndLocalPrefZero) {
  config_ = ibgpConfig();
  (void)fsm().setAnnouncements({vipA(), vip6()});
  toEstablished(peerOpen(kLocalAsn));

  auto updates = updatesIn(fsm().setGracefulShutdown(true));

  ASSERT_EQ(updates.size(), 2u);
  EXPECT_THAT(updates[0].nlri, ElementsAre(vipA()));
  ASSERT_TRUE(updates[1].attributes.mpReach.has_value());
  EXPECT_THAT(updates[1].attributes.mpReach->nlri, ElementsAre(vip6()));
  for (const auto& update : updates) {
    EXPECT_EQ(update.attributes.localPref, 0u);
    EXPECT_EQ(update.attributes.communities,
              (std::vector<uint32_t>{kCommunity, kGracefulShutdownCommunity}));
    EXPECT_TRUE(update.withdrawn.empty());
  }
}

TEST_F(SessionFsmTest, GracefulShutdownOnEbgpAddsOnlyTheCommunity) {
  (void)fsm().setAnnouncements({vipA()});
  toEstablished();
  auto updates = updatesIn(fsm().setGracefulShutdown(true));
  ASSERT_EQ(updates.size(), 1u);
  EXPECT_FALSE(updates[0].attributes.localPref.has_value());
  EXPECT_EQ(updates[0].attributes.communities,
            (std::vector<uint32_t>{kCommunity, kGracefulShutdownCommunity}));
}

TEST_F(SessionFsmTest, GracefulShutdownUnchangedSendsNothingAndOffRestoresAttributes) {
  (void)fsm().setAnnouncements({vipA()});
  toEstablished();
  (void)fsm().setGracefulShutdown(true);
  EXPECT_TRUE(fsm().setGracefulShutdown(true).empty());

  auto updates = updatesIn(fsm().setGracefulShutdown(false));
  ASSERT_EQ(updates.size(), 1u);
  EXPECT_EQ(updates[0].attributes.communities, std::vector<uint32_t>{kCommunity});
}

TEST_F(SessionFsmTest, GracefulShutdownSetBeforeEstablishedMarksTheInitialAnnouncement) {
  config_ = ibgpConfig();
  (void)fsm().setAnnouncements({vipA()});
  EXPECT_TRUE(fsm().setGracefulShutdown(true).empty());
  auto updates = updatesIn(toEstablished(peerOpen(kLocalAsn)));
  ASSERT_FALSE(updates.empty());
  EXPECT_EQ(updates[0].attributes.localPref, 0u);
  EXPECT_EQ(updates[0].attributes.communities,
            (std::vector<uint32_t>{kCommunity, kGracefulShutdownCommunity}));
}

// ---- Degraded path (health.onFailure degrade, a VIP held by the never-zero rule) ----

TEST_F(SessionFsmTest, DegradedReannouncesWithThePrependedPathAndBack) {
  config_.outbound.degradePrepend = 2;
  (void)fsm().setAnnouncements({vipA()});
  toEstablished();
  auto updates = updatesIn(fsm().setAnnouncements({vipA()}, {vipA()}));
  ASSERT_EQ(updates.size(), 1u);
  EXPECT_THAT(updates[0].nlri, ElementsAre(vipA()));
  EXPECT_TRUE(updates[0].withdrawn.empty()) << "an implicit replace, never a withdrawal";
  EXPECT_EQ(updates[0].attributes.asPath,
            (AsPath{{AsPathSegment::Type::AsSequence, {kLocalAsn, kLocalAsn, kLocalAsn}}}));
  EXPECT_TRUE(fsm().setAnnouncements({vipA()}, {vipA()}).empty()) << "unchanged: nothing to send";
  updates = updatesIn(fsm().setAnnouncements({vipA()}));
  ASSERT_EQ(updates.size(), 1u);
  EXPECT_EQ(updates[0].attributes.asPath,
            (AsPath{{AsPathSegment::Type::AsSequence, {kLocalAsn}}}));
}

TEST_F(SessionFsmTest, DegradedBeforeEstablishedMarksTheInitialAnnouncement) {
  config_.outbound.degradePrepend = 1;
  (void)fsm().setAnnouncements({vipA()}, {vipA()});
  auto updates = updatesIn(toEstablished());
  ASSERT_FALSE(updates.empty());
  EXPECT_EQ(updates[0].attributes.asPath,
            (AsPath{{AsPathSegment::Type::AsSequence, {kLocalAsn, kLocalAsn}}}));
}

// Issue 28: the never-zero rule holds one VIP announced, degraded, while the other is announced
// normally (or withdrawn): the marking is per prefix.
TEST_F(SessionFsmTest, DegradedIsPerPrefix) {
  config_.outbound.degradePrepend = 1;
  const Prefix other = *Prefix::parse("203.0.113.20/32");
  (void)fsm().setAnnouncements({vipA(), other}, {other});
  auto updates = updatesIn(toEstablished());
  std::map<Prefix, size_t> pathLength;
  for (const auto& u : updates) {
    for (const auto& p : u.nlri) {
      pathLength[p] = u.attributes.asPath ? (*u.attributes.asPath)[0].asns.size() : 0;
    }
  }
  EXPECT_EQ(pathLength[vipA()], 1u);
  EXPECT_EQ(pathLength[other], 2u);
  // Only the prefix whose marking changed goes out again.
  updates = updatesIn(fsm().setAnnouncements({vipA(), other}, {vipA()}));
  std::set<Prefix> sent;
  for (const auto& u : updates) {
    sent.insert(u.nlri.begin(), u.nlri.end());
    EXPECT_TRUE(u.withdrawn.empty());
  }
  EXPECT_EQ(sent, (std::set<Prefix>{vipA(), other}));
  // A degraded prefix that is not announced is no marking at all.
  updates = updatesIn(fsm().setAnnouncements({other}, {vipA()}));
  ASSERT_EQ(updates.size(), 1u);  // vipA withdrawn; other unchanged (normal since the last call)
  EXPECT_THAT(updates[0].withdrawn, ElementsAre(vipA()));
  EXPECT_TRUE(fsm().degraded().empty());
}

// ---- Timers while the session is up ----

TEST_F(SessionFsmTest, HoldTimerExpirySendsHoldTimerExpiredAndArmsAutomaticRestart) {
  toEstablished();
  Actions actions = fsm().onTimer(TimerKind::Hold);

  EXPECT_EQ(sentNotificationThenDisconnect(actions), notification(ErrorCode::HoldTimerExpired, 0));
  EXPECT_EQ(fsm().state(), SessionState::Idle);
  EXPECT_TRUE(fsm().advertised().empty());
  auto retry = armsOf(actions, TimerKind::ConnectRetry);
  ASSERT_EQ(retry.size(), 1u) << describe(actions);
  EXPECT_GE(retry[0].after, milliseconds(750));  // backoff was reset by Established
  EXPECT_LE(retry[0].after, milliseconds(1000));
  EXPECT_THAT(fsm().lastError(), HasSubstr("hold timer expired"));

  Actions restart = fsm().onTimer(TimerKind::ConnectRetry);
  EXPECT_EQ(fsm().state(), SessionState::Connect);
  EXPECT_EQ(actionsOf<Connect>(restart).size(), 1u);
}

TEST_F(SessionFsmTest, KeepaliveTimerSendsKeepaliveAndRearms) {
  toEstablished();
  Actions actions = fsm().onTimer(TimerKind::Keepalive);

  EXPECT_EQ(sentOf<KeepaliveMessage>(actions).size(), 1u);
  EXPECT_EQ(actionsOf<Send>(actions).size(), 1u);
  auto arms = armsOf(actions, TimerKind::Keepalive);
  ASSERT_EQ(arms.size(), 1u);
  EXPECT_GE(arms[0].after, milliseconds(2250));
  EXPECT_LE(arms[0].after, milliseconds(3000));
  EXPECT_EQ(fsm().state(), SessionState::Established);
}

TEST_F(SessionFsmTest, ReceivedKeepaliveAndUpdateRestartTheHoldTimer) {
  toEstablished();
  EXPECT_EQ(armsOf(feed(KeepaliveMessage{}), TimerKind::Hold).size(), 1u);
  EXPECT_EQ(armsOf(feed(buildEndOfRib(kIpv4Unicast)), TimerKind::Hold).size(), 1u);
}

TEST_F(SessionFsmTest, TimersTheFsmNoLongerExpectsAreIgnored) {
  EXPECT_TRUE(fsm().onTimer(TimerKind::Hold).empty());
  EXPECT_TRUE(fsm().onTimer(TimerKind::Keepalive).empty());
  EXPECT_TRUE(fsm().onTimer(TimerKind::ConnectRetry).empty());  // stopped: no restart
  toOpenSent();
  EXPECT_TRUE(fsm().onTimer(TimerKind::Keepalive).empty());
  EXPECT_EQ(fsm().state(), SessionState::OpenSent);
}

// ---- Unexpected messages (RFC 6608) ----

TEST_F(SessionFsmTest, UnexpectedMessagesInOpenSentAreFsmError51) {
  for (const Message& message : std::vector<Message>{
           KeepaliveMessage{}, buildEndOfRib(kIpv4Unicast), RouteRefreshMessage{kIpv4Unicast}}) {
    fsm_.reset();
    toOpenSent();
    Actions actions = feed(message);
    SCOPED_TRACE(describe(actions));
    EXPECT_EQ(sentNotificationThenDisconnect(actions),
              notification(ErrorCode::FsmError, subcode::kUnexpectedInOpenSent));
    EXPECT_EQ(fsm().state(), SessionState::Idle);
  }
}

TEST_F(SessionFsmTest, UnexpectedMessagesInOpenConfirmAreFsmError52) {
  for (const Message& message : std::vector<Message>{
           Message{peerOpen()}, buildEndOfRib(kIpv4Unicast), RouteRefreshMessage{kIpv4Unicast}}) {
    fsm_.reset();
    toOpenConfirm();
    Actions actions = feed(message);
    SCOPED_TRACE(describe(actions));
    EXPECT_EQ(sentNotificationThenDisconnect(actions),
              notification(ErrorCode::FsmError, subcode::kUnexpectedInOpenConfirm));
    EXPECT_EQ(fsm().state(), SessionState::Idle);
  }
}

TEST_F(SessionFsmTest, OpenInEstablishedIsFsmError53) {
  toEstablished();
  Actions actions = feed(peerOpen());
  EXPECT_EQ(sentNotificationThenDisconnect(actions),
            notification(ErrorCode::FsmError, subcode::kUnexpectedInEstablished));
  EXPECT_EQ(fsm().state(), SessionState::Idle);
}

// ---- NOTIFICATIONs and malformed input from the peer ----

TEST_F(SessionFsmTest, ReceivedNotificationGoesIdleWithItsShutdownCommunication) {
  toEstablished();
  auto cease = notification(ErrorCode::Cease, subcode::kAdministrativeShutdown,
                            encodeShutdownCommunication("maintenance window CHG-1234"));
  Actions actions = feed(cease);

  EXPECT_EQ(fsm().state(), SessionState::Idle);
  EXPECT_TRUE(actionsOf<Send>(actions).empty()) << "never answer a NOTIFICATION with one";
  EXPECT_EQ(actionsOf<Disconnect>(actions).size(), 1u);
  EXPECT_THAT(fsm().lastError(), HasSubstr("maintenance window CHG-1234"));
  EXPECT_THAT(fsm().lastError(), HasSubstr("6/2"));
  EXPECT_EQ(fsm().counters().lastNotificationReceived, cease);
  EXPECT_EQ(fsm().counters().messagesReceived[static_cast<int>(MessageType::Notification)], 1u);
  EXPECT_EQ(armsOf(actions, TimerKind::ConnectRetry).size(), 1u);
}

TEST_F(SessionFsmTest, ReceivedNotificationInOpenSentGoesIdle) {
  toOpenSent();
  Actions actions = feed(notification(ErrorCode::OpenMessage, subcode::kUnsupportedCapability, {}));
  EXPECT_EQ(fsm().state(), SessionState::Idle);
  EXPECT_TRUE(actionsOf<Send>(actions).empty());
  EXPECT_THAT(fsm().lastError(), HasSubstr("2/7"));
}

TEST_F(SessionFsmTest, BadMarkerIsConnectionNotSynchronized) {
  toEstablished();
  auto wire = bytesOf(KeepaliveMessage{});
  wire[3] = 0x00;
  Actions actions = fsm().onBytes(wire);

  EXPECT_EQ(sentNotificationThenDisconnect(actions),
            notification(ErrorCode::MessageHeader, subcode::kConnectionNotSynchronized));
  EXPECT_EQ(fsm().state(), SessionState::Idle);
}

TEST_F(SessionFsmTest, BadLengthIsBadMessageLengthWithTheLengthField) {
  toEstablished();
  auto wire = bytesOf(KeepaliveMessage{});
  wire[16] = 0x00;
  wire[17] = 0x12;  // 18 < 19
  Actions actions = fsm().onBytes(wire);

  EXPECT_EQ(sentNotificationThenDisconnect(actions),
            notification(ErrorCode::MessageHeader, subcode::kBadMessageLength, {0x00, 0x12}));
}

TEST_F(SessionFsmTest, UnknownTypeIsBadMessageType) {
  toOpenSent();
  auto wire = bytesOf(KeepaliveMessage{});
  wire[18] = 9;
  Actions actions = fsm().onBytes(wire);

  NotificationMessage sent = sentNotificationThenDisconnect(actions);
  EXPECT_EQ(sent.code, 1);
  EXPECT_EQ(sent.subcode, subcode::kBadMessageType);
  EXPECT_EQ(fsm().state(), SessionState::Idle);
}

TEST_F(SessionFsmTest, MalformedUpdateIsAnUpdateMessageError) {
  toEstablished();
  // An UPDATE whose withdrawn-routes length runs past the end of the message (RFC 4271 6.3).
  auto wire = bytesOf(buildEndOfRib(kIpv4Unicast));
  wire[19] = 0x00;
  wire[20] = 0x10;
  Actions actions = fsm().onBytes(wire);

  NotificationMessage sent = sentNotificationThenDisconnect(actions);
  EXPECT_EQ(sent.code, static_cast<uint8_t>(ErrorCode::UpdateMessage));
  EXPECT_EQ(sent.subcode, subcode::kMalformedAttributeList);
  EXPECT_EQ(fsm().state(), SessionState::Idle);
}

TEST_F(SessionFsmTest, BytesAfterAFatalErrorAreIgnored) {
  toEstablished();
  auto wire = concat(bytesOf(peerOpen()), bytesOf(KeepaliveMessage{}));
  Actions actions = fsm().onBytes(wire);
  EXPECT_EQ(sentOf<NotificationMessage>(actions).size(), 1u) << describe(actions);
  EXPECT_TRUE(fsm().onBytes(bytesOf(KeepaliveMessage{})).empty());
}

TEST_F(SessionFsmTest, UnsupportedVersionIsOpenError21) {
  toOpenSent();
  OpenMessage open = peerOpen();
  open.version = 3;
  Actions actions = feed(open);
  NotificationMessage sent = sentNotificationThenDisconnect(actions);
  EXPECT_EQ(sent.code, 2);
  EXPECT_EQ(sent.subcode, subcode::kUnsupportedVersionNumber);
  EXPECT_EQ(fsm().state(), SessionState::Idle);
}

TEST_F(SessionFsmTest, ZeroBgpIdentifierIsOpenError23) {
  toOpenSent();
  Actions actions = feed(peerOpen(kPeerAsn, 90, 0));
  NotificationMessage sent = sentNotificationThenDisconnect(actions);
  EXPECT_EQ(sent.code, 2);
  EXPECT_EQ(sent.subcode, subcode::kBadBgpIdentifier);
}

TEST_F(SessionFsmTest, RouteRefreshOfTheWrongLengthIsRouteRefreshError71) {
  toEstablished();
  auto wire = bytesOf(RouteRefreshMessage{kIpv4Unicast});
  wire.push_back(0);
  wire[17] = static_cast<uint8_t>(wire.size());
  Actions actions = fsm().onBytes(wire);
  NotificationMessage sent = sentNotificationThenDisconnect(actions);
  EXPECT_EQ(sent.code, static_cast<uint8_t>(ErrorCode::RouteRefreshMessage));
  EXPECT_EQ(sent.subcode, subcode::kInvalidMessageLength);
  EXPECT_EQ(fsm().state(), SessionState::Idle);
}

TEST_F(SessionFsmTest, ConnectionClosedWhenEstablishedGoesIdleAndRetries) {
  (void)fsm().setAnnouncements({vipA()});
  toEstablished();
  Actions actions = fsm().onClosed("peer closed the connection");
  EXPECT_EQ(fsm().state(), SessionState::Idle);
  EXPECT_TRUE(actionsOf<Send>(actions).empty());
  EXPECT_TRUE(fsm().advertised().empty());
  EXPECT_FALSE(fsm().negotiated().has_value());
  EXPECT_EQ(armsOf(actions, TimerKind::ConnectRetry).size(), 1u);
}

TEST_F(SessionFsmTest, ReEstablishingAnnouncesEverythingAgain) {
  (void)fsm().setAnnouncements({vipA()});
  toEstablished();
  (void)fsm().onClosed("peer closed the connection");
  (void)fsm().onTimer(TimerKind::ConnectRetry);
  (void)fsm().onConnected(localV4());
  (void)feed(peerOpen());
  auto updates = updatesIn(feed(KeepaliveMessage{}));
  ASSERT_EQ(updates.size(), 3u);
  EXPECT_THAT(updates[0].nlri, ElementsAre(vipA()));
  EXPECT_EQ(fsm().counters().establishedTransitions, 2u);
}

// ---- ROUTE-REFRESH (RFC 2918) ----

TEST_F(SessionFsmTest, RouteRefreshResendsThatFamilyAndEndOfRib) {
  (void)fsm().setAnnouncements({vipA(), vipB(), vip6()});
  toEstablished();

  Actions actions = feed(RouteRefreshMessage{kIpv4Unicast});

  auto updates = updatesIn(actions);
  ASSERT_EQ(updates.size(), 2u) << describe(actions);
  EXPECT_THAT(updates[0].nlri, UnorderedElementsAre(vipA(), vipB()));
  EXPECT_FALSE(updates[0].attributes.mpReach.has_value());
  EXPECT_EQ(updates[1].endOfRibFamily(), kIpv4Unicast);
  EXPECT_EQ(fsm().counters().routeRefreshReceived, 1u);

  auto v6 = updatesIn(feed(RouteRefreshMessage{kIpv6Unicast}));
  ASSERT_EQ(v6.size(), 2u);
  ASSERT_TRUE(v6[0].attributes.mpReach.has_value());
  EXPECT_THAT(v6[0].attributes.mpReach->nlri, ElementsAre(vip6()));
  EXPECT_EQ(v6[1].endOfRibFamily(), kIpv6Unicast);
}

TEST_F(SessionFsmTest, RouteRefreshForANonNegotiatedFamilyIsIgnoredWithANotice) {
  config_.families = {kIpv4Unicast};
  (void)fsm().setAnnouncements({vipA()});
  toEstablished();

  Actions actions = feed(RouteRefreshMessage{kIpv6Unicast});

  EXPECT_TRUE(actionsOf<Send>(actions).empty()) << describe(actions);
  auto notices = actionsOf<Notice>(actions);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_THAT(notices[0].text, HasSubstr("ROUTE-REFRESH"));
  EXPECT_EQ(fsm().state(), SessionState::Established);
}

// ---- BFD Down (RFC 9384) ----

TEST_F(SessionFsmTest, BfdDownWhenEstablishedSendsCeaseBfdDownAndReconnects) {
  (void)fsm().setAnnouncements({vipA()});
  toEstablished();

  Actions actions = fsm().onBfdDown("detection time expired");

  NotificationMessage sent = sentNotificationThenDisconnect(actions);
  EXPECT_EQ(sent.code, static_cast<uint8_t>(ErrorCode::Cease));
  EXPECT_EQ(sent.subcode, subcode::kBfdDown);
  EXPECT_TRUE(sent.data.empty());
  EXPECT_EQ(fsm().state(), SessionState::Idle);
  EXPECT_TRUE(fsm().advertised().empty());
  EXPECT_THAT(fsm().lastError(), HasSubstr("BFD session down: detection time expired"));
  // Not a manual stop: the session comes back by itself after the ConnectRetry time.
  EXPECT_EQ(armsOf(actions, TimerKind::ConnectRetry).size(), 1u) << describe(actions);
  EXPECT_EQ(fsm().state(), SessionState::Idle);
  EXPECT_FALSE(actionsOf<Connect>(fsm().onTimer(TimerKind::ConnectRetry)).empty());
}

TEST_F(SessionFsmTest, BfdDownInOpenSentAlsoSendsTheNotification) {
  (void)fsm().start();
  (void)fsm().onConnected(localV4());
  ASSERT_EQ(fsm().state(), SessionState::OpenSent);

  Actions actions = fsm().onBfdDown("neighbor signaled session down");

  NotificationMessage sent = sentNotificationThenDisconnect(actions);
  EXPECT_EQ(sent.subcode, subcode::kBfdDown);
  EXPECT_EQ(fsm().state(), SessionState::Idle);
}

TEST_F(SessionFsmTest, BfdDownWithoutASessionLeavesTheConnectAttemptAlone) {
  (void)fsm().start();
  ASSERT_EQ(fsm().state(), SessionState::Connect);
  EXPECT_TRUE(fsm().onBfdDown("detection time expired").empty());
  EXPECT_EQ(fsm().state(), SessionState::Connect);
  EXPECT_TRUE(fsm().onBfdDown("again").empty());  // idempotent
}

// ---- ManualStop ----

TEST_F(SessionFsmTest, StopWhenEstablishedSendsAdministrativeShutdownAndStaysIdle) {
  (void)fsm().setAnnouncements({vipA()});
  toEstablished();

  Actions actions = fsm().stop("vipd: node draining");

  NotificationMessage sent = sentNotificationThenDisconnect(actions);
  EXPECT_EQ(sent.code, static_cast<uint8_t>(ErrorCode::Cease));
  EXPECT_EQ(sent.subcode, subcode::kAdministrativeShutdown);
  EXPECT_EQ(decodeShutdownCommunication(sent.data), "vipd: node draining");
  EXPECT_EQ(fsm().state(), SessionState::Idle);
  EXPECT_TRUE(fsm().advertised().empty());
  EXPECT_TRUE(armsOf(actions, TimerKind::ConnectRetry).empty()) << describe(actions);
  EXPECT_TRUE(cancels(actions, TimerKind::Hold));
  EXPECT_TRUE(cancels(actions, TimerKind::Keepalive));

  // A ConnectRetry expiry that was already in flight must not restart a stopped session.
  EXPECT_TRUE(actionsOf<Connect>(fsm().onTimer(TimerKind::ConnectRetry)).empty());
  EXPECT_EQ(fsm().state(), SessionState::Idle);
}

TEST_F(SessionFsmTest, StopWhileConnectingSendsNoNotification) {
  (void)fsm().start();
  Actions actions = fsm().stop("bye");
  EXPECT_TRUE(actionsOf<Send>(actions).empty());
  EXPECT_EQ(fsm().state(), SessionState::Idle);
}

TEST_F(SessionFsmTest, StopDuringAutomaticRestartCancelsIt) {
  toEstablished();
  (void)fsm().onTimer(TimerKind::Hold);  // Idle, restart armed
  Actions actions = fsm().stop("bye");
  EXPECT_TRUE(cancels(actions, TimerKind::ConnectRetry));
  EXPECT_TRUE(fsm().onTimer(TimerKind::ConnectRetry).empty());
}

TEST_F(SessionFsmTest, StartAfterStopDialsAgain) {
  toEstablished();
  (void)fsm().stop("bye");
  Actions actions = fsm().start();
  EXPECT_EQ(fsm().state(), SessionState::Connect);
  EXPECT_EQ(actionsOf<Connect>(actions).size(), 1u);
}

TEST_F(SessionFsmTest, StopWithPeerDeconfiguredSendsThatSubcode) {
  toEstablished();
  NotificationMessage sent = sentNotificationThenDisconnect(
      fsm().stop("vipd: peer removed from the config", subcode::kPeerDeconfigured));
  EXPECT_EQ(sent.code, static_cast<uint8_t>(ErrorCode::Cease));
  EXPECT_EQ(sent.subcode, subcode::kPeerDeconfigured);
  EXPECT_EQ(decodeShutdownCommunication(sent.data), "vipd: peer removed from the config");
}

// ---- Live reconfiguration (issue 29) ----

TEST_F(SessionFsmTest, ReconfigureEstablishedSendsOtherConfigurationChangeAndReconnects) {
  (void)fsm().setAnnouncements({vipA()});
  toEstablished();
  const uint64_t established = fsm().counters().establishedTransitions;
  SessionConfig next = config_;
  next.holdTime = seconds(6);
  next.keepaliveTime = seconds(2);
  next.connectRetryTime = milliseconds(500);

  Actions actions = fsm().reconfigure(next, "vipd: holdTime 9s -> 6s");

  NotificationMessage sent = sentNotificationThenDisconnect(actions);
  EXPECT_EQ(sent.code, static_cast<uint8_t>(ErrorCode::Cease));
  EXPECT_EQ(sent.subcode, subcode::kOtherConfigurationChange);
  EXPECT_EQ(decodeShutdownCommunication(sent.data), "vipd: holdTime 9s -> 6s");
  EXPECT_EQ(fsm().state(), SessionState::Idle);
  EXPECT_TRUE(fsm().advertised().empty());
  EXPECT_THAT(fsm().lastError(), HasSubstr("holdTime 9s -> 6s"));
  // Back after the new ConnectRetry time (jittered down to 75%), with the new settings.
  auto retries = armsOf(actions, TimerKind::ConnectRetry);
  ASSERT_EQ(retries.size(), 1u) << describe(actions);
  EXPECT_LE(retries[0].after, milliseconds(500));
  EXPECT_GE(retries[0].after, milliseconds(375));
  Actions again = fsm().onTimer(TimerKind::ConnectRetry);
  EXPECT_EQ(actionsOf<Connect>(again).size(), 1u) << describe(again);
  auto opens = sentOf<OpenMessage>(fsm().onConnected(localV4()));
  ASSERT_EQ(opens.size(), 1u);
  EXPECT_EQ(opens[0].holdTimeSeconds, 6);
  // What the speaker wants announced survives the reset: the new session announces it.
  auto updates = updatesIn(toEstablished());
  ASSERT_FALSE(updates.empty());
  EXPECT_THAT(updates[0].nlri, ElementsAre(vipA()));
  EXPECT_EQ(fsm().counters().establishedTransitions, established + 1);
}

TEST_F(SessionFsmTest, ReconfigureWhileConnectingDropsTheAttemptWithoutANotification) {
  (void)fsm().start();
  ASSERT_EQ(fsm().state(), SessionState::Connect);
  Actions actions = fsm().reconfigure(config_, "vipd: TCP-MD5 key changed");
  EXPECT_TRUE(actionsOf<Send>(actions).empty()) << describe(actions);
  EXPECT_EQ(actionsOf<Disconnect>(actions).size(), 1u) << describe(actions);
  EXPECT_EQ(fsm().state(), SessionState::Idle);
  EXPECT_EQ(armsOf(actions, TimerKind::ConnectRetry).size(), 1u) << describe(actions);
}

TEST_F(SessionFsmTest, ReconfigureWhileWaitingToRetryRetriesWithTheNewTime) {
  toEstablished();
  (void)fsm().onTimer(TimerKind::Hold);  // Idle, restart armed
  SessionConfig next = config_;
  next.connectRetryTime = milliseconds(200);
  Actions actions = fsm().reconfigure(next, "vipd: connectRetryTime 1s -> 200ms");
  EXPECT_TRUE(actionsOf<Send>(actions).empty()) << describe(actions);
  auto retries = armsOf(actions, TimerKind::ConnectRetry);
  ASSERT_EQ(retries.size(), 1u) << describe(actions);
  EXPECT_LE(retries[0].after, milliseconds(200));
}

TEST_F(SessionFsmTest, ReconfigureNeverStartedOnlyTakesTheSettings) {
  SessionConfig next = config_;
  next.holdTime = seconds(30);
  EXPECT_TRUE(fsm().reconfigure(next, "vipd: holdTime").empty());
  EXPECT_EQ(fsm().state(), SessionState::Idle);
  (void)fsm().start();
  auto opens = sentOf<OpenMessage>(fsm().onConnected(localV4()));
  ASSERT_EQ(opens.size(), 1u);
  EXPECT_EQ(opens[0].holdTimeSeconds, 30);
}

TEST_F(SessionFsmTest, NewRouteAttributesReannounceAsAnImplicitReplace) {
  (void)fsm().setAnnouncements({vipA(), vip6()}, {vip6()});
  toEstablished();
  OutboundAttributes attributes = config_.outbound;
  attributes.communities = {kCommunity, (65001u << 16) | 7};
  attributes.largeCommunities = {};
  attributes.degradeCommunities = {(65001u << 16) | 99};

  auto updates = updatesIn(fsm().setRouteAttributes(attributes));

  ASSERT_EQ(updates.size(), 2u);
  EXPECT_THAT(updates[0].nlri, ElementsAre(vipA()));
  EXPECT_EQ(updates[0].attributes.communities,
            (std::vector<uint32_t>{kCommunity, (65001u << 16) | 7}));
  EXPECT_FALSE(updates[0].attributes.largeCommunities.has_value()) << "none configured now";
  ASSERT_TRUE(updates[1].attributes.mpReach.has_value());
  EXPECT_THAT(updates[1].attributes.mpReach->nlri, ElementsAre(vip6()));
  EXPECT_EQ(updates[1].attributes.communities,
            (std::vector<uint32_t>{kCommunity, (65001u << 16) | 7, (65001u << 16) | 99}))
      << "the degraded path carries the new degrade communities";
  for (const auto& update : updates) {
    EXPECT_TRUE(update.withdrawn.empty()) << "an implicit replace, never a withdrawal";
    EXPECT_FALSE(update.attributes.mpUnreach.has_value());
  }
  EXPECT_TRUE(fsm().setRouteAttributes(attributes).empty()) << "unchanged: nothing to send";
}

TEST_F(SessionFsmTest, NewRouteAttributesKeepTheConnectionsNextHop) {
  (void)fsm().setAnnouncements({vipA()});
  toEstablished();
  OutboundAttributes attributes;  // no next hops, another ASN: those fields are not taken
  attributes.localAsn = 1;
  attributes.communities = {7};
  auto updates = updatesIn(fsm().setRouteAttributes(attributes));
  ASSERT_EQ(updates.size(), 1u);
  EXPECT_EQ(updates[0].attributes.nextHop, localV4());
  EXPECT_EQ(updates[0].attributes.asPath,
            (AsPath{{AsPathSegment::Type::AsSequence, {kLocalAsn}}}));
}

TEST_F(SessionFsmTest, NewRouteAttributesBeforeEstablishedShapeTheFirstAnnouncement) {
  (void)fsm().setAnnouncements({vipA()});
  OutboundAttributes attributes = config_.outbound;
  attributes.communities = {7};
  EXPECT_TRUE(fsm().setRouteAttributes(attributes).empty());
  auto updates = updatesIn(toEstablished());
  ASSERT_FALSE(updates.empty());
  EXPECT_EQ(updates[0].attributes.communities, std::vector<uint32_t>{7});
}

// ---- Received UPDATEs are counted, not stored ----

TEST_F(SessionFsmTest, ReceivedUpdatesAreCounted) {
  toEstablished();
  UpdateMessage update;
  update.withdrawn = {prefix("198.18.0.0/24")};
  update.attributes.origin = Origin::Igp;
  update.attributes.asPath = AsPath{{AsPathSegment::Type::AsSequence, {kPeerAsn}}};
  update.attributes.nextHop = ip("198.51.100.2");
  update.nlri = {prefix("198.18.1.0/24"), prefix("198.18.2.0/24")};
  update.attributes.mpReach =
      MpReachNlri{kIpv6Unicast, std::vector<uint8_t>(16, 0x20), {prefix("2001:db8:1::/48")}};

  Actions actions = feed(update);
  (void)feed(buildEndOfRib(kIpv4Unicast));
  (void)feed(buildEndOfRib(kIpv6Unicast));

  EXPECT_TRUE(actionsOf<Send>(actions).empty()) << describe(actions);
  const auto& c = fsm().counters();
  EXPECT_EQ(c.prefixesReceived, 3u);
  EXPECT_EQ(c.withdrawalsReceived, 1u);
  EXPECT_EQ(c.endOfRibReceived, 2u);
  EXPECT_EQ(c.messagesReceived[static_cast<int>(MessageType::Update)], 3u);
  EXPECT_EQ(c.treatAsWithdraw, 0u);
  EXPECT_EQ(fsm().state(), SessionState::Established);
}

// Regression test for a codec bug found here: UpdateDecoder (bgp/update_codec.cc) returned
// `DecodedMessage{std::move(update_), handling(), ...}`, which moves update_ out before handling()
// runs, so an IPv4-NLRI UPDATE that must be treat-as-withdraw came back as Normal. The MP_REACH
// variant below passed anyway because a moved-from optional stays engaged.
TEST_F(SessionFsmTest, TreatAsWithdrawIsCountedAndReported) {
  toEstablished();
  UpdateMessage update;
  update.attributes.origin = Origin::Igp;
  update.attributes.asPath = AsPath{{AsPathSegment::Type::AsSequence, {kPeerAsn}}};
  update.attributes.nextHop = ip("198.51.100.2");
  // MULTI_EXIT_DISC with 3 octets instead of 4: RFC 7606 section 7.4, treat-as-withdraw.
  update.attributes.other = {RawAttribute{attr_flags::kOptional, 4, {0, 0, 1}}};
  update.nlri = {prefix("198.18.1.0/24"), prefix("198.18.2.0/24")};

  Actions actions = feed(update);

  EXPECT_EQ(fsm().state(), SessionState::Established) << describe(actions);
  const auto& c = fsm().counters();
  EXPECT_EQ(c.treatAsWithdraw, 1u);
  EXPECT_EQ(c.prefixesReceived, 0u);
  EXPECT_EQ(c.withdrawalsReceived, 2u);
  EXPECT_FALSE(actionsOf<Notice>(actions).empty()) << describe(actions);
  EXPECT_TRUE(actionsOf<Send>(actions).empty());
}

TEST_F(SessionFsmTest, TreatAsWithdrawOfMpReachIsCounted) {
  toEstablished();
  UpdateMessage update;
  update.attributes.origin = Origin::Igp;
  update.attributes.asPath = AsPath{{AsPathSegment::Type::AsSequence, {kPeerAsn}}};
  update.attributes.other = {RawAttribute{attr_flags::kOptional, 4, {0, 0, 1}}};
  update.attributes.mpReach =
      MpReachNlri{kIpv6Unicast, std::vector<uint8_t>(16, 0x20), {prefix("2001:db8:1::/48")}};

  Actions actions = feed(update);

  EXPECT_EQ(fsm().state(), SessionState::Established) << describe(actions);
  EXPECT_EQ(fsm().counters().treatAsWithdraw, 1u);
  EXPECT_EQ(fsm().counters().prefixesReceived, 0u);
  EXPECT_EQ(fsm().counters().withdrawalsReceived, 1u);
  EXPECT_FALSE(actionsOf<Notice>(actions).empty()) << describe(actions);
}

TEST_F(SessionFsmTest, AttributeDiscardIsCountedAndTheRoutesStand) {
  toEstablished();
  UpdateMessage update;
  update.attributes.origin = Origin::Igp;
  update.attributes.asPath = AsPath{{AsPathSegment::Type::AsSequence, {kPeerAsn}}};
  update.attributes.nextHop = ip("198.51.100.2");
  // ATOMIC_AGGREGATE with a value: RFC 7606 section 7.6, attribute discard.
  update.attributes.other = {RawAttribute{attr_flags::kTransitive, 6, {1}}};
  update.nlri = {prefix("198.18.1.0/24")};

  Actions actions = feed(update);

  EXPECT_EQ(fsm().state(), SessionState::Established) << describe(actions);
  EXPECT_EQ(fsm().counters().attributeDiscard, 1u);
  EXPECT_EQ(fsm().counters().prefixesReceived, 1u);
  EXPECT_FALSE(actionsOf<Notice>(actions).empty()) << describe(actions);
}

// ---- Connection collisions (RFC 4271 section 6.8) ----

TEST_F(SessionFsmTest, IncomingWhileEstablishedIsRejectedWithCollisionCease) {
  toEstablished();
  Actions actions = fsm().onIncomingConnection(localV4());

  auto rejects = actionsOf<RejectIncoming>(actions);
  ASSERT_EQ(rejects.size(), 1u) << describe(actions);
  EXPECT_EQ(std::get<NotificationMessage>(decodeWire(rejects[0].bytes)),
            notification(ErrorCode::Cease, subcode::kConnectionCollisionResolution));
  EXPECT_EQ(actions.size(), 1u) << describe(actions);
  EXPECT_EQ(fsm().state(), SessionState::Established);
}

TEST_F(SessionFsmTest, CollisionInOpenSentWithHigherPeerIdAdoptsTheIncomingConnection) {
  toOpenSent();
  Actions held = fsm().onIncomingConnection(localV4());
  ASSERT_EQ(actionsOf<HoldIncoming>(held).size(), 1u) << describe(held);
  EXPECT_EQ(fsm().state(), SessionState::OpenSent);

  Actions actions = fsm().onIncomingBytes(bytesOf(peerOpen(kPeerAsn, 90, kHigherRouterId)));

  // Order: Cease 6/7 on our connection, close it, adopt the incoming one, OPEN + KEEPALIVE on it.
  auto sends = actionsOf<Send>(actions);
  ASSERT_EQ(sends.size(), 3u) << describe(actions);
  EXPECT_EQ(std::get<NotificationMessage>(decodeSent(sends[0])),
            notification(ErrorCode::Cease, subcode::kConnectionCollisionResolution));
  EXPECT_TRUE(std::holds_alternative<OpenMessage>(decodeSent(sends[1])));
  EXPECT_TRUE(std::holds_alternative<KeepaliveMessage>(decodeSent(sends[2])));
  auto disconnect = indexOf<Disconnect>(actions);
  auto adopt = indexOf<AdoptIncoming>(actions);
  ASSERT_TRUE(disconnect && adopt);
  EXPECT_LT(*disconnect, *adopt);
  auto firstSendAfterAdopt =
      std::find_if(actions.begin() + static_cast<ptrdiff_t>(*adopt), actions.end(),
                   [](const Action& a) { return std::holds_alternative<Send>(a); });
  ASSERT_NE(firstSendAfterAdopt, actions.end());
  EXPECT_EQ(std::get<Send>(*firstSendAfterAdopt).type, MessageType::Open);
  EXPECT_TRUE(actionsOf<RejectIncoming>(actions).empty());
  EXPECT_EQ(fsm().state(), SessionState::OpenConfirm);
  EXPECT_EQ(fsm().negotiated()->peerRouterId, kHigherRouterId);

  // The adopted connection carries on to Established.
  (void)feed(KeepaliveMessage{});
  EXPECT_EQ(fsm().state(), SessionState::Established);
}

TEST_F(SessionFsmTest, CollisionInOpenSentWithLowerPeerIdRejectsTheIncomingConnection) {
  toOpenSent();
  (void)fsm().onIncomingConnection(localV4());

  Actions actions = fsm().onIncomingBytes(bytesOf(peerOpen(kPeerAsn, 90, kLowerRouterId)));

  auto rejects = actionsOf<RejectIncoming>(actions);
  ASSERT_EQ(rejects.size(), 1u) << describe(actions);
  EXPECT_EQ(std::get<NotificationMessage>(decodeWire(rejects[0].bytes)),
            notification(ErrorCode::Cease, subcode::kConnectionCollisionResolution));
  EXPECT_TRUE(actionsOf<Send>(actions).empty());
  EXPECT_TRUE(actionsOf<Disconnect>(actions).empty());
  EXPECT_TRUE(actionsOf<AdoptIncoming>(actions).empty());
  EXPECT_EQ(fsm().state(), SessionState::OpenSent);

  // Our connection goes on.
  toOpenConfirm(peerOpen(kPeerAsn, 90, kLowerRouterId));
}

TEST_F(SessionFsmTest, CollisionInOpenConfirmWithHigherPeerIdAdoptsTheIncomingConnection) {
  toOpenConfirm(peerOpen(kPeerAsn, 90, kHigherRouterId));
  ASSERT_EQ(actionsOf<HoldIncoming>(fsm().onIncomingConnection(localV4())).size(), 1u);

  Actions actions = fsm().onIncomingBytes(bytesOf(peerOpen(kPeerAsn, 90, kHigherRouterId)));

  auto notifications = sentOf<NotificationMessage>(actions);
  ASSERT_EQ(notifications.size(), 1u) << describe(actions);
  EXPECT_EQ(notifications[0],
            notification(ErrorCode::Cease, subcode::kConnectionCollisionResolution));
  EXPECT_EQ(actionsOf<AdoptIncoming>(actions).size(), 1u);
  EXPECT_EQ(fsm().state(), SessionState::OpenConfirm);
}

TEST_F(SessionFsmTest, IncomingOpenArrivingByteByByteIsResolvedOnceComplete) {
  toOpenSent();
  (void)fsm().onIncomingConnection(localV4());
  auto wire = bytesOf(peerOpen(kPeerAsn, 90, kHigherRouterId));
  for (size_t i = 0; i + 1 < wire.size(); ++i) {
    EXPECT_TRUE(fsm().onIncomingBytes(std::span<const uint8_t>(&wire[i], 1)).empty());
  }
  Actions actions = fsm().onIncomingBytes(std::span<const uint8_t>(&wire.back(), 1));
  EXPECT_EQ(actionsOf<AdoptIncoming>(actions).size(), 1u) << describe(actions);
}

TEST_F(SessionFsmTest, IncomingConnectionThatSendsNonOpenFirstIsRejected) {
  toOpenSent();
  (void)fsm().onIncomingConnection(localV4());
  Actions actions = fsm().onIncomingBytes(bytesOf(KeepaliveMessage{}));
  auto rejects = actionsOf<RejectIncoming>(actions);
  ASSERT_EQ(rejects.size(), 1u) << describe(actions);
  EXPECT_EQ(std::get<NotificationMessage>(decodeWire(rejects[0].bytes)).code,
            static_cast<uint8_t>(ErrorCode::FsmError));
  EXPECT_EQ(fsm().state(), SessionState::OpenSent);
}

TEST_F(SessionFsmTest, IncomingWhileActiveIsAdoptedImmediately) {
  (void)fsm().start();
  (void)fsm().onConnectFailed("refused");
  ASSERT_EQ(fsm().state(), SessionState::Active);

  Actions actions = fsm().onIncomingConnection(localV4());

  auto adopt = indexOf<AdoptIncoming>(actions);
  ASSERT_TRUE(adopt.has_value()) << describe(actions);
  EXPECT_TRUE(actionsOf<HoldIncoming>(actions).empty());
  auto opens = sentOf<OpenMessage>(actions);
  ASSERT_EQ(opens.size(), 1u);
  EXPECT_EQ(opens[0].bgpIdentifier, kOurRouterId);
  EXPECT_LT(*adopt, *indexOf<Send>(actions));
  EXPECT_TRUE(cancels(actions, TimerKind::ConnectRetry));
  EXPECT_EQ(fsm().state(), SessionState::OpenSent);

  toOpenConfirm();
}

TEST_F(SessionFsmTest, HeldIncomingOpenArrivingWhileDialingAgainDropsTheDial) {
  toOpenSent();
  ASSERT_EQ(actionsOf<HoldIncoming>(fsm().onIncomingConnection(localV4())).size(), 1u);
  (void)fsm().onClosed("connection reset by peer");  // our connection dies: Idle, retry armed
  ASSERT_EQ(actionsOf<Connect>(fsm().onTimer(TimerKind::ConnectRetry)).size(), 1u);
  ASSERT_EQ(fsm().state(), SessionState::Connect);

  Actions actions = fsm().onIncomingBytes(bytesOf(peerOpen(kPeerAsn, 90, kLowerRouterId)));

  // The held connection becomes the session, so the connection attempt in flight must be
  // abandoned first (as onIncomingConnection does in Connect); otherwise its completion would
  // replace the adopted connection in the daemon.
  auto disconnect = indexOf<Disconnect>(actions);
  auto adopt = indexOf<AdoptIncoming>(actions);
  ASSERT_TRUE(adopt.has_value()) << describe(actions);
  ASSERT_TRUE(disconnect.has_value()) << describe(actions);
  EXPECT_LT(*disconnect, *adopt);
  EXPECT_TRUE(sentOf<NotificationMessage>(actions).empty()) << "no session to send Cease on";
  EXPECT_EQ(fsm().state(), SessionState::OpenConfirm);
}

TEST_F(SessionFsmTest, IncomingWhileConnectingDropsTheDialAndAdopts) {
  (void)fsm().start();
  Actions actions = fsm().onIncomingConnection(localV4());
  auto disconnect = indexOf<Disconnect>(actions);
  auto adopt = indexOf<AdoptIncoming>(actions);
  ASSERT_TRUE(disconnect && adopt) << describe(actions);
  EXPECT_LT(*disconnect, *adopt);
  EXPECT_EQ(fsm().state(), SessionState::OpenSent);
}

TEST_F(SessionFsmTest, IncomingWhileStoppedIsRejected) {
  Actions actions = fsm().onIncomingConnection(localV4());
  EXPECT_EQ(actionsOf<RejectIncoming>(actions).size(), 1u);
  EXPECT_EQ(fsm().state(), SessionState::Idle);
}

}  // namespace
}  // namespace vipd::bgp

namespace vipd::bgp {
namespace {

using namespace vipd::bgp::testing;

// ---- Graceful restart (RFC 4724), used only for handoffs between vipd instances ----

class GracefulRestartTest : public SessionFsmTest {
 protected:
  GracefulRestartTest() { config_.gracefulRestartTime = std::chrono::seconds(3); }

  static OpenMessage grPeerOpen() {
    OpenMessage open = peerOpen();
    GracefulRestartCapability gr;
    gr.restartTimeSeconds = 120;
    gr.families = {{kIpv4Unicast, false}};
    open.capabilities.gracefulRestart = gr;
    return open;
  }

  // The OPEN this FSM sent when the connection came up.
  OpenMessage ourOpen(const Actions& connected) {
    auto opens = sentOf<OpenMessage>(connected);
    EXPECT_EQ(opens.size(), 1u) << describe(connected);
    return opens.empty() ? OpenMessage{} : opens.front();
  }
};

TEST_F(SessionFsmTest, NoGracefulRestartCapabilityUnlessConfigured) {
  EXPECT_FALSE(sentOf<OpenMessage>(toOpenSent()).front().capabilities.gracefulRestart);
}

TEST_F(GracefulRestartTest, NormalStartAdvertisesRestartTimeWithEveryBitClear) {
  OpenMessage open = ourOpen(toOpenSent());
  ASSERT_TRUE(open.capabilities.gracefulRestart);
  const auto& gr = *open.capabilities.gracefulRestart;
  EXPECT_EQ(gr.restartTimeSeconds, 3);
  EXPECT_FALSE(gr.restartState);
  // No N bit (RFC 8538): every NOTIFICATION must flush the peer's copy of our path.
  EXPECT_FALSE(gr.notification);
  ASSERT_EQ(gr.families.size(), config_.families.size());
  for (const auto& family : gr.families) {
    EXPECT_FALSE(family.forwardingStatePreserved);
  }
}

TEST_F(GracefulRestartTest, RestartingOpenSetsRAndFBitsUntilEstablished) {
  fsm().setRestarting(true);
  OpenMessage open = ourOpen(toOpenSent());
  ASSERT_TRUE(open.capabilities.gracefulRestart);
  EXPECT_TRUE(open.capabilities.gracefulRestart->restartState);
  for (const auto& family : open.capabilities.gracefulRestart->families) {
    EXPECT_TRUE(family.forwardingStatePreserved);
  }
  (void)fsm().setAnnouncements({prefix("203.0.113.10/32")});
  Actions established = toEstablished(grPeerOpen());
  // The announcement, then End-of-RIB: the peer replaces its stale path with these.
  auto updates = updatesIn(established);
  ASSERT_GE(updates.size(), 2u);
  EXPECT_EQ(updates.front().nlri.size(), 1u);
  EXPECT_TRUE(updates.back().nlri.empty() && updates.back().withdrawn.empty());
  EXPECT_FALSE(fsm().restarting());

  // A later session (after a failure) says nothing was preserved.
  (void)fsm().onClosed("reset by peer");
  (void)fsm().onTimer(TimerKind::ConnectRetry);
  OpenMessage again = ourOpen(fsm().onConnected(localV4()));
  EXPECT_FALSE(again.capabilities.gracefulRestart->restartState);
}

TEST_F(GracefulRestartTest, FailedRestartClearsTheBits) {
  fsm().setRestarting(true);
  toOpenSent();
  (void)fsm().onClosed("connection reset");
  EXPECT_FALSE(fsm().restarting());
}

TEST_F(GracefulRestartTest, YieldClosesWithoutNotificationAndStaysIdle) {
  (void)fsm().setAnnouncements({prefix("203.0.113.10/32")});
  toEstablished(grPeerOpen());
  bool peerKeepsRoutes = false;
  Actions yielded = fsm().yieldForRestart(peerKeepsRoutes);
  EXPECT_TRUE(peerKeepsRoutes);
  EXPECT_TRUE(sentOf<NotificationMessage>(yielded).empty()) << describe(yielded);
  EXPECT_TRUE(sentOf<UpdateMessage>(yielded).empty()) << "a yield must not withdraw";
  EXPECT_EQ(actionsOf<Disconnect>(yielded).size(), 1u);
  EXPECT_EQ(fsm().state(), SessionState::Idle);
  EXPECT_TRUE(armsOf(yielded, TimerKind::ConnectRetry).empty()) << describe(yielded);
  EXPECT_TRUE(fsm().advertised().empty());
  // Stays down: no timer can bring it back.
  EXPECT_TRUE(fsm().onTimer(TimerKind::ConnectRetry).empty());
}

TEST_F(GracefulRestartTest, YieldReportsAPeerWithoutGracefulRestart) {
  toEstablished(peerOpen());
  bool peerKeepsRoutes = true;
  Actions yielded = fsm().yieldForRestart(peerKeepsRoutes);
  EXPECT_FALSE(peerKeepsRoutes);
  EXPECT_TRUE(sentOf<NotificationMessage>(yielded).empty());
}

TEST_F(GracefulRestartTest, StopStillSendsCeaseSoThePeerFlushesThePath) {
  toEstablished(grPeerOpen());
  Actions stopped = fsm().stop("vipd: node draining");
  auto n = sentNotificationThenDisconnect(stopped);
  EXPECT_EQ(n.code, static_cast<uint8_t>(ErrorCode::Cease));
}

// ---- ADD-PATH receive (RFC 7911) and the paths kept for watched prefixes ----

constexpr uint32_t kRouteReflectorId = 0xC0000201;  // 192.0.2.1, the cluster ID
constexpr uint32_t kNodeB = 0xC000020B;             // 192.0.2.11, another vipd
constexpr uint32_t kNodeC = 0xC000020C;             // 192.0.2.12, a third one

// A route reflector with `add paths tx` towards vipd (iBGP), which advertises ADD-PATH receive
// for both families and watches vipA and vip6.
class AddPathTest : public SessionFsmTest {
 protected:
  AddPathTest() {
    config_ = ibgpConfig();
    config_.addPathReceive = {kIpv4Unicast, kIpv6Unicast};
    config_.watchedPrefixes = {vipA(), vip6()};
  }

  static OpenMessage sendingPeerOpen(AddPathMode v4 = AddPathMode::Send,
                                     AddPathMode v6 = AddPathMode::Both) {
    OpenMessage open = peerOpen(kLocalAsn);
    open.capabilities.addPath = {{kIpv4Unicast, v4}, {kIpv6Unicast, v6}};
    return open;
  }

  // Established with a peer that sends path identifiers in both families; what feed() encodes
  // from then on carries them.
  void establishWithAddPath() {
    toEstablished(sendingPeerOpen());
    ASSERT_THAT(fsm().negotiated()->addPathReceive, ElementsAre(kIpv4Unicast, kIpv6Unicast));
    peerOptions_.addPath = {kIpv4Unicast, kIpv6Unicast};
  }

  // The reflected IPv4 path of node `originator` (next hop 198.51.100.x, x = its last octet).
  static UpdateMessage reflectedV4(std::vector<Prefix> prefixes, std::vector<uint32_t> pathIds,
                                   uint32_t originator, uint32_t localPref = 100) {
    UpdateMessage update;
    update.attributes.origin = Origin::Igp;
    update.attributes.asPath = AsPath{};
    update.attributes.nextHop = IpAddress::v4(0xC6336400u | (originator & 0xFF));
    update.attributes.localPref = localPref;
    update.attributes.communities = std::vector<uint32_t>{kCommunity};
    update.attributes.originatorId = originator;
    update.attributes.clusterList = std::vector<uint32_t>{kRouteReflectorId};
    update.nlri = std::move(prefixes);
    update.nlriPathIds = std::move(pathIds);
    return update;
  }

  // The same for IPv6, with a global and a link-local next hop (RFC 2545).
  static UpdateMessage reflectedV6(uint32_t pathId, uint32_t originator) {
    UpdateMessage update = reflectedV4({}, {}, originator);
    update.attributes.nextHop.reset();
    const IpAddress global = ip("2001:db8::11");
    const IpAddress linkLocal = ip("fe80::11");
    std::vector<uint8_t> nextHop(global.bytes.begin(), global.bytes.end());
    nextHop.insert(nextHop.end(), linkLocal.bytes.begin(), linkLocal.bytes.end());
    update.attributes.mpReach = MpReachNlri{kIpv6Unicast, nextHop, {vip6()}, {pathId}};
    return update;
  }

  static UpdateMessage withdrawV4(std::vector<Prefix> prefixes, std::vector<uint32_t> pathIds) {
    UpdateMessage update;
    update.withdrawn = std::move(prefixes);
    update.withdrawnPathIds = std::move(pathIds);
    return update;
  }

  // The path reflectedV4 describes, as the FSM keeps it.
  static ReceivedPath pathOf(uint32_t originator, uint32_t localPref = 100) {
    ReceivedPath path;
    path.nextHop = IpAddress::v4(0xC6336400u | (originator & 0xFF));
    path.originatorId = originator;
    path.clusterList = {kRouteReflectorId};
    path.asPath = AsPath{};
    path.localPref = localPref;
    path.communities = {kCommunity};
    return path;
  }

  static size_t changes(const Actions& actions) {
    return actionsOf<WatchedPathsChanged>(actions).size();
  }
};

TEST_F(AddPathTest, OpenAdvertisesAddPathReceiveForTheConfiguredFamilies) {
  auto opens = sentOf<OpenMessage>(toOpenSent());
  ASSERT_EQ(opens.size(), 1u);
  EXPECT_THAT(opens[0].capabilities.addPath,
              ElementsAre(AddPathFamily{kIpv4Unicast, AddPathMode::Receive},
                          AddPathFamily{kIpv6Unicast, AddPathMode::Receive}));
}

TEST_F(AddPathTest, OpenLeavesOutFamiliesTheSessionDoesNotSpeak) {
  config_.families = {kIpv6Unicast};
  auto opens = sentOf<OpenMessage>(toOpenSent());
  ASSERT_EQ(opens.size(), 1u);
  EXPECT_THAT(opens[0].capabilities.addPath,
              ElementsAre(AddPathFamily{kIpv6Unicast, AddPathMode::Receive}));
}

// Without addPathReceive the OPEN is byte for byte what it was before ADD-PATH, watched prefixes
// or not.
TEST_F(SessionFsmTest, NoAddPathCapabilityUnlessConfigured) {
  const auto plain = actionsOf<Send>(toOpenSent());
  config_.watchedPrefixes = {vipA()};
  SessionFsm watching(config_);
  (void)watching.start();
  const auto watched = actionsOf<Send>(watching.onConnected(localV4()));
  ASSERT_EQ(plain.size(), 1u);
  ASSERT_EQ(watched.size(), 1u);
  EXPECT_EQ(plain[0].bytes, watched[0].bytes);
  EXPECT_TRUE(std::get<OpenMessage>(decodeSent(plain[0])).capabilities.addPath.empty());
}

TEST_F(AddPathTest, NegotiatedWhereThePeerSends) {
  toEstablished(sendingPeerOpen(AddPathMode::Send, AddPathMode::Both));
  EXPECT_THAT(fsm().negotiated()->addPathReceive, ElementsAre(kIpv4Unicast, kIpv6Unicast));
}

// FRR advertises ADD-PATH receive for every family unless told not to: nothing comes our way.
TEST_F(AddPathTest, NotNegotiatedWhenThePeerOnlyReceives) {
  toEstablished(sendingPeerOpen(AddPathMode::Receive, AddPathMode::Receive));
  EXPECT_TRUE(fsm().negotiated()->addPathReceive.empty());
  // Its UPDATEs carry no path identifiers and decode as such: path identifier 0.
  Actions actions = feed(reflectedV4({vipA()}, {}, kNodeB));
  EXPECT_EQ(fsm().state(), SessionState::Established) << describe(actions);
  EXPECT_EQ(fsm().watchedPaths(), (WatchedPaths{{vipA(), {{0, pathOf(kNodeB)}}}}));
}

TEST_F(AddPathTest, NotNegotiatedUnlessWeAdvertisedReceive) {
  config_.addPathReceive = {kIpv6Unicast};
  toEstablished(sendingPeerOpen());
  EXPECT_THAT(fsm().negotiated()->addPathReceive, ElementsAre(kIpv6Unicast));
}

TEST_F(AddPathTest, NotNegotiatedInAFamilyTheSessionDoesNotSpeak) {
  OpenMessage open = sendingPeerOpen();
  open.capabilities.multiprotocol = {kIpv4Unicast};
  toEstablished(open);
  EXPECT_THAT(fsm().negotiated()->families, ElementsAre(kIpv4Unicast));
  EXPECT_THAT(fsm().negotiated()->addPathReceive, ElementsAre(kIpv4Unicast));
}

// A peer that lists a family twice: its last tuple counts, as in BIRD and FRR.
TEST_F(AddPathTest, TheLastTupleForAFamilyCounts) {
  OpenMessage open = peerOpen(kLocalAsn);
  open.capabilities.addPath = {{kIpv4Unicast, AddPathMode::Send},
                               {kIpv6Unicast, AddPathMode::Receive},
                               {kIpv4Unicast, AddPathMode::Receive},
                               {kIpv6Unicast, AddPathMode::Send}};
  toEstablished(open);
  EXPECT_THAT(fsm().negotiated()->addPathReceive, ElementsAre(kIpv6Unicast));
}

// The fabric's view of the VIP: two nodes announce it, the reflector sends both paths.
TEST_F(AddPathTest, TwoPathsForTheWatchedVipFromARouteReflector) {
  establishWithAddPath();
  Actions first = feed(reflectedV4({vipA()}, {1}, kNodeB));
  EXPECT_EQ(changes(first), 1u) << describe(first);
  EXPECT_EQ(fsm().watchedPaths(), (WatchedPaths{{vipA(), {{1, pathOf(kNodeB)}}}}));

  Actions second = feed(reflectedV4({vipA()}, {2}, kNodeC));
  EXPECT_EQ(changes(second), 1u) << describe(second);
  EXPECT_EQ(fsm().watchedPaths(),
            (WatchedPaths{{vipA(), {{1, pathOf(kNodeB)}, {2, pathOf(kNodeC)}}}}));
  const ReceivedPath& b = fsm().watchedPaths().at(vipA()).at(1);
  EXPECT_EQ(b.nextHop, ip("198.51.100.11"));
  EXPECT_EQ(b.originatorId, kNodeB);
  EXPECT_THAT(b.clusterList, ElementsAre(kRouteReflectorId));
  EXPECT_EQ(b.localPref, 100u);
  EXPECT_THAT(b.communities, ElementsAre(kCommunity));
  EXPECT_EQ(fsm().counters().watchedPathsReceived, 2u);
  EXPECT_EQ(fsm().counters().prefixesReceived, 2u);
  EXPECT_TRUE(actionsOf<Send>(second).empty());
}

TEST_F(AddPathTest, SeveralUpdatesInOneBatchAreReportedOnce) {
  establishWithAddPath();
  Actions actions = fsm().onBytes(concat(bytesOf(reflectedV4({vipA()}, {1}, kNodeB), peerOptions_),
                                         bytesOf(reflectedV6(7, kNodeC), peerOptions_)));
  EXPECT_EQ(changes(actions), 1u) << describe(actions);
  EXPECT_TRUE(std::holds_alternative<WatchedPathsChanged>(actions.back())) << describe(actions);
  EXPECT_EQ(fsm().watchedPaths().size(), 2u);
}

TEST_F(AddPathTest, WithdrawingOnePathIdLeavesTheOther) {
  establishWithAddPath();
  (void)feed(reflectedV4({vipA()}, {1}, kNodeB));
  (void)feed(reflectedV4({vipA()}, {2}, kNodeC));

  Actions withdrawn = feed(withdrawV4({vipA()}, {1}));
  EXPECT_EQ(changes(withdrawn), 1u) << describe(withdrawn);
  EXPECT_EQ(fsm().watchedPaths(), (WatchedPaths{{vipA(), {{2, pathOf(kNodeC)}}}}));
  EXPECT_EQ(fsm().counters().watchedPathsWithdrawn, 1u);

  // Withdrawing a path identifier it does not hold changes nothing, but is counted.
  Actions again = feed(withdrawV4({vipA()}, {1}));
  EXPECT_EQ(changes(again), 0u) << describe(again);
  EXPECT_EQ(fsm().counters().watchedPathsWithdrawn, 2u);

  // The last path gone, the prefix has no entry at all.
  Actions last = feed(withdrawV4({vipA()}, {2}));
  EXPECT_EQ(changes(last), 1u);
  EXPECT_TRUE(fsm().watchedPaths().empty());
}

TEST_F(AddPathTest, Ipv6PathsComeAndGoThroughMpReachAndMpUnreach) {
  establishWithAddPath();
  Actions announced = feed(reflectedV6(7, kNodeB));
  EXPECT_EQ(changes(announced), 1u) << describe(announced);
  ASSERT_EQ(fsm().watchedPaths().count(vip6()), 1u);
  const auto& paths = fsm().watchedPaths().at(vip6());
  ASSERT_EQ(paths.count(7), 1u);
  // The global address of the global + link-local pair.
  EXPECT_EQ(paths.at(7).nextHop, ip("2001:db8::11"));
  EXPECT_EQ(paths.at(7).originatorId, kNodeB);

  UpdateMessage unreach;
  unreach.attributes.mpUnreach = MpUnreachNlri{kIpv6Unicast, {vip6()}, {7}};
  Actions withdrawn = feed(unreach);
  EXPECT_EQ(changes(withdrawn), 1u) << describe(withdrawn);
  EXPECT_TRUE(fsm().watchedPaths().empty());
  EXPECT_EQ(fsm().counters().watchedPathsWithdrawn, 1u);
}

TEST_F(AddPathTest, EndOfRibIsRecognisedWithAddPath) {
  establishWithAddPath();
  Actions v4 = feed(buildEndOfRib(kIpv4Unicast));
  Actions v6 = feed(buildEndOfRib(kIpv6Unicast));
  EXPECT_EQ(fsm().counters().endOfRibReceived, 2u);
  EXPECT_EQ(changes(v4) + changes(v6), 0u);
  EXPECT_EQ(fsm().state(), SessionState::Established);
}

// RFC 7606: the UPDATE's NLRI are withdrawn, those with a path kept (id 1) and those without
// (id 3) alike, in both families.
TEST_F(AddPathTest, TreatAsWithdrawRemovesTheUpdatesWatchedPaths) {
  establishWithAddPath();
  (void)feed(reflectedV4({vipA()}, {1}, kNodeB));
  (void)feed(reflectedV4({vipA()}, {2}, kNodeC));
  (void)feed(reflectedV6(7, kNodeB));

  UpdateMessage malformed = reflectedV4({vipA(), vipA()}, {1, 3}, kNodeB);
  malformed.attributes.other = {RawAttribute{attr_flags::kOptional, 4, {0, 0, 1}}};  // MED, 3 bytes
  Actions actions = feed(malformed);
  EXPECT_EQ(fsm().state(), SessionState::Established) << describe(actions);
  EXPECT_EQ(changes(actions), 1u) << describe(actions);
  EXPECT_EQ(fsm().watchedPaths().at(vipA()),
            (std::map<uint32_t, ReceivedPath>{{2, pathOf(kNodeC)}}));
  EXPECT_EQ(fsm().counters().treatAsWithdraw, 1u);
  EXPECT_EQ(fsm().counters().watchedPathsWithdrawn, 2u);

  UpdateMessage malformed6 = reflectedV6(7, kNodeB);
  malformed6.attributes.other = malformed.attributes.other;
  Actions actions6 = feed(malformed6);
  EXPECT_EQ(changes(actions6), 1u) << describe(actions6);
  EXPECT_EQ(fsm().watchedPaths().count(vip6()), 0u);
}

TEST_F(AddPathTest, AWatchedPrefixRemovedDropsItsPaths) {
  establishWithAddPath();
  (void)feed(reflectedV4({vipA()}, {1}, kNodeB));
  (void)feed(reflectedV6(1, kNodeC));
  ASSERT_EQ(fsm().watchedPaths().size(), 2u);
  Actions actions = fsm().setWatchedPrefixes({vip6()});
  EXPECT_EQ(changes(actions), 1u) << describe(actions);
  EXPECT_TRUE(actionsOf<Send>(actions).empty()) << "nothing gained: no refresh";
  EXPECT_EQ(fsm().watchedPaths().count(vipA()), 0u);
  EXPECT_EQ(fsm().watchedPaths().count(vip6()), 1u);
  // Paths for it are no longer kept.
  EXPECT_EQ(changes(feed(reflectedV4({vipA()}, {2}, kNodeC))), 0u);
  EXPECT_EQ(fsm().watchedPaths().count(vipA()), 0u);
}

TEST_F(AddPathTest, AWatchedPrefixAddedAsksThePeerToSendItsRoutesAgain) {
  establishWithAddPath();
  Actions actions = fsm().setWatchedPrefixes({vipA(), vipB(), vip6()});
  auto refreshes = sentOf<RouteRefreshMessage>(actions);
  ASSERT_EQ(refreshes.size(), 1u) << describe(actions);
  EXPECT_EQ(refreshes[0].family, kIpv4Unicast) << "only the family that gained a prefix";
  EXPECT_EQ(changes(actions), 0u);
  // What the peer sends again is kept now.
  EXPECT_EQ(changes(feed(reflectedV4({vipB()}, {1}, kNodeB))), 1u);
  EXPECT_EQ(fsm().watchedPaths().count(vipB()), 1u);
}

TEST_F(AddPathTest, NoRefreshWithoutTheCapabilityOrASession) {
  EXPECT_TRUE(fsm().setWatchedPrefixes({vipA(), vipB(), vip6()}).empty()) << "not Established";
  OpenMessage open = sendingPeerOpen();
  open.capabilities.routeRefresh = false;
  toEstablished(open);
  EXPECT_TRUE(sentOf<RouteRefreshMessage>(fsm().setWatchedPrefixes({vipA(), vipC()})).empty());
}

TEST_F(AddPathTest, AnIdenticalAnnouncementIsNoChangeAndANewOneReplaces) {
  establishWithAddPath();
  (void)feed(reflectedV4({vipA()}, {1}, kNodeB));
  Actions same = feed(reflectedV4({vipA()}, {1}, kNodeB));
  EXPECT_EQ(changes(same), 0u) << describe(same);

  Actions replaced = feed(reflectedV4({vipA()}, {1}, kNodeB, 50));
  EXPECT_EQ(changes(replaced), 1u) << describe(replaced);
  EXPECT_EQ(fsm().watchedPaths(), (WatchedPaths{{vipA(), {{1, pathOf(kNodeB, 50)}}}}));
  EXPECT_EQ(fsm().counters().watchedPathsReceived, 3u);
}

// RFC 4271 section 4.3: a prefix in both fields of one UPDATE stands announced.
TEST_F(AddPathTest, APathWithdrawnAndAnnouncedInOneUpdateStands) {
  establishWithAddPath();
  UpdateMessage update = reflectedV4({vipA()}, {1}, kNodeB);
  update.withdrawn = {vipA()};
  update.withdrawnPathIds = {1};
  (void)feed(update);
  EXPECT_EQ(fsm().watchedPaths(), (WatchedPaths{{vipA(), {{1, pathOf(kNodeB)}}}}));
}

TEST_F(AddPathTest, UnwatchedPrefixesAreCountedNotStored) {
  establishWithAddPath();
  Actions unwatched = feed(reflectedV4({vipB(), vipC()}, {1, 1}, kNodeB));
  EXPECT_EQ(changes(unwatched), 0u) << describe(unwatched);
  EXPECT_TRUE(fsm().watchedPaths().empty());
  (void)feed(reflectedV4({vipB(), vipA()}, {2, 2}, kNodeB));
  EXPECT_EQ(fsm().watchedPaths(), (WatchedPaths{{vipA(), {{2, pathOf(kNodeB)}}}}));
  EXPECT_EQ(fsm().counters().prefixesReceived, 4u);
  EXPECT_EQ(fsm().counters().watchedPathsReceived, 1u);
  // A covering prefix is not the VIP: matched exactly.
  (void)feed(reflectedV4({prefix("203.0.113.0/24")}, {3}, kNodeB));
  EXPECT_EQ(fsm().watchedPaths().at(vipA()).size(), 1u);
}

TEST_F(AddPathTest, NothingIsStoredWithoutWatchedPrefixes) {
  config_.watchedPrefixes.clear();
  establishWithAddPath();
  Actions actions = feed(reflectedV4({vipA()}, {1}, kNodeB));
  EXPECT_EQ(changes(actions), 0u);
  EXPECT_TRUE(fsm().watchedPaths().empty());
  EXPECT_EQ(fsm().counters().watchedPathsReceived, 0u);
}

// A family the session did not negotiate is not the fabric's view on this session.
TEST_F(AddPathTest, PathsOfANonNegotiatedFamilyAreNotStored) {
  config_.families = {kIpv4Unicast};
  toEstablished(sendingPeerOpen());
  peerOptions_.addPath = {kIpv4Unicast};
  UpdateMessage v6 = reflectedV6(0, kNodeB);
  v6.attributes.mpReach->pathIds.clear();  // IPv6 has no ADD-PATH here either
  Actions actions = feed(v6);
  EXPECT_EQ(fsm().state(), SessionState::Established) << describe(actions);
  EXPECT_TRUE(fsm().watchedPaths().empty());
}

// A hostile or misconfigured peer cannot grow the FSM's memory: at most 64 paths per prefix.
TEST_F(AddPathTest, PathsPerWatchedPrefixAreCapped) {
  establishWithAddPath();
  std::vector<uint32_t> ids;
  for (uint32_t id = 1; id <= kMaxPathsPerWatchedPrefix + 1; ++id) {
    ids.push_back(id);
  }
  Actions actions = feed(reflectedV4(std::vector<Prefix>(ids.size(), vipA()), ids, kNodeB));
  EXPECT_EQ(fsm().state(), SessionState::Established) << describe(actions);
  EXPECT_EQ(fsm().watchedPaths().at(vipA()).size(), kMaxPathsPerWatchedPrefix);
  EXPECT_EQ(fsm().watchedPaths().at(vipA()).count(kMaxPathsPerWatchedPrefix + 1), 0u);
  EXPECT_EQ(fsm().counters().watchedPathsReceived, kMaxPathsPerWatchedPrefix + 1);
  EXPECT_EQ(fsm().counters().watchedPathsDropped, 1u);
  auto notices = actionsOf<Notice>(actions);
  ASSERT_EQ(notices.size(), 1u) << describe(actions);
  EXPECT_THAT(notices[0].text, HasSubstr("more than 64 paths for watched prefix 203.0.113.10/32"));

  // More of them: counted, dropped, and the operator is not told again in this session.
  Actions more = feed(reflectedV4({vipA(), vipA()}, {1000, 1001}, kNodeB));
  EXPECT_EQ(changes(more), 0u) << describe(more);
  EXPECT_TRUE(actionsOf<Notice>(more).empty()) << describe(more);
  EXPECT_EQ(fsm().counters().watchedPathsDropped, 3u);

  // A kept path can still be replaced, and a withdrawal makes room for one more.
  (void)feed(reflectedV4({vipA()}, {5}, kNodeB, 50));
  EXPECT_EQ(fsm().watchedPaths().at(vipA()).at(5).localPref, 50u);
  (void)feed(withdrawV4({vipA()}, {1}));
  Actions admitted = feed(reflectedV4({vipA()}, {1000}, kNodeC));
  EXPECT_EQ(changes(admitted), 1u);
  EXPECT_EQ(fsm().watchedPaths().at(vipA()).count(1000), 1u);
  EXPECT_EQ(fsm().watchedPaths().at(vipA()).size(), kMaxPathsPerWatchedPrefix);
}

// Without ADD-PATH the peer has one path per prefix: path identifier 0, replaced by the next.
TEST_F(AddPathTest, WithoutAddPathTheOnePathHasIdZero) {
  toEstablished(peerOpen(kLocalAsn));
  EXPECT_TRUE(fsm().negotiated()->addPathReceive.empty());
  (void)feed(reflectedV4({vipA()}, {}, kNodeB));
  Actions replaced = feed(reflectedV4({vipA()}, {}, kNodeC));
  EXPECT_EQ(changes(replaced), 1u);
  EXPECT_EQ(fsm().watchedPaths(), (WatchedPaths{{vipA(), {{0, pathOf(kNodeC)}}}}));
  (void)feed(withdrawV4({vipA()}, {}));
  EXPECT_TRUE(fsm().watchedPaths().empty());
}

// RFC 7606 sections 7.9 and 7.10: ORIGINATOR_ID and CLUSTER_LIST from an external peer are
// discarded; the rest of the path is kept.
TEST_F(AddPathTest, AnExternalPeersOriginatorIdAndClusterListAreNotKept) {
  config_ = ebgpConfig();
  config_.addPathReceive = {kIpv4Unicast};
  config_.watchedPrefixes = {vipA()};
  OpenMessage open = peerOpen();
  open.capabilities.addPath = {{kIpv4Unicast, AddPathMode::Send}};
  toEstablished(open);
  peerOptions_.addPath = {kIpv4Unicast};
  UpdateMessage update = reflectedV4({vipA()}, {4}, kNodeB);
  update.attributes.asPath = AsPath{{AsPathSegment::Type::AsSequence, {kPeerAsn, 65011}}};
  update.attributes.localPref.reset();
  (void)feed(update);
  ASSERT_EQ(fsm().watchedPaths().count(vipA()), 1u);
  const ReceivedPath& path = fsm().watchedPaths().at(vipA()).at(4);
  EXPECT_FALSE(path.originatorId.has_value());
  EXPECT_TRUE(path.clusterList.empty());
  EXPECT_EQ(path.asPath, update.attributes.asPath);
  EXPECT_EQ(path.nextHop, ip("198.51.100.11"));
}

// Every way out of Established forgets the peer's paths and says so, after the state change.
class AddPathLeavingEstablishedTest : public AddPathTest,
                                      public ::testing::WithParamInterface<std::string> {
 protected:
  Actions leave() {
    const std::string& how = GetParam();
    if (how == "closed") {
      return fsm().onClosed("peer reset the connection");
    }
    if (how == "hold timer") {
      return fsm().onTimer(TimerKind::Hold);
    }
    if (how == "stop") {
      return fsm().stop("vipd: node draining");
    }
    if (how == "bfd down") {
      return fsm().onBfdDown("detection time expired");
    }
    if (how == "notification") {
      return feed(notification(ErrorCode::Cease, subcode::kAdministrativeReset));
    }
    if (how == "yield") {
      bool peerKeepsRoutes = false;
      return fsm().yieldForRestart(peerKeepsRoutes);
    }
    // "malformed update": a path identifier with nothing after it, 3/10.
    return fsm().onBytes(updateMessageWithNlri({0, 0, 0, 1}));
  }

  // The attributes of a reflected path followed by raw NLRI bytes.
  std::vector<uint8_t> updateMessageWithNlri(const std::vector<uint8_t>& nlri) {
    std::vector<uint8_t> wire = concat(bytesOf(reflectedV4({}, {}, kNodeB), peerOptions_), nlri);
    wire[16] = static_cast<uint8_t>(wire.size() >> 8);
    wire[17] = static_cast<uint8_t>(wire.size());
    return wire;
  }
};

TEST_P(AddPathLeavingEstablishedTest, ClearsTheWatchedPaths) {
  establishWithAddPath();
  (void)feed(reflectedV4({vipA()}, {1}, kNodeB));
  (void)feed(reflectedV6(7, kNodeC));
  ASSERT_EQ(fsm().watchedPaths().size(), 2u);

  Actions actions = leave();
  EXPECT_NE(fsm().state(), SessionState::Established) << describe(actions);
  EXPECT_TRUE(fsm().watchedPaths().empty());
  EXPECT_EQ(changes(actions), 1u) << describe(actions);
  auto change = indexOf<WatchedPathsChanged>(actions);
  auto state = indexOf<StateChanged>(actions);
  ASSERT_TRUE(change && state) << describe(actions);
  EXPECT_LT(*state, *change) << describe(actions);
}

TEST_P(AddPathLeavingEstablishedTest, SaysNothingWhenNoPathWasKept) {
  establishWithAddPath();
  Actions actions = leave();
  EXPECT_NE(fsm().state(), SessionState::Established) << describe(actions);
  EXPECT_EQ(changes(actions), 0u) << describe(actions);
}

INSTANTIATE_TEST_SUITE_P(Ways, AddPathLeavingEstablishedTest,
                         ::testing::Values("closed", "hold timer", "stop", "bfd down",
                                           "notification", "yield", "malformed update"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), ' ', '_');
                           return name;
                         });

// A path added and the session lost in the same bytes: one report, after the state change.
TEST_F(AddPathTest, PathAddedAndSessionLostInOneBatchIsReportedOnce) {
  establishWithAddPath();
  Actions actions =
      fsm().onBytes(concat(bytesOf(reflectedV4({vipA()}, {1}, kNodeB), peerOptions_),
                           bytesOf(notification(ErrorCode::Cease, subcode::kPeerDeconfigured))));
  EXPECT_EQ(fsm().state(), SessionState::Idle);
  EXPECT_TRUE(fsm().watchedPaths().empty());
  EXPECT_EQ(changes(actions), 1u) << describe(actions);
}

// The next session starts from nothing, and tells the operator about the cap again.
TEST_F(AddPathTest, AReconnectedSessionStartsEmpty) {
  establishWithAddPath();
  std::vector<uint32_t> ids;
  for (uint32_t id = 1; id <= kMaxPathsPerWatchedPrefix + 1; ++id) {
    ids.push_back(id);
  }
  const UpdateMessage tooMany = reflectedV4(std::vector<Prefix>(ids.size(), vipA()), ids, kNodeB);
  EXPECT_EQ(actionsOf<Notice>(feed(tooMany)).size(), 1u);
  (void)fsm().onClosed("peer reset the connection");
  (void)fsm().onTimer(TimerKind::ConnectRetry);
  (void)fsm().onConnected(localV4());
  peerOptions_ = {};
  (void)feed(sendingPeerOpen());
  (void)feed(KeepaliveMessage{});
  ASSERT_EQ(fsm().state(), SessionState::Established);
  EXPECT_TRUE(fsm().watchedPaths().empty());
  peerOptions_.addPath = {kIpv4Unicast, kIpv6Unicast};
  EXPECT_EQ(actionsOf<Notice>(feed(tooMany)).size(), 1u);
  EXPECT_EQ(fsm().watchedPaths().at(vipA()).size(), kMaxPathsPerWatchedPrefix);
}

}  // namespace
}  // namespace vipd::bgp
