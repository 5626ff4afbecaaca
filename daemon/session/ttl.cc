#include "daemon/session/ttl.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "daemon/session/kernel_counters.h"

namespace vipd::daemon {
namespace {

tl::expected<void, std::string> setInt(int fd, int level, int option, const char* name, int value,
                                       const bgp::IpAddress& peer) {
  if (::setsockopt(fd, level, option, &value, sizeof value) != 0) {
    return tl::unexpected(fmt::format("cannot set {} {} on the socket for {}: {}", name, value,
                                      peer.toString(), std::strerror(errno)));
  }
  return {};
}

}  // namespace

SessionTtl sessionTtl(const config::Peer& peer, bool ebgp) {
  if (peer.ttlSecurity) {
    return kGtsmTtl;
  }
  if (!ebgp) {
    return {64, false};
  }
  return {peer.ebgpMultihop > 0 ? peer.ebgpMultihop : 1, false};
}

tl::expected<void, std::string> applySessionTtl(int fd, const bgp::IpAddress& peer,
                                                const SessionTtl& ttl) {
  // Level IPPROTO_IP also works on an AF_INET6 socket whose peer is IPv4 (::ffff:a.b.c.d).
  bool v4 = peer.isV4();
  int level = v4 ? IPPROTO_IP : IPPROTO_IPV6;
  auto sent = v4 ? setInt(fd, level, IP_TTL, "IP_TTL", ttl.send, peer)
                 : setInt(fd, level, IPV6_UNICAST_HOPS, "IPV6_UNICAST_HOPS", ttl.send, peer);
  if (!sent || !ttl.gtsm) {
    return sent;
  }
  return v4 ? setInt(fd, level, IP_MINTTL, "IP_MINTTL (GTSM)", kGtsmTtl.send, peer)
            : setInt(fd, level, IPV6_MINHOPCOUNT, "IPV6_MINHOPCOUNT (GTSM)", kGtsmTtl.send, peer);
}

std::optional<uint64_t> kernelMinTtlDrops() {
  auto counters = kernelTcpExt();
  auto it = counters.find("TCPMinTTLDrop");
  return it == counters.end() ? std::nullopt : std::optional(it->second);
}

}  // namespace vipd::daemon
