#include "kube/vipd_node.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace vipd::kube {
namespace {

std::string_view conditionStatusName(ConditionStatus status) {
  switch (status) {
    case ConditionStatus::True:
      return "True";
    case ConditionStatus::False:
      return "False";
    case ConditionStatus::Unknown:
      return "Unknown";
  }
  return "Unknown";
}

}  // namespace

std::string_view vipStateName(VipState state) {
  switch (state) {
    case VipState::Normal:
      return "normal";
    case VipState::Degraded:
      return "degraded";
    case VipState::Withdrawn:
      return "withdrawn";
  }
  return "withdrawn";
}

std::string rfc3339(std::chrono::system_clock::time_point time) {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}",
                     std::chrono::time_point_cast<std::chrono::seconds>(time));
}

std::vector<Condition> withTransitionTimes(const std::vector<Condition>& previous,
                                           std::vector<Condition> next, std::string_view now) {
  for (Condition& c : next) {
    c.lastTransitionTime = std::string(now);
    for (const Condition& p : previous) {
      if (p.type == c.type && p.status == c.status && !p.lastTransitionTime.empty()) {
        c.lastTransitionTime = p.lastTransitionTime;
      }
    }
  }
  return next;
}

std::string statusMergePatch(const VipdNodeStatus& status) {
  nlohmann::json vips = nlohmann::json::array();
  for (const VipStatus& v : status.vips) {
    vips.push_back({{"address", v.address},
                    {"announced", v.announced},
                    {"state", vipStateName(v.state)},
                    {"reason", v.reason},
                    {"fabricAnnouncers", v.fabricAnnouncers}});
  }
  nlohmann::json peers = nlohmann::json::array();
  for (const PeerStatus& p : status.peers) {
    peers.push_back({{"address", p.address}, {"state", p.state}, {"since", p.since}});
  }
  nlohmann::json conditions = nlohmann::json::array();
  for (const Condition& c : status.conditions) {
    conditions.push_back({{"type", c.type},
                          {"status", conditionStatusName(c.status)},
                          {"reason", c.reason},
                          {"message", c.message},
                          {"lastTransitionTime", c.lastTransitionTime}});
  }
  nlohmann::json body = {{"status",
                          {{"vips", std::move(vips)},
                           {"peers", std::move(peers)},
                           {"version", status.version},
                           {"updatedAt", status.updatedAt},
                           {"conditions", std::move(conditions)}}}};
  // replace: a reason carrying invalid UTF-8 cannot make dump() throw.
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string vipdNodeObject(std::string_view nodeName) {
  nlohmann::json body = {{"apiVersion", fmt::format("{}/{}", kVipdGroup, kVipdVersion)},
                         {"kind", kVipdNodeKind},
                         {"metadata", {{"name", nodeName}}}};
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string vipdNodesPath() {
  return fmt::format("/apis/{}/{}/{}", kVipdGroup, kVipdVersion, kVipdNodeResource);
}

std::string vipdNodeStatusPath(std::string_view nodeName) {
  return fmt::format("{}/{}/status", vipdNodesPath(), nodeName);
}

}  // namespace vipd::kube
