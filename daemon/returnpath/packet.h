// The return-path check's wire formats (issue 19): pure, no sockets. See checker.h
// for why they exist.
//
// Echo: an ICMP echo request (RFC 792 type 8; RFC 4443 type 128) whose data is
//   "vipdRP"  6 bytes magic
//   version   1 byte (kEchoVersion)
//   kind      1 byte: 1 node-sourced, 2 VIP-sourced
//   nonce     8 bytes, random per echo: what the sender matches an answer against
//   relay     1 byte family (4 or 6), 1 byte zero, 2 bytes port, 16 bytes address (IPv4 in the
//             first 4, the rest zero): where whoever receives the answer sends it (the
//             sender's node address)
// 36 bytes in all. The echo reply carries the data back unchanged, so whichever node the fabric
// delivers it to learns who asked.
//
// Relay: one UDP datagram from the node that received a VIP-sourced answer to the sender:
//   "vipdRR" 6 bytes magic, version 1 byte, zero 1 byte, nonce 8 bytes (16 bytes in all).
//
// Witness query and answer (issue 28), on the relay port between vipd nodes: a sender whose
// VIP-sourced echoes went unanswered asks a node that relayed its answers before whether answers
// from the same target still reach it. Query (40 bytes):
//   "vipdRW" 6 bytes magic, version 1 byte, type 1 byte (1 query), nonce 8 bytes (random, the
//   answer must carry it back), window 4 bytes (milliseconds: how far back to count), family
//   1 byte (4 or 6), zero 3 bytes, target address 16 bytes (IPv4 in the first 4, the rest zero).
// Answer (24 bytes):
//   "vipdRW", version, type (2 answer), the query's nonce, answers 4 bytes (VIP-sourced answers
//   from the target that reached the witness within the window, for any sender), dropped
//   4 bytes (answers for the querier the witness received but did not relay within the window:
//   its relay budget was spent, so the querier's silence proves nothing).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "bgp/ip_address.h"

namespace vipd::daemon {

inline constexpr uint8_t kEchoVersion = 1;
inline constexpr size_t kEchoDataSize = 36;
inline constexpr size_t kRelaySize = 16;
inline constexpr size_t kWitnessQuerySize = 40;
inline constexpr size_t kWitnessAnswerSize = 24;

enum class EchoKind : uint8_t { NodeSourced = 1, VipSourced = 2 };

struct EchoData {
  EchoKind kind = EchoKind::NodeSourced;
  uint64_t nonce = 0;
  bgp::IpAddress relayAddress;
  uint16_t relayPort = 0;
  auto operator<=>(const EchoData&) const = default;
};

// An ICMPv4 echo request (header and data), checksum filled in.
std::vector<uint8_t> buildEchoRequestV4(uint16_t id, uint16_t sequence, const EchoData& data);
// An ICMPv6 echo request with a zero checksum: the kernel fills it in on a raw ICMPv6 socket
// (RFC 3542 section 3.1), since it needs the source address the kernel picks.
std::vector<uint8_t> buildEchoRequestV6(uint16_t id, uint16_t sequence, const EchoData& data);

// A received echo reply that carries vipd echo data.
struct EchoReply {
  bgp::IpAddress from;  // who answered: the echo's target
  bgp::IpAddress to;    // whom the answer was sent to: the echo's source
  uint16_t id = 0;
  EchoData data;
};

// What a raw IPv4 ICMP socket reads: the IPv4 header, then the ICMP message. nullopt for
// anything but an intact echo reply carrying vipd echo data (checksum checked; other ICMP, other
// programs' pings, truncated or garbled packets).
std::optional<EchoReply> parseEchoReplyV4(std::span<const uint8_t> packet);
// What a raw ICMPv6 socket reads: the ICMPv6 message alone (the kernel has checked its
// checksum); `from` and `to` come from recvmsg (the source and IPV6_PKTINFO).
std::optional<EchoReply> parseEchoReplyV6(std::span<const uint8_t> message,
                                          const bgp::IpAddress& from, const bgp::IpAddress& to);

// Whether a packet that parseEchoReplyV4 (ipv4Header: the IPv4 header first) or
// parseEchoReplyV6 refused still starts its echo data with vipd's echo magic: a truncated,
// garbled or forged vipd answer rather than someone else's ping. Counted, never acted on.
bool carriesEchoMagic(std::span<const uint8_t> packet, bool ipv4Header);

std::array<uint8_t, kRelaySize> buildRelay(uint64_t nonce);
// The nonce of a relay datagram; nullopt for anything else.
std::optional<uint64_t> parseRelay(std::span<const uint8_t> datagram);

struct WitnessQuery {
  uint64_t nonce = 0;
  uint32_t windowMs = 0;
  bgp::IpAddress target;
  auto operator<=>(const WitnessQuery&) const = default;
};
struct WitnessAnswer {
  uint64_t nonce = 0;
  uint32_t answers = 0;
  uint32_t dropped = 0;
  auto operator<=>(const WitnessAnswer&) const = default;
};

std::array<uint8_t, kWitnessQuerySize> buildWitnessQuery(const WitnessQuery& query);
std::array<uint8_t, kWitnessAnswerSize> buildWitnessAnswer(const WitnessAnswer& answer);
// nullopt for anything but an intact query (or answer) of this version.
std::optional<WitnessQuery> parseWitnessQuery(std::span<const uint8_t> datagram);
std::optional<WitnessAnswer> parseWitnessAnswer(std::span<const uint8_t> datagram);

// The Internet checksum (RFC 1071) of `bytes`.
uint16_t internetChecksum(std::span<const uint8_t> bytes);

}  // namespace vipd::daemon
