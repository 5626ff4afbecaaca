// The UPDATE builder: announcements, withdrawals and End-of-RIB, checked after encoding and
// decoding (and framing one byte at a time), and chunking that keeps every message within 4096
// bytes.
#include "bgp/update_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "bgp/codec.h"
#include "bgp/message.h"
#include "bgp/fsm_test_support.h"

namespace vipd::bgp {
namespace {

using ::testing::ElementsAre;
using namespace vipd::bgp::testing;

constexpr uint32_t kLocalAsn = 65001;
constexpr uint32_t kLargeAsn = 4200000001;

OutboundAttributes ebgpAttributes() {
  OutboundAttributes attributes;
  attributes.ebgp = true;
  attributes.localAsn = kLocalAsn;
  attributes.nextHopV4 = ip("198.51.100.1");
  attributes.nextHopV6 = ip("2001:db8::1");
  return attributes;
}

// Encodes and decodes (directly and byte by byte) an UPDATE we built.
UpdateMessage roundTrip(const UpdateMessage& update, const CodecOptions& options = {}) {
  auto wire = encode(update, options);
  EXPECT_LE(wire.size(), kMaxMessageSize);
  Message decoded = decodeWire(wire, options);
  EXPECT_TRUE(std::holds_alternative<UpdateMessage>(decoded));
  return std::holds_alternative<UpdateMessage>(decoded) ? std::get<UpdateMessage>(decoded)
                                                        : UpdateMessage{};
}

std::vector<Prefix> manyV4(size_t count, uint8_t length = 32) {
  std::vector<Prefix> prefixes;
  for (size_t i = 0; i < count; ++i) {
    uint32_t base = 0x0A000000u + static_cast<uint32_t>(i << (32 - length));  // 10.0.0.0/8 space
    prefixes.push_back(Prefix{IpAddress::v4(base), length});
  }
  return prefixes;
}

std::vector<Prefix> manyV6(size_t count) {
  std::vector<Prefix> prefixes;
  for (size_t i = 0; i < count; ++i) {
    Prefix p = prefix("2001:db8::/128");
    p.address.bytes[12] = static_cast<uint8_t>(i >> 24);
    p.address.bytes[13] = static_cast<uint8_t>(i >> 16);
    p.address.bytes[14] = static_cast<uint8_t>(i >> 8);
    p.address.bytes[15] = static_cast<uint8_t>(i);
    prefixes.push_back(p);
  }
  return prefixes;
}

TEST(UpdateBuilder, Ipv4AnnouncementUsesNlriAndNextHop) {
  OutboundAttributes attributes = ebgpAttributes();
  attributes.communities = {0xFDE90001};
  attributes.largeCommunities = {LargeCommunity{kLocalAsn, 7, 8}};
  std::vector<Prefix> prefixes = {prefix("203.0.113.10/32"), prefix("203.0.113.0/24")};

  auto updates = buildAnnouncements(prefixes, attributes);

  ASSERT_EQ(updates.size(), 1u);
  UpdateMessage update = roundTrip(updates[0]);
  EXPECT_EQ(update.nlri, prefixes);
  EXPECT_TRUE(update.withdrawn.empty());
  EXPECT_EQ(update.attributes.origin, Origin::Igp);
  EXPECT_EQ(update.attributes.asPath, (AsPath{{AsPathSegment::Type::AsSequence, {kLocalAsn}}}));
  EXPECT_EQ(update.attributes.nextHop, ip("198.51.100.1"));
  EXPECT_FALSE(update.attributes.localPref.has_value());
  EXPECT_FALSE(update.attributes.med.has_value());
  EXPECT_EQ(update.attributes.communities, std::vector<uint32_t>{0xFDE90001});
  EXPECT_EQ(update.attributes.largeCommunities,
            std::vector<LargeCommunity>{(LargeCommunity{kLocalAsn, 7, 8})});
  EXPECT_FALSE(update.attributes.mpReach.has_value());
  EXPECT_FALSE(update.endOfRibFamily().has_value());
}

TEST(UpdateBuilder, Ipv6AnnouncementUsesMpReachWithTheNextHop) {
  std::vector<Prefix> prefixes = {prefix("2001:db8:100::10/128")};
  auto updates = buildAnnouncements(prefixes, ebgpAttributes());

  ASSERT_EQ(updates.size(), 1u);
  UpdateMessage update = roundTrip(updates[0]);
  EXPECT_TRUE(update.nlri.empty());
  EXPECT_FALSE(update.attributes.nextHop.has_value());
  ASSERT_TRUE(update.attributes.mpReach.has_value());
  EXPECT_EQ(update.attributes.mpReach->family, kIpv6Unicast);
  const auto& nh = ip("2001:db8::1").bytes;
  EXPECT_EQ(update.attributes.mpReach->nextHop, std::vector<uint8_t>(nh.begin(), nh.end()));
  EXPECT_EQ(update.attributes.mpReach->nlri, prefixes);
  EXPECT_EQ(update.attributes.origin, Origin::Igp);
}

TEST(UpdateBuilder, MixedFamiliesGiveOneUpdatePerFamily) {
  std::vector<Prefix> prefixes = {prefix("2001:db8:100::10/128"), prefix("203.0.113.10/32")};
  auto updates = buildAnnouncements(prefixes, ebgpAttributes());
  ASSERT_EQ(updates.size(), 2u);
  EXPECT_THAT(updates[0].nlri, ElementsAre(prefix("203.0.113.10/32")));
  ASSERT_TRUE(updates[1].attributes.mpReach.has_value());
  EXPECT_THAT(updates[1].attributes.mpReach->nlri, ElementsAre(prefix("2001:db8:100::10/128")));
}

TEST(UpdateBuilder, IbgpHasEmptyAsPathAndLocalPref) {
  OutboundAttributes attributes = ebgpAttributes();
  attributes.ebgp = false;
  auto updates = buildAnnouncements(std::vector<Prefix>{prefix("203.0.113.10/32")}, attributes);
  ASSERT_EQ(updates.size(), 1u);
  UpdateMessage update = roundTrip(updates[0]);
  EXPECT_EQ(update.attributes.asPath, AsPath{});
  EXPECT_EQ(update.attributes.localPref, kDefaultLocalPref);
}

TEST(UpdateBuilder, GracefulShutdownCommunityIsAddedOnce) {
  OutboundAttributes attributes = ebgpAttributes();
  attributes.ebgp = false;
  attributes.gracefulShutdown = true;
  attributes.communities = {kGracefulShutdownCommunity, 0xFDE90001};
  auto updates = buildAnnouncements(std::vector<Prefix>{prefix("203.0.113.10/32")}, attributes);
  ASSERT_EQ(updates.size(), 1u);
  UpdateMessage update = roundTrip(updates[0]);
  EXPECT_EQ(update.attributes.communities,
            (std::vector<uint32_t>{kGracefulShutdownCommunity, 0xFDE90001}));
  EXPECT_EQ(update.attributes.localPref, 0u);
}

// health.onFailure degrade on eBGP, byte for byte: the local AS three times (prepend 2) and the
// degrade community 65001:666 after the configured ones.
TEST(UpdateBuilder, DegradedEbgpPathIsPrependedByteExact) {
  OutboundAttributes attributes = ebgpAttributes();
  attributes.degraded = true;
  attributes.degradePrepend = 2;
  attributes.degradeCommunities = {0xFDE9029A};
  auto updates = buildAnnouncements(std::vector<Prefix>{prefix("203.0.113.10/32")}, attributes);
  ASSERT_EQ(updates.size(), 1u);
  const std::vector<uint8_t> expected = {
      0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,  // marker
      0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,  //
      0x00, 0x3F, 0x02,                                // length 63, UPDATE
      0x00, 0x00,                                      // no withdrawn routes
      0x00, 0x23,                                      // 35 bytes of path attributes
      0x40, 0x01, 0x01, 0x00,                          // ORIGIN IGP
      0x40, 0x02, 0x0E, 0x02, 0x03,                    // AS_PATH: AS_SEQUENCE of 3
      0x00, 0x00, 0xFD, 0xE9,                          //   65001
      0x00, 0x00, 0xFD, 0xE9,                          //   65001 (prepended)
      0x00, 0x00, 0xFD, 0xE9,                          //   65001 (prepended)
      0x40, 0x03, 0x04, 198, 51, 100, 1,               // NEXT_HOP
      0xC0, 0x08, 0x04, 0xFD, 0xE9, 0x02, 0x9A,        // COMMUNITIES 65001:666
      0x20, 203, 0, 113, 10,                           // NLRI 203.0.113.10/32
  };
  EXPECT_EQ(encode(updates[0]), expected);
  // Not degraded: the same session's path is one AS long and carries no degrade community.
  attributes.degraded = false;
  UpdateMessage healthy = roundTrip(buildAnnouncements(
      std::vector<Prefix>{prefix("203.0.113.10/32")}, attributes)[0]);
  EXPECT_EQ(healthy.attributes.asPath, (AsPath{{AsPathSegment::Type::AsSequence, {kLocalAsn}}}));
  EXPECT_FALSE(healthy.attributes.communities.has_value());
}

// On iBGP a prepended own AS would be a loop to the peer: the degraded path lowers LOCAL_PREF,
// keeps the empty AS_PATH, and a drain's LOCAL_PREF 0 still wins.
TEST(UpdateBuilder, DegradedIbgpPathLowersLocalPrefInstead) {
  OutboundAttributes attributes = ebgpAttributes();
  attributes.ebgp = false;
  attributes.degraded = true;
  attributes.degradePrepend = 3;
  attributes.degradeLocalPref = 50;
  attributes.communities = {0xFDE90001};
  attributes.degradeCommunities = {0xFDE90001, 0xFDE9029A};  // the first is already there
  UpdateMessage update = roundTrip(
      buildAnnouncements(std::vector<Prefix>{prefix("203.0.113.10/32")}, attributes)[0]);
  EXPECT_EQ(update.attributes.asPath, AsPath{});
  EXPECT_EQ(update.attributes.localPref, 50u);
  EXPECT_EQ(update.attributes.communities, (std::vector<uint32_t>{0xFDE90001, 0xFDE9029A}));
  attributes.gracefulShutdown = true;
  update = roundTrip(
      buildAnnouncements(std::vector<Prefix>{prefix("203.0.113.10/32")}, attributes)[0]);
  EXPECT_EQ(update.attributes.localPref, 0u);
}

TEST(UpdateBuilder, NothingToAnnounceOrWithdrawGivesNoUpdates) {
  EXPECT_TRUE(buildAnnouncements({}, ebgpAttributes()).empty());
  EXPECT_TRUE(buildWithdrawals({}).empty());
}

TEST(UpdateBuilder, Ipv4WithdrawalsUseTheWithdrawnRoutesField) {
  std::vector<Prefix> prefixes = {prefix("203.0.113.10/32"), prefix("198.18.0.0/15")};
  auto updates = buildWithdrawals(prefixes);

  ASSERT_EQ(updates.size(), 1u);
  UpdateMessage update = roundTrip(updates[0]);
  EXPECT_EQ(update.withdrawn, prefixes);
  EXPECT_TRUE(update.nlri.empty());
  EXPECT_EQ(update.attributes, PathAttributes{}) << "a pure withdrawal carries no attributes";
  EXPECT_FALSE(update.endOfRibFamily().has_value());
}

TEST(UpdateBuilder, Ipv6WithdrawalsUseMpUnreach) {
  std::vector<Prefix> prefixes = {prefix("2001:db8:100::10/128"), prefix("2001:db8:200::/48")};
  auto updates = buildWithdrawals(prefixes);

  ASSERT_EQ(updates.size(), 1u);
  UpdateMessage update = roundTrip(updates[0]);
  EXPECT_TRUE(update.withdrawn.empty());
  ASSERT_TRUE(update.attributes.mpUnreach.has_value());
  EXPECT_EQ(update.attributes.mpUnreach->family, kIpv6Unicast);
  EXPECT_EQ(update.attributes.mpUnreach->withdrawn, prefixes);
  EXPECT_FALSE(update.attributes.origin.has_value());
  EXPECT_FALSE(update.endOfRibFamily().has_value());
}

TEST(UpdateBuilder, EndOfRibForIpv4IsTheEmptyUpdate) {
  UpdateMessage eor = buildEndOfRib(kIpv4Unicast);
  EXPECT_EQ(eor.endOfRibFamily(), kIpv4Unicast);
  auto wire = encode(eor);
  EXPECT_EQ(wire.size(), 23u);  // header + two zero length fields (RFC 4724 section 2)
  EXPECT_EQ(roundTrip(eor).endOfRibFamily(), kIpv4Unicast);
}

TEST(UpdateBuilder, EndOfRibForIpv6IsAnEmptyMpUnreach) {
  UpdateMessage eor = buildEndOfRib(kIpv6Unicast);
  EXPECT_EQ(eor.endOfRibFamily(), kIpv6Unicast);
  UpdateMessage decoded = roundTrip(eor);
  EXPECT_EQ(decoded.endOfRibFamily(), kIpv6Unicast);
  ASSERT_TRUE(decoded.attributes.mpUnreach.has_value());
  EXPECT_TRUE(decoded.attributes.mpUnreach->withdrawn.empty());
}

// The worst case the config allows: 32 communities, 16 large communities, graceful shutdown on
// iBGP (LOCAL_PREF and one more community), a 4-octet ASN towards a 2-octet peer (AS4_PATH), and
// the longest prefixes of each family.
class UpdateBuilderChunking : public ::testing::TestWithParam<bool> {};

TEST_P(UpdateBuilderChunking, EveryMessageFitsAndNoPrefixIsLostOrRepeated) {
  const bool ebgp = GetParam();
  OutboundAttributes attributes = ebgpAttributes();
  attributes.ebgp = ebgp;
  attributes.localAsn = kLargeAsn;
  attributes.gracefulShutdown = true;
  attributes.degraded = true;  // the config's caps: 10 prepends, 8 degrade communities
  attributes.degradePrepend = 10;
  for (uint32_t i = 0; i < 8; ++i) {
    attributes.degradeCommunities.push_back(0xFDE90100 + i);
  }
  for (uint32_t i = 0; i < 32; ++i) {
    attributes.communities.push_back(0xFDE90000 + i);
  }
  for (uint32_t i = 0; i < 16; ++i) {
    attributes.largeCommunities.push_back(LargeCommunity{kLargeAsn, i, i});
  }
  std::vector<Prefix> prefixes = manyV4(5000);
  std::vector<Prefix> v6 = manyV6(2000);
  prefixes.insert(prefixes.end(), v6.begin(), v6.end());

  for (bool fourOctetAs : {true, false}) {
    SCOPED_TRACE(fourOctetAs ? "4-octet AS peer" : "2-octet AS peer");
    CodecOptions options{fourOctetAs};
    std::multiset<Prefix> announced;
    auto updates = buildAnnouncements(prefixes, attributes);
    EXPECT_GT(updates.size(), 2u) << "expected the prefixes to be split";
    for (const auto& update : updates) {
      EXPECT_LE(encode(update, options).size(), kMaxMessageSize);
      announced.insert(update.nlri.begin(), update.nlri.end());
      if (update.attributes.mpReach) {
        announced.insert(update.attributes.mpReach->nlri.begin(),
                         update.attributes.mpReach->nlri.end());
      }
    }
    EXPECT_EQ(announced, std::multiset<Prefix>(prefixes.begin(), prefixes.end()));
  }

  std::multiset<Prefix> withdrawn;
  for (const auto& update : buildWithdrawals(prefixes)) {
    EXPECT_LE(encode(update).size(), kMaxMessageSize);
    withdrawn.insert(update.withdrawn.begin(), update.withdrawn.end());
    if (update.attributes.mpUnreach) {
      withdrawn.insert(update.attributes.mpUnreach->withdrawn.begin(),
                       update.attributes.mpUnreach->withdrawn.end());
    }
  }
  EXPECT_EQ(withdrawn, std::multiset<Prefix>(prefixes.begin(), prefixes.end()));
}

INSTANTIATE_TEST_SUITE_P(EbgpAndIbgp, UpdateBuilderChunking, ::testing::Bool());

TEST(UpdateBuilder, ChunkedMessagesDecode) {
  auto updates = buildAnnouncements(manyV4(1300), ebgpAttributes());
  ASSERT_EQ(updates.size(), 3u);
  for (const auto& update : updates) {
    EXPECT_EQ(roundTrip(update), update);
  }
}

}  // namespace
}  // namespace vipd::bgp
