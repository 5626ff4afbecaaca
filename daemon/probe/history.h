// What one `vipd probe` remembers of one target: its recent probes, summarized for /probe.json
// (success rate, p50 and p99 latency over a window, the last probes for the sparkline). Pure: the
// caller passes the time; no clock, no I/O. Bounded: at most `capacity` probes are kept.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/health/apiserver_call.h"

namespace vipd::daemon {

// The failure reason as a metric label and a /probe.json field: a fixed set (kProbeFailureReasons),
// never free text. "" for CallFailure::None.
[[nodiscard]] std::string_view probeFailureReason(CallFailure failure);

// Every reason probeFailureReason() can return, in a stable order (the metrics create a series
// for each at start, so a first failure is an increase, not a new series).
inline constexpr std::string_view kProbeFailureReasons[] = {
    "dns",           "connection_refused", "connect_error",  "timeout",
    "tls_error",     "transport_error",    "not_apiserver",  "http_status",
    "unexpected_body", "local_resource"};

struct ProbeSample {
  std::chrono::system_clock::time_point at;
  bool ok = false;
  std::chrono::microseconds latency{};
  CallFailure failure = CallFailure::None;
};

struct ProbeSummary {
  size_t probes = 0;  // in the window
  size_t successes = 0;
  std::optional<double> successRate;               // none before the first probe
  std::optional<std::chrono::microseconds> p50;    // latency of the successes, nearest rank
  std::optional<std::chrono::microseconds> p99;
};

// Nearest-rank percentile (0 < q <= 1) of `values`, which it sorts; none when empty.
[[nodiscard]] std::optional<std::chrono::microseconds> percentile(
    std::vector<std::chrono::microseconds>& values, double q);

class ProbeHistory {
 public:
  explicit ProbeHistory(size_t capacity = 1440) : capacity_(capacity) {}

  // Adds one finished probe; `detail` is the operator's sentence, kept for the last failure.
  void record(const ProbeSample& sample, std::string_view detail);

  // The probes at most `window` old at `now`.
  [[nodiscard]] ProbeSummary summarize(std::chrono::system_clock::time_point now,
                                       std::chrono::seconds window) const;

  // The target's entry in /probe.json: the summary over `window`, the last probe, the last
  // failure's reason and detail, and the last `recent` probes, oldest first, each
  // {"ok": true, "ms": 1.234} or {"ok": false, "reason": "timeout"}.
  [[nodiscard]] nlohmann::json toJson(std::chrono::system_clock::time_point now,
                                      std::chrono::seconds window, size_t recent) const;

 private:
  size_t capacity_;
  std::deque<ProbeSample> samples_;
  std::string lastDetail_;
  std::optional<ProbeSample> lastFailure_;
  std::string lastFailureDetail_;
};

}  // namespace vipd::daemon
