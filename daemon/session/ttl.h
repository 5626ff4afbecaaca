// The IP TTL (IPv6 hop limit) of a BGP session's sockets, and GTSM (RFC 5082,
// peers[].ttlSecurity): send with TTL 255 and have the kernel drop every segment from the peer
// that arrives with less, so that only a router on the link can reach the session.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <tl/expected.hpp>

#include "bgp/ip_address.h"
#include "config/config.h"

namespace vipd::daemon {

struct SessionTtl {
  int send = 64;      // IP_TTL / IPV6_UNICAST_HOPS of what vipd sends
  bool gtsm = false;  // also IP_MINTTL / IPV6_MINHOPCOUNT 255 for what arrives
  auto operator<=>(const SessionTtl&) const = default;
};

// RFC 5082 section 3: GTSM peers send with, and accept only, the maximum TTL.
inline constexpr SessionTtl kGtsmTtl{255, true};

// GTSM: 255 both ways. Otherwise eBGP to a directly connected peer sends TTL 1 and multihop
// raises it to ebgpMultihop (RFC 4271 does not mandate this, but every router expects it);
// iBGP sends 64.
SessionTtl sessionTtl(const config::Peer& peer, bool ebgp);

// Sets `ttl` on socket `fd` for a session with `peer` (the options of the peer's family, so an
// IPv4 peer on a dual-stack socket gets the IPv4 ones). Used on a socket before connect() and
// on one the listener just accepted: the kernel completed that handshake before vipd saw it, so
// for accepted connections the minimum TTL holds from the first segment after the handshake.
// An error names the option, the peer and the kernel's reason; the caller must not use the
// socket then (a GTSM session without its check would be a silent downgrade).
[[nodiscard]] tl::expected<void, std::string> applySessionTtl(int fd, const bgp::IpAddress& peer,
                                                              const SessionTtl& ttl);

// The kernel's count of TCP segments dropped for arriving below a socket's minimum TTL
// (TcpExt TCPMinTTLDrop in /proc/net/netstat; IPv4 and IPv6, for the whole network namespace).
// GTSM drops are silent to the socket, so this is the only trace of them. nullopt when the
// kernel does not report it.
std::optional<uint64_t> kernelMinTtlDrops();

}  // namespace vipd::daemon
