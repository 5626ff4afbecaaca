// PeerSet (daemon/peers/peer_set.h) with real sessions that never connect (nothing listens on
// their ports) and a BfdService that is never started: the sessions follow the config's order,
// a reload adds, removes and keeps sessions, the BFD peers are those that run BFD, and a stop
// answers once every session has written its Cease. Bounded waits on the io_context; no sleeps.
#include "daemon/peers/peer_set.h"

#include <gtest/gtest.h>

#include <chrono>

#include <boost/asio/io_context.hpp>

#include "config/parser.h"

namespace vipd::daemon {
namespace {

using namespace std::chrono_literals;

config::Config configWith(const std::string& peers) {
  auto parsed = config::parseConfig(R"(apiVersion: vipd.io/v1alpha1
kind: SpeakerConfiguration
routerId: 192.0.2.11
localAsn: 65001
vips:
  - address: 203.0.113.10/32
    interface: lo
peers:
)" + peers + "health:\n  type: none\n",
                                    "peer_set_test.yaml");
  EXPECT_TRUE(parsed.has_value()) << (parsed ? "" : parsed.error().front().toString());
  return parsed ? *parsed : config::Config{};
}

const std::string kTwoPeers = R"(  - address: 192.0.2.1
    asn: 65000
  - address: 192.0.2.2
    asn: 65000
    bfd:
      enabled: true
)";

std::vector<std::string> addresses(const PeerSet& set) {
  std::vector<std::string> out;
  for (const auto& s : set.sessions()) {
    out.push_back(s->address().toString());
  }
  return out;
}

class PeerSetTest : public ::testing::Test {
 protected:
  void make(const std::string& peers) {
    config_ = configWith(peers);
    bfd_ = std::make_unique<BfdService>(io_, log_, PeerSet::bfdPeersOf(config_),
                                        [](const BfdStateChange&) {});
    set_ = std::make_unique<PeerSet>(
        io_, config_, *bfd_, log_,
        PeerSet::Hooks{.announceableNow = [] { return std::set<bgp::Prefix>{}; },
                       .onFabricChange = [] {},
                       .speaking = [this] { return speaking_; }});
  }

  asio::io_context io_;
  Logger log_{LogFormat::Text, LogLevel::Error};
  config::Config config_;
  bool speaking_ = false;
  std::unique_ptr<BfdService> bfd_;
  std::unique_ptr<PeerSet> set_;
};

TEST_F(PeerSetTest, OneSessionPerPeerInTheConfigsOrder) {
  make(kTwoPeers);
  EXPECT_EQ(addresses(*set_), (std::vector<std::string>{"192.0.2.1", "192.0.2.2"}));
  EXPECT_NE(set_->find(*bgp::IpAddress::parse("192.0.2.2")), nullptr);
  EXPECT_EQ(set_->find(*bgp::IpAddress::parse("192.0.2.9")), nullptr);
}

TEST_F(PeerSetTest, OnlyPeersRunningBfdHaveABfdSession) {
  make(kTwoPeers);
  auto bfd = PeerSet::bfdPeersOf(config_);
  ASSERT_EQ(bfd.size(), 1u);
  EXPECT_EQ(bfd[0].address.toString(), "192.0.2.2");
}

// A reload keeps the sessions of peers still configured (the same objects), adds new ones and
// retires the removed ones, in the new config's order.
TEST_F(PeerSetTest, AReloadKeepsAddsAndRetiresSessions) {
  make(kTwoPeers);
  PeerSession* kept = set_->find(*bgp::IpAddress::parse("192.0.2.2"));
  const config::Config running = config_;
  const config::Config next = configWith(R"(  - address: 192.0.2.3
    asn: 65000
  - address: 192.0.2.2
    asn: 65000
    bfd:
      enabled: true
)");
  auto plan = config::planReload(running, next, {});
  ASSERT_TRUE(set_->updateBfd(plan.applied).has_value());
  config_ = plan.applied;
  PeerSet::Keys keys;
  set_->apply(plan, keys);
  EXPECT_EQ(addresses(*set_), (std::vector<std::string>{"192.0.2.3", "192.0.2.2"}));
  EXPECT_EQ(set_->find(*bgp::IpAddress::parse("192.0.2.2")), kept);
  EXPECT_EQ(set_->find(*bgp::IpAddress::parse("192.0.2.1")), nullptr);
  io_.run_for(100ms);  // the retired session's Cease (nothing to write: not connected)
}

TEST_F(PeerSetTest, AStopAnswersOnceEverySessionHasStopped) {
  make(kTwoPeers);
  bool done = false;
  set_->stop("vipd: node draining", [&] { done = true; });
  const auto deadline = std::chrono::steady_clock::now() + 2s;
  while (!done && std::chrono::steady_clock::now() < deadline) {
    io_.run_one_for(10ms);
  }
  EXPECT_TRUE(done);
}

}  // namespace
}  // namespace vipd::daemon
