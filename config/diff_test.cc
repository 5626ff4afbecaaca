// diffConfig (a reload: SIGHUP or a changed file): every changed field named with its old and
// new value and whether it applies live (issue 29: everything but the identity, the listeners and
// sockets, the mode and handoff, and a VIP's interface), peers and VIPs matched by address so a
// reordered list is no change. liveConfig: the running value put back where a restart is needed.
#include "config/diff.h"
#include "config/test_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace vipd::config {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using namespace vipd::config::testing;

constexpr auto kLive = ChangeEffect::AppliesLive;
constexpr auto kRestart = ChangeEffect::NeedsRestart;

// Two peers and two VIPs, as a running config would have them.
Config running() {
  Config c = nodeConfig();
  c.vips = {vip("203.0.113.10/32"), vip("2001:db8::10/128")};
  c.peers = {peer("192.0.2.1", 65000), peer("192.0.2.2", 65000)};
  return c;
}

TEST(ConfigDiff, EqualConfigsHaveNoChanges) {
  EXPECT_THAT(diffConfig(running(), running()), IsEmpty());
}

TEST(ConfigDiff, DrainTimingsApplyLive) {
  Config next = running();
  next.drain.gracefulShutdownTime = 5s;
  next.drain.timeout = 30s;
  next.drain.unbindDelay = 0ms;
  EXPECT_THAT(diffConfig(running(), next),
              ElementsAre(ConfigChange{"drain.gracefulShutdownTime", "2s", "5s", kLive},
                          ConfigChange{"drain.timeout", "10s", "30s", kLive},
                          ConfigChange{"drain.unbindDelay", "1s", "0s", kLive}));
}

TEST(ConfigDiff, IdentityListenersModeAndHandoffNeedARestart) {
  Config next = running();
  next.routerId = ip("192.0.2.12");
  next.localAsn = 65002;
  next.allowNonLocalRouterId = true;
  next.listen.enabled = true;
  next.control.group = "vipd";
  next.metrics.port = 9999;
  next.metrics.health = ListenAddress{ip("::1"), 9474};
  next.mode = Mode::DaemonSet;
  next.handoff.restartTime = 5s;
  EXPECT_THAT(diffConfig(running(), next),
              ElementsAre(ConfigChange{"routerId", "192.0.2.11", "192.0.2.12", kRestart},
                          ConfigChange{"localAsn", "65001", "65002", kRestart},
                          ConfigChange{"allowNonLocalRouterId", "false", "true", kRestart},
                          ConfigChange{"listen.enabled", "false", "true", kRestart},
                          ConfigChange{"control.group", "unset", "\"vipd\"", kRestart},
                          ConfigChange{"metrics.port", "9472", "9999", kRestart},
                          ConfigChange{"metrics.healthListen", "unset", "[::1]:9474", kRestart},
                          ConfigChange{"mode", "standalone", "daemonset", kRestart},
                          ConfigChange{"handoff.restartTime", "3s", "5s", kRestart}));
}

TEST(ConfigDiff, TheKubernetesLinkNeedsARestart) {
  Config next = running();
  next.kubernetes = Kubernetes{true, "/etc/kubernetes/admin.conf", "cp-1"};
  EXPECT_THAT(diffConfig(running(), next),
              ElementsAre(ConfigChange{"kubernetes.enabled", "false", "true", kRestart},
                          ConfigChange{"kubernetes.kubeconfig", "unset",
                                       "\"/etc/kubernetes/admin.conf\"", kRestart},
                          ConfigChange{"kubernetes.nodeName", "unset", "\"cp-1\"", kRestart}));
  EXPECT_EQ(liveConfig(running(), next).kubernetes, Kubernetes{}) << "the running link stays";
}

TEST(ConfigDiff, AttributesHealthReturnPathAndGuardApplyLive) {
  Config next = running();
  next.communities = {{65001, 100}};
  next.health.type = Health::Type::Tcp;
  next.health.interval = 2s;
  next.health.degrade.localPref = 40;
  next.returnPath.fall = 5;
  next.guard.minAnnouncers = 2;
  EXPECT_THAT(diffConfig(running(), next),
              ElementsAre(ConfigChange{"communities", "[]", "[65001:100]", kLive},
                          ConfigChange{"health.type", "none", "tcp", kLive},
                          ConfigChange{"health.interval", "1s", "2s", kLive},
                          ConfigChange{"health.degrade.localPref", "50", "40", kLive},
                          ConfigChange{"returnPath.fall", "3", "5", kLive},
                          ConfigChange{"guard.minAnnouncers", "1", "2", kLive}));
}

