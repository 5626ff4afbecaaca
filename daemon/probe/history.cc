#include "daemon/probe/history.h"

#include <algorithm>
#include <cmath>

namespace vipd::daemon {

using std::chrono::microseconds;
using std::chrono::system_clock;

std::string_view probeFailureReason(CallFailure failure) {
  switch (failure) {
    case CallFailure::None:
      return "";
    case CallFailure::Resolve:
      return "dns";
    case CallFailure::ConnectionRefused:
      return "connection_refused";
    case CallFailure::Connect:
      return "connect_error";
    case CallFailure::Timeout:
      return "timeout";
    case CallFailure::Tls:
      return "tls_error";
    case CallFailure::Transport:
      return "transport_error";
    case CallFailure::NotApiserver:
      return "not_apiserver";
    case CallFailure::HttpStatus:
      return "http_status";
    case CallFailure::Body:
      return "unexpected_body";
    case CallFailure::Local:
      return "local_resource";
  }
  return "unexpected_body";
}

std::optional<microseconds> percentile(std::vector<microseconds>& values, double q) {
  if (values.empty()) {
    return std::nullopt;
  }
  std::sort(values.begin(), values.end());
  // Nearest rank: the smallest value with at least q of the values at or below it.
  auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(values.size())));
  return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
}

void ProbeHistory::record(const ProbeSample& sample, std::string_view detail) {
  samples_.push_back(sample);
  while (samples_.size() > capacity_) {
    samples_.pop_front();
  }
  lastDetail_ = detail;
  if (!sample.ok) {
    lastFailure_ = sample;
    lastFailureDetail_ = detail;
  }
}

ProbeSummary ProbeHistory::summarize(system_clock::time_point now,
                                     std::chrono::seconds window) const {
  ProbeSummary summary;
  std::vector<microseconds> latencies;
  for (const auto& s : samples_) {
    if (s.at + window < now) {
      continue;
    }
    ++summary.probes;
    if (s.ok) {
      ++summary.successes;
      latencies.push_back(s.latency);
    }
  }
  if (summary.probes > 0) {
    summary.successRate =
        static_cast<double>(summary.successes) / static_cast<double>(summary.probes);
  }
  summary.p50 = percentile(latencies, 0.50);
  summary.p99 = percentile(latencies, 0.99);
  return summary;
}

namespace {

double unixSeconds(system_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

double millis(microseconds d) { return static_cast<double>(d.count()) / 1000.0; }

}  // namespace

nlohmann::json ProbeHistory::toJson(system_clock::time_point now, std::chrono::seconds window,
                                    size_t recent) const {
  using nlohmann::json;
  ProbeSummary summary = summarize(now, window);
  json out = {{"probes", summary.probes},
              {"successes", summary.successes},
              {"successRate", summary.successRate ? json(*summary.successRate) : json()},
              {"p50Ms", summary.p50 ? json(millis(*summary.p50)) : json()},
              {"p99Ms", summary.p99 ? json(millis(*summary.p99)) : json()}};
  if (!samples_.empty()) {
    const ProbeSample& last = samples_.back();
    out["last"] = {{"at", unixSeconds(last.at)},
                   {"ok", last.ok},
                   {"ms", millis(last.latency)},
                   {"detail", lastDetail_}};
    if (!last.ok) {
      out["last"]["reason"] = probeFailureReason(last.failure);
    }
  }
  if (lastFailure_) {
    out["lastFailure"] = {{"at", unixSeconds(lastFailure_->at)},
                          {"reason", probeFailureReason(lastFailure_->failure)},
                          {"detail", lastFailureDetail_}};
  }
  json list = json::array();
  size_t first = samples_.size() > recent ? samples_.size() - recent : 0;
  for (size_t i = first; i < samples_.size(); ++i) {
    const ProbeSample& s = samples_[i];
    if (s.ok) {
      list.push_back({{"ok", true}, {"ms", millis(s.latency)}});
    } else {
      list.push_back({{"ok", false}, {"reason", probeFailureReason(s.failure)}});
    }
  }
  out["recent"] = std::move(list);
  return out;
}

}  // namespace vipd::daemon
