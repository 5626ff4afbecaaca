// GTSM (RFC 5082) and the session TTL policy: sessionTtl() is pure; applySessionTtl() is checked
// on real, unconnected sockets with getsockopt (no network needed).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "daemon/session/ttl.h"

namespace vipd::daemon {
namespace {

const bgp::IpAddress kPeerV4 = bgp::IpAddress::v4(0xC0000201u);  // 192.0.2.1
const bgp::IpAddress kPeerV6 = bgp::IpAddress::v6(
    {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1});  // 2001:db8::1

struct Socket {
  explicit Socket(int family) : fd(::socket(family, SOCK_STREAM, 0)) {}
  ~Socket() { ::close(fd); }
  int get(int level, int option) const {
    int value = -1;
    socklen_t length = sizeof value;
    EXPECT_EQ(::getsockopt(fd, level, option, &value, &length), 0);
    return value;
  }
  int fd;
};

TEST(SessionTtl, Policy) {
  config::Peer peer;
  EXPECT_EQ(sessionTtl(peer, true), (SessionTtl{1, false}));  // eBGP on the link
  EXPECT_EQ(sessionTtl(peer, false), (SessionTtl{64, false}));
  peer.ebgpMultihop = 3;
  EXPECT_EQ(sessionTtl(peer, true), (SessionTtl{3, false}));
  peer.ebgpMultihop = 1;
  peer.ttlSecurity = true;
  EXPECT_EQ(sessionTtl(peer, true), (SessionTtl{255, true}));
  EXPECT_EQ(sessionTtl(peer, false), (SessionTtl{255, true}));  // iBGP on the link too
}

TEST(SessionTtl, GtsmOnAnIpv4Socket) {
  Socket s(AF_INET);
  ASSERT_TRUE(applySessionTtl(s.fd, kPeerV4, kGtsmTtl).has_value());
  EXPECT_EQ(s.get(IPPROTO_IP, IP_TTL), 255);
  EXPECT_EQ(s.get(IPPROTO_IP, IP_MINTTL), 255);
}

TEST(SessionTtl, WithoutGtsmNoMinimumIsSet) {
  Socket s(AF_INET);
  ASSERT_TRUE(applySessionTtl(s.fd, kPeerV4, {1, false}).has_value());
  EXPECT_EQ(s.get(IPPROTO_IP, IP_TTL), 1);
  EXPECT_EQ(s.get(IPPROTO_IP, IP_MINTTL), 0);
}

TEST(SessionTtl, GtsmOnAnIpv6Socket) {
  Socket s(AF_INET6);
  ASSERT_TRUE(applySessionTtl(s.fd, kPeerV6, kGtsmTtl).has_value());
  EXPECT_EQ(s.get(IPPROTO_IPV6, IPV6_UNICAST_HOPS), 255);
  EXPECT_EQ(s.get(IPPROTO_IPV6, IPV6_MINHOPCOUNT), 255);
}

TEST(SessionTtl, AnIpv4PeerOnADualStackSocketGetsTheIpv4Options) {
  Socket s(AF_INET6);
  ASSERT_TRUE(applySessionTtl(s.fd, kPeerV4, kGtsmTtl).has_value());
  EXPECT_EQ(s.get(IPPROTO_IP, IP_MINTTL), 255);
}

TEST(SessionTtl, AKernelRefusalIsAnErrorNamingTheOptionAndPeer) {
  // IPv6 options on an IPv4 socket: the kernel refuses them.
  Socket s(AF_INET);
  auto set = applySessionTtl(s.fd, kPeerV6, kGtsmTtl);
  ASSERT_FALSE(set.has_value());
  EXPECT_NE(set.error().find("IPV6_UNICAST_HOPS 255"), std::string::npos) << set.error();
  EXPECT_NE(set.error().find("2001:db8::1"), std::string::npos) << set.error();
}

TEST(SessionTtl, TheKernelReportsMinTtlDrops) { EXPECT_TRUE(kernelMinTtlDrops().has_value()); }

}  // namespace
}  // namespace vipd::daemon
