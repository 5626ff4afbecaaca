// What a config re-read while vipd runs means for the running daemon (issue 29): the changes it
// applies now, each touching only what it concerns, and the ones that wait for a restart. Pure:
// the running config, the re-read one and which peers' TCP-MD5 keys changed (the daemon reads
// the key files; a key is compared by its content, not its file name) in, a plan out. The Speaker
// carries the plan out and decides nothing else (daemon/speaker.h).
//
// What each kind of change means:
//   a VIP added           bind it, then announce it (once the policy allows: bound, healthy)
//   a VIP removed         withdraw it, wait until the peers acknowledge that (as a drain does),
//                         then unbind it
//   a VIP's rebind, createInterface   the binder takes them at its next bind
//   communities, largeCommunities, health.degrade.*
//                         every session sends its prefixes again with the new attributes: an
//                         implicit replace, never a withdrawal
//   health.* (but degrade, onFailure, unbindWhenUnhealthy)
//                         the checker restarts with the new settings; the gate keeps its state
//   health.onFailure, health.unbindWhenUnhealthy   the policy decides again
//   returnPath.*          the return-path check restarts with the new settings
//   a peer added          a new session; the others are untouched
//   a peer removed        Cease 6/3 (Peer De-configured) to it; the others are untouched
//   any field of a peer, or its TCP-MD5 key's content
//                         that session alone is reset: Cease 6/6 (Other Configuration Change)
//                         saying why, then it connects again with the new settings
//   drain.*, guard.*      read where they are used: nothing to do
// Everything diffConfig() marks NeedsRestart is in `pending`, with the running value kept.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/diff.h"

namespace vipd::config {

// One session to reset, and why (for the log line and the Cease's shutdown communication).
struct PeerReset {
  bgp::IpAddress peer;
  // One entry per field, as the config spells it: "holdTime 9s -> 6s", "TCP-MD5 key (the
  // content of /etc/vipd/peer.key)".
  std::vector<std::string> why;
  bool bfdChanged = false;  // peers[].bfd differs: its BFD session is replaced as well
  auto operator<=>(const PeerReset&) const = default;
};

struct ReloadPlan {
  // The config that runs once the plan is carried out: the re-read file's value for every field
  // that applies live, the running value for the rest (liveConfig()).
  Config applied;
  // Every change carried out now: diffConfig(running, applied), plus a peers[X].passwordFile
  // entry for a key whose file name stayed and whose content changed.
  std::vector<ConfigChange> live;
  // What the file says and the daemon keeps until a restart: diffConfig(applied, next).
  std::vector<ConfigChange> pending;

  std::vector<Vip> vipsAdded;
  std::vector<bgp::Prefix> vipsRemoved;
  std::vector<Vip> vipsChanged;  // still configured, rebind or createInterface changed
  std::vector<Peer> peersAdded;
  std::vector<bgp::IpAddress> peersRemoved;
  std::vector<PeerReset> peersReset;
  // communities, largeCommunities or health.degrade.*: every session re-announces.
  bool routeAttributes = false;
  // health.* other than degrade.*, onFailure and unbindWhenUnhealthy: the checker restarts.
  bool healthCheck = false;
  // health.onFailure or health.unbindWhenUnhealthy: what is announced and bound is decided again.
  bool healthPolicy = false;
  bool returnPath = false;  // returnPath.*: the check restarts

  // Nothing to carry out (there may still be pending changes).
  bool empty() const { return live.empty(); }
};

// Whether the health checker runs the same with `a` and `b`: every health setting but degrade,
// onFailure and unbindWhenUnhealthy (the policy's and the sessions', read where they are used).
// ReloadPlan::healthCheck is its negation over the running and the applied config.
bool sameHealthCheck(const Health& a, const Health& b);

// `keysChanged`: the peers in both configs whose TCP-MD5 key differs by content (a key set or
// removed counts); a passwordFile renamed with the same key in it resets nothing.
ReloadPlan planReload(const Config& running, const Config& next,
                      const std::set<bgp::IpAddress>& keysChanged);

}  // namespace vipd::config
