// UPDATE error handling: one test per malformation, RFC 4271 section 6.3 as revised by RFC 7606.
// Session resets assert the NOTIFICATION's code, subcode and data; the gentler outcomes assert
// the handling, what survived, and the note.
#include <gtest/gtest.h>

#include <string>

#include "bgp/codec.h"
#include "bgp/codec_test_support.h"

namespace vipd::bgp::test {
namespace {

const Bytes kOrigin = {0x40, 0x01, 0x01, 0x00};                                // ORIGIN IGP
const Bytes kAsPath = {0x40, 0x02, 0x06, 0x02, 0x01, 0x00, 0x00, 0xFD, 0xE9};  // AS_PATH 65001
const Bytes kNextHop = {0x40, 0x03, 0x04, 0xC0, 0x00, 0x02, 0x01};             // 192.0.2.1
const Bytes kMandatory = cat({kOrigin, kAsPath, kNextHop});
const Bytes kNlri = {0x20, 0xCB, 0x00, 0x71, 0x0A};  // 203.0.113.10/32
// MP_REACH_NLRI IPv6 unicast, next hop 2001:db8::1, 2001:db8:10::/48.
const Bytes kMpReach = {0x80, 0x0E, 0x1C, 0x00, 0x02, 0x01, 0x10, 0x20, 0x01, 0x0D, 0xB8,
                        0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,
                        0x01, 0x00, 0x30, 0x20, 0x01, 0x0D, 0xB8, 0x00, 0x10};
const Bytes kMpUnreach = {0x80, 0x0F, 0x03, 0x00, 0x02, 0x01};

const UpdateMessage& decodedUpdate(const DecodedMessage& d) {
  return std::get<UpdateMessage>(d.message);
}

// Decodes an announcement whose attributes are `attributes` and expects `handling` plus a note
// containing `noteText`.
DecodedMessage expectHandling(const Bytes& attributes, UpdateHandling handling,
                              const std::string& noteText, const Bytes& nlri = kNlri,
                              const CodecOptions& options = {}) {
  auto decoded = decode(updateMessage({}, attributes, nlri), options);
  EXPECT_TRUE(decoded.has_value()) << (decoded ? "" : decoded.error().reason);
  if (!decoded) {
    return {};
  }
  EXPECT_EQ(decoded->handling, handling);
  bool found = false;
  for (const auto& note : decoded->notes) {
    found = found || note.find(noteText) != std::string::npos;
  }
  EXPECT_TRUE(found) << "no note mentions '" << noteText << "'";
  return *decoded;
}

void expectResetUpdate(const Bytes& wire, uint8_t sub, const Bytes& data = {},
                       const CodecOptions& options = {}) {
  expectDecodeError(wire, ErrorCode::UpdateMessage, sub, data, options);
}

// ---- lengths: session reset (RFC 4271 section 6.3, RFC 7606 section 4) ----

TEST(UpdateValidation, WithdrawnLengthOverrunsMessage) {
  expectResetUpdate(withHeader(MessageType::Update, {0x00, 0x09, 0x00, 0x00}),
                    subcode::kMalformedAttributeList);
}

TEST(UpdateValidation, TotalAttributeLengthOverrunsMessage) {
  expectResetUpdate(withHeader(MessageType::Update, {0x00, 0x00, 0x00, 0x05, 0x40, 0x01}),
                    subcode::kMalformedAttributeList);
}

TEST(UpdateValidation, AttributeLengthRunsPastAttributeListIsTreatAsWithdraw) {
  // LOCAL_PREF claims 5 bytes but the attribute list ends after 4: RFC 7606 section 4.
  auto d = expectHandling(cat({kMandatory, {0x40, 0x05, 0x05, 0, 0, 0, 100}}),
                          UpdateHandling::TreatAsWithdraw, "runs past the attribute list");
  // The NLRI is still located through the Total Attribute Length.
  ASSERT_EQ(decodedUpdate(d).nlri.size(), 1u);
}

TEST(UpdateValidation, ExtendedLengthRunsPastAttributeListIsTreatAsWithdraw) {
  expectHandling(cat({kMandatory, {0x50, 0x08, 0x01, 0x00, 0x02}}),
                 UpdateHandling::TreatAsWithdraw, "runs past the attribute list");
}

TEST(UpdateValidation, AttributeHeaderCutOffIsTreatAsWithdraw) {
  expectHandling(cat({kMandatory, {0x40, 0x02}}), UpdateHandling::TreatAsWithdraw,
                 "header cut off");
}

TEST(UpdateValidation, MpReachRunningPastAttributeListResets) {
  // MP_REACH_NLRI claims 0x30 bytes; its routes cannot be found, so they cannot be withdrawn.
  Bytes truncated(kMpReach.begin(), kMpReach.begin() + 10);
  truncated[2] = 0x30;
  expectResetUpdate(updateMessage({}, cat({kOrigin, kAsPath, truncated}), {}),
                    subcode::kMalformedAttributeList);
}

// ---- NLRI fields: session reset 3/10 (RFC 7606 section 5.3) ----

TEST(UpdateValidation, NlriPrefixLengthOver32) {
  expectResetUpdate(updateMessage({}, kMandatory, {0x21, 0xCB, 0x00, 0x71, 0x0A, 0x00}),
                    subcode::kInvalidNetworkField);
}

TEST(UpdateValidation, NlriPrefixOverrunsMessage) {
  expectResetUpdate(updateMessage({}, kMandatory, {0x18, 0xC6, 0x33}),
                    subcode::kInvalidNetworkField);
}

TEST(UpdateValidation, WithdrawnPrefixLengthOver32) {
  expectResetUpdate(updateMessage({0x28, 1, 2, 3, 4, 5}, {}, {}), subcode::kInvalidNetworkField);
}

// ---- ADD-PATH NLRI (RFC 7911 section 3) malformed: as any bad NLRI (RFC 7606 section 5.3) ----

const CodecOptions kAddPath{.fourOctetAs = true, .addPath = {kIpv4Unicast, kIpv6Unicast}};

// A session reset whose reason names what was wrong.
void expectAddPathReset(const Bytes& wire, uint8_t sub, const std::string& why) {
  expectResetUpdate(wire, sub, {}, kAddPath);
  auto decoded = decode(wire, kAddPath);
  if (!decoded) {
    EXPECT_NE(decoded.error().reason.find(why), std::string::npos) << decoded.error().reason;
  }
}

TEST(UpdateValidation, AddPathNlriPathIdCutOff) {
  expectAddPathReset(updateMessage({}, kMandatory, cat({{0, 0, 0, 1}, kNlri, {0, 0, 0}})),
                     subcode::kInvalidNetworkField,
                     "NLRI: path identifier cut off: 3 bytes remain");
}

TEST(UpdateValidation, AddPathNlriPathIdWithoutPrefix) {
  expectAddPathReset(updateMessage({}, kMandatory, {0, 0, 0, 1}), subcode::kInvalidNetworkField,
                     "NLRI: path identifier 1 is not followed by a prefix");
}

TEST(UpdateValidation, AddPathNlriPrefixCutOffAfterPathId) {
  expectAddPathReset(updateMessage({}, kMandatory, {0, 0, 0, 1, 0x20, 0xCB, 0x00}),
                     subcode::kInvalidNetworkField,
                     "NLRI: a /32 prefix needs 4 bytes but only 2 remain");
}

TEST(UpdateValidation, AddPathNlriPrefixLengthOver32AfterPathId) {
  expectAddPathReset(updateMessage({}, kMandatory, {0, 0, 0, 1, 0x21, 0xCB, 0x00, 0x71, 0x0A, 0}),
                     subcode::kInvalidNetworkField, "NLRI: prefix length 33 exceeds 32");
}

TEST(UpdateValidation, AddPathWithdrawnPathIdCutOff) {
  expectAddPathReset(updateMessage({0, 0}, {}, {}), subcode::kInvalidNetworkField,
                     "withdrawn routes: path identifier cut off: 2 bytes remain");
}

TEST(UpdateValidation, AddPathWithdrawnPathIdWithoutPrefix) {
  expectAddPathReset(updateMessage(cat({{0, 0, 0, 2}, kNlri, {0, 0, 0, 3}}), {}, {}),
                     subcode::kInvalidNetworkField,
                     "withdrawn routes: path identifier 3 is not followed");
}

// An NLRI field written without path identifiers, read by a session that expects them: the first
// four bytes (20 cb 00 71) are taken for an identifier, the fifth (0a) for a /10 prefix.
TEST(UpdateValidation, NlriWithoutPathIdsWhereAddPathWasNegotiated) {
  expectAddPathReset(updateMessage({}, kMandatory, kNlri), subcode::kInvalidNetworkField,
                     "NLRI: a /10 prefix needs 2 bytes but only 0 remain");
}

// MP_REACH_NLRI / MP_UNREACH_NLRI whose NLRI cannot be read reset the session with 3/1, as
// without ADD-PATH (RFC 7606 section 7.11).
TEST(UpdateValidation, AddPathMpReachPathIdCutOff) {
  // IPv6 unicast, next hop 2001:db8::1, then 3 bytes of a path identifier.
  const Bytes mp = {0x80, 0x0E, 0x18, 0x00, 0x02, 0x01, 0x10, 0x20, 0x01, 0x0D, 0xB8, 0, 0, 0,
                    0,    0,    0,    0,    0,    0,    0,    0,    0x01, 0x00, 0,    0, 0};
  expectAddPathReset(updateMessage({}, cat({kOrigin, kAsPath, mp}), {}),
                     subcode::kMalformedAttributeList,
                     "MP_REACH_NLRI: path identifier cut off: 3 bytes remain");
}

TEST(UpdateValidation, AddPathMpReachPrefixCutOffAfterPathId) {
  // As kMpReach (2001:db8:10::/48 needs 6 bytes) with a path identifier and 2 prefix bytes.
  const Bytes mp = {0x80, 0x0E, 0x1C, 0x00, 0x02, 0x01, 0x10, 0x20, 0x01, 0x0D, 0xB8,
                    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,
                    0x01, 0x00, 0,    0,    0,    0x01, 0x30, 0x20, 0x01};
  expectAddPathReset(updateMessage({}, cat({kOrigin, kAsPath, mp}), {}),
                     subcode::kMalformedAttributeList,
                     "MP_REACH_NLRI: a /48 prefix needs 6 bytes but only 2");
}

TEST(UpdateValidation, AddPathMpUnreachPathIdCutOff) {
  expectAddPathReset(updateMessage({}, {0x80, 0x0F, 0x05, 0x00, 0x02, 0x01, 0x00, 0x00}, {}),
                     subcode::kMalformedAttributeList,
                     "MP_UNREACH_NLRI: path identifier cut off: 2 bytes remain");
}

TEST(UpdateValidation, AddPathMpUnreachPathIdWithoutPrefix) {
  expectAddPathReset(updateMessage({}, {0x80, 0x0F, 0x07, 0x00, 0x02, 0x01, 0, 0, 0, 1}, {}),
                     subcode::kMalformedAttributeList,
                     "MP_UNREACH_NLRI: path identifier 1 is not followed");
}

// Treat-as-withdraw still needs the NLRI: they are parsed, path identifiers included.
TEST(UpdateValidation, AddPathTreatAsWithdrawKeepsNlriAndPathIds) {
  auto decoded = decode(updateMessage({}, cat({kMandatory, {0x80, 0x04, 0x02, 0x00, 0x64}}),
                                      cat({{0, 0, 0, 9}, kNlri})),
                        kAddPath);
  ASSERT_TRUE(decoded.has_value()) << decoded.error().reason;
  EXPECT_EQ(decoded->handling, UpdateHandling::TreatAsWithdraw);
  EXPECT_EQ(decodedUpdate(*decoded).nlri.size(), 1u);
  EXPECT_EQ(decodedUpdate(*decoded).nlriPathIds, std::vector<uint32_t>{9});
}

// ---- duplicates (RFC 7606 section 3(g)) ----

TEST(UpdateValidation, DuplicateMpReachResets) {
  expectResetUpdate(updateMessage({}, cat({kOrigin, kAsPath, kMpReach, kMpReach}), {}),
                    subcode::kMalformedAttributeList);
}

TEST(UpdateValidation, DuplicateMpUnreachResets) {
  expectResetUpdate(updateMessage({}, cat({kMpUnreach, kMpUnreach}), {}),
                    subcode::kMalformedAttributeList);
}

TEST(UpdateValidation, DuplicateOriginKeepsFirst) {
  auto d = expectHandling(cat({kMandatory, {0x40, 0x01, 0x01, 0x02}}),
                          UpdateHandling::AttributeDiscard, "duplicate ORIGIN");
  EXPECT_EQ(decodedUpdate(d).attributes.origin, Origin::Igp);
  EXPECT_EQ(decodedUpdate(d).nlri.size(), 1u);
}

// ---- unrecognized well-known: 3/2 with the attribute as data ----

TEST(UpdateValidation, UnrecognizedWellKnownAttribute) {
  expectResetUpdate(updateMessage({}, cat({kMandatory, {0x40, 0x63, 0x01, 0xAA}}), kNlri),
                    subcode::kUnrecognizedWellKnownAttribute, {0x40, 0x63, 0x01, 0xAA});
}

TEST(UpdateValidation, UnknownOptionalAttributeIsKept) {
  auto decoded = decode(updateMessage({}, cat({kMandatory, {0xC0, 0x63, 0x01, 0xAA}}), kNlri));
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->handling, UpdateHandling::Normal);
  EXPECT_EQ(decodedUpdate(*decoded).attributes.other,
            (std::vector<RawAttribute>{RawAttribute{0xC0, 0x63, {0xAA}}}));
}

// ---- treat-as-withdraw (RFC 7606 section 7) ----

TEST(UpdateValidation, OriginWrongFlags) {
  expectHandling(cat({{0xC0, 0x01, 0x01, 0x00}, kAsPath, kNextHop}),
                 UpdateHandling::TreatAsWithdraw, "ORIGIN flags 0xc0");
}

TEST(UpdateValidation, OriginWrongLength) {
  expectHandling(cat({{0x40, 0x01, 0x02, 0x00, 0x00}, kAsPath, kNextHop}),
                 UpdateHandling::TreatAsWithdraw, "ORIGIN attribute length 2 is not 1");
}

TEST(UpdateValidation, OriginInvalidValue) {
  auto d = expectHandling(cat({{0x40, 0x01, 0x01, 0x03}, kAsPath, kNextHop}),
                          UpdateHandling::TreatAsWithdraw, "ORIGIN value 3");
  EXPECT_EQ(decodedUpdate(d).nlri.size(), 1u);  // still parsed, so it can be withdrawn
}

TEST(UpdateValidation, AsPathZeroLengthSegment) {
  expectHandling(cat({kOrigin, {0x40, 0x02, 0x02, 0x02, 0x00}, kNextHop}),
                 UpdateHandling::TreatAsWithdraw, "segment with no ASNs");
}

TEST(UpdateValidation, AsPathBadSegmentType) {
  expectHandling(cat({kOrigin, {0x40, 0x02, 0x06, 0x05, 0x01, 0x00, 0x00, 0xFD, 0xE9}, kNextHop}),
                 UpdateHandling::TreatAsWithdraw, "segment type 5");
}

TEST(UpdateValidation, AsPathSegmentOverrun) {
  expectHandling(cat({kOrigin, {0x40, 0x02, 0x06, 0x02, 0x02, 0x00, 0x00, 0xFD, 0xE9}, kNextHop}),
                 UpdateHandling::TreatAsWithdraw, "runs past the attribute");
}

TEST(UpdateValidation, AsPathWrongFlags) {
  expectHandling(cat({kOrigin, {0x80, 0x02, 0x06, 0x02, 0x01, 0x00, 0x00, 0xFD, 0xE9}, kNextHop}),
                 UpdateHandling::TreatAsWithdraw, "AS_PATH flags");
}

// A 4-byte path read by a 2-octet session does not parse: 6 bytes are not whole segments.
TEST(UpdateValidation, AsPathDecodedWithNegotiatedAsnSize) {
  expectHandling(kMandatory, UpdateHandling::TreatAsWithdraw, "2-byte ASNs", kNlri,
                 CodecOptions{.fourOctetAs = false});
}

TEST(UpdateValidation, NextHopWrongLength) {
  expectHandling(cat({kOrigin, kAsPath, {0x40, 0x03, 0x05, 0xC0, 0x00, 0x02, 0x01, 0x00}}),
                 UpdateHandling::TreatAsWithdraw, "NEXT_HOP attribute length 5");
}

TEST(UpdateValidation, NextHopZero) {
  expectHandling(cat({kOrigin, kAsPath, {0x40, 0x03, 0x04, 0, 0, 0, 0}}),
                 UpdateHandling::TreatAsWithdraw, "NEXT_HOP 0.0.0.0");
}

TEST(UpdateValidation, NextHopMulticast) {
  expectHandling(cat({kOrigin, kAsPath, {0x40, 0x03, 0x04, 224, 0, 0, 1}}),
                 UpdateHandling::TreatAsWithdraw, "NEXT_HOP 224.0.0.1");
}

TEST(UpdateValidation, NextHopBroadcast) {
  expectHandling(cat({kOrigin, kAsPath, {0x40, 0x03, 0x04, 255, 255, 255, 255}}),
                 UpdateHandling::TreatAsWithdraw, "NEXT_HOP 255.255.255.255");
}

TEST(UpdateValidation, MedWrongLength) {
  expectHandling(cat({kMandatory, {0x80, 0x04, 0x02, 0x00, 0x64}}), UpdateHandling::TreatAsWithdraw,
                 "MULTI_EXIT_DISC attribute length 2");
}

TEST(UpdateValidation, LocalPrefWrongLength) {
  expectHandling(cat({kMandatory, {0x40, 0x05, 0x03, 0x00, 0x00, 0x64}}),
                 UpdateHandling::TreatAsWithdraw, "LOCAL_PREF attribute length 3");
}

TEST(UpdateValidation, CommunitiesNotMultipleOfFour) {
  auto d = expectHandling(cat({kMandatory, {0xC0, 0x08, 0x06, 1, 2, 3, 4, 5, 6}}),
                          UpdateHandling::TreatAsWithdraw,
                          "COMMUNITIES attribute length 6 is not a non-zero multiple of 4");
  EXPECT_FALSE(decodedUpdate(d).attributes.communities.has_value());
}

TEST(UpdateValidation, CommunitiesEmpty) {
  expectHandling(cat({kMandatory, {0xC0, 0x08, 0x00}}), UpdateHandling::TreatAsWithdraw,
                 "COMMUNITIES attribute length 0");
}

TEST(UpdateValidation, LargeCommunitiesNotMultipleOfTwelve) {
  expectHandling(cat({kMandatory, {0xC0, 0x20, 0x04, 0, 0, 0xFD, 0xE9}}),
                 UpdateHandling::TreatAsWithdraw, "LARGE_COMMUNITIES attribute length 4");
}

// RFC 7606 sections 7.9 and 7.10: a malformed ORIGINATOR_ID or CLUSTER_LIST is treat-as-withdraw,
// and the malformed value is not kept.
TEST(UpdateValidation, OriginatorIdWrongLength) {
  auto d = expectHandling(cat({kMandatory, {0x80, 0x09, 0x03, 1, 2, 3}}),
                          UpdateHandling::TreatAsWithdraw, "ORIGINATOR_ID attribute length 3");
  EXPECT_FALSE(decodedUpdate(d).attributes.originatorId.has_value());
  EXPECT_TRUE(decodedUpdate(d).attributes.other.empty());
}

TEST(UpdateValidation, OriginatorIdWrongFlags) {
  // Optional transitive (0xC0) instead of optional non-transitive (0x80).
  auto d = expectHandling(cat({kMandatory, {0xC0, 0x09, 0x04, 192, 0, 2, 11}}),
                          UpdateHandling::TreatAsWithdraw, "ORIGINATOR_ID flags 0xc0");
  EXPECT_FALSE(decodedUpdate(d).attributes.originatorId.has_value());
}

TEST(UpdateValidation, ClusterListNotMultipleOfFour) {
  auto d = expectHandling(cat({kMandatory, {0x80, 0x0A, 0x06, 1, 2, 3, 4, 5, 6}}),
                          UpdateHandling::TreatAsWithdraw, "CLUSTER_LIST attribute length 6");
  EXPECT_FALSE(decodedUpdate(d).attributes.clusterList.has_value());
  EXPECT_TRUE(decodedUpdate(d).attributes.other.empty());
}

TEST(UpdateValidation, ClusterListEmpty) {
  expectHandling(cat({kMandatory, {0x80, 0x0A, 0x00}}), UpdateHandling::TreatAsWithdraw,
                 "CLUSTER_LIST attribute length 0 is not a non-zero multiple of 4");
}

TEST(UpdateValidation, DuplicateClusterListKeepsFirst) {
  auto d = expectHandling(
      cat({kMandatory, {0x80, 0x0A, 0x04, 192, 0, 2, 1}, {0x80, 0x0A, 0x04, 192, 0, 2, 2}}),
      UpdateHandling::AttributeDiscard, "duplicate CLUSTER_LIST");
  EXPECT_EQ(decodedUpdate(d).attributes.clusterList, std::vector<uint32_t>{0xC0000201});
}

TEST(UpdateValidation, MissingOrigin) {
  expectHandling(cat({kAsPath, kNextHop}), UpdateHandling::TreatAsWithdraw,
                 "missing well-known attribute ORIGIN (RFC 4271 would send 3/3)");
}

TEST(UpdateValidation, MissingAsPath) {
  expectHandling(cat({kOrigin, kNextHop}), UpdateHandling::TreatAsWithdraw,
                 "missing well-known attribute AS_PATH");
}

TEST(UpdateValidation, MissingNextHop) {
  expectHandling(cat({kOrigin, kAsPath}), UpdateHandling::TreatAsWithdraw,
                 "missing well-known attribute NEXT_HOP");
}

TEST(UpdateValidation, MpReachNeedsNoNextHopAttribute) {
  auto decoded = decode(updateMessage({}, cat({kOrigin, kAsPath, kMpReach}), {}));
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->handling, UpdateHandling::Normal);
  EXPECT_TRUE(decoded->notes.empty());
}

