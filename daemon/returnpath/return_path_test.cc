// The return-path check's pure parts (issues 19, 28): the echo, relay and witness wire formats,
// byte for byte; the judge's verdicts over sequences of rounds; the relay policy against forged
// answers and floods.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <vector>

#include "daemon/returnpath/relay_policy.h"
#include "daemon/returnpath/judge.h"
#include "daemon/returnpath/packet.h"

namespace vipd::daemon {
namespace {

bgp::IpAddress v4(const char* text) { return *bgp::IpAddress::parse(text); }

// id 0x1234, sequence 1, a VIP-sourced echo, nonce 0x0102030405060708, relay 192.0.2.11:9475.
EchoData exampleData() {
  return {EchoKind::VipSourced, 0x0102030405060708ull, v4("192.0.2.11"), 9475};
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
  EchoData data{EchoKind::NodeSourced, 7, *bgp::IpAddress::parse("2001:db8::11"), 9475};
  auto m = buildEchoRequestV6(1, 2, data);
  ASSERT_EQ(m.size(), 8 + kEchoDataSize);
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

// Found by the returnpath_echo fuzz target (corpus repro-echo-relay-v4-padding): an IPv4 relay
// address with non-zero padding was accepted, so bytes vipd never sends went unread. Refused now,
// on both families' sockets, and counted as malformed (the magic is there).
TEST(ReturnPathPacket, RejectsNonZeroPaddingAfterAnIpv4RelayAddress) {
  for (size_t at = 8 + 24; at < 8 + kEchoDataSize; ++at) {
    auto packet = exampleReplyPacket();
    packet[20 + at] = 0x01;
    packet[20 + 2] = 0;
    packet[20 + 3] = 0;
    const uint16_t sum = internetChecksum(std::span(packet).subspan(20));
    packet[20 + 2] = static_cast<uint8_t>(sum >> 8);
    packet[20 + 3] = static_cast<uint8_t>(sum);
    EXPECT_FALSE(parseEchoReplyV4(packet)) << "padding byte " << at - 8 - 24;
    EXPECT_TRUE(carriesEchoMagic(packet, true));

    auto message = std::vector<uint8_t>(packet.begin() + 20, packet.end());
    message[0] = 129;  // the same data in an ICMPv6 echo reply
    EXPECT_FALSE(parseEchoReplyV6(message, v4("192.0.2.1"), v4("203.0.113.10")))
        << "padding byte " << at - 8 - 24;
  }
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
                                 .announcedThroughout = true, .aloneEvidence = true};
constexpr RoundOutcome kFilteredNotAnnounced{.vipAnswered = false, .nodeAnswered = true,
                                             .announcedThroughout = false,
                                             .aloneEvidence = true};
// The node answers, the VIP does not, and nothing says this node alone is affected: the node
// that relayed its answers froze (issue 28).
constexpr RoundOutcome kRelayerGone{.vipAnswered = false, .nodeAnswered = true,
                                    .announcedThroughout = true, .aloneEvidence = false};
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

TEST(ReturnPathJudge, SilenceWithoutEvidenceThatItIsThisNodesAloneIsNeverCounted) {
  // Issue 28: every node's answers land on one node; it freezes; every other node's answers stop
  // at once. Without evidence that this node alone loses them, no round counts against it.
  ReturnPathJudge judge(3, 2);
  judge.record(kAnswered);
  for (int i = 0; i < 100; ++i) {
    judge.record(kRelayerGone);
    EXPECT_EQ(judge.lastVerdict(), RoundVerdict::Inconclusive);
  }
  EXPECT_EQ(judge.state(), ReturnPathState::Passing);
  EXPECT_FALSE(judge.blocks());
  // And it breaks a run of counted ones.
  judge.record(kFiltered);
  judge.record(kFiltered);
  judge.record(kRelayerGone);
  judge.record(kFiltered);
  judge.record(kFiltered);
  EXPECT_EQ(judge.state(), ReturnPathState::Passing);
  judge.record(kFiltered);
  EXPECT_EQ(judge.state(), ReturnPathState::Broken);
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

// ---- witness messages (issue 28) ----

TEST(ReturnPathPacket, WitnessQueryIsByteExactBothFamilies) {
  const WitnessQuery query{0x0102030405060708ull, 3500, v4("192.0.2.1")};
  const std::array<uint8_t, kWitnessQuerySize> expected = {
      'v', 'i', 'p', 'd', 'R', 'W',  // magic
      0x01,                          // version
      0x01,                          // type: query
      1, 2, 3, 4, 5, 6, 7, 8,        // nonce
      0x00, 0x00, 0x0d, 0xac,        // window 3500 ms
      0x04, 0x00, 0x00, 0x00,        // family 4, zero
      192, 0, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // target, padded to 16
  };
  EXPECT_EQ(buildWitnessQuery(query), expected);
  EXPECT_EQ(parseWitnessQuery(expected), query);
  const WitnessQuery query6{7, 1, *bgp::IpAddress::parse("2001:db8::1")};
  auto bytes6 = buildWitnessQuery(query6);
  EXPECT_EQ(bytes6[20], 6);
  EXPECT_EQ(bytes6[24], 0x20);
  EXPECT_EQ(bytes6[39], 0x01);
  EXPECT_EQ(parseWitnessQuery(bytes6), query6);
}

TEST(ReturnPathPacket, WitnessAnswerIsByteExact) {
  const WitnessAnswer answer{0x0102030405060708ull, 12, 3};
  const std::array<uint8_t, kWitnessAnswerSize> expected = {
      'v', 'i', 'p', 'd', 'R', 'W', 0x01,
      0x02,                    // type: answer
      1, 2, 3, 4, 5, 6, 7, 8,  // the query's nonce
      0, 0, 0, 12,             // answers from the target within the window
      0, 0, 0, 3,              // answers for the querier dropped for its budget
  };
  EXPECT_EQ(buildWitnessAnswer(answer), expected);
  EXPECT_EQ(parseWitnessAnswer(expected), answer);
}

TEST(ReturnPathPacket, WitnessMessagesRejectEverythingElse) {
  auto query = buildWitnessQuery({1, 2, v4("192.0.2.1")});
  auto answer = buildWitnessAnswer({1, 2, 3});
  // Each one as the other, truncated, lengthened, with a wrong version, family or padding.
  EXPECT_FALSE(parseWitnessAnswer(query));
  EXPECT_FALSE(parseWitnessQuery(answer));
  EXPECT_FALSE(parseRelay(query));
  EXPECT_FALSE(parseWitnessQuery(std::span(query.data(), query.size() - 1)));
  EXPECT_FALSE(parseWitnessAnswer(std::span(answer.data(), answer.size() - 1)));
  std::vector<uint8_t> longer(query.begin(), query.end());
  longer.push_back(0);
  EXPECT_FALSE(parseWitnessQuery(longer));
  for (size_t at : {size_t{6}, size_t{20}, size_t{21}, size_t{30}}) {
    auto bad = query;
    bad[at] ^= 0x09;
    EXPECT_FALSE(parseWitnessQuery(bad)) << "byte " << at;
  }
  // Every truncation of every message parses as nothing, never as something else.
  for (size_t n = 0; n < query.size(); ++n) {
    EXPECT_FALSE(parseWitnessQuery(std::span(query.data(), n)));
    EXPECT_FALSE(parseWitnessAnswer(std::span(query.data(), n)));
    EXPECT_FALSE(parseRelay(std::span(query.data(), n)));
  }
}

// ---- the relay policy (issue 28) ----

using Clock = RelayPolicy::Clock;
const Clock::time_point kT0 = Clock::time_point() + std::chrono::hours(1);

bgp::Prefix prefix(const char* text) { return *bgp::Prefix::parse(text); }

// Node 1 (192.0.2.11 on 192.0.2.0/24), peer and target 192.0.2.1, VIP 203.0.113.10.
RelayPolicy labPolicy(RelayPolicy::Limits limits = {}) {
  RelayPolicy policy(9475, limits);
  policy.setNode({.sources = {v4("192.0.2.1")},
                  .vips = {v4("203.0.113.10"), *bgp::IpAddress::parse("2001:db8:ffff::10")},
                  .own = {v4("192.0.2.11"), v4("127.0.0.1")},
                  .networks = {prefix("192.0.2.0/24"), prefix("2001:db8:1::/64")}});
  return policy;
}

// An answer from `from` to `to` to a VIP-sourced echo that names `relay`:`port`.
EchoReply answer(const char* from, const char* to, const char* relay, uint16_t port = 9475,
                 uint64_t nonce = 1) {
  return {*bgp::IpAddress::parse(from), *bgp::IpAddress::parse(to), 1,
          {EchoKind::VipSourced, nonce, *bgp::IpAddress::parse(relay), port}};
}

TEST(RelayPolicy, RelaysAGenuineAnswerToAnotherNode) {
  auto policy = labPolicy();
  EXPECT_EQ(policy.judge(answer("192.0.2.1", "203.0.113.10", "192.0.2.12"), kT0), RelayDrop::None);
}

TEST(RelayPolicy, DropsAnswersFromAnyoneButAPeerOrTarget) {
  auto policy = labPolicy();
  // A host that is no peer, sending from its own address (issue 28's flood).
  EXPECT_EQ(policy.judge(answer("192.0.2.99", "203.0.113.10", "192.0.2.12"), kT0),
            RelayDrop::Source);
  // ... and answers it sends to the node's own address rather than a VIP.
  EXPECT_EQ(policy.judge(answer("192.0.2.1", "192.0.2.11", "192.0.2.12"), kT0),
            RelayDrop::Destination);
  // Neither reached the ledger: a witness query is told nothing arrived.
  EXPECT_EQ(policy.witness({1, 5000, v4("192.0.2.99")}, v4("192.0.2.12"), kT0).answers, 0u);
  EXPECT_EQ(policy.othersAnswersSince(v4("192.0.2.1"), kT0), 0u);
}

TEST(RelayPolicy, RelaysOnlyToUnicastNodeAddressesOnTheNodeNetworksAndTheRelayPort) {
  auto policy = labPolicy();
  uint64_t nonce = 100;
  auto judge = [&](const char* relay, uint16_t port = 9475) {
    return policy.judge(answer("192.0.2.1", "203.0.113.10", relay, port, ++nonce), kT0);
  };
  EXPECT_EQ(judge("198.51.100.7"), RelayDrop::RelayAddress);   // another host, off the networks
  EXPECT_EQ(judge("224.0.0.1"), RelayDrop::RelayAddress);      // multicast
  EXPECT_EQ(judge("255.255.255.255"), RelayDrop::RelayAddress);  // limited broadcast
  EXPECT_EQ(judge("192.0.2.255"), RelayDrop::RelayAddress);    // the network's broadcast
  EXPECT_EQ(judge("192.0.2.0"), RelayDrop::RelayAddress);      // the network address
  EXPECT_EQ(judge("127.0.0.1"), RelayDrop::RelayAddress);      // loopback
  EXPECT_EQ(judge("0.0.0.0"), RelayDrop::RelayAddress);        // unspecified
  EXPECT_EQ(judge("203.0.113.10"), RelayDrop::RelayAddress);   // a VIP
  EXPECT_EQ(judge("192.0.2.11"), RelayDrop::RelayAddress);     // this node (a late own answer)
  EXPECT_EQ(judge("ff02::1"), RelayDrop::RelayAddress);        // IPv6 multicast
  EXPECT_EQ(judge("::1"), RelayDrop::RelayAddress);            // IPv6 loopback
  EXPECT_EQ(judge("fe80::1"), RelayDrop::RelayAddress);        // link-local: no scope
  EXPECT_EQ(judge("::ffff:192.0.2.12"), RelayDrop::RelayAddress);  // IPv4-mapped
  EXPECT_EQ(judge("2001:db8:2::12"), RelayDrop::RelayAddress);  // another IPv6 network
  EXPECT_EQ(judge("192.0.2.12", 53), RelayDrop::RelayPort);      // any other port
  EXPECT_EQ(judge("192.0.2.12", 9476), RelayDrop::RelayPort);
  EXPECT_EQ(judge("192.0.2.12"), RelayDrop::None);
  EXPECT_EQ(judge("2001:db8:1::12"), RelayDrop::None);
}

TEST(RelayPolicy, RelaysEachNonceOnce) {
  auto policy = labPolicy();
  auto a = answer("192.0.2.1", "203.0.113.10", "192.0.2.12", 9475, 42);
  EXPECT_EQ(policy.judge(a, kT0), RelayDrop::None);
  EXPECT_EQ(policy.judge(a, kT0), RelayDrop::Duplicate);
}

TEST(RelayPolicy, AFloodNamingOneSenderSpendsOnlyThatSendersBudget) {
  RelayPolicy::Limits limits;
  limits.burst = 10;
  limits.perSecond = 5;
  auto policy = labPolicy(limits);
  uint64_t nonce = 0;
  // 1000 forged answers in one second, all naming node 3.
  int relayed = 0;
  int dropped = 0;
  for (int i = 0; i < 1000; ++i) {
    auto when = kT0 + std::chrono::milliseconds(i);
    auto drop = policy.judge(answer("192.0.2.1", "203.0.113.10", "192.0.2.13", 9475, ++nonce),
                             when);
    (drop == RelayDrop::None ? relayed : dropped)++;
    EXPECT_TRUE(drop == RelayDrop::None || drop == RelayDrop::Budget);
  }
  EXPECT_LE(relayed, 10 + 5 + 1);
  EXPECT_GE(dropped, 1000 - 16);
  // Node 2's genuine answers in the same second are all relayed.
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(policy.judge(answer("192.0.2.1", "203.0.113.10", "192.0.2.12", 9475, ++nonce),
                           kT0 + std::chrono::milliseconds(999)),
              RelayDrop::None);
  }
  // Node 3, asking as a witness, learns its answers were dropped: its silence proves nothing.
  // (The ledger keeps at most ledgerPerKey entries per node: bounded memory under a flood.)
  auto told = policy.witness({7, 2000, v4("192.0.2.1")}, v4("192.0.2.13"),
                             kT0 + std::chrono::seconds(1));
  EXPECT_EQ(told.dropped, limits.ledgerPerKey);
  EXPECT_EQ(policy.witness({7, 2000, v4("192.0.2.1")}, v4("192.0.2.12"),
                           kT0 + std::chrono::seconds(1)).dropped,
            0u);
  // The budget refills.
  EXPECT_EQ(policy.judge(answer("192.0.2.1", "203.0.113.10", "192.0.2.13", 9475, ++nonce),
                         kT0 + std::chrono::seconds(5)),
            RelayDrop::None);
}

TEST(RelayPolicy, ManySendersKeepTheBucketsBounded) {
  RelayPolicy::Limits limits;
  limits.maxSenders = 16;
  auto policy = labPolicy(limits);
  uint64_t nonce = 0;
  for (int host = 1; host < 250; ++host) {
    auto relay = fmt::format("192.0.2.{}", host == 11 ? 12 : host);
    auto a = answer("192.0.2.1", "203.0.113.10", relay.c_str(), 9475, ++nonce);
    EXPECT_EQ(policy.judge(a, kT0), RelayDrop::None) << relay;
  }
}

TEST(RelayPolicy, TheLedgerTellsWitnessesWhatReachedThisNodeWithinTheWindow) {
  auto policy = labPolicy();
  const auto target = v4("192.0.2.1");
  policy.noteOwnAnswer(target, kT0);
  EXPECT_EQ(policy.othersAnswersSince(target, kT0), 0u);  // its own answers are no evidence
  policy.judge(answer("192.0.2.1", "203.0.113.10", "192.0.2.12", 9475, 5),
               kT0 + std::chrono::seconds(1));
  EXPECT_EQ(policy.othersAnswersSince(target, kT0), 1u);
  EXPECT_EQ(policy.witness({1, 3000, target}, v4("192.0.2.12"), kT0 + std::chrono::seconds(2))
                .answers,
            2u);
  EXPECT_EQ(policy.witness({1, 1500, target}, v4("192.0.2.12"), kT0 + std::chrono::seconds(2))
                .answers,
            1u);
  // A window beyond the ledger's is cut to it; old entries expire.
  EXPECT_EQ(policy.witness({1, 0xFFFFFFFF, target}, v4("192.0.2.12"),
                           kT0 + std::chrono::seconds(40))
                .answers,
            0u);
  EXPECT_EQ(policy.witness({9, 3000, target}, v4("192.0.2.12"), kT0).nonce, 9u);
}

TEST(RelayPolicy, WitnessQueriesAreAnsweredOnlyToNodesAndAtABoundedRate) {
  auto policy = labPolicy();
  EXPECT_FALSE(policy.mayAnswerWitness(v4("198.51.100.7"), kT0));  // off the node networks
  EXPECT_FALSE(policy.mayAnswerWitness(v4("192.0.2.255"), kT0));
  EXPECT_FALSE(policy.mayAnswerWitness(v4("203.0.113.10"), kT0));
  EXPECT_FALSE(policy.mayAnswerWitness(v4("224.0.0.5"), kT0));
  int answered = 0;
  for (int i = 0; i < 1000; ++i) {
    answered += policy.mayAnswerWitness(v4("192.0.2.12"), kT0 + std::chrono::milliseconds(i));
  }
  EXPECT_LE(answered, 41);
  EXPECT_GE(answered, 20);
}

TEST(RelayPolicy, PrefixContainsAndUnicastNodeAddress) {
  EXPECT_TRUE(prefix("192.0.2.0/24").contains(v4("192.0.2.200")));
  EXPECT_FALSE(prefix("192.0.2.0/25").contains(v4("192.0.2.200")));
  EXPECT_TRUE(prefix("0.0.0.0/0").contains(v4("198.51.100.1")));
  EXPECT_FALSE(prefix("2001:db8::/32").contains(v4("192.0.2.1")));
  EXPECT_TRUE(prefix("2001:db8::/33").contains(*bgp::IpAddress::parse("2001:db8:7fff::1")));
  EXPECT_FALSE(prefix("2001:db8::/33").contains(*bgp::IpAddress::parse("2001:db8:8000::1")));
  EXPECT_TRUE(unicastNodeAddress(v4("192.0.2.1")));
  EXPECT_FALSE(unicastNodeAddress(v4("169.254.1.1")));
  EXPECT_FALSE(unicastNodeAddress(v4("240.0.0.1")));
  EXPECT_TRUE(unicastNodeAddress(*bgp::IpAddress::parse("2001:db8::1")));
}

}  // namespace
}  // namespace vipd::daemon
