// The handoff between a node's two vipd instances: the identity check both sides run (pure), and
// the speaker lock and yield marker on a real directory, and the watch on a silent holder (and its
// fence: a stopped holder is killed, issue 43).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <csignal>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "config/parser.h"
#include "daemon/lifecycle/handoff_protocol.h"
#include "daemon/lifecycle/holder_watch.h"
#include "daemon/lifecycle/host_lock.h"

namespace vipd::daemon {
namespace {

using ::testing::HasSubstr;

SpeakerIdentity staticPod() {
  return {{1}, "static-pod", "192.0.2.11", 65001, {"2001:db8:ffff::10/128", "203.0.113.10/32"}};
}

SpeakerIdentity daemonset() {
  SpeakerIdentity id = staticPod();
  id.mode = "daemonset";
  return id;
}

TEST(HandoffIdentity, MatchingInstancesMayHandOver) {
  EXPECT_EQ(handoffRefusal(staticPod(), daemonset()), std::nullopt);
}

TEST(HandoffIdentity, EveryMismatchIsNamedInOneSentence) {
  SpeakerIdentity taker = daemonset();
  taker.routerId = "192.0.2.12";
  taker.localAsn = 65002;
  taker.vips.push_back("203.0.113.99/32");
  auto refusal = handoffRefusal(staticPod(), taker);
  ASSERT_TRUE(refusal);
  EXPECT_THAT(*refusal, HasSubstr("router ID differs (running 192.0.2.11, taking over "
                                  "192.0.2.12)"));
  EXPECT_THAT(*refusal, HasSubstr("local ASN differs (running AS65001, taking over AS65002)"));
  EXPECT_THAT(*refusal, HasSubstr("VIP set differs"));
}

TEST(HandoffIdentity, OnlyDaemonsetTakesOverFromStaticPod) {
  EXPECT_THAT(handoffRefusal(daemonset(), staticPod()).value_or(""),
              HasSubstr("only a daemonset instance takes over, from a static-pod or another "
                        "daemonset instance (running: daemonset, taking over: static-pod)"));
  EXPECT_TRUE(handoffRefusal(staticPod(), staticPod()).has_value());
  // A rollout: the new daemonset pod takes over from the one it replaces (issue 29).
  EXPECT_EQ(handoffRefusal(daemonset(), daemonset()), std::nullopt);
}

TEST(HandoffIdentity, NoCommonProtocolVersionIsRefused) {
  SpeakerIdentity taker = daemonset();
  taker.protocolVersions = {2, 3};
  EXPECT_THAT(handoffRefusal(staticPod(), taker).value_or(""),
              HasSubstr("no common handoff protocol version (running instance speaks 1, this "
                        "one 2,3)"));
  taker.protocolVersions = {1, 2};
  EXPECT_EQ(handoffRefusal(staticPod(), taker), std::nullopt);
}

TEST(HandoffIdentity, VipOrderDoesNotMatter) {
  SpeakerIdentity taker = daemonset();
  std::reverse(taker.vips.begin(), taker.vips.end());
  auto parsed = identityFromJson(toJson(taker));
  ASSERT_TRUE(parsed) << parsed.error();
  EXPECT_EQ(handoffRefusal(staticPod(), *parsed), std::nullopt);
}

TEST(HandoffIdentity, FromConfig) {
  auto config = config::parseConfig(
      "apiVersion: vipd.io/v1alpha1\nkind: SpeakerConfiguration\nrouterId: 192.0.2.11\n"
      "localAsn: 65001\nvips: [{address: 203.0.113.10/32}, {address: 2001:db8:ffff::10/128}]\n"
      "peers: [{address: 192.0.2.1, asn: 65000, nextHopIpv6: '2001:db8::11'}]\n"
      "health: {type: none}\nmode: static-pod\n",
      "t.yaml");
  ASSERT_TRUE(config.has_value());
  EXPECT_EQ(identityOf(*config), staticPod());
}

TEST(LockTaken, ATakeoverReopensAsAGracefulRestartOnlyRightAfterAYield) {
  EXPECT_EQ(lockTaken(true, true, true, "static-pod").restarting, true);
  EXPECT_EQ(lockTaken(true, true, true, "static-pod").why, "took over from the static-pod instance");
  // No fresh marker: the holder's yield was too long ago, or the marker was unusable.
  EXPECT_EQ(lockTaken(true, false, true, "daemonset").restarting, false);
}

TEST(LockTaken, ALockThatCameFreeReopensAsAGracefulRestart) {
  // The rollout's successor crashed right after taking over: it had taken the yield marker, and
  // the instance that yielded to it takes the node back (e2e_rollout).
  LockTaken back = lockTaken(false, false, false, "");
  EXPECT_TRUE(back.restarting);
  EXPECT_EQ(back.why, "took the node back: the instance that held the speaker lock is gone");
  // The successor never took the lock: the marker is still fresh.
  LockTaken neverTook = lockTaken(false, true, false, "");
  EXPECT_TRUE(neverTook.restarting);
  EXPECT_EQ(neverTook.why, "took the node back: the instance it yielded to never took the lock");
  // A contending instance whose holder went away.
  LockTaken gone = lockTaken(false, false, true, "");
  EXPECT_TRUE(gone.restarting);
  EXPECT_EQ(gone.why, "the instance that held the speaker lock is gone");
  // A successor whose holder yielded (fresh marker) and exited before its answer arrived: it
  // never yielded itself, so it does not say it took the node back.
  LockTaken cutShort = lockTaken(false, true, true, "");
  EXPECT_TRUE(cutShort.restarting);
  EXPECT_EQ(cutShort.why,
            "took over: the instance that held the speaker lock yielded, but its answer never "
            "arrived");
}

TEST(HandoffIdentity, MalformedIdentitiesAreErrorsNotCrashes) {
  const char* bad[] = {
      "null", "[]", "{}", R"({"protocolVersions":[],"mode":"daemonset"})",
      R"({"protocolVersions":["1"],"mode":"daemonset","routerId":"x","localAsn":1,"vips":[]})",
      R"({"protocolVersions":[1],"mode":5,"routerId":"x","localAsn":1,"vips":[]})",
      R"({"protocolVersions":[1],"mode":"d","routerId":"x","localAsn":-1,"vips":[]})",
      R"({"protocolVersions":[1],"mode":"d","routerId":"x","localAsn":4294967296,"vips":[]})",
      R"({"protocolVersions":[1],"mode":"d","routerId":"x","localAsn":1,"vips":[1]})",
      R"({"protocolVersions":[1],"mode":"d","routerId":"x","localAsn":1,"vips":"a"})",
  };
  for (const char* text : bad) {
    SCOPED_TRACE(text);
    auto parsed = identityFromJson(nlohmann::json::parse(text));
    ASSERT_FALSE(parsed.has_value());
    EXPECT_THAT(parsed.error(), HasSubstr("malformed handoff identity"));
  }
}

class HostLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/vipd-hostlock-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(HostLockTest, OneHolderAtATimeAndTheRecordNamesIt) {
  auto a = HostLock::open(dir_ + "/run");
  auto b = HostLock::open(dir_ + "/run");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->tryAcquire({111, "static-pod", "/run/vipd/static-pod.sock"}), true);
  EXPECT_EQ(b->tryAcquire({222, "daemonset", "/run/vipd/vipd.sock"}), false);
  auto holder = b->holder();
  ASSERT_TRUE(holder);
  EXPECT_EQ(holder->pid, 111);
  EXPECT_EQ(holder->mode, "static-pod");
  EXPECT_EQ(holder->controlSocket, "/run/vipd/static-pod.sock");
  a->release();
  EXPECT_EQ(b->tryAcquire({222, "daemonset", "/run/vipd/vipd.sock"}), true);
  EXPECT_EQ(a->holder()->pid, 222);
}

// In a pod, vipd is pid 1 of its own PID namespace: the record says which namespace, so the other
// pod and the host do not read "pid 1" as a process of theirs.
TEST_F(HostLockTest, TheRecordNamesThePidNamespace) {
  auto a = HostLock::open(dir_);
  auto b = HostLock::open(dir_);
  ASSERT_TRUE(a && b);
  LockHolder me = thisProcess("static-pod", "/run/vipd/static-pod.sock");
  EXPECT_EQ(me.pid, ::getpid());
  EXPECT_EQ(me.pidNamespace, std::filesystem::read_symlink("/proc/self/ns/pid").string());
  EXPECT_TRUE(me.pidNamespace.starts_with("pid:["));
  EXPECT_EQ(a->tryAcquire(me), true);
  auto holder = b->holder();
  ASSERT_TRUE(holder);
  EXPECT_EQ(holder->pidNamespace, me.pidNamespace);
  EXPECT_EQ(describe(*holder), fmt::format("pid {}", ::getpid()));

  LockHolder inPod{1, "static-pod", "/run/vipd/static-pod.sock", "pid:[4026532801]"};
  EXPECT_EQ(describe(inPod), "pid 1 in PID namespace pid:[4026532801] (another container)");
  // A record from before pidNamespace existed still reads, and is described by its pid alone.
  {
    std::ofstream old(dir_ + "/speaker.json");
    old << R"({"pid": 7, "mode": "static-pod", "controlSocket": "/s.sock"})";
  }
  holder = b->holder();
  ASSERT_TRUE(holder);
  EXPECT_EQ(holder->pidNamespace, "");
  EXPECT_EQ(describe(*holder), "pid 7");
}

TEST_F(HostLockTest, ExitReleasesTheLockHoweverTheHolderExits) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto lock = HostLock::open(dir_);
    bool got = lock && lock->tryAcquire({::getpid(), "static-pod", "/x.sock"}).value_or(false);
    std::_Exit(got ? 0 : 1);  // no destructor: like a crash
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  auto lock = HostLock::open(dir_);
  ASSERT_TRUE(lock);
  EXPECT_EQ(lock->tryAcquire({1, "daemonset", "/y.sock"}), true);
}

