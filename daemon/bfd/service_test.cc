// BfdService on loopback, without root. A session whose peer is 127.0.0.1 hears its own packets
// (its transmit socket sends to the receiver on UDP 3784 or 4784 of the same host), which RFC 5880
// treats as a peer that echoes our discriminator back: Down -> Init -> Up. That runs the whole
// I/O path (receivers, transmitters, timers, the BFD thread, state changes posted to the
// speaker's loop) with no second speaker. Time is real here (the thread's timers), so every wait
// is bounded and generous; 50 ms intervals bring a session up in well under a second.
//
// Binds UDP 3784/4784 on the host: runs alone (meson.build: is_parallel false).
#include "daemon/bfd/service.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <chrono>
#include <functional>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bfd/bfd.h"

namespace vipd::daemon {
namespace {

using namespace std::chrono_literals;
using udp = asio::ip::udp;
using ::testing::HasSubstr;
using ::testing::StartsWith;

const bgp::IpAddress kLoopback = bgp::IpAddress::v4(0x7f000001);
// A second loopback address: packets to it come back from 127.0.0.1, so its session never
// hears its peer and stays Down.
const bgp::IpAddress kOtherLoopback = bgp::IpAddress::v4(0x7f000002);
constexpr auto kBound = 10s;  // far above the ~0.2 s a looped session needs, for a loaded CI

BfdPeer peer(const bgp::IpAddress& address, bool multihop = false) {
  BfdPeer p;
  p.address = address;
  p.settings.enabled = true;
  p.settings.minTx = 50ms;
  p.settings.minRx = 50ms;
  p.settings.multiplier = 3;
  p.settings.multihop = multihop;
  return p;
}

class BfdServiceTest : public ::testing::Test {
 protected:
  // Runs the speaker's loop (where state changes arrive) until `done` holds or kBound passes.
  bool runUntil(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + kBound;
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      io_.run_for(10ms);
    }
    return done();
  }

  std::unique_ptr<BfdService> make(std::vector<BfdPeer> peers) {
    return std::make_unique<BfdService>(
        io_, log_, std::move(peers), [this](const BfdStateChange& c) { changes_.push_back(c); });
  }

  bool reached(bfd::State state) const {
    return std::any_of(changes_.begin(), changes_.end(),
                       [&](const BfdStateChange& c) { return c.to == state; });
  }

  static const BfdSessionStatus* find(const std::vector<BfdSessionStatus>& all,
                                      const bgp::IpAddress& address) {
    for (const auto& s : all) {
      if (s.address == address) {
        return &s;
      }
    }
    return nullptr;
  }

