// Byte-exact vectors for every message type, both directions, each also framed byte by byte.
#include <gtest/gtest.h>

#include <string>

#include "bgp/codec.h"
#include "bgp/codec_test_support.h"

namespace vipd::bgp::test {
namespace {

const IpAddress kDoc1 = *IpAddress::parse("192.0.2.1");

// ---------------------------------------------------------------- OPEN

// What BIRD sends: every capability inside one optional parameter. This is also our encoding.
const Bytes kOpenBirdStyle = cat({
    kMarker,
    {0x00, 0x3B},                          // length 59
    {0x01},                                // type OPEN
    {0x04},                                // version 4
    {0xFD, 0xE9},                          // my AS 65001
    {0x00, 0x5A},                          // hold time 90
    {0xC0, 0x00, 0x02, 0x01},              // BGP identifier 192.0.2.1
    {0x1E},                                // optional parameters length 30
    {0x02, 0x1C},                          // parameter: capabilities, 28 bytes
    {0x01, 0x04, 0x00, 0x01, 0x00, 0x01},  // multiprotocol IPv4 unicast
    {0x01, 0x04, 0x00, 0x02, 0x00, 0x01},  // multiprotocol IPv6 unicast
    {0x02, 0x00},                          // route refresh
    {0x40, 0x06, 0x80, 0x78},              // graceful restart: R bit, restart time 120
    {0x00, 0x01, 0x01, 0x80},              //   IPv4 unicast, F bit
    {0x41, 0x04, 0x00, 0x00, 0xFD, 0xE9},  // 4-octet AS 65001
});

OpenMessage birdStyleOpen() {
  OpenMessage open;
  open.myAs = 65001;
  open.holdTimeSeconds = 90;
  open.bgpIdentifier = kDoc1.v4Value();
  open.capabilities.multiprotocol = {kIpv4Unicast, kIpv6Unicast};
  open.capabilities.routeRefresh = true;
  open.capabilities.gracefulRestart =
      GracefulRestartCapability{true, false, 120, {{kIpv4Unicast, true}}};
  open.capabilities.fourOctetAs = 65001;
  return open;
}

TEST(OpenCodec, BirdStyleSingleParameterBothWays) { expectVector(kOpenBirdStyle, birdStyleOpen()); }

// What FRR, ExaBGP and GoBGP send: one optional parameter per capability; FRR adds the old Cisco
// route refresh code and its hostname capability.
TEST(OpenCodec, FrrStyleOneParameterPerCapability) {
  const Bytes wire = cat({
      kMarker,
      {0x00, 0x4F},                                      // length 79
      {0x01},                                            // type OPEN
      {0x04},                                            // version 4
      {0xFD, 0xE9},                                      // my AS 65001
      {0x00, 0x5A},                                      // hold time 90
      {0xC0, 0x00, 0x02, 0x01},                          // BGP identifier 192.0.2.1
      {0x32},                                            // optional parameters length 50
      {0x02, 0x06, 0x01, 0x04, 0x00, 0x01, 0x00, 0x01},  // MP IPv4 unicast
      {0x02, 0x06, 0x01, 0x04, 0x00, 0x02, 0x00, 0x01},  // MP IPv6 unicast
      {0x02, 0x02, 0x80, 0x00},                          // Cisco route refresh (ignored)
      {0x02, 0x02, 0x02, 0x00},                          // route refresh
      {0x02, 0x08, 0x40, 0x06, 0x80, 0x78, 0x00, 0x01, 0x01, 0x80},  // GR as above
      {0x02, 0x06, 0x41, 0x04, 0x00, 0x00, 0xFD, 0xE9},              // 4-octet AS 65001
      {0x02, 0x06, 0x49, 0x04, 0x02, 'r', '1', 0x00},  // hostname "r1" (unknown to us)
  });
  OpenMessage expected = birdStyleOpen();
  expected.capabilities.unknown = {UnknownCapability{73, {0x02, 'r', '1', 0x00}}};
  expectDecodes(wire, expected);
  expectFramedByteByByte(wire);
}

// A peer without capabilities at all (old 2-octet-only speaker): no optional parameters.
TEST(OpenCodec, TwoOctetOnlyPeerWithoutParameters) {
  const Bytes wire = cat({
      kMarker,
      {0x00, 0x1D},              // length 29
      {0x01},                    // type OPEN
      {0x04},                    // version 4
      {0xFD, 0xE9},              // my AS 65001
      {0x00, 0xB4},              // hold time 180
      {0xC0, 0x00, 0x02, 0x02},  // BGP identifier 192.0.2.2
      {0x00},                    // optional parameters length 0
  });
  OpenMessage open;
  open.myAs = 65001;
  open.holdTimeSeconds = 180;
  open.bgpIdentifier = IpAddress::parse("192.0.2.2")->v4Value();
  expectVector(wire, open);
  EXPECT_FALSE(open.capabilities.fourOctetAs.has_value());
}

// A 4-octet ASN: AS_TRANS in My AS, the real one in the capability (RFC 6793 section 4.1).
TEST(OpenCodec, FourOctetAsUsesAsTrans) {
  const Bytes wire = cat({
      kMarker,
      {0x00, 0x25},                          // length 37
      {0x01},                                // type OPEN
      {0x04},                                // version 4
      {0x5B, 0xA0},                          // my AS 23456 (AS_TRANS)
      {0x00, 0x03},                          // hold time 3
      {0xC0, 0x00, 0x02, 0x01},              // BGP identifier 192.0.2.1
      {0x08},                                // optional parameters length 8
      {0x02, 0x06},                          // capabilities, 6 bytes
      {0x41, 0x04, 0xFA, 0x56, 0xEA, 0x01},  // 4-octet AS 4200000001
  });
  OpenMessage open;
  open.myAs = kAsTrans;
  open.holdTimeSeconds = 3;
  open.bgpIdentifier = kDoc1.v4Value();
  open.capabilities.fourOctetAs = 4200000001u;
  expectVector(wire, open);
}

TEST(OpenCodec, UnknownCapabilitiesAreKeptButIgnored) {
  const Bytes wire = withHeader(MessageType::Open, {
                                                       0x04, 0xFD, 0xE9, 0x00, 0x5A,  //
                                                       0xC0, 0x00, 0x02, 0x01,        //
                                                       0x0A, 0x02, 0x08,  // one param, 8 bytes
                                                       0x05, 0x00,        // ext. next hop, empty
                                                       0x46, 0x00,        // enhanced RR
                                                       0x47, 0x02, 0xAB, 0xCD,  // LLGR-ish
                                                   });
  auto decoded = decode(wire);
  ASSERT_TRUE(decoded.has_value()) << decoded.error().reason;
  const auto& caps = std::get<OpenMessage>(decoded->message).capabilities;
  EXPECT_EQ(caps.unknown, (std::vector<UnknownCapability>{{5, {}}, {70, {}}, {71, {0xAB, 0xCD}}}));
  EXPECT_TRUE(caps.multiprotocol.empty());
  EXPECT_FALSE(caps.routeRefresh);
  // Never sent back: encoding drops them.
  EXPECT_EQ(encode(decoded->message).size(), 29u);
}

// RFC 9072 extended optional parameters length: 255, 255, then 2-byte lengths throughout.
TEST(OpenCodec, ExtendedOptionalParametersLength) {
  const Bytes wire = cat({
      kMarker,
      {0x00, 0x29},                          // length 41
      {0x01},                                // type OPEN
      {0x04},                                // version 4
      {0xFD, 0xE9},                          // my AS 65001
      {0x00, 0x5A},                          // hold time 90
      {0xC0, 0x00, 0x02, 0x01},              // BGP identifier
      {0xFF},                                // non-ext length 255: escape
      {0xFF},                                // non-ext type 255: escape
      {0x00, 0x09},                          // extended optional parameters length 9
      {0x02, 0x00, 0x06},                    // capabilities, 2-byte length 6
      {0x01, 0x04, 0x00, 0x01, 0x00, 0x01},  // MP IPv4 unicast
  });
  OpenMessage open;
  open.myAs = 65001;
  open.holdTimeSeconds = 90;
  open.bgpIdentifier = kDoc1.v4Value();
  open.capabilities.multiprotocol = {kIpv4Unicast};
  expectDecodes(wire, open);
  expectFramedByteByByte(wire);
}

// Fixed OPEN fields before the optional parameters: version, AS 65001, hold 90, 192.0.2.1.
Bytes openBody(const Bytes& params, uint8_t version = 4) {
  return cat({{version, 0xFD, 0xE9, 0x00, 0x5A, 0xC0, 0x00, 0x02, 0x01},
              {static_cast<uint8_t>(params.size())},
              params});
}

// ---- ADD-PATH (RFC 7911 section 4) ----

// What vipd sends when it advertises ADD-PATH receive for both families: the capability last, one
// tuple per family.
TEST(OpenCodec, AddPathReceiveForBothFamiliesBothWays) {
  const Bytes wire = cat({
      kMarker,
      {0x00, 0x3D},                          // length 61
      {0x01},                                // type OPEN
      {0x04},                                // version 4
      {0xFD, 0xE9},                          // my AS 65001
      {0x00, 0x5A},                          // hold time 90
      {0xC0, 0x00, 0x02, 0x01},              // BGP identifier 192.0.2.1
      {0x20},                                // optional parameters length 32
      {0x02, 0x1E},                          // parameter: capabilities, 30 bytes
      {0x01, 0x04, 0x00, 0x01, 0x00, 0x01},  // multiprotocol IPv4 unicast
      {0x01, 0x04, 0x00, 0x02, 0x00, 0x01},  // multiprotocol IPv6 unicast
      {0x02, 0x00},                          // route refresh
      {0x41, 0x04, 0x00, 0x00, 0xFD, 0xE9},  // 4-octet AS 65001
      {0x45, 0x08},                          // ADD-PATH, 8 bytes
      {0x00, 0x01, 0x01, 0x01},              //   IPv4 unicast, receive
      {0x00, 0x02, 0x01, 0x01},              //   IPv6 unicast, receive
  });
  OpenMessage open;
  open.myAs = 65001;
  open.holdTimeSeconds = 90;
  open.bgpIdentifier = kDoc1.v4Value();
  open.capabilities.multiprotocol = {kIpv4Unicast, kIpv6Unicast};
  open.capabilities.routeRefresh = true;
  open.capabilities.fourOctetAs = 65001;
  open.capabilities.addPath = {{kIpv4Unicast, AddPathMode::Receive},
                               {kIpv6Unicast, AddPathMode::Receive}};
  expectVector(wire, open);
}

// What a route reflector configured to send all paths advertises. A family vipd does not speak
// is kept as sent, as multiprotocol capabilities are; the session ignores it.
TEST(OpenCodec, AddPathSendBothAndAnUnspokenFamilyBothWays) {
  const Bytes wire = cat({
      kMarker,
      {0x00, 0x2D},              // length 45
      {0x01},                    // type OPEN
      {0x04},                    // version 4
      {0xFD, 0xE9},              // my AS 65001
      {0x00, 0x5A},              // hold time 90
      {0xC0, 0x00, 0x02, 0x01},  // BGP identifier 192.0.2.1
      {0x10},                    // optional parameters length 16
      {0x02, 0x0E},              // parameter: capabilities, 14 bytes
      {0x45, 0x0C},              // ADD-PATH, 12 bytes
      {0x00, 0x01, 0x01, 0x02},  //   IPv4 unicast, send
      {0x00, 0x02, 0x01, 0x03},  //   IPv6 unicast, send and receive
      {0x00, 0x19, 0x46, 0x01},  //   AFI 25 (L2VPN) SAFI 70 (EVPN), receive
  });
  OpenMessage open;
  open.myAs = 65001;
  open.holdTimeSeconds = 90;
  open.bgpIdentifier = kDoc1.v4Value();
  open.capabilities.addPath = {
      {kIpv4Unicast, AddPathMode::Send},
      {kIpv6Unicast, AddPathMode::Both},
      {{static_cast<Afi>(25), static_cast<Safi>(70)}, AddPathMode::Receive}};
  expectVector(wire, open);
}

// FRR's layout: one parameter per capability, here two ADD-PATH capabilities. Their tuples are
// concatenated in order; we encode them back as one capability.
TEST(OpenCodec, TwoAddPathCapabilitiesAreConcatenated) {
  const Bytes wire = withHeader(MessageType::Open,
                                openBody({
                                    0x02, 0x06, 0x45, 0x04, 0x00, 0x01, 0x01, 0x01,  // IPv4 receive
                                    0x02, 0x06, 0x45, 0x04, 0x00, 0x02, 0x01, 0x02,  // IPv6 send
                                }));
  auto decoded = decode(wire);
  ASSERT_TRUE(decoded.has_value()) << decoded.error().reason;
  const auto& caps = std::get<OpenMessage>(decoded->message).capabilities;
  EXPECT_EQ(caps.addPath, (std::vector<AddPathFamily>{{kIpv4Unicast, AddPathMode::Receive},
                                                      {kIpv6Unicast, AddPathMode::Send}}));
  EXPECT_TRUE(caps.unknown.empty());
  expectFramedByteByByte(wire);
  const Bytes oneCapability =
      withHeader(MessageType::Open, openBody({0x02, 0x0A, 0x45, 0x08, 0x00, 0x01, 0x01, 0x01,  //
                                              0x00, 0x02, 0x01, 0x02}));
  EXPECT_EQ(encode(decoded->message), oneCapability);
}

// "one or more tuples", but none says nothing wrong either: accepted as advertising no family.
TEST(OpenCodec, AddPathWithNoTupleAdvertisesNothing) {
  auto decoded = decode(withHeader(MessageType::Open, openBody({0x02, 0x02, 0x45, 0x00})));
  ASSERT_TRUE(decoded.has_value()) << decoded.error().reason;
  const auto& caps = std::get<OpenMessage>(decoded->message).capabilities;
  EXPECT_TRUE(caps.addPath.empty());
  EXPECT_TRUE(caps.unknown.empty());
}

// RFC 7911 section 4: a Send/Receive value other than 1..3 makes the capability "not understood
// and ignored": all of it, the good tuple beside the bad one included. It is kept for the log only.
TEST(OpenCodec, AddPathModeOutsideOneToThreeIgnoresTheWholeCapability) {
  for (uint8_t mode : {0x00, 0x04, 0xFF}) {
    const Bytes value = {0x00, 0x01, 0x01, 0x01, 0x00, 0x02, 0x01, mode};
    auto decoded =
        decode(withHeader(MessageType::Open, openBody(cat({{0x02, 0x0A, 0x45, 0x08}, value}))));
    ASSERT_TRUE(decoded.has_value()) << decoded.error().reason;
    const auto& caps = std::get<OpenMessage>(decoded->message).capabilities;
    EXPECT_TRUE(caps.addPath.empty()) << "mode " << int{mode};
    EXPECT_EQ(caps.unknown, (std::vector<UnknownCapability>{{69, value}})) << "mode " << int{mode};
    EXPECT_EQ(encode(decoded->message).size(), 29u);  // nothing of it is sent back
  }
}

// A second, valid ADD-PATH capability still counts when another one is ignored.
TEST(OpenCodec, AddPathIgnoredCapabilityLeavesTheOthers) {
  auto decoded = decode(withHeader(MessageType::Open,
                                   openBody({
                                       0x02, 0x06, 0x45, 0x04, 0x00, 0x01, 0x01, 0x07,  // mode 7
                                       0x02, 0x06, 0x45, 0x04, 0x00, 0x02, 0x01, 0x03,  // IPv6 both
                                   })));
  ASSERT_TRUE(decoded.has_value()) << decoded.error().reason;
  const auto& caps = std::get<OpenMessage>(decoded->message).capabilities;
  EXPECT_EQ(caps.addPath, (std::vector<AddPathFamily>{{kIpv6Unicast, AddPathMode::Both}}));
  EXPECT_EQ(caps.unknown, (std::vector<UnknownCapability>{{69, {0x00, 0x01, 0x01, 0x07}}}));
}

TEST(OpenCodecDeath, TooManyAddPathFamiliesAborts) {
  OpenMessage open;
  open.bgpIdentifier = kDoc1.v4Value();
  // 64 tuples are 256 bytes: more than a capability length can say.
  for (int i = 0; i < 64; ++i) {
    open.capabilities.addPath.push_back(
        {{static_cast<Afi>(100 + i), Safi::Unicast}, AddPathMode::Receive});
  }
  EXPECT_DEATH(encode(open), "ADD-PATH capability lists too many families");
}

TEST(OpenErrors, UnsupportedVersionSendsOurVersion) {
  expectDecodeError(withHeader(MessageType::Open, openBody({}, 3)), ErrorCode::OpenMessage,
                    subcode::kUnsupportedVersionNumber, {0x00, 0x04});
}

TEST(OpenErrors, ZeroBgpIdentifier) {
  expectDecodeError(withHeader(MessageType::Open, {0x04, 0xFD, 0xE9, 0x00, 0x5A, 0, 0, 0, 0, 0}),
                    ErrorCode::OpenMessage, subcode::kBadBgpIdentifier, {});
}

TEST(OpenErrors, NonCapabilityParameterIsUnsupported) {
  // Type 1 (authentication, RFC 1771) with 2 bytes.
  expectDecodeError(withHeader(MessageType::Open, openBody({0x01, 0x02, 0xAA, 0xBB})),
                    ErrorCode::OpenMessage, subcode::kUnsupportedOptionalParameter, {});
}

TEST(OpenErrors, CapabilityLengthRunsPastParameter) {
  // Parameter of 4 bytes holding a capability that claims 6.
  expectDecodeError(withHeader(MessageType::Open, openBody({0x02, 0x04, 0x41, 0x06, 0x00, 0x00})),
                    ErrorCode::OpenMessage, 0, {});
}

TEST(OpenErrors, CapabilityCutBeforeItsLength) {
  expectDecodeError(withHeader(MessageType::Open, openBody({0x02, 0x01, 0x41})),
                    ErrorCode::OpenMessage, 0, {});
}

TEST(OpenErrors, ParameterLengthRunsPastParameters) {
  expectDecodeError(withHeader(MessageType::Open, openBody({0x02, 0x09, 0x02, 0x00})),
                    ErrorCode::OpenMessage, 0, {});
}

TEST(OpenErrors, OptionalParametersLengthDisagreesWithMessage) {
  // Says 8 bytes of parameters but only 4 follow.
  Bytes body = openBody({0x02, 0x02, 0x02, 0x00});
  body[9] = 8;
  expectDecodeError(withHeader(MessageType::Open, body), ErrorCode::OpenMessage, 0, {});
}

TEST(OpenErrors, MultiprotocolLengthNotFour) {
  expectDecodeError(
      withHeader(MessageType::Open, openBody({0x02, 0x05, 0x01, 0x03, 0x00, 0x01, 0x01})),
      ErrorCode::OpenMessage, 0, {});
}

TEST(OpenErrors, FourOctetAsLengthNotFour) {
  expectDecodeError(withHeader(MessageType::Open, openBody({0x02, 0x04, 0x41, 0x02, 0xFD, 0xE9})),
                    ErrorCode::OpenMessage, 0, {});
}

TEST(OpenErrors, GracefulRestartLengthNotTwoPlusFourN) {
  expectDecodeError(
      withHeader(MessageType::Open, openBody({0x02, 0x05, 0x40, 0x03, 0x00, 0x78, 0x00})),
      ErrorCode::OpenMessage, 0, {});
}

TEST(OpenErrors, RouteRefreshWithValue) {
  expectDecodeError(withHeader(MessageType::Open, openBody({0x02, 0x03, 0x02, 0x01, 0x00})),
                    ErrorCode::OpenMessage, 0, {});
}

// RFC 7911 says nothing of a length that is not whole tuples; like the other capabilities with a
// fixed layout (multiprotocol, graceful restart), it is an OPEN error 2/0.
TEST(OpenErrors, AddPathLengthNotMultipleOfFour) {
  for (const Bytes& value : {Bytes{0x00, 0x01, 0x01}, Bytes{0x00, 0x01, 0x01, 0x01, 0x00}}) {
    const Bytes capability = cat({{0x45, static_cast<uint8_t>(value.size())}, value});
    const Bytes param = cat({{0x02, static_cast<uint8_t>(capability.size())}, capability});
    expectDecodeError(withHeader(MessageType::Open, openBody(param)), ErrorCode::OpenMessage, 0,
                      {});
  }
}

// ---------------------------------------------------------------- NOTIFICATION etc.

TEST(NotificationCodec, CeaseWithShutdownCommunication) {
  const Bytes wire = cat({
      kMarker,
      {0x00, 0x21},  // length 33
      {0x03},        // type NOTIFICATION
      {0x06},        // code Cease
      {0x02},        // subcode Administrative Shutdown
      {0x0B},        // shutdown communication length 11 (RFC 9003)
      {'M', 'a', 'i', 'n', 't', 'e', 'n', 'a', 'n', 'c', 'e'},
  });
  NotificationMessage n{6, 2, encodeShutdownCommunication("Maintenance")};
  expectVector(wire, n);
  EXPECT_EQ(decodeShutdownCommunication(n.data), "Maintenance");
}

TEST(NotificationCodec, HoldTimerExpiredWithoutData) {
  const Bytes wire = cat({kMarker, {0x00, 0x15}, {0x03}, {0x04}, {0x00}});  // 21 bytes, 4/0
  expectVector(wire, NotificationMessage{4, 0, {}});
}

TEST(KeepaliveCodec, HeaderOnly) {
  expectVector(cat({kMarker, {0x00, 0x13}, {0x04}}), KeepaliveMessage{});
}

TEST(RouteRefreshCodec, Ipv4AndIpv6) {
  // AFI 1, reserved 0, SAFI 1 (RFC 2918 section 3).
  expectVector(cat({kMarker, {0x00, 0x17}, {0x05}, {0x00, 0x01}, {0x00}, {0x01}}),
               RouteRefreshMessage{kIpv4Unicast, 0});
  expectVector(cat({kMarker, {0x00, 0x17}, {0x05}, {0x00, 0x02}, {0x00}, {0x01}}),
               RouteRefreshMessage{kIpv6Unicast, 0});
}

TEST(ShutdownCommunication, TruncatesOnUtf8Boundary) {
  // 253 ASCII bytes and a 3-byte euro sign: 256 bytes; cutting at 255 would split the euro.
  const std::string text = std::string(253, 'a') + "\xE2\x82\xAC";
  const Bytes data = encodeShutdownCommunication(text);
  ASSERT_EQ(data[0], 253);
  EXPECT_EQ(data.size(), 254u);
  EXPECT_EQ(decodeShutdownCommunication(data), std::string(253, 'a'));
}

TEST(ShutdownCommunication, KeepsExactly255Bytes) {
  const std::string text(255, 'x');
  const Bytes data = encodeShutdownCommunication(text);
  EXPECT_EQ(data[0], 255);
  EXPECT_EQ(decodeShutdownCommunication(data), text);
}

TEST(ShutdownCommunication, MalformedLengths) {
  EXPECT_EQ(decodeShutdownCommunication({}), std::nullopt);
  EXPECT_EQ(decodeShutdownCommunication({0x05, 'a', 'b'}), std::nullopt);
  EXPECT_EQ(decodeShutdownCommunication({0x00}), std::string());
}

TEST(DescribeNotification, NamesCodeAndSubcode) {
  EXPECT_EQ(describeNotification(6, 2), "6/2 (Cease, Administrative Shutdown)");
  EXPECT_EQ(describeNotification(3, 1), "3/1 (UPDATE Message Error, Malformed Attribute List)");
  EXPECT_EQ(describeNotification(4, 0), "4/0 (Hold Timer Expired)");
  EXPECT_EQ(describeNotification(2, 99), "2/99 (OPEN Message Error, unknown subcode)");
  EXPECT_EQ(describeNotification(42, 1), "42/1 (unknown error code)");
}

// ---------------------------------------------------------------- UPDATE

TEST(UpdateCodec, Ipv4AnnounceWithCommunitiesAndLargeCommunities) {
  const Bytes wire = cat({
      kMarker,
      {0x00, 0x59},                                      // length 89
      {0x02},                                            // type UPDATE
      {0x00, 0x00},                                      // withdrawn routes length 0
      {0x00, 0x39},                                      // total path attribute length 57
      {0x40, 0x01, 0x01, 0x00},                          // ORIGIN IGP
      {0x40, 0x02, 0x0A, 0x02, 0x02},                    // AS_PATH: AS_SEQUENCE of 2
      {0x00, 0x00, 0xFD, 0xE9, 0x00, 0x00, 0xFD, 0xEA},  //   65001 65002
      {0x40, 0x03, 0x04, 0xC0, 0x00, 0x02, 0x01},        // NEXT_HOP 192.0.2.1
      {0x80, 0x04, 0x04, 0x00, 0x00, 0x00, 0x64},        // MED 100
      {0xC0, 0x08, 0x08},                                // COMMUNITIES, 8 bytes
      {0xFD, 0xE9, 0x00, 0x01},                          //   65001:1
      {0xFF, 0xFF, 0x00, 0x00},                          //   GRACEFUL_SHUTDOWN (RFC 8326)
      {0xC0, 0x20, 0x0C},                                // LARGE_COMMUNITIES, 12 bytes
      {0x00, 0x00, 0xFD, 0xE9, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02},  // 65001:1:2
      {0x20, 0xCB, 0x00, 0x71, 0x0A},  // NLRI 203.0.113.10/32
      {0x18, 0xC6, 0x33, 0x64},        // NLRI 198.51.100.0/24
  });
  UpdateMessage u;
  u.attributes.origin = Origin::Igp;
  u.attributes.asPath = AsPath{{AsPathSegment::Type::AsSequence, {65001, 65002}}};
  u.attributes.nextHop = kDoc1;
  u.attributes.med = 100;
  u.attributes.communities = std::vector<uint32_t>{(65001u << 16) | 1, kGracefulShutdownCommunity};
  u.attributes.largeCommunities = std::vector<LargeCommunity>{{65001, 1, 2}};
  u.nlri = {*Prefix::parse("203.0.113.10/32"), *Prefix::parse("198.51.100.0/24")};
  expectVector(wire, u);
}

// What a route reflector sends an iBGP client (RFC 4456): LOCAL_PREF, ORIGINATOR_ID naming the
// client the path came from, and CLUSTER_LIST with the reflector's cluster ID.
TEST(UpdateCodec, ReflectedIpv4PathWithOriginatorIdAndClusterList) {
  const Bytes wire = cat({
      kMarker,
      {0x00, 0x4A},                                // length 74
      {0x02},                                      // type UPDATE
      {0x00, 0x00},                                // withdrawn routes length 0
      {0x00, 0x2E},                                // total path attribute length 46
      {0x40, 0x01, 0x01, 0x00},                    // ORIGIN IGP
      {0x40, 0x02, 0x00},                          // AS_PATH empty (iBGP)
      {0x40, 0x03, 0x04, 0xC6, 0x33, 0x64, 0x0B},  // NEXT_HOP 198.51.100.11
      {0x40, 0x05, 0x04, 0x00, 0x00, 0x00, 0x64},  // LOCAL_PREF 100
      {0xC0, 0x08, 0x04, 0xFD, 0xE9, 0x00, 0x2A},  // COMMUNITIES 65001:42
      {0x80, 0x09, 0x04, 0xC0, 0x00, 0x02, 0x0B},  // ORIGINATOR_ID 192.0.2.11
      {0x80, 0x0A, 0x08},                          // CLUSTER_LIST, 8 bytes
      {0xC0, 0x00, 0x02, 0x01},                    //   192.0.2.1 (nearest reflector)
      {0xC0, 0x00, 0x02, 0x02},                    //   192.0.2.2
      {0x20, 0xCB, 0x00, 0x71, 0x0A},              // NLRI 203.0.113.10/32
  });
  UpdateMessage u;
  u.attributes.origin = Origin::Igp;
  u.attributes.asPath = AsPath{};
  u.attributes.nextHop = *IpAddress::parse("198.51.100.11");
  u.attributes.localPref = 100;
  u.attributes.communities = std::vector<uint32_t>{(65001u << 16) | 42};
  u.attributes.originatorId = 0xC000020B;
  u.attributes.clusterList = std::vector<uint32_t>{0xC0000201, 0xC0000202};
  u.nlri = {*Prefix::parse("203.0.113.10/32")};
  expectVector(wire, u);
  EXPECT_TRUE(u.attributes.other.empty());
}

// An empty CLUSTER_LIST would be malformed on receipt (RFC 7606 section 7.10): never sent.
TEST(UpdateCodec, EmptyClusterListIsNotEncoded) {
  UpdateMessage u;
  u.attributes.clusterList = std::vector<uint32_t>{};
  EXPECT_EQ(encode(u), encode(UpdateMessage{}));
}

TEST(UpdateCodec, Ipv4Withdraw) {
  const Bytes wire = cat({
      kMarker,
      {0x00, 0x1C},                    // length 28
      {0x02},                          // type UPDATE
      {0x00, 0x05},                    // withdrawn routes length 5
      {0x20, 0xCB, 0x00, 0x71, 0x0A},  // 203.0.113.10/32
      {0x00, 0x00},                    // total path attribute length 0
  });
  UpdateMessage u;
  u.withdrawn = {*Prefix::parse("203.0.113.10/32")};
  expectVector(wire, u);
  EXPECT_EQ(u.endOfRibFamily(), std::nullopt);
}

const Bytes kIpv6Global = {0x20, 0x01, 0x0D, 0xB8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01};
const Bytes kIpv6LinkLocal = {0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01};

TEST(UpdateCodec, MpReachIpv6GlobalNextHop) {
  const Bytes wire = cat({
      kMarker,
      {0x00, 0x43},                                            // length 67
      {0x02},                                                  // type UPDATE
      {0x00, 0x00},                                            // withdrawn routes length 0
      {0x00, 0x2C},                                            // total path attribute length 44
      {0x40, 0x01, 0x01, 0x00},                                // ORIGIN IGP
      {0x40, 0x02, 0x06, 0x02, 0x01, 0x00, 0x00, 0xFD, 0xE9},  // AS_PATH 65001
      {0x80, 0x0E, 0x1C},                                      // MP_REACH_NLRI, 28 bytes
      {0x00, 0x02, 0x01},                                      //   AFI IPv6, SAFI unicast
      {0x10},                                                  //   next hop length 16
      kIpv6Global,                                             //   2001:db8::1
      {0x00},                                                  //   reserved
      {0x30, 0x20, 0x01, 0x0D, 0xB8, 0x00, 0x10},              //   2001:db8:10::/48
  });
  UpdateMessage u;
  u.attributes.origin = Origin::Igp;
  u.attributes.asPath = AsPath{{AsPathSegment::Type::AsSequence, {65001}}};
  u.attributes.mpReach =
      MpReachNlri{kIpv6Unicast, kIpv6Global, {*Prefix::parse("2001:db8:10::/48")}};
  expectVector(wire, u);
}

TEST(UpdateCodec, MpReachIpv6GlobalAndLinkLocalNextHop) {
  const Bytes wire = cat({
      kMarker,
      {0x00, 0x5D},                                            // length 93
      {0x02},                                                  // type UPDATE
      {0x00, 0x00},                                            // withdrawn routes length 0
      {0x00, 0x46},                                            // total path attribute length 70
      {0x40, 0x01, 0x01, 0x02},                                // ORIGIN INCOMPLETE
      {0x40, 0x02, 0x06, 0x02, 0x01, 0x00, 0x00, 0xFD, 0xE9},  // AS_PATH 65001
      {0x80, 0x0E, 0x36},                                      // MP_REACH_NLRI, 54 bytes
      {0x00, 0x02, 0x01},                                      //   AFI IPv6, SAFI unicast
      {0x20},                                                  //   next hop length 32
      kIpv6Global,                                             //   2001:db8::1
      kIpv6LinkLocal,                                          //   fe80::1 (RFC 2545)
      {0x00},                                                  //   reserved
      {0x80},                                                  //   /128
      kIpv6Global,                                             //   2001:db8::1/128
  });
  UpdateMessage u;
  u.attributes.origin = Origin::Incomplete;
  u.attributes.asPath = AsPath{{AsPathSegment::Type::AsSequence, {65001}}};
  u.attributes.mpReach = MpReachNlri{
      kIpv6Unicast, cat({kIpv6Global, kIpv6LinkLocal}), {*Prefix::parse("2001:db8::1/128")}};
  expectVector(wire, u);
}

TEST(UpdateCodec, MpUnreachIpv6) {
  const Bytes wire = cat({
      kMarker,
      {0x00, 0x24},                                // length 36
      {0x02},                                      // type UPDATE
      {0x00, 0x00},                                // withdrawn routes length 0
      {0x00, 0x0D},                                // total path attribute length 13
      {0x80, 0x0F, 0x0A},                          // MP_UNREACH_NLRI, 10 bytes
      {0x00, 0x02, 0x01},                          //   AFI IPv6, SAFI unicast
      {0x30, 0x20, 0x01, 0x0D, 0xB8, 0x00, 0x10},  //   2001:db8:10::/48
  });
  UpdateMessage u;
  u.attributes.mpUnreach = MpUnreachNlri{kIpv6Unicast, {*Prefix::parse("2001:db8:10::/48")}};
  expectVector(wire, u);
  EXPECT_EQ(u.endOfRibFamily(), std::nullopt);
}

TEST(UpdateCodec, EndOfRibIpv4) {
  const Bytes wire = cat({kMarker, {0x00, 0x17}, {0x02}, {0x00, 0x00}, {0x00, 0x00}});
  expectVector(wire, UpdateMessage{});
  EXPECT_EQ(UpdateMessage{}.endOfRibFamily(), kIpv4Unicast);
}

TEST(UpdateCodec, EndOfRibIpv6) {
  const Bytes wire = cat({
      kMarker,
      {0x00, 0x1D},        // length 29
      {0x02},              // type UPDATE
      {0x00, 0x00},        // withdrawn routes length 0
      {0x00, 0x06},        // total path attribute length 6
      {0x80, 0x0F, 0x03},  // MP_UNREACH_NLRI, 3 bytes
      {0x00, 0x02, 0x01},  //   AFI IPv6, SAFI unicast, no prefixes
  });
  UpdateMessage u;
  u.attributes.mpUnreach = MpUnreachNlri{kIpv6Unicast, {}};
  expectVector(wire, u);
  auto decoded = decode(wire);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(std::get<UpdateMessage>(decoded->message).endOfRibFamily(), kIpv6Unicast);
}

// ---- ADD-PATH (RFC 7911 section 3): a 4-octet Path Identifier before each prefix ----

// Both families receive path identifiers, as a session that negotiated ADD-PATH decodes.
const CodecOptions kAddPathBoth{.fourOctetAs = true, .addPath = {kIpv4Unicast, kIpv6Unicast}};
const Bytes kVip6 = {0x20, 0x01, 0x0D, 0xB8, 0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10};

TEST(UpdateCodec, AddPathIpv4Nlri) {
  const Bytes wire = cat({
      kMarker,
      {0x00, 0x3C},                                            // length 60
      {0x02},                                                  // type UPDATE
      {0x00, 0x00},                                            // withdrawn routes length 0
      {0x00, 0x14},                                            // total path attribute length 20
      {0x40, 0x01, 0x01, 0x00},                                // ORIGIN IGP
      {0x40, 0x02, 0x06, 0x02, 0x01, 0x00, 0x00, 0xFD, 0xE9},  // AS_PATH 65001
      {0x40, 0x03, 0x04, 0xC0, 0x00, 0x02, 0x01},              // NEXT_HOP 192.0.2.1
      {0x00, 0x00, 0x00, 0x01},                                // path identifier 1
      {0x20, 0xCB, 0x00, 0x71, 0x0A},                          //   203.0.113.10/32
      {0x00, 0x00, 0x00, 0x07},                                // path identifier 7
      {0x18, 0xC6, 0x33, 0x64},                                //   198.51.100.0/24
  });
  UpdateMessage u;
  u.attributes.origin = Origin::Igp;
  u.attributes.asPath = AsPath{{AsPathSegment::Type::AsSequence, {65001}}};
  u.attributes.nextHop = kDoc1;
  u.nlri = {*Prefix::parse("203.0.113.10/32"), *Prefix::parse("198.51.100.0/24")};
  u.nlriPathIds = {1, 7};
  expectVector(wire, u, kAddPathBoth);
}

// Two paths of one prefix withdrawn: only the path identifier tells them apart.
TEST(UpdateCodec, AddPathIpv4Withdrawn) {
  const Bytes wire = cat({
      kMarker,
      {0x00, 0x29},                    // length 41
      {0x02},                          // type UPDATE
      {0x00, 0x12},                    // withdrawn routes length 18
      {0x00, 0x00, 0x00, 0x02},        // path identifier 2
      {0x20, 0xCB, 0x00, 0x71, 0x0A},  //   203.0.113.10/32
      {0x00, 0x00, 0x00, 0x03},        // path identifier 3
      {0x20, 0xCB, 0x00, 0x71, 0x0A},  //   203.0.113.10/32
      {0x00, 0x00},                    // total path attribute length 0
  });
  UpdateMessage u;
  u.withdrawn = {*Prefix::parse("203.0.113.10/32"), *Prefix::parse("203.0.113.10/32")};
  u.withdrawnPathIds = {2, 3};
  expectVector(wire, u, kAddPathBoth);
  EXPECT_EQ(u.endOfRibFamily(), std::nullopt);
}

TEST(UpdateCodec, AddPathMpReachIpv6) {
  const Bytes wire = cat({
      kMarker,
      {0x00, 0x51},                                            // length 81
      {0x02},                                                  // type UPDATE
      {0x00, 0x00},                                            // withdrawn routes length 0
      {0x00, 0x3A},                                            // total path attribute length 58
      {0x40, 0x01, 0x01, 0x00},                                // ORIGIN IGP
      {0x40, 0x02, 0x06, 0x02, 0x01, 0x00, 0x00, 0xFD, 0xE9},  // AS_PATH 65001
      {0x80, 0x0E, 0x2A},                                      // MP_REACH_NLRI, 42 bytes
      {0x00, 0x02, 0x01},                                      //   AFI IPv6, SAFI unicast
      {0x10},                                                  //   next hop length 16
      kIpv6Global,                                             //   2001:db8::1
      {0x00},                                                  //   reserved
      {0x0A, 0x0B, 0x0C, 0x0D},                                //   path identifier 0x0a0b0c0d
      {0x80},                                                  //   /128
      kVip6,                                                   //   2001:db8:ffff::10/128
  });
  UpdateMessage u;
  u.attributes.origin = Origin::Igp;
  u.attributes.asPath = AsPath{{AsPathSegment::Type::AsSequence, {65001}}};
  u.attributes.mpReach = MpReachNlri{
      kIpv6Unicast, kIpv6Global, {*Prefix::parse("2001:db8:ffff::10/128")}, {0x0A0B0C0D}};
  expectVector(wire, u, kAddPathBoth);
}

TEST(UpdateCodec, AddPathMpUnreachIpv6) {
  const Bytes wire = cat({
      kMarker,
      {0x00, 0x3D},                                // length 61
      {0x02},                                      // type UPDATE
      {0x00, 0x00},                                // withdrawn routes length 0
      {0x00, 0x26},                                // total path attribute length 38
      {0x80, 0x0F, 0x23},                          // MP_UNREACH_NLRI, 35 bytes
      {0x00, 0x02, 0x01},                          //   AFI IPv6, SAFI unicast
      {0x00, 0x00, 0x00, 0x01},                    //   path identifier 1
      {0x80},                                      //   /128
      kVip6,                                       //   2001:db8:ffff::10/128
      {0x00, 0x00, 0x00, 0x02},                    //   path identifier 2
      {0x30, 0x20, 0x01, 0x0D, 0xB8, 0x00, 0x10},  //   2001:db8:10::/48
  });
  UpdateMessage u;
  u.attributes.mpUnreach =
      MpUnreachNlri{kIpv6Unicast,
                    {*Prefix::parse("2001:db8:ffff::10/128"), *Prefix::parse("2001:db8:10::/48")},
                    {1, 2}};
  expectVector(wire, u, kAddPathBoth);
  EXPECT_EQ(u.endOfRibFamily(), std::nullopt);
}

// ADD-PATH is per family: here only IPv6 carries path identifiers, the IPv4 NLRI field does not.
TEST(UpdateCodec, AddPathOnlyInTheFamilyThatNegotiatedIt) {
  const Bytes wire = cat({
      kMarker,
      {0x00, 0x5D},                                            // length 93
      {0x02},                                                  // type UPDATE
      {0x00, 0x00},                                            // withdrawn routes length 0
      {0x00, 0x41},                                            // total path attribute length 65
      {0x40, 0x01, 0x01, 0x00},                                // ORIGIN IGP
      {0x40, 0x02, 0x06, 0x02, 0x01, 0x00, 0x00, 0xFD, 0xE9},  // AS_PATH 65001
      {0x40, 0x03, 0x04, 0xC0, 0x00, 0x02, 0x01},              // NEXT_HOP 192.0.2.1
      {0x80, 0x0E, 0x2A},                                      // MP_REACH_NLRI, 42 bytes
      {0x00, 0x02, 0x01},                                      //   AFI IPv6, SAFI unicast
      {0x10},                                                  //   next hop length 16
      kIpv6Global,                                             //   2001:db8::1
      {0x00},                                                  //   reserved
      {0x00, 0x00, 0x00, 0x05},                                //   path identifier 5
      {0x80},                                                  //   /128
      kVip6,                                                   //   2001:db8:ffff::10/128
      {0x20, 0xCB, 0x00, 0x71, 0x0A},  // NLRI 203.0.113.10/32, no path identifier
  });
  UpdateMessage u;
  u.attributes.origin = Origin::Igp;
  u.attributes.asPath = AsPath{{AsPathSegment::Type::AsSequence, {65001}}};
  u.attributes.nextHop = kDoc1;
  u.attributes.mpReach =
      MpReachNlri{kIpv6Unicast, kIpv6Global, {*Prefix::parse("2001:db8:ffff::10/128")}, {5}};
  u.nlri = {*Prefix::parse("203.0.113.10/32")};
  expectVector(wire, u, CodecOptions{.fourOctetAs = true, .addPath = {kIpv6Unicast}});
}

// RFC 7911 leaves End-of-RIB as it is: no prefixes, so no path identifiers.
TEST(UpdateCodec, EndOfRibWithAddPath) {
  const Bytes ipv4 = cat({kMarker, {0x00, 0x17}, {0x02}, {0x00, 0x00}, {0x00, 0x00}});
  expectVector(ipv4, UpdateMessage{}, kAddPathBoth);
  const Bytes ipv6 = cat({
      kMarker,
      {0x00, 0x1D},        // length 29
      {0x02},              // type UPDATE
      {0x00, 0x00},        // withdrawn routes length 0
      {0x00, 0x06},        // total path attribute length 6
      {0x80, 0x0F, 0x03},  // MP_UNREACH_NLRI, 3 bytes
      {0x00, 0x02, 0x01},  //   AFI IPv6, SAFI unicast, no prefixes
  });
  UpdateMessage eor;
  eor.attributes.mpUnreach = MpUnreachNlri{kIpv6Unicast, {}};
  expectVector(ipv6, eor, kAddPathBoth);
  for (const auto& [wire, family] :
       {std::pair{ipv4, kIpv4Unicast}, std::pair{ipv6, kIpv6Unicast}}) {
    auto decoded = decode(wire, kAddPathBoth);
    ASSERT_TRUE(decoded.has_value()) << decoded.error().reason;
    EXPECT_EQ(std::get<UpdateMessage>(decoded->message).endOfRibFamily(), family);
  }
}

// The message values must match the options they are encoded with: our own bug otherwise.
TEST(UpdateCodecDeath, PathIdsWithoutAddPathAbort) {
  UpdateMessage u;
  u.withdrawn = {*Prefix::parse("203.0.113.10/32")};
  u.withdrawnPathIds = {1};
  EXPECT_DEATH(encode(u), "1 path identifiers for 1 prefixes of AFI 1 SAFI 1, which does not");
}

TEST(UpdateCodecDeath, AddPathWithoutPathIdsAborts) {
  UpdateMessage u;
  u.attributes.mpUnreach = MpUnreachNlri{kIpv6Unicast, {*Prefix::parse("2001:db8:10::/48")}};
  EXPECT_DEATH(encode(u, kAddPathBoth), "0 path identifiers for 1 prefixes of AFI 2 SAFI 1");
}

TEST(UpdateCodec, EndOfRibNeedsNothingElse) {
  UpdateMessage u;
  u.attributes.mpUnreach = MpUnreachNlri{kIpv6Unicast, {}};
  u.attributes.origin = Origin::Igp;
  EXPECT_EQ(u.endOfRibFamily(), std::nullopt);
}

// RFC 6793 section 4.2.2: towards a 2-octet peer, big ASNs become AS_TRANS and AS4_PATH carries
// the real path.
TEST(UpdateCodec, TwoOctetPeerGetsAsTransAndAs4Path) {
  const Bytes wire = cat({
      kMarker,
      {0x00, 0x3D},                                            // length 61
      {0x02},                                                  // type UPDATE
      {0x00, 0x00},                                            // withdrawn routes length 0
      {0x00, 0x21},                                            // total path attribute length 33
      {0x40, 0x01, 0x01, 0x00},                                // ORIGIN IGP
      {0x40, 0x02, 0x06, 0x02, 0x02, 0x5B, 0xA0, 0xFD, 0xEA},  // AS_PATH 23456 65002
      {0x40, 0x03, 0x04, 0xC0, 0x00, 0x02, 0x01},              // NEXT_HOP 192.0.2.1
      {0xC0, 0x11, 0x0A, 0x02, 0x02},                          // AS4_PATH: AS_SEQUENCE of 2
      {0xFA, 0x56, 0xEA, 0x01, 0x00, 0x00, 0xFD, 0xEA},        //   4200000001 65002
      {0x20, 0xCB, 0x00, 0x71, 0x0A},                          // NLRI 203.0.113.10/32
  });
  const CodecOptions twoOctet{.fourOctetAs = false};
  UpdateMessage sent;
  sent.attributes.origin = Origin::Igp;
  sent.attributes.asPath = AsPath{{AsPathSegment::Type::AsSequence, {4200000001u, 65002}}};
  sent.attributes.nextHop = kDoc1;
  sent.nlri = {*Prefix::parse("203.0.113.10/32")};
  EXPECT_EQ(encode(sent, twoOctet), wire);

  // Decoding keeps both paths as sent; reconciling them is for whoever reads the path.
  UpdateMessage received = sent;
  received.attributes.asPath = AsPath{{AsPathSegment::Type::AsSequence, {kAsTrans, 65002}}};
  received.attributes.as4Path = AsPath{{AsPathSegment::Type::AsSequence, {4200000001u, 65002}}};
  expectDecodes(wire, received, twoOctet);
  EXPECT_EQ(encode(received, twoOctet), wire);
  expectFramedByteByByte(wire);
}

TEST(UpdateCodec, TwoOctetPeerWithSmallAsnsGetsNoAs4Path) {
  const Bytes wire = cat({
      kMarker,
      {0x00, 0x2E},                                // length 46
      {0x02},                                      // type UPDATE
      {0x00, 0x00},                                // withdrawn routes length 0
      {0x00, 0x12},                                // total path attribute length 18
      {0x40, 0x01, 0x01, 0x00},                    // ORIGIN IGP
      {0x40, 0x02, 0x04, 0x02, 0x01, 0xFD, 0xE9},  // AS_PATH 65001, 2-byte
      {0x40, 0x03, 0x04, 0xC0, 0x00, 0x02, 0x01},  // NEXT_HOP 192.0.2.1
      {0x20, 0xCB, 0x00, 0x71, 0x0A},              // NLRI 203.0.113.10/32
  });
  UpdateMessage u;
  u.attributes.origin = Origin::Igp;
  u.attributes.asPath = AsPath{{AsPathSegment::Type::AsSequence, {65001}}};
  u.attributes.nextHop = kDoc1;
  u.nlri = {*Prefix::parse("203.0.113.10/32")};
  expectVector(wire, u, CodecOptions{.fourOctetAs = false});
}

// FRR sets the extended-length flag on AS_PATH even when short.
TEST(UpdateCodec, AcceptsExtendedLengthAsPath) {
  const Bytes wire = updateMessage(
      {},
      cat({
          {0x40, 0x01, 0x01, 0x00},                                      // ORIGIN IGP
          {0x50, 0x02, 0x00, 0x06, 0x02, 0x01, 0x00, 0x00, 0xFD, 0xE9},  // AS_PATH, ext. length
          {0x40, 0x03, 0x04, 0xC0, 0x00, 0x02, 0x01},                    // NEXT_HOP 192.0.2.1
      }),
      {0x20, 0xCB, 0x00, 0x71, 0x0A});
  UpdateMessage u;
  u.attributes.origin = Origin::Igp;
  u.attributes.asPath = AsPath{{AsPathSegment::Type::AsSequence, {65001}}};
  u.attributes.nextHop = kDoc1;
  u.nlri = {*Prefix::parse("203.0.113.10/32")};
  expectDecodes(wire, u);
  expectFramedByteByByte(wire);
}

// Values over 255 bytes need the extended-length flag and a 2-byte length.
TEST(UpdateCodec, LongAttributeUsesExtendedLength) {
  UpdateMessage u;
  u.attributes.communities = std::vector<uint32_t>(70, 0xFDE90001);  // 280 bytes
  Bytes value;
  for (int i = 0; i < 70; ++i) {
    value.insert(value.end(), {0xFD, 0xE9, 0x00, 0x01});
  }
  const Bytes wire = updateMessage({}, cat({{0xD0, 0x08, 0x01, 0x18}, value}), {});
  expectVector(wire, u);
}

// Raw attributes are written as given, in type-code order among the others.
TEST(UpdateCodec, RawAttributesInTypeOrder) {
  UpdateMessage u;
  u.attributes.origin = Origin::Egp;
  u.attributes.other = {RawAttribute{0xC0, 99, {0x01, 0x02}},
                        RawAttribute{0xC0, 7, {0x00, 0x00, 0xFD, 0xE9, 0xC0, 0x00, 0x02, 0x01}}};
  const Bytes wire = updateMessage(
      {},
      cat({
          {0x40, 0x01, 0x01, 0x01},                                            // ORIGIN EGP
          {0xC0, 0x07, 0x08, 0x00, 0x00, 0xFD, 0xE9, 0xC0, 0x00, 0x02, 0x01},  // AGGREGATOR
          {0xC0, 0x63, 0x02, 0x01, 0x02},                                      // type 99
      }),
      {});
  EXPECT_EQ(encode(u), wire);
  auto decoded = decode(wire);
  ASSERT_TRUE(decoded.has_value());
  auto& got = std::get<UpdateMessage>(decoded->message);
  EXPECT_EQ(got.attributes.origin, Origin::Egp);
  EXPECT_EQ(got.attributes.other.size(), 2u);
  expectFramedByteByByte(wire);
}

TEST(UpdateCodec, PrefixHostBitsAreMaskedOnDecode) {
  // 198.51.103.7/22 on the wire: the trailing bits must not survive.
  const Bytes wire = updateMessage({0x16, 0xC6, 0x33, 0x67}, {}, {});
  auto decoded = decode(wire);
  ASSERT_TRUE(decoded.has_value()) << decoded.error().reason;
  EXPECT_EQ(std::get<UpdateMessage>(decoded->message).withdrawn,
            std::vector<Prefix>{*Prefix::parse("198.51.100.0/22")});
}

TEST(UpdateCodecDeath, OversizedMessageAborts) {
  UpdateMessage u;
  for (int i = 0; i < 1100; ++i) {  // 5 bytes each
    u.nlri.push_back(Prefix{IpAddress::v4(0x0A000000u + (i << 8)), 24});
  }
  EXPECT_DEATH(encode(u), "over the 4096 limit");
}

}  // namespace
}  // namespace vipd::bgp::test
