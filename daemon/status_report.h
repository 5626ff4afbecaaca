// What an operator sees of a running speaker: the status document (`vipctl status --json`, and
// the source of every metric), the readiness reasons (/readyz), and the warning about sessions
// stuck outside Established. Reads the speaker's parts through const references and changes none
// of them; the only state it owns is when it last warned about each peer.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bgp/ip_address.h"
#include "config/config.h"
#include "daemon/base/logger.h"
#include "daemon/announce/announcer.h"
#include "daemon/bfd/service.h"
#include "daemon/health/checker.h"
#include "daemon/lifecycle/drainer.h"
#include "daemon/lifecycle/handoff.h"
#include "daemon/returnpath/checker.h"
#include "daemon/session/peer_session.h"
#include "daemon/vip/binder.h"
#include "policy/fabric_view.h"

namespace vipd::daemon {

// One readiness check, as /readyz?verbose lists it: a name ("peer 192.0.2.1", "vip
// 203.0.113.10/32") and, when it fails, the sentence that says why.
struct ReadinessCheck {
  std::string name;
  std::optional<std::string> failure;
};

// What the Announcer decided and the report only reads (intent()): what should be announced now,
// and whether the process is stopping; the speaker's own readiness checks (the return-path
// check's and the fabric's, while it speaks), appended after the report's, and why a VIP that is
// bound is held back (shown as the VIP's reason while no peer has it).
struct SpeakerIntent {
  std::set<bgp::Prefix> announcements;
  bool shuttingDown = false;
  std::vector<ReadinessCheck> speakerChecks;
  std::map<bgp::Prefix, std::string> withheld;
  // VIPs the never-zero rule keeps announced, degraded, instead of withdrawing them: why.
  std::map<bgp::Prefix, std::string> held;
};

class StatusReport {
 public:
  StatusReport(const config::Config& config,
               const std::vector<std::unique_ptr<PeerSession>>& peers, const Announcer& announcer,
               const HealthChecker& health, const BfdService& bfd, const Drainer& drainer,
               const Handoff& handoff, const ReturnPathChecker& returnPath);

  // The Announcer's kept decision as status and /readyz read it (nothing is decided again).
  SpeakerIntent intent(bool shuttingDown) const;
  // Status `fabric`: each VIP's view (fabricVipJson) with what was decided for it, the
  // duplicate router IDs, and the guard's settings.
  nlohmann::json fabricStatus() const;
  nlohmann::json status(const SpeakerIntent& intent) const;
  // Every check, passing or not, in a fixed order.
  std::vector<ReadinessCheck> readinessChecks(const SpeakerIntent& intent) const;
  // Empty when ready; otherwise one sentence per failing check, in the same order.
  std::vector<std::string> notReadyReasons(const SpeakerIntent& intent) const;
  // Logs, at most once a minute per peer, each session that has not been Established for more
  // than kStuckHoldTimes hold times. Returns how long until it next has something to check
  // (a session becoming stuck, or a stuck one's next warning), at least one second: the caller
  // sleeps that long instead of polling every second. A reload that adds peers must call it
  // again (a new session may become due sooner).
  [[nodiscard]] std::chrono::steady_clock::duration warnAboutStuckPeers(const Logger& log);
  // The shortest sleep warnAboutStuckPeers returns, and the Speaker's first one.
  static constexpr std::chrono::seconds kHousekeepingInterval{1};

 private:
  nlohmann::json peersJson() const;
  nlohmann::json vipsJson(const SpeakerIntent& intent) const;
  void addPeerChecks(std::vector<ReadinessCheck>& checks, bool shuttingDown) const;
  void addVipChecks(std::vector<ReadinessCheck>& checks, const SpeakerIntent& intent) const;
  const PeerSession* find(const bgp::IpAddress& address) const;

  const config::Config& config_;
  const std::vector<std::unique_ptr<PeerSession>>& peers_;
  const Announcer& announcer_;
  const VipBinder& binder_;
  const HealthChecker& health_;
  const BfdService& bfd_;
  const Drainer& drainer_;
  const Handoff& handoff_;
  const ReturnPathChecker& returnPath_;
  std::map<bgp::IpAddress, std::chrono::steady_clock::time_point> lastStuckWarning_;
};

// One VIP's fabric view as `vipctl status --json` shows it under fabric.vips: the count, each
// announcer counted and the sessions that sent it, and what each session said (issue 40: which
// session said what, and why a session is not used).
nlohmann::json fabricVipJson(const policy::VipView& view);

// The apiserver's verbose /readyz format: "[+]name ok" or "[-]name failed: why" per check, then
// "readyz check passed" or "readyz check failed".
std::string verboseReadiness(const std::vector<ReadinessCheck>& checks);

}  // namespace vipd::daemon