TEST_F(HostLockTest, YieldMarkerIsTakenOnce) {
  auto lock = HostLock::open(dir_);
  ASSERT_TRUE(lock);
  auto none = lock->takeYieldMarker();
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  ASSERT_TRUE(lock->writeYieldMarker({"192.0.2.11", 1234, 3000}));
  auto marker = lock->takeYieldMarker();
  ASSERT_TRUE(marker && *marker);
  EXPECT_EQ((*marker)->routerId, "192.0.2.11");
  EXPECT_EQ((*marker)->yieldedAtBootMs, 1234);
  EXPECT_EQ((*marker)->restartTimeMs, 3000);
  auto again = lock->takeYieldMarker();
  ASSERT_TRUE(again);
  EXPECT_FALSE(*again) << "a marker must not survive to a later start";
}

// Issue 17 item 4, for the handoff marker: a malformed one is an error naming the file and the
// field (it used to be dropped without a word), and it is removed all the same.
TEST_F(HostLockTest, MalformedYieldMarkerIsAnErrorNamingTheFileAndTheField) {
  auto lock = HostLock::open(dir_);
  ASSERT_TRUE(lock);
  const std::string path = dir_ + "/handoff.json";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"routerId": "192.0.2.11", "yieldedAtBootMs": null, "restartTimeMs": 3000})",
       R"(: field "yieldedAtBootMs" is a JSON null, expected an integer)"},
      {R"({"routerId": 5, "yieldedAtBootMs": 1, "restartTimeMs": 3000})",
       R"(: field "routerId" is a JSON number, expected a string)"},
      {R"({"routerId": "192.0.2.11", "yieldedAtBootMs": 1})",
       R"(: field "restartTimeMs" is missing)"},
      {"[1]", " holds a JSON array, expected an object"},
      {R"({"routerId": "192.0)", " is not valid JSON"},
  };
  for (const auto& [body, expected] : cases) {
    std::ofstream(path, std::ios::trunc) << body;
    auto marker = lock->takeYieldMarker();
    ASSERT_FALSE(marker) << body;
    EXPECT_THAT(marker.error(), HasSubstr(path + expected)) << body;
    EXPECT_FALSE(std::filesystem::exists(path)) << "removed even when malformed";
  }
}

