#include "daemon/probe/probe_metrics.h"

#include "daemon/probe/probe_history.h"

namespace vipd::daemon {

ProbeMetrics::ProbeMetrics(const std::string& site, const std::vector<std::string>& targets,
                           std::chrono::milliseconds interval)
    : site_(site),
      registry_(std::make_unique<exposition::Registry>()),
      duration_(registry_->histogram("vipd_probe_duration_seconds",
                                     "Time to an accepted apiserver answer (connect, TLS, request, "
                                     "response); successful probes only.",
                                     kProbeDurationBuckets)),
      successes_(
          registry_->counter("vipd_probe_successes_total",
                             "Probes answered as only an apiserver answers, over TLS verified "
                             "against the target's CA.")),
      failures_(
          registry_->counter("vipd_probe_failures_total",
                             "Failed probes by reason; not_apiserver: an HTML page (a proxy or "
                             "load balancer) answered.")),
      up_(registry_->gauge("vipd_probe_up",
                           "1 when the target's last probe succeeded, 0 when it failed.")),
      interval_(registry_->gauge("vipd_probe_interval_seconds",
                                 "The configured time between two probes of a target.")) {
  interval_.add({{"site", site}}).set(std::chrono::duration<double>(interval).count());
  for (const auto& target : targets) {
    exposition::Labels labels{{"site", site}, {"target", target}};
    TargetSeries series{&duration_.add(labels), &successes_.add(labels), {}};
    for (std::string_view reason : kProbeFailureReasons) {
      auto withReason = labels;
      withReason.emplace("reason", std::string(reason));
      series.failures.emplace(std::string(reason), &failures_.add(withReason));
    }
    targets_.emplace(target, std::move(series));
  }
}

void ProbeMetrics::record(const std::string& target, const ProbeResult& result) {
  auto it = targets_.find(target);
  if (it == targets_.end()) {
    return;
  }
  TargetSeries& series = it->second;
  if (series.up == nullptr) {
    series.up = &up_.add({{"site", site_}, {"target", target}});
  }
  series.up->set(result.ok ? 1 : 0);
  if (result.ok) {
    series.successes->increment();
    series.duration->observe(std::chrono::duration<double>(result.latency).count());
    return;
  }
  auto reason = series.failures.find(probeFailureReason(result.failure));
  if (reason != series.failures.end()) {
    reason->second->increment();
  }
}

std::string ProbeMetrics::serialize() const { return registry_->serialize(); }

}  // namespace vipd::daemon
