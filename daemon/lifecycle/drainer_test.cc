// Drainer against a recording DrainHost: `vipctl withdraw` and `vipctl announce` as the control
// socket hands them over, the drain's steps as the host sees them, and the withdrawn state on
// disk. Every wait is 0 ms (or never reached), so io_context::run() returns without sleeping.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "daemon/lifecycle/drainer.h"

namespace vipd::daemon {
namespace {

using namespace std::chrono_literals;

// A request as the control socket hands it over: parsed (and checked) once, at the edge.
ControlRequest parsed(const nlohmann::json& request) {
  auto out = parseControlRequest(request.dump());
  EXPECT_TRUE(out.has_value()) << request.dump();
  return out.value_or(ControlRequest{});
}

class RecordingHost : public DrainHost {
 public:
  void setGracefulShutdown(bool on) override {
    calls.push_back(on ? "mark graceful shutdown" : "unmark graceful shutdown");
  }
  void pushAnnouncements() override {
    calls.push_back(drainer && drainer->withdrawSent() ? "push (withdrawn)" : "push");
  }
  std::vector<std::string> unacknowledgedPeers() const override { return unacknowledged; }
  void unbindOwned() override { calls.push_back("unbind"); }
  void bindAndAnnounce() override { calls.push_back("bind and announce"); }
  bool healthy() const override { return true; }
  size_t announceableCount() const override { return 2; }

  const Drainer* drainer = nullptr;
  std::vector<std::string> unacknowledged;
  std::vector<std::string> calls;
};

class DrainerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("vipd-drainer-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A drain with no graceful-shutdown step and no unbind delay: nothing in it waits.
  Drainer& make(config::Drain settings = {0ms, 10000ms, 0ms}) {
    settings_ = settings;
    drainer_.emplace(io_, settings_, dir_.string(), log_, host_);
    host_.drainer = &*drainer_;
    return *drainer_;
  }

  // Sends one control request and runs the event loop until the drain has nothing left to do.
  std::vector<nlohmann::json> withdraw(nlohmann::json request, Drainer::Guard guard = nullptr) {
    std::vector<nlohmann::json> replies;
    drainer_->handleWithdraw(
        parsed(request), [&](nlohmann::json r) { replies.push_back(std::move(r)); },
        std::move(guard));
    io_.restart();
    io_.run();
    return replies;
  }

  std::filesystem::path stateFile() const { return dir_ / "withdrawn.json"; }

  asio::io_context io_;
  Logger log_{LogFormat::Text, LogLevel::Error};
  config::Drain settings_;
  RecordingHost host_;
  std::optional<Drainer> drainer_;
  std::filesystem::path dir_;
};

TEST_F(DrainerTest, WithdrawPersistsFirstThenWithdrawsWaitsForAcksAndUnbinds) {
  auto& drainer = make();
  auto replies = withdraw({{"command", "withdraw"}, {"reason", "replace node"}, {"wait", true}});

  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0]["ok"], true);
  EXPECT_EQ(replies[0]["acknowledged"], true);
  EXPECT_EQ(host_.calls, (std::vector<std::string>{"push (withdrawn)", "unbind",
                                                   "unmark graceful shutdown"}));
  EXPECT_TRUE(std::filesystem::exists(stateFile()));
  EXPECT_FALSE(drainer.draining());
  ASSERT_TRUE(drainer.withdrawn());
  EXPECT_EQ(drainer.withdrawn()->reason, "replace node");
  EXPECT_EQ(drainer.withdrawnStatus()["persisted"], true);
  EXPECT_NE(drainer.lastResult().find("acknowledged the withdraw"), std::string::npos);
}

TEST_F(DrainerTest, GracefulShutdownComesBeforeTheWithdraw) {
  make({1ms, 10000ms, 0ms});
  withdraw({{"command", "withdraw"}, {"wait", true}});
  EXPECT_EQ(host_.calls, (std::vector<std::string>{"mark graceful shutdown", "push (withdrawn)",
                                                   "unbind", "unmark graceful shutdown"}));
}

