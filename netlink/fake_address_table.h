// An in-memory AddressTable and Monitor with the kernel's observable behaviour, for unit tests of
// the binding logic: idempotent add/remove, dummy creation, link up/down, and a Monitor whose fd
// (an eventfd) becomes readable when the table changes, like the kernel's netlink socket.
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
  // Adds an address as `ip addr add` would (preferred forever) unless `entry` says otherwise.
  void addForeignAddress(std::string_view ifname, const InterfaceAddress& address);
  // Makes the next call of `operation` ("add address", "create dummy", ...) fail with `error`.
  void failNext(std::string operation, Error error);
  size_t operationCount() const { return operations_; }

  // A monitor that sees every later change of this table.
  std::unique_ptr<Monitor> openMonitor();

 private:
  struct State;
  std::shared_ptr<State> state_;
  size_t operations_ = 0;
};

}  // namespace vipd::netlink
