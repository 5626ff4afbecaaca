// judge(), the config check and the network checks: router ID, local addresses, peer routes,
// rp_filter and ARP. checks_node.cc has the others.
#include "doctor/checks.h"

#include <algorithm>
#include <set>
#include <utility>

#include "doctor/check_text.h"
#include "doctor/fact_parsing.h"

namespace vipd::doctor {
namespace {

using text::from;
using text::list;

// The network of an interface address: 192.0.2.11/24 -> 192.0.2.0/24.
bgp::Prefix networkOf(const bgp::Prefix& address) {
  bgp::Prefix network = address;
  for (size_t bit = address.length; bit < address.address.size() * 8; ++bit) {
    network.address.bytes[bit / 8] &= static_cast<uint8_t>(~(0x80u >> (bit % 8)));
  }
  return network;
}

std::string addressesText(const NodeFacts& facts, bool v4) {
  std::vector<std::string> found;
  for (const auto& a : facts.addresses) {
    if (a.address.address.isV4() == v4) {
      found.push_back(fmt::format("{} on {}", a.address.toString(), a.interface));
    }
  }
  return found.empty() ? "none" : fmt::format("{}", fmt::join(found, ", "));
}

std::string interfaceOf(const bgp::IpAddress& address, const NodeFacts& facts) {
  for (const auto& a : facts.addresses) {
    if (a.address.address == address) {
      return a.interface;
    }
  }
  return "lo";  // 127.0.0.0/8
}

const Interface* findInterface(const NodeFacts& facts, std::string_view name) {
  for (const auto& i : facts.interfaces) {
    if (i.name == name) {
      return &i;
    }
  }
  return nullptr;
}

// The value in effect for rp_filter, arp_ignore and arp_announce: the larger of "all" and the
// interface's (Documentation/networking/ip-sysctl.rst).
std::optional<int> effective(const NodeFacts& facts, const std::string& interface,
                             std::optional<int> InterfaceSysctls::*key) {
  auto all = facts.sysctls.find("all");
  auto own = facts.sysctls.find(interface);
  if (all == facts.sysctls.end() || own == facts.sysctls.end() || !(all->second.*key) ||
      !(own->second.*key)) {
    return std::nullopt;
  }
  return std::max(*(all->second.*key), *(own->second.*key));
}

std::string valueText(const NodeFacts& facts, const std::string& interface,
                      std::optional<int> InterfaceSysctls::*key) {
  auto value = [&](const std::string& name) {
    auto it = facts.sysctls.find(name);
    return it != facts.sysctls.end() && it->second.*key ? std::to_string(*(it->second.*key))
                                                         : std::string("?");
  };
  return fmt::format("all {}, {} {}", value("all"), interface, value(interface));
}

bool anyIpv4Vip(const config::Config& config) {
  return std::any_of(config.vips.begin(), config.vips.end(),
                     [](const config::Vip& v) { return v.prefix.address.isV4(); });
}

}  // namespace

bool isLocalAddress(const bgp::IpAddress& address, const NodeFacts& facts) {
  if (address.isV4() && address.bytes[0] == 127) {
    return true;
  }
  return std::any_of(facts.addresses.begin(), facts.addresses.end(),
                     [&](const LocalAddress& a) { return a.address.address == address; });
}

std::vector<std::string> ingressInterfaces(const config::Config& config, const NodeFacts& facts) {
  std::set<std::string> names;
  for (const auto& route : facts.routes) {
    if (route.interface && !route.local && !route.interface->empty()) {
      names.insert(*route.interface);
    }
  }
  for (const auto& vip : config.vips) {
    const Interface* i = findInterface(facts, vip.interface);
    if (i != nullptr && !i->loopback && i->kind != "dummy") {
      names.insert(i->name);
    }
  }
  return {names.begin(), names.end()};
}

std::vector<Check> judge(const config::Config& config, const NodeFacts& facts) {
  return {checkConfigLayers(facts),
          checkRouterId(config, facts),
          checkLocalAddresses(config, facts),
          checkApiserverCertificate(config, facts),
          checkBgpPort(config, facts),
          checkBgpSessions(config, facts),
          checkPeerRoutes(config, facts),
          checkRpFilter(config, facts),
          checkArp(config, facts),
          checkVipIdentity(config, facts),
          checkVipReachable(config, facts),
          checkVipReplies(config, facts),
          checkVipExposure(config, facts),
          checkCapabilities(config, facts),
          checkStateDir(config, facts),
          checkKeyFiles(config, facts),
          checkStaticPods(config, facts)};
}

Check configRefused(std::string_view names, const std::vector<config::ConfigError>& errors) {
  std::vector<std::string> lines;
  for (const auto& e : errors) {
    lines.push_back(e.toString());
  }
  return {"config", Verdict::Fail,
          fmt::format("{}: {} error(s), so no other check ran: {}", names, errors.size(),
                      fmt::join(lines, "; ")),
          "correct each error (`vipd validate` prints them one per line); a key set in both the "
          "cluster file and the node file belongs in one of them only"};
}

Check checkConfigLayers(const NodeFacts& facts) {
  Check check{"config", Verdict::Ok, "", ""};
  check.detail = facts.config.nodeFile
                     ? fmt::format("{}: valid, and the two files merge without conflict (each "
                                   "key comes from one of them)",
                                   facts.config.names)
                     : fmt::format("{}: valid (one file, no node file)", facts.config.names);
  return check;
}

Check checkRouterId(const config::Config& config, const NodeFacts& facts) {
  Check check{"router-id", Verdict::Ok, "", ""};
  const std::string id = config.routerId.toString();
  if (facts.addressesError) {
    check.verdict = Verdict::Warn;
    check.inconclusive = true;
    check.detail = fmt::format("cannot list this node's addresses ({}); router ID {} not checked",
                               *facts.addressesError, id);
    return check;
  }
  if (isLocalAddress(config.routerId, facts)) {
    check.detail = fmt::format("router ID {}{} is this node's address on {}", id,
                               from(facts, "routerId"), interfaceOf(config.routerId, facts));
    return check;
  }
  if (config.allowNonLocalRouterId) {
    check.detail = fmt::format("router ID {}{} is no address of this node, as "
                               "allowNonLocalRouterId: true allows; another node must not use it",
                               id, from(facts, "routerId"));
    return check;
  }
  check.verdict = Verdict::Fail;
  check.detail = fmt::format(
      "router ID {}{} is not an address of this node (IPv4 addresses found: {}); vipd refuses "
      "to start with it",
      id, from(facts, "routerId"), addressesText(facts, true));
  check.fix = "render routerId from this node's own address (`vipd render`, or --router-id from "
              "the node's status.hostIP), or set allowNonLocalRouterId: true";
  return check;
}

Check checkLocalAddresses(const config::Config& config, const NodeFacts& facts) {
  Check check{"local-addresses", Verdict::Ok, "", ""};
  struct Field {
    std::string path;
    bgp::IpAddress address;
  };
  std::vector<Field> fields;
  for (size_t i = 0; i < config.peers.size(); ++i) {
    const auto& p = config.peers[i];
    if (p.sourceAddress) {
      fields.push_back({fmt::format("peers[{}].sourceAddress", i), *p.sourceAddress});
    }
    if (p.nextHopIpv6) {
      fields.push_back({fmt::format("peers[{}].nextHopIpv6", i), *p.nextHopIpv6});
    }
  }
  if (config.listen.enabled && !config.listen.address.isZero()) {
    fields.push_back({"listen.address", config.listen.address});
  }
  if (!config.metrics.address.isZero()) {
    fields.push_back({"metrics.listen", config.metrics.address});
  }
  if (config.metrics.health && !config.metrics.health->address.isZero()) {
    fields.push_back({"metrics.healthListen", config.metrics.health->address});
  }
  if (fields.empty()) {
    check.detail = "the config names no address of this node besides the router ID";
    return check;
  }
  if (facts.addressesError) {
    return unobserved(std::move(check), fmt::format("cannot list this node's addresses ({}); not checked", *facts.addressesError));
  }
  std::vector<std::string> good;
  std::vector<std::string> bad;
  bool v4 = false;
  bool v6 = false;
  for (const auto& f : fields) {
    const std::string named =
        fmt::format("{} {}{}", f.path, f.address.toString(), from(facts, f.path));
    if (isLocalAddress(f.address, facts)) {
      good.push_back(named);
    } else {
      bad.push_back(named);
      (f.address.isV4() ? v4 : v6) = true;
    }
  }
  if (bad.empty()) {
    check.detail = fmt::format("{} {} this node's", list(good), good.size() == 1 ? "is" : "are");
    return check;
  }
  check.verdict = Verdict::Fail;
  check.detail = fmt::format("{} {} not an address of this node", list(bad),
                             bad.size() == 1 ? "is" : "are");
  std::vector<std::string> found;
  if (v4) {
    found.push_back("IPv4: " + addressesText(facts, true));
  }
  if (v6) {
    found.push_back("IPv6: " + addressesText(facts, false));
  }
  check.fix = fmt::format("set each to one of this node's addresses ({}); a node file rendered "
                          "on another node does this",
                          fmt::join(found, "; "));
  return check;
}

Check checkPeerRoutes(const config::Config& config, const NodeFacts& facts) {
  Check check{"peer-routes", Verdict::Ok, "", ""};
  if (config.peers.empty()) {
    check.detail = "no peers";
    return check;
  }
  std::vector<std::string> good;
  std::vector<std::string> problems;
  std::vector<std::string> fixes;
  for (size_t i = 0; i < config.peers.size() && i < facts.routes.size(); ++i) {
    const auto& peer = config.peers[i];
    const auto& route = facts.routes[i];
    const std::string name = peer.address.toString();
    if (!route.interface) {
      problems.push_back(fmt::format("no route to peer {}: {}", name, route.error));
      fixes.push_back(fmt::format("route {} (the node's uplink), or correct peers[{}].address",
                                  name, i));
      continue;
    }
    if (route.local) {
      problems.push_back(fmt::format("peer {} is an address of this node", name));
      fixes.push_back(fmt::format("peers[{}].address must be the router's", i));
      continue;
    }
    const std::string via =
        route.gateway ? fmt::format("via {} on {}", route.gateway->toString(), *route.interface)
                      : fmt::format("on {}", *route.interface);
    const bool ebgp = peer.asn != config.localAsn;
    if (route.gateway && peer.ttlSecurity) {
      problems.push_back(fmt::format(
          "peer {} is reached {}, but ttlSecurity (GTSM) drops every segment that crossed a "
          "router",
          name, via));
      fixes.push_back(fmt::format("peer with an address on a connected network, or turn "
                                  "peers[{}].ttlSecurity off",
                                  i));
    } else if (route.gateway && ebgp && peer.ebgpMultihop == 0) {
      problems.push_back(fmt::format(
          "peer {} is reached {}, but the eBGP session is single-hop (TTL 1): its packets die "
          "at the first router",
          name, via));
      fixes.push_back(fmt::format("set peers[{}].ebgpMultihop to the number of hops, or peer "
                                  "with an address on a connected network",
                                  i));
    } else {
      good.push_back(fmt::format("{} {}", name, via));
    }
  }
  if (problems.empty()) {
    check.detail =
        fmt::format("vipd dials every peer and the kernel routes each: {}", list(good));
    return check;
  }
  check.verdict = Verdict::Fail;
  check.detail = fmt::format("{}", fmt::join(problems, "; "));
  check.fix = fmt::format("{}", fmt::join(fixes, "; "));
  return check;
}

Check checkRpFilter(const config::Config& config, const NodeFacts& facts) {
  Check check{"rp-filter", Verdict::Ok, "", ""};
  if (!anyIpv4Vip(config)) {
    check.detail = "no IPv4 VIP (rp_filter is IPv4 only)";
    return check;
  }
  const auto interfaces = ingressInterfaces(config, facts);
  if (interfaces.empty()) {
    check.detail = "no interface the VIPs' traffic arrives on is known (no peer is routed: see "
                   "peer-routes)";
    return check;
  }
  std::vector<std::string> strict;
  std::vector<std::string> unknown;
  std::vector<std::string> fine;
  for (const auto& name : interfaces) {
    auto value = effective(facts, name, &InterfaceSysctls::rpFilter);
    if (!value) {
      unknown.push_back(name);
    } else if (*value == 1) {
      strict.push_back(name);
    } else {
      fine.push_back(fmt::format("{} {} ({})", name, *value == 0 ? "off" : "loose",
                                 valueText(facts, name, &InterfaceSysctls::rpFilter)));
    }
  }
  if (!strict.empty()) {
    std::vector<std::string> where;
    std::vector<std::string> commands;
    for (const auto& name : strict) {
      where.push_back(fmt::format("{} ({})", name,
                                  valueText(facts, name, &InterfaceSysctls::rpFilter)));
      commands.push_back(sysctlName(name, "rp_filter") + "=2");
    }
    // Strict mode drops a packet whose source this node would not route back out of the
    // interface it came in on. With one uplink that holds; with several (ECMP from two ToRs)
    // the fabric delivers VIP traffic on any of them, so some of it is dropped for certain.
    const bool several = interfaces.size() > 1;
    check.verdict = several ? Verdict::Fail : Verdict::Warn;
    check.detail = fmt::format(
        "rp_filter is strict (1, the larger of all and the interface's) on {}: {}",
        list(where),
        several ? fmt::format("VIP traffic arrives on {} interfaces ({}), and strict mode drops "
                              "what comes in on one this node would not answer through",
                              interfaces.size(), list(interfaces))
                : "VIP traffic from a client this node routes back through another interface "
                  "is dropped (a second uplink, a management default route)");
    check.fix = fmt::format("sysctl -w {} (loose), and the same in /etc/sysctl.d/ to keep it",
                            fmt::join(commands, " "));
    return check;
  }
  if (!unknown.empty()) {
    check.verdict = Verdict::Warn;
    check.inconclusive = true;
    check.detail = fmt::format("cannot read rp_filter of {}", list(unknown));
    return check;
  }
  check.detail = fmt::format("not strict where VIP traffic arrives: {}", list(fine));
  return check;
}

Check checkArp(const config::Config& config, const NodeFacts& facts) {
  Check check{"arp", Verdict::Ok, "", ""};
  if (!anyIpv4Vip(config)) {
    check.detail = "no IPv4 VIP (ARP is IPv4 only)";
    return check;
  }
  if (facts.addressesError) {
    return unobserved(std::move(check), fmt::format("cannot list this node's addresses ({}); not checked", *facts.addressesError));
  }
  // A host asks for an address by ARP only when it thinks the address is on its own network:
  // a VIP outside every network of the node's interfaces is reached through a router (BGP's
  // path), whatever arp_ignore says. Inside one, the node answers for it (arp_ignore 0 answers
  // for any local address, the VIP on lo included) and may use it as an ARP source
  // (arp_announce < 2), attracting its traffic at layer 2, outside BGP's and the health gate's
  // control.
  std::vector<std::string> problems;
  std::vector<std::string> commands;
  std::vector<std::string> fine;
  for (const auto& vip : config.vips) {
    if (!vip.prefix.address.isV4()) {
      continue;
    }
    for (const auto& a : facts.addresses) {
      const Interface* i = findInterface(facts, a.interface);
      if (a.address.isHost() || (i != nullptr && i->loopback) ||
          !networkOf(a.address).contains(vip.prefix.address)) {
        continue;
      }
      const auto network = networkOf(a.address).toString();
      auto ignore = effective(facts, a.interface, &InterfaceSysctls::arpIgnore);
      auto announce = effective(facts, a.interface, &InterfaceSysctls::arpAnnounce);
      if (ignore.value_or(0) >= 1 && announce.value_or(0) >= 2 && vip.interface != a.interface) {
        fine.push_back(fmt::format("VIP {} is inside {}'s network {}, with arp_ignore {} and "
                                   "arp_announce {} there",
                                   text::address(vip.prefix), a.interface, network, *ignore,
                                   *announce));
        continue;
      }
      problems.push_back(fmt::format(
          "VIP {} is inside {}'s network {}, so hosts there ask for it by ARP, and this node "
          "answers (arp_ignore {}, arp_announce {}{})",
          text::address(vip.prefix), a.interface, network,
          ignore ? std::to_string(*ignore) : "?", announce ? std::to_string(*announce) : "?",
          vip.interface == a.interface ? fmt::format("; the VIP is on {} itself", a.interface)
                                       : ""));
      commands.push_back(sysctlName(a.interface, "arp_ignore") + "=1 " +
                         sysctlName(a.interface, "arp_announce") + "=2");
    }
  }
  if (!problems.empty()) {
    check.verdict = Verdict::Warn;
    check.detail = fmt::format("{}", fmt::join(problems, "; "));
    check.fix = fmt::format(
        "take the VIPs out of the node networks, or put them on lo and run sysctl -w {} (and in "
        "/etc/sysctl.d/)",
        fmt::join(commands, " "));
    return check;
  }
  check.detail = fine.empty() ? "no IPv4 VIP is inside a network of this node's interfaces, so "
                                "no host there asks for it by ARP"
                              : fmt::format("{}", fmt::join(fine, "; "));
  return check;
}

}  // namespace vipd::doctor
