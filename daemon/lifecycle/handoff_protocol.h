// The handoff between two vipd instances on one node (issue 5), as pure values: what each
// instance says about itself, and whether one may take over from the other. Both sides run the
// same check before anything changes, so a mismatch leaves the running speaker speaking.
//
// Over the control socket (one JSON line each way):
//   {"command":"handoff-check", "identity":{...}}  -> {"ok":true|false, "identity":{...},
//                                                     "refusal":"..."}; changes nothing
//   {"command":"handoff-yield", "identity":{...}}  -> the holder checks again, closes its
//                                                     sessions without NOTIFICATION (graceful
//                                                     restart), releases the speaker lock, goes
//                                                     on standby, then answers {"ok":true,...}
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

#include "config/config.h"

namespace vipd::daemon {

// Versions of this exchange this build speaks. A later build that changes it adds a version and
// keeps speaking the old one for a release, so a mixed pair still hands over.
inline constexpr int kHandoffProtocolVersions[] = {1};

struct SpeakerIdentity {
  std::vector<int> protocolVersions;
  std::string mode;      // config::modeName()
  std::string routerId;  // dotted quad
  uint32_t localAsn = 0;
  std::vector<std::string> vips;  // sorted prefixes
  auto operator<=>(const SpeakerIdentity&) const = default;
};

SpeakerIdentity identityOf(const config::Config& config);
nlohmann::json toJson(const SpeakerIdentity& identity);
tl::expected<SpeakerIdentity, std::string> identityFromJson(const nlohmann::json& j);

// Why `taker` must not take over from `holder` (every mismatch, in one sentence), or nullopt.
// Only a daemonset instance takes over: from a static-pod one (day 0 to day 2), or from the
// daemonset pod it replaces (a rollout, issue 29).
std::optional<std::string> handoffRefusal(const SpeakerIdentity& holder,
                                          const SpeakerIdentity& taker);

// How an instance that has just taken the speaker lock opens its sessions, and why it speaks.
struct LockTaken {
  bool restarting = false;  // open as a graceful restart (RFC 4724: F bit set)
  std::string why;
};

// granted: the holder yielded to this instance (a takeover). yieldedMomentsAgo: the lock's yield
// marker says an instance of this router ID yielded within its restart time. wasContending: this
// instance was waiting to take over (it never spoke on this node), not on standby after a yield.
//
// A takeover reopens as a graceful restart when the yield was moments ago. So does an instance
// the lock came free under (its holder crashed or exited without handing over): if the holder
// negotiated graceful restart, the peers keep its paths as stale and drop them at our
// End-of-RIB, instead of dropping them at once and taking ours a moment later, a route change
// that resets new connections hashed across it. The successor that crashed right after a
// rollout's takeover had already taken the yield marker, so the marker alone would say no. The
// VIPs are checked before anything is announced, and a session that fails opens again with the
// F bit clear.
LockTaken lockTaken(bool granted, bool yieldedMomentsAgo, bool wasContending,
                    std::string_view holderMode);

}  // namespace vipd::daemon
