// Builds the UPDATE messages vipd sends: one announcement per VIP family with the attributes
// RFC 4271 section 5.1 asks for (the VIP with this node as next hop), withdrawals, and End-of-RIB
// markers.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "bgp/message.h"

namespace vipd::bgp {

inline constexpr uint32_t kDegradedLocalPrefDefault = 50;

// Attributes of every route vipd originates on one session.
struct OutboundAttributes {
  bool ebgp = true;
  uint32_t localAsn = 0;
  std::optional<IpAddress> nextHopV4;  // required to announce IPv4 prefixes
  std::optional<IpAddress> nextHopV6;  // required to announce IPv6 prefixes (global address)
  std::vector<uint32_t> communities;
  std::vector<LargeCommunity> largeCommunities;
  // Drain (RFC 8326): add GRACEFUL_SHUTDOWN and, on iBGP, LOCAL_PREF 0.
  bool gracefulShutdown = false;
  // A node whose health check fails with health.onFailure degrade: a worse path, so the fabric
  // prefers healthy nodes. eBGP: localAsn prepended degradePrepend more times. iBGP: LOCAL_PREF
  // degradeLocalPref (our own AS in the path would make an iBGP peer drop it as a loop). Both:
  // degradeCommunities added. A drain's LOCAL_PREF 0 still wins.
  bool degraded = false;
  uint32_t degradePrepend = 0;
  uint32_t degradeLocalPref = kDegradedLocalPrefDefault;
  std::vector<uint32_t> degradeCommunities;
};

inline constexpr uint32_t kDefaultLocalPref = 100;

// UPDATEs announcing `prefixes` (any mix of families). IPv4 prefixes go in the NLRI field with
// NEXT_HOP; IPv6 ones in MP_REACH_NLRI (RFC 4760). Precondition: the next hop for every family
// present is set (the config validator guarantees it); a missing one aborts as a bug.
std::vector<UpdateMessage> buildAnnouncements(std::span<const Prefix> prefixes,
                                              const OutboundAttributes& attributes);

// UPDATEs withdrawing `prefixes`: the withdrawn-routes field for IPv4, MP_UNREACH_NLRI for IPv6.
std::vector<UpdateMessage> buildWithdrawals(std::span<const Prefix> prefixes);

// The End-of-RIB marker for one family (RFC 4724 section 2).
UpdateMessage buildEndOfRib(AfiSafi family);

}  // namespace vipd::bgp
