// readBoundedFile() (config/file_reader.h) against the real file system in a temporary
// directory: what it reads (a regular file, the kubelet's ..data layout) and what it refuses at
// once, unread (a FIFO, a symlink out of the directory, a file over the bound).
#include "config/file_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

namespace vipd::config {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

class FileReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "vipd-read-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  static void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

TEST_F(FileReaderTest, ARegularFileIsRead) {
  write(dir_ / "vipd.yaml", "a: 1\n");
  auto text = readBoundedFile(path("vipd.yaml"), "config file", 1024);
  ASSERT_TRUE(text.has_value()) << text.error();
  EXPECT_EQ(*text, "a: 1\n");
}

TEST_F(FileReaderTest, AFifoIsRefusedAtOnceNotWaitedOn) {
  // On main, open() waited for a writer that never came: the daemon's one thread hung.
  ASSERT_EQ(::mkfifo(path("vipd.yaml").c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  auto text = readBoundedFile(path("vipd.yaml"), "config file", 1024);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  ASSERT_FALSE(text.has_value());
  EXPECT_EQ(text.error(),
            "the config file is a FIFO, not a regular file; vipd reads only regular files (a FIFO "
            "or a device could block it or never end). Refused unread");
}

TEST_F(FileReaderTest, ADeviceAndADirectoryAreRefused) {
  auto device = readBoundedFile("/dev/zero", "config file", 1024);
  ASSERT_FALSE(device.has_value());
  EXPECT_THAT(device.error(), HasSubstr("is a device, not a regular file"));
  fs::create_directory(dir_ / "sub");
  auto directory = readBoundedFile(path("sub"), "config file", 1024);
  ASSERT_FALSE(directory.has_value());
  EXPECT_THAT(directory.error(), HasSubstr("is a directory, not a regular file"));
}

TEST_F(FileReaderTest, ASymlinkOutOfItsDirectoryIsRefusedUnread) {
  // What issue 43 found: the config renamed over by a link to /etc/shadow.
  fs::create_directory(dir_ / "etc");
  write(dir_ / "secret", "root:$6$hash:19000:0:99999:7:::\n");
  fs::create_symlink(dir_ / "secret", dir_ / "etc" / "vipd.yaml");
  auto text = readBoundedFile(path("etc/vipd.yaml"), "config file", 1024);
  ASSERT_FALSE(text.has_value());
  EXPECT_THAT(text.error(), HasSubstr("the config file is a symlink that leads out of its "
                                      "directory " + path("etc")));
  EXPECT_THAT(text.error(), Not(HasSubstr("root:")));
  // A relative link climbing out is the same.
  fs::create_symlink("../secret", dir_ / "etc" / "node.yaml");
  EXPECT_FALSE(readBoundedFile(path("etc/node.yaml"), "node config file", 1024).has_value());
}

TEST_F(FileReaderTest, TheKubeletsDataLayoutIsFollowed) {
  fs::create_directory(dir_ / "..2026_01");
  write(dir_ / "..2026_01" / "vipd.yaml", "a: 1\n");
  fs::create_directory_symlink("..2026_01", dir_ / "..data");
  fs::create_symlink("..data/vipd.yaml", dir_ / "vipd.yaml");
  auto text = readBoundedFile(path("vipd.yaml"), "config file", 1024);
  ASSERT_TRUE(text.has_value()) << text.error();
  EXPECT_EQ(*text, "a: 1\n");
}

TEST_F(FileReaderTest, ADirectoryThatIsASymlinkIsFollowed) {
  // /etc/vipd -> /srv/vipd: only what lies below the file's directory is checked.
  fs::create_directory(dir_ / "real");
  write(dir_ / "real" / "vipd.yaml", "a: 1\n");
  fs::create_directory_symlink(dir_ / "real", dir_ / "link");
  EXPECT_TRUE(readBoundedFile(path("link/vipd.yaml"), "config file", 1024).has_value());
}

TEST_F(FileReaderTest, AFileOverTheBoundIsRefused) {
  write(dir_ / "vipd.yaml", std::string(2048, 'a'));
  auto text = readBoundedFile(path("vipd.yaml"), "config file", 1024);
  ASSERT_FALSE(text.has_value());
  EXPECT_EQ(text.error(),
            "the config file is larger than 1 KiB; is this the right file? Refused unread");
  EXPECT_TRUE(readBoundedFile(path("vipd.yaml"), "config file", 2048).has_value());
}

TEST_F(FileReaderTest, AMissingFileCarriesTheOsReason) {
  auto text = readBoundedFile(path("absent.yaml"), "config file", 1024);
  ASSERT_FALSE(text.has_value());
  EXPECT_EQ(text.error(), "cannot open the config file: No such file or directory");
}

}  // namespace
}  // namespace vipd::config
