// What Kubernetes is told about this node (issue 41, parts 2 and 3), read from the status
// document `vipctl status` prints (StatusReport's, with the Speaker's additions): the VipdNode's
// status, and the Events that the change from one report to the next deserves. Pure: JSON in,
// values out; the time is passed in. Reading the status document, not the rooms, keeps one
// account of the node: what kubectl shows is what vipctl shows.
#pragma once

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/event.h"
#include "kube/vipd_node.h"

namespace vipd::daemon {

struct NodeReport {
  kube::VipdNodeStatus status;
  // Router IDs the fabric confirms another node announces with (fabric.duplicateRouterIdConfirmed).
  std::set<std::string> duplicateRouterIds;
};

// `speakerStatus` as the VipdNode's status at `now`. `refusal`: the Node asks for a withdrawal
// that the withdraw guard refuses (the Announcing condition says so, reason WithdrawRefused).
// Missing or mistyped fields leave the defaults (a VIP not announced, a condition Unknown).
[[nodiscard]] NodeReport nodeReport(const nlohmann::json& speakerStatus,
                                    const std::optional<std::string>& refusal,
                                    std::chrono::system_clock::time_point now);

struct NodeEvent {
  kube::EventReason reason;
  std::string message;
  bool operator==(const NodeEvent&) const = default;
};

// The Events the step from `before` (nothing: vipd just started) to `after` deserves:
// VipAnnounced and VipWithdrawn when a VIP's `announced` flips (at start only VipAnnounced),
// HeldByNeverZero when that condition turns True, DuplicateRouterId for each router ID newly
// confirmed. WithdrawRefused is not among them: the steering sends it when it refuses.
[[nodiscard]] std::vector<NodeEvent> nodeEvents(const NodeReport* before, const NodeReport& after);

}  // namespace vipd::daemon
