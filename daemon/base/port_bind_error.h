// The message for a port vipd cannot listen on (the BGP listener, the BFD receivers): what
// failed, the kernel's reason and, for the causes an operator can fix, what to do. Pure: the
// caller passes the errno value it got, so every choice is unit-tested without a socket.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace vipd::daemon {

// Linux's default net.ipv4.ip_unprivileged_port_start: binding a port below it needs
// CAP_NET_BIND_SERVICE in the network namespace's user namespace.
inline constexpr uint16_t kFirstUnprivilegedPort = 1024;

// What the caller knows that the kernel's reason does not say.
struct PortBindHints {
  // For EADDRINUSE: who else may hold the port and what to do about it. Empty: no advice.
  std::string_view inUse;
  // For EACCES or EPERM on a port below kFirstUnprivilegedPort: the setting that avoids the
  // capability ("set listen.port above 1023"). Empty when the port is fixed (BFD's are).
  std::string_view unprivilegedPort;
};

// "`what`: `reason`" and, by `error` (an errno value):
// - EACCES, EPERM: the port needs CAP_NET_BIND_SERVICE (which vipd's manifests grant, and a
//   custom securityContext or systemd unit must grant too), then hints.unprivilegedPort;
// - EADDRINUSE: hints.inUse;
// - anything else: nothing more (the kernel's reason is all that is known).
// `what` names the socket and port, e.g. "cannot listen for BGP on 0.0.0.0 port 179".
std::string portBindError(std::string_view what, uint16_t port, int error, std::string_view reason,
                          const PortBindHints& hints);

}  // namespace vipd::daemon
