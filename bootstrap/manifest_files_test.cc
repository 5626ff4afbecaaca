// The I/O edge of `vipd render`, in temporary directories: atomic writes (watched with inotify:
// the manifest directory never sees a temporary or partial file), unchanged content left alone,
// old manifests archived, bootstrap disabled moving the manifest out, stray files, and the
// command's exit codes, output and "nothing written" on every error.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <sstream>
#include <string>

#include "bootstrap/atomic_file.h"
#include "bootstrap/manifest_files.h"
#include "bootstrap/render_command.h"
#include "bootstrap/test_support.h"

namespace vipd::bootstrap {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::kDataDir;
using testing::listDir;
using ::testing::Not;
using testing::readFile;
using testing::TempDir;
using testing::writeFile;

// 2025-01-02T03:04:05Z
const std::chrono::system_clock::time_point kNow =
    std::chrono::system_clock::from_time_t(1735787045);

struct stat statOf(const fs::path& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st;
}

// Every inotify event in one directory, as "EVENT name" strings.
class DirWatch {
 public:
  explicit DirWatch(const fs::path& dir) : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    EXPECT_GE(fd_, 0);
    EXPECT_GE(::inotify_add_watch(fd_, dir.c_str(), IN_ALL_EVENTS), 0) << dir;
  }
  ~DirWatch() { ::close(fd_); }

  std::vector<std::string> events() {
    std::vector<std::string> out;
    alignas(inotify_event) char buffer[16384];
    while (true) {
      ssize_t n = ::read(fd_, buffer, sizeof buffer);
      if (n <= 0) {
        return out;
      }
      for (char* p = buffer; p < buffer + n;) {
        auto* e = reinterpret_cast<inotify_event*>(p);
        std::string name = e->len > 0 ? std::string(e->name) : "";
        for (auto [mask, text] :
             {std::pair{IN_CREATE, "CREATE"}, std::pair{IN_MODIFY, "MODIFY"},
              std::pair{IN_CLOSE_WRITE, "CLOSE_WRITE"}, std::pair{IN_MOVED_TO, "MOVED_TO"},
              std::pair{IN_MOVED_FROM, "MOVED_FROM"}, std::pair{IN_DELETE, "DELETE"},
              std::pair{IN_ATTRIB, "ATTRIB"}}) {
          if (e->mask & mask) {
            out.push_back(fmt::format("{} {}", text, name));
          }
        }
        p += sizeof(inotify_event) + e->len;
      }
    }
  }

 private:
  int fd_;
};

// The only changes the manifest directory may see from vipd render: its manifest renamed in or
// out, and (from archiving by hard link) the old manifest's link count.
void expectOnlyRenames(const std::vector<std::string>& events) {
  for (const auto& e : events) {
    EXPECT_THAT(e,
                ::testing::AnyOf("MOVED_TO vipd.yaml", "MOVED_FROM vipd.yaml", "ATTRIB vipd.yaml"))
        << "the manifest directory saw " << e;
  }
}

// --- writeFileAtomically ---

TEST(BootstrapAtomicFile, WritesThroughATemporaryFileElsewhere) {
  TempDir tmp;
  fs::create_directory(tmp / "target");
  fs::create_directory(tmp / "temp");
  DirWatch targetWatch(tmp / "target");
  DirWatch tempWatch(tmp / "temp");
  auto written = writeFileAtomically(tmp / "target" / "vipd.yaml", "one\n", tmp / "temp", 0600);
  ASSERT_TRUE(written.has_value()) << written.error();
  EXPECT_EQ(*written, WriteOutcome::Written);
  EXPECT_EQ(readFile(tmp / "target" / "vipd.yaml"), "one\n");
  EXPECT_EQ(statOf(tmp / "target" / "vipd.yaml").st_mode & 07777, 0600u);
  EXPECT_THAT(targetWatch.events(), ElementsAre("MOVED_TO vipd.yaml"));
  // The temporary file was created, written and renamed away in the other directory.
  auto tempEvents = tempWatch.events();
  EXPECT_THAT(tempEvents, Contains(::testing::StartsWith("CREATE .vipd.yaml.tmp-")));
  EXPECT_THAT(tempEvents, Contains(::testing::StartsWith("MOVED_FROM .vipd.yaml.tmp-")));
  EXPECT_THAT(listDir(tmp / "temp"), IsEmpty());

  written = writeFileAtomically(tmp / "target" / "vipd.yaml", "two\n", tmp / "temp", 0644);
  ASSERT_TRUE(written.has_value()) << written.error();
  EXPECT_EQ(readFile(tmp / "target" / "vipd.yaml"), "two\n");
  EXPECT_EQ(statOf(tmp / "target" / "vipd.yaml").st_mode & 07777, 0644u);
  EXPECT_THAT(targetWatch.events(), ElementsAre("MOVED_TO vipd.yaml"));
  EXPECT_THAT(listDir(tmp / "target"), ElementsAre("vipd.yaml"));
}