// Issue 40: the guard is checked again at the end of the GRACEFUL_SHUTDOWN phase. Refused then:
// nothing was withdrawn, the GS mark is lifted, the node announces again, the withdrawn state is
// cleared (memory and disk), and `--wait` answers as a refusal at the request does.
TEST_F(DrainerTest, AGuardRefusalAtTheEndOfGracefulShutdownUndoesTheWithdraw) {
  auto& drainer = make({1ms, 10000ms, 0ms});
  int checks = 0;
  auto replies = withdraw({{"command", "withdraw"}, {"reason", "fleet script"}, {"wait", true}},
                          [&]() -> std::optional<std::string> {
                            ++checks;
                            EXPECT_TRUE(drainer.draining());
                            EXPECT_FALSE(drainer.withdrawSent());
                            return "refused: fewer than guard.minAnnouncers (1) ...";
                          });
  EXPECT_EQ(checks, 1);
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0]["refused"], "guard") << "vipctl's exit 4";
  EXPECT_EQ(replies[0]["error"], "refused: fewer than guard.minAnnouncers (1) ...");
  EXPECT_EQ(host_.calls, (std::vector<std::string>{"mark graceful shutdown",
                                                   "unmark graceful shutdown", "push"}));
  EXPECT_FALSE(drainer.draining());
  EXPECT_FALSE(drainer.withdrawn());
  EXPECT_FALSE(std::filesystem::exists(stateFile())) << "a restart must not come back withdrawn";
  EXPECT_EQ(drainer.lastResult(), "refused: fewer than guard.minAnnouncers (1) ...");
}

TEST_F(DrainerTest, AGuardThatStillAllowsGoesOnToWithdraw) {
  auto& drainer = make({1ms, 10000ms, 0ms});
  int checks = 0;
  auto replies = withdraw({{"command", "withdraw"}, {"wait", true}},
                          [&]() -> std::optional<std::string> {
                            ++checks;
                            return std::nullopt;
                          });
  EXPECT_EQ(checks, 1);
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0]["acknowledged"], true);
  EXPECT_EQ(host_.calls, (std::vector<std::string>{"mark graceful shutdown", "push (withdrawn)",
                                                   "unbind", "unmark graceful shutdown"}));
  EXPECT_TRUE(drainer.withdrawn());
}

TEST_F(DrainerTest, WithoutWaitTheRefusalIsOnlyLoggedAndTheNodeAnnouncesAgain) {
  auto& drainer = make({1ms, 10000ms, 0ms});
  auto replies = withdraw({{"command", "withdraw"}, {"wait", false}, {"persist", false}},
                          []() -> std::optional<std::string> { return "refused: ..."; });
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0]["draining"], true);
  EXPECT_FALSE(drainer.withdrawn());
  EXPECT_FALSE(drainer.draining());
}

TEST_F(DrainerTest, SigtermDuringAGuardedWithdrawLeavesWhateverTheGuardSays) {
  auto& drainer = make({1ms, 10000ms, 0ms});
  int checks = 0;
  bool stopped = false;
  std::vector<nlohmann::json> replies;
  drainer.handleWithdraw(
      parsed({{"command", "withdraw"}, {"wait", true}}),
      [&](nlohmann::json r) { replies.push_back(std::move(r)); },
      [&]() -> std::optional<std::string> {
        ++checks;
        return "refused";
      });
  drainer.thenRun([&] { stopped = true; });
  io_.run();
  EXPECT_EQ(checks, 0);
  EXPECT_TRUE(stopped);
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0]["acknowledged"], true);
}

