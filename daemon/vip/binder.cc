#include "daemon/vip/binder.h"

#include <linux/if_addr.h>
#include <sys/socket.h>

#include <algorithm>

#include <fmt/format.h>

namespace vipd::daemon {
namespace {

// vipd adds its VIPs deprecated and permanent. The kernel reports that as IFA_F_DEPRECATED with a
// valid lifetime of forever (for IPv4 it also reports the preferred lifetime as forever, so the
// flag, not the lifetime, is what tells).
bool isVipdOwned(const netlink::AddressEntry& entry) {
  return (entry.flags & IFA_F_DEPRECATED) != 0 && entry.validLifetimeSeconds == netlink::kForever;
}

const netlink::Link* findLink(const std::vector<netlink::Link>& links, const std::string& name) {
  auto it = std::find_if(links.begin(), links.end(),
                         [&](const netlink::Link& l) { return l.name == name; });
  return it == links.end() ? nullptr : &*it;
}

const netlink::AddressEntry* findAddress(const std::vector<netlink::AddressEntry>& addresses,
                                         int ifindex, const netlink::InterfaceAddress& address) {
  auto it = std::find_if(addresses.begin(), addresses.end(), [&](const netlink::AddressEntry& e) {
    return e.ifindex == ifindex && e.address.family == address.family &&
           e.address.bytes == address.bytes;
  });
  return it == addresses.end() ? nullptr : &*it;
}

}  // namespace

std::string_view bindStateName(BindState state) {
  switch (state) {
    case BindState::Bound:
      return "bound";
    case BindState::NotBound:
      return "not bound";
    case BindState::InterfaceMissing:
      return "interface missing";
    case BindState::InterfaceDown:
      return "interface down";
    case BindState::Error:
      return "error";
  }
  return "unknown";
}

netlink::InterfaceAddress toInterfaceAddress(const bgp::Prefix& prefix) {
  netlink::InterfaceAddress a;
  a.family = prefix.address.isV4() ? AF_INET : AF_INET6;
  a.bytes = prefix.address.bytes;
  a.prefixLength = prefix.length;
  return a;
}

VipBinder::VipBinder(netlink::AddressTable& table, std::vector<config::Vip> vips) : table_(table) {
  for (auto& vip : vips) {
    VipBindingStatus status;
    status.vip = std::move(vip);
    vips_.push_back(std::move(status));
  }
}

void VipBinder::ensureInterface(VipBindingStatus& v, std::vector<BindEvent>& events) {
  auto link = table_.findLink(v.vip.interface);
  if (!link) {
    v.bindError = link.error().toString();
    events.push_back({v.vip.prefix, BindEvent::Kind::Problem, v.bindError + "; not announcing"});
    return;
  }
  if (*link || !v.vip.createInterface) {
    return;
  }
  if (auto created = table_.createDummy(v.vip.interface); !created) {
    v.bindError = created.error().toString();
    events.push_back({v.vip.prefix, BindEvent::Kind::Problem, v.bindError + "; not announcing"});
    return;
  }
  events.push_back({v.vip.prefix, BindEvent::Kind::InterfaceCreated,
                    fmt::format("created dummy interface {} and brought it up", v.vip.interface)});
}

std::vector<BindEvent> VipBinder::bind() {
  std::vector<BindEvent> events;
  if (firstBind_) {
    // What was read before binding was reported as found, not as a problem; the first binding's
    // result is reported again (an error if the VIP still cannot be bound).
    for (auto& v : vips_) {
      v.observed = v.observed && v.state == BindState::Bound;
    }
  }
  auto before = table_.addresses();
  for (auto& v : vips_) {
    if (!firstBind_ && !v.vip.rebind && added_.count(v.vip.prefix) == 0) {
      continue;
    }
    v.bindError.clear();
    ensureInterface(v, events);
    auto link = table_.findLink(v.vip.interface);
    if (!link || !*link) {
      continue;  // reported by observe(): missing interface, or the error above
    }
    auto address = toInterfaceAddress(v.vip.prefix);
    if (before && findAddress(*before, (*link)->index, address) != nullptr) {
      continue;  // present already: ours from an earlier run, or the operator's; leave it as is
    }
    if (auto added = table_.addAddress(v.vip.interface, address, netlink::AddOptions{}); !added) {
      v.bindError = added.error().toString();
      events.push_back({v.vip.prefix, BindEvent::Kind::Problem, v.bindError + "; not announcing"});
    }
  }
  firstBind_ = false;
  added_.clear();
  auto refreshed = refresh();
  events.insert(events.end(), refreshed.begin(), refreshed.end());
  return events;
}

std::vector<BindEvent> VipBinder::refresh() {
  std::vector<BindEvent> events;
  auto links = table_.links();
  auto addresses = table_.addresses();
  if (!links || !addresses) {
    const auto& error = !links ? links.error() : addresses.error();
    for (auto& v : vips_) {
      if (v.state == BindState::Bound) {
        events.push_back({v.vip.prefix, BindEvent::Kind::Lost,
                          fmt::format("cannot read the kernel's addresses ({}); withdrawing",
                                      error.toString())});
      }
      v.state = BindState::Error;
      v.reason = error.toString();
    }
    return events;
  }
  observe(*links, *addresses, events);
  return events;
}

void VipBinder::observe(const std::vector<netlink::Link>& links,
                        const std::vector<netlink::AddressEntry>& addresses,
                        std::vector<BindEvent>& events) {
  for (auto& v : vips_) {
    const BindState previous = v.state;
    const netlink::Link* link = findLink(links, v.vip.interface);
    const netlink::AddressEntry* entry =
        link ? findAddress(addresses, link->index, toInterfaceAddress(v.vip.prefix)) : nullptr;
    if (!link) {
      // A failed createInterface is the cause worth showing, not the absence it left behind.
      v.state = v.bindError.empty() ? BindState::InterfaceMissing : BindState::Error;
      v.reason = v.bindError.empty() ? fmt::format("interface {} does not exist", v.vip.interface)
                                     : v.bindError;
    } else if (!entry) {
      v.state = v.bindError.empty() ? BindState::NotBound : BindState::Error;
      v.reason = v.bindError.empty()
                     ? fmt::format("address not bound on {}", v.vip.interface)
                     : v.bindError;
    } else if (!link->adminUp) {
      v.state = BindState::InterfaceDown;
      v.reason = fmt::format("interface {} is down", v.vip.interface);
    } else {
      v.state = BindState::Bound;
      v.reason.clear();
    }
    v.ownedByVipd = entry != nullptr && isVipdOwned(*entry);
    const bool first = !v.observed;
    v.observed = true;
    if (v.state == previous && !first) {
      continue;
    }
    if (v.state == BindState::Bound) {
      events.push_back({v.vip.prefix, BindEvent::Kind::Bound,
                        fmt::format("bound on {}{}; announceable", v.vip.interface,
                                    v.ownedByVipd ? "" : " (added by someone else; vipd will "
                                                         "not remove it)")});
    } else if (previous == BindState::Bound && !first) {
      ++v.lostCount;
      events.push_back({v.vip.prefix, BindEvent::Kind::Lost,
                        fmt::format("{}; withdrawing from every peer{}", v.reason,
                                    v.vip.rebind ? " and binding it again" : "")});
    } else if ((firstBind_ || added_.count(v.vip.prefix) != 0) && v.bindError.empty()) {
      // Not bound before vipd has tried to bind it: the normal state at start, and for an
      // instance that does not bind (standby, withdrawn). Only errors are logged as errors.
      events.push_back({v.vip.prefix, BindEvent::Kind::Found,
                        fmt::format("{} before vipd binds it; not announcing", v.reason)});
    } else {
      events.push_back({v.vip.prefix, BindEvent::Kind::Problem,
                        fmt::format("{}; not announcing", v.reason)});
    }
  }
}

void VipBinder::addOrUpdate(const config::Vip& vip) {
  for (auto& v : vips_) {
    if (v.vip.prefix == vip.prefix) {
      v.vip.rebind = vip.rebind;
      v.vip.createInterface = vip.createInterface;
      return;
    }
  }
  VipBindingStatus status;
  status.vip = vip;
  vips_.push_back(std::move(status));
  added_.insert(vip.prefix);
}

std::vector<BindEvent> VipBinder::remove(const bgp::Prefix& vip, bool unbind) {
  std::vector<BindEvent> events;
  if (unbind) {
    events = unbindOwnedIf([&vip](const VipBindingStatus& v) { return v.vip.prefix == vip; });
  }
  std::erase_if(vips_, [&vip](const VipBindingStatus& v) { return v.vip.prefix == vip; });
  added_.erase(vip);
  return events;
}

std::vector<BindEvent> VipBinder::unbindOwned() {
  return unbindOwnedIf([](const VipBindingStatus&) { return true; });
}

std::vector<BindEvent> VipBinder::unbindOwnedIf(
    const std::function<bool(const VipBindingStatus&)>& which) {
  std::vector<BindEvent> events;
  auto addresses = table_.addresses();
  auto links = table_.links();
  if (!addresses || !links) {
    const auto& error = !addresses ? addresses.error() : links.error();
    for (const auto& v : vips_) {
      if (which(v)) {
        events.push_back({v.vip.prefix, BindEvent::Kind::Problem,
                          fmt::format("cannot read the kernel's addresses ({}); leaving it bound",
                                      error.toString())});
      }
    }
    return events;
  }
  for (auto& v : vips_) {
    if (!which(v)) {
      continue;
    }
    const netlink::Link* link = findLink(*links, v.vip.interface);
    auto address = toInterfaceAddress(v.vip.prefix);
    const netlink::AddressEntry* entry =
        link ? findAddress(*addresses, link->index, address) : nullptr;
    if (entry == nullptr || !isVipdOwned(*entry)) {
      continue;  // absent, or not ours: an operator's address stays
    }
    if (auto removed = table_.removeAddress(v.vip.interface, address); !removed) {
      events.push_back({v.vip.prefix, BindEvent::Kind::Problem, removed.error().toString()});
      continue;
    }
    events.push_back({v.vip.prefix, BindEvent::Kind::Unbound,
                      fmt::format("removed from {}", v.vip.interface)});
    // vipd removed it: not a loss for lostCount or the Lost event the refresh would report.
    v.state = BindState::NotBound;
  }
  refresh();
  return events;
}

std::set<bgp::Prefix> VipBinder::announceable() const {
  std::set<bgp::Prefix> result;
  for (const auto& v : vips_) {
    if (v.state == BindState::Bound) {
      result.insert(v.vip.prefix);
    }
  }
  return result;
}

bool VipBinder::concerns(const netlink::Change& change) const {
  if (change.kind == netlink::Change::Kind::Overflow) {
    return true;
  }
  for (const auto& v : vips_) {
    if (!change.ifname.empty() && change.ifname == v.vip.interface) {
      return true;
    }
    if (change.address && change.address->bytes == v.vip.prefix.address.bytes) {
      return true;
    }
  }
  return false;
}

std::optional<std::string> checkRouterIdIsLocal(const bgp::IpAddress& routerId,
                                                const std::vector<netlink::AddressEntry>& all) {
  std::vector<std::string> found;
  for (const auto& entry : all) {
    if (entry.address.family != AF_INET) {
      continue;
    }
    if (std::equal(entry.address.bytes.begin(), entry.address.bytes.begin() + 4,
                   routerId.bytes.begin())) {
      return std::nullopt;
    }
    found.push_back(fmt::format("{} on {}", entry.address.toString(), entry.ifname));
  }
  return fmt::format(
      "router ID {} is not an address of this node (IPv4 addresses found: {}); render routerId "
      "from this node's own address, or set allowNonLocalRouterId: true",
      routerId.toString(), found.empty() ? "none" : fmt::format("{}", fmt::join(found, ", ")));
}

}  // namespace vipd::daemon
