#include "config/diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

#include "config/duration.h"

namespace vipd::config {
namespace {

// ---- values as the config spells them ----
std::string show(const std::string& value) { return fmt::format("\"{}\"", value); }
std::string show(bool value) { return value ? "true" : "false"; }
std::string show(uint8_t value) { return fmt::format("{}", value); }
std::string show(uint16_t value) { return fmt::format("{}", value); }
std::string show(uint32_t value) { return fmt::format("{}", value); }
std::string show(milliseconds value) { return formatDuration(value); }
std::string show(const bgp::IpAddress& value) { return value.toString(); }
std::string show(const bgp::Prefix& value) { return value.toString(); }
std::string show(const ListenAddress& value) {
  return value.address.isV6() ? fmt::format("[{}]:{}", value.address.toString(), value.port)
                              : fmt::format("{}:{}", value.address.toString(), value.port);
}
std::string show(Mode value) { return std::string(modeName(value)); }
std::string show(bgp::Afi value) { return std::string(familyKeyword(value)); }
std::string show(const Community& value) { return fmt::format("{}:{}", value.asn, value.value); }
std::string show(const bgp::LargeCommunity& value) {
  return fmt::format("{}:{}:{}", value.globalAdministrator, value.localData1, value.localData2);
}
std::string show(Health::Type value) {
  switch (value) {
    case Health::Type::Apiserver:
      return "apiserver";
    case Health::Type::Tcp:
      return "tcp";
    case Health::Type::None:
      return "none";
  }
  return "unknown";
}
std::string show(Health::OnFailure value) {
  return value == Health::OnFailure::Degrade ? "degrade" : "withdraw";
}
std::string show(ReturnPath::Mode value) { return std::string(returnPathModeName(value)); }
template <typename T>
std::string show(const std::optional<T>& value) {
  return value ? show(*value) : "unset";
}
template <typename T>
std::string show(const std::vector<T>& values) {
  std::string out = "[";
  for (const T& value : values) {
    out += (out.size() > 1 ? ", " : "") + show(value);
  }
  return out + "]";
}

class Differ {
 public:
  explicit Differ(std::vector<ConfigChange>& out) : out_(out) {}

  template <typename T>
  void field(const std::string& path, const T& before, const T& after,
             ChangeEffect effect = ChangeEffect::NeedsRestart) {
    if (before != after) {
      out_.push_back({path, show(before), show(after), effect});
    }
  }
  void whole(const std::string& path, std::string before, std::string after,
             ChangeEffect effect = ChangeEffect::NeedsRestart) {
    out_.push_back({path, std::move(before), std::move(after), effect});
  }

 private:
  std::vector<ConfigChange>& out_;
};

// Visits (running, next) with `next` writable: puts the running value back into every field
// that needs a restart, so what is left is the config the daemon can run now (liveConfig()).
class Reverter {
 public:
  template <typename T>
  void field(const std::string&, const T& before, T& after,
             ChangeEffect effect = ChangeEffect::NeedsRestart) {
    if (effect == ChangeEffect::NeedsRestart) {
      after = before;
    }
  }
  void whole(const std::string&, const std::string&, const std::string&, ChangeEffect) {}
};

// Visits every field as a (before, after) pair; listFields() passes the same config twice.
class Lister {
 public:
  explicit Lister(std::vector<std::pair<std::string, std::string>>& out) : out_(out) {}

  template <typename T>
  void field(const std::string& path, const T&, const T& value,
             ChangeEffect = ChangeEffect::NeedsRestart) {
    out_.emplace_back(path, show(value));
  }
  void whole(const std::string&, const std::string&, const std::string&, ChangeEffect) {}

