// The in-memory AddressTable and Monitor: the kernel's observable behaviour without a kernel.
// (netlink_kernel_test.cc checks the same claims against the real kernel.)
#include <gtest/gtest.h>
#include <linux/if_addr.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>

#include "netlink/address_table.h"
#include "netlink/fake_address_table.h"

namespace vipd::netlink {
namespace {

InterfaceAddress addr(std::string_view text) {
  auto parsed = InterfaceAddress::parse(text);
  EXPECT_TRUE(parsed.has_value()) << text;
  return parsed.value_or(InterfaceAddress{});
}

std::optional<AddressEntry> entryFor(AddressTable& table, std::string_view ifname,
                                     std::string_view address) {
  auto entries = table.addresses();
  EXPECT_TRUE(entries.has_value());
  for (const AddressEntry& entry : entries.value_or(std::vector<AddressEntry>{})) {
    if (entry.ifname == ifname && entry.address == addr(address)) {
      return entry;
    }
  }
  return std::nullopt;
}

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

// --- InterfaceAddress and Error ---

TEST(InterfaceAddress, ParsesAndPrintsBothFamilies) {
  auto v4 = InterfaceAddress::parse("203.0.113.10/32");
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->family, AF_INET);
  EXPECT_EQ(v4->prefixLength, 32);
  EXPECT_EQ(v4->bytes[0], 203);
  EXPECT_EQ(v4->bytes[3], 10);
  EXPECT_EQ(v4->toString(), "203.0.113.10/32");

  auto v6 = InterfaceAddress::parse("2001:db8::10/128");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->family, AF_INET6);
  EXPECT_EQ(v6->prefixLength, 128);
  EXPECT_EQ(v6->toString(), "2001:db8::10/128");
  EXPECT_EQ(InterfaceAddress::parse("2001:DB8:0::10/64")->toString(), "2001:db8::10/64");
  EXPECT_EQ(InterfaceAddress::parse("0.0.0.0/0")->toString(), "0.0.0.0/0");
}

TEST(InterfaceAddress, RejectsMalformedText) {
  for (const char* bad :
       {"", "203.0.113.10", "203.0.113.10/", "203.0.113.10/33", "203.0.113/24", "203.0.113.10/-1",
        "203.0.113.10/+8", "203.0.113.10/ 8", "2001:db8::/129", "2001:db8::1", "2001:db8:::1/64",
        "/32", "lo/32", "203.0.113.10/0032", "203.0.113.10/32/1", "203.0.113.10 /32"}) {
    EXPECT_FALSE(InterfaceAddress::parse(bad).has_value()) << bad;
  }
}

TEST(NetlinkError, NamesOperationObjectAndReason) {
  Error error{"add address", "203.0.113.10/32 on lo", "Operation not permitted", EPERM};
  EXPECT_EQ(error.toString(), "add address 203.0.113.10/32 on lo: Operation not permitted");
  EXPECT_EQ((Error{"list links", "", "Permission denied", EACCES}).toString(),
            "list links: Permission denied");
}

// --- FakeAddressTable ---

TEST(FakeAddressTable, StartsWithLoopbackLikeAFreshNamespace) {
  FakeAddressTable table;
  auto links = table.links();
  ASSERT_TRUE(links);
  ASSERT_EQ(links->size(), 1u);
  EXPECT_EQ(links->front(), (Link{1, "lo", true, true, true, ""}));
  auto entries = table.addresses();
  ASSERT_TRUE(entries);
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0].address, addr("127.0.0.1/8"));
  EXPECT_EQ((*entries)[1].address, addr("::1/128"));
  for (const AddressEntry& entry : *entries) {
    EXPECT_EQ(entry.ifindex, 1);
    EXPECT_EQ(entry.flags, unsigned{IFA_F_PERMANENT});
    EXPECT_EQ(entry.preferredLifetimeSeconds, kForever);
    EXPECT_EQ(entry.validLifetimeSeconds, kForever);
  }
  auto lo = table.findLink("lo");
  ASSERT_TRUE(lo);
  ASSERT_TRUE(lo->has_value());
  auto none = table.findLink("eth9");
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->has_value());
}

