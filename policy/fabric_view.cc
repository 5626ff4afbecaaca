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
  std::set<bgp::IpAddress> ownNextHops;
  for (const auto& s : sessions) {
    ownNextHops.insert(s.ownNextHops.begin(), s.ownNextHops.end());
  }
  const auto routerId = bgp::IpAddress::v4(identity.routerId);
  std::map<bgp::Prefix, VipView> out;
  for (const auto& vip : vips) {
    VipView view;
    bool established = false;
    std::map<std::string, Announcer> byKey;
    // Router IDs seen on paths from more than one next hop (two nodes with one router ID):
    // those paths are told apart by their next hops instead.
    std::map<uint32_t, std::set<bgp::IpAddress>> nextHopsByOriginator;
    for (const auto& s : sessions) {
      auto paths = s.paths.find(vip);
      if (!s.established || !s.settled || s.addPath.count(vip.address.family) == 0 ||
          paths == s.paths.end()) {
        continue;
      }
      for (const auto& path : paths->second) {
        if (path.originatorId && ownNextHops.count(path.nextHop) == 0) {
          nextHopsByOriginator[*path.originatorId].insert(path.nextHop);
        }
      }
    }
    for (const auto& [originator, hops] : nextHopsByOriginator) {
      if (hops.size() > 1 && originator != identity.routerId) {
        std::vector<std::string> list;
        for (const auto& h : hops) {
          list.push_back(h.toString());
        }
        view.duplicateRouterId.push_back(fmt::format(
            "paths for {} from next hops {} all carry router ID {} as ORIGINATOR_ID: these "
            "nodes use the same router ID",
            vip.toString(), fmt::join(list, ", "), bgp::IpAddress::v4(originator).toString()));
      }
    }
    for (const auto& s : sessions) {
      if (!s.established) {
        continue;
      }
      established = true;
      if (s.addPath.count(vip.address.family) == 0 || !s.settled) {
        continue;
      }
      view.available = true;
      auto paths = s.paths.find(vip);
      if (paths == s.paths.end()) {
        continue;
      }
      for (const auto& path : paths->second) {
        const bool self = ownNextHops.count(path.nextHop) != 0;
        const bool ourRouterId = path.originatorId && *path.originatorId == identity.routerId;
        if (ourRouterId && !self) {
          view.duplicateRouterId.push_back(fmt::format(
              "a path for {} from next hop {} (via {}, path id {}) carries this node's router "
              "ID {} as ORIGINATOR_ID: another node uses the same router ID",
              vip.toString(), path.nextHop.toString(), s.peer.toString(), path.pathId,
              routerId.toString()));
        }
        std::string key;
        if (self) {
          key = "this node";
        } else if (path.originatorId && !ourRouterId &&
                   nextHopsByOriginator[*path.originatorId].size() == 1) {
          key = fmt::format("router {}", bgp::IpAddress::v4(*path.originatorId).toString());
        } else if (path.nextHop != s.peer) {
          key = fmt::format("next hop {}", path.nextHop.toString());
        } else {
          key = fmt::format("peer {} path {}", s.peer.toString(), path.pathId);
        }
        auto [it, inserted] = byKey.try_emplace(key);
        Announcer& a = it->second;
        if (inserted) {
          a.key = key;
          a.nextHop = path.nextHop;
          a.originatorId = path.originatorId;
          a.asPath = path.asPath;
          a.self = self;
        }
        a.via.insert(s.peer);
        a.pathIds.insert(path.pathId);
        // Any path of it worse, or leaving, counts: the safe side for "is another node
        // serving" (never-zero) and "who stays" (the withdraw guard).
        a.degraded = a.degraded || (path.localPref && *path.localPref < bgp::kDefaultLocalPref) ||
                     originPrepended(path.asPath) ||
                     std::any_of(identity.degradeCommunities.begin(),
                                 identity.degradeCommunities.end(),
                                 [&](uint32_t c) { return hasCommunity(path, c); });
        a.draining = a.draining || hasCommunity(path, bgp::kGracefulShutdownCommunity);
      }
    }
    if (!view.available) {
      view.unavailableReason =
          established
              ? fmt::format("fabric view unavailable: no Established peer sends every path for "
                            "{} (ADD-PATH send for {}, e.g. BIRD `add paths tx`, FRR "
                            "`addpath-tx-all-paths`)",
                            vip.toString(), vip.address.isV4() ? "ipv4" : "ipv6")
              : std::string("fabric view unavailable: no Established peer");
    }
    if (view.available && selfAnnounced.count(vip) != 0 && byKey.count("this node") == 0) {
      Announcer self;
      self.key = "this node";
      self.self = true;
      byKey.emplace(self.key, self);
    }
    for (auto& [key, a] : byKey) {
      view.announcers.push_back(std::move(a));
    }
    // This node first, then the others by key.
    std::stable_sort(view.announcers.begin(), view.announcers.end(),
                     [](const Announcer& a, const Announcer& b) { return a.self && !b.self; });
    out.emplace(vip, std::move(view));
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