TEST(UpdateValidation, MpReachStillNeedsOrigin) {
  expectHandling(cat({kAsPath, kMpReach}), UpdateHandling::TreatAsWithdraw,
                 "missing well-known attribute ORIGIN", {});
}

// With nothing announced, treat-as-withdraw changes nothing; the note still records it.
TEST(UpdateValidation, WithdrawOnlyMalformedIsNormal) {
  auto decoded =
      decode(updateMessage({0x20, 0xCB, 0x00, 0x71, 0x0A}, {0x40, 0x01, 0x01, 0x07}, {}));
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->handling, UpdateHandling::Normal);
  ASSERT_EQ(decoded->notes.size(), 1u);
  EXPECT_NE(decoded->notes[0].find("treat-as-withdraw"), std::string::npos);
  EXPECT_EQ(decodedUpdate(*decoded).withdrawn.size(), 1u);
}

// ---- attribute discard ----

TEST(UpdateValidation, AtomicAggregateWithValue) {
  auto d = expectHandling(cat({kMandatory, {0x40, 0x06, 0x01, 0x00}}),
                          UpdateHandling::AttributeDiscard, "ATOMIC_AGGREGATE attribute length 1");
  EXPECT_FALSE(decodedUpdate(d).attributes.atomicAggregate);
}

