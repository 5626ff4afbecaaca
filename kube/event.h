// Events on this node's Node object (issue 41, part 3): what `kubectl describe node` and
// `kubectl get events` show of vipd's decisions, and a limiter so a flapping VIP cannot flood
// the API or etcd. Pure: typed values in, JSON text and yes/no out; time passed in.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace vipd::kube {

enum class EventReason { VipAnnounced, VipWithdrawn, WithdrawRefused, HeldByNeverZero,
                         DuplicateRouterId };
std::string_view eventReasonName(EventReason reason);  // "VipAnnounced", ...
// Normal for VipAnnounced and VipWithdrawn, Warning for the rest.
std::string_view eventTypeName(EventReason reason);

// An Event's message is cut to this many bytes (the API refuses longer ones in events.k8s.io).
inline constexpr size_t kMaxEventMessageBytes = 1024;
// Node events live in this namespace, as the kubelet's do (a Node has none of its own).
inline constexpr std::string_view kEventNamespace = "default";

// The body of POST /api/v1/namespaces/default/events: a core/v1 Event about Node `nodeName`
// (involvedObject uid = the node's name, as the kubelet sets it, so `kubectl describe node`
// finds it), from component vipd on that host, first and last seen at `now`, count 1. `sequence`
// makes the name unique: "<node>.vipd.<now in ns, hex>.<sequence>".
[[nodiscard]] std::string nodeEvent(std::string_view nodeName, EventReason reason,
                                    std::string_view message,
                                    std::chrono::system_clock::time_point now, uint64_t sequence);
[[nodiscard]] std::string eventsPath();

// Per reason, a token bucket: `burst` events at once, then one per `interval`. Dropped events
// are counted (a metric) and never queued: an Event says what just happened, and the
// VipdNode's status says what holds now.
class EventLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  explicit EventLimiter(uint32_t burst = 5,
                        std::chrono::milliseconds interval = std::chrono::milliseconds{60000})
      : burst_(burst), interval_(interval) {}
  // Takes a token for `reason` at `now`: true when the event may be sent.
  [[nodiscard]] bool allow(EventReason reason, Clock::time_point now);
  uint64_t dropped() const { return dropped_; }

 private:
  struct Bucket {
    uint32_t tokens = 0;
    Clock::time_point refilledAt;
  };
  uint32_t burst_;
  std::chrono::milliseconds interval_;
  std::map<EventReason, Bucket> buckets_;
  uint64_t dropped_ = 0;
};

}  // namespace vipd::kube
