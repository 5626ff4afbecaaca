// An in-memory AddressTable and Monitor with the kernel's observable behaviour, for unit tests of
// the binding logic: idempotent add/remove, dummy creation, link up/down, and a Monitor whose fd
// (an eventfd) becomes readable when the table changes, like the kernel's netlink socket.
//
// Kernel behaviour it copies (checked against Linux 6.18 by netlink/kernel_address_table_test.cc):
// - addAddress on a present address succeeds, takes the new flags and lifetimes (NLM_F_REPLACE)
//   and is reported again as AddressAdded. IPv4 addresses are identified by address and prefix
//   length, IPv6 ones by address alone (re-adding 2001:db8::1/64 over /128 keeps /128).
// - removeAddress matches address and prefix length exactly; anything else, or a missing
//   interface, is "absent" and succeeds.
// - Flags and lifetimes read back as the kernel reports them: IFA_F_PERMANENT, and vipd's adds
//   carry IFA_F_NOPREFIXROUTE, IFA_F_DEPRECATED when deprecated and IFA_F_NODAD (IPv6). A
//   deprecated IPv4 address still reads preferred lifetime forever (the kernel reports the
//   lifetimes of permanent IPv4 addresses as forever), IPv6 reads 0.
// - Adding to a down interface is allowed. Taking an interface down removes its IPv6 addresses
//   (net.ipv6.conf.*.keep_addr_on_down=0); bringing it up adds ::1/128 back on lo and, when it
//   has carrier (lowerUp), an fe80::/64 link-local address on other interfaces. IPv6 duplicate
//   address detection is not modelled (no IFA_F_TENTATIVE).
// - The order of addresses() is unspecified (the kernel's is by family, then scope and age).
// - Operation names in errors: "list links", "find link", "list addresses", "add address",
//   "remove address", "create dummy", "delete link", "set link up", "set link down".
#pragma once

#include <deque>
#include <map>
#include <memory>

#include "netlink/address_table.h"

namespace vipd::netlink {

class FakeAddressTable : public AddressTable {
 public:
  FakeAddressTable();  // starts with "lo" (index 1, up, loopback) holding 127.0.0.1/8 and ::1/128

  Result<std::vector<Link>> links() override;
  Result<std::optional<Link>> findLink(std::string_view name) override;
  Result<std::vector<AddressEntry>> addresses() override;
  Result<void> addAddress(std::string_view ifname, const InterfaceAddress& address,
                          const AddOptions& options) override;
  Result<void> removeAddress(std::string_view ifname, const InterfaceAddress& address) override;
  Result<void> createDummy(std::string_view name) override;
  Result<void> deleteLink(std::string_view name) override;
  Result<void> setLinkUp(std::string_view name, bool up) override;

  // Test controls: what an operator or another program does behind vipd's back. These report
  // changes to monitors exactly like the operations above.
  void addLink(Link link);  // e.g. a "veth" or "eth0" interface
  // addLink adds no addresses; a link given as up but without lowerUp has no carrier.
  // Adds an address as `ip addr add` would (IFA_F_PERMANENT, preferred and valid forever). The
  // interface must exist (a test bug aborts).
  void addForeignAddress(std::string_view ifname, const InterfaceAddress& address);
  // Makes the next call of `operation` ("add address", "create dummy", ...) fail with `error`.
  void failNext(std::string operation, Error error);
  // Calls of the changing operations (add/remove address, create dummy, delete link, set link
  // up/down) so far, failed ones included; lookups and test controls are not counted.
  size_t operationCount() const { return operations_; }
  // Every open monitor drops its queued changes and reports one Kind::Overflow, as when the
  // kernel's socket buffer overflows (ENOBUFS).
  void overflowMonitors();

  // A monitor that sees every later change of this table.
  std::unique_ptr<Monitor> openMonitor();

 private:
  struct State;
  std::shared_ptr<State> state_;
  size_t operations_ = 0;
};

}  // namespace vipd::netlink