TEST_F(HostLockTest, UnusableDirectoryIsAClearError) {
  auto lock = HostLock::open("/proc/vipd-cannot-exist/run");
  ASSERT_FALSE(lock);
  EXPECT_THAT(lock.error(), HasSubstr("cannot create the handoff directory"));
}

}  // namespace
}  // namespace vipd::daemon

// ---- the watch on a silent lock holder (issue 29 part 3) ----

namespace vipd::daemon {
namespace {

// Three rows as the kernel prints them: a listener on 179, an Established session from
// 192.0.2.11:43210 to the peer 192.0.2.1:179, and one in CLOSE_WAIT (8) to 192.0.2.2:179.
constexpr std::string_view kTcp =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout "
    "inode\n"
    "   0: 00000000:00B3 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 "
    "1 1 0000000000000000 100 0 0 10 0\n"
    "   1: 0B0200C0:A8CA 010200C0:00B3 01 00000000:00000000 02:000A7A6B 00000000     0        0 "
    "2 1 0000000000000000 20 4 30 10 -1\n"
    "   2: 0B0200C0:A8CB 020200C0:00B3 08 00000000:00000000 00:00000000 00000000     0        0 "
    "3 1 0000000000000000 20 4 30 10 -1\n"
    "   3: garbage\n";

TEST(HolderWatch, ParsesTheKernelsTcpTable) {
  auto rows = parseProcNetTcp(kTcp, false);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].local, *bgp::IpAddress::parse("192.0.2.11"));
  EXPECT_EQ(rows[1].localPort, 43210);
  EXPECT_EQ(rows[1].remote, *bgp::IpAddress::parse("192.0.2.1"));
  EXPECT_EQ(rows[1].remotePort, 179);
  EXPECT_EQ(rows[1].state, 1);
  EXPECT_EQ(rows[2].state, 8);
  // The socket's inode (vipd doctor finds the owning process by it); 0 when a row has none.
  EXPECT_EQ(rows[0].state, kTcpListen);
  EXPECT_EQ(rows[0].inode, 1u);
  EXPECT_EQ(rows[1].inode, 2u);
  EXPECT_EQ(rows[2].inode, 3u);
  // IPv6: four little-endian words; 2001:db8::11 port 179.
  auto v6 = parseProcNetTcp(
      "  sl  local_address remote_address st\n"
      "   0: B80D0120000000000000000011000000:00B3 B80D0120000000000000000001000000:C350 01\n",
      true);
  ASSERT_EQ(v6.size(), 1u);
  EXPECT_EQ(v6[0].local, *bgp::IpAddress::parse("2001:db8::11"));
  EXPECT_EQ(v6[0].remote, *bgp::IpAddress::parse("2001:db8::1"));
  EXPECT_EQ(v6[0].remotePort, 50000);
  EXPECT_EQ(v6[0].inode, 0u);
}

