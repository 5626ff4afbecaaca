#include "daemon/probe/metrics.h"

#include "daemon/probe/history.h"

namespace vipd::daemon {

ProbeMetrics::ProbeMetrics(const std::string& site, const std::vector<std::string>& targets,
                           std::chrono::milliseconds interval)
    : site_(site),
      registry_(std::make_unique<prometheus::Registry>()),
      duration_(prometheus::BuildHistogram()
                    .Name("vipd_probe_duration_seconds")
                    .Help("Time to an accepted apiserver answer (connect, TLS, request, "
                          "response); successful probes only.")
                    .Register(*registry_)),
      successes_(prometheus::BuildCounter()
                     .Name("vipd_probe_successes_total")
                     .Help("Probes answered as only an apiserver answers, over TLS verified "
                           "against the target's CA.")
                     .Register(*registry_)),
      failures_(prometheus::BuildCounter()
                    .Name("vipd_probe_failures_total")
                    .Help("Failed probes by reason; not_apiserver: an HTML page (a proxy or "
                          "load balancer) answered.")
                    .Register(*registry_)),
      up_(prometheus::BuildGauge()
              .Name("vipd_probe_up")
              .Help("1 when the target's last probe succeeded, 0 when it failed.")
              .Register(*registry_)),
      interval_(prometheus::BuildGauge()
                    .Name("vipd_probe_interval_seconds")
                    .Help("The configured time between two probes of a target.")
                    .Register(*registry_)) {
  interval_.Add({{"site", site}}).Set(std::chrono::duration<double>(interval).count());
  for (const auto& target : targets) {
    prometheus::Labels labels{{"site", site}, {"target", target}};
    TargetSeries series{&duration_.Add(labels, kProbeDurationBuckets), &successes_.Add(labels), {}};
    for (std::string_view reason : kProbeFailureReasons) {
      auto withReason = labels;
      withReason.emplace("reason", std::string(reason));
      series.failures.emplace(std::string(reason), &failures_.Add(withReason));
    }
    targets_.emplace(target, std::move(series));
  }
}

void ProbeMetrics::record(const std::string& target, const CallResult& result) {
  auto it = targets_.find(target);
  if (it == targets_.end()) {
    return;
  }
  TargetSeries& series = it->second;
  if (series.up == nullptr) {
    series.up = &up_.Add({{"site", site_}, {"target", target}});
  }
  series.up->Set(result.ok ? 1 : 0);
  if (result.ok) {
    series.successes->Increment();
    series.duration->Observe(std::chrono::duration<double>(result.latency).count());
    return;
  }
  auto reason = series.failures.find(probeFailureReason(result.failure));
  if (reason != series.failures.end()) {
    reason->second->Increment();
  }
}

std::string ProbeMetrics::serialize() const { return exposition::serialize(*registry_); }

}  // namespace vipd::daemon