TEST_F(DrainerTest, UnacknowledgedWithdrawAnswersWithAnErrorNamingThePeerAndStillUnbinds) {
  make({0ms, 0ms, 0ms});
  host_.unacknowledged = {"192.0.2.1 has 19 bytes unacknowledged"};
  auto replies = withdraw({{"command", "withdraw"}, {"wait", true}});

  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0]["acknowledged"], false);
  EXPECT_EQ(replies[0]["withdrawn"], true) << "vipctl's exit 1: withdrawn, not acknowledged";
  EXPECT_NE(replies[0]["error"].get<std::string>().find("192.0.2.1 has 19 bytes"),
            std::string::npos)
      << replies[0].dump();
  EXPECT_EQ(host_.calls.back(), "unmark graceful shutdown");
  EXPECT_NE(std::find(host_.calls.begin(), host_.calls.end(), "unbind"), host_.calls.end());
}

// Issue 28: a withdraw refused because the state cannot be persisted must not look like a slow
// one (exit 1, "withdrawn all the same"): it is refused, nothing is withdrawn, the node says it
// is still announcing and how to drain without persisting.
TEST_F(DrainerTest, AnUnwritableStateDirectoryRefusesTheWithdrawAndChangesNothing) {
  auto& drainer = make();
  std::filesystem::remove_all(dir_);
  std::filesystem::create_directories(dir_);
  std::filesystem::create_directory(dir_ / "withdrawn.json");  // rename over it fails as root too
  auto replies = withdraw({{"command", "withdraw"}, {"wait", true}, {"reason", "x"}});
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0]["refused"], "state") << replies[0].dump();
  EXPECT_FALSE(replies[0].contains("withdrawn"));
  const auto error = replies[0]["error"].get<std::string>();
  EXPECT_NE(error.find("still announcing"), std::string::npos) << error;
  EXPECT_NE(error.find("--transient"), std::string::npos) << error;
  EXPECT_TRUE(host_.calls.empty());
  EXPECT_FALSE(drainer.withdrawn());
  EXPECT_FALSE(drainer.draining());
  // --transient drains without touching the state directory.
  replies = withdraw({{"command", "withdraw"}, {"wait", true}, {"persist", false}});
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0]["acknowledged"], true) << replies[0].dump();
  EXPECT_TRUE(drainer.withdrawn());
}

TEST_F(DrainerTest, WithoutWaitTheAnswerComesAtOnce) {
  make();
  auto replies = withdraw({{"command", "withdraw"}});
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0]["draining"], true);
}

TEST_F(DrainerTest, SecondWithdrawSaysAlreadyWithdrawnAndDrainsNothing) {
  make();
  withdraw({{"command", "withdraw"}, {"reason", "first"}});
  host_.calls.clear();
  auto replies = withdraw({{"command", "withdraw"}, {"reason", "second"}});
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0]["alreadyWithdrawn"], true);
  EXPECT_EQ(replies[0]["reason"], "first");
  EXPECT_TRUE(host_.calls.empty());
}

TEST_F(DrainerTest, TransientWithdrawIsNotPersisted) {
  auto& drainer = make();
  withdraw({{"command", "withdraw"}, {"persist", false}});
  EXPECT_FALSE(std::filesystem::exists(stateFile()));
  EXPECT_TRUE(drainer.withdrawn());
  EXPECT_EQ(drainer.withdrawnStatus()["persisted"], false);
}

TEST_F(DrainerTest, AnnounceClearsTheStateAndBindsAgain) {
  auto& drainer = make();
  withdraw({{"command", "withdraw"}});
  host_.calls.clear();
  std::vector<nlohmann::json> replies;
  drainer.handleAnnounce([&](nlohmann::json r) { replies.push_back(std::move(r)); });

  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0]["wasWithdrawn"], true);
  EXPECT_EQ(replies[0]["announceable"], 2);
  EXPECT_EQ(host_.calls, (std::vector<std::string>{"bind and announce"}));
  EXPECT_FALSE(std::filesystem::exists(stateFile()));
  EXPECT_FALSE(drainer.withdrawn());
}

