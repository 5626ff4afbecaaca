#include "policy/fabric_view.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bgp/update_builder.h"

namespace vipd::policy {
namespace {

// The origin AS repeated at the end of the path: a prepend, which only a degraded vipd path has
// (health.degrade.prepend; a healthy one carries its AS once).
bool originPrepended(const bgp::AsPath& path) {
  if (path.empty() || path.back().type != bgp::AsPathSegment::Type::AsSequence) {
    return false;
  }
  const auto& asns = path.back().asns;
  return asns.size() >= 2 && asns[asns.size() - 1] == asns[asns.size() - 2];
}

bool hasCommunity(const FabricPath& path, uint32_t community) {
  return std::find(path.communities.begin(), path.communities.end(), community) !=
         path.communities.end();
}

std::string formatAsPath(const bgp::AsPath& path) {
  std::vector<std::string> parts;
  for (const auto& segment : path) {
    const bool set = segment.type == bgp::AsPathSegment::Type::AsSet ||
                     segment.type == bgp::AsPathSegment::Type::ConfedSet;
    parts.push_back(set ? fmt::format("{{{}}}", fmt::join(segment.asns, ",")) :
                          fmt::format("{}", fmt::join(segment.asns, " ")));
  }
  return fmt::format("{}", fmt::join(parts, " "));
}

std::string routerText(uint32_t id) { return bgp::IpAddress::v4(id).toString(); }

template <typename Set>
std::string joinAddresses(const Set& addresses) {
  std::vector<std::string> out;
  for (const auto& a : addresses) {
    out.push_back(a.toString());
  }
  return fmt::format("{}", fmt::join(out, ", "));
}

// The ASes a path crossed, prepends collapsed; nullopt when a segment is not an AS_SEQUENCE
// (an aggregate's AS_SET or a confederation segment: its route and origin are not known).
std::optional<std::vector<uint32_t>> crossedAses(const bgp::AsPath& path) {
  std::vector<uint32_t> out;
  for (const auto& segment : path) {
    if (segment.type != bgp::AsPathSegment::Type::AsSequence) {
      return std::nullopt;
    }
    for (uint32_t asn : segment.asns) {
      if (out.empty() || out.back() != asn) {
        out.push_back(asn);
      }
    }
  }
  return out;
}

// What every session's paths for one VIP are read against.
struct Context {
  const FabricIdentity& identity;
  std::set<bgp::IpAddress> ownNextHops;
  std::set<bgp::IpAddress> peers;  // every session's peer: a next hop a router rewrote
  // Next hops of the other family than their session's peer (an IPv6 VIP over an IPv4
  // session) that paths from two origins carry in one session: the router's own address, which
  // it put there (FRR and GoBGP do, with next hop self), so they name no node. Also each
  // session peer as an IPv4-mapped IPv6 address (GoBGP's ::ffff:a.b.c.d).
  std::set<bgp::IpAddress> routerNextHops;
  // Router IDs (not this node's) that paths from two kept next hops carry: they name no node.
  std::set<uint32_t> sharedOriginators;
};

bool considered(const SessionView& s, const bgp::Prefix& vip) {
  return s.established && s.settled && s.addPath.count(vip.address.family) != 0;
}

bool isIbgp(const SessionView& s, const Context& c) { return s.peerAsn == c.identity.localAsn; }

// Whether the next hop is the originating node's (see the header): a router that passes on a
// path it got from another router carries that router's next hop, not the node's.
bool keptNextHop(const FabricPath& p, const SessionView& s, const Context& c) {
  if (p.nextHop == s.peer || c.peers.count(p.nextHop) != 0 ||
      c.routerNextHops.count(p.nextHop) != 0) {
    return false;
  }
  auto ases = crossedAses(p.asPath);
  if (!ases) {
    return false;
  }
  return isIbgp(s, c) ? ases->empty() : ases->size() <= 2;
}

std::optional<uint32_t> originAs(const FabricPath& p) {
  auto ases = crossedAses(p.asPath);
  if (!ases || ases->empty()) {
    return std::nullopt;
  }
  return ases->back();
}

struct Identified {
  bool self = false;
  // This node's router ID as ORIGINATOR_ID on a kept next hop that is not this node's.
  bool foreignSelfRouterId = false;
  std::set<std::string> identities;  // empty for a path that names no node
};

Identified identify(const FabricPath& p, const SessionView& s, const Context& c) {
  const auto& id = c.identity;
  const bool kept = keptNextHop(p, s, c);
  const auto origin = originAs(p);
  // An origin AS names a node only on eBGP with an AS per node; over iBGP the nodes' paths
  // carry no AS at all.
  const bool perNodeAs = !id.sharedAsn && !isIbgp(s, c);
  const bool ownNextHop = c.ownNextHops.count(p.nextHop) != 0;
  const bool ourRouterId = p.originatorId && *p.originatorId == id.routerId;
  Identified out;
  out.self = ourRouterId || ownNextHop || (perNodeAs && origin && *origin == id.localAsn);
  out.foreignSelfRouterId = ourRouterId && kept && !ownNextHop;
  if (out.self) {
    return out;
  }
  if (p.originatorId && c.sharedOriginators.count(*p.originatorId) == 0) {
    out.identities.insert("router " + routerText(*p.originatorId));
  }
  if (kept) {
    out.identities.insert("next hop " + p.nextHop.toString());
  }
  if (perNodeAs && origin && *origin != s.peerAsn) {
    out.identities.insert(fmt::format("AS {}", *origin));
  }
  return out;
}

// Paths of one node: every path sharing an identity with another belongs to its node.
struct Group {
  std::set<std::string> identities;
  std::vector<std::pair<const SessionView*, const FabricPath*>> paths;
  std::set<bgp::IpAddress> sessions;
};

void addPath(std::vector<Group>& groups, const std::set<std::string>& identities,
             const SessionView& s, const FabricPath& p) {
  // The first path seen stays first: it is what the status shows for the node.
  Group merged{identities, {}, {s.peer}};
  std::vector<Group> rest;
  for (auto& g : groups) {
    const bool shares = std::any_of(g.identities.begin(), g.identities.end(),
                                    [&](const std::string& i) { return identities.count(i); });
    if (!shares) {
      rest.push_back(std::move(g));
      continue;
    }
    merged.identities.insert(g.identities.begin(), g.identities.end());
    merged.paths.insert(merged.paths.end(), g.paths.begin(), g.paths.end());
    merged.sessions.insert(g.sessions.begin(), g.sessions.end());
  }
  merged.paths.emplace_back(&s, &p);
  rest.push_back(std::move(merged));
  groups = std::move(rest);
}

// The name shown for a node: its router ID, else its next hop, else its AS.
std::string keyOf(const std::set<std::string>& identities) {
  for (const char* prefix : {"router ", "next hop ", "AS "}) {
    for (const auto& i : identities) {
      if (i.rfind(prefix, 0) == 0) {
        return i;
      }
    }
  }
  return "unknown";
}

void notePath(Announcer& a, const SessionView& s, const FabricPath& path,
              const FabricIdentity& identity) {
  a.via.insert(s.peer);
  a.pathIds.insert(path.pathId);
  if (!a.originatorId) {
    a.originatorId = path.originatorId;
  }
  // Any path of it worse, or leaving, counts: the safe side for "is another node serving"
  // (never-zero) and "who stays" (the withdraw guard).
  a.degraded = a.degraded || (path.localPref && *path.localPref < bgp::kDefaultLocalPref) ||
               originPrepended(path.asPath) ||
               std::any_of(identity.degradeCommunities.begin(), identity.degradeCommunities.end(),
                           [&](uint32_t c) { return hasCommunity(path, c); });
  a.draining = a.draining || hasCommunity(path, bgp::kGracefulShutdownCommunity);
}

Announcer announcerOf(const Group& g, const FabricIdentity& identity) {
  Announcer a;
  a.key = keyOf(g.identities);
  a.identities = g.identities;
  a.nextHop = g.paths.front().second->nextHop;
  a.asPath = g.paths.front().second->asPath;
  for (const auto& [s, path] : g.paths) {
    if (g.identities.count("next hop " + path->nextHop.toString()) != 0) {
      a.nextHop = path->nextHop;  // the node's own address: the return-path check asks it
    }
    notePath(a, *s, *path, identity);
  }
  return a;
}

// Context::routerNextHops for one VIP (see there).
void findRouterNextHops(const std::vector<SessionView>& sessions, const bgp::Prefix& vip,
                        Context& c) {
  for (const auto& peer : c.peers) {
    if (peer.isV4()) {
      std::array<uint8_t, 16> mapped{};
      mapped[10] = mapped[11] = 0xff;
      std::copy(peer.bytes.begin(), peer.bytes.begin() + 4, mapped.begin() + 12);
      c.routerNextHops.insert(bgp::IpAddress::v6(mapped));
    }
  }
  for (const auto& s : sessions) {
    auto paths = s.paths.find(vip);
    if (!considered(s, vip) || paths == s.paths.end()) {
      continue;
    }
    std::map<bgp::IpAddress, std::set<std::string>> origins;  // next hop -> its paths' origins
    for (const auto& p : paths->second) {
      if (p.nextHop.family == s.peer.family) {
        continue;
      }
      if (p.originatorId) {
        origins[p.nextHop].insert("router " + routerText(*p.originatorId));
      } else if (auto origin = originAs(p)) {
        origins[p.nextHop].insert(fmt::format("AS {}", *origin));
      }
    }
    for (const auto& [nextHop, from] : origins) {
      if (from.size() > 1 && c.ownNextHops.count(nextHop) == 0) {
        c.routerNextHops.insert(nextHop);
      }
    }
  }
}

// Duplicate router IDs among the paths of the considered sessions: router IDs that two kept
// next hops carry (into the context: they name no node) and this node's own on another node.
void findDuplicates(const std::vector<SessionView>& sessions, const bgp::Prefix& vip, Context& c,
                    VipView& view) {
  std::map<uint32_t, std::set<bgp::IpAddress>> nextHopsByOriginator;
  std::map<bgp::IpAddress, std::set<bgp::IpAddress>> ourIdFrom;  // next hop -> sessions
  for (const auto& s : sessions) {
    auto paths = s.paths.find(vip);
    if (!considered(s, vip) || paths == s.paths.end()) {
      continue;
    }
    for (const auto& p : paths->second) {
      if (identify(p, s, c).foreignSelfRouterId) {
        ourIdFrom[p.nextHop].insert(s.peer);
      } else if (p.originatorId && *p.originatorId != c.identity.routerId &&
                 keptNextHop(p, s, c) && c.ownNextHops.count(p.nextHop) == 0) {
        nextHopsByOriginator[*p.originatorId].insert(p.nextHop);
      }
    }
  }
  for (const auto& [originator, hops] : nextHopsByOriginator) {
    if (hops.size() > 1) {
      c.sharedOriginators.insert(originator);
      view.duplicateRouterId.push_back(fmt::format(
          "paths for {} from next hops {} all carry router ID {} as ORIGINATOR_ID: these "
          "nodes use the same router ID",
          vip.toString(), joinAddresses(hops), routerText(originator)));
    }
  }
  for (const auto& [nextHop, from] : ourIdFrom) {
    auto line = fmt::format(
        "a path for {} from next hop {} carries this node's router ID {} as ORIGINATOR_ID "
        "(sent by {}): another node uses the same router ID, or a peer forged the path; it "
        "counts as this node's own",
        vip.toString(), nextHop.toString(), routerText(c.identity.routerId),
        joinAddresses(from));
    if (from.size() > 1) {
      view.duplicateRouterIdConfirmed.push_back(line);
    }
    view.duplicateRouterId.push_back(std::move(line));
  }
}

std::string notUsedReason(const SessionView& s, const bgp::Prefix& vip) {
  if (!s.established) {
    return "not Established";
  }
  if (!s.settled) {
    return "just Established: its paths count once it has settled";
  }
  return fmt::format("sends only its best path for {} (no ADD-PATH send for {})", vip.toString(),
                     vip.address.isV4() ? "ipv4" : "ipv6");
}

// One session's paths for a VIP: what it says, and its paths into `groups` when it is used.
SessionSays readSession(const SessionView& s, const bgp::Prefix& vip, const Context& c,
                        std::vector<Group>& groups, Announcer& self) {
  SessionSays says{s.peer, false, {}, 0, false, {}};
  if (!considered(s, vip)) {
    says.reason = notUsedReason(s, vip);
    return says;
  }
  auto found = s.paths.find(vip);
  static const std::vector<FabricPath> kNone;
  const auto& paths = found == s.paths.end() ? kNone : found->second;
  says.paths = paths.size();
  std::vector<std::pair<std::set<std::string>, const FabricPath*>> others;
  std::vector<const FabricPath*> own;
  for (const auto& p : paths) {
    auto id = identify(p, s, c);
    if (id.self) {
      own.push_back(&p);
    } else if (id.identities.empty()) {
      says.reason = fmt::format(
          "its path {} (next hop {}, AS path '{}') names no node: the next hop is a router's, "
          "it has no ORIGINATOR_ID and its origin AS is {}",
          p.pathId, p.nextHop.toString(), formatAsPath(p.asPath),
          c.identity.sharedAsn || isIbgp(s, c) ? "shared by the nodes (guard.nodesShareAsn, iBGP)"
                                               : "no node's");
      return says;
    } else {
      others.emplace_back(std::move(id.identities), &p);
    }
  }
  says.used = true;
  says.self = !own.empty();
  for (const auto* p : own) {
    notePath(self, s, *p, c.identity);
  }
  std::vector<Group> mine;
  for (const auto& [identities, p] : others) {
    addPath(mine, identities, s, *p);
    addPath(groups, identities, s, *p);
  }
  for (const auto& g : mine) {
    says.others.push_back(keyOf(g.identities));
  }
  std::sort(says.others.begin(), says.others.end());
  return says;
}

std::string unavailableReason(const std::vector<SessionView>& sessions, const bgp::Prefix& vip,
                              const VipView& view) {
  if (std::none_of(sessions.begin(), sessions.end(),
                   [](const SessionView& s) { return s.established; })) {
    return "fabric view unavailable: no Established peer";
  }
  std::vector<std::string> unidentified;
  for (const auto& s : view.sessions) {
    if (!s.used && s.reason.rfind("its path", 0) == 0) {
      unidentified.push_back(fmt::format("peer {}: {}", s.peer.toString(), s.reason));
    }
  }
  if (!unidentified.empty()) {
    return fmt::format(
        "fabric view unavailable: the paths for {} cannot tell the nodes apart ({}); the fabric "
        "must keep the next hop, keep ORIGINATOR_ID (a route reflector), or give each node its "
        "own AS",
        vip.toString(), fmt::join(unidentified, "; "));
  }
  return fmt::format("fabric view unavailable: no Established peer sends every path for {} "
                     "(ADD-PATH send for {}, e.g. BIRD `add paths tx`, FRR "
                     "`addpath-tx-all-paths`)",
                     vip.toString(), vip.address.isV4() ? "ipv4" : "ipv6");
}

VipView viewOf(const std::vector<SessionView>& sessions, const bgp::Prefix& vip, Context& c,
               bool selfAnnounced) {
  VipView view;
  findDuplicates(sessions, vip, c, view);
  std::vector<Group> groups;
  Announcer self;
  self.key = "this node";
  self.self = true;
  size_t used = 0;
  for (const auto& s : sessions) {
    view.sessions.push_back(readSession(s, vip, c, groups, self));
    used += view.sessions.back().used ? 1 : 0;
  }
  view.available = used > 0;
  if (!view.available) {
    view.unavailableReason = unavailableReason(sessions, vip, view);
    return view;
  }
  if (selfAnnounced || !self.via.empty()) {
    view.announcers.push_back(std::move(self));
  }
  std::vector<Announcer> others;
  for (const auto& g : groups) {
    if (g.sessions.size() == used) {
      others.push_back(announcerOf(g, c.identity));
    } else {
      view.notCounted.push_back(fmt::format("{} (only via {})", keyOf(g.identities),
                                            joinAddresses(g.sessions)));
    }
  }
  std::sort(others.begin(), others.end(),
            [](const Announcer& a, const Announcer& b) { return a.key < b.key; });
  std::sort(view.notCounted.begin(), view.notCounted.end());
  view.announcers.insert(view.announcers.end(), others.begin(), others.end());
  return view;
}

}  // namespace

size_t VipView::others() const {
  return static_cast<size_t>(
      std::count_if(announcers.begin(), announcers.end(), [](const Announcer& a) {
        return !a.self;
      }));
}

size_t VipView::othersServing() const {
  return static_cast<size_t>(
      std::count_if(announcers.begin(), announcers.end(), [](const Announcer& a) {
        return !a.self && a.serving();
      }));
}

size_t VipView::othersStaying() const {
  return static_cast<size_t>(
      std::count_if(announcers.begin(), announcers.end(), [](const Announcer& a) {
        return !a.self && !a.draining;
      }));
}

std::map<bgp::Prefix, VipView> buildFabricView(const std::vector<SessionView>& sessions,
                                               const std::set<bgp::Prefix>& vips,
                                               const std::set<bgp::Prefix>& selfAnnounced,
                                               const FabricIdentity& identity) {
  std::map<bgp::Prefix, VipView> out;
  for (const auto& vip : vips) {
    Context c{identity, {}, {}, {}, {}};
    for (const auto& s : sessions) {
      c.ownNextHops.insert(s.ownNextHops.begin(), s.ownNextHops.end());
      c.peers.insert(s.peer);
    }
    findRouterNextHops(sessions, vip, c);
    out.emplace(vip, viewOf(sessions, vip, c, selfAnnounced.count(vip) != 0));
  }
  return out;
}

std::string describeAnnouncers(const VipView& view, bool includeSelf) {
  std::vector<std::string> parts;
  for (const auto& a : view.announcers) {
    if (a.self && !includeSelf) {
      continue;
    }
    std::string what = a.key;
    if (!a.self) {
      std::vector<std::string> via;
      for (const auto& peer : a.via) {
        via.push_back(peer.toString());
      }
      what += fmt::format(" via {}", fmt::join(via, ","));
      if (!a.asPath.empty()) {
        what += fmt::format(" AS path {}", formatAsPath(a.asPath));
      }
    }
    if (a.draining) {
      what += " (draining)";
    } else if (a.degraded) {
      what += " (degraded)";
    }
    parts.push_back(std::move(what));
  }
  return parts.empty() ? std::string("none") : fmt::format("{}", fmt::join(parts, "; "));
}

}  // namespace vipd::policy
