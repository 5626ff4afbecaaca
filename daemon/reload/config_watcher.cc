#include "daemon/reload/config_watcher.h"

#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <utility>

#include <fmt/format.h>

namespace vipd::daemon {
namespace {

// What replaces or edits a file; never IN_ACCESS, IN_OPEN or IN_CLOSE_NOWRITE (vipd's own reads).
// IN_MODIFY only marks a file as being written: its IN_CLOSE_WRITE is what makes it ready.
constexpr uint32_t kEvents = IN_CLOSE_WRITE | IN_MODIFY | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE |
                             IN_DELETE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF;

// The directory and name of `file` and, when it is (or its directory holds) a symlink, the
// directory and name it resolves to: an edit of the target is seen there.
std::set<std::pair<std::string, std::string>> placesOf(const std::string& file) {
  namespace fs = std::filesystem;
  std::set<std::pair<std::string, std::string>> out;
  fs::path path(file);
  out.emplace(fs::absolute(path).parent_path().lexically_normal().string(),
              path.filename().string());
  std::error_code ec;
  auto resolved = fs::canonical(path, ec);
  if (!ec) {
    out.emplace(resolved.parent_path().string(), resolved.filename().string());
  }
  return out;
}

// An empty regular file: what open(O_CREAT) by a writer makes. A hard link (`ln`) made in place
// has its content already and is ready; a writer that has written since is marked by IN_MODIFY.
bool isNewEmptyFile(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0;
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
  names_.clear();
  for (const auto& file : files) {
    for (auto& [dir, name] : placesOf(file)) {
      wanted.insert(dir);
      names_[dir].insert(name);
    }
  }
  std::erase_if(writing_, [&](const std::string& path) {
    auto slash = path.rfind('/');
    auto it = names_.find(path.substr(0, slash));
    return it == names_.end() || it->second.count(path.substr(slash + 1)) == 0;
  });
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
  writing_.clear();
}

std::vector<std::string> ConfigWatcher::writing() const {
  return {writing_.begin(), writing_.end()};
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
  alignas(inotify_event) std::array<char, 4096> buffer{};
  bool look = false;
  ssize_t n = 0;
  while ((n = ::read(fd_, buffer.data(), buffer.size())) > 0) {
    for (size_t at = 0; at + sizeof(inotify_event) <= static_cast<size_t>(n);) {
      inotify_event event{};
      std::memcpy(&event, buffer.data() + at, sizeof event);
      const char* nameStart = buffer.data() + at + sizeof(inotify_event);
      const std::string name(nameStart, ::strnlen(nameStart, event.len));
      at += sizeof(inotify_event) + event.len;
      auto watch = watches_.find(event.wd);
      if (watch == watches_.end()) {
        continue;  // a watch dropped since the event was queued
      }
      if ((event.mask & IN_IGNORED) != 0) {
        // The directory went away: the next watch() watches it again.
        watches_.erase(watch);
        look = true;
        continue;
      }
      look = onInotifyEvent(watch->second, event.mask, name) || look;
    }
  }
  return look;
}

bool ConfigWatcher::onInotifyEvent(const std::string& dir, uint32_t mask,
                                   const std::string& name) {
  auto names = names_.find(dir);
  const bool watched = names != names_.end() && names->second.count(name) != 0;
  const std::string path = dir + "/" + name;
  if ((mask & IN_MODIFY) != 0) {
    // Written, not finished: its writer's close says when it is.
    if (watched) {
      writing_.insert(path);
    }
    return false;
  }
  if ((mask & IN_CREATE) != 0 && watched && isNewEmptyFile(path)) {
    // Created by a writer that has it open (`cat > vipd.yaml` after an rm); a symlink or a
    // FIFO created in its place is a reason to look at once.
    writing_.insert(path);
    return false;
  }
  if ((mask & (IN_CLOSE_WRITE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)) != 0) {
    writing_.erase(path);  // closed, gone, or replaced whole by a rename
  }
  // Any other event in a watched directory is a reason to look: the owner compares contents.
  return true;
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
        if (!writing_.empty()) {
          return;  // a watched file is half-written: its writer's close is a new event
        }
        onChange_();
      });
}

}  // namespace vipd::daemon
