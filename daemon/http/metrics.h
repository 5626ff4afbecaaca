// Prometheus metrics for vipd, projected from the status JSON (Speaker::status(), the same object
// `vipctl status` prints), so the metrics can never disagree with what the operator sees there.
//
// The metric families, their labels and the status fields each one reads are documented where
// they are defined (metrics.cc) and listed in docs/metrics.md.
//
// Contract:
// - update() takes one status snapshot. Any field may be absent or of the wrong type: a metric
//   whose field is absent is left as it was (never created if never seen). It never throws.
// - Counters (`*_total`) are fed from the status's in-process, monotonic counters: each update()
//   increments by the delta since the previous snapshot, so a counter never decreases. A status
//   value lower than the last one seen (not expected) adds nothing and becomes the new baseline.
// - Peers and VIPs are static config: series for a peer or VIP are created when first seen and
//   never removed.
// - serialize() returns the Prometheus text exposition format (version 0.0.4).
// - Not thread-safe: call from the io_context thread, like everything else in daemon/.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/labels.h>
#include <prometheus/registry.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace vipd::daemon {

// Content-Type of serialize()'s output.
inline constexpr std::string_view kPrometheusContentType =
    "text/plain; version=0.0.4; charset=utf-8";

class Metrics {
 public:
  Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // Maps one status snapshot onto the metrics (see the contract above).
  void update(const nlohmann::json& status);

  // The whole registry in the Prometheus text format.
  [[nodiscard]] std::string serialize() const;

 private:
  // A family that holds at most one series whose labels change (an "info" style gauge such as
  // vipd_withdrawn{reason}): setting new labels removes the old series, so a free-text label
  // never accumulates series.
  struct SingleSeries {
    prometheus::Family<prometheus::Gauge>* family;
    prometheus::Gauge* gauge = nullptr;
    prometheus::Labels labels;
  };

  void updatePeer(const nlohmann::json& peer);
  void updateBfd(const std::string& peer, const nlohmann::json& bfd);
  void updateVip(const nlohmann::json& vip);
  void updateHealth(const nlohmann::json& health);
  void updateWithdrawn(const nlohmann::json& withdrawn);
  void updateHandoff(const nlohmann::json& handoff);

  // Increments the counter by how much `current` grew since the last call for this series.
  void advance(prometheus::Family<prometheus::Counter>& family, const prometheus::Labels& labels,
               double current);
  static void set(SingleSeries& series, const prometheus::Labels& labels, double value);

  std::unique_ptr<prometheus::Registry> registry_;

  SingleSeries buildInfo_;
  SingleSeries mode_;
  SingleSeries withdrawn_;
  prometheus::Family<prometheus::Gauge>& ready_;

  prometheus::Family<prometheus::Gauge>& peerState_;
  prometheus::Family<prometheus::Gauge>& peerEstablished_;
  prometheus::Family<prometheus::Gauge>& peerStateSeconds_;
  prometheus::Family<prometheus::Gauge>& peerNotEstablishedTooLong_;
  prometheus::Family<prometheus::Counter>& peerFlaps_;
  prometheus::Family<prometheus::Counter>& updatesSent_;
  prometheus::Family<prometheus::Counter>& updatesReceived_;
  prometheus::Family<prometheus::Counter>& prefixesReceived_;
  prometheus::Family<prometheus::Counter>& withdrawalsReceived_;
  prometheus::Family<prometheus::Counter>& updateErrors_;
  prometheus::Family<prometheus::Counter>& endOfRibReceived_;
  prometheus::Family<prometheus::Counter>& routeRefreshReceived_;
  prometheus::Family<prometheus::Counter>& notificationsSent_;
  prometheus::Family<prometheus::Counter>& notificationsReceived_;
  prometheus::Family<prometheus::Gauge>& prefixesAdvertised_;
  prometheus::Family<prometheus::Gauge>& bfdState_;
  prometheus::Family<prometheus::Gauge>& bfdDetectionTime_;
  prometheus::Family<prometheus::Gauge>& bfdTxInterval_;
  prometheus::Family<prometheus::Counter>& bfdTransitions_;
  prometheus::Family<prometheus::Counter>& bfdPackets_;

  prometheus::Family<prometheus::Gauge>& vipBound_;
  prometheus::Family<prometheus::Gauge>& vipOwned_;
  prometheus::Family<prometheus::Gauge>& vipAnnounced_;
  prometheus::Family<prometheus::Gauge>& vipAnnouncedPeers_;
  prometheus::Family<prometheus::Counter>& vipLost_;

  prometheus::Family<prometheus::Gauge>& healthHealthy_;
  prometheus::Family<prometheus::Gauge>& healthConsecutiveSuccesses_;
  prometheus::Family<prometheus::Gauge>& healthConsecutiveFailures_;
  prometheus::Family<prometheus::Gauge>& healthLatency_;
  prometheus::Family<prometheus::Counter>& healthChecks_;
  prometheus::Family<prometheus::Counter>& healthFailures_;

  SingleSeries role_;
  SingleSeries handoffRefused_;
  prometheus::Family<prometheus::Counter>& handoffs_;

  // Last status value fed into each counter series (the series are owned by their family and
  // never removed, so the pointers stay valid).
  std::map<const prometheus::Counter*, double> lastSeen_;
};

}  // namespace vipd::daemon
