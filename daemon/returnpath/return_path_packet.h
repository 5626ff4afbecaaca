// The return-path check's wire formats (issue 19): pure, no sockets. See return_path_checker.h
// for why they exist.
//
// Probe: an ICMP echo request (RFC 792 type 8; RFC 4443 type 128) whose data is
//   "vipdRP"  6 bytes magic
//   version   1 byte (kProbeVersion)
//   kind      1 byte: 1 node-sourced, 2 VIP-sourced
//   nonce     8 bytes, random per probe: what the prober matches an answer against
//   relay     1 byte family (4 or 6), 1 byte zero, 2 bytes port, 16 bytes address (IPv4 in the
//             first 4): where whoever receives the answer sends it (the prober's node address)
// 36 bytes in all. The echo reply carries the data back unchanged, so whichever node the fabric
// delivers it to learns who asked.
//
// Relay: one UDP datagram from the node that received a VIP-sourced answer to the prober:
//   "vipdRR" 6 bytes magic, version 1 byte, zero 1 byte, nonce 8 bytes (16 bytes in all).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "bgp/ip_address.h"

namespace vipd::daemon::returnpath {

inline constexpr uint8_t kProbeVersion = 1;
inline constexpr size_t kProbeDataSize = 36;
inline constexpr size_t kRelaySize = 16;

enum class ProbeKind : uint8_t { NodeSourced = 1, VipSourced = 2 };

struct ProbeData {
  ProbeKind kind = ProbeKind::NodeSourced;
  uint64_t nonce = 0;
  bgp::IpAddress relayAddress;
  uint16_t relayPort = 0;
  auto operator<=>(const ProbeData&) const = default;
};

// An ICMPv4 echo request (header and data), checksum filled in.
std::vector<uint8_t> buildEchoRequestV4(uint16_t id, uint16_t sequence, const ProbeData& data);
// An ICMPv6 echo request with a zero checksum: the kernel fills it in on a raw ICMPv6 socket
// (RFC 3542 section 3.1), since it needs the source address the kernel picks.
std::vector<uint8_t> buildEchoRequestV6(uint16_t id, uint16_t sequence, const ProbeData& data);

// A received echo reply that carries vipd probe data.
struct EchoReply {
  bgp::IpAddress from;  // who answered: the probe's target
  bgp::IpAddress to;    // whom the answer was sent to: the probe's source
  uint16_t id = 0;
  ProbeData data;
};

// What a raw IPv4 ICMP socket reads: the IPv4 header, then the ICMP message. nullopt for
// anything but an intact echo reply carrying vipd probe data (checksum checked; other ICMP, other
// programs' pings, truncated or garbled packets).
std::optional<EchoReply> parseEchoReplyV4(std::span<const uint8_t> packet);
// What a raw ICMPv6 socket reads: the ICMPv6 message alone (the kernel has checked its
// checksum); `from` and `to` come from recvmsg (the source and IPV6_PKTINFO).
std::optional<EchoReply> parseEchoReplyV6(std::span<const uint8_t> message,
                                          const bgp::IpAddress& from, const bgp::IpAddress& to);

std::array<uint8_t, kRelaySize> buildRelay(uint64_t nonce);
// The nonce of a relay datagram; nullopt for anything else.
std::optional<uint64_t> parseRelay(std::span<const uint8_t> datagram);

// The Internet checksum (RFC 1071) of `bytes`.
uint16_t internetChecksum(std::span<const uint8_t> bytes);

}  // namespace vipd::daemon::returnpath
