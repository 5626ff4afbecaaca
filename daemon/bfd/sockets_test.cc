// The BFD sockets on loopback, without root: the options RFC 5881/5883 require (TTL 255, the
// source port range, the peer's port), the receivers' TTL report and what an error says.
//
// The receiver tests bind UDP 3784 and 4784 on the host, so this file and service_test run one
// at a time (meson.build: is_parallel false), and fail, not skip, when another BFD speaker on
// the machine holds the ports.
#include "daemon/bfd/sockets.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <chrono>
#include <optional>
#include <random>
#include <string>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bfd/bfd.h"

namespace vipd::daemon {
namespace {

namespace asio = boost::asio;
using udp = asio::ip::udp;
using ::testing::HasSubstr;
using ::testing::StartsWith;

const bgp::IpAddress kLoopbackV4 = bgp::IpAddress::v4(0x7f000001);
const bgp::IpAddress kLoopbackV6 =
    bgp::IpAddress::v6({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1});

int intOption(udp::socket& socket, int level, int name) {
  int value = -1;
  socklen_t size = sizeof value;
  EXPECT_EQ(::getsockopt(socket.native_handle(), level, name, &value, &size), 0);
  return value;
}

// Waits (at most 2 s) until `socket` has a datagram queued.
bool readable(udp::socket& socket) {
  pollfd p{socket.native_handle(), POLLIN, 0};
  return ::poll(&p, 1, 2000) == 1;
}

// Sends `bytes` from a fresh socket with the given TTL (or hop limit) to `to`.
void sendWithTtl(asio::io_context& io, const udp::endpoint& to, int ttl,
                 std::span<const uint8_t> bytes) {
  udp::socket sender(io, to.protocol());
  const bool v6 = to.address().is_v6();
  ASSERT_EQ(v6 ? ::setsockopt(sender.native_handle(), IPPROTO_IPV6, IPV6_UNICAST_HOPS, &ttl,
                              sizeof ttl)
               : ::setsockopt(sender.native_handle(), IPPROTO_IP, IP_TTL, &ttl, sizeof ttl),
            0);
  sender.send_to(asio::buffer(bytes.data(), bytes.size()), to);
}

TEST(BfdSocketsTest, TransmitterSendsWithTtl255FromTheSourcePortRangeToThePeersPort) {
  asio::io_context io;
  udp::socket socket(io);
  std::mt19937 rng(1);
  auto local = openBfdTransmitter(socket, kLoopbackV4, std::nullopt, false, rng);
  ASSERT_TRUE(local.has_value()) << local.error();
  EXPECT_EQ(intOption(socket, IPPROTO_IP, IP_TTL), kBfdSingleHopTtl);  // RFC 5881 section 5
  EXPECT_EQ(intOption(socket, IPPROTO_IP, IP_TOS), 0xC0);             // DSCP CS6
  const auto endpoint = socket.local_endpoint();
  EXPECT_GE(endpoint.port(), 49152);  // RFC 5881 section 4
  EXPECT_EQ(*local, fmt::format("127.0.0.1:{}", endpoint.port()));
  EXPECT_EQ(socket.remote_endpoint(),
            udp::endpoint(asio::ip::make_address("127.0.0.1"), bfd::kSingleHopPort));
  EXPECT_TRUE(socket.non_blocking());
}

TEST(BfdSocketsTest, MultihopTransmitterSendsToPort4784) {
  asio::io_context io;
  udp::socket socket(io);
  std::mt19937 rng(2);
  auto local = openBfdTransmitter(socket, kLoopbackV4, kLoopbackV4, true, rng);
  ASSERT_TRUE(local.has_value()) << local.error();
  EXPECT_EQ(socket.remote_endpoint().port(), bfd::kMultihopPort);  // RFC 5883 section 4
  EXPECT_EQ(intOption(socket, IPPROTO_IP, IP_TTL), kBfdSingleHopTtl);
}

TEST(BfdSocketsTest, Ipv6TransmitterSetsTheHopLimitAndBracketsTheEndpoint) {
  asio::io_context io;
  udp::socket socket(io);
  std::mt19937 rng(3);
  auto local = openBfdTransmitter(socket, kLoopbackV6, std::nullopt, false, rng);
  ASSERT_TRUE(local.has_value()) << local.error();
  EXPECT_EQ(intOption(socket, IPPROTO_IPV6, IPV6_UNICAST_HOPS), kBfdSingleHopTtl);
  EXPECT_EQ(intOption(socket, IPPROTO_IPV6, IPV6_TCLASS), 0xC0);
  EXPECT_EQ(*local, fmt::format("[::1]:{}", socket.local_endpoint().port()));
}

// The same random start twice: the second socket takes the next free port, not an error.
TEST(BfdSocketsTest, SessionsGetDistinctSourcePortsWhenTheRandomPickCollides) {
  asio::io_context io;
  udp::socket first(io);
  udp::socket second(io);
  std::mt19937 rngA(42);
  std::mt19937 rngB(42);
  ASSERT_TRUE(openBfdTransmitter(first, kLoopbackV4, std::nullopt, false, rngA).has_value());
  ASSERT_TRUE(openBfdTransmitter(second, kLoopbackV4, std::nullopt, false, rngB).has_value());
  EXPECT_NE(first.local_endpoint().port(), second.local_endpoint().port());
  EXPECT_GE(second.local_endpoint().port(), 49152);
}

TEST(BfdSocketsTest, ASourceAddressNotOnTheNodeIsAnErrorNamingPeerAndSource) {
  asio::io_context io;
  udp::socket socket(io);
  std::mt19937 rng(4);
  // 192.0.2.1 (TEST-NET-1) is on no interface of a test machine.
  auto local = openBfdTransmitter(socket, kLoopbackV4, bgp::IpAddress::v4(0xC0000201), false, rng);
  ASSERT_FALSE(local.has_value());
  EXPECT_THAT(local.error(), StartsWith("cannot open the BFD socket to 127.0.0.1:3784 from "
                                        "192.0.2.1: "));
}

TEST(BfdSocketsTest, ReceiveReportsSizeSourceAndTtl) {
  asio::io_context io;
  udp::socket socket(io, udp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  socket.non_blocking(true);
  std::array<uint8_t, 64> buffer{};
  EXPECT_FALSE(receiveBfdDatagram(socket, buffer).has_value()) << "nothing queued yet";

  // Without IP_RECVTTL the kernel reports no TTL: -1, which the single-hop check refuses.
  const std::array<uint8_t, 3> bytes{1, 2, 3};
  sendWithTtl(io, socket.local_endpoint(), 9, bytes);
  ASSERT_TRUE(readable(socket));
  auto datagram = receiveBfdDatagram(socket, buffer);
  ASSERT_TRUE(datagram.has_value());
  EXPECT_EQ(datagram->size, 3u);
  EXPECT_EQ(datagram->from, kLoopbackV4);
  EXPECT_EQ(datagram->ttl, -1);

  const int on = 1;
  ASSERT_EQ(::setsockopt(socket.native_handle(), IPPROTO_IP, IP_RECVTTL, &on, sizeof on), 0);
  sendWithTtl(io, socket.local_endpoint(), 9, bytes);
  ASSERT_TRUE(readable(socket));
  datagram = receiveBfdDatagram(socket, buffer);
  ASSERT_TRUE(datagram.has_value());
  EXPECT_EQ(datagram->ttl, 9);
  EXPECT_FALSE(receiveBfdDatagram(socket, buffer).has_value()) << "one datagram, read once";
}

struct ReceiverCase {
  bool v6;
  bool multihop;
};

class BfdReceiverTest : public ::testing::TestWithParam<ReceiverCase> {};

// The receiver reports each packet's TTL (hop limit) for the RFC 5881 section 5 check, and a
// port already held is an error that names it and what to do: no SO_REUSEADDR, so a second BFD
// speaker cannot silently take half of the packets.
TEST_P(BfdReceiverTest, ReportsTheTtlAndRefusesAPortAlreadyHeld) {
  const auto [v6, multihop] = GetParam();
  const uint16_t port = multihop ? bfd::kMultihopPort : bfd::kSingleHopPort;
  asio::io_context io;
  udp::socket receiver(io);
  auto opened = openBfdReceiver(receiver, v6, multihop);
  ASSERT_TRUE(opened.has_value()) << opened.error();
  EXPECT_EQ(receiver.local_endpoint().port(), port);

  const auto loopback = asio::ip::make_address(v6 ? "::1" : "127.0.0.1");
  const std::array<uint8_t, 24> packet{0x20};
  sendWithTtl(io, udp::endpoint(loopback, port), kBfdSingleHopTtl, packet);
  sendWithTtl(io, udp::endpoint(loopback, port), 64, packet);
  std::array<uint8_t, 512> buffer{};
  for (int ttl : {kBfdSingleHopTtl, 64}) {
    ASSERT_TRUE(readable(receiver));
    auto datagram = receiveBfdDatagram(receiver, buffer);
    ASSERT_TRUE(datagram.has_value());
    EXPECT_EQ(datagram->size, packet.size());
    EXPECT_EQ(datagram->from, v6 ? kLoopbackV6 : kLoopbackV4);
    EXPECT_EQ(datagram->ttl, ttl);
  }

  udp::socket second(io);
  auto again = openBfdReceiver(second, v6, multihop);
  ASSERT_FALSE(again.has_value());
  EXPECT_THAT(again.error(), HasSubstr(fmt::format("cannot receive BFD on UDP port {} ({})", port,
                                                   v6 ? "IPv6" : "IPv4")));
  EXPECT_THAT(again.error(), HasSubstr("another BFD speaker"));
}

INSTANTIATE_TEST_SUITE_P(Families, BfdReceiverTest,
                         ::testing::Values(ReceiverCase{false, false}, ReceiverCase{false, true},
                                           ReceiverCase{true, false}, ReceiverCase{true, true}),
                         [](const auto& info) {
                           return std::string(info.param.v6 ? "Ipv6" : "Ipv4") +
                                  (info.param.multihop ? "Multihop" : "SingleHop");
                         });

}  // namespace
}  // namespace vipd::daemon
