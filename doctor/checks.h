// The checks of `vipd doctor` (issue 30): each one judges the facts gathered on the node
// (node_facts.h) against the config and says ok, warn or fail, what it found and what to do.
// Pure: no files, no sockets, no clock; the facts come in as values. The daemon runs the same
// checks at start and after each reload (daemon/doctor/runner.h), and the command runs
// them once (daemon/doctor/command.h).
//
// Why each verdict is what it is, and what each check does not see, is in docs/operations.md
// ("vipd doctor"); the comments here say only what the code cannot.
#pragma once

#include <string_view>
#include <vector>

#include "config/config.h"
#include "config/parser.h"
#include "doctor/check.h"
#include "doctor/node_facts.h"

namespace vipd::doctor {

// Every check, in the order they are printed.
[[nodiscard]] std::vector<Check> judge(const config::Config& config, const NodeFacts& facts);

// What a config that does not load or validate gets instead of every other check (they all need
// the config): a fail naming each error, file:line:column: key: what is wrong. A key set in both
// the cluster file and the node file is one of those errors (config/layers.h).
[[nodiscard]] Check configRefused(std::string_view names,
                                  const std::vector<config::ConfigError>& errors);

// Each check alone, as judge() runs them.
[[nodiscard]] Check checkConfigLayers(const NodeFacts& facts);
[[nodiscard]] Check checkRouterId(const config::Config& config, const NodeFacts& facts);
[[nodiscard]] Check checkLocalAddresses(const config::Config& config, const NodeFacts& facts);
[[nodiscard]] Check checkApiserverCertificate(const config::Config& config,
                                              const NodeFacts& facts);
[[nodiscard]] Check checkBgpPort(const config::Config& config, const NodeFacts& facts);
[[nodiscard]] Check checkBgpSessions(const config::Config& config, const NodeFacts& facts);
[[nodiscard]] Check checkPeerRoutes(const config::Config& config, const NodeFacts& facts);
[[nodiscard]] Check checkRpFilter(const config::Config& config, const NodeFacts& facts);
[[nodiscard]] Check checkArp(const config::Config& config, const NodeFacts& facts);
[[nodiscard]] Check checkCapabilities(const config::Config& config, const NodeFacts& facts);
[[nodiscard]] Check checkStateDir(const config::Config& config, const NodeFacts& facts);
[[nodiscard]] Check checkKeyFiles(const config::Config& config, const NodeFacts& facts);
[[nodiscard]] Check checkStaticPods(const config::Config& config, const NodeFacts& facts);
// The VIP never becomes the node's identity (checks_identity.cc, issue 42).
[[nodiscard]] Check checkVipIdentity(const config::Config& config, const NodeFacts& facts);
[[nodiscard]] Check checkVipReachable(const config::Config& config, const NodeFacts& facts);
[[nodiscard]] Check checkVipReplies(const config::Config& config, const NodeFacts& facts);
[[nodiscard]] Check checkVipExposure(const config::Config& config, const NodeFacts& facts);

// The interfaces VIP traffic arrives on: the interfaces of the peers' routes, and the VIPs' own
// interfaces unless loopback or dummy (nothing arrives there from outside). Sorted, unique. The
// fact gathering reads these interfaces' sysctls.
[[nodiscard]] std::vector<std::string> ingressInterfaces(const config::Config& config,
                                                         const NodeFacts& facts);

// Whether `address` is one of this node's (on an interface, or in 127.0.0.0/8, which the
// kernel's local table holds whole).
[[nodiscard]] bool isLocalAddress(const bgp::IpAddress& address, const NodeFacts& facts);

}  // namespace vipd::doctor
