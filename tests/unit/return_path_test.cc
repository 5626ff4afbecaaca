// The return-path check's pure parts (issue 19): the probe and relay wire formats, byte for byte,
// and the judge's verdicts over sequences of rounds.
#include <gtest/gtest.h>

#include <vector>

#include "daemon/returnpath/return_path_judge.h"
#include "daemon/returnpath/return_path_packet.h"

namespace vipd::daemon::returnpath {
namespace {

bgp::IpAddress v4(const char* text) { return *bgp::IpAddress::parse(text); }

// id 0x1234, sequence 1, a VIP-sourced probe, nonce 0x0102030405060708, relay 192.0.2.11:9475.
ProbeData exampleData() {
  return {ProbeKind::VipSourced, 0x0102030405060708ull, v4("192.0.2.11"), 9475};
}

const std::vector<uint8_t> kExampleRequest = {
    0x08, 0x00, 0xb0, 0x87,              // type 8 echo request, code 0, checksum
    0x12, 0x34, 0x00, 0x01,              // identifier, sequence
    'v', 'i', 'p', 'd', 'R', 'P',        // magic
    0x01,                                // version
    0x02,                                // kind: VIP-sourced
    1, 2, 3, 4, 5, 6, 7, 8,              // nonce
    0x04, 0x00, 0x25, 0x03,              // relay family 4, zero, port 9475
    192, 0, 2, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // relay address, padded to 16
};

// The same message as the target's answer: type 0, checksum adjusted, inside an IPv4 header
// from 192.0.2.1 to the VIP 203.0.113.10 (the header checksum is not checked by the parser: the
// kernel has).
std::vector<uint8_t> exampleReplyPacket() {
  std::vector<uint8_t> icmp = kExampleRequest;
  icmp[0] = 0x00;
  icmp[2] = 0xb8;
  icmp[3] = 0x87;
  std::vector<uint8_t> packet = {
      0x45, 0x00, 0x00, static_cast<uint8_t>(20 + icmp.size()),  // version 4, IHL 5, length
      0x00, 0x00, 0x00, 0x00,                                    // id, flags, fragment
      0x40, 0x01, 0x00, 0x00,                                    // TTL 64, protocol ICMP
      192, 0, 2, 1,                                              // source: the target
      203, 0, 113, 10,                                           // destination: the VIP
  };
  packet.insert(packet.end(), icmp.begin(), icmp.end());
  return packet;
}

TEST(ReturnPathPacket, EchoRequestV4IsByteExact) {
  EXPECT_EQ(buildEchoRequestV4(0x1234, 1, exampleData()), kExampleRequest);
  EXPECT_EQ(internetChecksum(kExampleRequest), 0);
}

TEST(ReturnPathPacket, EchoRequestV6LeavesTheChecksumToTheKernel) {
  ProbeData data{ProbeKind::NodeSourced, 7, *bgp::IpAddress::parse("2001:db8::11"), 9475};
  auto m = buildEchoRequestV6(1, 2, data);
  ASSERT_EQ(m.size(), 8 + kProbeDataSize);
  EXPECT_EQ(m[0], 128);
  EXPECT_EQ(m[2], 0);
  EXPECT_EQ(m[3], 0);
  EXPECT_EQ(m[8 + 7], 1);   // kind: node-sourced
  EXPECT_EQ(m[8 + 16], 6);  // relay family
  // The reply the kernel hands a raw ICMPv6 socket: the message alone.
  m[0] = 129;
  auto reply = parseEchoReplyV6(m, *bgp::IpAddress::parse("2001:db8::1"),
                                *bgp::IpAddress::parse("2001:db8::11"));
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->data, data);
  EXPECT_EQ(reply->id, 1);
}

TEST(ReturnPathPacket, ParsesTheAnswer) {
  auto reply = parseEchoReplyV4(exampleReplyPacket());
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->from, v4("192.0.2.1"));
  EXPECT_EQ(reply->to, v4("203.0.113.10"));
  EXPECT_EQ(reply->id, 0x1234);
  EXPECT_EQ(reply->data, exampleData());
}

