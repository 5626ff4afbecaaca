// The fabric's view of each VIP (issues 28, 40): which nodes the fabric holds a path from, built
// from the paths the peers send back. Pure: sessions' received paths in, one view per VIP out.
//
// vipd advertises ADD-PATH receive (RFC 7911) for its session families; a fabric that sends every
// path for the VIP prefixes back (BIRD `add paths tx`, FRR `addpath-tx-all-paths`, GoBGP
// add-paths send) lets each node count the announcers. vipd keeps those paths (bgp::SessionFsm's
// watched paths) and never installs them.
//
// An announcer is a node, not a path. What names the node behind a path (its identities):
// - its next hop, when the path kept it: not the sending peer's (or any peer's) address, and
//   either an iBGP path from this AS (empty AS path) or an eBGP path that crossed one AS only
//   (the peer's, then the origin). A path that crossed two routers carries the first one's
//   next hop, not the node's;
// - its ORIGINATOR_ID (a route reflector keeps the originating node's router ID, RFC 4456),
//   unless two kept next hops carry the same one (two nodes rendered one router ID);
// - its origin AS on eBGP when every node has an AS of its own (FabricIdentity::sharedAsn false).
// Paths of one node seen through two routers or two sessions share an identity and are one
// announcer. A path is this node's own when it carries this node's router ID as ORIGINATOR_ID,
// one of this node's addresses as next hop, or, on eBGP with per-node ASes, this node's AS as
// origin. A path with none of these identities (next hop rewritten, no ORIGINATOR_ID, shared
// AS) cannot be told from another node's: the session that sent it is not used for that VIP.
//
// Errs low, never high: counting high switches off the withdraw guard and the never-zero rule;
// counting low only holds a node a little longer. So another node counts only when every used
// session (Established, settled, ADD-PATH for the VIP's family, every path identified) holds a
// path from it: one session inventing paths cannot raise the count above what the others see.
// Every session's own list is kept (VipView::sessions) for the status.
//
// Without a used session the view is unavailable, with the reason: nothing is guessed from a
// single best path, a half-received table or paths that cannot be told apart.
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
  // The peer's AS from its OPEN; iBGP when it is this node's (FabricIdentity::localAsn).
  uint32_t peerAsn = 0;
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
  // What names it in the status: "router 192.0.2.12", "next hop 192.0.2.12", "AS 65002",
  // "this node".
  std::string key;
  std::set<std::string> identities;  // every identity its paths carried (see the file comment)
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

// What one session said about a VIP, for the status.
struct SessionSays {
  bgp::IpAddress peer;
  bool used = false;
  std::string reason;  // when !used, one sentence
  size_t paths = 0;    // paths it holds for the VIP
  bool self = false;   // it sent this node's own path back
  std::vector<std::string> others;  // the other nodes it holds a path from, by key
};

struct VipView {
  bool available = false;
  std::string unavailableReason;  // when !available, one sentence
  // Every announcer counted, this node included: another node only when every used session
  // holds a path from it.
  std::vector<Announcer> announcers;
  // Nodes some used sessions hold a path from and others do not: not counted (errs low).
  std::vector<std::string> notCounted;
  std::vector<SessionSays> sessions;  // one per configured session, in the given order
  // Duplicate router IDs: paths from a next hop not this node's that carry this node's router
  // ID as ORIGINATOR_ID, and router IDs carried by two nodes' paths. Reported (status, log,
  // metric), and counted low: such a path counts as this node's own.
  std::vector<std::string> duplicateRouterId;
  // The reports of this node's router ID that more than one session confirms: /readyz fails on
  // these only (one session alone may be a forgery; readiness says whether this node can serve).
  std::vector<std::string> duplicateRouterIdConfirmed;

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
  uint32_t localAsn = 0;
  // guard.nodesShareAsn: the other nodes use this node's AS too, so an origin AS names no node
  // (false: every node has an AS of its own, and this node's AS as origin means its own path).
  bool sharedAsn = false;
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