TEST(BootstrapAtomicFile, EqualContentIsNotRewritten) {
  TempDir tmp;
  auto target = tmp / "vipd.yaml";
  writeFile(target, "same\n");
  struct stat before = statOf(target);
  DirWatch watch(tmp.path());
  auto written = writeFileAtomically(target, "same\n", tmp.path(), 0600);
  ASSERT_TRUE(written.has_value()) << written.error();
  EXPECT_EQ(*written, WriteOutcome::Unchanged);
  struct stat after = statOf(target);
  EXPECT_EQ(before.st_ino, after.st_ino);
  EXPECT_EQ(before.st_mtim.tv_sec, after.st_mtim.tv_sec);
  EXPECT_EQ(before.st_mtim.tv_nsec, after.st_mtim.tv_nsec);
  EXPECT_EQ(before.st_mode, after.st_mode) << "not even the mode is touched";
  EXPECT_THAT(watch.events(), IsEmpty());
}

TEST(BootstrapAtomicFile, ErrorsLeaveTheTargetAndNoTemporaryFile) {
  TempDir tmp;
  auto target = tmp / "vipd.yaml";
  writeFile(target, "old\n");
  auto missing = writeFileAtomically(target, "new\n", tmp / "no-such-dir", 0600);
  ASSERT_FALSE(missing.has_value());
  EXPECT_THAT(missing.error(), HasSubstr("cannot create a temporary file in"));
  EXPECT_THAT(missing.error(), HasSubstr("No such file or directory"));
  EXPECT_EQ(readFile(target), "old\n");

  // A directory in the way of the rename.
  fs::create_directory(tmp / "dir.yaml");
  writeFile(tmp / "dir.yaml" / "x", "");
  auto blocked = writeFileAtomically(tmp / "dir.yaml", "new\n", tmp.path(), 0600);
  ASSERT_FALSE(blocked.has_value());
  EXPECT_THAT(blocked.error(), HasSubstr("dir.yaml is not a regular file"));
  EXPECT_THAT(listDir(tmp.path()), ElementsAre("dir.yaml", "vipd.yaml"));
}

TEST(BootstrapAtomicFile, ATemporaryDirectoryOnAnotherFilesystemIsAnError) {
  TempDir tmp;
  fs::path shm = "/dev/shm";
  if (!fs::is_directory(shm) || statOf(shm).st_dev == statOf(tmp.path()).st_dev) {
    GTEST_SKIP() << "needs /dev/shm on a filesystem other than " << tmp.path();
  }
  auto target = tmp / "vipd.yaml";
  writeFile(target, "old\n");
  auto shmBefore = listDir(shm);
  auto written = writeFileAtomically(target, "new\n", shm, 0600);
  ASSERT_FALSE(written.has_value());
  EXPECT_THAT(written.error(), HasSubstr("different filesystems"));
  EXPECT_EQ(readFile(target), "old\n");
  EXPECT_EQ(listDir(shm), shmBefore) << "the temporary file is removed";
}

// --- manifest files ---