  void stopAndWait(BfdService& service) {
    bool stopped = false;
    service.stop([&] { stopped = true; });
    ASSERT_TRUE(runUntil([&] { return stopped; })) << "stop() never finished";
    EXPECT_FALSE(service.running());
  }

  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_{asio::make_work_guard(io_)};
  Logger log_{LogFormat::Text, LogLevel::Error};
  std::vector<BfdStateChange> changes_;
};

TEST_F(BfdServiceTest, ALoopedSessionComesUpReportsItAndStopsWithAdminDown) {
  auto service = make({peer(kLoopback)});
  auto started = service->start();
  ASSERT_TRUE(started.has_value()) << started.error();
  EXPECT_TRUE(service->running());
  ASSERT_TRUE(runUntil([&] { return reached(bfd::State::Up); }));
  EXPECT_EQ(changes_.front().peer, kLoopback);
  EXPECT_EQ(changes_.front().to, bfd::State::Down) << "start() takes it from AdminDown to Down";

  auto status = service->status();
  ASSERT_EQ(status.size(), 1u);
  EXPECT_TRUE(status[0].running);
  EXPECT_EQ(status[0].state, bfd::State::Up);
  EXPECT_THAT(status[0].localEndpoint, StartsWith("127.0.0.1:"));
  EXPECT_EQ(status[0].remoteDiscriminator, status[0].localDiscriminator) << "its own packets";
  EXPECT_GT(status[0].counters.packetsSent, 0u);
  EXPECT_GT(status[0].counters.packetsReceived, 0u);
  EXPECT_EQ(status[0].transitionsTo[static_cast<size_t>(bfd::State::Up)], 1u);
  EXPECT_EQ(status[0].ttlDropped, 0u) << "sent with TTL 255, received with TTL 255";
  EXPECT_EQ(status[0].sendErrors, 0u);

  // A clean stop says AdminDown (RFC 5880 section 6.8.16), then closes everything.
  stopAndWait(*service);
  ASSERT_TRUE(runUntil([&] { return changes_.back().to == bfd::State::AdminDown; }));
  status = service->status();
  ASSERT_EQ(status.size(), 1u);
  EXPECT_FALSE(status[0].running);
  EXPECT_EQ(status[0].state, bfd::State::AdminDown);

  // And it starts again: the ports were released.
  ASSERT_TRUE(service->start().has_value());
  ASSERT_TRUE(runUntil([&] { return service->status()[0].state == bfd::State::Up; }));
  stopAndWait(*service);
}

TEST_F(BfdServiceTest, AMultihopSessionUsesPort4784AndNeedsNoTtl255) {
  auto service = make({peer(kLoopback, true)});
  auto started = service->start();
  ASSERT_TRUE(started.has_value()) << started.error();
  ASSERT_TRUE(runUntil([&] { return reached(bfd::State::Up); }));
  EXPECT_TRUE(service->status()[0].multihop);
  stopAndWait(*service);
}

TEST_F(BfdServiceTest, APortAlreadyHeldFailsStartAndLeavesNothingOpen) {
  udp::socket holder(io_, udp::endpoint(udp::v4(), bfd::kSingleHopPort));
  auto service = make({peer(kLoopback)});
  auto started = service->start();
  ASSERT_FALSE(started.has_value());
  EXPECT_THAT(started.error(), HasSubstr("cannot receive BFD on UDP port 3784 (IPv4)"));
  EXPECT_FALSE(service->running());
  EXPECT_FALSE(service->status()[0].running);

  holder.close();
  started = service->start();
  ASSERT_TRUE(started.has_value()) << started.error();
  stopAndWait(*service);
}

// Untrusted packets on the port: counted against the peer they claim to come from, never fed
// to its session (RFC 5881 section 5: single hop means TTL 255; section 6.8.6: decode first).
TEST_F(BfdServiceTest, MalformedPacketsAndTtlBelow255AreCountedNotActedOn) {
  auto service = make({peer(kOtherLoopback)});
  ASSERT_TRUE(service->start().has_value());
  udp::socket sender(io_, udp::endpoint(asio::ip::make_address("127.0.0.2"), 0));
  const udp::endpoint bfdPort(asio::ip::make_address("127.0.0.1"), bfd::kSingleHopPort);

  const std::array<uint8_t, 5> garbage{0xde, 0xad, 0xbe, 0xef, 0x00};
  sender.send_to(asio::buffer(garbage), bfdPort);
  bfd::ControlPacket down;
  down.state = bfd::State::Down;
  down.myDiscriminator = 77;
  down.desiredMinTxInterval = 50ms;
  down.requiredMinRxInterval = 50ms;
  const auto wire = bfd::encode(down);
  const int ttl = 64;  // what a host beyond the link would arrive with, at most
  ASSERT_EQ(::setsockopt(sender.native_handle(), IPPROTO_IP, IP_TTL, &ttl, sizeof ttl), 0);
  sender.send_to(asio::buffer(wire), bfdPort);

  ASSERT_TRUE(runUntil([&] {
    auto status = service->status();
    return status[0].malformed == 1 && status[0].ttlDropped == 1;
  }));
  const auto status = service->status();
  EXPECT_EQ(status[0].counters.packetsReceived, 0u);
  EXPECT_NE(status[0].state, bfd::State::Init) << "the TTL-64 packet was not acted on";
  EXPECT_EQ(status[0].remoteDiscriminator, 0u);
  stopAndWait(*service);
}

TEST_F(BfdServiceTest, WithoutPeersStartIsANoOpAndSetPeersOnlyChangesTheList) {
  auto service = make({});
  EXPECT_TRUE(service->empty());
  ASSERT_TRUE(service->start().has_value());
  EXPECT_FALSE(service->running());
  bool done = false;
  service->stop([&] { done = true; });
  EXPECT_TRUE(done) << "stop() when not running calls back at once";

  ASSERT_TRUE(service->setPeers({peer(kLoopback)}).has_value());
  EXPECT_FALSE(service->running());
  auto status = service->status();
  ASSERT_EQ(status.size(), 1u);
  EXPECT_EQ(status[0].address, kLoopback);
  EXPECT_FALSE(status[0].running);
  EXPECT_EQ(status[0].lastReason, "not started (this instance is not speaking)");
}

// A reload (issue 29): an added peer starts, a removed one ends, the one kept runs on untouched.
TEST_F(BfdServiceTest, SetPeersWhileRunningAddsAndRemovesSessions) {
  auto service = make({peer(kLoopback)});
  ASSERT_TRUE(service->start().has_value());
  ASSERT_TRUE(runUntil([&] { return reached(bfd::State::Up); }));
  const uint32_t discriminator = service->status()[0].localDiscriminator;

  // Sent from 127.0.0.2 itself: it hears its own packets too, and the first session never sees
  // them (a Down packet from its own peer address would rightly take it down).
  BfdPeer other = peer(kOtherLoopback);
  other.sourceAddress = kOtherLoopback;
  ASSERT_TRUE(service->setPeers({peer(kLoopback), other}).has_value());
  ASSERT_TRUE(runUntil([&] {
    auto all = service->status();
    return all.size() == 2 && find(all, kOtherLoopback) != nullptr &&
           find(all, kOtherLoopback)->state == bfd::State::Up;
  }));
  auto status = service->status();
  ASSERT_NE(find(status, kLoopback), nullptr);
  EXPECT_EQ(find(status, kLoopback)->localDiscriminator, discriminator) << "kept, not restarted";
  EXPECT_EQ(find(status, kLoopback)->state, bfd::State::Up);
  EXPECT_EQ(find(status, kLoopback)->transitionsTo[static_cast<size_t>(bfd::State::Up)], 1u);
  EXPECT_THAT(find(status, kOtherLoopback)->localEndpoint, StartsWith("127.0.0.2:"));

  ASSERT_TRUE(service->setPeers({other}).has_value());
  ASSERT_TRUE(runUntil([&] { return service->status().size() == 1; }));
  EXPECT_EQ(service->status()[0].address, kOtherLoopback);
  EXPECT_EQ(service->status()[0].state, bfd::State::Up) << "the one kept runs on untouched";
  stopAndWait(*service);
}

}  // namespace
}  // namespace vipd::daemon
