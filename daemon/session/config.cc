#include "daemon/session/config.h"

#include <algorithm>

namespace vipd::daemon {

bgp::SessionConfig sessionConfigFor(const config::Config& config, const config::Peer& peer,
                                    uint64_t seed) {
  bgp::SessionConfig s;
  s.localAsn = config.localAsn;
  s.peerAsn = peer.asn;
  s.routerId = config.routerId.v4Value();
  s.holdTime = std::chrono::duration_cast<std::chrono::seconds>(peer.holdTime);
  s.keepaliveTime = std::chrono::duration_cast<std::chrono::seconds>(peer.keepaliveTime);
  s.connectRetryTime = peer.connectRetryTime;
  s.maxConnectRetryTime = config::kMaxConnectRetry;
  s.openHoldTime = peer.openHoldTime;
  // Only the families this session carries (peers[].families): the multiprotocol capabilities
  // in the OPEN (RFC 4760), and with them what the FSM announces, withdraws and ends with an
  // End-of-RIB, since it sends nothing outside the negotiated families.
  for (bgp::Afi family : peer.families) {
    s.families.push_back({family, bgp::Safi::Unicast});
  }
  // The fabric's view (issue 28): ADD-PATH receive for every family the session carries, so a
  // fabric that sends every path for the VIPs back (add paths tx) can; the FSM keeps those paths
  // for the VIPs of the session's families, and only those.
  s.addPathReceive = s.families;
  for (const auto& vip : config.vips) {
    if (std::find(peer.families.begin(), peer.families.end(), vip.prefix.address.family) !=
        peer.families.end()) {
      s.watchedPrefixes.insert(vip.prefix);
    }
  }
  s.outbound.ebgp = peer.asn != config.localAsn;
  s.outbound.localAsn = config.localAsn;
  if (peer.sourceAddress && peer.sourceAddress->isV4()) {
    s.outbound.nextHopV4 = peer.sourceAddress;
  }
  if (peer.nextHopIpv6) {
    s.outbound.nextHopV6 = peer.nextHopIpv6;
  } else if (peer.sourceAddress && peer.sourceAddress->isV6()) {
    s.outbound.nextHopV6 = peer.sourceAddress;
  }
  for (const auto& c : config.communities) {
    s.outbound.communities.push_back(c.wire());
  }
  s.outbound.largeCommunities = config.largeCommunities;
  s.outbound.degradePrepend = config.health.degrade.prepend;
  s.outbound.degradeLocalPref = config.health.degrade.localPref;
  for (const auto& c : config.health.degrade.communities) {
    s.outbound.degradeCommunities.push_back(c.wire());
  }
  s.jitterSeed = seed;
  if (config.mode != config::Mode::Standalone) {
    // Graceful restart exists for the handoff between the two instances (and upgrades); a
    // standalone vipd never needs a peer to keep a path it is not announcing.
    s.gracefulRestartTime =
        std::chrono::duration_cast<std::chrono::seconds>(config.handoff.restartTime);
  }
  return s;
}

}  // namespace vipd::daemon
