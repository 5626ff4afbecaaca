// The drain order of issue 4, driven as events (no sockets, no sleeps), and the persisted
// withdrawn state.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "daemon/lifecycle/drain_sequence.h"
#include "daemon/lifecycle/withdrawn_state.h"

namespace vipd::daemon {
namespace {

using namespace std::chrono_literals;
using Kind = DrainAction::Kind;

std::vector<Kind> kinds(const std::vector<DrainAction>& actions) {
  std::vector<Kind> out;
  for (const auto& a : actions) {
    out.push_back(a.kind);
  }
  return out;
}

TEST(DrainSequence, GracefulShutdownThenWithdrawThenAcksThenUnbind) {
  DrainSequence drain(2000ms, 10000ms, 1000ms);
  auto a = drain.start();
  ASSERT_EQ(kinds(a), (std::vector<Kind>{Kind::MarkGracefulShutdown, Kind::Wait}));
  EXPECT_EQ(a[1].after, 2000ms);
  EXPECT_EQ(drain.step(), DrainStep::GracefulShutdown);

  a = drain.onTimer();
  EXPECT_EQ(kinds(a), (std::vector<Kind>{Kind::Withdraw, Kind::CheckAcks}));
  EXPECT_EQ(drain.step(), DrainStep::WaitingForAcks);

  a = drain.onAcks(false, 3ms);  // the peer has not acknowledged yet: poll again
  ASSERT_EQ(kinds(a), (std::vector<Kind>{Kind::Wait}));
  EXPECT_EQ(a[0].after, DrainSequence::kAckPollInterval);
  EXPECT_EQ(kinds(drain.onTimer()), (std::vector<Kind>{Kind::CheckAcks}));

  a = drain.onAcks(true, 8ms);
  ASSERT_EQ(kinds(a), (std::vector<Kind>{Kind::AcksSettled, Kind::Wait}));
  EXPECT_TRUE(a[0].acknowledged);
  EXPECT_EQ(a[1].after, 1000ms);
  EXPECT_EQ(drain.step(), DrainStep::UnbindDelay);

  EXPECT_EQ(kinds(drain.onTimer()), (std::vector<Kind>{Kind::Unbind, Kind::Finished}));
  EXPECT_EQ(drain.step(), DrainStep::Done);
  EXPECT_TRUE(drain.acknowledged());
  EXPECT_TRUE(drain.onTimer().empty());
}

// Issue 40: a guarded drain (vipctl withdraw without --force) checks the guard again at the end
// of the GRACEFUL_SHUTDOWN phase; refused, it ends there with nothing withdrawn.
TEST(DrainSequence, AGuardedDrainChecksTheGuardAgainBeforeWithdrawing) {
  DrainSequence drain(2000ms, 10000ms, 1000ms, true);
  EXPECT_EQ(kinds(drain.start()), (std::vector<Kind>{Kind::MarkGracefulShutdown, Kind::Wait}));
  EXPECT_EQ(kinds(drain.onTimer()), (std::vector<Kind>{Kind::CheckGuard}));
  EXPECT_EQ(drain.step(), DrainStep::CheckingGuard);
  EXPECT_TRUE(drain.onTimer().empty()) << "a stray timer neither withdraws nor checks again";
  EXPECT_EQ(kinds(drain.onGuard(true)), (std::vector<Kind>{Kind::Withdraw, Kind::CheckAcks}));
  EXPECT_EQ(drain.step(), DrainStep::WaitingForAcks);
  EXPECT_TRUE(drain.onGuard(false).empty()) << "the answer comes once";
}

TEST(DrainSequence, AGuardRefusalAtTheEndOfGracefulShutdownEndsTheDrainWithoutAWithdraw) {
  DrainSequence drain(2000ms, 10000ms, 1000ms, true);
  (void)drain.start();
  (void)drain.onTimer();
  EXPECT_EQ(kinds(drain.onGuard(false)), (std::vector<Kind>{Kind::Refused}));
  EXPECT_EQ(drain.step(), DrainStep::Refused);
  EXPECT_TRUE(drain.onTimer().empty());
  EXPECT_TRUE(drain.onAcks(true, 0ms).empty());
}

TEST(DrainSequence, UnguardedDrainsAndSigtermDuringAGuardedOneDoNotCheck) {
  DrainSequence plain(2000ms, 10000ms, 1000ms);
  (void)plain.start();
  EXPECT_EQ(kinds(plain.onTimer()), (std::vector<Kind>{Kind::Withdraw, Kind::CheckAcks}));
  // SIGTERM arrives during the GRACEFUL_SHUTDOWN phase: the node leaves whatever the guard says.
  DrainSequence guarded(2000ms, 10000ms, 1000ms, true);
  (void)guarded.start();
  guarded.unguard();
  EXPECT_EQ(kinds(guarded.onTimer()), (std::vector<Kind>{Kind::Withdraw, Kind::CheckAcks}));
  // ... or while the check is being made: a refusal no longer holds the node.
  DrainSequence checking(2000ms, 10000ms, 1000ms, true);
  (void)checking.start();
  (void)checking.onTimer();
  checking.unguard();
  EXPECT_EQ(kinds(checking.onGuard(false)), (std::vector<Kind>{Kind::Withdraw, Kind::CheckAcks}));
}

TEST(DrainSequence, ZeroGracefulShutdownTimeWithdrawsAtOnce) {
  DrainSequence drain(0ms, 10000ms, 1000ms);
  EXPECT_EQ(kinds(drain.start()), (std::vector<Kind>{Kind::Withdraw, Kind::CheckAcks}));
}

TEST(DrainSequence, AckTimeoutStillUnbindsButSaysSo) {
  DrainSequence drain(0ms, 100ms, 0ms);
  (void)drain.start();
  auto a = drain.onAcks(false, 100ms);
  ASSERT_EQ(kinds(a), (std::vector<Kind>{Kind::AcksSettled, Kind::Wait}));
  EXPECT_FALSE(a[0].acknowledged);
  EXPECT_EQ(kinds(drain.onTimer()), (std::vector<Kind>{Kind::Unbind, Kind::Finished}));
  EXPECT_FALSE(drain.acknowledged());
}

TEST(DrainSequence, StartTwiceAndStrayEventsDoNothing) {
  DrainSequence drain(1000ms, 100ms, 0ms);
  EXPECT_TRUE(drain.onAcks(true, 0ms).empty());  // before start
  (void)drain.start();
  EXPECT_TRUE(drain.start().empty());
  EXPECT_TRUE(drain.onAcks(true, 0ms).empty());  // acks before the withdraw mean nothing
  EXPECT_EQ(drain.step(), DrainStep::GracefulShutdown);
}

TEST(DrainSequence, AfterWithdrawWaitsForAcksThenUnbindsLikeADrain) {
  DrainSequence seq(2000ms, 10000ms, 1000ms);
  auto a = seq.startAfterWithdraw();  // no GRACEFUL_SHUTDOWN, no Withdraw: the caller sent it
  EXPECT_EQ(kinds(a), (std::vector<Kind>{Kind::CheckAcks}));
  EXPECT_EQ(seq.step(), DrainStep::WaitingForAcks);
  a = seq.onAcks(false, 5ms);
  ASSERT_EQ(kinds(a), (std::vector<Kind>{Kind::Wait}));
  EXPECT_EQ(a[0].after, DrainSequence::kAckPollInterval);  // the drain's poll, not another
  EXPECT_EQ(kinds(seq.onTimer()), (std::vector<Kind>{Kind::CheckAcks}));
  a = seq.onAcks(true, 10ms);
  ASSERT_EQ(kinds(a), (std::vector<Kind>{Kind::AcksSettled, Kind::Wait}));
  EXPECT_EQ(a[1].after, 1000ms);
  EXPECT_EQ(kinds(seq.onTimer()), (std::vector<Kind>{Kind::Unbind, Kind::Finished}));
  EXPECT_TRUE(seq.startAfterWithdraw().empty());  // once
}

TEST(DrainSequence, AfterWithdrawTimesOutLikeADrain) {
  DrainSequence seq(0ms, 100ms, 0ms);
  (void)seq.startAfterWithdraw();
  auto a = seq.onAcks(false, 100ms);
  ASSERT_EQ(kinds(a), (std::vector<Kind>{Kind::AcksSettled, Kind::Wait}));
  EXPECT_FALSE(a[0].acknowledged);
  EXPECT_EQ(kinds(seq.onTimer()), (std::vector<Kind>{Kind::Unbind, Kind::Finished}));
}

TEST(DrainSequence, AfterWithdrawCannotFollowAStartedDrain) {
  DrainSequence seq(1000ms, 100ms, 0ms);
  (void)seq.start();
  EXPECT_TRUE(seq.startAfterWithdraw().empty());
  EXPECT_EQ(seq.step(), DrainStep::GracefulShutdown);
}

class WithdrawnStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("vipd-withdrawn-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(WithdrawnStateTest, SaveLoadClear) {
  WithdrawnState state((dir_ / "nested").string());
  auto none = state.load();
  ASSERT_TRUE(none.has_value());
  EXPECT_FALSE(none->has_value());
  ASSERT_TRUE(state.save({"node replacement", "2026-12-02T15:00:00Z"}).has_value());
  auto loaded = state.load();
  ASSERT_TRUE(loaded.has_value() && loaded->has_value());
  EXPECT_EQ((*loaded)->reason, "node replacement");
  EXPECT_EQ((*loaded)->since, "2026-12-02T15:00:00Z");
  EXPECT_FALSE(std::filesystem::exists(state.path() + ".tmp"));
  ASSERT_TRUE(state.clear().has_value());
  ASSERT_TRUE(state.clear().has_value());  // idempotent
  EXPECT_FALSE(state.load()->has_value());
}

TEST_F(WithdrawnStateTest, CorruptFileIsAnErrorNotAnAnnouncement) {
  std::filesystem::create_directories(dir_);
  WithdrawnState state(dir_.string());
  std::ofstream(state.path()) << "{not json";
  auto loaded = state.load();
  ASSERT_FALSE(loaded.has_value());
  EXPECT_NE(loaded.error().find(state.path() + " is not valid JSON"), std::string::npos)
      << loaded.error();
}

// Valid JSON of the wrong shape used to throw nlohmann::json::type_error out of load() (and abort
// vipd): each is now an error naming the file and, where there is one, the field.
TEST_F(WithdrawnStateTest, WrongTypesAreErrorsNamingTheFileAndTheField) {
  std::filesystem::create_directories(dir_);
  WithdrawnState state(dir_.string());
  struct Case {
    std::string body;
    std::string expected;  // after "<path>"
  };
  const std::vector<Case> cases = {
      {R"({"reason": "r", "since": 5})", R"(: field "since" is a number, expected a string)"},
      {R"({"reason": "r", "since": null})", R"(: field "since" is null, expected a string)"},
      {R"({"reason": "r", "since": ["x"]})", R"(: field "since" is an array, expected a string)"},
      {R"({"reason": 7, "since": "2026-12-02T15:00:00Z"})",
       R"(: field "reason" is a number, expected a string)"},
      {R"({"since": "2026-12-02T15:00:00Z"})", R"(: field "reason" is missing)"},
      {R"(["reason", "since"])", " holds an array, expected a JSON object"},
      {R"("withdrawn")", " holds a string, expected a JSON object"},
      {"null", " holds null, expected a JSON object"},
      {R"({"reason": "replace no)", " is not valid JSON"},
      {"", " is not valid JSON"},
  };
  for (const auto& c : cases) {
    std::ofstream(state.path(), std::ios::trunc) << c.body;
    tl::expected<std::optional<Withdrawn>, std::string> loaded;
    ASSERT_NO_THROW(loaded = state.load()) << c.body;
    ASSERT_FALSE(loaded.has_value()) << c.body;
    EXPECT_NE(loaded.error().find(state.path() + c.expected), std::string::npos)
        << c.body << " -> " << loaded.error();
  }
}

TEST_F(WithdrawnStateTest, SinceIsOptional) {
  std::filesystem::create_directories(dir_);
  WithdrawnState state(dir_.string());
  std::ofstream(state.path()) << R"({"reason": "by hand"})";
  auto loaded = state.load();
  ASSERT_TRUE(loaded.has_value() && loaded->has_value()) << loaded.error();
  EXPECT_EQ((*loaded)->reason, "by hand");
  EXPECT_EQ((*loaded)->since, "");
}

}  // namespace
}  // namespace vipd::daemon
