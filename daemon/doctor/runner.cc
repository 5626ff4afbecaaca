#include "daemon/doctor/runner.h"

#include <fmt/chrono.h>

#include <boost/asio/post.hpp>
#include <chrono>
#include <ctime>

#include "daemon/doctor/report.h"
#include "daemon/doctor/fact_gatherer.h"
#include "doctor/checks.h"

namespace vipd::daemon {
namespace {

// "2026-12-05T21:04:00Z", as the status writes times.
std::string utcTimestamp() {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::time(nullptr)));
}

}  // namespace

DoctorRunner::DoctorRunner(boost::asio::io_context& io, const Logger& log) : io_(io), log_(log) {}

DoctorRunner::~DoctorRunner() {
  alive_.reset();
  if (worker_.joinable()) {
    worker_.join();
  }
}

void DoctorRunner::run(const config::Config& config, std::string trigger) {
  if (running_) {
    queued_.emplace(config, std::move(trigger));
    return;
  }
  start(config, std::move(trigger));
}

void DoctorRunner::start(config::Config config, std::string trigger) {
  if (worker_.joinable()) {
    worker_.join();  // the last run's thread, which has posted its result and is ending
  }
  running_ = true;
  GatherOptions options;
  options.config = {configNames_, configNames_.find(" + ") != std::string::npos, std::nullopt};
  // The health check's own timeout: what the gate allows the apiserver, and short enough not to
  // hold a shutdown back (the destructor waits for the thread).
  options.certificateTimeout = config.health.timeout;
  std::weak_ptr<int> alive = alive_;
  worker_ = std::thread([this, alive, options = std::move(options), config = std::move(config),
                         trigger = std::move(trigger)]() mutable {
    auto checks = doctor::judge(config, gatherFacts(config, options));
    auto ranAt = utcTimestamp();
    boost::asio::post(io_, [this, alive, checks = std::move(checks),
                            trigger = std::move(trigger), ranAt = std::move(ranAt)]() mutable {
      if (!alive.expired()) {
        finished(std::move(checks), std::move(trigger), std::move(ranAt));
      }
    });
  });
}

void DoctorRunner::finished(std::vector<doctor::Check> checks, std::string trigger,
                            std::string ranAt) {
  running_ = false;
  for (const auto& check : checks) {
    if (check.verdict != doctor::Verdict::Ok) {
      log_.warn("doctor", "{}", doctor::formatLine(check));
    }
  }
  log_.info("doctor", "checks at {}: {}; `vipctl status` shows them (`vipd doctor` runs them by "
            "hand)",
            trigger, doctor::formatCounts(doctor::count(checks)));
  last_ = std::move(checks);
  lastTrigger_ = std::move(trigger);
  lastRanAt_ = std::move(ranAt);
  if (queued_) {
    auto [config, next] = std::move(*queued_);
    queued_.reset();
    start(std::move(config), std::move(next));
  }
}

nlohmann::json DoctorRunner::status() const {
  nlohmann::json out{{"running", running_}};
  if (last_) {
    out.update(reportJson(*last_));
    out["ranAt"] = lastRanAt_;
    out["trigger"] = lastTrigger_;
  }
  return out;
}

bool DoctorRunner::apiserverUnchecked() const {
  if (!last_) {
    return false;
  }
  for (const auto& check : *last_) {
    if (check.name == "apiserver-certificate" && check.inconclusive) {
      return true;
    }
  }
  return false;
}

}  // namespace vipd::daemon
