#include "daemon/kubelink/node_report.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace vipd::daemon {
namespace {

using json = nlohmann::json;
using kube::Condition;
using kube::ConditionStatus;

const json& field(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) {
    return kNull;
  }
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

std::string text(const json& object, const char* key) {
  const json& v = field(object, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}

bool flag(const json& object, const char* key) {
  const json& v = field(object, key);
  return v.is_boolean() && v.get<bool>();
}

std::vector<kube::VipStatus> vipsOf(const json& status) {
  std::vector<kube::VipStatus> out;
  const json& fabric = field(field(status, "fabric"), "vips");
  const json& vips = field(status, "vips");
  if (!vips.is_array()) {
    return out;
  }
  for (const auto& vip : vips) {
    kube::VipStatus one;
    one.address = text(vip, "address");
    one.announced = flag(vip, "announced");
    const json& view = field(fabric, one.address.c_str());
    const bool degraded = text(view, "announce") == "degraded";
    one.state = !one.announced ? kube::VipState::Withdrawn
                : degraded     ? kube::VipState::Degraded
                               : kube::VipState::Normal;
    if (one.state != kube::VipState::Normal) {
      one.reason = text(vip, "reason");
      if (one.reason.empty() && degraded) {
        one.reason = flag(view, "heldByNeverZero")
                         ? "held announced, degraded, by the never-zero rule"
                         : "announced degraded (the health check fails)";
      }
    }
    const json& count = field(view, "count");
    if (flag(view, "available") && count.is_number_integer() && count.get<int64_t>() >= 0) {
      one.fabricAnnouncers = count.get<uint32_t>();
    }
    out.push_back(std::move(one));
  }
  return out;
}

std::vector<kube::PeerStatus> peersOf(const json& status,
                                      std::chrono::system_clock::time_point now) {
  std::vector<kube::PeerStatus> out;
  const json& peers = field(status, "peers");
  if (!peers.is_array()) {
    return out;
  }
  for (const auto& peer : peers) {
    kube::PeerStatus one{text(peer, "address"), text(peer, "state"), ""};
    const json& seconds = field(peer, "stateSeconds");
    if (seconds.is_number()) {
      // Whole seconds, so the same state gives the same text report after report.
      one.since = kube::rfc3339(now - std::chrono::seconds(std::llround(seconds.get<double>())));
    }
    out.push_back(std::move(one));
  }
  return out;
}

bool hasSource(const json& withdrawn, std::string_view source) {
  const json& sources = field(withdrawn, "sources");
  if (!sources.is_array()) {
    return false;
  }
  for (const auto& s : sources) {
    if (s.is_string() && s.get<std::string>() == source) {
      return true;
    }
  }
  return false;
}

// Announcing: True while any VIP is announced. Its reason is the one a person acts on first.
Condition announcing(const json& status, const std::vector<kube::VipStatus>& vips,
                     const std::optional<std::string>& refusal) {
  Condition c{std::string(kube::kConditionAnnouncing), ConditionStatus::False, "", "", ""};
  std::vector<std::string> announced;
  std::string firstReason;
  bool degraded = false;
  for (const auto& vip : vips) {
    if (vip.announced) {
      announced.push_back(vip.address);
      degraded = degraded || vip.state == kube::VipState::Degraded;
    } else if (firstReason.empty()) {
      firstReason = vip.reason;
    }
  }
  const json& withdrawn = field(status, "withdrawn");
  if (!announced.empty()) {
    c.status = ConditionStatus::True;
    c.reason = refusal ? "WithdrawRefused" : degraded ? "Degraded" : "Announced";
    c.message = refusal ? fmt::format("the Node asks for a withdrawal, refused: {}", *refusal)
                        : fmt::format("announcing {}", fmt::join(announced, ", "));
    return c;
  }
  c.message = firstReason.empty() ? "no VIP is announced" : firstReason;
  if (text(status, "role") != "active" && !text(status, "role").empty()) {
    c.reason = "NotSpeaking";
  } else if (flag(status, "draining")) {
    c.reason = "Draining";
  } else if (flag(withdrawn, "active")) {
    c.reason = hasSource(withdrawn, "kubernetes") ? "WithdrawnByNode" : "WithdrawnByVipctl";
    c.message = fmt::format("withdrawn: {}", text(withdrawn, "reason"));
  } else if (!flag(field(status, "health"), "healthy")) {
    c.reason = "HealthGateClosed";
  } else {
    c.reason = "NotAnnounced";
  }
  return c;
}

std::vector<Condition> conditionsOf(const json& status, const std::vector<kube::VipStatus>& vips,
                                    const std::optional<std::string>& refusal) {
  std::vector<Condition> out{announcing(status, vips, refusal)};
  const json& fabric = field(field(status, "fabric"), "vips");
  std::vector<std::string> available, unavailable, held;
  std::string whyUnavailable;
  if (fabric.is_object()) {
    for (const auto& [vip, view] : fabric.items()) {
      (flag(view, "available") ? available : unavailable).push_back(vip);
      if (!flag(view, "available") && whyUnavailable.empty()) {
        whyUnavailable = text(view, "reason");
      }
      if (flag(view, "heldByNeverZero")) {
        held.push_back(vip);
      }
    }
  }
  Condition view{std::string(kube::kConditionFabricViewAvailable), ConditionStatus::Unknown,
                 "NotSpeaking", "this instance does not speak BGP", ""};
  if (!available.empty() || !unavailable.empty()) {
    view.status = unavailable.empty() ? ConditionStatus::True : ConditionStatus::False;
    view.reason = unavailable.empty() ? "PathsSentBack" : "NoPathsSentBack";
    view.message = unavailable.empty()
                       ? fmt::format("the fabric's paths for {} are seen", fmt::join(available, ", "))
                       : fmt::format("no fabric view for {}: {}", fmt::join(unavailable, ", "),
                                     whyUnavailable);
  }
  out.push_back(view);
  out.push_back(Condition{std::string(kube::kConditionHeldByNeverZero),
                          held.empty() ? ConditionStatus::False : ConditionStatus::True,
                          held.empty() ? "NotHeld" : "LastAnnouncer",
                          held.empty() ? "no withdrawal is held back"
                                       : fmt::format("{} kept announced, degraded: no other node "
                                                     "serves it", fmt::join(held, ", ")),
                          ""});
  const json& doctor = field(status, "doctor");
  const json& fails = field(field(doctor, "counts"), "fail");
  Condition doc{std::string(kube::kConditionDoctorFailing), ConditionStatus::Unknown, "NotRun",
                "vipd doctor's checks have not finished yet", ""};
  if (fails.is_number_integer()) {
    std::vector<std::string> failing;
    const json& checks = field(doctor, "checks");
    if (checks.is_array()) {
      for (const auto& check : checks) {
        if (text(check, "result") == "fail") {
          failing.push_back(text(check, "name"));
        }
      }
    }
    doc.status = failing.empty() ? ConditionStatus::False : ConditionStatus::True;
    doc.reason = failing.empty() ? "ChecksPass" : "ChecksFail";
    doc.message = failing.empty() ? "no check fails"
                                  : fmt::format("failing: {}; `vipd doctor` says how to fix each",
                                                fmt::join(failing, ", "));
  }
  out.push_back(doc);
  return out;
}

}  // namespace

NodeReport nodeReport(const json& speakerStatus, const std::optional<std::string>& refusal,
                      std::chrono::system_clock::time_point now) {
  NodeReport out;
  auto& s = out.status;
  s.vips = vipsOf(speakerStatus);
  s.peers = peersOf(speakerStatus, now);
  s.version = text(speakerStatus, "version");
  s.updatedAt = kube::rfc3339(now);
  s.conditions = conditionsOf(speakerStatus, s.vips, refusal);
  const json& confirmed = field(field(speakerStatus, "fabric"), "duplicateRouterIdConfirmed");
  if (confirmed.is_array()) {
    for (const auto& id : confirmed) {
      if (id.is_string()) {
        out.duplicateRouterIds.insert(id.get<std::string>());
      }
    }
  }
  return out;
}

std::vector<NodeEvent> nodeEvents(const NodeReport* before, const NodeReport& after) {
  std::vector<NodeEvent> out;
  for (const auto& vip : after.status.vips) {
    bool was = false;
    if (before != nullptr) {
      for (const auto& old : before->status.vips) {
        if (old.address == vip.address) {
          was = old.announced;
        }
      }
    }
    if (vip.announced && !was) {
      out.push_back({kube::EventReason::VipAnnounced,
                     fmt::format("vipd announces {} from this node", vip.address)});
    } else if (!vip.announced && was) {
      out.push_back({kube::EventReason::VipWithdrawn,
                     fmt::format("vipd withdrew {} from this node: {}", vip.address,
                                 vip.reason.empty() ? "no reason given" : vip.reason)});
    }
  }
  auto heldNow = [](const NodeReport& r) -> const Condition* {
    for (const auto& c : r.status.conditions) {
      if (c.type == kube::kConditionHeldByNeverZero && c.status == ConditionStatus::True) {
        return &c;
      }
    }
    return nullptr;
  };
  if (const Condition* held = heldNow(after); held && !(before && heldNow(*before))) {
    out.push_back({kube::EventReason::HeldByNeverZero,
                   fmt::format("{}; it is withdrawn once another node serves it", held->message)});
  }
  for (const auto& id : after.duplicateRouterIds) {
    if (before == nullptr || before->duplicateRouterIds.count(id) == 0) {
      out.push_back({kube::EventReason::DuplicateRouterId,
                     fmt::format("the fabric holds a path from another node with this node's "
                                 "router ID ({}): give each node its own routerId (a cloned "
                                 "node keeps the old one's)", id)});
    }
  }
  return out;
}

}  // namespace vipd::daemon
