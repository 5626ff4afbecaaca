// Notices, without a signal, that a file vipd reads may have changed (issue 29). One inotify
// watch per directory holding a watched file, and per directory its symlinks resolve to, so that
// every way a file gets replaced is seen: written in place, renamed over it (editors,
// install(1)), deleted and created again, its mode changed, and the kubelet's update of a
// ConfigMap or Secret volume, which writes a new timestamped directory and renames a `..data`
// symlink over the old one (IN_MOVED_TO "..data" in the mounted directory; the file itself,
// `vipd.yaml -> ..data/vipd.yaml`, never changes).
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

 private:
  void readEvents();
  // Reads every queued event; whether there was one.
  bool drain();
  void onEvent();

  OnChange onChange_;
  int fd_ = -1;
  asio::posix::stream_descriptor stream_;
  std::map<int, std::string> watches_;  // watch descriptor -> directory
  asio::steady_timer quiet_;
  std::optional<std::chrono::steady_clock::time_point> burstStart_;
  bool stopped_ = false;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace vipd::daemon
