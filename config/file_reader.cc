#include "config/file_reader.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

namespace vipd::config {
namespace {

namespace fs = std::filesystem;

constexpr int kOpenFlags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;

// Closes the descriptor it holds.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string kindOf(mode_t mode) {
  if (S_ISFIFO(mode)) {
    return "a FIFO";
  }
  if (S_ISDIR(mode)) {
    return "a directory";
  }
  if (S_ISCHR(mode) || S_ISBLK(mode)) {
    return "a device";
  }
  if (S_ISSOCK(mode)) {
    return "a socket";
  }
  return "not a regular file";
}

// The message for a file whose symlinks lead out of `dir`.
std::string escapes(const std::string& path, std::string_view what, const fs::path& dir) {
  std::error_code ec;
  const auto target = fs::weakly_canonical(path, ec);
  return fmt::format(
      "the {} is a symlink that leads out of its directory {}{}; vipd follows symlinks only "
      "within the file's own directory (as in a ConfigMap volume's ..data layout), so that "
      "renaming a link over it cannot make vipd read another file. Refused unread: put the file "
      "itself there",
      what, dir.string(), ec ? std::string() : fmt::format(" (to {})", target.string()));
}

// Opens `path` for reading, following symlinks only below its directory: openat2() with
// RESOLVE_BENEATH (Linux 5.6) does that in the kernel, atomically. Where the kernel lacks it,
// the link is resolved first and the resolved path opened with O_NOFOLLOW, so the last step at
// least cannot be swapped for a link between the check and the open.
tl::expected<int, std::string> openBeneath(const std::string& path, std::string_view what) {
  const fs::path file(path);
  fs::path dir = file.parent_path();
  if (dir.empty()) {
    dir = ".";
  }
  // "dir/" names the directory itself: opened as ".", then refused as not a regular file.
  const std::string name = file.has_filename() ? file.filename().string() : ".";
  const auto cannot = [&](int error) {
    return tl::unexpected(fmt::format("cannot open the {}: {}", what, std::strerror(error)));
  };
  Fd dirFd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (dirFd.get() < 0) {
    return cannot(errno);
  }
  open_how how{};
  how.flags = kOpenFlags;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  int fd = static_cast<int>(::syscall(SYS_openat2, dirFd.get(), name.c_str(), &how, sizeof how));
  if (fd >= 0) {
    return fd;
  }
  if (errno == EXDEV || errno == ELOOP) {
    return tl::unexpected(escapes(path, what, dir));
  }
  if (errno != ENOSYS && errno != EPERM) {  // EPERM: a seccomp filter that does not know it
    return cannot(errno);
  }
  std::error_code ec;
  const auto resolved = fs::canonical(file, ec);
  if (ec) {
    return cannot(ec.value());
  }
  const auto base = fs::canonical(dir, ec);
  if (ec) {
    return cannot(ec.value());
  }
  const auto relative = resolved.lexically_relative(base);
  if (relative.empty() || *relative.begin() == "..") {
    return tl::unexpected(escapes(path, what, dir));
  }
  fd = ::open(resolved.c_str(), kOpenFlags | O_NOFOLLOW);
  if (fd < 0) {
    return cannot(errno);
  }
  return fd;
}

}  // namespace

tl::expected<std::string, std::string> readBoundedFile(const std::string& path,
                                                       std::string_view what, size_t maxBytes) {
  auto opened = openBeneath(path, what);
  if (!opened) {
    return tl::unexpected(opened.error());
  }
  Fd fd(*opened);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return tl::unexpected(fmt::format("cannot read the {}: {}", what, std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return tl::unexpected(fmt::format(
        "the {} is {}, not a regular file; vipd reads only regular files (a FIFO or a device "
        "could block it or never end). Refused unread",
        what, kindOf(st.st_mode)));
  }
  const auto tooLarge = [&] {
    return tl::unexpected(fmt::format("the {} is larger than {}; is this the right file? "
                                      "Refused unread",
                                      what, maxBytes % (1 << 20) == 0
                                                ? fmt::format("{} MiB", maxBytes >> 20)
                                                : fmt::format("{} KiB", maxBytes >> 10)));
  };
  if (static_cast<uint64_t>(st.st_size) > maxBytes) {
    return tooLarge();
  }
  std::string text;
  char buffer[8192];
  while (true) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      return tl::unexpected(fmt::format("cannot read the {}: {}", what, std::strerror(errno)));
    }
    if (n == 0) {
      break;
    }
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > maxBytes) {  // grew while being read
      return tooLarge();
    }
  }
  return text;
}

}  // namespace vipd::config
