// What changed between the running config and a file re-read on SIGHUP, field by field, and
// whether each change can take effect in the running process. Pure: two Configs in, a list out;
// the daemon applies the live ones and logs every entry.
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
// Applies live: drain.gracefulShutdownTime, drain.timeout and drain.unbindDelay (the Drainer
// reads them when a drain starts; a drain in progress keeps the values it started with).
// Everything else needs a restart: sessions, listeners, the health checker, BFD and the VIP keeper
// copy their settings when they start. If `running != next` but no known field differs (a field
// added to config.h and not here), the result says so in one NeedsRestart entry, path "(unknown)",
// rather than being empty.
std::vector<ConfigChange> diffConfig(const Config& running, const Config& next);

// Every field of `config` with its value, as diffConfig() names and spells them and in its order
// (peers and VIPs by address): what `vipd config --show` prints.
std::vector<std::pair<std::string, std::string>> listFields(const Config& config);

}  // namespace vipd::config
