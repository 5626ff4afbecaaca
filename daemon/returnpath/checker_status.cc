// ReturnPathChecker (checker.h), what it reports: whether a VIP is held back, why, the readiness
// check and the status document. Reads the verdicts; changes nothing.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/duration.h"
#include "daemon/returnpath/checker.h"

namespace vipd::daemon {

std::string ReturnPathChecker::describe(const std::set<bgp::IpAddress>& addresses) {
  std::vector<std::string> out;
  for (const auto& a : addresses) {
    out.push_back(a.toString());
  }
  return fmt::format("{}", fmt::join(out, ", "));
}

bool ReturnPathChecker::blocks(const bgp::Prefix& vip) const {
  if (settings_.mode != config::ReturnPath::Mode::Enforce) {
    return false;
  }
  auto it = checks_.find(vip);
  return it != checks_.end() && it->second.judge.blocks();
}

std::string ReturnPathChecker::reasonFor(const bgp::Prefix& vip, const VipCheck& check) const {
  (void)vip;
  const auto state = check.judge.state();
  if (state == ReturnPathState::Broken) {
    return fmt::format("VIP-sourced packets get no answer (anti-spoof filter?): {}; {}",
                       check.detail,
                       settings_.mode == config::ReturnPath::Mode::Enforce
                           ? fmt::format("withdrawn, retried in {}",
                                         config::formatDuration(
                                             settings_.interval *
                                             check.judge.roundsUntilRetry()))
                           : std::string("not withdrawn (returnPath.mode warn)"));
  }
  return check.detail.empty() ? std::string("no round finished yet") : check.detail;
}

std::optional<std::string> ReturnPathChecker::readinessFailure() const {
  if (!running_) {
    return std::nullopt;
  }
  if (unavailable_) {
    return fmt::format("return-path check unavailable: {}", *unavailable_);
  }
  std::vector<std::string> broken;
  for (const auto& [vip, check] : checks_) {
    if (check.judge.state() == ReturnPathState::Broken) {
      broken.push_back(fmt::format("vip {}: {}", vip.toString(), reasonFor(vip, check)));
    }
  }
  if (broken.empty()) {
    return std::nullopt;
  }
  return fmt::format("{}", fmt::join(broken, "; "));
}

nlohmann::json ReturnPathChecker::status() const {
  nlohmann::json out{{"mode", config::returnPathModeName(settings_.mode)},
                     {"running", running_},
                     {"available", running_ && !unavailable_}};
  if (settings_.mode == config::ReturnPath::Mode::Off) {
    return out;
  }
  if (unavailable_) {
    out["unavailableReason"] = *unavailable_;
  }
  out["relayPort"] = settings_.relayPort;
  nlohmann::json networks = nlohmann::json::array();
  for (const auto& n : relayPolicy_.node().networks) {
    networks.push_back(n.toString());
  }
  out["relayNetworks"] = std::move(networks);
  nlohmann::json targets = nlohmann::json::array();
  for (const auto& t : this->targets()) {
    targets.push_back({{"address", t.toString()},
                       {"configured", !settings_.targets.empty()},
                       {"trusted", trusted(t)}});
  }
  out["targets"] = std::move(targets);
  nlohmann::json vips = nlohmann::json::object();
  for (const auto& [vip, check] : checks_) {
    vips[vip.toString()] = {
        {"state", returnPathStateName(check.judge.state())},
        {"withdrawn", blocks(vip)},
        {"lastRound", check.judge.judged() ? roundVerdictName(check.judge.lastVerdict())
                                           : "pending"},
        {"reason", reasonFor(vip, check)},
        {"consecutiveUnanswered", check.judge.consecutiveUnanswered()},
        {"consecutiveAnswered", check.judge.consecutiveAnswered()},
        {"rounds", check.judge.rounds()},
        {"lastDelivery", check.lastDirect           ? std::string("direct")
                         : check.lastRelayers.empty() ? std::string("none yet")
                                                      : "relayed by " + describe(check.lastRelayers)}};
  }
  out["vips"] = std::move(vips);
  uint64_t dropped = 0;
  nlohmann::json byReason = nlohmann::json::object();
  for (auto reason : kRelayDrops) {
    auto it = counters_.relaysDropped.find(reason);
    const uint64_t n = it == counters_.relaysDropped.end() ? 0 : it->second;
    byReason[std::string(relayDropName(reason))] = n;
    dropped += n;
  }
  // The status keys say "Probes", as they did before the echoes were named so: scripts and the
  // metrics (vipd_return_path_probes_total) read them.
  out["counters"] = {{"rounds", counters_.rounds},
                     {"nodeProbes", counters_.nodeEchoes},
                     {"nodeAnswered", counters_.nodeAnswered},
                     {"vipProbes", counters_.vipEchoes},
                     {"vipAnswered", counters_.vipAnswered},
                     {"vipAnsweredRelayed", counters_.vipAnsweredRelayed},
                     {"relaysSent", counters_.relaysSent},
                     {"relaysDropped", dropped},
                     {"relaysDroppedByReason", std::move(byReason)},
                     {"malformedReplies", counters_.malformedReplies},
                     {"witnessQueriesSent", counters_.witnessQueriesSent},
                     {"witnessAnswersReceived", counters_.witnessAnswersReceived},
                     {"witnessQueriesAnswered", counters_.witnessQueriesAnswered},
                     {"witnessQueriesRefused", counters_.witnessQueriesRefused},
                     {"silencesUncounted", counters_.silencesExplained},
                     {"relayErrors", counters_.relayErrors},
                     {"sendErrors", counters_.sendErrors}};
  return out;
}

}  // namespace vipd::daemon