TEST(ReturnPathPacket, RejectsEverythingElse) {
  auto good = exampleReplyPacket();
  EXPECT_FALSE(parseEchoReplyV4({}));
  for (size_t n = 0; n < good.size(); ++n) {  // every truncation
    EXPECT_FALSE(parseEchoReplyV4(std::span(good.data(), n))) << n;
  }
  auto request = good;  // an echo request (type 8) is not an answer
  request[20] = 8;
  EXPECT_FALSE(parseEchoReplyV4(request));
  auto corrupt = good;  // a flipped bit fails the ICMP checksum
  corrupt[20 + 20] ^= 0x01;
  EXPECT_FALSE(parseEchoReplyV4(corrupt));
  auto otherPing = good;  // someone else's ping: no magic (checksum fixed up so only that differs)
  otherPing[20 + 8] = 'X';
  otherPing[20 + 2] = 0;
  otherPing[20 + 3] = 0;
  uint16_t sum = internetChecksum(std::span(otherPing).subspan(20));
  otherPing[20 + 2] = static_cast<uint8_t>(sum >> 8);
  otherPing[20 + 3] = static_cast<uint8_t>(sum);
  EXPECT_FALSE(parseEchoReplyV4(otherPing));
  auto udp = good;  // not ICMP
  udp[9] = 17;
  EXPECT_FALSE(parseEchoReplyV4(udp));
  auto longHeader = good;  // IHL beyond the packet
  longHeader[0] = 0x4F;
  EXPECT_FALSE(parseEchoReplyV4(longHeader));
  auto v6 = good;
  v6[0] = 0x65;
  EXPECT_FALSE(parseEchoReplyV4(v6));
}

TEST(ReturnPathPacket, RelayRoundTripsAndRejectsGarbage) {
  auto relay = buildRelay(0x0102030405060708ull);
  const std::array<uint8_t, kRelaySize> expected = {'v', 'i', 'p', 'd', 'R', 'R', 1, 0,
                                                     1,   2,   3,   4,   5,   6,   7, 8};
  EXPECT_EQ(relay, expected);
  EXPECT_EQ(parseRelay(relay), 0x0102030405060708ull);
  EXPECT_FALSE(parseRelay(std::span(relay.data(), relay.size() - 1)));
  auto wrong = relay;
  wrong[5] = 'P';
  EXPECT_FALSE(parseRelay(wrong));
  wrong = relay;
  wrong[6] = 2;
  EXPECT_FALSE(parseRelay(wrong));
  std::vector<uint8_t> longer(relay.begin(), relay.end());
  longer.push_back(0);
  EXPECT_FALSE(parseRelay(longer));
}

// ---- the judge ----

constexpr RoundOutcome kAnswered{.vipAnswered = true, .nodeAnswered = true,
                                 .announcedThroughout = true};
constexpr RoundOutcome kFiltered{.vipAnswered = false, .nodeAnswered = true,
                                 .announcedThroughout = true};
constexpr RoundOutcome kFilteredNotAnnounced{.vipAnswered = false, .nodeAnswered = true,
                                             .announcedThroughout = false};
constexpr RoundOutcome kSilence{.vipAnswered = false, .nodeAnswered = false,
                                .announcedThroughout = true};

TEST(ReturnPathJudge, StartsUnverifiedAndPassesOnTheFirstAnswer) {
  ReturnPathJudge judge(3, 2);
  EXPECT_EQ(judge.state(), ReturnPathState::Unverified);
  EXPECT_FALSE(judge.blocks());
  EXPECT_TRUE(judge.record(kAnswered));
  EXPECT_EQ(judge.state(), ReturnPathState::Passing);
}

TEST(ReturnPathJudge, BreaksAfterFallUnansweredRoundsAndNotBefore) {
  ReturnPathJudge judge(3, 2);
  judge.record(kAnswered);
  EXPECT_FALSE(judge.record(kFiltered));
  EXPECT_FALSE(judge.record(kFiltered));
  EXPECT_TRUE(judge.record(kFiltered));
  EXPECT_EQ(judge.state(), ReturnPathState::Broken);
  EXPECT_TRUE(judge.blocks());
}

TEST(ReturnPathJudge, SilenceIsNeverAReasonToWithdraw) {
  ReturnPathJudge judge(3, 2);
  judge.record(kAnswered);
  for (int i = 0; i < 100; ++i) {
    judge.record(kSilence);
    EXPECT_EQ(judge.lastVerdict(), RoundVerdict::Inconclusive);
  }
  EXPECT_EQ(judge.state(), ReturnPathState::Passing);
  // ... and it breaks a run of unanswered rounds.
  judge.record(kFiltered);
  judge.record(kFiltered);
  judge.record(kSilence);
  judge.record(kFiltered);
  judge.record(kFiltered);
  EXPECT_EQ(judge.state(), ReturnPathState::Passing);
}