TEST(FakeAddressTable, AddIsIdempotentAndDeprecatesLikeTheKernel) {
  FakeAddressTable table;
  for (int round = 0; round < 2; ++round) {
    ASSERT_TRUE(table.addAddress("lo", addr("203.0.113.10/32"), AddOptions{}));
    ASSERT_TRUE(table.addAddress("lo", addr("2001:db8::10/128"), AddOptions{}));
  }
  auto entries = table.addresses();
  ASSERT_TRUE(entries);
  EXPECT_EQ(entries->size(), 4u);

  auto v4 = entryFor(table, "lo", "203.0.113.10/32");
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->flags, unsigned{IFA_F_PERMANENT | IFA_F_DEPRECATED | IFA_F_NOPREFIXROUTE});
  EXPECT_EQ(v4->preferredLifetimeSeconds, kForever);  // as the kernel reports permanent IPv4
  EXPECT_EQ(v4->validLifetimeSeconds, kForever);

  auto v6 = entryFor(table, "lo", "2001:db8::10/128");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->flags,
            unsigned{IFA_F_PERMANENT | IFA_F_DEPRECATED | IFA_F_NOPREFIXROUTE | IFA_F_NODAD});
  EXPECT_EQ(v6->preferredLifetimeSeconds, 0u);
  EXPECT_EQ(v6->validLifetimeSeconds, kForever);
}

TEST(FakeAddressTable, ReAddingTakesTheNewOptions) {
  FakeAddressTable table;
  ASSERT_TRUE(table.addAddress("lo", addr("2001:db8::10/128"), AddOptions{false, false}));
  auto before = entryFor(table, "lo", "2001:db8::10/128");
  ASSERT_TRUE(before);
  EXPECT_EQ(before->flags, unsigned{IFA_F_PERMANENT | IFA_F_NOPREFIXROUTE});
  EXPECT_EQ(before->preferredLifetimeSeconds, kForever);
  ASSERT_TRUE(table.addAddress("lo", addr("2001:db8::10/128"), AddOptions{}));
  auto after = entryFor(table, "lo", "2001:db8::10/128");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->preferredLifetimeSeconds, 0u);
  EXPECT_NE(after->flags & IFA_F_NODAD, 0u);
}

TEST(FakeAddressTable, IPv6IsOneAddressPerInterfaceIPv4OnePerPrefixLength) {
  FakeAddressTable table;
  ASSERT_TRUE(table.addAddress("lo", addr("2001:db8::10/128"), AddOptions{}));
  ASSERT_TRUE(table.addAddress("lo", addr("2001:db8::10/64"), AddOptions{}));
  EXPECT_TRUE(entryFor(table, "lo", "2001:db8::10/128"));
  EXPECT_FALSE(entryFor(table, "lo", "2001:db8::10/64"));

  ASSERT_TRUE(table.addAddress("lo", addr("203.0.113.10/32"), AddOptions{}));
  ASSERT_TRUE(table.addAddress("lo", addr("203.0.113.10/24"), AddOptions{}));
  EXPECT_TRUE(entryFor(table, "lo", "203.0.113.10/32"));
  EXPECT_TRUE(entryFor(table, "lo", "203.0.113.10/24"));
}

TEST(FakeAddressTable, AddToMissingInterfaceNamesTheDevice) {
  FakeAddressTable table;
  auto result = table.addAddress("vip9", addr("203.0.113.10/32"), AddOptions{});
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ENODEV);
  EXPECT_EQ(result.error().toString(), "add address 203.0.113.10/32 on vip9: No such device");
}

TEST(FakeAddressTable, RejectsAnAddressWithoutAFamily) {
  FakeAddressTable table;
  auto result = table.addAddress("lo", InterfaceAddress{}, AddOptions{});
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, EINVAL);
  EXPECT_EQ(result.error().operation, "add address");
}

