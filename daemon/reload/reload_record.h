// What became of each config (re)load since start (issue 29), for status `config`: when the config
// that runs was loaded, the last reload's trigger and result, what it applied and what it left
// pending, and why. Pure: the times are passed in (no clock), nothing is logged or read.
//
// Why a change is pending is a typed value (PendingChange::Why): it waits for a restart, or it
// could not be applied (the detail says what failed; a restart would fail the same way). The
// text operators read ("needs a restart", "could not be applied: ...") is made in one place,
// reason().
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/diff.h"

namespace vipd::daemon {

// A change the running process keeps its old value for, and why.
struct PendingChange {
  enum class Why {
    NeedsRestart,  // config::diffConfig() marks the field NeedsRestart
    NotApplied,    // applying it failed (`detail`): a CA, a port, a lock, the withdraw guard
  };
  config::ConfigChange change;
  Why why = Why::NeedsRestart;
  std::string detail;  // NotApplied: what failed, one sentence

  // "needs a restart", or "could not be applied: <detail>".
  std::string reason() const;
  bool operator==(const PendingChange&) const = default;
};

// One reload carried out: what it applied, what it left pending, and whether some change could
// not be applied (then the reload counts as failed: what runs differs from the file for a reason
// a restart would not fix).
struct ReloadOutcome {
  std::vector<config::ConfigChange> applied;
  std::vector<PendingChange> pending;
  bool failedSome = false;

  // How many pending changes could not be applied (the rest wait for a restart).
  size_t notApplied() const;
};

class ReloadRecord {
 public:
  // `loadedAt`: UTC, when the config that runs was loaded (the start counts as a successful load).
  explicit ReloadRecord(std::string loadedAt);

  // A re-read file that did not load or validate (or named a key file that cannot be read):
  // nothing changed. `error` is the first error, one line.
  void failed(std::string error, std::string_view trigger, std::string at);
  // A reload carried out at `at` (UTC).
  void record(const ReloadOutcome& outcome, std::string_view trigger, std::string at);
  // What watches the config files (daemon/config_reloader.h), for `config.watch`.
  void setWatch(nlohmann::json watch) { watch_ = std::move(watch); }

  // Status `config`: loadedAt, lastReloadSuccessful, reloads, reloadFailures, lastApplied,
  // pendingRestart (key, running, file, reason); lastReloadAt, lastReloadTrigger and
  // lastReloadResult once a reload was tried; lastReloadError while the last one failed; watch.
  nlohmann::json status() const;

 private:
  std::string loadedAt_;
  std::string lastReloadAt_;       // UTC, the last reload attempt; empty before one
  std::string lastReloadTrigger_;  // "SIGHUP", "file change"
  // "applied", "partly applied" (some changes pending), "nothing to apply" (the file is what
  // runs), "pending restart" (only pending changes), "failed" (did not load: nothing changed).
  std::string lastReloadResult_;
  // The last reload loaded and every change it asked for runs or waits only for a restart.
  bool lastReloadSuccessful_ = true;
  std::string lastReloadError_;
  uint64_t reloads_ = 0;
  uint64_t reloadFailures_ = 0;
  std::vector<config::ConfigChange> lastApplied_;
  std::vector<PendingChange> pending_;
  nlohmann::json watch_;
};

}  // namespace vipd::daemon