TEST(BootstrapManifestFiles, StrayReasons) {
  for (const char* manifest : {"kube-apiserver.yaml", "etcd.yml", "pod.json", "vipd.yaml"}) {
    EXPECT_EQ(strayReason(manifest, true), std::nullopt) << manifest;
  }
  for (const char* stray :
       {"kube-apiserver.yaml.bak", "vipd.yaml~", ".vipd.yaml.swp", ".swp", ".hidden.yaml",
        "etcd.yaml.orig", "vipd.tmp", "README", "notes.txt", ".yaml", "yaml"}) {
    EXPECT_NE(strayReason(stray, true), std::nullopt) << stray;
  }
  EXPECT_THAT(strayReason("sub.yaml", false).value_or(""), HasSubstr("not a regular file"));
  EXPECT_THAT(strayReason(".x.swp", true).value_or(""), HasSubstr("hidden file"));
  EXPECT_THAT(strayReason("a.yaml.bak", true).value_or(""),
              HasSubstr("kubelet still parses it as a pod"));
}

TEST(BootstrapManifestFiles, FindsStrayFilesSorted) {
  TempDir tmp;
  for (const char* name : {"kube-apiserver.yaml", "etcd.yml", "x.json", "kube-apiserver.yaml.bak",
                           "vipd.yaml~", ".vipd.yaml.swp", "notes.txt"}) {
    writeFile(tmp / name, "");
  }
  fs::create_directory(tmp / "old.yaml");
  fs::create_symlink("kube-apiserver.yaml", tmp / "link.yaml");
  auto strays = findStrayFiles(tmp.path());
  ASSERT_TRUE(strays.has_value()) << strays.error();
  std::vector<std::string> names;
  for (const auto& s : *strays) {
    names.push_back(s.path.filename().string());
    EXPECT_EQ(s.path.parent_path(), tmp.path());
  }
  EXPECT_THAT(names, ElementsAre(".vipd.yaml.swp", "kube-apiserver.yaml.bak", "notes.txt",
                                 "old.yaml", "vipd.yaml~"));
  auto none = findStrayFiles(tmp / "missing");
  ASSERT_TRUE(none.has_value());
  EXPECT_THAT(*none, IsEmpty());
}

TEST(BootstrapManifestFiles, ArchiveNames) {
  EXPECT_EQ(archiveName("vipd.yaml", kNow, 1), "vipd-20250102T030405Z.yaml");
  EXPECT_EQ(archiveName("vipd.yaml", kNow, 3), "vipd-20250102T030405Z-3.yaml");
  EXPECT_EQ(archiveName("manifest", kNow, 1), "manifest-20250102T030405Z");
}

TEST(BootstrapManifestFiles, ReplacingAManifestArchivesTheOldVersion) {
  TempDir tmp;
  auto manifests = tmp / "manifests";
  auto archive = tmp / "archive";
  fs::create_directory(manifests);
  fs::create_directory(archive);
  auto manifest = manifests / "vipd.yaml";

  DirWatch watch(manifests);
  auto first = installManifest(manifest, "v1\n", archive, kNow);
  ASSERT_TRUE(first.has_value()) << first.error();
  EXPECT_EQ(first->outcome, WriteOutcome::Written);
  EXPECT_EQ(first->archivedAs, std::nullopt) << "nothing to archive the first time";

  auto second = installManifest(manifest, "v2\n", archive, kNow);
  ASSERT_TRUE(second.has_value()) << second.error();
  EXPECT_EQ(second->outcome, WriteOutcome::Written);
  EXPECT_EQ(second->archivedAs, archive / "vipd-20250102T030405Z.yaml");
  EXPECT_EQ(readFile(archive / "vipd-20250102T030405Z.yaml"), "v1\n");

  auto third = installManifest(manifest, "v3\n", archive, kNow);  // within the same second
  ASSERT_TRUE(third.has_value()) << third.error();
  EXPECT_EQ(third->archivedAs, archive / "vipd-20250102T030405Z-2.yaml");
  EXPECT_EQ(readFile(archive / "vipd-20250102T030405Z-2.yaml"), "v2\n");
  EXPECT_EQ(readFile(archive / "vipd-20250102T030405Z.yaml"), "v1\n") << "never overwritten";

  auto same = installManifest(manifest, "v3\n", archive, kNow);
  ASSERT_TRUE(same.has_value()) << same.error();
  EXPECT_EQ(same->outcome, WriteOutcome::Unchanged);
  EXPECT_EQ(same->archivedAs, std::nullopt) << "unchanged content is not archived";

  EXPECT_EQ(readFile(manifest), "v3\n");
  EXPECT_THAT(listDir(manifests), ElementsAre("vipd.yaml"));
  EXPECT_THAT(listDir(archive),
              ElementsAre("vipd-20250102T030405Z-2.yaml", "vipd-20250102T030405Z.yaml"));
  auto events = watch.events();
  expectOnlyRenames(events);
  EXPECT_EQ(std::count(events.begin(), events.end(), "MOVED_TO vipd.yaml"), 3);
}

