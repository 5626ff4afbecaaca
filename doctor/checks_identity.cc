// The checks that the VIP never becomes the node's identity (issue 42): not the kubelet's node
// IP nor etcd's or the apiserver's advertised address, reachable from the node itself, its
// replies leaving where the peers' routes go, and not exposed on an interface another routing
// daemon announces. A Talos setup was rolled back for the first: a node that takes the VIP as
// its own address registers it, and the VIP's next move strands the node.
#include <algorithm>
#include <set>

#include "doctor/check_text.h"
#include "doctor/checks.h"

namespace vipd::doctor {
namespace {

using text::list;

bool isVipAddress(const config::Config& config, const bgp::IpAddress& address) {
  return std::any_of(config.vips.begin(), config.vips.end(),
                     [&](const auto& v) { return v.prefix.address == address; });
}

const Interface* interfaceNamed(const NodeFacts& facts, std::string_view name) {
  for (const auto& i : facts.interfaces) {
    if (i.name == name) {
      return &i;
    }
  }
  return nullptr;
}

// The interfaces a VIP is bound on here that are not loopback or dummy: where the rest of the
// node (the kubelet choosing its IP, a routing daemon exporting connected addresses) sees it as
// an address of a real interface.
std::vector<std::string> exposedOn(const NodeFacts& facts, const bgp::IpAddress& vip) {
  std::vector<std::string> out;
  for (const auto& a : facts.addresses) {
    const Interface* i = interfaceNamed(facts, a.interface);
    if (a.address.address == vip && !(i != nullptr && (i->loopback || i->kind == "dummy"))) {
      out.push_back(a.interface);
    }
  }
  return out;
}

std::string process(const Process& p) { return fmt::format("{} (pid {})", p.name, p.pid); }

}  // namespace

Check checkVipIdentity(const config::Config& config, const NodeFacts& facts) {
  Check check{"vip-identity", Verdict::Ok, "", ""};
  std::vector<std::string> problems;
  std::vector<std::string> fixes;
  std::vector<std::string> seen;
  for (const auto& id : facts.identities) {
    for (const auto& address : id.addresses) {
      if (isVipAddress(config, address)) {
        problems.push_back(fmt::format("VIP {} is {}'s {} ({})", address.toString(), id.program,
                                       id.flag, id.source));
        fixes.push_back(fmt::format("give {} this node's own address in {}", id.program,
                                    id.flag));
      } else {
        seen.push_back(fmt::format("{} {} {}", id.program, id.flag, address.toString()));
      }
    }
  }
  if (!problems.empty()) {
    check.verdict = Verdict::Fail;
    check.detail = list(problems) +
                   ": the VIP moves between nodes and an identity must not (the node registers "
                   "it, and the VIP's next move strands the node)";
    check.fix = list(fixes);
    return check;
  }
  std::sort(seen.begin(), seen.end());
  seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
  if (facts.kubeletSeen && !facts.kubeletNodeIpSet) {
    for (const auto& vip : config.vips) {
      auto on = exposedOn(facts, vip.prefix.address);
      if (!on.empty()) {
        check.verdict = Verdict::Warn;
        check.detail = fmt::format(
            "the kubelet has no --node-ip and VIP {} is bound on {}: the kubelet picks its node "
            "IP from the host's interfaces and may take the VIP",
            text::address(vip.prefix), list(on));
        check.fix =
            "set the kubelet's --node-ip to this node's address (kubeadm: "
            "nodeRegistration.kubeletExtraArgs node-ip), or bind the VIP on lo";
        return check;
      }
    }
  }
  if (seen.empty() && !facts.kubeletSeen) {
    check.detail =
        "no kubelet, kube-apiserver or etcd identity visible to this process (run vipd doctor "
        "on the host to check them)";
    return check;
  }
  check.detail = seen.empty() ? "the kubelet picks its own node IP; no VIP is on an interface it "
                                "could take it from"
                              : "no VIP among " + list(seen);
  return check;
}

Check checkVipReachable(const config::Config& config, const NodeFacts& facts) {
  Check check{"vip-reachable", Verdict::Ok, "", ""};
  std::vector<std::string> fine;
  std::vector<std::string> problems;
  std::vector<std::string> unrouted;
  std::vector<std::string> commands;
  for (const auto& route : facts.vipRoutes) {
    const auto vip = text::address(route.vip);
    if (route.local) {
      fine.push_back(fmt::format("{} is bound here", vip));
    } else if (route.interface) {
      fine.push_back(fmt::format("{} through {}", vip, *route.interface));
    } else if (route.noRoute) {
      unrouted.push_back(vip);
    } else {
      problems.push_back(fmt::format("this node cannot reach VIP {}: {}", vip, route.error));
      commands.push_back(fmt::format("ip route get {}", vip));
    }
  }
  if (facts.vipRoutes.empty()) {
    check.detail = config.vips.empty() ? "no VIP configured" : "not looked up";
    return check;
  }
  // No route at all is what a node without a default route has before vipd binds the VIP (and
  // after it withdraws): a warning, since only the node's own clients of the VIP suffer then.
  // A route or rule that refuses the VIP is a mistake: it outlives every bind.
  if (problems.empty() && !unrouted.empty()) {
    check.verdict = Verdict::Warn;
    check.detail = fmt::format(
        "{} not bound here and no route to {}: while this node does not announce, its own "
        "clients of the VIP (the kubelet, kubectl) cannot reach it",
        list(unrouted), unrouted.size() == 1 ? "it" : "them");
    check.fix = "give the node a default route, or a route to the VIPs through the fabric";
    return check;
  }
  if (!problems.empty()) {
    check.verdict = Verdict::Fail;
    check.detail = list(problems) +
                   "; the node's own clients of the VIP (the kubelet, kubectl) fail here while "
                   "the VIP is not bound";
    check.fix = "remove the route or rule that refuses it (" + list(commands) + ")";
    return check;
  }
  check.detail = list(fine);
  return check;
}

Check checkVipReplies(const config::Config& /*config*/, const NodeFacts& facts) {
  Check check{"vip-replies", Verdict::Ok, "", ""};
  std::vector<std::string> fine;
  std::vector<std::string> problems;
  std::vector<std::string> commands;
  std::set<std::string> notBound;
  for (const auto& reply : facts.vipReplyRoutes) {
    const auto vip = text::address(reply.vip);
    const auto peer = reply.peer.toString();
    const PeerRoute* plain = nullptr;
    for (const auto& r : facts.routes) {
      if (r.peer == reply.peer) {
        plain = &r;
      }
    }
    const bool bound = std::any_of(facts.vipRoutes.begin(), facts.vipRoutes.end(), [&](auto& v) {
      return v.vip == reply.vip && v.local;
    });
    if (!reply.interface) {
      if (!bound) {
        notBound.insert(vip);
        continue;
      }
      problems.push_back(fmt::format("replies from VIP {} to {} have no route: {}", vip, peer,
                                     reply.error));
      commands.push_back(fmt::format("ip route get {} from {}", peer, vip));
    } else if (plain != nullptr && plain->interface && *plain->interface != *reply.interface) {
      problems.push_back(fmt::format(
          "replies from VIP {} to {} leave by {}, not by {} where the route to {} goes: a policy "
          "rule matching the VIP as source sends them away",
          vip, peer, *reply.interface, *plain->interface, peer));
      commands.push_back(fmt::format("ip route get {} from {}", peer, vip));
    } else {
      fine.push_back(fmt::format("from {} to {} by {}", vip, peer, *reply.interface));
    }
  }
  if (!problems.empty()) {
    check.verdict = Verdict::Fail;
    check.detail = list(problems) +
                   "; a client's connection to the VIP is answered from elsewhere (dropped by "
                   "reverse-path filters and firewalls on the way)";
    check.fix = "ip rule show; remove the rule, or route its table out the peers' interface (" +
                list(commands) + ")";
    return check;
  }
  std::vector<std::string> parts = fine;
  if (!notBound.empty()) {
    parts.push_back(fmt::format("{} not bound here yet: checked once it is",
                                list({notBound.begin(), notBound.end()})));
  }
  check.detail = parts.empty() ? "no VIP shares a family with a peer" : list(parts);
  return check;
}

Check checkVipExposure(const config::Config& config, const NodeFacts& facts) {
  Check check{"vip-exposure", Verdict::Ok, "", ""};
  std::vector<std::string> daemons;
  for (const auto& p : facts.routingDaemons) {
    daemons.push_back(process(p));
  }
  const char* verb = daemons.size() == 1 ? "runs" : "run";
  std::vector<std::string> problems;
  for (const auto& vip : config.vips) {
    auto on = exposedOn(facts, vip.prefix.address);
    if (!on.empty() && !daemons.empty()) {
      problems.push_back(fmt::format("VIP {} is bound on {}", text::address(vip.prefix),
                                     list(on)));
    }
  }
  if (!problems.empty()) {
    check.verdict = Verdict::Fail;
    check.detail = fmt::format(
        "{} while {} {} here: a daemon that exports that interface's addresses announces the "
        "VIP too, past vipd's health gate and drain",
        list(problems), list(daemons), verb);
    check.fix = "bind the VIPs on lo (vips[].interface), or keep them out of that daemon's "
                "exports";
    return check;
  }
  check.detail = daemons.empty() ? "no other routing daemon runs here"
                                 : fmt::format("{} {} here; no VIP is on an interface other "
                                               "than lo or a dummy",
                                               list(daemons), verb);
  return check;
}

}  // namespace vipd::doctor
