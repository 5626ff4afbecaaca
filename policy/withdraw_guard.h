// The withdraw guard as one function (issues 28, 40): may this node be taken off its VIPs now?
// `vipctl withdraw` calls it when the request arrives and again when the withdrawal would take
// effect (the end of the drain's GRACEFUL_SHUTDOWN phase); a future Kubernetes request calls the
// same function the same two times.
//
// When the request arrives (Moment::Request) the nodes that stay are the other announcers not
// draining (withdrawGuard()). That check alone lets every node go when all are asked at the same
// instant: each sees the others still normal. So the drain announces GRACEFUL_SHUTDOWN first,
// and at its end (Moment::Effect) every node asked at once sees the others draining; a
// deterministic tie-break, the same on every node because it reads only what the paths carry,
// decides who stays: a draining node ranked before this one (lower router ID, from its
// ORIGINATOR_ID; or, where paths carry none, lower next hop) counts as staying, since from its
// own view it is refused first. A draining announcer whose identity the paths do not give (its
// next hop rewritten by the router that sent it) is not counted: the error is a node kept, never
// a VIP left with no path. The rule needs every draining node's GRACEFUL_SHUTDOWN path to have
// reached the others before the check: drain.gracefulShutdownTime longer than the fabric's
// update delay (docs/config.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "bgp/ip_address.h"
#include "policy/fabric_view.h"

namespace vipd::policy {

// How this node is named in the others' paths, for the tie-break.
struct GuardSelf {
  uint32_t routerId = 0;                // host order; compared with ORIGINATOR_IDs
  std::set<bgp::IpAddress> nextHops;    // the next hops it announces; compared with next hops
};

enum class GuardMoment {
  Request,  // the request arrives: the others that are not draining stay
  Effect,   // the withdrawal would go out now: draining nodes ranked before this one stay too
};

struct GuardCheck {
  // Why the withdraw is refused ("refused: fewer than guard.minAnnouncers ..."), or nullopt.
  std::optional<std::string> refusal;
  // What the guard could not check (VIPs without a fabric view), empty when it checked all.
  std::string note;
  // When refused: the VIPs that would fall short, with how many other nodes would remain, and
  // the same as one phrase ("203.0.113.10/32: 0 other node(s) would remain (...)"; "; " between
  // VIPs), for a caller that words the refusal its own way (a reload keeps what it would remove).
  std::map<bgp::Prefix, size_t> shortOf;
  std::string shortfall;
};

// The one withdraw guard: `vipctl withdraw` (at the request and at the drain's GRACEFUL_SHUTDOWN
// end), a reload that removes VIPs or every peer, and (later) a Kubernetes request all call it.
// `announced`: the VIPs the withdrawal would take off (this node announces them now); `views`:
// the fabric view (buildFabricView()).
[[nodiscard]] GuardCheck checkWithdraw(const std::map<bgp::Prefix, VipView>& views,
                                       const std::set<bgp::Prefix>& announced,
                                       size_t minAnnouncers, const GuardSelf& self,
                                       GuardMoment moment);

// The announcers counted as staying for `moment` (exposed for tests and status).
[[nodiscard]] size_t othersStayingAt(const VipView& view, const GuardSelf& self,
                                     GuardMoment moment);

}  // namespace vipd::policy
