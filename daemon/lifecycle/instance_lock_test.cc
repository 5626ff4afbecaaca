// One vipd per state directory and per VIP (issue 17, item 5), with real locks: flock(2) on files
// in a temporary directory and abstract unix sockets named with a tag of this test's own (so it
// never meets a running vipd). Two acquisitions in one process conflict as two processes would:
// flock is per open file, and an abstract name is bound once per network namespace.
#include "daemon/lifecycle/instance_lock.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include <fmt/format.h>

namespace vipd::daemon {
namespace {

using ::testing::HasSubstr;

class InstanceLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device entropy;
    tag_ = fmt::format("vipd-test-{}-{}", ::getpid(), entropy());
    dir_ = std::filesystem::temp_directory_path() / tag_;
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::permissions(dir_, std::filesystem::perms::owner_all, ignored);
    std::filesystem::remove_all(dir_, ignored);
  }

  config::Config configFor(config::Mode mode, std::string stateSubdir,
                           std::vector<std::string> vips) {
    config::Config c;
    c.mode = mode;
    c.control.stateDir = (dir_ / stateSubdir).string();
    for (const auto& text : vips) {
      c.vips.push_back({*bgp::Prefix::parse(text)});
    }
    return c;
  }

  tl::expected<InstanceLock, std::string> acquire(const config::Config& c) {
    warnings_.clear();
    return InstanceLock::acquire(c, warnings_, tag_);
  }

  std::string tag_;
  std::filesystem::path dir_;
  std::vector<std::string> warnings_;
};

TEST(InstanceSlots, StandaloneClaimsEverySlotAndEachLifeItsOwn) {
  EXPECT_EQ(instanceSlots(config::Mode::Standalone),
            (std::vector<std::string_view>{"static-pod", "daemonset", "daemonset-successor"}));
  EXPECT_EQ(instanceSlots(config::Mode::StaticPod), (std::vector<std::string_view>{"static-pod"}));
  EXPECT_EQ(instanceSlots(config::Mode::DaemonSet), (std::vector<std::string_view>{"daemonset"}));
}

TEST_F(InstanceLockTest, TheSameConfigTwiceIsRefusedNamingTheHoldersPid) {
  auto c = configFor(config::Mode::Standalone, "state", {"192.0.2.10/32"});
  auto first = acquire(c);
  ASSERT_TRUE(first) << first.error();
  EXPECT_TRUE(warnings_.empty());
  auto second = acquire(c);
  ASSERT_FALSE(second);
  EXPECT_THAT(second.error(), HasSubstr(fmt::format("another vipd (pid {})", ::getpid())));
  EXPECT_THAT(second.error(), HasSubstr("state directory " + c.control.stateDir));
  EXPECT_THAT(second.error(), HasSubstr("changed nothing"));
}

TEST_F(InstanceLockTest, TheSameVipWithAnotherStateDirIsRefusedNamingTheHoldersPid) {
  auto first = acquire(configFor(config::Mode::Standalone, "a", {"192.0.2.10/32"}));
  ASSERT_TRUE(first) << first.error();
  auto second = acquire(configFor(config::Mode::Standalone, "b", {"2001:db8::10/128",
                                                                  "192.0.2.10/32"}));
  ASSERT_FALSE(second);
  EXPECT_THAT(second.error(),
              HasSubstr(fmt::format("VIP 192.0.2.10/32 is already served by another vipd (pid {})",
                                    ::getpid())));
}

TEST_F(InstanceLockTest, ALockReleasedIsFreeAgainAndAFailedAttemptHoldsNothing) {
  auto c = configFor(config::Mode::Standalone, "a", {"192.0.2.10/32", "192.0.2.11/32"});
  {
    auto blocker = acquire(configFor(config::Mode::Standalone, "b", {"192.0.2.11/32"}));
    ASSERT_TRUE(blocker);
    ASSERT_FALSE(acquire(c));  // took a's state dir and 192.0.2.10, then failed on .11
  }
  auto after = acquire(c);  // nothing left behind by the failed attempt
  EXPECT_TRUE(after) << after.error();
}

// The day-0 static pod and the day-2 DaemonSet share the state directory and the VIPs during the
// handoff, and a DaemonSet rollout with maxSurge runs the new pod beside the old one (issue 29):
// the sanctioned overlaps. A second static pod, a third daemonset instance or a standalone one is
// refused.
TEST_F(InstanceLockTest, StaticPodAndTwoDaemonSetInstancesMayOverlapNothingElseMay) {
  auto vip = std::vector<std::string>{"192.0.2.10/32"};
  auto staticPod = acquire(configFor(config::Mode::StaticPod, "s", vip));
  ASSERT_TRUE(staticPod) << staticPod.error();
  auto daemonSet = acquire(configFor(config::Mode::DaemonSet, "s", vip));
  ASSERT_TRUE(daemonSet) << daemonSet.error();
  EXPECT_FALSE(daemonSet->successor());
  EXPECT_FALSE(acquire(configFor(config::Mode::StaticPod, "s", vip)));
  auto successor = acquire(configFor(config::Mode::DaemonSet, "s", vip));
  ASSERT_TRUE(successor) << successor.error();
  EXPECT_TRUE(successor->successor());
  auto third = acquire(configFor(config::Mode::DaemonSet, "s", vip));
  ASSERT_FALSE(third);
  EXPECT_THAT(third.error(), HasSubstr("the successor slot is taken too"));
  EXPECT_FALSE(acquire(configFor(config::Mode::Standalone, "s", {"192.0.2.99/32"})));
  // The pod that was replaced exits: the next rollout's pod takes the free slot.
  daemonSet = tl::unexpected(std::string("gone"));
  auto next = acquire(configFor(config::Mode::DaemonSet, "s", vip));
  ASSERT_TRUE(next) << next.error();
  EXPECT_FALSE(next->successor());
}

TEST_F(InstanceLockTest, DifferentStateDirsAndVipsDoNotConflict) {
  auto a = acquire(configFor(config::Mode::Standalone, "a", {"192.0.2.10/32"}));
  auto b = acquire(configFor(config::Mode::Standalone, "b", {"192.0.2.20/32"}));
  EXPECT_TRUE(a);
  EXPECT_TRUE(b);
}

// A state directory that cannot hold the lock file is no reason not to run (the VIP locks still
// apply), but it is said.
TEST_F(InstanceLockTest, AnUnusableStateDirIsAWarningNotAFailure) {
  std::ofstream(dir_ / "file") << "not a directory";
  auto c = configFor(config::Mode::Standalone, "file/state", {"192.0.2.10/32"});
  auto lock = acquire(c);
  ASSERT_TRUE(lock) << lock.error();
  ASSERT_EQ(warnings_.size(), 3u);  // one per slot
  EXPECT_THAT(warnings_[0], HasSubstr("is not stopped by it (the VIP locks still apply)"));
  EXPECT_FALSE(acquire(c)) << "the VIP lock still holds";
}

TEST_F(InstanceLockTest, GarbageInTheLockFileOnlyCostsThePid) {
  auto c = configFor(config::Mode::StaticPod, "s", {});
  std::filesystem::create_directories(c.control.stateDir);
  auto first = acquire(c);
  ASSERT_TRUE(first);
  std::ofstream(c.control.stateDir + "/instance.static-pod.lock") << "\x01garbage";
  auto second = acquire(c);
  ASSERT_FALSE(second);
  EXPECT_THAT(second.error(), HasSubstr("another vipd (an unknown pid)"));
}

}  // namespace
}  // namespace vipd::daemon
