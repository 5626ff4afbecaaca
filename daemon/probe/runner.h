// `vipd probe` running: every target probed once per interval (staggered over the interval so
// the targets are not hit at the same instant), each probe the health gate's exchange
// (ApiserverCall: CA-verified TLS, the server name, one GET) with the target's verdict
// (answer.h). Each result goes to the metrics and the target's history; the listener
// serves /metrics, /probe.json (ProbeRunner::document()) and /healthz. A target's change between
// success and failure is logged once, not every probe.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tl/expected.hpp>
#include <vector>

#include "config/health_target.h"
#include "config/probe_config.h"
#include "daemon/base/logger.h"
#include "daemon/health/apiserver_call.h"
#include "daemon/http/server.h"
#include "daemon/probe/history.h"
#include "daemon/probe/metrics.h"

namespace vipd::daemon {

// The window /probe.json summarizes (success rate, p50, p99) and how many recent probes it lists.
inline constexpr std::chrono::seconds kProbeSummaryWindow{600};
inline constexpr size_t kProbeRecentListed = 60;

class ProbeRunner {
 public:
  // `log` must outlive the runner. Nothing happens before start().
  ProbeRunner(asio::io_context& io, config::ProbeConfig config, const Logger& log);
  ~ProbeRunner();
  ProbeRunner(const ProbeRunner&) = delete;
  ProbeRunner& operator=(const ProbeRunner&) = delete;

  // Reads every target's CA file, binds the listener and schedules the probes. The error is one
  // sentence naming the target or the listener to fix.
  [[nodiscard]] tl::expected<void, std::string> start();

  // Abandons the probes in flight and stops the timers and the listener.
  void stop();

  // /probe.json: {"site", "version", "intervalSeconds", "windowSeconds", "targets": [{"name",
  // "url", "expect", ...ProbeHistory::toJson()}]}.
  [[nodiscard]] nlohmann::json document() const;

  // The listener's port (useful with port 0), 0 before start().
  [[nodiscard]] uint16_t port() const;

 private:
  struct Target {
    config::ProbeTarget config;
    config::HealthTarget where;
    std::shared_ptr<asio::ssl::context> tls;
    std::unique_ptr<asio::steady_timer> timer;
    std::chrono::steady_clock::time_point next;
    ProbeHistory history;
    std::shared_ptr<ApiserverCall> inFlight;
    std::optional<bool> lastOk;
  };

  HttpResponse serve(std::string_view target) const;
  void schedule(Target& target);
  void probe(Target& target);
  void onResult(Target& target, const CallResult& result);

  asio::io_context& io_;
  config::ProbeConfig config_;
  const Logger& log_;
  ProbeMetrics metrics_;
  std::vector<std::unique_ptr<Target>> targets_;
  std::unique_ptr<HttpServer> http_;
  bool stopped_ = false;
};

}  // namespace vipd::daemon