 private:
  std::vector<std::pair<std::string, std::string>>& out_;
};

// `B` is `const X` for diffConfig() and listFields(), `X` for liveConfig()'s Reverter. Every field
// of a peer applies live: the session alone is reset (or, for passwordFile, reset only when the
// key in the file differs; see reload_plan.h).
constexpr auto kLive = ChangeEffect::AppliesLive;

template <typename Visitor, typename B>
void diffBfd(Visitor& d, const std::string& path, const Bfd& a, B& b) {
  d.field(path + ".enabled", a.enabled, b.enabled, kLive);
  d.field(path + ".minTx", a.minTx, b.minTx, kLive);
  d.field(path + ".minRx", a.minRx, b.minRx, kLive);
  d.field(path + ".multiplier", a.multiplier, b.multiplier, kLive);
  d.field(path + ".multihop", a.multihop, b.multihop, kLive);
}

template <typename Visitor, typename B>
void diffPeer(Visitor& d, const std::string& path, const Peer& a, B& b) {
  d.field(path + ".asn", a.asn, b.asn, kLive);
  d.field(path + ".port", a.port, b.port, kLive);
  d.field(path + ".sourceAddress", a.sourceAddress, b.sourceAddress, kLive);
  d.field(path + ".holdTime", a.holdTime, b.holdTime, kLive);
  d.field(path + ".keepaliveTime", a.keepaliveTime, b.keepaliveTime, kLive);
  d.field(path + ".connectRetryTime", a.connectRetryTime, b.connectRetryTime, kLive);
  d.field(path + ".openHoldTime", a.openHoldTime, b.openHoldTime, kLive);
  d.field(path + ".ebgpMultihop", a.ebgpMultihop, b.ebgpMultihop, kLive);
  d.field(path + ".nextHopIpv6", a.nextHopIpv6, b.nextHopIpv6, kLive);
  d.field(path + ".families", a.families, b.families, kLive);
  d.field(path + ".passwordFile", a.passwordFile, b.passwordFile, kLive);
  d.field(path + ".ttlSecurity", a.ttlSecurity, b.ttlSecurity, kLive);
  diffBfd(d, path + ".bfd", a.bfd, b.bfd);
}

// A VIP's interface needs a restart: moving a bound address between interfaces is an unbind
// and a bind vipd does not do behind the operator's back. rebind and createInterface are read
// by the binder at each bind.
template <typename Visitor, typename B>
void diffVip(Visitor& d, const std::string& path, const Vip& a, B& b) {
  d.field(path + ".interface", a.interface, b.interface);
  d.field(path + ".createInterface", a.createInterface, b.createInterface, kLive);
  d.field(path + ".rebind", a.rebind, b.rebind, kLive);
}

// Peers by address, VIPs by prefix: the identity an operator means, whatever the list's order.
// `key` gives an element's identity, `name` its text in the path. Adding or removing a peer or a
// VIP applies live (the other sessions and VIPs are untouched).
template <typename Visitor, typename T, typename After, typename Key, typename Name,
          typename Diff>
void diffList(Visitor& d, std::string_view list, const std::vector<T>& before, After& after,
              Key key, Name name, Diff diff) {
  auto find = [&key](const std::vector<T>& in, const auto& wanted) -> const T* {
    for (const T& element : in) {
      if (key(element) == wanted) {
        return &element;
      }
    }
    return nullptr;
  };
  for (auto& b : after) {
    std::string path = fmt::format("{}[{}]", list, name(b));
    if (const T* a = find(before, key(b))) {
      diff(d, path, *a, b);
    } else {
      d.whole(path, "absent", "added", kLive);
    }
  }
  for (const T& a : before) {
    auto kept = std::find_if(after.begin(), after.end(),
                             [&](const T& b) { return key(b) == key(a); });
    if (kept == after.end()) {
      d.whole(fmt::format("{}[{}]", list, name(a)), "present", "removed", kLive);
    }
  }
}

// Every field of `a` against the same field of `b`, in config.h's order, each marked with what
// a change of it means for the running daemon (the one list of what applies live: diffConfig(),
// liveConfig() and, through them, the reload plan read it).
//
// Needs a restart: the identity the sessions and the handoff were opened with (routerId,
// localAsn), the listeners and sockets (listen, control, metrics), mode and handoff, a VIP's
// interface, allowNonLocalRouterId (checked at start only) and kubernetes. Everything else
// applies live.
template <typename Visitor, typename B>
void walkFields(Visitor& d, const Config& a, B& b) {
  d.field("apiVersion", a.apiVersion, b.apiVersion);
  d.field("kind", a.kind, b.kind);
  d.field("routerId", a.routerId, b.routerId);
  d.field("localAsn", a.localAsn, b.localAsn);
  d.field("communities", a.communities, b.communities, kLive);
  d.field("largeCommunities", a.largeCommunities, b.largeCommunities, kLive);
  d.field("allowNonLocalRouterId", a.allowNonLocalRouterId, b.allowNonLocalRouterId);
  d.field("listen.enabled", a.listen.enabled, b.listen.enabled);
  d.field("listen.address", a.listen.address, b.listen.address);
  d.field("listen.port", a.listen.port, b.listen.port);
  d.field("control.socket", a.control.socket, b.control.socket);
  d.field("control.instanceSocket", a.control.instanceSocket, b.control.instanceSocket);
  d.field("control.stateDir", a.control.stateDir, b.control.stateDir);
  d.field("control.group", a.control.group, b.control.group);
  d.field("drain.gracefulShutdownTime", a.drain.gracefulShutdownTime, b.drain.gracefulShutdownTime,
          kLive);
  d.field("drain.timeout", a.drain.timeout, b.drain.timeout, kLive);
  d.field("drain.unbindDelay", a.drain.unbindDelay, b.drain.unbindDelay, kLive);
  d.field("health.type", a.health.type, b.health.type, kLive);
  d.field("health.url", a.health.url, b.health.url, kLive);
  d.field("health.caFile", a.health.caFile, b.health.caFile, kLive);
  d.field("health.certFile", a.health.certFile, b.health.certFile, kLive);
  d.field("health.keyFile", a.health.keyFile, b.health.keyFile, kLive);
  d.field("health.serverName", a.health.serverName, b.health.serverName, kLive);
  d.field("health.address", a.health.address, b.health.address, kLive);
  d.field("health.interval", a.health.interval, b.health.interval, kLive);
  d.field("health.timeout", a.health.timeout, b.health.timeout, kLive);
  d.field("health.rise", a.health.rise, b.health.rise, kLive);
  d.field("health.fall", a.health.fall, b.health.fall, kLive);
  d.field("health.hardFall", a.health.hardFall, b.health.hardFall, kLive);
  d.field("health.onFailure", a.health.onFailure, b.health.onFailure, kLive);
  d.field("health.degrade.prepend", a.health.degrade.prepend, b.health.degrade.prepend, kLive);
  d.field("health.degrade.localPref", a.health.degrade.localPref, b.health.degrade.localPref,
          kLive);
  d.field("health.degrade.communities", a.health.degrade.communities,
          b.health.degrade.communities, kLive);
  d.field("health.unbindWhenUnhealthy", a.health.unbindWhenUnhealthy,
          b.health.unbindWhenUnhealthy, kLive);
  d.field("metrics.address", a.metrics.address, b.metrics.address);
  d.field("metrics.port", a.metrics.port, b.metrics.port);
  d.field("metrics.healthListen", a.metrics.health, b.metrics.health);
  d.field("mode", a.mode, b.mode);
  d.field("handoff.dir", a.handoff.dir, b.handoff.dir);
  d.field("handoff.restartTime", a.handoff.restartTime, b.handoff.restartTime);
  d.field("returnPath.mode", a.returnPath.mode, b.returnPath.mode, kLive);
  d.field("returnPath.interval", a.returnPath.interval, b.returnPath.interval, kLive);
  d.field("returnPath.timeout", a.returnPath.timeout, b.returnPath.timeout, kLive);
  d.field("returnPath.flows", a.returnPath.flows, b.returnPath.flows, kLive);
  d.field("returnPath.fall", a.returnPath.fall, b.returnPath.fall, kLive);
  d.field("returnPath.rise", a.returnPath.rise, b.returnPath.rise, kLive);
  d.field("returnPath.relayPort", a.returnPath.relayPort, b.returnPath.relayPort, kLive);
  d.field("returnPath.targets", a.returnPath.targets, b.returnPath.targets, kLive);
  d.field("returnPath.relayNetworks", a.returnPath.relayNetworks, b.returnPath.relayNetworks,
          kLive);
  d.field("guard.minAnnouncers", a.guard.minAnnouncers, b.guard.minAnnouncers, kLive);
  d.field("guard.expectedAnnouncers", a.guard.expectedAnnouncers, b.guard.expectedAnnouncers,
          kLive);
  d.field("guard.nodesShareAsn", a.guard.nodesShareAsn, b.guard.nodesShareAsn, kLive);
  // Read once, when the Announcer's confirmation clock is made: a restart applies it.
  d.field("guard.confirmTime", a.guard.confirmTime, b.guard.confirmTime);
  // Not live yet: the Speaker does not use the link (issue 41, part 1 is the library alone).
  d.field("kubernetes.enabled", a.kubernetes.enabled, b.kubernetes.enabled);
  d.field("kubernetes.kubeconfig", a.kubernetes.kubeconfig, b.kubernetes.kubeconfig);
  d.field("kubernetes.nodeName", a.kubernetes.nodeName, b.kubernetes.nodeName);
  diffList(
      d, "peers", a.peers, b.peers, [](const Peer& p) { return p.address; },
      [](const Peer& p) { return p.address.toString(); },
      [](Visitor& v, const std::string& path, const Peer& x, auto& y) {
        diffPeer(v, path, x, y);
      });
  diffList(
      d, "vips", a.vips, b.vips, [](const Vip& v) { return v.prefix; },
      [](const Vip& v) { return v.prefix.toString(); },
      [](Visitor& v, const std::string& path, const Vip& x, auto& y) { diffVip(v, path, x, y); });
}

}  // namespace

std::vector<ConfigChange> diffConfig(const Config& running, const Config& next) {
  std::vector<ConfigChange> changes;
  Differ d(changes);
  const Config& a = running;
  const Config& b = next;
  walkFields(d, a, b);
  if (changes.empty() && running != next) {
    // Equal but for the order of peers or VIPs (not a change), or a field not named above.
    Config aSorted = a;
    Config bSorted = b;
    for (Config* c : {&aSorted, &bSorted}) {
      std::ranges::sort(c->peers, {}, &Peer::address);
      std::ranges::sort(c->vips, {}, &Vip::prefix);
    }
    if (aSorted != bSorted) {
      d.whole("(unknown)", "a field this version cannot name", "changed",
              ChangeEffect::NeedsRestart);
    }
  }
  return changes;
}

Config liveConfig(const Config& running, const Config& next) {
  Config applied = next;
  Reverter reverter;
  walkFields(reverter, running, applied);
  return applied;
}

std::vector<std::pair<std::string, std::string>> listFields(const Config& config) {
  std::vector<std::pair<std::string, std::string>> fields;
  Lister lister(fields);
  walkFields(lister, config, config);
  return fields;
}

}  // namespace vipd::config