TEST(BootstrapManifestFiles, RemovingAManifestMovesItToTheArchive) {
  TempDir tmp;
  auto manifests = tmp / "manifests";
  auto archive = tmp / "archive";
  fs::create_directory(manifests);
  fs::create_directory(archive);
  writeFile(manifests / "vipd.yaml", "pod\n");
  writeFile(manifests / "etcd.yaml", "etcd\n");
  DirWatch watch(manifests);
  auto removed = removeManifest(manifests / "vipd.yaml", archive, kNow);
  ASSERT_TRUE(removed.has_value()) << removed.error();
  EXPECT_EQ(*removed, archive / "vipd-20250102T030405Z.yaml");
  EXPECT_EQ(readFile(archive / "vipd-20250102T030405Z.yaml"), "pod\n");
  EXPECT_THAT(listDir(manifests), ElementsAre("etcd.yaml"));
  EXPECT_THAT(watch.events(), ElementsAre("MOVED_FROM vipd.yaml"));

  auto again = removeManifest(manifests / "vipd.yaml", archive, kNow);
  ASSERT_TRUE(again.has_value()) << again.error();
  EXPECT_EQ(*again, std::nullopt);
}

// --- the command ---

class BootstrapRenderCommand : public ::testing::Test {
 protected:
  BootstrapRenderCommand() {
    fs::create_directories(etc_ / "kubernetes" / "manifests");
    writeFile(metadata_, readFile(kDataDir / "ipv4-only.metadata.yaml"));
  }

  int run(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--metadata",     metadata_.string(), "--config-out",
                                     config_.string(), "--manifest-dir",   manifests_.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return runArgs(args);
  }

  int runArgs(const std::vector<std::string>& args) {
    out_.str("");
    err_.str("");
    RenderEnvironment env{template_, "test-template.yaml", &out_, &err_, [] { return kNow; }};
    return runRenderCommand(args, env);
  }

  std::string out() const { return out_.str(); }
  std::string err() const { return err_.str(); }

  TempDir tmp_;
  fs::path etc_ = tmp_ / "etc";
  fs::path metadata_ = tmp_ / "metadata.yaml";
  fs::path config_ = etc_ / "vipd" / "vipd.yaml";
  fs::path node() const { return config_.parent_path() / "node.yaml"; }
  fs::path manifests_ = etc_ / "kubernetes" / "manifests";
  fs::path manifest_ = manifests_ / "vipd.yaml";
  fs::path archive_ = etc_ / "kubernetes" / "vipd-manifest-archive";
  std::string template_ = testing::testTemplate();
  std::ostringstream out_;
  std::ostringstream err_;
};

TEST_F(BootstrapRenderCommand, WritesTheConfigAndTheManifest) {
  DirWatch watch(manifests_);
  ASSERT_EQ(run(), 0) << err();
  EXPECT_EQ(out(),
            fmt::format("created directory {}\ncreated directory {}\nwrote {}\nwrote {}\nwrote {}\n",
                        config_.parent_path().string(), archive_.string(), config_.string(),
                        node().string(), manifest_.string()));
  EXPECT_THAT(readFile(node()), HasSubstr("kind: NodeConfiguration\n"));
  EXPECT_THAT(readFile(node()), HasSubstr("\nrouterId: 192.0.2.11\n"));
  EXPECT_EQ(err(), "");
  EXPECT_THAT(readFile(config_), HasSubstr("routerId: 192.0.2.11\n"));
  EXPECT_THAT(readFile(manifest_),
              HasSubstr(fmt::format("\"--config\", \"{}\"", config_.string())));
  EXPECT_EQ(statOf(config_).st_mode & 07777, 0644u);
  EXPECT_EQ(statOf(manifest_).st_mode & 07777, 0600u);
  EXPECT_EQ(statOf(archive_).st_mode & 07777, 0700u);
  EXPECT_THAT(listDir(manifests_), ElementsAre("vipd.yaml"));
  EXPECT_THAT(listDir(archive_), IsEmpty()) << "no temporary file is left behind";
  expectOnlyRenames(watch.events());
}

