// The doctor inside the running vipd (issue 30): the checks of `vipd doctor` over the config that
// runs, at start and after each reload that applied something, so the static pod (and the
// DaemonSet, and a host's systemd unit) logs what an operator would have to fix, and `vipctl
// status` shows the last result (status `doctor`, metric vipd_doctor_checks). Never fatal: a
// failing check is logged and shown, and vipd runs on as before (start refuses what it must on
// its own).
//
// Owns the run in flight and the last result. The gathering blocks (netlink, /proc, a TLS
// handshake with the apiserver bounded by health.timeout), so it runs on a thread of its own
// that touches nothing of the daemon's: it opens its own netlink socket and io_context, works on
// a copy of the config and hands the checks back to the io_context thread, where everything else
// happens (logging, status).
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "config/config.h"
#include "daemon/base/logger.h"
#include "doctor/check.h"

namespace vipd::daemon {

class DoctorRunner {
 public:
  // `io` and `log` must outlive the runner.
  DoctorRunner(boost::asio::io_context& io, const Logger& log);
  // Waits for a run in flight (bounded by its certificate timeout); its result is dropped.
  ~DoctorRunner();
  DoctorRunner(const DoctorRunner&) = delete;
  DoctorRunner& operator=(const DoctorRunner&) = delete;

  // How the checks name the config ("vipd.yaml + node.yaml"); before the first run.
  void setConfigNames(std::string names) { configNames_ = std::move(names); }

  // Runs every check over `config` (copied). When it ends, on the io_context thread: each warn and
  // fail line is logged at warn, then one info line with the counts, and the result replaces the
  // last. `trigger` says why it ran ("start", "reload", "health gate opened"). A run asked for
  // while one is in flight starts when that one ends, with the newest config (one waits at most).
  void run(const config::Config& config, std::string trigger);

  // {"running": bool} until the first run ends; then also "ranAt" (UTC), "trigger", and
  // reportJson()'s "result", "counts" and "checks".
  [[nodiscard]] nlohmann::json status() const;

  // The last run could not read the apiserver's certificate (nothing answered yet: the static
  // pod starts before the apiserver it gates). The Speaker runs the checks again when the health
  // gate first opens.
  [[nodiscard]] bool apiserverUnchecked() const;

 private:
  void start(config::Config config, std::string trigger);
  void finished(std::vector<doctor::Check> checks, std::string trigger, std::string ranAt);

  boost::asio::io_context& io_;
  const Logger& log_;
  std::string configNames_;
  std::thread worker_;
  bool running_ = false;
  std::optional<std::pair<config::Config, std::string>> queued_;
  std::optional<std::vector<doctor::Check>> last_;
  std::string lastTrigger_;
  std::string lastRanAt_;
  // Expires when the runner is destroyed: a result posted after that is dropped.
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace vipd::daemon