TEST(ConfigDiff, PeerFieldsAreNamedByAddressAndApplyLive) {
  Config next = running();
  next.peers[1].holdTime = 6s;
  next.peers[1].bfd.enabled = true;
  next.peers[1].sourceAddress = ip("192.0.2.11");
  EXPECT_THAT(
      diffConfig(running(), next),
      ElementsAre(ConfigChange{"peers[192.0.2.2].sourceAddress", "unset", "192.0.2.11", kLive},
                  ConfigChange{"peers[192.0.2.2].holdTime", "9s", "6s", kLive},
                  ConfigChange{"peers[192.0.2.2].bfd.enabled", "false", "true", kLive}));
}

TEST(ConfigDiff, PeerFamiliesChangeAppliesLive) {
  // The families are in the OPEN (RFC 4760 capabilities): that session alone is reset.
  Config before = running();
  before.peers[0].families = {bgp::Afi::Ipv4, bgp::Afi::Ipv6};
  Config next = before;
  next.peers[0].families = {bgp::Afi::Ipv4};
  EXPECT_THAT(diffConfig(before, next),
              ElementsAre(ConfigChange{"peers[192.0.2.1].families", "[ipv4, ipv6]", "[ipv4]",
                                       kLive}));
}

TEST(ConfigDiff, PeersAndVipsAddedAndRemovedApplyLiveAVipsInterfaceDoesNot) {
  Config next = running();
  next.peers.erase(next.peers.begin());
  next.peers.push_back(peer("192.0.2.3", 65000));
  next.vips[0].interface = "vip0";
  next.vips[0].rebind = false;
  next.vips.pop_back();
  EXPECT_THAT(
      diffConfig(running(), next),
      ElementsAre(ConfigChange{"peers[192.0.2.3]", "absent", "added", kLive},
                  ConfigChange{"peers[192.0.2.1]", "present", "removed", kLive},
                  ConfigChange{"vips[203.0.113.10/32].interface", "\"lo\"", "\"vip0\"", kRestart},
                  ConfigChange{"vips[203.0.113.10/32].rebind", "true", "false", kLive},
                  ConfigChange{"vips[2001:db8::10/128]", "present", "removed", kLive}));
}

// liveConfig takes every live field from the file and keeps the running value of the rest, so
// the two diffs it splits a reload into are exactly the live and the restart changes.
TEST(ConfigDiff, LiveConfigSplitsAReloadIntoLiveAndRestartChanges) {
  Config next = running();
  next.routerId = ip("192.0.2.12");
  next.metrics.port = 9999;
  next.communities = {{65001, 100}};
  next.peers[1].holdTime = 6s;
  next.peers.push_back(peer("192.0.2.3", 65000));
  next.vips[0].interface = "vip0";
  next.vips[0].createInterface = true;
  next.drain.timeout = 30s;

  Config applied = liveConfig(running(), next);

  EXPECT_EQ(applied.routerId, running().routerId);
  EXPECT_EQ(applied.metrics.port, running().metrics.port);
  EXPECT_EQ(applied.vips[0].interface, "lo");
  EXPECT_TRUE(applied.vips[0].createInterface);
  EXPECT_EQ(applied.communities, next.communities);
  EXPECT_EQ(applied.peers, next.peers);
  EXPECT_EQ(applied.drain, next.drain);
  const auto all = diffConfig(running(), next);
  const auto live = diffConfig(running(), applied);
  const auto pending = diffConfig(applied, next);
  EXPECT_EQ(live.size() + pending.size(), all.size());
  for (const auto& change : all) {
    const auto& half = change.effect == kLive ? live : pending;
    EXPECT_THAT(half, ::testing::Contains(::testing::Field(&ConfigChange::path, change.path)))
        << change.path;
  }
  for (const auto& change : pending) {
    EXPECT_EQ(change.effect, kRestart) << change.path;
  }
  EXPECT_EQ(liveConfig(running(), running()), running());
}

TEST(ConfigDiff, ReorderedPeersAndVipsAreNoChange) {
  Config next = running();
  std::swap(next.peers[0], next.peers[1]);
  std::swap(next.vips[0], next.vips[1]);
  ASSERT_NE(running(), next);
  EXPECT_THAT(diffConfig(running(), next), IsEmpty());
}

TEST(ConfigDiff, ReorderedAndChangedNamesOnlyTheChange) {
  Config next = running();
  std::swap(next.peers[0], next.peers[1]);
  next.peers[0].port = 1179;  // 192.0.2.2 after the swap
  EXPECT_THAT(diffConfig(running(), next),
              ElementsAre(ConfigChange{"peers[192.0.2.2].port", "179", "1179", kLive}));
}

}  // namespace
}  // namespace vipd::config
