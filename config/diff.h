// What changed between the running config and a file re-read (SIGHUP, or a change vipd saw in
// its files), field by field, and whether each change can take effect in the running process.
// Pure: two Configs in, a list out; reload_plan.h turns it into what the daemon does.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "config/config.h"

namespace vipd::config {

enum class ChangeEffect {
  // The running daemon takes the new value without a restart (the caller must apply it).
  AppliesLive,
  // The running daemon keeps the old value until it is restarted.
  NeedsRestart,
};

struct ConfigChange {
  // The key in the YAML spelling, with peers and VIPs named by address rather than by index (a
  // reordered list is not a change): "drain.timeout", "peers[192.0.2.1].holdTime",
  // "vips[203.0.113.10/32]". A whole peer or VIP added or removed is one change at its own path.
  std::string path;
  std::string before;  // the value as the config spells it; "absent" or "unset" when there is none
  std::string after;
  ChangeEffect effect = ChangeEffect::NeedsRestart;
  auto operator<=>(const ConfigChange&) const = default;
};

// Every difference between `running` and `next`, top-level fields in config.h's order, then each
// peer and VIP in `next`'s order, then the ones removed. Empty when the two are equal.
//
// Needs a restart (issue 29): routerId and localAsn (every session's OPEN and the handoff's
// identity), allowNonLocalRouterId (checked at start), listen.*, control.*, metrics.* (sockets
// opened at start), mode and handoff.*, a VIP's interface, apiVersion and kind. Everything else
// applies live, each change touching only what it concerns (reload_plan.h says how): drain.*,
// guard.* (read when used), communities, largeCommunities, health.*, returnPath.*, a peer or VIP
// added or removed, every field of a peer (that session alone is reset), a VIP's rebind and
// createInterface. If `running != next` but no known field differs (a field added to config.h
// and not here), the result says so in one NeedsRestart entry, path "(unknown)", rather than
// being empty.
std::vector<ConfigChange> diffConfig(const Config& running, const Config& next);

// `next` with every field that needs a restart put back to its value in `running`: the config a
// running daemon can apply now. diffConfig(running, liveConfig(running, next)) is exactly the
// AppliesLive changes; diffConfig(liveConfig(running, next), next) the ones waiting for a restart.
Config liveConfig(const Config& running, const Config& next);

// Every field of `config` with its value, as diffConfig() names and spells them and in its order
// (peers and VIPs by address): what `vipd config --show` prints.
std::vector<std::pair<std::string, std::string>> listFields(const Config& config);

}  // namespace vipd::config
