#include "daemon/returnpath/raw_socket.h"

#include <netinet/icmp6.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <optional>

namespace vipd::daemon {
namespace {

// <linux/icmp.h>'s ICMP_FILTER (a raw IPv4 ICMP socket option: a bit set per ICMP type drops
// that type), spelled here because that header clashes with <netinet/ip_icmp.h>.
constexpr int kIcmpFilterOption = 1;
constexpr uint32_t kIcmpV4EchoReplyType = 0;
// Answers read per wake-up, so a flood of echo replies cannot hold the io_context thread.
constexpr int kMaxReadsPerWakeup = 64;

}  // namespace

namespace raw_socket {

sockaddr_storage toSockaddr(const bgp::IpAddress& a, uint16_t port, socklen_t& length) {
  sockaddr_storage out{};
  if (a.isV4()) {
    auto* sin = reinterpret_cast<sockaddr_in*>(&out);
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port);
    std::memcpy(&sin->sin_addr, a.bytes.data(), 4);
    length = sizeof(sockaddr_in);
  } else {
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&out);
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(port);
    std::memcpy(&sin6->sin6_addr, a.bytes.data(), 16);
    length = sizeof(sockaddr_in6);
  }
  return out;
}

bgp::IpAddress fromIn6(const in6_addr& a) {
  std::array<uint8_t, 16> bytes{};
  std::memcpy(bytes.data(), &a, 16);
  return bgp::IpAddress::v6(bytes);
}

}  // namespace raw_socket

using raw_socket::fromIn6;
using raw_socket::toSockaddr;

tl::expected<std::unique_ptr<ReturnPathChecker::RawSocket>, int> ReturnPathChecker::RawSocket::open(
    asio::io_context& io, bool v6) {
  const int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC,
                          v6 ? int{IPPROTO_ICMPV6} : int{IPPROTO_ICMP});
  if (fd < 0) {
    return tl::unexpected(errno);
  }
  bool ok = true;
  if (v6) {
    icmp6_filter filter{};
    ICMP6_FILTER_SETBLOCKALL(&filter);
    ICMP6_FILTER_SETPASS(ICMP6_ECHO_REPLY, &filter);
    const int on = 1;
    ok = ::setsockopt(fd, IPPROTO_ICMPV6, ICMP6_FILTER, &filter, sizeof(filter)) == 0 &&
         ::setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &on, sizeof(on)) == 0;
  } else {
    const uint32_t dropAllBut = ~(1u << kIcmpV4EchoReplyType);
    ok = ::setsockopt(fd, SOL_RAW, kIcmpFilterOption, &dropAllBut, sizeof(dropAllBut)) == 0;
  }
  if (!ok) {
    const int error = errno;
    ::close(fd);
    return tl::unexpected(error);
  }
  return std::unique_ptr<RawSocket>(new RawSocket(io, fd, v6));
}

int ReturnPathChecker::RawSocket::send(const std::vector<uint8_t>& message,
                                       const bgp::IpAddress& source, const bgp::IpAddress& to) {
  socklen_t length = 0;
  auto destination = toSockaddr(to, 0, length);
  iovec iov{const_cast<uint8_t*>(message.data()), message.size()};
  alignas(cmsghdr) std::array<uint8_t, CMSG_SPACE(sizeof(in6_pktinfo))> control{};
  msghdr msg{};
  msg.msg_name = &destination;
  msg.msg_namelen = length;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  cmsghdr* c = nullptr;
  if (v6_) {
    msg.msg_controllen = CMSG_SPACE(sizeof(in6_pktinfo));
    c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = IPPROTO_IPV6;
    c->cmsg_type = IPV6_PKTINFO;
    c->cmsg_len = CMSG_LEN(sizeof(in6_pktinfo));
    in6_pktinfo info{};
    std::memcpy(&info.ipi6_addr, source.bytes.data(), 16);
    std::memcpy(CMSG_DATA(c), &info, sizeof(info));
  } else {
    msg.msg_controllen = CMSG_SPACE(sizeof(in_pktinfo));
    c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = IPPROTO_IP;
    c->cmsg_type = IP_PKTINFO;
    c->cmsg_len = CMSG_LEN(sizeof(in_pktinfo));
    in_pktinfo info{};
    std::memcpy(&info.ipi_spec_dst, source.bytes.data(), 4);
    std::memcpy(CMSG_DATA(c), &info, sizeof(info));
  }
  return ::sendmsg(descriptor_.native_handle(), &msg, MSG_DONTWAIT) < 0 ? errno : 0;
}

void ReturnPathChecker::RawSocket::readAvailable(
    const std::function<void(const EchoReply&)>& onReply, uint64_t& malformed) {
  std::array<uint8_t, 1500> buffer{};
  for (int i = 0; i < kMaxReadsPerWakeup; ++i) {
    sockaddr_in6 from{};
    alignas(cmsghdr) std::array<uint8_t, CMSG_SPACE(sizeof(in6_pktinfo))> control{};
    iovec iov{buffer.data(), buffer.size()};
    msghdr msg{};
    msg.msg_name = &from;
    msg.msg_namelen = sizeof(from);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    const ssize_t n = ::recvmsg(descriptor_.native_handle(), &msg, MSG_DONTWAIT);
    if (n < 0) {
      return;  // EAGAIN: all read; anything else: try again on the next wake-up
    }
    std::span<const uint8_t> packet(buffer.data(), static_cast<size_t>(n));
    std::optional<EchoReply> reply;
    if (!v6_) {
      reply = parseEchoReplyV4(packet);
    } else {
      std::optional<bgp::IpAddress> to;
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
          in6_pktinfo info{};
          std::memcpy(&info, CMSG_DATA(c), sizeof(info));
          to = fromIn6(info.ipi6_addr);
        }
      }
      if (to) {
        reply = parseEchoReplyV6(packet, fromIn6(from.sin6_addr), *to);
      }
    }
    if (reply) {
      onReply(*reply);
    } else if (carriesEchoMagic(packet, !v6_)) {
      ++malformed;
    }
  }
}

}  // namespace vipd::daemon
