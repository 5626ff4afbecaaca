// The Speaker with the kernel faked (netlink::FakeAddressTable) and everything else real: its
// control socket and metrics listener in a temporary directory and on a free loopback port, a
// peer that refuses connections (no session comes up), the health check against a local TCP
// port the test opens and closes. What is checked is what the Speaker decides and reports: the
// VIP bound in the table, the status document, the control commands (their vocabulary, the
// withdraw and announce), and the health gate's unbind, which runs the drain's last steps.
// Bounded waits on the io_context; no sleeps.
#include "daemon/base/run_until.h"
#include "daemon/speaker.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <optional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "config/parser.h"
#include "daemon/control/client.h"
#include "daemon/control/request.h"
#include "netlink/fake_address_table.h"

namespace vipd::daemon {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

const auto kVip = netlink::InterfaceAddress::parse("203.0.113.10/32");

uint16_t freeLoopbackPort() {
  asio::io_context io;
  asio::ip::tcp::acceptor a(io, {asio::ip::make_address("127.0.0.1"), 0});
  return a.local_endpoint().port();
}

class SpeakerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("vipd-speaker-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "state");
    table_.addLink({.index = 2, .name = "eth0", .adminUp = true, .lowerUp = true});
    table_.addForeignAddress("eth0", *netlink::InterfaceAddress::parse("192.0.2.11/24"));
    monitor_ = table_.openMonitor();
  }
  void TearDown() override {
    if (speaker_) {
      bool done = false;
      speaker_->shutdown([&] { done = true; });
      runUntil([&] { return done; }, 5s);
      speaker_.reset();
    }
    std::filesystem::remove_all(dir_);
  }

  // A standalone node with one VIP on lo, one peer on a port nothing listens on, and `health`.
  config::Config configWith(const std::string& health) {
    const std::string yaml = fmt::format(R"(apiVersion: vipd.io/v1alpha1
kind: SpeakerConfiguration
routerId: 192.0.2.11
localAsn: 65001
vips:
  - address: 203.0.113.10/32
    interface: lo
peers:
  - address: 127.0.0.1
    asn: 65000
    port: {}
    connectRetryTime: 1s
control:
  socket: {}/vipd.sock
  stateDir: {}/state
metrics:
  listen: 127.0.0.1:{}
drain:
  gracefulShutdownTime: 0s
  timeout: 1s
  unbindDelay: 10ms
returnPath:
  mode: off
{})",
                                         freeLoopbackPort(), dir_.string(), dir_.string(),
                                         freeLoopbackPort(), health);
    auto parsed = config::parseConfig(yaml, "speaker_test.yaml");
    EXPECT_TRUE(parsed.has_value()) << (parsed ? "" : parsed.error().front().toString());
    return parsed ? *parsed : config::Config{};
  }

  void start(const std::string& health = "health:\n  type: none\n") {
    speaker_ = std::make_unique<Speaker>(io_, configWith(health), table_, *monitor_, log_);
    auto started = speaker_->start();
    ASSERT_TRUE(started.has_value()) << started.error();
  }

  template <typename Predicate>
  bool runUntil(Predicate done, std::chrono::milliseconds timeout) {
    return daemon::runUntil(io_, done, timeout);
  }

  // One request on the control socket, as vipctl sends it; the answer or {"clientError": ...}.
  nlohmann::json control(nlohmann::json request) {
    std::optional<nlohmann::json> answer;
    sendControlRequest(io_, (dir_ / "vipd.sock").string(), request, 3s,
                       [&](tl::expected<nlohmann::json, std::string> r) {
                         answer = r ? *r : nlohmann::json{{"clientError", r.error()}};
                       });
    EXPECT_TRUE(runUntil([&] { return answer.has_value(); }, 5s)) << request.dump();
    return answer.value_or(nlohmann::json{{"clientError", "no answer"}});
  }

  bool vipInTable() {
    auto entries = table_.addresses();
    if (!entries) {
      return false;
    }
    for (const auto& e : *entries) {
      if (e.ifname == "lo" && e.address == *kVip) {
        return true;
      }
    }
    return false;
  }

  nlohmann::json vipStatus() { return speaker_->status()["vips"].at(0); }

  std::filesystem::path dir_;
  asio::io_context io_;
  netlink::FakeAddressTable table_;
  std::unique_ptr<netlink::Monitor> monitor_;
  Logger log_{LogFormat::Text, LogLevel::Error};
  std::unique_ptr<Speaker> speaker_;
};