TEST_F(BootstrapRenderCommand, SameInputLeavesEveryFileUnchanged) {
  ASSERT_EQ(run(), 0) << err();
  struct stat config = statOf(config_);
  struct stat manifest = statOf(manifest_);
  DirWatch watch(manifests_);
  ASSERT_EQ(run(), 0) << err();
  EXPECT_EQ(out(),
            fmt::format("unchanged {}\nunchanged {}\nunchanged {}\n", config_.string(),
                        node().string(), manifest_.string()));
  EXPECT_EQ(statOf(config_).st_ino, config.st_ino);
  EXPECT_EQ(statOf(config_).st_mtim.tv_nsec, config.st_mtim.tv_nsec);
  EXPECT_EQ(statOf(manifest_).st_ino, manifest.st_ino);
  EXPECT_EQ(statOf(manifest_).st_mtim.tv_nsec, manifest.st_mtim.tv_nsec);
  EXPECT_THAT(watch.events(), IsEmpty());
  EXPECT_THAT(listDir(archive_), IsEmpty());
}

TEST_F(BootstrapRenderCommand, ANewImageArchivesTheOldManifest) {
  std::string text = readFile(metadata_);
  ASSERT_EQ(run(), 0) << err();
  std::string old = readFile(manifest_);
  writeFile(metadata_, text.replace(text.find("vipd:0.1.0"), 10, "vipd:0.2.0"));
  DirWatch watch(manifests_);
  ASSERT_EQ(run(), 0) << err();
  auto archived = archive_ / "vipd-20250102T030405Z.yaml";
  EXPECT_EQ(out(), fmt::format("unchanged {}\nunchanged {}\narchived {} as {}\nwrote {}\n",
                               config_.string(), node().string(),
                               manifest_.string(), archived.string(), manifest_.string()));
  EXPECT_EQ(readFile(archived), old);
  EXPECT_THAT(readFile(manifest_), HasSubstr("registry.example/vipd:0.2.0"));
  EXPECT_THAT(listDir(archive_), ElementsAre("vipd-20250102T030405Z.yaml"));
  EXPECT_THAT(listDir(manifests_), ElementsAre("vipd.yaml"));
  expectOnlyRenames(watch.events());
}

TEST_F(BootstrapRenderCommand, StrayFilesAreNamedInWarnings) {
  writeFile(manifests_ / "kube-apiserver.yaml", "");
  writeFile(manifests_ / "kube-apiserver.yaml.bak", "");
  writeFile(manifests_ / ".vipd.yaml.swp", "");
  ASSERT_EQ(run(), 0) << err();
  EXPECT_THAT(err(), HasSubstr(fmt::format("vipd render: warning: {}: a hidden file",
                                           (manifests_ / ".vipd.yaml.swp").string())));
  EXPECT_THAT(err(), HasSubstr(fmt::format("vipd render: warning: {}: not a .yaml",
                                           (manifests_ / "kube-apiserver.yaml.bak").string())));
  EXPECT_THAT(err(), Not(HasSubstr("kube-apiserver.yaml:")));
  EXPECT_TRUE(fs::exists(manifest_));
}

