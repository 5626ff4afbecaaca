// SessionFsm (session_fsm.h), the paths the peer holds for the watched prefixes (the fabric's
// view, issue 28): which prefixes are watched, and every path an UPDATE adds or withdraws for them,
// per path ID with ADD-PATH (RFC 7911), bounded. Pure, as the rest of the FSM.
#include <fmt/format.h>

#include <algorithm>

#include "bgp/session_fsm.h"

namespace vipd::bgp {

Actions SessionFsm::setWatchedPrefixes(std::set<Prefix> prefixes) {
  Actions out;
  std::set<AfiSafi> gained;
  for (const auto& p : prefixes) {
    if (config_.watchedPrefixes.count(p) == 0) {
      gained.insert({p.address.family, Safi::Unicast});
    }
  }
  config_.watchedPrefixes = std::move(prefixes);
  bool dropped = false;
  for (auto it = watchedPaths_.begin(); it != watchedPaths_.end();) {
    if (config_.watchedPrefixes.count(it->first) == 0) {
      watchedPathsCapped_.erase(it->first);
      it = watchedPaths_.erase(it);
      dropped = true;
    } else {
      ++it;
    }
  }
  if (dropped) {
    out.push_back(WatchedPathsChanged{});
  }
  if (state_ != SessionState::Established || !negotiated_->routeRefresh) {
    return out;
  }
  for (const auto& family : negotiated_->families) {
    if (gained.count(family) != 0) {
      send(out, RouteRefreshMessage{family});
    }
  }
  return out;
}

void SessionFsm::trackWatchedPaths(Actions& out, const UpdateMessage& update,
                                   UpdateHandling handling) {
  const PathAttributes& a = update.attributes;
  // Withdrawals first: RFC 4271 section 4.3 has a prefix in both fields of one UPDATE stand
  // announced, and the same reading is applied to MP_UNREACH_NLRI against MP_REACH_NLRI.
  withdrawWatched(kIpv4Unicast, update.withdrawn, update.withdrawnPathIds);
  if (a.mpUnreach) {
    withdrawWatched(a.mpUnreach->family, a.mpUnreach->withdrawn, a.mpUnreach->pathIds);
  }
  if (handling == UpdateHandling::TreatAsWithdraw) {
    // RFC 7606 section 2: every NLRI of the UPDATE is withdrawn, whatever its attributes say.
    withdrawWatched(kIpv4Unicast, update.nlri, update.nlriPathIds);
    if (a.mpReach) {
      withdrawWatched(a.mpReach->family, a.mpReach->nlri, a.mpReach->pathIds);
    }
    return;
  }
  auto anyWatched = [&](const std::vector<Prefix>& prefixes) {
    return std::any_of(prefixes.begin(), prefixes.end(),
                       [&](const Prefix& p) { return config_.watchedPrefixes.contains(p); });
  };
  if (!anyWatched(update.nlri) && !(a.mpReach && anyWatched(a.mpReach->nlri))) {
    return;  // the common case: nothing of ours, no attributes to copy
  }
  ReceivedPath path;
  // RFC 7606 sections 7.9 and 7.10: an external peer has no business sending either; discard.
  if (config_.peerAsn == config_.localAsn) {
    path.originatorId = a.originatorId;
    path.clusterList = a.clusterList.value_or(std::vector<uint32_t>{});
  }
  path.asPath = a.asPath.value_or(AsPath{});
  path.localPref = a.localPref;
  path.communities = a.communities.value_or(std::vector<uint32_t>{});
  if (!update.nlri.empty() && a.nextHop) {  // NEXT_HOP is mandatory here (else treat-as-withdraw)
    path.nextHop = *a.nextHop;
    announceWatched(out, kIpv4Unicast, update.nlri, update.nlriPathIds, path);
  }
  if (a.mpReach && !a.mpReach->nlri.empty()) {
    // The codec admits only 4 (IPv4) or 16/32 (IPv6) next hop bytes.
    const auto& bytes = a.mpReach->nextHop;
    path.nextHop = IpAddress{};
    path.nextHop.family = a.mpReach->family.afi;
    std::copy_n(bytes.begin(), std::min(bytes.size(), path.nextHop.size()),
                path.nextHop.bytes.begin());
    announceWatched(out, a.mpReach->family, a.mpReach->nlri, a.mpReach->pathIds, path);
  }
}

void SessionFsm::withdrawWatched(AfiSafi family, const std::vector<Prefix>& prefixes,
                                 const std::vector<uint32_t>& pathIds) {
  if (!isNegotiated(family)) {
    return;
  }
  for (size_t i = 0; i < prefixes.size(); ++i) {
    if (!config_.watchedPrefixes.contains(prefixes[i])) {
      continue;
    }
    counters_.watchedPathsWithdrawn++;
    auto paths = watchedPaths_.find(prefixes[i]);
    if (paths == watchedPaths_.end()) {
      continue;
    }
    const uint32_t pathId = i < pathIds.size() ? pathIds[i] : 0;
    if (paths->second.erase(pathId) == 0) {
      continue;
    }
    watchedPathsChanged_ = true;
    if (paths->second.empty()) {
      watchedPaths_.erase(paths);
    }
  }
}

void SessionFsm::announceWatched(Actions& out, AfiSafi family, const std::vector<Prefix>& prefixes,
                                 const std::vector<uint32_t>& pathIds, const ReceivedPath& path) {
  if (!isNegotiated(family)) {
    return;
  }
  for (size_t i = 0; i < prefixes.size(); ++i) {
    const Prefix& prefix = prefixes[i];
    if (!config_.watchedPrefixes.contains(prefix)) {
      continue;
    }
    counters_.watchedPathsReceived++;
    const uint32_t pathId = i < pathIds.size() ? pathIds[i] : 0;
    auto& paths = watchedPaths_[prefix];
    auto existing = paths.find(pathId);
    if (existing != paths.end()) {
      if (existing->second != path) {
        existing->second = path;  // an implicit withdraw and re-announce (RFC 4271 section 3.1)
        watchedPathsChanged_ = true;
      }
      continue;
    }
    if (paths.size() >= kMaxPathsPerWatchedPrefix) {
      counters_.watchedPathsDropped++;
      if (watchedPathsCapped_.insert(prefix).second) {
        out.push_back(Notice{fmt::format(
            "received more than {} paths for watched prefix {}; further paths are counted and "
            "dropped until some are withdrawn",
            kMaxPathsPerWatchedPrefix, prefix.toString())});
      }
      continue;
    }
    paths.emplace(pathId, path);
    watchedPathsChanged_ = true;
  }
}

}  // namespace vipd::bgp