TEST(FakeAddressTable, RemoveIsIdempotentAndExact) {
  FakeAddressTable table;
  table.addForeignAddress("lo", addr("198.51.100.7/24"));
  table.addForeignAddress("lo", addr("2001:db8::7/64"));
  auto foreign = entryFor(table, "lo", "198.51.100.7/24");
  ASSERT_TRUE(foreign);
  EXPECT_EQ(foreign->flags, unsigned{IFA_F_PERMANENT});
  EXPECT_EQ(foreign->preferredLifetimeSeconds, kForever);

  // Another prefix length is another address: absent, so success, and nothing removed.
  ASSERT_TRUE(table.removeAddress("lo", addr("198.51.100.7/32")));
  ASSERT_TRUE(table.removeAddress("lo", addr("2001:db8::7/128")));
  EXPECT_TRUE(entryFor(table, "lo", "198.51.100.7/24"));
  EXPECT_TRUE(entryFor(table, "lo", "2001:db8::7/64"));

  for (int round = 0; round < 2; ++round) {
    ASSERT_TRUE(table.removeAddress("lo", addr("198.51.100.7/24")));
    ASSERT_TRUE(table.removeAddress("lo", addr("2001:db8::7/64")));
  }
  EXPECT_FALSE(entryFor(table, "lo", "198.51.100.7/24"));
  EXPECT_FALSE(entryFor(table, "lo", "2001:db8::7/64"));
  // No such interface: the address is certainly absent.
  EXPECT_TRUE(table.removeAddress("vip9", addr("198.51.100.7/24")));
}

TEST(FakeAddressTable, CreateDummyIsIdempotentAndBringsItUp) {
  FakeAddressTable table;
  ASSERT_TRUE(table.createDummy("vip0"));
  ASSERT_TRUE(table.createDummy("vip0"));
  auto links = table.links();
  ASSERT_TRUE(links);
  ASSERT_EQ(links->size(), 2u);
  const Link& dummy = links->back();
  EXPECT_EQ(dummy.name, "vip0");
  EXPECT_EQ(dummy.kind, "dummy");
  EXPECT_TRUE(dummy.adminUp);
  EXPECT_TRUE(dummy.lowerUp);
  EXPECT_FALSE(dummy.loopback);

  // A dummy someone took down is brought up again.
  ASSERT_TRUE(table.setLinkUp("vip0", false));
  ASSERT_TRUE(table.createDummy("vip0"));
  EXPECT_TRUE(table.findLink("vip0").value()->adminUp);
}

TEST(FakeAddressTable, CreateDummyRefusesSomeoneElsesDevice) {
  FakeAddressTable table;
  table.addLink(Link{0, "veth0", true, true, false, "veth"});
  table.addLink(Link{0, "eth0", true, false, false, ""});
  auto veth = table.createDummy("veth0");
  ASSERT_FALSE(veth);
  EXPECT_EQ(veth.error().code, EEXIST);
  EXPECT_EQ(veth.error().toString(),
            "create dummy veth0: the name belongs to a veth device; vipd does not take over an "
            "interface it did not create");
  auto eth = table.createDummy("eth0");
  ASSERT_FALSE(eth);
  EXPECT_NE(eth.error().reason.find("without a link kind"), std::string::npos);
  auto lo = table.createDummy("lo");
  ASSERT_FALSE(lo);
  EXPECT_EQ(lo.error().code, EEXIST);

  auto longName = table.createDummy("a-name-longer-than-15");
  ASSERT_FALSE(longName);
  EXPECT_EQ(longName.error().code, EINVAL);
}

TEST(FakeAddressTable, AddingToADownInterfaceIsAllowed) {
  FakeAddressTable table;
  table.addLink(Link{0, "veth0", false, false, false, "veth"});
  ASSERT_TRUE(table.addAddress("veth0", addr("203.0.113.10/32"), AddOptions{}));
  ASSERT_TRUE(table.addAddress("veth0", addr("2001:db8::10/128"), AddOptions{}));
  EXPECT_TRUE(entryFor(table, "veth0", "2001:db8::10/128"));
}