TEST_F(DrainerTest, ADrainInProgressRefusesAnnounceAndASecondWithdraw) {
  // The graceful-shutdown step waits a minute: the event loop is never run, so it never ends.
  auto& drainer = make({60000ms, 10000ms, 0ms});
  std::vector<nlohmann::json> replies;
  auto reply = [&](nlohmann::json r) { replies.push_back(std::move(r)); };
  drainer.handleWithdraw(parsed({{"command", "withdraw"}}), reply);
  ASSERT_TRUE(drainer.draining());
  EXPECT_FALSE(drainer.withdrawSent());

  drainer.handleAnnounce(reply);
  drainer.handleWithdraw(parsed({{"command", "withdraw"}}), reply);
  ASSERT_EQ(replies.size(), 3u);
  EXPECT_NE(replies[1]["error"].get<std::string>().find("a drain is in progress"),
            std::string::npos);
  EXPECT_NE(replies[2]["error"].get<std::string>().find("already in progress"),
            std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(stateFile())) << "announce must not clear it mid-drain";
}

TEST_F(DrainerTest, ThenRunFollowsTheDrainInProgress) {
  auto& drainer = make();
  std::vector<std::string> order;
  drainer.start("SIGTERM", std::nullopt, nullptr, [&] { order.push_back("drain finished"); });
  drainer.thenRun([&] { order.push_back("then"); });
  io_.run();
  EXPECT_EQ(order, (std::vector<std::string>{"drain finished", "then"}));
  EXPECT_FALSE(drainer.withdrawn()) << "SIGTERM's drain persists nothing";
}

// A state file vipd cannot use fails safe: withdrawn (the operator wrote it on purpose), with the
// reason naming the file and the field, until `vipctl announce` clears it.
TEST_F(DrainerTest, UnusableStateFileLeavesTheNodeWithdrawnUntilAnnounce) {
  for (const std::string body : {R"({"reason": "x", "since": 5})",
                                 R"({"reason": "x", "since": null})", "[1, 2]", "{not json"}) {
    host_.calls.clear();
    auto& drainer = make();
    std::ofstream(stateFile(), std::ios::trunc) << body;
    drainer.loadWithdrawn();
    ASSERT_TRUE(drainer.withdrawn()) << body;
    ASSERT_TRUE(drainer.stateError()) << body;
    EXPECT_NE(drainer.stateError()->find(stateFile().string()), std::string::npos)
        << *drainer.stateError();
    auto status = drainer.withdrawnStatus();
    EXPECT_TRUE(status["active"].get<bool>());
    EXPECT_NE(status["reason"].get<std::string>().find(stateFile().string()), std::string::npos)
        << status.dump();
    EXPECT_TRUE(status.contains("stateFileError")) << status.dump();
    EXPECT_FALSE(status["since"].get<std::string>().empty()) << "the file's mtime";

    std::vector<nlohmann::json> replies;
    drainer.handleAnnounce([&](nlohmann::json r) { replies.push_back(std::move(r)); });
    ASSERT_EQ(replies.size(), 1u);
    EXPECT_TRUE(replies[0].value("wasWithdrawn", false)) << replies[0].dump();
    EXPECT_FALSE(drainer.withdrawn());
    EXPECT_FALSE(drainer.stateError());
    EXPECT_FALSE(std::filesystem::exists(stateFile()));
    EXPECT_FALSE(drainer.withdrawnStatus().contains("stateFileError"));
    EXPECT_EQ(host_.calls, (std::vector<std::string>{"bind and announce"}));
  }
}

TEST_F(DrainerTest, AGoodStateFileIsLoadedWithoutAnError) {
  auto& drainer = make();
  std::ofstream(stateFile()) << R"({"reason": "replace node", "since": "2026-12-02T15:00:00Z"})";
  drainer.loadWithdrawn();
  ASSERT_TRUE(drainer.withdrawn());
  EXPECT_EQ(drainer.withdrawn()->reason, "replace node");
  EXPECT_FALSE(drainer.stateError());
  EXPECT_FALSE(drainer.withdrawnStatus().contains("stateFileError"));
}

