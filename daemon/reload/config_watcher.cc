#include "daemon/reload/config_watcher.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include <fmt/format.h>

namespace vipd::daemon {
namespace {

// What replaces or edits a file; never IN_ACCESS, IN_OPEN or IN_CLOSE_NOWRITE (vipd's own reads).
constexpr uint32_t kEvents = IN_CLOSE_WRITE | IN_MODIFY | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE |
                             IN_DELETE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF;

// The directory of `file` and, when it is (or its directory holds) a symlink, the directory it
// resolves to: an edit of the target is seen there.
std::set<std::string> directoriesOf(const std::string& file) {
  namespace fs = std::filesystem;
  std::set<std::string> out;
  fs::path path(file);
  out.insert(fs::absolute(path).parent_path().lexically_normal().string());
  std::error_code ec;
  auto resolved = fs::canonical(path, ec);
  if (!ec) {
    out.insert(resolved.parent_path().string());
  }
  return out;
}

}  // namespace

ConfigWatcher::ConfigWatcher(asio::io_context& io, OnChange onChange)
    : onChange_(std::move(onChange)), stream_(io), quiet_(io) {}

ConfigWatcher::~ConfigWatcher() { stop(); }

tl::expected<void, std::string> ConfigWatcher::watch(const std::vector<std::string>& files) {
  if (stopped_) {
    return {};
  }
  if (fd_ < 0) {
    fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd_ < 0) {
      return tl::unexpected(fmt::format("cannot watch the config files: inotify_init1: {}",
                                        std::strerror(errno)));
    }
    stream_.assign(fd_);
    readEvents();
  }
  std::set<std::string> wanted;
  for (const auto& file : files) {
    auto dirs = directoriesOf(file);
    wanted.insert(dirs.begin(), dirs.end());
  }
  for (auto it = watches_.begin(); it != watches_.end();) {
    if (wanted.count(it->second) == 0) {
      ::inotify_rm_watch(fd_, it->first);
      it = watches_.erase(it);
    } else {
      wanted.erase(it->second);
      ++it;
    }
  }
  std::vector<std::string> problems;
  for (const auto& dir : wanted) {
    int wd = ::inotify_add_watch(fd_, dir.c_str(), kEvents);
    if (wd < 0) {
      const int error = errno;
      problems.push_back(fmt::format("{}: {}{}", dir, std::strerror(error),
                                     error == ENOSPC ? " (raise fs.inotify.max_user_watches)"
                                                     : ""));
      continue;
    }
    watches_[wd] = dir;
  }
  if (!problems.empty()) {
    std::string text = "cannot watch ";
    for (size_t i = 0; i < problems.size(); ++i) {
      text += (i == 0 ? "" : "; ") + problems[i];
    }
    return tl::unexpected(text);
  }
  return {};
}

void ConfigWatcher::stop() {
  stopped_ = true;
  quiet_.cancel();
  if (fd_ >= 0) {
    boost::system::error_code ignored;
    stream_.close(ignored);  // closes fd_
    fd_ = -1;
  }
  watches_.clear();
}

std::vector<std::string> ConfigWatcher::directories() const {
  std::set<std::string> sorted;
  for (const auto& [wd, dir] : watches_) {
    sorted.insert(dir);
  }
  return {sorted.begin(), sorted.end()};
}

void ConfigWatcher::readEvents() {
  stream_.async_wait(asio::posix::stream_descriptor::wait_read,
                     [this, alive = std::weak_ptr<int>(alive_)](
                         const boost::system::error_code& ec) {
                       if (ec || alive.expired() || stopped_) {
                         return;
                       }
                       if (drain()) {
                         onEvent();
                       }
                       readEvents();
                     });
}

bool ConfigWatcher::drain() {
  // Any event in a watched directory is a reason to look; a directory that went away
  // (IN_IGNORED) is watched again by the next watch().
  alignas(inotify_event) std::array<char, 4096> buffer{};
  bool any = false;
  ssize_t n = 0;
  while ((n = ::read(fd_, buffer.data(), buffer.size())) > 0) {
    any = true;
    for (size_t at = 0; at + sizeof(inotify_event) <= static_cast<size_t>(n);) {
      inotify_event event{};
      std::memcpy(&event, buffer.data() + at, sizeof event);
      if ((event.mask & IN_IGNORED) != 0) {
        watches_.erase(event.wd);
      }
      at += sizeof(inotify_event) + event.len;
    }
  }
  return any;
}

void ConfigWatcher::onEvent() {
  const auto now = std::chrono::steady_clock::now();
  if (!burstStart_) {
    burstStart_ = now;
  }
  const auto due = std::min(now + kQuiet, *burstStart_ + kMaxDelay);
  quiet_.expires_at(due);
  quiet_.async_wait(
      [this, alive = std::weak_ptr<int>(alive_)](const boost::system::error_code& ec) {
        if (ec || alive.expired() || stopped_) {
          return;
        }
        burstStart_.reset();
        onChange_();
      });
}

}  // namespace vipd::daemon
