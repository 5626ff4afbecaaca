// The UDP sockets of BFD (RFC 5881 single hop, RFC 5883 multihop), opened and read with the socket
// options the RFCs require: the receivers on UDP 3784/4784 report each packet's TTL (hop limit),
// and each session's transmit socket sends with TTL 255 and DSCP CS6 from its own source port.
// No protocol logic: BfdService decides what to send and what a received packet means.
#pragma once

#include <boost/asio/ip/udp.hpp>
#include <cstddef>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <tl/expected.hpp>

#include "bgp/ip_address.h"

namespace vipd::daemon {

// RFC 5881 section 5 / RFC 5082: single-hop packets are sent, and must arrive, with TTL 255.
inline constexpr int kBfdSingleHopTtl = 255;

// Opens `socket` as the receiver of single-hop (UDP 3784) or multihop (UDP 4784) BFD for one
// address family, bound to the wildcard address and asking for each packet's TTL. No
// SO_REUSEADDR, so a port another BFD speaker holds is an error: the message (portBindError)
// names the port and what to do about it.
[[nodiscard]] tl::expected<void, std::string> openBfdReceiver(boost::asio::ip::udp::socket& socket,
                                                              bool v6, bool multihop);

// Opens `socket` as one session's transmit socket: TTL 255, DSCP CS6 (best effort), bound to
// `source` (the wildcard address when unset) and a port from 49152-65535 (RFC 5881 section 4;
// a random one from `rng`, then the next free one), connected to the peer's BFD port and
// non-blocking. Returns the local endpoint as "address:port"; the error names the peer's
// endpoint and the source address.
[[nodiscard]] tl::expected<std::string, std::string> openBfdTransmitter(
    boost::asio::ip::udp::socket& socket, const bgp::IpAddress& peer,
    const std::optional<bgp::IpAddress>& source, bool multihop, std::mt19937& rng);

struct BfdDatagram {
  size_t size = 0;                     // bytes written to the buffer
  std::optional<bgp::IpAddress> from;  // unset for an address family other than IPv4 or IPv6
  int ttl = -1;                        // the received TTL or hop limit; -1 when not reported
};

// Reads one queued datagram from a receiver into `buffer` without blocking (recvmsg(), since
// Asio does not expose the TTL control message). nullopt when nothing is queued, or on an error
// the next wait reports again.
[[nodiscard]] std::optional<BfdDatagram> receiveBfdDatagram(boost::asio::ip::udp::socket& socket,
                                                            std::span<uint8_t> buffer);

}  // namespace vipd::daemon
