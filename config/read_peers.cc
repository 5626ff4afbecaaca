// ConfigReader's readers for `peers` (reader.h): each peer's address and AS, its source
// address and next hop, the session timers (hold, keepalive, connect retry, OPEN wait), eBGP
// multihop, TCP-MD5 and GTSM, BFD, the address families each session carries, and the checks
// that need several of them at once (every VIP carried by some session).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "config/reader.h"
#include "config/value_rules.h"

namespace vipd::config::internal {
namespace {

using std::chrono::seconds;

// RFC 4271 section 4.2: the hold time is 0 or at least 3 seconds, in a 16-bit field of seconds.
constexpr milliseconds kMinHoldTime{3000};
constexpr milliseconds kMaxHoldTime{65535 * 1000};
constexpr milliseconds kMinConnectRetry{100};

}  // namespace

void ConfigReader::readPeers(const Field& f, std::optional<uint32_t> localAsn,
                             const std::vector<Vip>& vips, std::vector<Peer>& peers) {
  auto list = readList(f);
  if (!list) {
    return;
  }
  if (list->size() == 0) {
    error(f, "at least one peer is required");
    return;
  }
  std::vector<std::pair<bgp::IpAddress, size_t>> seen;
  for (size_t i = 0; i < list->size(); ++i) {
    std::string path = indexPath(f.path, i);
    auto peer = readPeer((*list)[i], path, localAsn, vips);
    if (!peer) {
      continue;
    }
    auto same = std::find_if(seen.begin(), seen.end(),
                             [&](const auto& s) { return s.first == peer->address; });
    if (same != seen.end()) {
      const YAML::Node peerNode = (*list)[i];
      error(peerNode["address"].Mark(), joinPath(path, "address"),
            fmt::format("duplicate peer {} (also {})", peer->address.toString(),
                        indexPath(f.path, same->second)));
      continue;
    }
    seen.emplace_back(peer->address, i);
    peers.push_back(*peer);
  }
  if (peers.size() == list->size()) {
    // Only when every peer was read: a peer with an error could be the one meant to carry it.
    checkEveryVipCarried(f, peers, vips);
  }
}

// A VIP no session carries is bound and healthy on this node but attracts no traffic: the kind of
// mistake that looks fine until the day it matters, so it is an error, not a warning. No config
// vipd accepted before `families` existed has one (every session then carried every VIP).
void ConfigReader::checkEveryVipCarried(const Field& f, const std::vector<Peer>& peers,
                                        const std::vector<Vip>& vips) {
  for (const Vip& vip : vips) {
    bgp::Afi family = vip.prefix.address.family;
    bool carried = std::any_of(peers.begin(), peers.end(), [&](const Peer& p) {
      return std::find(p.families.begin(), p.families.end(), family) != p.families.end();
    });
    if (carried) {
      continue;
    }
    error(f, fmt::format(
                 "VIP {} is carried by no session: no peer carries {} ({}); add {} to a peer's "
                 "families, or add a peer that carries it",
                 vip.prefix.toString(), familyKeyword(family),
                 family == bgp::Afi::Ipv4
                     ? "only an IPv4 peer address can: vipd cannot give an IPv6 session an IPv4 "
                       "next hop"
                     : "an IPv6 peer does by default, an IPv4 peer only with nextHopIpv6",
                 familyKeyword(family)));
    return;  // one is enough to say what to fix
  }
}

void ConfigReader::readPeerDefaults(const Field& f) {
  peerDefaults_ = readMapping(f.value, f.path,
                              {"holdTime", "keepaliveTime", "connectRetryTime", "openHoldTime",
                               "ebgpMultihop", "ttlSecurity", "bfd"});
}

void ConfigReader::applyPeerDefaults(Mapping& peer) const {
  if (!peerDefaults_) {
    return;
  }
  for (const auto& [name, field] : peerDefaults_->fields) {
    if (!peer.find(name)) {
      peer.fields.emplace_back(name, field);
    }
  }
}

std::optional<Peer> ConfigReader::readPeer(const YAML::Node& node, const std::string& path,
                                           std::optional<uint32_t> localAsn,
                                           const std::vector<Vip>& vips) {
  auto m = readMapping(node, path,
                       {"address", "asn", "port", "sourceAddress", "holdTime", "keepaliveTime",
                        "connectRetryTime", "openHoldTime", "ebgpMultihop", "nextHopIpv6",
                        "passwordFile", "ttlSecurity", "bfd", "families"});
  if (!m) {
    return std::nullopt;
  }
  applyPeerDefaults(*m);
  // The keys are read in this order, so errors at one position (an alias used twice) keep it.
  size_t errorsBefore = errors_.size();
  Peer peer;
  // Who and where.
  std::optional<bgp::IpAddress> address = readPeerAddress(*m, peer);
  for (const Vip& vip : vips) {
    if (address && vip.prefix.address == *address) {
      // The VIP is this node's own address: a session to it would be a session to itself.
      error(*m->find("address"), fmt::format("peer address {} is VIP {}; a peer is a router "
                                             "of the fabric, never the VIP",
                                             address->toString(), vip.prefix.toString()));
    }
  }
  std::optional<uint32_t> asn;
  if (const Field* f = require(*m, "asn")) {
    asn = readAsn(*f);
    peer.asn = asn.value_or(0);
  }
  if (const Field* f = m->find("port")) {
    if (auto port = readUnsigned(*f, 1, 65535)) {
      peer.port = static_cast<uint16_t>(*port);
    }
  }
  if (const Field* f = m->find("sourceAddress")) {
    readSourceAddress(*f, address, peer);
  }
  // Timers.
  readHoldAndKeepalive(*m, peer);
  readRetryTimers(*m, peer);
  // Reach and next hop, then what is judged against them: TTL security, BFD, next-hop families.
  if (const Field* f = m->find("ebgpMultihop")) {
    readEbgpMultihop(*f, asn, localAsn, peer);
  }
  const Field* nextHopIpv6 = m->find("nextHopIpv6");
  if (nextHopIpv6) {
    readNextHopIpv6(*nextHopIpv6, peer);
  }
  readAuthAndTtl(*m, peer);
  if (const Field* f = m->find("bfd")) {
    readBfd(*f, peer);
  }
  if (address) {
    readFamilies(*m, *address, nextHopIpv6, vips, peer);
  }
  if (errors_.size() != errorsBefore) {
    return std::nullopt;
  }
  return peer;
}

// The required peer address; nothing when it is missing or cannot be a BGP neighbour.
std::optional<bgp::IpAddress> ConfigReader::readPeerAddress(const Mapping& m, Peer& peer) {
  const Field* f = require(m, "address");
  if (f == nullptr) {
    return std::nullopt;
  }
  auto address = readAddress(*f);
  if (!address) {
    return std::nullopt;
  }
  if (address->isLinkLocalV6()) {
    error(*f, fmt::format("{} is link-local, which needs an interface scope that vipd does "
                          "not support; use a global address",
                          address->toString()));
    return std::nullopt;
  }
  if (address->isZero() || isBroadcast(*address) || isMulticast(*address)) {
    error(*f, fmt::format("{} is not a unicast address", address->toString()));
    return std::nullopt;
  }
  peer.address = *address;
  return address;
}

// `address` is the peer's, when valid: the source must be of its family.
void ConfigReader::readSourceAddress(const Field& f, const std::optional<bgp::IpAddress>& address,
                                     Peer& peer) {
  auto source = readAddress(f);
  if (!source) {
    return;
  }
  if (address && source->family != address->family) {
    error(f, fmt::format("sourceAddress {} is {} but the peer address {} is {}; they must be "
                         "the same family",
                         source->toString(), familyName(*source), address->toString(),
                         familyName(*address)));
  } else if (source->isZero()) {
    error(f,
          "leave sourceAddress out to let the kernel choose; it cannot be the unspecified "
          "address");
  } else if (source->isLinkLocalV6() || isMulticast(*source) || isBroadcast(*source)) {
    error(f, fmt::format("{} cannot be a session's source address; use a global unicast "
                         "address",
                         source->toString()));
  } else {
    peer.sourceAddress = *source;
  }
}

void ConfigReader::readHoldAndKeepalive(const Mapping& m, Peer& peer) {
  bool holdValid = true;
  if (const Field* f = m.find("holdTime")) {
    holdValid = false;
    if (auto d = readDuration(*f)) {
      const std::string& text = f->value.Scalar();
      if (*d % seconds{1} != milliseconds{0}) {
        error(*f, fmt::format("hold time must be whole seconds (it is a count of seconds in the "
                              "OPEN message), got {}",
                              text));
      } else if (*d > milliseconds{0} && *d < kMinHoldTime) {
        error(*f, fmt::format("hold time {} is not allowed; use 0 (no keepalives) or at least 3s "
                              "(RFC 4271 section 4.2 forbids 1 and 2 seconds)",
                              text));
      } else if (*d > kMaxHoldTime) {
        error(*f, fmt::format("hold time {} is too long; the most BGP can carry is {}", text,
                              formatDuration(kMaxHoldTime)));
      } else {
        peer.holdTime = *d;
        holdValid = true;
      }
    }
  }
  const Field* f = m.find("keepaliveTime");
  if (f == nullptr) {
    if (peer.holdTime == milliseconds{0}) {
      peer.keepaliveTime = milliseconds{0};
    } else {
      peer.keepaliveTime = std::max<milliseconds>(
          seconds{1}, std::chrono::duration_cast<seconds>(peer.holdTime / 3));
    }
    return;
  }
  auto d = readDuration(*f);
  if (!d) {
    return;
  }
  const std::string& text = f->value.Scalar();
  if (*d % seconds{1} != milliseconds{0}) {
    error(*f, fmt::format("keepalive time must be whole seconds, got {}", text));
    return;
  }
  if (!holdValid) {
    // Comparing with a hold time that is already reported as wrong would only add noise.
    return;
  }
  if (peer.holdTime == milliseconds{0}) {
    if (*d != milliseconds{0}) {
      error(*f, fmt::format("keepalive time must be 0 when holdTime is 0: no keepalives are sent "
                            "(RFC 4271 section 4.4), got {}",
                            text));
      return;
    }
  } else if (*d == milliseconds{0}) {
    error(*f, fmt::format("keepalive time 0 would let the peer's hold timer ({}) expire; use at "
                          "least 1s, or set holdTime to 0 as well",
                          formatDuration(peer.holdTime)));
    return;
  } else if (*d >= peer.holdTime) {
    error(*f, fmt::format("keepalive time {} must be less than the hold time {} (one third is "
                          "usual)",
                          text, formatDuration(peer.holdTime)));
    return;
  }
  peer.keepaliveTime = *d;
}

// connectRetryTime and openHoldTime.
void ConfigReader::readRetryTimers(const Mapping& m, Peer& peer) {
  if (const Field* f = m.find("connectRetryTime")) {
    if (auto d = readDuration(*f)) {
      if (*d < kMinConnectRetry || *d > kMaxConnectRetry) {
        error(*f,
              fmt::format("connect retry time {} is out of range; use {} to {}", f->value.Scalar(),
                          formatDuration(kMinConnectRetry), formatDuration(kMaxConnectRetry)));
      } else {
        peer.connectRetryTime = *d;
      }
    }
  }
  if (const Field* f = m.find("openHoldTime")) {
    if (auto d = readBoundedDuration(*f, kMinOpenHoldTime, kMaxOpenHoldTime)) {
      peer.openHoldTime = *d;
    }
  }
}

// `asn` and `localAsn` are nothing when they were missing or wrong; then iBGP cannot be told.
void ConfigReader::readEbgpMultihop(const Field& f, std::optional<uint32_t> asn,
                                    std::optional<uint32_t> localAsn, Peer& peer) {
  if (auto hops = readUnsigned(f, 0, 255)) {
    if (*hops > 0 && asn && localAsn && *asn == *localAsn) {
      error(f, fmt::format("ebgpMultihop only applies to eBGP; this peer is iBGP (asn {} equals "
                           "localAsn); remove it",
                           *asn));
    } else {
      peer.ebgpMultihop = static_cast<uint8_t>(*hops);
    }
  }
}

void ConfigReader::readNextHopIpv6(const Field& f, Peer& peer) {
  if (auto nh = readAddress(f)) {
    if (!nh->isV6()) {
      error(f, fmt::format("nextHopIpv6 must be an IPv6 address, got {}", nh->toString()));
    } else if (nh->isZero() || nh->isLinkLocalV6() || isMulticast(*nh) || isLoopback(*nh)) {
      error(f, fmt::format("{} cannot be a next hop; use a global IPv6 address of this node",
                           nh->toString()));
    } else {
      peer.nextHopIpv6 = *nh;
    }
  }
}

// passwordFile (TCP-MD5) and ttlSecurity (GTSM); the latter after ebgpMultihop, which it needs.
void ConfigReader::readAuthAndTtl(const Mapping& m, Peer& peer) {
  if (const Field* f = m.find("passwordFile")) {
    // The file itself (its presence and mode) is checked when the daemon starts: the config is
    // validated on machines, such as a render host, that do not hold the key.
    peer.passwordFile = readAbsolutePath(*f, "TCP-MD5 password file");
  }
  if (const Field* f = m.find("ttlSecurity")) {
    if (auto on = readBool(*f)) {
      // GTSM accepts only TTL 255 on arrival, which only a sender on the link can meet: each
      // router hop lowers the TTL by one. ebgpMultihop 1 means the link too.
      if (*on && peer.ebgpMultihop > 1) {
        error(*f, fmt::format("ttlSecurity (GTSM, RFC 5082) needs the peer on the link, but this "
                              "peer is {} hops away (ebgpMultihop {}); each router hop lowers the "
                              "TTL below the 255 GTSM requires, so the session could never come "
                              "up: remove ebgpMultihop or turn ttlSecurity off",
                              peer.ebgpMultihop, peer.ebgpMultihop));
      } else {
        peer.ttlSecurity = *on;
      }
    }
  }
}

void ConfigReader::readBfd(const Field& f, Peer& peer) {
  auto m = readMapping(f.value, f.path, {"enabled", "minTx", "minRx", "multiplier", "multihop"});
  if (!m) {
    return;
  }
  Bfd& bfd = peer.bfd;
  // Written out, a bfd block means BFD is wanted: `enabled: false` turns it off explicitly.
  bfd.enabled = true;
  if (const Field* e = m->find("enabled")) {
    if (auto enabled = readBool(*e)) {
      bfd.enabled = *enabled;
    }
  }
  if (const Field* t = m->find("minTx")) {
    if (auto d = readBoundedDuration(*t, kMinBfdInterval, kMaxBfdInterval)) {
      bfd.minTx = *d;
    }
  }
  if (const Field* r = m->find("minRx")) {
    if (auto d = readBoundedDuration(*r, kMinBfdInterval, kMaxBfdInterval)) {
      bfd.minRx = *d;
    }
  }
  if (const Field* x = m->find("multiplier")) {
    if (auto mult = readUnsigned(*x, 1, 255)) {
      bfd.multiplier = static_cast<uint8_t>(*mult);
    }
  }
  const Field* hop = m->find("multihop");
  if (hop) {
    if (auto multihop = readBool(*hop)) {
      bfd.multihop = *multihop;
    }
  }
  // RFC 5881 single hop needs the peer on the link (TTL 255 both ways); a session configured
  // as multi-hop eBGP is not, and single-hop packets would be dropped at the first router.
  if (bfd.enabled && !bfd.multihop && peer.ebgpMultihop > 1) {
    error(hop ? *hop : f,
          fmt::format("this peer is {} hops away (ebgpMultihop {}) but BFD is single hop; set "
                      "bfd.multihop: true (RFC 5883, UDP 4784)",
                      peer.ebgpMultihop, peer.ebgpMultihop));
  }
}

// RFC 4760/2545: every announced route needs a next hop of its own family. An IPv4 session
// supplies its local address for /32 VIPs and nextHopIpv6 for /128 VIPs; an IPv6 session its
// local address (or nextHopIpv6) for /128 VIPs, and nothing for /32 VIPs: vipd has no IPv4 next
// hop to give it (RFC 8950 would need the peer's extended next hop, which vipd does not speak).
// `nextHopIpv6` is the key when present (an invalid value is already reported).
void ConfigReader::readFamilies(const Mapping& m, const bgp::IpAddress& address,
                                const Field* nextHopIpv6, const std::vector<Vip>& vips,
                                Peer& peer) {
  const Field* f = m.find("families");
  if (f == nullptr) {
    peer.families = defaultFamilies(address, nextHopIpv6 != nullptr, vips);
    if (peer.families.empty() && !vips.empty()) {
      // Every VIP is of a family this session cannot carry by default: say what would carry it.
      const Vip& vip = vips.front();
      error(m.mark, m.path,
            address.isV4()
                ? fmt::format("VIP {} needs an IPv6 next hop; this IPv4 session has none, so "
                              "it would carry no VIP: set nextHopIpv6",
                              vip.prefix.toString())
                : fmt::format("IPv4 VIP {} over an IPv6 session needs an IPv4 next hop, which "
                              "vipd cannot supply, so this session would carry no VIP; use an "
                              "IPv4 peer address",
                              vip.prefix.toString()));
    }
    return;
  }
  auto list = readList(*f);
  if (!list) {
    return;
  }
  if (list->size() == 0) {
    error(*f,
          "list at least one family (ipv4, ipv6), or leave families out for the default: the "
          "session's own family, and ipv6 on an IPv4 session with nextHopIpv6");
    return;
  }
  std::vector<bgp::Afi> families;
  for (size_t j = 0; j < list->size(); ++j) {
    Field item{YAML::Node(), (*list)[j], indexPath(f->path, j)};
    auto text = readString(item);
    if (!text) {
      continue;
    }
    bgp::Afi family;
    if (*text == "ipv4") {
      family = bgp::Afi::Ipv4;
    } else if (*text == "ipv6") {
      family = bgp::Afi::Ipv6;
    } else {
      error(item, fmt::format("'{}' is not an address family; use ipv4 or ipv6", *text));
      continue;
    }
    if (std::find(families.begin(), families.end(), family) != families.end()) {
      error(item, fmt::format("{} is listed twice", *text));
      continue;
    }
    if (family == bgp::Afi::Ipv4 && address.isV6()) {
      error(item, fmt::format("ipv4 over an IPv6 session needs an IPv4 next hop, which vipd "
                              "cannot supply; carry the IPv4 VIPs over a peer with an IPv4 "
                              "address (peer {} is IPv6)",
                              address.toString()));
      continue;
    }
    if (family == bgp::Afi::Ipv6 && address.isV4() && nextHopIpv6 == nullptr) {
      error(item, fmt::format("ipv6 over an IPv4 session needs an IPv6 next hop: set nextHopIpv6 "
                              "to a global IPv6 address of this node (peer {} is IPv4)",
                              address.toString()));
      continue;
    }
    families.push_back(family);
  }
  bool carriesIpv6 =
      std::find(families.begin(), families.end(), bgp::Afi::Ipv6) != families.end();
  if (nextHopIpv6 != nullptr && address.isV4() && !carriesIpv6 &&
      families.size() == list->size()) {
    // Left there, it reads as if this session carried the IPv6 VIPs.
    error(*nextHopIpv6, "nextHopIpv6 is never used: families leaves out ipv6, so this session "
                        "carries no IPv6 VIP; remove nextHopIpv6 or add ipv6 to families");
  }
  std::sort(families.begin(), families.end());
  peer.families = std::move(families);
}

}  // namespace vipd::config::internal

namespace vipd::config {

std::vector<bgp::Afi> defaultFamilies(const bgp::IpAddress& peerAddress, bool nextHopIpv6Given,
                                      const std::vector<Vip>& vips) {
  auto any = [&vips](bgp::Afi family) {
    return std::any_of(vips.begin(), vips.end(),
                       [family](const Vip& v) { return v.prefix.address.family == family; });
  };
  std::vector<bgp::Afi> families;
  if (peerAddress.isV4() && any(bgp::Afi::Ipv4)) {
    families.push_back(bgp::Afi::Ipv4);
  }
  if ((peerAddress.isV6() || nextHopIpv6Given) && any(bgp::Afi::Ipv6)) {
    families.push_back(bgp::Afi::Ipv6);
  }
  return families;
}

std::string_view familyKeyword(bgp::Afi family) {
  return family == bgp::Afi::Ipv4 ? "ipv4" : "ipv6";
}

}  // namespace vipd::config