TEST_F(SpeakerTest, BindsTheVipAndSaysWhyNothingIsAnnounced) {
  start();
  EXPECT_TRUE(runUntil([&] { return vipInTable(); }, 2s));
  const auto vip = vipStatus();
  EXPECT_EQ(vip["address"], "203.0.113.10/32");
  EXPECT_EQ(vip["state"], "bound");
  EXPECT_EQ(vip["ownedByVipd"], true);
  EXPECT_EQ(vip["announced"], false);
  EXPECT_EQ(vip["reason"], "no Established session");
  EXPECT_EQ(speaker_->status()["role"], "active");
}

TEST_F(SpeakerTest, AnswersEveryCommandOfTheVocabularyAndNamesItForAnUnknownOne) {
  start();
  auto status = control({{"command", commandName(ControlCommand::Status)}});
  EXPECT_EQ(status["routerId"], "192.0.2.11") << status.dump();
  auto unknown = control({{"command", "reboot"}});
  EXPECT_THAT(unknown.value("error", ""), HasSubstr("unknown command 'reboot'"));
  EXPECT_THAT(unknown.value("error", ""), HasSubstr(knownCommands()));
  auto malformed = control({{"command", "withdraw"}, {"persist", "no"}});
  EXPECT_THAT(malformed.value("error", ""), HasSubstr("malformed request"));
  EXPECT_TRUE(vipInTable()) << "a refused request changes nothing";
}

TEST_F(SpeakerTest, WithdrawUnbindsAndPersistsAndAnnounceBindsAgain) {
  start();
  ASSERT_TRUE(runUntil([&] { return vipInTable(); }, 2s));
  auto withdrawn = control({{"command", "withdraw"}, {"wait", true}, {"reason", "replace"}});
  EXPECT_EQ(withdrawn.value("ok", false), true) << withdrawn.dump();
  EXPECT_TRUE(runUntil([&] { return !vipInTable(); }, 3s)) << "unbound at the drain's end";
  auto status = speaker_->status();
  EXPECT_EQ(status["withdrawn"]["active"], true);
  EXPECT_EQ(status["withdrawn"]["reason"], "replace");
  EXPECT_TRUE(std::filesystem::exists(dir_ / "state" / "withdrawn.json"));
  EXPECT_THAT(vipStatus().value("reason", ""), HasSubstr("withdrawn: replace"));

  auto announced = control({{"command", commandName(ControlCommand::Announce)}});
  EXPECT_EQ(announced.value("ok", false), true) << announced.dump();
  EXPECT_TRUE(runUntil([&] { return vipInTable(); }, 2s));
  EXPECT_EQ(speaker_->status()["withdrawn"]["active"], false);
}

TEST_F(SpeakerTest, AnAddressRemovedBehindItsBackIsBoundAgain) {
  start();
  ASSERT_TRUE(runUntil([&] { return vipInTable(); }, 2s));
  ASSERT_TRUE(table_.removeAddress("lo", *kVip).has_value());  // an operator's `ip addr del`
  EXPECT_TRUE(runUntil([&] { return vipInTable(); }, 3s));
  EXPECT_GE(vipStatus().value("lostCount", 0), 1);
}

TEST_F(SpeakerTest, AFailingHealthCheckUnbindsAfterTheDrainsStepsAndAPassingOneBindsFirst) {
  asio::ip::tcp::acceptor apiserver(io_, {asio::ip::make_address("127.0.0.1"), 0});
  const auto port = apiserver.local_endpoint().port();
  start(fmt::format(R"(health:
  type: tcp
  address: 127.0.0.1:{}
  interval: 100ms
  timeout: 100ms
  rise: 1
  fall: 1
  onFailure: withdraw
  unbindWhenUnhealthy: true
)",
                    port));
  ASSERT_TRUE(runUntil([&] { return speaker_->status()["health"].value("healthy", false); }, 3s))
      << speaker_->status()["health"].dump();
  ASSERT_TRUE(runUntil([&] { return vipInTable(); }, 2s));

  apiserver.close();  // refused: hard evidence
  EXPECT_TRUE(runUntil([&] { return !vipInTable(); }, 3s)) << vipStatus().dump();
  EXPECT_THAT(vipStatus().value("reason", ""), HasSubstr("health.unbindWhenUnhealthy"));
  EXPECT_EQ(speaker_->status()["health"]["vipsUnbound"], true);

  asio::ip::tcp::acceptor again(io_, {asio::ip::make_address("127.0.0.1"), port});
  EXPECT_TRUE(runUntil([&] { return vipInTable(); }, 3s)) << vipStatus().dump();
  EXPECT_EQ(speaker_->status()["health"]["vipsUnbound"], false);
}

}  // namespace
}  // namespace vipd::daemon
