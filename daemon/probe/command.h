// `vipd probe`: the probe matrix's two ends, with a command line of their own (main.cc passes
// every word after "probe" here, as it does for `vipd render`).
//
//   vipd probe --config FILE [--site SITE] [--log-format text|json] [--log-level ...]
//       probes the config's targets every interval until SIGTERM or SIGINT (ProbeRunner)
//   vipd probe --validate --config FILE [--site SITE]
//       checks the config and exits: 0 valid, 1 after naming every error
//   vipd probe --watch URL [--watch URL ...] [--once] [--json] [--refresh DURATION]
//       fetches each instance's /probe.json and draws the matrix in place (rows sites, columns
//       targets); --once draws one frame, --json prints the matrix as JSON; both exit 0 when
//       every instance answered, 1 otherwise
#pragma once

#include <string>
#include <vector>

namespace vipd::daemon {

[[nodiscard]] int runProbeCommand(const std::vector<std::string>& args);

}  // namespace vipd::daemon
