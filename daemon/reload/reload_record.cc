#include "daemon/reload/reload_record.h"

#include <algorithm>

#include <fmt/format.h>

namespace vipd::daemon {

std::string PendingChange::reason() const {
  return why == Why::NeedsRestart ? std::string("needs a restart")
                                  : "could not be applied: " + detail;
}

size_t ReloadOutcome::notApplied() const {
  return static_cast<size_t>(std::count_if(pending.begin(), pending.end(), [](const auto& p) {
    return p.why == PendingChange::Why::NotApplied;
  }));
}

ReloadRecord::ReloadRecord(std::string loadedAt) : loadedAt_(std::move(loadedAt)) {}

void ReloadRecord::failed(std::string error, std::string_view trigger, std::string at) {
  ++reloadFailures_;
  lastReloadAt_ = std::move(at);
  lastReloadTrigger_ = trigger;
  lastReloadResult_ = "failed";
  lastReloadSuccessful_ = false;
  lastReloadError_ = std::move(error);
}

void ReloadRecord::record(const ReloadOutcome& outcome, std::string_view trigger,
                          std::string at) {
  ++(outcome.failedSome ? reloadFailures_ : reloads_);
  lastReloadAt_ = std::move(at);
  lastReloadTrigger_ = trigger;
  if (!outcome.applied.empty()) {
    loadedAt_ = lastReloadAt_;
    lastApplied_ = outcome.applied;
  }
  pending_ = outcome.pending;
  if (outcome.pending.empty()) {
    lastReloadResult_ = outcome.applied.empty() ? "nothing to apply" : "applied";
  } else {
    lastReloadResult_ = outcome.applied.empty() ? "pending restart" : "partly applied";
  }
  lastReloadSuccessful_ = !outcome.failedSome;
  lastReloadError_.clear();
  if (outcome.failedSome) {
    for (const auto& p : outcome.pending) {
      if (p.why == PendingChange::Why::NotApplied) {
        lastReloadError_ = fmt::format("{}: {}", p.change.path, p.reason());
        break;
      }
    }
  }
}

nlohmann::json ReloadRecord::status() const {
  nlohmann::json applied = nlohmann::json::array();
  for (const auto& change : lastApplied_) {
    applied.push_back({{"key", change.path}, {"before", change.before}, {"after", change.after}});
  }
  nlohmann::json pending = nlohmann::json::array();
  for (const auto& p : pending_) {
    pending.push_back({{"key", p.change.path},
                       {"running", p.change.before},
                       {"file", p.change.after},
                       {"reason", p.reason()}});
  }
  nlohmann::json out{{"loadedAt", loadedAt_},
                     {"lastReloadSuccessful", lastReloadSuccessful_},
                     {"reloads", reloads_},
                     {"reloadFailures", reloadFailures_},
                     {"lastApplied", std::move(applied)},
                     {"pendingRestart", std::move(pending)}};
  if (!lastReloadAt_.empty()) {
    out["lastReloadAt"] = lastReloadAt_;
    out["lastReloadTrigger"] = lastReloadTrigger_;
    out["lastReloadResult"] = lastReloadResult_;
  }
  if (!lastReloadSuccessful_) {
    out["lastReloadError"] = lastReloadError_;
  }
  if (!watch_.is_null()) {
    out["watch"] = watch_;
  }
  return out;
}

}  // namespace vipd::daemon