TEST(FakeAddressTable, DownRemovesIPv6AddressesAndUpAddsLinkLocal) {
  FakeAddressTable table;
  ASSERT_TRUE(table.createDummy("vip0"));
  ASSERT_TRUE(table.addAddress("vip0", addr("203.0.113.10/32"), AddOptions{}));
  ASSERT_TRUE(table.addAddress("vip0", addr("2001:db8::10/128"), AddOptions{}));
  ASSERT_TRUE(table.addAddress("lo", addr("2001:db8::11/128"), AddOptions{}));

  ASSERT_TRUE(table.setLinkUp("vip0", false));
  auto down = table.findLink("vip0").value();
  ASSERT_TRUE(down);
  EXPECT_FALSE(down->adminUp);
  EXPECT_FALSE(down->lowerUp);
  EXPECT_TRUE(entryFor(table, "vip0", "203.0.113.10/32"));
  EXPECT_FALSE(entryFor(table, "vip0", "2001:db8::10/128"));

  ASSERT_TRUE(table.setLinkUp("vip0", true));
  auto entries = table.addresses().value();
  EXPECT_TRUE(std::any_of(entries.begin(), entries.end(), [](const AddressEntry& e) {
    return e.ifname == "vip0" && e.address.family == AF_INET6 && e.address.bytes[0] == 0xfe &&
           e.address.bytes[1] == 0x80 && e.address.prefixLength == 64;
  }));

  ASSERT_TRUE(table.setLinkUp("lo", false));
  EXPECT_FALSE(entryFor(table, "lo", "::1/128"));
  EXPECT_FALSE(entryFor(table, "lo", "2001:db8::11/128"));
  EXPECT_TRUE(entryFor(table, "lo", "127.0.0.1/8"));
  ASSERT_TRUE(table.setLinkUp("lo", true));
  EXPECT_TRUE(entryFor(table, "lo", "::1/128"));
  EXPECT_FALSE(entryFor(table, "lo", "2001:db8::11/128"));  // gone for good, as in the kernel
}

TEST(FakeAddressTable, SetLinkUpOnMissingInterfaceFails) {
  FakeAddressTable table;
  auto up = table.setLinkUp("vip9", true);
  ASSERT_FALSE(up);
  EXPECT_EQ(up.error().toString(), "set link up vip9: No such device");
  auto down = table.setLinkUp("vip9", false);
  ASSERT_FALSE(down);
  EXPECT_EQ(down.error().toString(), "set link down vip9: No such device");
}

TEST(FakeAddressTable, DeleteLinkIsIdempotentAndTakesItsAddresses) {
  FakeAddressTable table;
  ASSERT_TRUE(table.createDummy("vip0"));
  ASSERT_TRUE(table.addAddress("vip0", addr("203.0.113.10/32"), AddOptions{}));
  ASSERT_TRUE(table.deleteLink("vip0"));
  ASSERT_TRUE(table.deleteLink("vip0"));
  EXPECT_FALSE(table.findLink("vip0").value());
  EXPECT_FALSE(entryFor(table, "vip0", "203.0.113.10/32"));
  auto lo = table.deleteLink("lo");
  ASSERT_FALSE(lo);
  EXPECT_EQ(lo.error().toString(), "delete link lo: Operation not supported");
}

TEST(FakeAddressTable, FailNextFailsOnceAndCountsOperations) {
  FakeAddressTable table;
  table.failNext("add address",
                 Error{"add address", "203.0.113.10/32 on lo", "Operation not permitted", EPERM});
  auto failed = table.addAddress("lo", addr("203.0.113.10/32"), AddOptions{});
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, EPERM);
  EXPECT_FALSE(entryFor(table, "lo", "203.0.113.10/32"));
  EXPECT_TRUE(table.addAddress("lo", addr("203.0.113.10/32"), AddOptions{}));
  EXPECT_EQ(table.operationCount(), 2u);

  table.failNext("list addresses",
                 Error{"list addresses", "", "No buffer space available", ENOBUFS});
  EXPECT_FALSE(table.addresses());
  EXPECT_TRUE(table.addresses());
  (void)table.links();
  (void)table.findLink("lo");
  EXPECT_EQ(table.operationCount(), 2u);  // lookups are not counted
  ASSERT_TRUE(table.removeAddress("lo", addr("203.0.113.10/32")));
  EXPECT_EQ(table.operationCount(), 3u);
}

// --- FakeMonitor ---

TEST(FakeMonitor, FdBecomesReadableAndReadChangesDrainsIt) {
  FakeAddressTable table;
  auto monitor = table.openMonitor();
  EXPECT_FALSE(readable(monitor->fd()));
  auto none = monitor->readChanges();
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());

  ASSERT_TRUE(table.addAddress("lo", addr("203.0.113.10/32"), AddOptions{}));
  EXPECT_TRUE(readable(monitor->fd()));
  auto changes = monitor->readChanges();
  ASSERT_TRUE(changes);
  ASSERT_EQ(changes->size(), 1u);
  EXPECT_EQ(changes->front().kind, Change::Kind::AddressAdded);
  EXPECT_EQ(changes->front().ifindex, 1);
  EXPECT_EQ(changes->front().ifname, "lo");
  EXPECT_EQ(changes->front().address, addr("203.0.113.10/32"));
  EXPECT_FALSE(readable(monitor->fd()));
  EXPECT_TRUE(monitor->readChanges()->empty());
}

