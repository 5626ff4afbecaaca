// The Prometheus metrics of `vipd probe`, one series set per (site, target). Defined and
// documented here (and in docs/metrics.md):
//
//   vipd_probe_duration_seconds{site,target}            histogram
//       Time from the start of a probe to the apiserver's accepted answer: connect, TLS
//       handshake, request and response. Successful probes only, so a run of timeouts cannot
//       pass for slow successes; failures are counted by reason below.
//   vipd_probe_successes_total{site,target}             counter
//       Probes answered as only an apiserver answers (/readyz "ok", /version with gitVersion)
//       over TLS verified against the target's CA.
//   vipd_probe_failures_total{site,target,reason}       counter
//       Failed probes by reason (history.h's kProbeFailureReasons: dns,
//       connection_refused, connect_error, timeout, tls_error, transport_error, not_apiserver
//       (an HTML page: a proxy or load balancer answered), http_status, unexpected_body,
//       local_resource). Every reason's series exists from start at 0.
//   vipd_probe_up{site,target}                          gauge
//       1 when the last probe succeeded, 0 when it failed; absent before the first probe.
//   vipd_probe_interval_seconds{site}                   gauge
//       The configured interval, so a dashboard can turn counts into rates per probe.
//
// Labels come from the config only (site, target names; both Kubernetes label values) and the
// fixed reason set. Not thread-safe: the io_context thread only.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "daemon/exposition/exposition.h"
#include "daemon/health/apiserver_call.h"

namespace vipd::daemon {

// Latency buckets in seconds: 1 ms to 5 s, dense where a healthy apiserver answers (a few ms in
// a site, tens of ms across sites).
inline const std::vector<double> kProbeDurationBuckets = {
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};

class ProbeMetrics {
 public:
  ProbeMetrics(const std::string& site, const std::vector<std::string>& targets,
               std::chrono::milliseconds interval);
  ProbeMetrics(const ProbeMetrics&) = delete;
  ProbeMetrics& operator=(const ProbeMetrics&) = delete;

  // One finished probe of `target` (one of the names given at construction).
  void record(const std::string& target, const CallResult& result);

  // The registry in the Prometheus text format (kPrometheusContentType).
  [[nodiscard]] std::string serialize() const;

 private:
  struct TargetSeries {
    prometheus::Histogram* duration;
    prometheus::Counter* successes;
    std::map<std::string, prometheus::Counter*, std::less<>> failures;  // by reason
    prometheus::Gauge* up = nullptr;
  };

  std::string site_;
  std::unique_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Histogram>& duration_;
  prometheus::Family<prometheus::Counter>& successes_;
  prometheus::Family<prometheus::Counter>& failures_;
  prometheus::Family<prometheus::Gauge>& up_;
  prometheus::Family<prometheus::Gauge>& interval_;
  std::map<std::string, TargetSeries> targets_;
};

}  // namespace vipd::daemon
