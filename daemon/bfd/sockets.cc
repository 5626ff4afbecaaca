#include "daemon/bfd/sockets.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <boost/asio/ip/v6_only.hpp>
#include <cerrno>
#include <cstring>

#include "bfd/bfd.h"
#include "daemon/base/asio_address.h"
#include "daemon/base/port_bind_error.h"

namespace vipd::daemon {
namespace {

namespace asio = boost::asio;
using udp = asio::ip::udp;

// RFC 5881 section 4: the source port is in 49152-65535 and unique per session.
constexpr uint16_t kFirstSourcePort = 49152;
constexpr uint16_t kLastSourcePort = 65535;
// DSCP CS6 (network control), as routers send BFD, so a congested fabric queue does not drop
// the very packets that say the node is alive.
constexpr int kTrafficClass = 0xC0;

std::string endpointText(const bgp::IpAddress& address, uint16_t port) {
  return address.isV4() ? fmt::format("{}:{}", address.toString(), port)
                        : fmt::format("[{}]:{}", address.toString(), port);
}

// TTL 255 (an error if refused: RFC 5881 requires it) and DSCP CS6 (best effort: a kernel that
// refuses the traffic class still sends the packets).
void setTransmitOptions(udp::socket& socket, bool v6, boost::system::error_code& ec) {
  int fd = socket.native_handle();
  const int ttl = kBfdSingleHopTtl;
  if ((v6 ? ::setsockopt(fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, &ttl, sizeof ttl)
          : ::setsockopt(fd, IPPROTO_IP, IP_TTL, &ttl, sizeof ttl)) != 0) {
    ec.assign(errno, boost::system::system_category());
    return;
  }
  if (v6) {
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &kTrafficClass, sizeof kTrafficClass);
  } else {
    ::setsockopt(fd, IPPROTO_IP, IP_TOS, &kTrafficClass, sizeof kTrafficClass);
  }
}

// A random port in the range, then the next ones: unique per session, and not the same after
// every restart.
void bindSourcePort(udp::socket& socket, const asio::ip::address& local, std::mt19937& rng,
                    boost::system::error_code& ec) {
  std::uniform_int_distribution<int> pick(kFirstSourcePort, kLastSourcePort);
  int first = pick(rng);
  constexpr int kRange = kLastSourcePort - kFirstSourcePort + 1;
  for (int i = 0; i < kRange; ++i) {
    uint16_t port =
        static_cast<uint16_t>(kFirstSourcePort + (first - kFirstSourcePort + i) % kRange);
    socket.bind(udp::endpoint(local, port), ec);
    if (ec != asio::error::address_in_use) {
      return;
    }
  }
}

std::optional<bgp::IpAddress> sourceOf(const sockaddr_storage& from) {
  if (from.ss_family == AF_INET) {
    const auto* sin = reinterpret_cast<const sockaddr_in*>(&from);
    return bgp::IpAddress::v4(ntohl(sin->sin_addr.s_addr));
  }
  if (from.ss_family == AF_INET6) {
    const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(&from);
    std::array<uint8_t, 16> raw;
    std::memcpy(raw.data(), &sin6->sin6_addr, 16);
    return bgp::IpAddress::v6(raw);
  }
  return std::nullopt;
}

}  // namespace

tl::expected<void, std::string> openBfdReceiver(udp::socket& socket, bool v6, bool multihop) {
  uint16_t port = multihop ? bfd::kMultihopPort : bfd::kSingleHopPort;
  boost::system::error_code ec;
  socket.open(v6 ? udp::v6() : udp::v4(), ec);
  int fd = ec ? -1 : socket.native_handle();
  int on = 1;
  if (!ec && v6) {
    socket.set_option(asio::ip::v6_only(true), ec);
  }
  // The received TTL / hop limit, for the RFC 5881 section 5 (GTSM) check.
  if (!ec && (v6 ? ::setsockopt(fd, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, &on, sizeof on)
                 : ::setsockopt(fd, IPPROTO_IP, IP_RECVTTL, &on, sizeof on)) != 0) {
    ec.assign(errno, boost::system::system_category());
  }
  // No SO_REUSEADDR: another BFD daemon on this port must be an error, not a silent split
  // of the packets between the two.
  if (!ec) {
    socket.bind(udp::endpoint(v6 ? udp::v6() : udp::v4(), port), ec);
  }
  if (ec) {
    return tl::unexpected(portBindError(
        fmt::format("cannot receive BFD on UDP port {} ({})", port, v6 ? "IPv6" : "IPv4"), port,
        ec.value(), ec.message(),
        {.inUse = "another BFD speaker (bfdd, BIRD, a second vipd) holds it on this node: "
                  "stop it or turn peers[].bfd off"}));
  }
  return {};
}

tl::expected<std::string, std::string> openBfdTransmitter(
    udp::socket& socket, const bgp::IpAddress& peer, const std::optional<bgp::IpAddress>& source,
    bool multihop, std::mt19937& rng) {
  const bool v6 = peer.isV6();
  uint16_t peerPort = multihop ? bfd::kMultihopPort : bfd::kSingleHopPort;
  boost::system::error_code ec;
  socket.open(v6 ? udp::v6() : udp::v4(), ec);
  if (!ec) {
    setTransmitOptions(socket, v6, ec);
  }
  auto local = source ? toAsio(*source)
                      : (v6 ? asio::ip::address(asio::ip::address_v6::any())
                            : asio::ip::address(asio::ip::address_v4::any()));
  if (!ec) {
    bindSourcePort(socket, local, rng, ec);
  }
  if (!ec) {
    socket.connect(udp::endpoint(toAsio(peer), peerPort), ec);
  }
  if (!ec) {
    socket.non_blocking(true, ec);
  }
  if (ec) {
    return tl::unexpected(
        fmt::format("cannot open the BFD socket to {}{}: {}", endpointText(peer, peerPort),
                    source ? " from " + source->toString() : std::string(), ec.message()));
  }
  auto endpoint = socket.local_endpoint(ec);
  return ec ? std::string("?") : endpointText(fromAsio(endpoint.address()), endpoint.port());
}

std::optional<BfdDatagram> receiveBfdDatagram(udp::socket& socket, std::span<uint8_t> buffer) {
  sockaddr_storage from{};
  iovec iov{buffer.data(), buffer.size()};
  alignas(cmsghdr) std::array<char, 128> control{};
  msghdr msg{};
  msg.msg_name = &from;
  msg.msg_namelen = sizeof from;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  ssize_t n = ::recvmsg(socket.native_handle(), &msg, MSG_DONTWAIT);
  if (n < 0) {
    return std::nullopt;  // EAGAIN, or an error the next wait reports again
  }
  BfdDatagram datagram{static_cast<size_t>(n), sourceOf(from), -1};
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if ((c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TTL) ||
        (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_HOPLIMIT)) {
      std::memcpy(&datagram.ttl, CMSG_DATA(c), sizeof datagram.ttl);
    }
  }
  return datagram;
}

}  // namespace vipd::daemon
