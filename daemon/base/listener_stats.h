// What an operator needs to see of each listener (control socket, metrics, BGP): how many clients
// it holds, its cap, and how often the cap, the idle timeout or accept() turned one away. Shown in
// `vipctl status` ("listeners") and as vipd_listener_* metrics.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

namespace vipd::daemon {

struct ListenerStats {
  size_t open = 0;              // clients held now
  size_t limit = 0;             // at most this many at once (0: not capped)
  uint64_t limitHits = 0;       // clients closed because the cap was reached
  uint64_t idleTimeouts = 0;    // clients closed for sending no request in time
  uint64_t acceptFailures = 0;  // accept() errors (out of descriptors, typically)
  uint64_t refused = 0;         // clients not allowed (not a peer, not in control.group)

  nlohmann::json toJson() const {
    return {{"open", open},
            {"limit", limit},
            {"limitHits", limitHits},
            {"idleTimeouts", idleTimeouts},
            {"acceptFailures", acceptFailures},
            {"refused", refused}};
  }
};

// The cap for each client-facing listener (control socket, metrics), so that clients hitting
// every cap at once still leave descriptors for the sessions, BFD, netlink, the health check and
// the files vipd writes: `reserved` descriptors stay free, the rest is shared by `listeners`,
// and no cap exceeds `preferred`. At least 1, so a listener always answers someone.
inline size_t clientLimitFor(uint64_t descriptorLimit, size_t listeners, size_t reserved,
                             size_t preferred) {
  if (descriptorLimit <= reserved || listeners == 0) {
    return 1;
  }
  const uint64_t share = (descriptorLimit - reserved) / listeners;
  return static_cast<size_t>(std::clamp<uint64_t>(share, 1, preferred));
}

}  // namespace vipd::daemon
