// The route the kernel would use to reach an address (RTM_GETROUTE, as `ip route get` asks it):
// through the policy rules and tables as the kernel applies them, so the answer is the path this
// node's own packets take. Asks only; changes nothing, sends nothing on any interface.
//
// A free function rather than an AddressTable method: its only user is `vipd doctor`'s fact
// gathering (daemon/doctor/), which runs the real kernel in a namespace in its tests; the
// daemon's own AddressTable (and its fake) stay what the VIP binder needs.
#pragma once

#include <optional>
#include <string>

#include "netlink/address_table.h"

namespace vipd::netlink {

struct Route {
  int ifindex = 0;
  std::string ifname;  // "" when the interface vanished between the answer and the name lookup
  // The next hop: set when the destination is reached through a router, unset when it is on a
  // connected network (or this node's own address).
  std::optional<InterfaceAddress> gateway;
  // The source address the kernel would pick (RTA_PREFSRC), when it says.
  std::optional<InterfaceAddress> source;
  bool local = false;  // the destination is one of this node's own addresses (RTN_LOCAL)
};

// The kernel's route to `destination` (its prefix length is ignored; addresses are /32, /128),
// in the calling thread's network namespace. An error is the kernel's refusal to route there,
// named as operation "look up route", object "to 192.0.2.1" and the reason: "Network is
// unreachable" (no route), "No route to host" (an unreachable route), "Invalid argument"
// (a blackhole), "Permission denied" (a prohibit route), or a socket failure.
//
// source: the route for packets sent from that address (RTA_SRC, as `ip route get DST from
// SRC`), through the policy rules that match on it (`ip rule add from VIP ...`). The kernel
// refuses a source that is not one of this node's addresses ("Invalid argument").
[[nodiscard]] Result<Route> lookupRoute(const InterfaceAddress& destination,
                                        const std::optional<InterfaceAddress>& source = {});

}  // namespace vipd::netlink