TEST(HolderWatch, OnlyAnEstablishedSessionWithAConfiguredPeerCounts) {
  auto rows = parseProcNetTcp(kTcp, false);
  EXPECT_TRUE(anyBgpSessionEstablished(rows, {{*bgp::IpAddress::parse("192.0.2.1"), 179}}));
  EXPECT_FALSE(anyBgpSessionEstablished(rows, {{*bgp::IpAddress::parse("192.0.2.2"), 179}}))
      << "CLOSE_WAIT: the peer hung up on a frozen holder";
  EXPECT_FALSE(anyBgpSessionEstablished(rows, {{*bgp::IpAddress::parse("192.0.2.9"), 179}}));
  // A session the peer opened to our port 179 counts too.
  TcpEntry incoming{*bgp::IpAddress::parse("192.0.2.11"), 179, *bgp::IpAddress::parse("192.0.2.9"),
                    50000, 1};
  EXPECT_TRUE(anyBgpSessionEstablished({incoming}, {{*bgp::IpAddress::parse("192.0.2.9"), 179}}));
}

TEST(HolderWatch, SilentOnlyAfterTheHoldTimeWithNoSession) {
  using namespace std::chrono_literals;
  HolderSilence silence(9s);
  const auto t0 = HolderSilence::Clock::time_point() + 1h;
  EXPECT_FALSE(silence.sample(true, t0));
  EXPECT_FALSE(silence.sample(false, t0 + 5s));
  EXPECT_FALSE(silence.silent());
  EXPECT_TRUE(silence.sample(false, t0 + 10s));
  EXPECT_TRUE(silence.silent());
  EXPECT_EQ(silence.silentFor(t0 + 10s), 10s);
  EXPECT_TRUE(silence.sample(true, t0 + 11s));  // back
  EXPECT_FALSE(silence.silent());
  // A watcher that starts while the holder is silent counts from its first look.
  HolderSilence late(9s);
  EXPECT_FALSE(late.sample(false, t0));
  EXPECT_FALSE(late.sample(false, t0 + 9s));
  EXPECT_TRUE(late.sample(false, t0 + 10s));
  late.reset();
  EXPECT_FALSE(late.silent());
}