TEST(FakeMonitor, ReportsWhatTheKernelWould) {
  FakeAddressTable table;
  auto monitor = table.openMonitor();
  ASSERT_TRUE(table.createDummy("vip0"));
  ASSERT_TRUE(table.addAddress("vip0", addr("2001:db8::10/128"), AddOptions{}));
  ASSERT_TRUE(table.addAddress("vip0", addr("2001:db8::10/128"), AddOptions{}));  // replace
  ASSERT_TRUE(table.removeAddress("vip0", addr("2001:db8::10/128")));
  ASSERT_TRUE(table.removeAddress("vip0", addr("2001:db8::10/128")));  // absent: no change
  ASSERT_TRUE(table.setLinkUp("vip0", false));
  ASSERT_TRUE(table.setLinkUp("vip0", false));  // no-op: no change
  ASSERT_TRUE(table.deleteLink("vip0"));

  auto changes = monitor->readChanges();
  ASSERT_TRUE(changes);
  using K = Change::Kind;
  std::vector<std::pair<K, std::string>> seen;
  for (const Change& c : *changes) {
    seen.emplace_back(c.kind, c.address ? c.address->toString() : (c.adminUp ? "up" : "down"));
    EXPECT_EQ(c.ifname, "vip0");
  }
  const std::string linkLocal = "fe80::200:ff:fe00:2/64";
  const std::vector<std::pair<K, std::string>> expected{
      {K::LinkChanged, "down"},                 // created
      {K::LinkChanged, "up"},                   // brought up
      {K::AddressAdded, linkLocal},             // the kernel's IPv6 link-local
      {K::AddressAdded, "2001:db8::10/128"},    // added
      {K::AddressAdded, "2001:db8::10/128"},    // replaced
      {K::AddressRemoved, "2001:db8::10/128"},  // removed
      {K::LinkChanged, "down"},                 // taken down
      {K::AddressRemoved, linkLocal},           // IPv6 flushed on down
      {K::LinkRemoved, "down"},                 // deleted
  };
  EXPECT_EQ(seen, expected);
}

TEST(FakeMonitor, ForeignChangesAndOverflow) {
  FakeAddressTable table;
  auto monitor = table.openMonitor();
  table.addLink(Link{0, "veth0", true, false, false, "veth"});
  table.addForeignAddress("veth0", addr("198.51.100.7/24"));
  auto changes = monitor->readChanges().value();
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].kind, Change::Kind::LinkChanged);
  EXPECT_TRUE(changes[0].adminUp);
  EXPECT_FALSE(changes[0].lowerUp);  // up without carrier
  EXPECT_EQ(changes[1].kind, Change::Kind::AddressAdded);

  ASSERT_TRUE(table.addAddress("lo", addr("203.0.113.10/32"), AddOptions{}));
  table.overflowMonitors();
  EXPECT_TRUE(readable(monitor->fd()));
  changes = monitor->readChanges().value();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].kind, Change::Kind::Overflow);
}

TEST(FakeMonitor, EachMonitorSeesLaterChangesAndMayOutliveTheTable) {
  auto table = std::make_unique<FakeAddressTable>();
  ASSERT_TRUE(table->addAddress("lo", addr("203.0.113.10/32"), AddOptions{}));
  auto first = table->openMonitor();
  ASSERT_TRUE(table->addAddress("lo", addr("203.0.113.11/32"), AddOptions{}));
  auto second = table->openMonitor();
  ASSERT_TRUE(table->removeAddress("lo", addr("203.0.113.11/32")));
  EXPECT_EQ(first->readChanges()->size(), 2u);
  EXPECT_EQ(second->readChanges()->size(), 1u);
  second.reset();  // a closed monitor is simply forgotten
  ASSERT_TRUE(table->removeAddress("lo", addr("203.0.113.10/32")));
  table.reset();
  EXPECT_EQ(first->readChanges()->size(), 1u);
}

}  // namespace
}  // namespace vipd::netlink
