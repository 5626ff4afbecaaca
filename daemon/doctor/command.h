// `vipd doctor`: checks this node as a whole before vipd announces, and at any time after
// (issue 30): one line per check, ok, warn or fail, what was found and what to do.
//
//   vipd doctor --config FILE [--node-config FILE] [--router-id ADDRESS]
//               [--manifests-dir DIR] [--json]
//
// Exit codes: 0 nothing fails (warnings allowed), 1 something fails (a config that does not load
// or validate included: its errors are the `config` check's), 2 a usage error or a config file
// that cannot be read at all. main.cc parses the command line (the daemon's --config,
// --node-config and --router-id) and calls runDoctorCommand().
#pragma once

#include <optional>
#include <string>

#include "config/layers.h"

namespace vipd::daemon {

struct DoctorCommandOptions {
  config::ConfigSources sources;
  std::optional<std::string> manifestsDir;
  bool json = false;
};

inline constexpr int kDoctorExitUnreadable = 2;

[[nodiscard]] int runDoctorCommand(const DoctorCommandOptions& options);

}  // namespace vipd::daemon