TEST(ReturnPathJudge, SilenceBeforeAnnouncingProvesNothing) {
  // Before this node announces, only another node's announcement brings the answer back.
  ReturnPathJudge judge(1, 1);
  for (int i = 0; i < 10; ++i) {
    judge.record(kFilteredNotAnnounced);
  }
  EXPECT_EQ(judge.state(), ReturnPathState::Unverified);
  EXPECT_EQ(judge.lastVerdict(), RoundVerdict::Inconclusive);
}

TEST(ReturnPathJudge, ComesBackAfterRiseAnsweredRounds) {
  ReturnPathJudge judge(2, 3);
  judge.record(kAnswered);
  judge.record(kFiltered);
  judge.record(kFiltered);
  ASSERT_TRUE(judge.blocks());
  // Withdrawn: still unanswered counts (it is what keeps it withdrawn), answers come relayed.
  EXPECT_EQ(judge.verdictOf(kFilteredNotAnnounced), RoundVerdict::Unanswered);
  EXPECT_FALSE(judge.record({.vipAnswered = true, .nodeAnswered = true}));
  EXPECT_FALSE(judge.record({.vipAnswered = true, .nodeAnswered = true}));
  EXPECT_TRUE(judge.record({.vipAnswered = true, .nodeAnswered = true}));
  EXPECT_EQ(judge.state(), ReturnPathState::Passing);
  // An unanswered round in between restarts the count.
  judge.record(kFiltered);
  judge.record(kFiltered);
  judge.record(kAnswered);
  judge.record(kFilteredNotAnnounced);
  judge.record(kAnswered);
  judge.record(kAnswered);
  EXPECT_TRUE(judge.blocks());
  judge.record(kAnswered);
  EXPECT_FALSE(judge.blocks());
}

TEST(ReturnPathJudge, RetriesWithBackoffSoTheVipIsNeverGoneEverywhereForGood) {
  ReturnPathJudge judge(1, 1);
  judge.record(kAnswered);
  judge.record(kFiltered);
  ASSERT_EQ(judge.state(), ReturnPathState::Broken);
  uint32_t rounds = 0;
  while (judge.state() == ReturnPathState::Broken && rounds < 1000) {
    judge.record(kFilteredNotAnnounced);
    ++rounds;
  }
  EXPECT_EQ(rounds, ReturnPathJudge::kFirstRetryRounds);
  EXPECT_EQ(judge.state(), ReturnPathState::Retrying);
  EXPECT_FALSE(judge.blocks());
  // The retry fails: broken again, and the next retry waits twice as long.
  judge.record(kFiltered);
  ASSERT_EQ(judge.state(), ReturnPathState::Broken);
  EXPECT_EQ(judge.roundsUntilRetry(), 2 * ReturnPathJudge::kFirstRetryRounds);
  rounds = 0;
  while (judge.state() == ReturnPathState::Broken && rounds < 1000) {
    judge.record(kSilence);
    ++rounds;
  }
  EXPECT_EQ(rounds, 2 * ReturnPathJudge::kFirstRetryRounds);
  // This retry is answered: passing, and the backoff is reset.
  judge.record(kAnswered);
  EXPECT_EQ(judge.state(), ReturnPathState::Passing);
  judge.record(kFiltered);
  EXPECT_EQ(judge.roundsUntilRetry(), ReturnPathJudge::kFirstRetryRounds);
}

TEST(ReturnPathJudge, BackoffIsCapped) {
  ReturnPathJudge judge(1, 1);
  judge.record(kFiltered);
  for (int retry = 0; retry < 20; ++retry) {
    while (judge.state() == ReturnPathState::Broken) {
      judge.record(kSilence);
    }
    judge.record(kFiltered);
    EXPECT_LE(judge.roundsUntilRetry(), ReturnPathJudge::kMaxRetryRounds);
  }
  EXPECT_EQ(judge.roundsUntilRetry(), ReturnPathJudge::kMaxRetryRounds);
}

}  // namespace
}  // namespace vipd::daemon::returnpath
