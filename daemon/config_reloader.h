// The one way a running vipd re-reads its config (issue 29). SIGHUP (main.cc) and a change the
// ConfigWatcher saw in the files both come to reload(), which loads and validates the config
// file and the node file (config::loadConfig, with the --router-id given at start), hands a valid
// config to Speaker::reload() (which reads the TCP-MD5 keys and carries the changes out) and
// says in one line what came of it. An invalid config changes nothing and is reported as before.
//
// A file is read only once its writer has closed it (ConfigWatcher::writing()), and only as the
// loader reads it (config/file_reader.h: a regular file, never waited on), so neither a slow
// writer nor a FIFO renamed over the config reaches the loader or blocks the io_context thread.
//
// A change seen in the files reloads only when what they hold differs from what the last reload
// read (the watched directories hold other files too, and the kubelet touches several names per
// update). A file that is gone, or a symlink that points nowhere, is given kGoneGrace to come back
// (an editor or the kubelet replacing it) before the reload that fails on it is attempted. The
// files are the config file, the node file and every TCP-MD5 key file the running config names.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "config/layers.h"
#include "daemon/base/logger.h"
#include "daemon/reload/config_watcher.h"
#include "daemon/speaker.h"

namespace vipd::daemon {

class ConfigReloader {
 public:
  static constexpr std::chrono::seconds kGoneGrace{5};
  static constexpr std::chrono::milliseconds kGoneRecheck{250};
  // Past this a file is not read to compare it: the loader refuses it anyway (4 MiB).
  static constexpr size_t kMaxFingerprintBytes = size_t{8} << 20;
  // The errors of a failed reload logged one by one; the rest are counted in one line.
  static constexpr size_t kMaxErrorsLogged = 20;

  // `speaker` and `log` must outlive the reloader.
  ConfigReloader(asio::io_context& io, config::ConfigSources sources, Speaker& speaker,
                 const Logger& log);

  // Starts watching the files (after Speaker::start()). A directory that cannot be watched is
  // logged and shown in status `config.watch`; SIGHUP still reloads.
  void start();
  // No reloads from now on (vipd is draining to exit).
  void stop();
  // Reloads now; `trigger` names the cause in logs and status ("SIGHUP", "file change").
  void reload(std::string_view trigger);

 private:
  void onFilesChanged();
  void watchFiles();
  // The config file, the node file and the running config's key files.
  std::vector<std::string> files() const;
  // The first file that is gone (or a symlink to nothing).
  std::optional<std::string> missing() const;
  // What the files hold, in short: a hash of each one's content (or of its absence).
  size_t fingerprint() const;

  asio::io_context& io_;
  config::ConfigSources sources_;
  Speaker& speaker_;
  const Logger& log_;
  ConfigWatcher watcher_;
  asio::steady_timer recheck_;
  std::optional<std::chrono::steady_clock::time_point> goneSince_;
  size_t lastFingerprint_ = 0;
  std::optional<std::string> watchError_;
  bool stopped_ = false;
};

}  // namespace vipd::daemon
