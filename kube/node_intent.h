// What an operator asks of this node's vipd through its Node object (issue 41, part 4), read
// from the Node's JSON. Two things withdraw the node (through the withdraw guard, which the
// Speaker applies; this only reads the request):
// - the annotation `vipd.io/withdraw: "<reason>"` (any value, the empty string included; its
//   removal announces again);
// - the taint `node.kubernetes.io/out-of-service` (any effect): the node is declared out of
//   service, so its VIPs should not be served from it.
// `node.kubernetes.io/exclude-from-external-load-balancers` is deliberately NOT read, as label,
// annotation or taint: it steers cloud load balancers, and clusters set it on control-plane
// nodes by default (kubeadm did until 1.24), which would withdraw every vipd at once.
//
// Pure: JSON in, a value out. Only what the operator wrote is passed on, never anything the API
// would decide (the Node's conditions, Ready or not, are ignored).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "kube/error.h"

namespace vipd::kube {

inline constexpr std::string_view kWithdrawAnnotation = "vipd.io/withdraw";
inline constexpr std::string_view kOutOfServiceTaint = "node.kubernetes.io/out-of-service";
inline constexpr std::string_view kExcludeFromLoadBalancers =
    "node.kubernetes.io/exclude-from-external-load-balancers";
// The annotation's value as vipd keeps it: at most this many bytes (then "..."), control
// characters and non-ASCII as '?', since it reaches logs, status and Events.
inline constexpr size_t kMaxWithdrawReasonBytes = 256;

struct NodeIntent {
  std::optional<std::string> withdrawReason;  // the annotation, present: withdraw
  bool outOfService = false;                  // the taint, present: withdraw
  bool withdraw() const { return withdrawReason.has_value() || outOfService; }
  // One phrase for logs and status: "annotation vipd.io/withdraw: disk swap", "taint
  // node.kubernetes.io/out-of-service", both joined by "; ", or "" when nothing is asked.
  std::string describe() const;
  auto operator<=>(const NodeIntent&) const = default;
};

// The intent of `node`, a core/v1 Node whose metadata.name must be `nodeName` (an object for
// another node is a Protocol error: it must never withdraw this one). Shapes the API never sends
// (annotations not an object, a taint without a key) are Protocol errors too.
[[nodiscard]] Result<NodeIntent> readNodeIntent(const nlohmann::json& node,
                                                std::string_view nodeName);

// `text` as vipd keeps an operator's reason (kMaxWithdrawReasonBytes, printable ASCII).
[[nodiscard]] std::string printableReason(std::string_view text);

}  // namespace vipd::kube
