#include "config/reload_plan.h"

#include <algorithm>

#include <fmt/format.h>

namespace vipd::config {
namespace {

template <typename T, typename Key>
const T* findBy(const std::vector<T>& in, const Key& key, auto keyOf) {
  auto it = std::find_if(in.begin(), in.end(), [&](const T& e) { return keyOf(e) == key; });
  return it == in.end() ? nullptr : &*it;
}

}  // namespace

bool sameHealthCheck(const Health& a, const Health& b) {
  Health x = a;
  Health y = b;
  for (Health* h : {&x, &y}) {
    h->degrade = {};
    h->onFailure = Health::OnFailure::Withdraw;
    h->unbindWhenUnhealthy = true;
  }
  return x == y;
}

ReloadPlan planReload(const Config& running, const Config& next,
                      const std::set<bgp::IpAddress>& keysChanged) {
  ReloadPlan plan;
  plan.applied = liveConfig(running, next);
  const Config& applied = plan.applied;
  plan.live = diffConfig(running, applied);
  plan.pending = diffConfig(applied, next);

  auto vipKey = [](const Vip& v) { return v.prefix; };
  for (const auto& vip : applied.vips) {
    const Vip* before = findBy(running.vips, vip.prefix, vipKey);
    if (before == nullptr) {
      plan.vipsAdded.push_back(vip);
    } else if (*before != vip) {
      plan.vipsChanged.push_back(vip);
    }
  }
  for (const auto& vip : running.vips) {
    if (findBy(applied.vips, vip.prefix, vipKey) == nullptr) {
      plan.vipsRemoved.push_back(vip.prefix);
    }
  }

  auto peerKey = [](const Peer& p) { return p.address; };
  for (const auto& peer : applied.peers) {
    const Peer* before = findBy(running.peers, peer.address, peerKey);
    if (before == nullptr) {
      plan.peersAdded.push_back(peer);
      continue;
    }
    PeerReset reset{peer.address, {}, before->bfd != peer.bfd};
    const std::string prefix = fmt::format("peers[{}].", peer.address.toString());
    for (const auto& change : plan.live) {
      if (!change.path.starts_with(prefix)) {
        continue;
      }
      const std::string field = change.path.substr(prefix.size());
      if (field == "passwordFile" && keysChanged.count(peer.address) == 0) {
        continue;  // renamed, the same key in it: nothing for the session to do
      }
      reset.why.push_back(fmt::format("{} {} -> {}", field, change.before, change.after));
    }
    if (keysChanged.count(peer.address) != 0 && before->passwordFile == peer.passwordFile &&
        peer.passwordFile) {
      // The same file name with a different key in it: diffConfig cannot see it.
      reset.why.push_back(fmt::format("TCP-MD5 key (the content of {})", *peer.passwordFile));
      plan.live.push_back({prefix + "passwordFile", fmt::format("\"{}\"", *peer.passwordFile),
                           fmt::format("\"{}\" (another key in it)", *peer.passwordFile),
                           ChangeEffect::AppliesLive});
    }
    if (!reset.why.empty()) {
      plan.peersReset.push_back(std::move(reset));
    }
  }
  for (const auto& peer : running.peers) {
    if (findBy(applied.peers, peer.address, peerKey) == nullptr) {
      plan.peersRemoved.push_back(peer.address);
    }
  }

  plan.routeAttributes = running.communities != applied.communities ||
                         running.largeCommunities != applied.largeCommunities ||
                         running.health.degrade != applied.health.degrade;
  plan.healthCheck = !sameHealthCheck(running.health, applied.health);
  plan.healthPolicy = running.health.onFailure != applied.health.onFailure ||
                      running.health.unbindWhenUnhealthy != applied.health.unbindWhenUnhealthy;
  plan.returnPath = running.returnPath != applied.returnPath;
  return plan;
}

}  // namespace vipd::config
