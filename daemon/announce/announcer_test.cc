// The Announcer with the kernel faked (netlink::FakeAddressTable) and no session: what it binds,
// the decision it keeps (taken once per change, read without deciding again), the withdraw guard
// over the VIPs a caller would take off, the health gate's unbinding and a reload's removal.
// Bounded waits on the io_context; no sleeps.
#include "daemon/base/run_until.h"
#include "daemon/announce/announcer.h"

#include <gtest/gtest.h>

#include <chrono>

#include <boost/asio/io_context.hpp>

#include "config/parser.h"
#include "netlink/fake_address_table.h"

namespace vipd::daemon {
namespace {

using namespace std::chrono_literals;

const auto kVip = netlink::InterfaceAddress::parse("203.0.113.10/32");
const auto kVipPrefix = *bgp::Prefix::parse("203.0.113.10/32");

// The other rooms, as the Speaker reports them.
class FakeHost : public AnnouncerHost {
 public:
  AnnounceGate gate() const override { return state; }
  bool returnPathBlocks(const bgp::Prefix& vip) const override { return blocked.count(vip) != 0; }

  AnnounceGate state{.active = true};
  std::set<bgp::Prefix> blocked;
};

config::Config configWith(const std::string& extra) {
  auto parsed = config::parseConfig(R"(apiVersion: vipd.io/v1alpha1
kind: SpeakerConfiguration
routerId: 192.0.2.11
localAsn: 65001
vips:
  - address: 203.0.113.10/32
    interface: lo
peers:
  - address: 192.0.2.1
    asn: 65000
drain:
  gracefulShutdownTime: 0s
  timeout: 1s
  unbindDelay: 0s
)" + (extra.empty() ? std::string("health:\n  type: none\n") : extra),
                                    "announcer_test.yaml");
  EXPECT_TRUE(parsed.has_value()) << (parsed ? "" : parsed.error().front().toString());
  return parsed ? *parsed : config::Config{};
}

class AnnouncerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    table_.addLink({.index = 2, .name = "eth0", .adminUp = true, .lowerUp = true});
    monitor_ = table_.openMonitor();
  }

  void make(const std::string& extra = "") {
    config_ = configWith(extra);
    announcer_ = std::make_unique<Announcer>(io_, config_, peers_, table_, *monitor_, log_, host_);
    announcer_->vips().start();
  }

  bool vipInTable() {
    auto entries = table_.addresses();
    return entries && std::any_of(entries->begin(), entries->end(), [](const auto& e) {
             return e.ifname == "lo" && e.address == *kVip;
           });
  }

  template <typename Predicate>
  bool runUntil(Predicate done, std::chrono::milliseconds timeout) {
    return daemon::runUntil(io_, done, timeout);
  }

  asio::io_context io_;
  netlink::FakeAddressTable table_;
  std::unique_ptr<netlink::Monitor> monitor_;
  Logger log_{LogFormat::Text, LogLevel::Error};
  FakeHost host_;
  config::Config config_;
  std::vector<std::unique_ptr<PeerSession>> peers_;
  std::unique_ptr<Announcer> announcer_;
};

TEST_F(AnnouncerTest, BindsThenAnnouncesWhatIsBound) {
  make();
  announcer_->takeAddresses();
  EXPECT_TRUE(vipInTable());
  announcer_->announce();
  EXPECT_EQ(announcer_->decision().announced(), std::set<bgp::Prefix>{kVipPrefix});
  EXPECT_EQ(announcer_->decision().vips.at(kVipPrefix).announce, policy::Announce::Normal);
}

// Status, /readyz and the logs read the kept decision: reading it decides nothing again, until
// something changed. A change another room reports only through the gate (the role, the
// withdrawn state) is seen at the next read, once.
TEST_F(AnnouncerTest, TheDecisionIsTakenOncePerChangeAndReadWithoutDecidingAgain) {
  make();
  announcer_->takeAddresses();
  announcer_->announce();
  const auto taken = announcer_->decisionsTaken();
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(announcer_->decision().announced().count(kVipPrefix));
    (void)announcer_->fabricView();
  }
  EXPECT_EQ(announcer_->decisionsTaken(), taken);

  host_.state.withdrawn = true;
  EXPECT_TRUE(announcer_->decision().announced().empty());
  EXPECT_EQ(announcer_->decision().vips.at(kVipPrefix).reason, "withdrawn by the operator");
  EXPECT_EQ(announcer_->decisionsTaken(), taken + 1);
  (void)announcer_->fabricView();
  EXPECT_EQ(announcer_->decisionsTaken(), taken + 1);
}

