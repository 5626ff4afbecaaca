// Binds each VIP to its interface through netlink and says which VIPs may be announced.
//
// The invariant vipd exists for: a VIP is announceable only while the kernel reports the address
// on its interface and that interface is up. This class owns the binding state of every VIP; it
// does no I/O of its own beyond the AddressTable it is given (the real kernel, or the fake in
// unit tests), so the rules below are tested without a kernel.
//
// Ownership: vipd adds a VIP deprecated (preferred lifetime 0, valid forever) so it is never
// picked as a source address. That marking is also how a restarted vipd recognises the addresses
// it added before; an address added any other way (an operator's `ip addr add`) is never removed.
// It is what a withdrawn node removes on start (a SIGKILL during `vipctl withdraw` leaves the
// addresses bound) and what a drain removes. The mark lives in the kernel next to the address,
// so it is right however vipd died: a record in stateDir (written when binding, or in
// withdrawn.json) can miss an address added just before a kill, and can name an address an
// operator removed and re-added since. IFA_PROTO would be a cleaner mark, but needs Linux 6.3 and
// libnl has no setter for it; an IPv4 label does not exist for IPv6. The one address this rule
// would take for vipd's is the same VIP added by hand deprecated and permanent (`preferred_lft 0`),
// which is exactly how vipd binds it.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bgp/ip_address.h"
#include "config/config.h"
#include "netlink/address_table.h"

namespace vipd::daemon {

enum class BindState {
  Bound,             // on its interface, interface up: announceable
  NotBound,          // the address is missing (rebind off, or binding failed)
  InterfaceMissing,  // no such interface, and createInterface is off
  InterfaceDown,     // the address is there but the interface is down
  Error,             // netlink refused an operation; see reason
};
std::string_view bindStateName(BindState state);

// Something that happened to a VIP's binding, for the log and counters. `text` names the event
// and what happens next.
struct BindEvent {
  bgp::Prefix vip;
  // Found: a VIP read before this binder first tried to bind it (start, a standby or withdrawn
  // instance) is not bound: a state to report, not an error. Problem: something stops a VIP that
  // vipd tried to bind from being announced (an error).
  enum class Kind { Bound, Lost, InterfaceCreated, Unbound, Found, Problem } kind;
  std::string text;
};

struct VipBindingStatus {
  config::Vip vip;
  BindState state = BindState::NotBound;
  bool ownedByVipd = false;  // vipd added this address (it will remove it on drain)
  std::string reason;        // empty when Bound
  uint64_t lostCount = 0;    // times the address or interface went away while bound
  bool observed = false;     // the kernel has been read at least once (so the start is logged)
  std::string bindError;     // why the last attempt to create the interface or add failed
};

netlink::InterfaceAddress toInterfaceAddress(const bgp::Prefix& prefix);

class VipBinder {
 public:
  VipBinder(netlink::AddressTable& table, std::vector<config::Vip> vips);

  // Makes the kernel match the config: creates missing dummy interfaces (createInterface), adds
  // missing addresses (on the first call always, later only for VIPs with rebind), then re-reads
  // the kernel's view. Never removes anything.
  std::vector<BindEvent> bind();
  // Re-reads the kernel's view without changing it; call before every announcement.
  std::vector<BindEvent> refresh();
  // Removes the addresses vipd added (and nothing else). Dummy interfaces vipd created stay: the
  // next start reuses them, and deleting an interface someone may be using is not ours to do.
  std::vector<BindEvent> unbindOwned();
  // A reload (issue 29). A VIP added is bound at the next bind() whatever its rebind says, as
  // every VIP is at the first; one already known takes the new rebind and createInterface (its
  // interface is the one it was bound on: changing it needs a restart).
  void addOrUpdate(const config::Vip& vip);
  // Removes `vip`'s address if vipd added it (never an operator's) and `unbind` (an instance
  // that does not speak leaves the addresses to the one that does), then forgets the VIP.
  std::vector<BindEvent> remove(const bgp::Prefix& vip, bool unbind = true);

  std::set<bgp::Prefix> announceable() const;
  const std::vector<VipBindingStatus>& status() const { return vips_; }
  // True if `interface` or one of the VIP addresses is involved in a kernel change.
  bool concerns(const netlink::Change& change) const;

 private:
  void observe(const std::vector<netlink::Link>& links,
               const std::vector<netlink::AddressEntry>& addresses,
               std::vector<BindEvent>& events);
  void ensureInterface(VipBindingStatus& vip, std::vector<BindEvent>& events);
  // Removes the addresses vipd added of the VIPs `which` selects.
  std::vector<BindEvent> unbindOwnedIf(const std::function<bool(const VipBindingStatus&)>& which);

  netlink::AddressTable& table_;
  std::vector<VipBindingStatus> vips_;
  bool firstBind_ = true;
  // Added by a reload and not bound yet: bound at the next bind() even without rebind.
  std::set<bgp::Prefix> added_;
};

// Checks the router ID against this node's own IPv4 addresses. Returns an operator-facing error
// naming the addresses found, or nullopt when the router ID is local.
std::optional<std::string> checkRouterIdIsLocal(const bgp::IpAddress& routerId,
                                                const std::vector<netlink::AddressEntry>& all);

}  // namespace vipd::daemon
