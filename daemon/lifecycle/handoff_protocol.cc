#include "daemon/lifecycle/handoff_protocol.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace vipd::daemon {

SpeakerIdentity identityOf(const config::Config& config) {
  SpeakerIdentity id;
  id.protocolVersions.assign(std::begin(kHandoffProtocolVersions),
                             std::end(kHandoffProtocolVersions));
  id.mode = std::string(config::modeName(config.mode));
  id.routerId = config.routerId.toString();
  id.localAsn = config.localAsn;
  for (const auto& vip : config.vips) {
    id.vips.push_back(vip.prefix.toString());
  }
  std::sort(id.vips.begin(), id.vips.end());
  return id;
}

nlohmann::json toJson(const SpeakerIdentity& id) {
  return {{"protocolVersions", id.protocolVersions},
          {"mode", id.mode},
          {"routerId", id.routerId},
          {"localAsn", id.localAsn},
          {"vips", id.vips}};
}

tl::expected<SpeakerIdentity, std::string> identityFromJson(const nlohmann::json& j) {
  auto fail = [](std::string_view what) {
    return tl::unexpected(fmt::format("malformed handoff identity: {}", what));
  };
  if (!j.is_object()) {
    return fail("not an object");
  }
  SpeakerIdentity id;
  const auto& versions = j.value("protocolVersions", nlohmann::json());
  if (!versions.is_array() || versions.empty() || versions.size() > 16) {
    return fail("protocolVersions must be a non-empty list");
  }
  for (const auto& v : versions) {
    if (!v.is_number_integer()) {
      return fail("protocolVersions must hold integers");
    }
    id.protocolVersions.push_back(v.get<int>());
  }
  if (!j.contains("mode") || !j["mode"].is_string() || !j.contains("routerId") ||
      !j["routerId"].is_string()) {
    return fail("mode and routerId must be strings");
  }
  id.mode = j["mode"].get<std::string>();
  id.routerId = j["routerId"].get<std::string>();
  if (!j.contains("localAsn") || !j["localAsn"].is_number_unsigned() ||
      j["localAsn"].get<uint64_t>() > 0xFFFFFFFFu) {
    return fail("localAsn must be a 32-bit unsigned number");
  }
  id.localAsn = j["localAsn"].get<uint32_t>();
  const auto& vips = j.value("vips", nlohmann::json());
  if (!vips.is_array() || vips.size() > 1024) {
    return fail("vips must be a list");
  }
  for (const auto& v : vips) {
    if (!v.is_string()) {
      return fail("vips must hold strings");
    }
    id.vips.push_back(v.get<std::string>());
  }
  std::sort(id.vips.begin(), id.vips.end());
  return id;
}

std::optional<std::string> handoffRefusal(const SpeakerIdentity& holder,
                                          const SpeakerIdentity& taker) {
  std::vector<std::string> problems;
  bool common = std::any_of(holder.protocolVersions.begin(), holder.protocolVersions.end(),
                            [&](int v) {
                              return std::find(taker.protocolVersions.begin(),
                                               taker.protocolVersions.end(),
                                               v) != taker.protocolVersions.end();
                            });
  if (!common) {
    problems.push_back(fmt::format("no common handoff protocol version (running instance "
                                   "speaks {}, this one {})",
                                   fmt::join(holder.protocolVersions, ","),
                                   fmt::join(taker.protocolVersions, ",")));
  }
  // A daemonset instance takes over from the static pod (day 0 to day 2) and from the daemonset
  // pod it replaces in a rollout (issue 29); nothing takes over from a daemonset instance but
  // another one, and a static pod never takes over (it takes the node back only when the lock
  // comes free).
  if (taker.mode != "daemonset" || (holder.mode != "static-pod" && holder.mode != "daemonset")) {
    problems.push_back(fmt::format("only a daemonset instance takes over, from a static-pod or "
                                   "another daemonset instance (running: {}, taking over: {})",
                                   holder.mode, taker.mode));
  }
  if (holder.routerId != taker.routerId) {
    problems.push_back(fmt::format("router ID differs (running {}, taking over {})",
                                   holder.routerId, taker.routerId));
  }
  if (holder.localAsn != taker.localAsn) {
    problems.push_back(fmt::format("local ASN differs (running AS{}, taking over AS{})",
                                   holder.localAsn, taker.localAsn));
  }
  if (holder.vips != taker.vips) {
    problems.push_back(fmt::format("VIP set differs (running [{}], taking over [{}])",
                                   fmt::join(holder.vips, ", "), fmt::join(taker.vips, ", ")));
  }
  if (problems.empty()) {
    return std::nullopt;
  }
  return fmt::format("{}", fmt::join(problems, "; "));
}

LockTaken lockTaken(bool granted, bool yieldedMomentsAgo, bool wasContending,
                    std::string_view holderMode) {
  if (granted) {
    return {yieldedMomentsAgo, fmt::format("took over from the {} instance", holderMode)};
  }
  if (wasContending) {
    // A successor never yielded: a fresh marker here is its holder's yield, whose answer was cut
    // short (the holder exited before it arrived), not a take-back.
    return {true, yieldedMomentsAgo ? "took over: the instance that held the speaker lock "
                                      "yielded, but its answer never arrived"
                                    : "the instance that held the speaker lock is gone"};
  }
  if (yieldedMomentsAgo) {
    return {true, "took the node back: the instance it yielded to never took the lock"};
  }
  return {true, "took the node back: the instance that held the speaker lock is gone"};
}

}  // namespace vipd::daemon