TEST(UpdateValidation, AggregatorWrongLength) {
  auto d =
      expectHandling(cat({kMandatory, {0xC0, 0x07, 0x05, 0, 0, 0xFD, 0xE9, 1}}),
                     UpdateHandling::AttributeDiscard, "AGGREGATOR attribute length 5 is not 8");
  EXPECT_TRUE(decodedUpdate(d).attributes.other.empty());
}

TEST(UpdateValidation, As4PathMalformedFromTwoOctetPeer) {
  const Bytes twoOctetPath = {0x40, 0x02, 0x04, 0x02, 0x01, 0x5B, 0xA0};  // AS_TRANS
  auto d = expectHandling(cat({kOrigin, twoOctetPath, kNextHop, {0xC0, 0x11, 0x02, 0x02, 0x00}}),
                          UpdateHandling::AttributeDiscard, "AS4_PATH", kNlri,
                          CodecOptions{.fourOctetAs = false});
  EXPECT_FALSE(decodedUpdate(d).attributes.as4Path.has_value());
  EXPECT_TRUE(decodedUpdate(d).attributes.asPath.has_value());
}

TEST(UpdateValidation, As4PathFromFourOctetPeerIsDiscarded) {
  auto d = expectHandling(cat({kMandatory, {0xC0, 0x11, 0x06, 0x02, 0x01, 0x00, 0x00, 0xFD, 0xE9}}),
                          UpdateHandling::AttributeDiscard, "AS4_PATH from a 4-octet AS peer");
  EXPECT_FALSE(decodedUpdate(d).attributes.as4Path.has_value());
}

