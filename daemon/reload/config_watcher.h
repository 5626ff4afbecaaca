// Notices, without a signal, that a file vipd reads may have changed (issue 29). One inotify
// watch per directory holding a watched file, and per directory its symlinks resolve to, so that
// every way a file gets replaced is seen: written in place, renamed over it (editors,
// install(1)), deleted and created again, its mode changed, and the kubelet's update of a
// ConfigMap or Secret volume, which writes a new timestamped directory and renames a `..data`
// symlink over the old one (IN_MOVED_TO "..data" in the mounted directory; the file itself,
// `vipd.yaml -> ..data/vipd.yaml`, never changes).
//
// A file is looked at only once its writer is done (issue 40): a modification alone (IN_MODIFY,
// or IN_CREATE of a regular file, which a writer has open) never calls onChange; its writer's
// close (IN_CLOSE_WRITE), a rename into place, a deletion or the `..data` swap do. While a
// watched file is modified and not yet closed, writing() says so and onChange waits for the
// close: a slow `cat > vipd.yaml` or scp paused halfway is never read half-written. (A writer
// that keeps the file open for good keeps its change unapplied; SIGHUP still reloads.)
//
// It does not read the files: onChange runs once a burst of events has been quiet for kQuiet
// (and at most kMaxDelay after the burst's first event), and the owner compares what the files
// hold, so an event that changed nothing (another file in the directory) costs one read. Owns
// the inotify descriptor and the debounce timer; runs on the io_context thread.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <tl/expected.hpp>

namespace vipd::daemon {

namespace asio = boost::asio;

class ConfigWatcher {
 public:
  using OnChange = std::function<void()>;
  static constexpr std::chrono::milliseconds kQuiet{300};
  static constexpr std::chrono::milliseconds kMaxDelay{2000};

  ConfigWatcher(asio::io_context& io, OnChange onChange);
  ~ConfigWatcher();
  ConfigWatcher(const ConfigWatcher&) = delete;
  ConfigWatcher& operator=(const ConfigWatcher&) = delete;

  // Watches the directories of `files` (and of their symlinks' targets) from now on; directories
  // no longer needed are dropped. A directory that cannot be watched (missing, no inotify
  // watches left: fs.inotify.max_user_watches) is an error naming it and the kernel's reason;
  // the others are watched all the same.
  [[nodiscard]] tl::expected<void, std::string> watch(const std::vector<std::string>& files);
  // No more events or onChange.
  void stop();
  // The directories watched now, sorted.
  std::vector<std::string> directories() const;
  // The watched files modified and not yet closed by their writer ("dir/name"), sorted; empty
  // when none is being written.
  std::vector<std::string> writing() const;

 private:
  void readEvents();
  // Reads every queued event; whether one of them is a reason to look (not a modification alone).
  bool drain();
  // Whether `event` in `dir` is a reason to look; notes writers opening and closing files.
  bool onInotifyEvent(const std::string& dir, uint32_t mask, const std::string& name);
  void onEvent();

  OnChange onChange_;
  int fd_ = -1;
  asio::posix::stream_descriptor stream_;
  std::map<int, std::string> watches_;  // watch descriptor -> directory
  // Per directory, the names in it that are watched files (as given, and as symlinks resolve).
  std::map<std::string, std::set<std::string>> names_;
  std::set<std::string> writing_;  // "dir/name" of watched files modified and not yet closed
  asio::steady_timer quiet_;
  std::optional<std::chrono::steady_clock::time_point> burstStart_;
  bool stopped_ = false;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace vipd::daemon
