// ReloadRecord (daemon/reload/reload_record.h): status `config` after loads that failed, applied,
// applied in part and changed nothing; a pending change's reason made from its typed Why.
#include "daemon/reload/reload_record.h"

#include <gtest/gtest.h>

namespace vipd::daemon {
namespace {

const config::ConfigChange kHold{"peers[192.0.2.1].holdTime", "9s", "6s",
                                 config::ChangeEffect::AppliesLive};
const config::ConfigChange kAsn{"localAsn", "65001", "65009", config::ChangeEffect::NeedsRestart};
const config::ConfigChange kPort{"returnPath.relayPort", "4790", "4791",
                                 config::ChangeEffect::AppliesLive};

TEST(ReloadRecordTest, AStartIsASuccessfulLoadWithNoReloadYet) {
  ReloadRecord record("2026-01-01T00:00:00.000Z");
  auto status = record.status();
  EXPECT_EQ(status["loadedAt"], "2026-01-01T00:00:00.000Z");
  EXPECT_EQ(status["lastReloadSuccessful"], true);
  EXPECT_EQ(status["reloads"], 0);
  EXPECT_FALSE(status.contains("lastReloadAt"));
  EXPECT_FALSE(status.contains("lastReloadError"));
  EXPECT_FALSE(status.contains("watch"));
}

TEST(ReloadRecordTest, APendingChangeSaysWhyFromItsTypedReason) {
  EXPECT_EQ((PendingChange{kAsn, PendingChange::Why::NeedsRestart, ""}).reason(),
            "needs a restart");
  EXPECT_EQ((PendingChange{kPort, PendingChange::Why::NotApplied, "port 4791 in use"}).reason(),
            "could not be applied: port 4791 in use");
}

TEST(ReloadRecordTest, PartlyAppliedKeepsWhatRunsAndWhatWaits) {
  ReloadRecord record("t0");
  ReloadOutcome outcome{{kHold}, {{kAsn, PendingChange::Why::NeedsRestart, ""}}, false};
  EXPECT_EQ(outcome.notApplied(), 0u);
  record.record(outcome, "SIGHUP", "t1");
  auto status = record.status();
  EXPECT_EQ(status["loadedAt"], "t1");
  EXPECT_EQ(status["lastReloadAt"], "t1");
  EXPECT_EQ(status["lastReloadTrigger"], "SIGHUP");
  EXPECT_EQ(status["lastReloadResult"], "partly applied");
  EXPECT_EQ(status["lastReloadSuccessful"], true);
  EXPECT_EQ(status["reloads"], 1);
  EXPECT_EQ(status["lastApplied"],
            nlohmann::json::parse(
                R"([{"key":"peers[192.0.2.1].holdTime","before":"9s","after":"6s"}])"));
  EXPECT_EQ(status["pendingRestart"],
            nlohmann::json::parse(R"([{"key":"localAsn","running":"65001","file":"65009",)"
                                  R"("reason":"needs a restart"}])"));
}

TEST(ReloadRecordTest, AChangeThatCouldNotBeAppliedFailsTheReloadAndNamesTheFirst) {
  ReloadRecord record("t0");
  ReloadOutcome outcome{{},
                        {{kAsn, PendingChange::Why::NeedsRestart, ""},
                         {kPort, PendingChange::Why::NotApplied, "port 4791 in use"}},
                        true};
  EXPECT_EQ(outcome.notApplied(), 1u);
  record.record(outcome, "file change", "t1");
  auto status = record.status();
  EXPECT_EQ(status["loadedAt"], "t0") << "nothing applied: the config that runs is the old one";
  EXPECT_EQ(status["lastReloadResult"], "pending restart");
  EXPECT_EQ(status["lastReloadSuccessful"], false);
  EXPECT_EQ(status["reloadFailures"], 1);
  EXPECT_EQ(status["lastReloadError"],
            "returnPath.relayPort: could not be applied: port 4791 in use");

  record.record({}, "SIGHUP", "t2");
  status = record.status();
  EXPECT_EQ(status["lastReloadResult"], "nothing to apply");
  EXPECT_EQ(status["lastReloadSuccessful"], true);
  EXPECT_FALSE(status.contains("lastReloadError"));
  EXPECT_EQ(status["pendingRestart"], nlohmann::json::array());
}

TEST(ReloadRecordTest, AFileThatDidNotLoadChangesNothingButTheRecord) {
  ReloadRecord record("t0");
  record.setWatch({{"files", 2}});
  record.failed("vipd.yaml:3:1: routerId: expected an IPv4 address", "file change", "t1");
  auto status = record.status();
  EXPECT_EQ(status["lastReloadResult"], "failed");
  EXPECT_EQ(status["lastReloadSuccessful"], false);
  EXPECT_EQ(status["reloadFailures"], 1);
  EXPECT_EQ(status["loadedAt"], "t0");
  EXPECT_EQ(status["lastReloadError"], "vipd.yaml:3:1: routerId: expected an IPv4 address");
  EXPECT_EQ(status["watch"], nlohmann::json({{"files", 2}}));
}

}  // namespace
}  // namespace vipd::daemon
