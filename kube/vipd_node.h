// The VipdNode object (CRD vipdnodes.vipd.io, cluster-scoped, one per node, named after it;
// manifests/kube/crd.yaml) and its status, as JSON (issue 41, part 2). This node's vipd is the
// only writer of its object's status, through the status subresource with a JSON merge patch
// (RFC 7396): every list in the patch replaces the stored one whole, so the patch is the status,
// not a difference, and a write that raced an older one cannot leave a mix of both.
//
// Pure: typed values in, JSON text out. The keys come out sorted, so the same status is the same
// bytes (unit-tested byte for byte, and compared to skip writes that change nothing).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vipd::kube {

inline constexpr std::string_view kVipdGroup = "vipd.io";
inline constexpr std::string_view kVipdVersion = "v1alpha1";
inline constexpr std::string_view kVipdNodeKind = "VipdNode";
inline constexpr std::string_view kVipdNodeResource = "vipdnodes";

// The condition types of a VipdNode's status.
inline constexpr std::string_view kConditionAnnouncing = "Announcing";
inline constexpr std::string_view kConditionFabricViewAvailable = "FabricViewAvailable";
inline constexpr std::string_view kConditionHeldByNeverZero = "HeldByNeverZero";
inline constexpr std::string_view kConditionDoctorFailing = "DoctorFailing";

enum class VipState { Normal, Degraded, Withdrawn };
std::string_view vipStateName(VipState state);  // "normal", "degraded", "withdrawn"

struct VipStatus {
  std::string address;  // "192.0.2.10"
  bool announced = false;
  VipState state = VipState::Withdrawn;
  std::string reason;         // why it is degraded or withdrawn; "" when normal
  uint32_t fabricAnnouncers = 0;  // nodes the fabric's view shows announcing it, this one included
  auto operator<=>(const VipStatus&) const = default;
};

struct PeerStatus {
  std::string address;
  std::string state;  // "Established", "Active", ... as vipctl status says
  std::string since;  // RFC 3339, when it entered that state
  auto operator<=>(const PeerStatus&) const = default;
};

enum class ConditionStatus { True, False, Unknown };

struct Condition {
  std::string type;  // one of the kCondition* above
  ConditionStatus status = ConditionStatus::Unknown;
  std::string reason;   // CamelCase, as Kubernetes conditions have it
  std::string message;  // one sentence
  std::string lastTransitionTime;  // RFC 3339; withTransitionTimes() keeps it across writes
  auto operator<=>(const Condition&) const = default;
};

struct VipdNodeStatus {
  std::vector<VipStatus> vips;
  std::vector<PeerStatus> peers;
  std::string version;    // vipd's
  std::string updatedAt;  // RFC 3339, when this status was built
  std::vector<Condition> conditions;
  auto operator<=>(const VipdNodeStatus&) const = default;
};

// "2026-12-07T20:42:47Z": RFC 3339 in UTC with whole seconds, as Kubernetes writes times.
[[nodiscard]] std::string rfc3339(std::chrono::system_clock::time_point time);

// `next` with each condition's lastTransitionTime taken from the same type in `previous` when its
// status did not change, and `now` when it did (or it is new).
[[nodiscard]] std::vector<Condition> withTransitionTimes(const std::vector<Condition>& previous,
                                                         std::vector<Condition> next,
                                                         std::string_view now);

// The body of PATCH /apis/vipd.io/v1alpha1/vipdnodes/NAME/status, Content-Type
// application/merge-patch+json: {"status":{...}}.
[[nodiscard]] std::string statusMergePatch(const VipdNodeStatus& status);

// The body of POST /apis/vipd.io/v1alpha1/vipdnodes that creates the node's object (without
// status: the status subresource ignores a status given at creation).
[[nodiscard]] std::string vipdNodeObject(std::string_view nodeName);

// Request targets (paths with the query, relative to the server's base path).
[[nodiscard]] std::string vipdNodesPath();
[[nodiscard]] std::string vipdNodeStatusPath(std::string_view nodeName);

}  // namespace vipd::kube