// Issue 41: the Node's request (annotation or taint) drains as vipctl withdraw does, is never
// persisted, and its removal announces again.
TEST_F(DrainerTest, TheNodesRequestDrainsWithoutPersistingAndItsRemovalAnnounces) {
  auto& drainer = make({1ms, 10000ms, 0ms});
  drainer.apiWithdraw("annotation vipd.io/withdraw: disk swap", [] { return std::nullopt; },
                      nullptr);
  io_.run();
  EXPECT_EQ(host_.calls, (std::vector<std::string>{"mark graceful shutdown", "push (withdrawn)",
                                                   "unbind", "unmark graceful shutdown"}));
  EXPECT_FALSE(std::filesystem::exists(stateFile())) << "the Node is the record";
  ASSERT_TRUE(drainer.withdrawn());
  EXPECT_FALSE(drainer.localWithdrawn());
  auto status = drainer.withdrawnStatus();
  EXPECT_EQ(status["sources"], nlohmann::json({"kubernetes"}));
  EXPECT_EQ(status["persisted"], false);
  EXPECT_EQ(status["kubernetes"]["reason"], "annotation vipd.io/withdraw: disk swap");

  host_.calls.clear();
  EXPECT_TRUE(drainer.apiAnnounce());
  EXPECT_EQ(host_.calls, (std::vector<std::string>{"bind and announce"}));
  EXPECT_FALSE(drainer.withdrawn());
}

TEST_F(DrainerTest, TheNodesRequestRefusedAtTheEndOfGracefulShutdownLeavesTheNodeAnnouncing) {
  auto& drainer = make({1ms, 10000ms, 0ms});
  std::optional<std::string> said;
  drainer.apiWithdraw("taint node.kubernetes.io/out-of-service",
                      [] { return std::optional<std::string>("refused: the last announcer"); },
                      [&](std::string refusal) { said = refusal; });
  io_.run();
  EXPECT_EQ(said, "refused: the last announcer");
  EXPECT_FALSE(drainer.withdrawn());
  EXPECT_FALSE(drainer.draining());
  EXPECT_EQ(host_.calls, (std::vector<std::string>{"mark graceful shutdown",
                                                   "unmark graceful shutdown", "push"}));
}

// Either source withdraws; `vipctl announce` does not override the Node, and the Node's removal
// does not override vipctl.
TEST_F(DrainerTest, EachSourceHoldsTheNodeWithdrawnUntilItIsLifted) {
  auto& drainer = make();
  drainer.apiWithdraw("annotation vipd.io/withdraw: x", nullptr, nullptr);
  io_.run();
  auto replies = withdraw({{"command", "withdraw"}, {"reason", "replace"}});
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0]["alreadyWithdrawn"], true);
  EXPECT_TRUE(std::filesystem::exists(stateFile())) << "vipctl's withdrawal is persisted";
  EXPECT_EQ(drainer.withdrawnStatus()["sources"], nlohmann::json({"vipctl", "kubernetes"}));

  host_.calls.clear();
  EXPECT_TRUE(drainer.apiAnnounce());
  EXPECT_TRUE(host_.calls.empty()) << "vipctl's withdrawal still holds";
  ASSERT_TRUE(drainer.withdrawn());
  EXPECT_EQ(drainer.withdrawn()->reason, "replace");

  drainer.apiWithdraw("annotation vipd.io/withdraw: x", nullptr, nullptr);
  EXPECT_FALSE(drainer.draining()) << "already withdrawn by vipctl: no second drain";
  replies.clear();
  drainer.handleAnnounce([&](nlohmann::json r) { replies.push_back(std::move(r)); });
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0]["refused"], "kubernetes");
  EXPECT_TRUE(host_.calls.empty()) << "the Node's request still holds";
  EXPECT_FALSE(std::filesystem::exists(stateFile())) << "vipctl's part is cleared";
  EXPECT_TRUE(drainer.withdrawn());
}

}  // namespace
}  // namespace vipd::daemon