TEST(UpdateValidation, MpReachUnsupportedFamilyIsDiscarded) {
  // AFI 25 (L2VPN) SAFI 70 (EVPN), next hop 4 bytes, no NLRI.
  const Bytes evpn = {0x80, 0x0E, 0x09, 0x00, 0x19, 0x46, 0x04, 192, 0, 2, 1, 0x00};
  auto d =
      expectHandling(cat({kMandatory, evpn}), UpdateHandling::AttributeDiscard, "AFI 25 SAFI 70");
  EXPECT_FALSE(decodedUpdate(d).attributes.mpReach.has_value());
}

// ---- MP_REACH / MP_UNREACH malformed: session reset 3/1 (RFC 7606 section 7.11) ----

TEST(UpdateValidation, MpReachBadNextHopLength) {
  Bytes mp = kMpReach;
  mp[6] = 0x05;  // next hop length 5 for IPv6
  expectResetUpdate(updateMessage({}, cat({kOrigin, kAsPath, mp}), {}),
                    subcode::kMalformedAttributeList);
}

TEST(UpdateValidation, MpReachPrefixTooLong) {
  Bytes mp = kMpReach;
  mp[24] = 129;  // /129
  expectResetUpdate(updateMessage({}, cat({kOrigin, kAsPath, mp}), {}),
                    subcode::kMalformedAttributeList);
}

TEST(UpdateValidation, MpReachTruncated) {
  expectResetUpdate(updateMessage({}, cat({kOrigin, kAsPath, {0x80, 0x0E, 0x02, 0x00, 0x02}}), {}),
                    subcode::kMalformedAttributeList);
}

TEST(UpdateValidation, MpReachWrongFlags) {
  Bytes mp = kMpReach;
  mp[0] = 0x40;
  expectResetUpdate(updateMessage({}, cat({kOrigin, kAsPath, mp}), {}),
                    subcode::kMalformedAttributeList);
}

TEST(UpdateValidation, MpUnreachPrefixOverrun) {
  expectResetUpdate(updateMessage({}, {0x80, 0x0F, 0x05, 0x00, 0x02, 0x01, 0x30, 0x20}, {}),
                    subcode::kMalformedAttributeList);
}

}  // namespace
}  // namespace vipd::bgp::test
