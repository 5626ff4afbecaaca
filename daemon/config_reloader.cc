#include "daemon/config_reloader.h"

#include <sys/stat.h>

#include <functional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/file_reader.h"

namespace vipd::daemon {

ConfigReloader::ConfigReloader(asio::io_context& io, config::ConfigSources sources,
                               Speaker& speaker, const Logger& log)
    : io_(io),
      sources_(std::move(sources)),
      speaker_(speaker),
      log_(log),
      watcher_(io, [this] { onFilesChanged(); }),
      recheck_(io) {}

void ConfigReloader::start() {
  lastFingerprint_ = fingerprint();
  watchFiles();
}

void ConfigReloader::stop() {
  stopped_ = true;
  watcher_.stop();
  recheck_.cancel();
}

std::vector<std::string> ConfigReloader::files() const {
  std::vector<std::string> out{sources_.configPath};
  if (sources_.nodeConfigPath) {
    out.push_back(*sources_.nodeConfigPath);
  }
  for (auto& key : speaker_.keyFiles()) {
    out.push_back(std::move(key));
  }
  return out;
}

std::optional<std::string> ConfigReloader::missing() const {
  for (const auto& file : files()) {
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) {  // follows symlinks: a dangling one is missing too
      return file;
    }
  }
  return std::nullopt;
}

size_t ConfigReloader::fingerprint() const {
  size_t hash = 0;
  for (const auto& file : files()) {
    // Read as the loader reads it (config/file_reader.h): a FIFO renamed over the config is
    // refused at once, never waited on, and its refusal is what gets compared.
    auto content = config::readBoundedFile(file, "file", kMaxFingerprintBytes);
    std::string text = file + (content ? "\n" + *content : "\n(unread) " + content.error());
    hash = hash * 1000003u ^ std::hash<std::string>{}(text);
  }
  return hash;
}

void ConfigReloader::watchFiles() {
  if (stopped_) {
    return;
  }
  auto watched = watcher_.watch(files());
  if (!watched && watched.error() != watchError_) {
    log_.warn("config", "{}; changes there are seen on SIGHUP only", watched.error());
  }
  watchError_ = watched ? std::nullopt : std::optional(watched.error());
  nlohmann::json status{{"directories", watcher_.directories()}};
  if (watchError_) {
    status["error"] = *watchError_;
  }
  speaker_.setConfigWatch(std::move(status));
}

void ConfigReloader::onFilesChanged() {
  if (stopped_) {
    return;
  }
  if (auto writing = watcher_.writing(); !writing.empty()) {
    // Its writer's close comes back here; until then the running config stays.
    recheck_.cancel();
    log_.info("config", "{} is being written; waiting for its writer to close it before "
              "reading it", fmt::join(writing, ", "));
    return;
  }
  if (auto gone = missing()) {
    const auto now = std::chrono::steady_clock::now();
    if (!goneSince_) {
      goneSince_ = now;
      log_.info("config", "{} is gone; waiting up to {}s for it to come back (a file being "
                "replaced) before reloading", *gone, kGoneGrace.count());
    }
    if (now - *goneSince_ < kGoneGrace) {
      recheck_.expires_after(kGoneRecheck);
      recheck_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) {
          onFilesChanged();
        }
      });
      return;
    }
  }
  goneSince_.reset();
  if (fingerprint() == lastFingerprint_) {
    watchFiles();  // a directory replaced (IN_IGNORED) is watched again
    return;
  }
  reload("file change");
}

void ConfigReloader::reload(std::string_view trigger) {
  const std::string names = sources_.nodeConfigPath
                                ? fmt::format("{} + {}", sources_.configPath,
                                              *sources_.nodeConfigPath)
                                : sources_.configPath;
  if (stopped_) {
    log_.info("vipd", "{} while draining to exit; {} not re-read", trigger, names);
    return;
  }
  recheck_.cancel();
  goneSince_.reset();
  lastFingerprint_ = fingerprint();
  log_.info("vipd", "{}; re-reading {}",
            trigger == "SIGHUP" ? "received SIGHUP" : fmt::format("{} seen", trigger), names);
  auto next = config::loadConfig(sources_);
  if (!next) {
    // A file that is not a vipd config at all (another file renamed over it) has an error per
    // line: the first kMaxErrorsLogged say enough.
    for (size_t i = 0; i < next.error().size() && i < kMaxErrorsLogged; ++i) {
      log_.error("config", "{}", next.error()[i].toString());
    }
    if (next.error().size() > kMaxErrorsLogged) {
      log_.error("config", "... and {} more error(s) not shown; `vipd validate` lists them all",
                 next.error().size() - kMaxErrorsLogged);
    }
    log_.error("vipd", "{} has {} error(s); ignored: still running with the config loaded before",
               names, next.error().size());
    speaker_.reloadFailed(next.error().empty() ? std::string("the config did not load")
                                               : next.error().front().toString(),
                          trigger);
    return;
  }
  auto outcome = speaker_.reload(next->config, trigger);
  if (!outcome) {
    log_.error("config", "{}", outcome.error());
    log_.error("vipd", "{} names a key file vipd cannot read; ignored: still running with the "
               "config loaded before", names);
    watchFiles();
    return;
  }
  watchFiles();  // the key files may have changed
  const auto& o = *outcome;
  const size_t changes = o.applied.size() + o.pending.size();
  if (changes == 0) {
    log_.info("vipd", "{} is valid and unchanged; nothing to apply", names);
    return;
  }
  const size_t failed = o.notApplied();
  log_.log(failed > 0 ? LogLevel::Warn : LogLevel::Info, "vipd",
           fmt::format("{} is valid: {} change(s): {} applied, {} needing a restart{}", names,
                       changes, o.applied.size(), o.pending.size() - failed,
                       failed > 0 ? fmt::format(", {} that could not be applied", failed) : ""));
}

}  // namespace vipd::daemon
