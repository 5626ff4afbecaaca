#include "bgp/update_builder.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace vipd::bgp {
namespace {

// Prefixes per UPDATE, chosen so that a message with every optional attribute vipd sets stays far
// below kMaxMessageSize: a /32 costs 5 bytes of NLRI, a /128 17 bytes; attributes stay < 700
// bytes with up to 32 + 8 communities (configured and degraded), 16 large communities and an
// AS_PATH of 11 four-octet ASNs (degrade prepends at most 10); the config caps all of them.
constexpr size_t kIpv4PrefixesPerUpdate = 600;
constexpr size_t kIpv6PrefixesPerUpdate = 180;

PathAttributes commonAttributes(const OutboundAttributes& out) {
  PathAttributes attrs;
  attrs.origin = Origin::Igp;
  // RFC 4271 5.1.2: empty AS_PATH towards internal peers; our own ASN prepended towards external.
  attrs.asPath = AsPath{};
  if (out.ebgp) {
    std::vector<uint32_t> path(1 + (out.degraded ? out.degradePrepend : 0), out.localAsn);
    attrs.asPath->push_back({AsPathSegment::Type::AsSequence, std::move(path)});
  } else {
    // LOCAL_PREF is only sent to internal peers (RFC 4271 5.1.5). RFC 8326 drains with 0.
    attrs.localPref = out.gracefulShutdown ? 0
                      : out.degraded       ? out.degradeLocalPref
                                           : kDefaultLocalPref;
  }
  std::vector<uint32_t> communities = out.communities;
  if (out.degraded) {
    for (uint32_t c : out.degradeCommunities) {
      if (std::find(communities.begin(), communities.end(), c) == communities.end()) {
        communities.push_back(c);
      }
    }
  }
  if (out.gracefulShutdown &&
      std::find(communities.begin(), communities.end(), kGracefulShutdownCommunity) ==
          communities.end()) {
    communities.push_back(kGracefulShutdownCommunity);
  }
  if (!communities.empty()) {
    attrs.communities = communities;
  }
  if (!out.largeCommunities.empty()) {
    attrs.largeCommunities = out.largeCommunities;
  }
  return attrs;
}

void requireNextHop(const std::optional<IpAddress>& nextHop, const char* family) {
  if (!nextHop) {
    std::fprintf(stderr, "vipd bug: announcing %s prefixes without a %s next hop\n", family,
                 family);
    std::abort();
  }
}

template <typename Fn>
void forEachChunk(const std::vector<Prefix>& all, size_t chunk, Fn&& fn) {
  for (size_t i = 0; i < all.size(); i += chunk) {
    auto end = std::min(all.size(), i + chunk);
    fn(std::vector<Prefix>(all.begin() + static_cast<std::ptrdiff_t>(i),
                           all.begin() + static_cast<std::ptrdiff_t>(end)));
  }
}

void splitByFamily(std::span<const Prefix> prefixes, std::vector<Prefix>& v4,
                   std::vector<Prefix>& v6) {
  for (const auto& p : prefixes) {
    (p.address.isV4() ? v4 : v6).push_back(p);
  }
}

}  // namespace

std::vector<UpdateMessage> buildAnnouncements(std::span<const Prefix> prefixes,
                                              const OutboundAttributes& attributes) {
  std::vector<Prefix> v4;
  std::vector<Prefix> v6;
  splitByFamily(prefixes, v4, v6);
  std::vector<UpdateMessage> updates;
  if (!v4.empty()) {
    requireNextHop(attributes.nextHopV4, "IPv4");
    forEachChunk(v4, kIpv4PrefixesPerUpdate, [&](std::vector<Prefix> chunk) {
      UpdateMessage update;
      update.attributes = commonAttributes(attributes);
      update.attributes.nextHop = attributes.nextHopV4;
      update.nlri = std::move(chunk);
      updates.push_back(std::move(update));
    });
  }
  if (!v6.empty()) {
    requireNextHop(attributes.nextHopV6, "IPv6");
    forEachChunk(v6, kIpv6PrefixesPerUpdate, [&](std::vector<Prefix> chunk) {
      UpdateMessage update;
      update.attributes = commonAttributes(attributes);
      const auto& nh = attributes.nextHopV6->bytes;
      update.attributes.mpReach =
          MpReachNlri{kIpv6Unicast, std::vector<uint8_t>(nh.begin(), nh.end()), std::move(chunk)};
      updates.push_back(std::move(update));
    });
  }
  return updates;
}

std::vector<UpdateMessage> buildWithdrawals(std::span<const Prefix> prefixes) {
  std::vector<Prefix> v4;
  std::vector<Prefix> v6;
  splitByFamily(prefixes, v4, v6);
  std::vector<UpdateMessage> updates;
  forEachChunk(v4, kIpv4PrefixesPerUpdate, [&](std::vector<Prefix> chunk) {
    UpdateMessage update;
    update.withdrawn = std::move(chunk);
    updates.push_back(std::move(update));
  });
  forEachChunk(v6, kIpv6PrefixesPerUpdate, [&](std::vector<Prefix> chunk) {
    UpdateMessage update;
    update.attributes.mpUnreach = MpUnreachNlri{kIpv6Unicast, std::move(chunk)};
    updates.push_back(std::move(update));
  });
  return updates;
}

UpdateMessage buildEndOfRib(AfiSafi family) {
  UpdateMessage update;
  if (family != kIpv4Unicast) {
    update.attributes.mpUnreach = MpUnreachNlri{family, {}};
  }
  return update;
}

}  // namespace vipd::bgp