// Issue 43: fencing a silent holder. The pure parts first: /proc/PID/stat's state letter and
// /proc/locks' holders.
TEST(HolderFence, ReadsTheProcessStateAfterTheLastParenthesis) {
  EXPECT_EQ(processState("4711 (vipd) T 1 4711 4711 0 -1"), 'T');
  EXPECT_EQ(processState("4711 (gdb) attached) t 1 2 3"), 't');  // a ')' in the name
  EXPECT_EQ(processState("4711 (vipd) S 1"), 'S');
  EXPECT_EQ(processState(""), std::nullopt);
  EXPECT_EQ(processState("4711 (vipd)"), std::nullopt);
  EXPECT_EQ(processState("garbage"), std::nullopt);
}

TEST(HolderFence, OnlyTheHolderOfThatFileHoldsTheLock) {
  const std::string locks =
      "1: POSIX  ADVISORY  WRITE 300 fd:01:99 0 EOF\n"
      "2: FLOCK  ADVISORY  WRITE 4711 00:2d:1234 0 EOF\n"
      "2: -> FLOCK  ADVISORY  WRITE 4712 00:2d:1234 0 EOF\n"
      "3: FLOCK  ADVISORY  WRITE 4713 00:2d:5678 0 EOF\n";
  EXPECT_TRUE(holdsFlock(locks, 4711, "00:2d:1234"));
  EXPECT_FALSE(holdsFlock(locks, 4712, "00:2d:1234")) << "a waiter holds nothing";
  EXPECT_FALSE(holdsFlock(locks, 4713, "00:2d:1234")) << "another file";
  EXPECT_FALSE(holdsFlock(locks, 300, "fd:01:99")) << "a POSIX lock is not the speaker lock";
  EXPECT_FALSE(holdsFlock(locks, 471, "00:2d:1234"));
  EXPECT_FALSE(holdsFlock("", 4711, "00:2d:1234"));
}

TEST(HolderFence, KillsOnlyAStoppedHolderItCanSeeThatHoldsTheLock) {
  EXPECT_EQ(fenceRefusal({true, 'T', true}), std::nullopt);
  EXPECT_EQ(fenceRefusal({true, 't', true}), std::nullopt);  // stopped by a debugger
  EXPECT_THAT(fenceRefusal({false, 'T', true}).value_or(""), HasSubstr("another PID namespace"));
  EXPECT_THAT(fenceRefusal({true, std::nullopt, true}).value_or(""), HasSubstr("cannot be found"));
  EXPECT_THAT(fenceRefusal({true, 'S', true}).value_or(""), HasSubstr("not stopped"));
  EXPECT_THAT(fenceRefusal({true, 'R', true}).value_or(""), HasSubstr("not stopped"));
  EXPECT_THAT(fenceRefusal({true, 'T', false}).value_or(""), HasSubstr("does not hold"));
}

// The real thing on processes: a child takes the lock and stops (SIGSTOP); the fence kills it and
// the lock comes free. A child that holds the lock and runs is left alone.
TEST_F(HostLockTest, AStoppedHolderIsKilledAndARunningOneIsNot) {
  auto lock = HostLock::open(dir_);
  ASSERT_TRUE(lock);
  ASSERT_FALSE(lock->fileId().empty());
  for (bool stop : {false, true}) {
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      auto mine = HostLock::open(dir_);
      if (!mine || !mine->tryAcquire(thisProcess("daemonset", "/x.sock")).value_or(false)) {
        std::_Exit(1);
      }
      if (stop) {
        ::raise(SIGSTOP);
      }
      ::pause();
      std::_Exit(0);
    }
    std::optional<LockHolder> holder;
    for (int i = 0; i < 500 && !(holder && holder->pid == child); ++i) {
      holder = lock->holder();
      ::usleep(10000);
    }
    ASSERT_TRUE(holder && holder->pid == child);
    int status = 0;
    if (stop) {
      ASSERT_EQ(::waitpid(child, &status, WUNTRACED), child);
      ASSERT_TRUE(WIFSTOPPED(status));
    }
    auto fenced = fenceStoppedHolder(*holder, *lock);
    if (!stop) {
      ASSERT_FALSE(fenced);
      EXPECT_THAT(fenced.error(), HasSubstr("not stopped"));
      EXPECT_EQ(lock->tryAcquire({1, "static-pod", "/y.sock"}), false) << "it still holds it";
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
      continue;
    }
    ASSERT_TRUE(fenced) << fenced.error();
    EXPECT_THAT(*fenced, HasSubstr(fmt::format("killed pid {}", child)));
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    EXPECT_EQ(lock->tryAcquire({1, "static-pod", "/y.sock"}), true);
    lock->release();
  }
}

}  // namespace
}  // namespace vipd::daemon