TEST_F(BootstrapRenderCommand, StrictRefusesStrayFilesAndWritesNothing) {
  writeFile(manifests_ / "etcd.yaml~", "");
  writeFile(manifests_ / "notes.txt", "");
  EXPECT_EQ(run({"--strict"}), 1);
  EXPECT_THAT(err(), HasSubstr((manifests_ / "etcd.yaml~").string()));
  EXPECT_THAT(err(), HasSubstr((manifests_ / "notes.txt").string()));
  EXPECT_THAT(err(), HasSubstr("--strict: " + manifests_.string() +
                               " holds 2 file(s) that are not manifests"));
  EXPECT_THAT(err(), HasSubstr("nothing written"));
  EXPECT_EQ(out(), "");
  EXPECT_FALSE(fs::exists(config_.parent_path()));
  EXPECT_FALSE(fs::exists(archive_));
  EXPECT_THAT(listDir(manifests_), ElementsAre("etcd.yaml~", "notes.txt"));
}

TEST_F(BootstrapRenderCommand, MetadataErrorsWriteNothing) {
  ASSERT_EQ(run(), 0) << err();
  std::string config = readFile(config_);
  std::string manifest = readFile(manifest_);
  writeFile(metadata_,
            "apiVersion: vipd.io/v1alpha1\n"
            "kind: InstanceMetadata\n"
            "node: {addresses: [\"2001:db8::11\"]}\n"
            "localAsn: 65001\n"
            "vips: [203.0.113.10/32]\n"
            "peers: [{address: 192.0.2.1, asn: 65000, passwordFile: /root/key}]\n"
            "image: vipd:2\n"
            "colour: blue\n");
  EXPECT_EQ(run(), 1);
  EXPECT_EQ(out(), "");
  std::string m = metadata_.string();
  EXPECT_EQ(err(), m +
                       ":3:19: node.addresses: no IPv4 address; the router ID is rendered from "
                       "this node's first IPv4 address (a BGP identifier is 32 bits, even on an "
                       "IPv6-only node)\n" +
                       m + ":6:56: peers[0].passwordFile: /root/key is outside " +
                       config_.parent_path().string() + ", the directory of the rendered config " +
                       config_.string() +
                       ": the static pod mounts only that directory (read-only), so vipd could "
                       "not read the password file; put the file in " +
                       config_.parent_path().string() + "\n" + m +
                       ":8:1: colour: unknown key 'colour'; expected one of: apiVersion, kind, "
                       "node, localAsn, vips, peers, passwordFile, bootstrap, health, metrics, "
                       "image\n"
                       "vipd render: " +
                       m + ": 3 error(s); nothing written\n");
  EXPECT_EQ(readFile(config_), config);
  EXPECT_EQ(readFile(manifest_), manifest);
  EXPECT_THAT(listDir(archive_), IsEmpty());
}

TEST_F(BootstrapRenderCommand, AFreshNodeGetsNothingOnAMetadataError) {
  writeFile(metadata_, "kind: InstanceMetadata\n");
  EXPECT_EQ(run(), 1);
  EXPECT_THAT(err(), HasSubstr("nothing written"));
  EXPECT_FALSE(fs::exists(config_.parent_path()));
  EXPECT_FALSE(fs::exists(archive_));
  EXPECT_THAT(listDir(manifests_), IsEmpty());
}

TEST_F(BootstrapRenderCommand, BootstrapDisabledMovesTheManifestToTheArchive) {
  ASSERT_EQ(run(), 0) << err();
  std::string manifest = readFile(manifest_);
  writeFile(manifests_ / "etcd.yaml", "");
  writeFile(metadata_, readFile(metadata_) + "bootstrap: {enabled: false}\n");
  DirWatch watch(manifests_);
  ASSERT_EQ(run(), 0) << err();
  auto archived = archive_ / "vipd-20250102T030405Z.yaml";
  EXPECT_EQ(out(), fmt::format("unchanged {}\nunchanged {}\nremoved {} (bootstrap.enabled is "
                               "false); archived as {}\n",
                               config_.string(), node().string(), manifest_.string(),
                               archived.string()));
  EXPECT_EQ(readFile(archived), manifest);
  EXPECT_THAT(listDir(manifests_), ElementsAre("etcd.yaml"));
  EXPECT_THAT(watch.events(), ElementsAre("MOVED_FROM vipd.yaml"));

  ASSERT_EQ(run(), 0) << err();
  EXPECT_EQ(out(), fmt::format("unchanged {}\nunchanged {}\nno {} to remove (bootstrap.enabled is "
                               "false)\n",
                               config_.string(), node().string(), manifest_.string()));
}

