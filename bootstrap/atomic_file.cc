#include "bootstrap/atomic_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace vipd::bootstrap {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxFileSize = size_t{16} << 20;
constexpr mode_t kParentDirectoryMode = 0755;

std::string osError(std::string_view what, const fs::path& path, int error) {
  return fmt::format("cannot {} {}: {}", what, path.string(), std::strerror(error));
}

// Closes on destruction; close() errors on the write path are checked explicitly first.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

}  // namespace

IoResult<std::optional<std::string>> readFileIfExists(const fs::path& path) {
  // O_NONBLOCK: opening a FIFO for reading blocks until some process opens it for writing, so
  // `vipd render --metadata FIFO` hung before the regular-file check below could refuse it. A
  // regular file ignores the flag; O_NOCTTY keeps a terminal from becoming ours.
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (fd.get() < 0) {
    if (errno == ENOENT) {
      return std::optional<std::string>();
    }
    return tl::unexpected(osError("open", path, errno));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return tl::unexpected(osError("stat", path, errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return tl::unexpected(fmt::format("{} is not a regular file", path.string()));
  }
  std::string text;
  char buffer[8192];
  while (true) {
    ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      return tl::unexpected(osError("read", path, errno));
    }
    if (n == 0) {
      break;
    }
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > kMaxFileSize) {
      return tl::unexpected(fmt::format("{} is larger than {} MiB; is this the right file?",
                                        path.string(), kMaxFileSize >> 20));
    }
  }
  return std::optional<std::string>(std::move(text));
}

IoResult<void> syncDirectory(const fs::path& dir) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) {
    return tl::unexpected(osError("open directory", dir, errno));
  }
  if (::fsync(fd.get()) != 0) {
    return tl::unexpected(osError("fsync directory", dir, errno));
  }
  return {};
}

IoResult<bool> ensureDirectory(const fs::path& dir, mode_t mode) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) {
      return tl::unexpected(fmt::format("{} exists and is not a directory", dir.string()));
    }
    return false;
  }
  if (errno != ENOENT) {
    return tl::unexpected(osError("stat", dir, errno));
  }
  fs::path parent = dir.parent_path();
  if (!parent.empty() && parent != dir) {
    // Parents get the usual mode: a private leaf (the archive) must not make /etc/kubernetes
    // private too.
    if (auto made = ensureDirectory(parent, kParentDirectoryMode); !made) {
      return made;
    }
  }
  if (::mkdir(dir.c_str(), mode) != 0 && errno != EEXIST) {
    return tl::unexpected(osError("create directory", dir, errno));
  }
  // mkdir's mode is filtered by the umask; the caller asked for exactly `mode`.
  if (::chmod(dir.c_str(), mode) != 0) {
    return tl::unexpected(osError("chmod", dir, errno));
  }
  if (!parent.empty()) {
    if (auto synced = syncDirectory(parent); !synced) {
      return tl::unexpected(synced.error());
    }
  }
  return true;
}

IoResult<dev_t> filesystemOf(const fs::path& path) {
  fs::path p = path;
  while (true) {
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0) {
      return st.st_dev;
    }
    if (errno != ENOENT || p == p.parent_path() || p.parent_path().empty()) {
      return tl::unexpected(osError("stat", p, errno));
    }
    p = p.parent_path();
  }
}

IoResult<WriteOutcome> writeFileAtomically(const fs::path& target, std::string_view content,
                                           const fs::path& tempDir, mode_t mode) {
  auto existing = readFileIfExists(target);
  if (!existing) {
    return tl::unexpected(existing.error());
  }
  if (*existing && **existing == content) {
    return WriteOutcome::Unchanged;
  }
  // A dotfile, so that even a temp dir someone scans for manifests would skip it.
  std::string pattern = (tempDir / fmt::format(".{}.tmp-XXXXXX", target.filename().string()));
  std::vector<char> tempName(pattern.begin(), pattern.end());
  tempName.push_back('\0');
  Fd fd(::mkostemp(tempName.data(), O_CLOEXEC));
  if (fd.get() < 0) {
    return tl::unexpected(osError("create a temporary file in", tempDir, errno));
  }
  fs::path tempPath(tempName.data());
  bool renamed = false;
  struct RemoveUnlessRenamed {
    const fs::path& path;
    const bool& renamed;
    ~RemoveUnlessRenamed() {
      if (!renamed) {
        ::unlink(path.c_str());
      }
    }
  } cleanup{tempPath, renamed};

  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd.get(), content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      return tl::unexpected(osError("write", tempPath, errno));
    }
    done += static_cast<size_t>(n);
  }
  if (::fchmod(fd.get(), mode) != 0) {
    return tl::unexpected(osError("chmod", tempPath, errno));
  }
  // The data must be on disk before the rename makes it visible, or a crash could leave an empty
  // file under the final name.
  if (::fsync(fd.get()) != 0) {
    return tl::unexpected(osError("fsync", tempPath, errno));
  }
  if (::close(fd.release()) != 0) {
    return tl::unexpected(osError("close", tempPath, errno));
  }
  if (::rename(tempPath.c_str(), target.c_str()) != 0) {
    int error = errno;
    if (error == EXDEV) {
      return tl::unexpected(
          fmt::format("cannot rename {} to {}: they are on different "
                      "filesystems, so the write could not be atomic",
                      tempPath.string(), target.string()));
    }
    return tl::unexpected(fmt::format("cannot rename {} to {}: {}", tempPath.string(),
                                      target.string(), std::strerror(error)));
  }
  renamed = true;
  fs::path targetDir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  if (auto synced = syncDirectory(targetDir); !synced) {
    return tl::unexpected(synced.error());
  }
  if (fs::path(tempDir).lexically_normal() != targetDir.lexically_normal()) {
    if (auto synced = syncDirectory(tempDir); !synced) {
      return tl::unexpected(synced.error());
    }
  }
  return WriteOutcome::Written;
}

}  // namespace vipd::bootstrap
