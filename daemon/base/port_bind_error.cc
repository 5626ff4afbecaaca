#include "daemon/base/port_bind_error.h"

#include <cerrno>

#include <fmt/format.h>

namespace vipd::daemon {

std::string portBindError(std::string_view what, uint16_t port, int error, std::string_view reason,
                          const PortBindHints& hints) {
  std::string text = fmt::format("{}: {}", what, reason);
  if (error == EACCES || error == EPERM) {
    // EACCES is what inet_bind() answers without the capability; EPERM is what seccomp or an
    // LSM may answer instead, and the capability is still the first thing to check.
    if (port < kFirstUnprivilegedPort) {
      text += fmt::format(": binding a port below {} needs CAP_NET_BIND_SERVICE",
                          kFirstUnprivilegedPort);
    } else {
      text += fmt::format(": net.ipv4.ip_unprivileged_port_start is above {} here, so binding it "
                          "needs CAP_NET_BIND_SERVICE",
                          port);
    }
    text += " (the manifests grant it; a custom securityContext or systemd unit must too)";
    if (port < kFirstUnprivilegedPort && !hints.unprivilegedPort.empty()) {
      text += fmt::format(", or {}", hints.unprivilegedPort);
    }
  } else if (error == EADDRINUSE && !hints.inUse.empty()) {
    text += fmt::format(": {}", hints.inUse);
  }
  return text;
}

}  // namespace vipd::daemon