TEST_F(BootstrapRenderCommand, ArchiveDirectoryCanBeChosen) {
  auto archive = tmp_ / "elsewhere" / "archive";
  ASSERT_EQ(run({"--archive-dir", archive.string()}), 0) << err();
  EXPECT_TRUE(fs::is_directory(archive));
  EXPECT_FALSE(fs::exists(archive_));
  EXPECT_EQ(statOf(archive).st_mode & 07777, 0700u);
  EXPECT_EQ(statOf(archive.parent_path()).st_mode & 07777, 0755u) << "parents are not private";
}

TEST_F(BootstrapRenderCommand, ImageFromTheCommandLine) {
  std::string text = readFile(metadata_);
  writeFile(metadata_, text.erase(text.find("image:")));
  ASSERT_EQ(run({"--image", "registry.example/vipd:flag"}), 0) << err();
  EXPECT_THAT(readFile(manifest_), HasSubstr("registry.example/vipd:flag"));
  writeFile(metadata_, text + "image: registry.example/vipd:0.1.0\n");
  EXPECT_EQ(run({"--image", "registry.example/vipd:flag"}), 1);
  EXPECT_THAT(err(), HasSubstr("image is set both here and by --image"));
}

TEST_F(BootstrapRenderCommand, UsageErrors) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  std::string m = metadata_.string();
  std::string c = config_.string();
  std::string d = manifests_.string();
  std::vector<Case> cases = {
      {{}, "--metadata FILE is required"},
      {{"--metadata", m, "--manifest-dir", d}, "--config-out PATH is required"},
      {{"--metadata", m, "--config-out", c, "--distro", "openshift", "--manifest-dir", d},
       "--distro must be kubeadm, k3s or rke2"},
      {{"--metadata", m, "--config-out", c, "--node-out", "node.yaml", "--manifest-dir", d},
       "--node-out: --config-out must be an absolute path"},
      {{"--metadata", m, "--config-out", c, "--node-out", c, "--manifest-dir", d},
       "--node-out and --config-out are both"},
      {{"--metadata", m, "--config-out", c, "--node-out", d + "/node.yaml", "--manifest-dir", d},
       "--node-out " + d + "/node.yaml is in the manifest directory"},
      {{"--metadata", m, "--config-out", c, "--manifest-dir", d, "--force"},
       "unknown argument '--force'"},
      {{"--metadata", m, "--config-out", c, "--manifest-dir"}, "--manifest-dir needs a value"},
      {{"--metadata", m, "--metadata", m, "--config-out", c, "--manifest-dir", d},
       "--metadata is given twice"},
      {{"--metadata", m, "--config-out", "vipd.yaml", "--manifest-dir", d},
       "--config-out must be an absolute path"},
      {{"--metadata", m, "--config-out", d + "/vipd-config.yaml", "--manifest-dir", d},
       "is in the manifest directory"},
      {{"--metadata", m, "--config-out", c, "--manifest-dir", d, "--archive-dir", d + "/old"},
       "the archive directory " + d + "/old is in the manifest directory"},
  };
  for (const auto& test : cases) {
    EXPECT_EQ(runArgs(test.args), 2) << test.message;
    EXPECT_THAT(err(), AllOf(HasSubstr(test.message), HasSubstr("usage: vipd render")));
  }
  EXPECT_FALSE(fs::exists(config_.parent_path()));
  EXPECT_THAT(listDir(manifests_), IsEmpty());
  EXPECT_EQ(runArgs({"--help"}), 0);
  EXPECT_THAT(out(), HasSubstr("usage: vipd render"));
}

TEST_F(BootstrapRenderCommand, UnreadableMetadata) {
  EXPECT_EQ(runArgs({"--metadata", (tmp_ / "missing.yaml").string(), "--config-out",
                     config_.string(), "--manifest-dir", manifests_.string()}),
            1);
  EXPECT_THAT(err(), HasSubstr("cannot read the metadata " + (tmp_ / "missing.yaml").string() +
                               ": no such file; nothing written"));
}

}  // namespace
}  // namespace vipd::bootstrap