// An instance that never spoke (standby, contending) has taken no decision on a change; its
// first read takes one, so status still names every VIP and why it is not announced.
TEST_F(AnnouncerTest, TheFirstReadDecidesEvenIfTheGateNeverChanged) {
  host_.state = AnnounceGate{};  // not active: the instance does not speak
  make();
  EXPECT_EQ(announcer_->decisionsTaken(), 0u);
  ASSERT_EQ(announcer_->decision().vips.count(kVipPrefix), 1u);
  EXPECT_EQ(announcer_->decision().vips.at(kVipPrefix).reason, "this instance does not speak BGP");
  EXPECT_EQ(announcer_->fabricView().count(kVipPrefix), 1u);
  EXPECT_EQ(announcer_->decisionsTaken(), 1u);
}

TEST_F(AnnouncerTest, NothingBoundIsNeverAnnounced) {
  make();
  announcer_->announce();
  EXPECT_TRUE(announcer_->decision().announced().empty());
  EXPECT_EQ(announcer_->decision().vips.at(kVipPrefix).reason, "not bound on its interface");
}

// Without a fabric view (no session sends paths back) the guard cannot count the others: it
// allows, and says what it could not check; a caller that takes nothing off is not checked.
TEST_F(AnnouncerTest, TheGuardChecksOnlyWhatTheCallerTakesOff) {
  make();
  announcer_->takeAddresses();
  announcer_->announce();
  auto all = announcer_->checkWithdraw(policy::GuardMoment::Request);
  EXPECT_FALSE(all.refusal);
  EXPECT_NE(all.note.find("not checked for 203.0.113.10/32"), std::string::npos) << all.note;
  auto none = announcer_->checkWithdraw(policy::GuardMoment::Effect,
                                        [](const bgp::Prefix&) { return false; });
  EXPECT_FALSE(none.refusal);
  EXPECT_TRUE(none.note.empty());
}

TEST_F(AnnouncerTest, AFailingHealthCheckUnbindsAfterTheDrainsStepsAndAPassingOneBindsFirst) {
  make("health:\n  type: tcp\n  address: 127.0.0.1:1\n  onFailure: withdraw\n"
       "  unbindWhenUnhealthy: true\n");
  announcer_->onHealthChange(true);
  announcer_->takeAddresses();
  announcer_->announce();
  ASSERT_TRUE(vipInTable());

  host_.state.healthy = false;
  announcer_->onHealthChange(false);
  EXPECT_TRUE(announcer_->decision().announced().empty());
  EXPECT_TRUE(announcer_->decision().unbindForHealth);
  ASSERT_TRUE(runUntil([&] { return announcer_->heldForHealth(); }, 2s));
  EXPECT_FALSE(vipInTable());

  host_.state.healthy = true;
  announcer_->onHealthChange(true);
  EXPECT_FALSE(announcer_->heldForHealth());
  EXPECT_TRUE(vipInTable());
  EXPECT_EQ(announcer_->decision().announced(), std::set<bgp::Prefix>{kVipPrefix});
}

TEST_F(AnnouncerTest, ARemovedVipIsWithdrawnThenUnboundAndForgotten) {
  make();
  announcer_->takeAddresses();
  announcer_->announce();
  bool forgotten = false;
  announcer_->removeVip(kVipPrefix, [&] { forgotten = true; });
  announcer_->announce();
  EXPECT_TRUE(announcer_->removing(kVipPrefix));
  EXPECT_TRUE(announcer_->decision().announced().empty());
  EXPECT_TRUE(announcer_->announceableVips().empty());
  ASSERT_TRUE(runUntil([&] { return forgotten && !announcer_->removing(kVipPrefix); }, 2s));
  EXPECT_FALSE(vipInTable());
}

TEST_F(AnnouncerTest, AVipConfiguredAgainBeforeItWasUnboundIsKept) {
  make();
  announcer_->takeAddresses();
  bool forgotten = false;
  announcer_->removeVip(kVipPrefix, [&] { forgotten = true; });
  EXPECT_TRUE(announcer_->keepVip(kVipPrefix));
  EXPECT_FALSE(announcer_->keepVip(kVipPrefix));
  io_.run_for(50ms);
  EXPECT_FALSE(forgotten);
  EXPECT_TRUE(vipInTable());
}

}  // namespace
}  // namespace vipd::daemon
