// The fabric's view of each VIP (issue 28): which nodes the fabric holds a path from, built from
// the paths the peers send back. Pure: sessions' received paths in, one view per VIP out.
//
// vipd advertises ADD-PATH receive (RFC 7911) for its session families; a fabric that sends every
// path for the VIP prefixes back (BIRD `add paths tx`, FRR `addpath-tx-all-paths`, GoBGP
// add-paths send) lets each node count the announcers. vipd keeps those paths (bgp::SessionFsm's
// watched paths) and never installs them.
//
// Who announced a path: its ORIGINATOR_ID when it has one (a route reflector keeps the
// originating node's router ID there, RFC 4456); else its next hop, unless the next hop is the
// sending peer's own address (an eBGP ToR that rewrote it), in which case the path is known only
// as "that peer's path N". A path whose next hop is one this node announces is this node's own.
// A path from another next hop carrying this node's router ID as ORIGINATOR_ID is a duplicate
// router ID (a cloned node that rendered the same one).
//
// Without an Established, settled session that negotiated ADD-PATH for the VIP's family the view
// is unavailable: nothing is guessed from a single best path or a half-received table.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bgp/ip_address.h"
#include "bgp/message.h"

namespace vipd::policy {

// One path a peer sent back for a VIP.
struct FabricPath {
  uint32_t pathId = 0;
  bgp::IpAddress nextHop;
  std::optional<uint32_t> originatorId;
  std::vector<uint32_t> clusterList;
  bgp::AsPath asPath;
  std::optional<uint32_t> localPref;
  std::vector<uint32_t> communities;
};

// What one session contributes.
struct SessionView {
  bgp::IpAddress peer;
  bool established = false;
  // Established long enough for the peer to have sent what it holds (the paths arrive right
  // after the session opens): until then the view from this session is not trusted as complete.
  bool settled = false;
  // The families in which this peer sends every path (ADD-PATH negotiated, we receive).
  std::set<bgp::Afi> addPath;
  // The next hops this node announces on this session (its own paths, when sent back).
  std::set<bgp::IpAddress> ownNextHops;
  // The paths for the watched prefixes (the VIPs).
  std::map<bgp::Prefix, std::vector<FabricPath>> paths;
};

struct Announcer {
  std::string key;  // "router 192.0.2.12", "next hop 192.0.2.12", "peer 192.0.2.1 path 7"
  bgp::IpAddress nextHop;
  std::optional<uint32_t> originatorId;
  bgp::AsPath asPath;
  std::set<bgp::IpAddress> via;  // the sessions that sent it
  std::set<uint32_t> pathIds;
  bool self = false;      // this node
  bool degraded = false;  // a worse path: LOCAL_PREF below 100, its origin AS prepended, or a
                          // degrade community (a node held back or failing, issue 19/28)
  bool draining = false;  // GRACEFUL_SHUTDOWN (RFC 8326): about to leave
  // Serving: neither degraded nor draining.
  bool serving() const { return !degraded && !draining; }
};

struct VipView {
  bool available = false;
  std::string unavailableReason;  // when !available, one sentence
  std::vector<Announcer> announcers;  // every announcer the fabric holds, this node included
  // Paths from another next hop that carry this node's router ID as ORIGINATOR_ID.
  std::vector<std::string> duplicateRouterId;

  // Announcers other than this node.
  size_t others() const;
  // Other announcers that are serving (neither degraded nor draining).
  size_t othersServing() const;
  // Announcers other than this node that are not draining.
  size_t othersStaying() const;
  // Every announcer, this node included (when it announces).
  size_t count() const { return announcers.size(); }
};

struct FabricIdentity {
  uint32_t routerId = 0;  // host order
  // health.degrade.communities: a path carrying any of them is a degraded one.
  std::vector<uint32_t> degradeCommunities;
};

// The view of every VIP in `vips`. `selfAnnounced`: the VIPs this node advertises to at least
// one Established peer now (it counts as an announcer even when no peer sends its path back).
std::map<bgp::Prefix, VipView> buildFabricView(const std::vector<SessionView>& sessions,
                                               const std::set<bgp::Prefix>& vips,
                                               const std::set<bgp::Prefix>& selfAnnounced,
                                               const FabricIdentity& identity);

// "203.0.113.10/32 held by 192.0.2.12 (router 192.0.2.12), ..." style text for messages.
std::string describeAnnouncers(const VipView& view, bool includeSelf);

}  // namespace vipd::policy
