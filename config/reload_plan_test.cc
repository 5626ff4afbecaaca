// planReload (issue 29): what each kind of change means for the running daemon, and that a change
// touches only what it concerns: the other peers, VIPs and checkers are not in the plan.
#include "config/reload_plan.h"
#include "config/test_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

namespace vipd::config {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using namespace vipd::config::testing;

// A single-family IPv4 session, as the parser would fill `families` in.
Peer v4peer(std::string_view address) {
  Peer p = peer(address);
  p.families = {bgp::Afi::Ipv4};
  return p;
}

// Three peers and two VIPs, as a running config would have them.
Config running() {
  Config c = nodeConfig();
  c.vips = {vip("203.0.113.10/32"), vip("203.0.113.20/32")};
  c.peers = {v4peer("192.0.2.1"), v4peer("192.0.2.2"), v4peer("192.0.2.3")};
  c.peers[1].passwordFile = "/etc/vipd/p2.key";
  c.health.type = Health::Type::Tcp;
  return c;
}

// Nothing to do besides what the test names.
void expectOnly(const ReloadPlan& plan, std::initializer_list<const char*> what) {
  auto named = [&](std::string_view w) {
    return std::find(what.begin(), what.end(), w) != what.end();
  };
  EXPECT_EQ(!plan.vipsAdded.empty(), named("vipsAdded"));
  EXPECT_EQ(!plan.vipsRemoved.empty(), named("vipsRemoved"));
  EXPECT_EQ(!plan.vipsChanged.empty(), named("vipsChanged"));
  EXPECT_EQ(!plan.peersAdded.empty(), named("peersAdded"));
  EXPECT_EQ(!plan.peersRemoved.empty(), named("peersRemoved"));
  EXPECT_EQ(!plan.peersReset.empty(), named("peersReset"));
  EXPECT_EQ(plan.routeAttributes, named("routeAttributes"));
  EXPECT_EQ(plan.healthCheck, named("healthCheck"));
  EXPECT_EQ(plan.healthPolicy, named("healthPolicy"));
  EXPECT_EQ(plan.returnPath, named("returnPath"));
}

TEST(ReloadPlan, TheSameConfigPlansNothing) {
  auto plan = planReload(running(), running(), {});
  EXPECT_TRUE(plan.empty());
  EXPECT_THAT(plan.pending, IsEmpty());
  EXPECT_EQ(plan.applied, running());
  expectOnly(plan, {});
}

TEST(ReloadPlan, AVipAddedAndAVipRemovedTouchNothingElse) {
  Config next = running();
  next.vips.erase(next.vips.begin());
  next.vips.push_back(vip("203.0.113.30/32"));
  auto plan = planReload(running(), next, {});
  ASSERT_EQ(plan.vipsAdded.size(), 1u);
  EXPECT_EQ(plan.vipsAdded[0].prefix, prefix("203.0.113.30/32"));
  EXPECT_THAT(plan.vipsRemoved, ElementsAre(prefix("203.0.113.10/32")));
  EXPECT_EQ(plan.applied.vips, next.vips);
  EXPECT_THAT(plan.pending, IsEmpty());
  expectOnly(plan, {"vipsAdded", "vipsRemoved"});
}

TEST(ReloadPlan, AVipsRebindAppliesItsInterfaceWaitsForARestart) {
  Config next = running();
  next.vips[1].rebind = false;
  next.vips[1].interface = "vip0";
  auto plan = planReload(running(), next, {});
  ASSERT_EQ(plan.vipsChanged.size(), 1u);
  EXPECT_FALSE(plan.vipsChanged[0].rebind);
  EXPECT_EQ(plan.vipsChanged[0].interface, "lo");
  EXPECT_THAT(plan.pending, ElementsAre(ConfigChange{"vips[203.0.113.20/32].interface", "\"lo\"",
                                                     "\"vip0\"", ChangeEffect::NeedsRestart}));
  expectOnly(plan, {"vipsChanged"});
}

TEST(ReloadPlan, APeerAddedOrRemovedLeavesTheOthersAlone) {
  Config next = running();
  next.peers.erase(next.peers.begin() + 2);
  next.peers.push_back(v4peer("192.0.2.4"));
  auto plan = planReload(running(), next, {});
  ASSERT_EQ(plan.peersAdded.size(), 1u);
  EXPECT_EQ(plan.peersAdded[0].address, ip("192.0.2.4"));
  EXPECT_THAT(plan.peersRemoved, ElementsAre(ip("192.0.2.3")));
  expectOnly(plan, {"peersAdded", "peersRemoved"});
}

TEST(ReloadPlan, APeersTimersResetThatSessionAloneAndSayWhy) {
  Config next = running();
  next.peers[0].holdTime = 6s;
  next.peers[0].keepaliveTime = 2s;
  auto plan = planReload(running(), next, {});
  ASSERT_EQ(plan.peersReset.size(), 1u);
  EXPECT_EQ(plan.peersReset[0].peer, ip("192.0.2.1"));
  EXPECT_THAT(plan.peersReset[0].why, ElementsAre("holdTime 9s -> 6s", "keepaliveTime 3s -> 2s"));
  EXPECT_FALSE(plan.peersReset[0].bfdChanged);
  expectOnly(plan, {"peersReset"});
}

TEST(ReloadPlan, BfdSettingsResetTheSessionAndItsBfd) {
  Config next = running();
  next.peers[2].bfd.enabled = true;
  auto plan = planReload(running(), next, {});
  ASSERT_EQ(plan.peersReset.size(), 1u);
  EXPECT_EQ(plan.peersReset[0].peer, ip("192.0.2.3"));
  EXPECT_TRUE(plan.peersReset[0].bfdChanged);
  EXPECT_THAT(plan.peersReset[0].why, ElementsAre("bfd.enabled false -> true"));
}

TEST(ReloadPlan, AKeyIsComparedByContent) {
  // The same file, another key in it: a reset, and a live entry naming the file.
  auto plan = planReload(running(), running(), {ip("192.0.2.2")});
  ASSERT_EQ(plan.peersReset.size(), 1u);
  EXPECT_EQ(plan.peersReset[0].peer, ip("192.0.2.2"));
  EXPECT_THAT(plan.peersReset[0].why,
              ElementsAre("TCP-MD5 key (the content of /etc/vipd/p2.key)"));
  ASSERT_EQ(plan.live.size(), 1u);
  EXPECT_EQ(plan.live[0].path, "peers[192.0.2.2].passwordFile");
  EXPECT_FALSE(plan.empty());

  // Another file with the same key: applied, nothing reset.
  Config renamed = running();
  renamed.peers[1].passwordFile = "/etc/vipd/p2-new.key";
  plan = planReload(running(), renamed, {});
  EXPECT_THAT(plan.peersReset, IsEmpty());
  EXPECT_EQ(plan.applied.peers[1].passwordFile, "/etc/vipd/p2-new.key");
  EXPECT_EQ(plan.live.size(), 1u);

  // Another file with another key: one reason, the file's.
  plan = planReload(running(), renamed, {ip("192.0.2.2")});
  ASSERT_EQ(plan.peersReset.size(), 1u);
  EXPECT_THAT(plan.peersReset[0].why,
              ElementsAre("passwordFile \"/etc/vipd/p2.key\" -> \"/etc/vipd/p2-new.key\""));

  // A key removed.
  Config unkeyed = running();
  unkeyed.peers[1].passwordFile.reset();
  plan = planReload(running(), unkeyed, {ip("192.0.2.2")});
  ASSERT_EQ(plan.peersReset.size(), 1u);
  EXPECT_THAT(plan.peersReset[0].why, ElementsAre("passwordFile \"/etc/vipd/p2.key\" -> unset"));
}

TEST(ReloadPlan, CommunitiesAndTheDegradedPathReannounceWithoutAReset) {
  for (int which = 0; which < 4; ++which) {
    Config next = running();
    switch (which) {
      case 0:
        next.communities = {{65001, 7}};
        break;
      case 1:
        next.largeCommunities = {{65001, 1, 2}};
        break;
      case 2:
        next.health.degrade.communities = {{65001, 99}};
        break;
      case 3:
        next.health.degrade.prepend = 5;
        break;
    }
    auto plan = planReload(running(), next, {});
    SCOPED_TRACE(which);
    expectOnly(plan, {"routeAttributes"});
    EXPECT_EQ(plan.live.size(), 1u);
  }
}

TEST(ReloadPlan, HealthSettingsRestartTheCheckerTheFailureModeOnlyDecidesAgain) {
  Config next = running();
  next.health.interval = 2s;
  next.health.fall = 5;
  expectOnly(planReload(running(), next, {}), {"healthCheck"});
  next = running();
  next.health.onFailure = Health::OnFailure::Degrade;
  next.health.unbindWhenUnhealthy = false;
  expectOnly(planReload(running(), next, {}), {"healthPolicy"});
}

TEST(ReloadPlan, ReturnPathSettingsRestartTheCheck) {
  Config next = running();
  next.returnPath.interval = 5s;
  expectOnly(planReload(running(), next, {}), {"returnPath"});
}

TEST(ReloadPlan, DrainAndGuardAreReadWhereTheyAreUsed) {
  Config next = running();
  next.drain.timeout = 30s;
  next.guard.minAnnouncers = 2;
  auto plan = planReload(running(), next, {});
  expectOnly(plan, {});
  EXPECT_EQ(plan.live.size(), 2u);
  EXPECT_EQ(plan.applied, next);
}

TEST(ReloadPlan, ARouterIdChangeIsPendingAndTheRestStillApplies) {
  Config next = running();
  next.routerId = ip("192.0.2.99");
  next.localAsn = 65009;
  next.metrics.port = 9999;
  next.communities = {{65001, 7}};
  auto plan = planReload(running(), next, {});
  EXPECT_EQ(plan.applied.routerId, running().routerId);
  EXPECT_EQ(plan.applied.localAsn, running().localAsn);
  EXPECT_EQ(plan.applied.communities, next.communities);
  EXPECT_THAT(plan.pending,
              ElementsAre(ConfigChange{"routerId", "192.0.2.11", "192.0.2.99",
                                       ChangeEffect::NeedsRestart},
                          ConfigChange{"localAsn", "65001", "65009", ChangeEffect::NeedsRestart},
                          ConfigChange{"metrics.port", "9472", "9999",
                                       ChangeEffect::NeedsRestart}));
  expectOnly(plan, {"routeAttributes"});
  // Reloaded again from what runs: still pending, nothing more to do; reverted: nothing pending.
  auto again = planReload(plan.applied, next, {});
  EXPECT_TRUE(again.empty());
  EXPECT_EQ(again.pending, plan.pending);
  EXPECT_THAT(planReload(plan.applied, plan.applied, {}).pending, IsEmpty());
}

}  // namespace
}  // namespace vipd::config
