#include "kube/event.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "kube/vipd_node.h"

namespace vipd::kube {

std::string_view eventReasonName(EventReason reason) {
  switch (reason) {
    case EventReason::VipAnnounced:
      return "VipAnnounced";
    case EventReason::VipWithdrawn:
      return "VipWithdrawn";
    case EventReason::WithdrawRefused:
      return "WithdrawRefused";
    case EventReason::HeldByNeverZero:
      return "HeldByNeverZero";
    case EventReason::DuplicateRouterId:
      return "DuplicateRouterId";
  }
  return "Unknown";
}

std::string_view eventTypeName(EventReason reason) {
  return reason == EventReason::VipAnnounced || reason == EventReason::VipWithdrawn ? "Normal"
                                                                                     : "Warning";
}

std::string nodeEvent(std::string_view nodeName, EventReason reason, std::string_view message,
                      std::chrono::system_clock::time_point now, uint64_t sequence) {
  auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch());
  std::string time = rfc3339(now);
  nlohmann::json body = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata",
       {{"name", fmt::format("{}.vipd.{:x}.{}", nodeName, nanos.count(), sequence)},
        {"namespace", kEventNamespace}}},
      {"involvedObject",
       {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", nodeName}, {"uid", nodeName}}},
      {"reason", eventReasonName(reason)},
      {"message", std::string(message.substr(0, kMaxEventMessageBytes))},
      {"type", eventTypeName(reason)},
      {"source", {{"component", "vipd"}, {"host", nodeName}}},
      {"reportingComponent", "vipd.io/vipd"},
      {"reportingInstance", nodeName},
      {"firstTimestamp", time},
      {"lastTimestamp", time},
      {"count", 1}};
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string eventsPath() { return fmt::format("/api/v1/namespaces/{}/events", kEventNamespace); }

bool EventLimiter::allow(EventReason reason, Clock::time_point now) {
  auto [it, inserted] = buckets_.try_emplace(reason, Bucket{burst_, now});
  Bucket& b = it->second;
  if (!inserted && interval_.count() > 0) {
    auto refills = (now - b.refilledAt) / interval_;
    if (refills > 0) {
      b.tokens = static_cast<uint32_t>(
          std::min<int64_t>(burst_, static_cast<int64_t>(b.tokens) + refills));
      b.refilledAt += refills * interval_;
    }
  }
  if (b.tokens == 0) {
    ++dropped_;
    return false;
  }
  if (b.tokens == burst_) {
    b.refilledAt = now;  // a full bucket does not bank time
  }
  --b.tokens;
  return true;
}

}  // namespace vipd::kube
