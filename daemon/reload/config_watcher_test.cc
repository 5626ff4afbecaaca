// ConfigWatcher (issue 29) against the real kernel's inotify in a temporary directory: an edit in
// place, a file renamed over, a ConfigMap-style `..data` symlink swap, a burst of events seen
// once, and a file in another directory reached through a symlink.
#include "daemon/reload/config_watcher.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

#include <boost/asio/io_context.hpp>

namespace vipd::daemon {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class ConfigWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "vipd-watch-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    watcher_.stop();
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  static void write(const fs::path& path, const std::string& text) {
    std::ofstream(path) << text;
  }

  // Runs the loop until `done` or `limit`.
  bool runUntil(const std::function<bool()>& done, std::chrono::milliseconds limit = 3000ms) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      io_.restart();
      io_.run_for(10ms);
    }
    return done();
  }

  void settle() { runUntil([] { return false; }, ConfigWatcher::kQuiet + 200ms); }

  fs::path dir_;
  asio::io_context io_;
  int changes_ = 0;
  ConfigWatcher watcher_{io_, [this] { ++changes_; }};
};

TEST_F(ConfigWatcherTest, AnEditInPlaceIsSeenOnce) {
  write(dir_ / "vipd.yaml", "a");
  ASSERT_TRUE(watcher_.watch({(dir_ / "vipd.yaml").string()}).has_value());
  EXPECT_EQ(watcher_.directories(), std::vector<std::string>{dir_.string()});
  for (int i = 0; i < 5; ++i) {
    write(dir_ / "vipd.yaml", "b" + std::to_string(i));  // a burst: one change
  }
  ASSERT_TRUE(runUntil([&] { return changes_ > 0; }));
  settle();
  EXPECT_EQ(changes_, 1);
}

TEST_F(ConfigWatcherTest, AFileRenamedOverIsSeen) {
  write(dir_ / "vipd.yaml", "a");
  ASSERT_TRUE(watcher_.watch({(dir_ / "vipd.yaml").string()}).has_value());
  write(dir_ / ".vipd.yaml.tmp", "b");
  fs::rename(dir_ / ".vipd.yaml.tmp", dir_ / "vipd.yaml");
  EXPECT_TRUE(runUntil([&] { return changes_ == 1; }));
}

TEST_F(ConfigWatcherTest, TheKubeletsDataSymlinkSwapIsSeen) {
  // What the kubelet makes of a ConfigMap volume: the file is a symlink into ..data, itself a
  // symlink to a timestamped directory; an update writes a new directory and renames a new
  // ..data symlink over the old one.
  fs::create_directory(dir_ / "..2026_01");
  write(dir_ / "..2026_01" / "vipd.yaml", "a");
  fs::create_directory_symlink("..2026_01", dir_ / "..data");
  fs::create_symlink("..data/vipd.yaml", dir_ / "vipd.yaml");
  ASSERT_TRUE(watcher_.watch({(dir_ / "vipd.yaml").string()}).has_value());
  fs::create_directory(dir_ / "..2026_02");
  write(dir_ / "..2026_02" / "vipd.yaml", "b");
  settle();
  changes_ = 0;  // writing into the new directory may or may not be seen; the swap must be
  fs::create_directory_symlink("..2026_02", dir_ / "..data_tmp");
  fs::rename(dir_ / "..data_tmp", dir_ / "..data");
  EXPECT_TRUE(runUntil([&] { return changes_ == 1; }));
}

TEST_F(ConfigWatcherTest, AnEditOfASymlinksTargetElsewhereIsSeen) {
  fs::create_directory(dir_ / "etc");
  fs::create_directory(dir_ / "real");
  write(dir_ / "real" / "node.yaml", "a");
  fs::create_symlink(dir_ / "real" / "node.yaml", dir_ / "etc" / "node.yaml");
  ASSERT_TRUE(watcher_.watch({(dir_ / "etc" / "node.yaml").string()}).has_value());
  EXPECT_EQ(watcher_.directories().size(), 2u);
  write(dir_ / "real" / "node.yaml", "b");
  EXPECT_TRUE(runUntil([&] { return changes_ == 1; }));
}

TEST_F(ConfigWatcherTest, AMissingDirectoryIsAnErrorNamingItAndTheRestIsWatched) {
  write(dir_ / "vipd.yaml", "a");
  auto watched = watcher_.watch(
      {(dir_ / "vipd.yaml").string(), (dir_ / "nowhere" / "node.yaml").string()});
  ASSERT_FALSE(watched.has_value());
  EXPECT_NE(watched.error().find((dir_ / "nowhere").string()), std::string::npos)
      << watched.error();
  write(dir_ / "vipd.yaml", "b");
  EXPECT_TRUE(runUntil([&] { return changes_ == 1; }));
}

TEST_F(ConfigWatcherTest, AModificationAloneIsNotAChangeUntilItsWriterCloses) {
  // Issue 40: a slow `cat > vipd.yaml` paused halfway was read half-written on main (a VIP
  // withdrawn and unbound). Now nothing is said while the writer holds the file open.
  write(dir_ / "vipd.yaml", "a");
  ASSERT_TRUE(watcher_.watch({(dir_ / "vipd.yaml").string()}).has_value());
  {
    std::ofstream writer(dir_ / "vipd.yaml", std::ios::trunc);
    writer << "half" << std::flush;
    runUntil([] { return false; }, ConfigWatcher::kMaxDelay + 300ms);
    EXPECT_EQ(changes_, 0);
    EXPECT_EQ(watcher_.writing(), std::vector<std::string>{(dir_ / "vipd.yaml").string()});
    writer << " and the rest" << std::flush;
  }  // closed: IN_CLOSE_WRITE
  EXPECT_TRUE(runUntil([&] { return changes_ == 1; }));
  EXPECT_TRUE(watcher_.writing().empty());
}

TEST_F(ConfigWatcherTest, AFileCreatedByAWriterWaitsForItsClose) {
  write(dir_ / "vipd.yaml", "a");
  ASSERT_TRUE(watcher_.watch({(dir_ / "vipd.yaml").string()}).has_value());
  fs::remove(dir_ / "vipd.yaml");
  ASSERT_TRUE(runUntil([&] { return changes_ == 1; }));  // gone: the owner gives it a grace
  {
    std::ofstream writer(dir_ / "vipd.yaml");
    writer << "half" << std::flush;
    settle();
    EXPECT_EQ(changes_, 1);
    EXPECT_FALSE(watcher_.writing().empty());
  }
  EXPECT_TRUE(runUntil([&] { return changes_ == 2; }));
}

TEST_F(ConfigWatcherTest, AnotherFileBeingWrittenDoesNotHoldTheWatchedOnes) {
  write(dir_ / "vipd.yaml", "a");
  ASSERT_TRUE(watcher_.watch({(dir_ / "vipd.yaml").string()}).has_value());
  std::ofstream log(dir_ / "other.log");
  log << "a line" << std::flush;
  write(dir_ / "vipd.yaml", "b");
  EXPECT_TRUE(runUntil([&] { return changes_ >= 1; }));
  EXPECT_TRUE(watcher_.writing().empty());
}

TEST_F(ConfigWatcherTest, StoppedSaysNothing) {
  write(dir_ / "vipd.yaml", "a");
  ASSERT_TRUE(watcher_.watch({(dir_ / "vipd.yaml").string()}).has_value());
  watcher_.stop();
  write(dir_ / "vipd.yaml", "b");
  settle();
  EXPECT_EQ(changes_, 0);
}

}  // namespace
}  // namespace vipd::daemon
