#include "daemon/doctor/command.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include "daemon/base/printable.h"
#include "daemon/doctor/report.h"
#include "daemon/doctor/fact_gatherer.h"
#include "doctor/checks.h"

namespace vipd::daemon {
namespace {

// The floor of the certificate's timeout: an operator's one-off run may wait a little longer
// than the health check's interval-sized timeout.
constexpr std::chrono::milliseconds kMinCertificateTimeout{2000};

// Why `path` cannot be read at all, or nullopt. Opened without blocking, as the loader reads
// it; what the file says is the config check's to judge.
std::optional<std::string> unreadable(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    return std::string(std::strerror(errno));
  }
  ::close(fd);
  return std::nullopt;
}

}  // namespace

int runDoctorCommand(const DoctorCommandOptions& options) {
  const auto& sources = options.sources;
  std::vector<std::string> files{sources.configPath};
  if (sources.nodeConfigPath) {
    files.push_back(*sources.nodeConfigPath);
  }
  for (const auto& file : files) {
    if (auto why = unreadable(file)) {
      fmt::print(stderr, "vipd doctor: cannot read {}: {}\n", printable(file), *why);
      return kDoctorExitUnreadable;
    }
  }
  const std::string names = sources.nodeConfigPath
                                ? fmt::format("{} + {}", sources.configPath, *sources.nodeConfigPath)
                                : sources.configPath;
  std::vector<doctor::Check> checks;
  auto loaded = config::loadConfig(sources);
  if (!loaded) {
    checks.push_back(doctor::configRefused(names, loaded.error()));
  } else {
    GatherOptions gather;
    gather.config = {names, sources.nodeConfigPath.has_value(), loaded->origins};
    gather.manifestsDir = options.manifestsDir;
    gather.certificateTimeout = std::max(loaded->config.health.timeout, kMinCertificateTimeout);
    checks = doctor::judge(loaded->config, gatherFacts(loaded->config, gather));
  }
  if (options.json) {
    fmt::print("{}\n", reportJson(checks).dump(2));
  } else {
    for (const auto& check : checks) {
      fmt::print("{}\n", printableLine(check));
    }
    fmt::print("vipd doctor: {}\n", doctor::formatCounts(doctor::count(checks)));
  }
  return doctor::exitCode(checks);
}

}  // namespace vipd::daemon
