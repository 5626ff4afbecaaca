// The link to Kubernetes in the metrics (issue 41): read from the status document's `kubernetes`
// block (daemon/kubelink/kube_link.h), as every family is.
#include <ctime>
#include <optional>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>

#include "daemon/base/json_fields.h"
#include "daemon/http/metrics.h"

namespace vipd::daemon {
namespace {

std::optional<double> unixSecondsOf(const std::string& rfc3339) {
  std::tm tm{};
  if (::strptime(rfc3339.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm) == nullptr) {
    return std::nullopt;
  }
  return static_cast<double>(::timegm(&tm));
}

}  // namespace

Metrics::KubeFamilies Metrics::kubeFamilies(prometheus::Registry& registry) {
  auto gauge = [&registry](const char* name, const char* help) -> GaugeFamily& {
    return prometheus::BuildGauge().Name(name).Help(help).Register(registry);
  };
  auto counter = [&registry](const char* name, const char* help) -> CounterFamily& {
    return prometheus::BuildCounter().Name(name).Help(help).Register(registry);
  };
  return {
      // Reads: kubernetes.enabled.
      .enabled = gauge("vipd_kube_link_enabled",
                       "1 when the link to the Kubernetes API is configured (kubernetes.enabled)."),
      // Reads: kubernetes.connected (the Node read, the last call answered).
      .connected = gauge("vipd_kube_link_connected",
                         "1 while the Kubernetes API answers (the Node is watched and the last "
                         "call succeeded), 0 otherwise. The announcements never depend on it."),
      // Reads: kubernetes.lastWrite.
      .lastWrite = gauge("vipd_kube_status_last_write_timestamp_seconds",
                         "Unix time of the last VipdNode status write that succeeded."),
      // Reads: kubernetes.intent.withdraw.
      .withdrawRequested = gauge("vipd_kube_withdraw_requested",
                                 "1 while the Node asks vipd to withdraw (annotation "
                                 "vipd.io/withdraw or the out-of-service taint)."),
      // Reads: kubernetes.withdrawRefused (present while refused).
      .withdrawRefused = gauge("vipd_kube_withdraw_refused",
                               "1 while the withdraw guard refuses the Node's request (this "
                               "node is among the last announcers)."),
      // Reads: kubernetes.statusWrites and statusFailures.
      .statusWrites = counter("vipd_kube_status_writes_total",
                              "VipdNode status writes, by result (ok, failed)."),
      // Reads: kubernetes.eventsSent, eventsFailed and eventsDropped.
      .events = counter("vipd_kube_events_total",
                        "Events posted on the Node, by result (sent, failed, dropped: by the "
                        "rate limit)."),
      // Reads: kubernetes.watchErrors.
      .watchErrors = counter("vipd_kube_watch_errors_total",
                             "Failed lists and watches of the Node (each retried with backoff)."),
  };
}

void Metrics::updateKubernetes(const nlohmann::json& kubernetes) {
  using json_fields::boolean;
  using json_fields::member;
  using json_fields::number;
  using json_fields::string;
  const bool enabled = boolean(kubernetes, "enabled").value_or(false);
  kube_.enabled.Add({}).Set(enabled ? 1 : 0);
  if (!enabled) {
    return;
  }
  kube_.connected.Add({}).Set(boolean(kubernetes, "connected").value_or(false) ? 1 : 0);
  if (auto at = string(kubernetes, "lastWrite")) {
    if (auto seconds = unixSecondsOf(*at)) {
      kube_.lastWrite.Add({}).Set(*seconds);
    }
  }
  const nlohmann::json* intent = member(kubernetes, "intent");
  kube_.withdrawRequested.Add({}).Set(
      intent != nullptr && boolean(*intent, "withdraw").value_or(false) ? 1 : 0);
  kube_.withdrawRefused.Add({}).Set(member(kubernetes, "withdrawRefused") != nullptr ? 1 : 0);
  const std::pair<const char*, std::pair<CounterFamily*, const char*>> counts[] = {
      {"statusWrites", {&kube_.statusWrites, "ok"}},
      {"statusFailures", {&kube_.statusWrites, "failed"}},
      {"eventsSent", {&kube_.events, "sent"}},
      {"eventsFailed", {&kube_.events, "failed"}},
      {"eventsDropped", {&kube_.events, "dropped"}}};
  for (const auto& [key, target] : counts) {
    if (auto n = number(kubernetes, key)) {
      advance(*target.first, {{"result", target.second}}, *n);
    }
  }
  if (auto n = number(kubernetes, "watchErrors")) {
    advance(kube_.watchErrors, {}, *n);
  }
}

}  // namespace vipd::daemon
