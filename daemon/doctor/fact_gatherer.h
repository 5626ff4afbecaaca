// `vipd doctor`'s edge: observes on this node what its checks (doctor/checks.h) judge. It reads
// and never changes anything: rtnetlink (addresses, links, a route lookup per peer: no packet
// leaves the node), /proc (the TCP table, which process holds each BGP socket, this process's
// capabilities), the sysctls, the state directory, the key files and the static-pod directory,
// and, for health.type apiserver, the certificate the apiserver serves (one TLS handshake); and
// the VIP's place on the node (issue 42): the control-plane programs' identity flags (their
// command lines, kubeadm's files), the routing daemons running, the routes to and from each VIP.
//
// Peers are judged reachable by the kernel's route to them, not by connecting: a TCP connect to
// the router's port 179 is a BGP connection attempt in the router's eyes (logged, counted, and
// with TCP-MD5 dropped without the key as an unsigned segment), and while vipd runs it would
// race vipd's own session.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "config/config.h"
#include "doctor/node_facts.h"

namespace vipd::daemon {

struct GatherOptions {
  doctor::ConfigLayers config;  // copied into the facts as it is
  // --manifests-dir; nullopt: the first static-pod directory of the known distributions
  // (bootstrap/distro.h) that exists.
  std::optional<std::string> manifestsDir;
  // For the apiserver's certificate: resolve, connect and handshake together.
  std::chrono::milliseconds certificateTimeout{2000};
};

// Everything the checks need, observed now in the calling thread. Blocks for up to
// certificateTimeout (the handshake) plus the time to read the files; never throws. A fact that
// cannot be observed is recorded as such (an error text, nullopt), never guessed.
[[nodiscard]] doctor::NodeFacts gatherFacts(const config::Config& config,
                                            const GatherOptions& options);

}  // namespace vipd::daemon
