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
// - Label values come from bounded sets only (config, state names, fixed reasons); free text
//   (a withdraw or refusal reason) stays in the status, never in a label. NOTIFICATION codes a
//   peer sends are kept only when RFC-shaped (code 1-7, subcode 0-15), else counted as "other".
// - serialize() returns the Prometheus text exposition format (version 0.0.4).
// - Not thread-safe: call from the io_context thread, like everything else in daemon/.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "daemon/exposition/exposition.h"

namespace vipd::daemon {

// Content-Type of serialize()'s output.
inline constexpr std::string_view kPrometheusContentType = exposition::kContentType;

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
  using GaugeFamily = prometheus::Family<prometheus::Gauge>;
  using CounterFamily = prometheus::Family<prometheus::Counter>;

  // A family that holds at most one series whose labels change (an "info" style gauge such as
  // vipd_build_info{version}): setting new labels removes the old series, so the family never
  // accumulates series.
  struct SingleSeries {
    GaugeFamily* family;
    prometheus::Gauge* gauge = nullptr;
    prometheus::Labels labels;
  };

  void updatePeer(const nlohmann::json& peer);
  void updateBfd(const std::string& peer, const nlohmann::json& bfd);
  void updateVip(const nlohmann::json& vip);
  void updateHealth(const nlohmann::json& health);
  void updateWithdrawn(const nlohmann::json& withdrawn);
  void updateHandoff(const nlohmann::json& handoff);
  void updateListener(const std::string& name, const nlohmann::json& listener);
  void updateConfigLoads(const nlohmann::json& config);
  void updateDoctor(const nlohmann::json& doctor);
  void updateReturnPath(const nlohmann::json& returnPath);
  void updateFabric(const nlohmann::json& fabric);
  void updateKubernetes(const nlohmann::json& kubernetes);

  // Increments the counter by how much `current` grew since the last call for this series.
  void advance(CounterFamily& family, const prometheus::Labels& labels, double current);
  static void set(SingleSeries& series, const prometheus::Labels& labels, double value);

  // One group of families per status section; each group's factory in metrics.cc defines and
  // documents its metrics. Families are registered in the order of the members below; the
  // exposition lists counters, then gauges, each kind in that order (exposition.h).
  struct PeerFamilies {  // peers[]
    GaugeFamily& state;
    GaugeFamily& established;
    GaugeFamily& stateSeconds;
    GaugeFamily& notEstablishedTooLong;
    CounterFamily& flaps;
    CounterFamily& updatesSent;
    CounterFamily& updatesReceived;
    CounterFamily& prefixesReceived;
    CounterFamily& withdrawalsReceived;
    CounterFamily& updateErrors;
    CounterFamily& endOfRibReceived;
    CounterFamily& routeRefreshReceived;
    CounterFamily& notificationsSent;
    CounterFamily& notificationsReceived;
    GaugeFamily& prefixesAdvertised;
  };
  struct BfdFamilies {  // peers[].bfd
    GaugeFamily& state;
    GaugeFamily& detectionTime;
    GaugeFamily& txInterval;
    CounterFamily& transitions;
    CounterFamily& packets;
  };
  struct VipFamilies {  // vips[]
    GaugeFamily& bound;
    GaugeFamily& owned;
    GaugeFamily& announced;
    GaugeFamily& announcedPeers;
    CounterFamily& lost;
  };
  struct HealthFamilies {  // health
    GaugeFamily& healthy;
    GaugeFamily& consecutiveSuccesses;
    GaugeFamily& consecutiveFailures;
    GaugeFamily& latency;
    CounterFamily& checks;
    CounterFamily& failures;
    CounterFamily& hardFailures;
    CounterFamily& connectResends;
    GaugeFamily& heldConnection;
    GaugeFamily& degraded;
    GaugeFamily& vipsUnbound;
  };
  struct ReturnPathFamilies {  // returnPath
    GaugeFamily& available;
    GaugeFamily& state;
    CounterFamily& echoes;
    CounterFamily& answers;
    CounterFamily& relays;
    CounterFamily& relayDrops;
    CounterFamily& witness;
    CounterFamily& silences;
  };
  struct FabricFamilies {  // fabric
    GaugeFamily& available;
    GaugeFamily& announcers;
    GaugeFamily& held;
    GaugeFamily& duplicateRouterId;
    GaugeFamily& expectedAnnouncers;
    GaugeFamily& guardMinAnnouncers;
  };
  static PeerFamilies peerFamilies(prometheus::Registry& registry);
  static BfdFamilies bfdFamilies(prometheus::Registry& registry);
  static VipFamilies vipFamilies(prometheus::Registry& registry);
  static HealthFamilies healthFamilies(prometheus::Registry& registry);
  static ReturnPathFamilies returnPathFamilies(prometheus::Registry& registry);
  struct KubeFamilies {  // kubernetes (metrics_kube.cc)
    GaugeFamily& enabled;
    GaugeFamily& connected;
    GaugeFamily& lastWrite;
    GaugeFamily& withdrawRequested;
    GaugeFamily& withdrawRefused;
    CounterFamily& statusWrites;
    CounterFamily& events;
    CounterFamily& watchErrors;
  };
  static FabricFamilies fabricFamilies(prometheus::Registry& registry);
  static KubeFamilies kubeFamilies(prometheus::Registry& registry);

  std::unique_ptr<prometheus::Registry> registry_;

  SingleSeries buildInfo_;
  SingleSeries mode_;
  GaugeFamily& withdrawn_;
  GaugeFamily& withdrawnSince_;
  GaugeFamily& ready_;
  PeerFamilies peer_;
  BfdFamilies bfd_;
  VipFamilies vip_;
  HealthFamilies health_;
  GaugeFamily& role_;
  GaugeFamily& handoffRefused_;
  GaugeFamily& handoffHolderSilent_;
  CounterFamily& handoffs_;
  GaugeFamily& listenerOpen_;
  GaugeFamily& listenerLimit_;
  CounterFamily& listenerClosed_;
  CounterFamily& listenerAcceptFailures_;
  GaugeFamily& configLastReloadSuccessful_;
  GaugeFamily& configLoadedAt_;
  CounterFamily& configReloads_;
  GaugeFamily& configPendingRestart_;
  GaugeFamily& doctorChecks_;
  ReturnPathFamilies returnPath_;
  FabricFamilies fabric_;
  KubeFamilies kube_;

  // Last status value fed into each counter series (the series are owned by their family and
  // never removed, so the pointers stay valid).
  std::map<const prometheus::Counter*, double> lastSeen_;
};

}  // namespace vipd::daemon
