// The binding rules of issue 3, on the in-memory AddressTable: bind, ownership, idempotent
// restart, rebind, interfaces that are missing, created or down, and the router ID check.
#include <gtest/gtest.h>

#include <linux/if_addr.h>
#include <sys/socket.h>

#include <algorithm>

#include "daemon/vip/binder.h"
#include "netlink/fake_address_table.h"

namespace vipd::daemon {
namespace {

config::Vip vipOn(const char* cidr, const char* interface = "lo") {
  config::Vip vip;
  vip.prefix = *bgp::Prefix::parse(cidr);
  vip.interface = interface;
  return vip;
}

netlink::InterfaceAddress addr(const char* cidr) {
  return *netlink::InterfaceAddress::parse(cidr);
}

// Every entry for `cidr` on `ifname`: the tests count copies, not just presence.
std::vector<netlink::AddressEntry> entriesFor(netlink::AddressTable& table, const char* ifname,
                                              const char* cidr) {
  std::vector<netlink::AddressEntry> out;
  auto all = table.addresses();
  EXPECT_TRUE(all.has_value());
  for (const auto& e : *all) {
    if (e.ifname == ifname && e.address == addr(cidr)) {
      out.push_back(e);
    }
  }
  return out;
}

bool hasEvent(const std::vector<BindEvent>& events, BindEvent::Kind kind,
              const std::string& text = "") {
  return std::any_of(events.begin(), events.end(), [&](const BindEvent& e) {
    return e.kind == kind && e.text.find(text) != std::string::npos;
  });
}

const bgp::Prefix kVip4 = *bgp::Prefix::parse("203.0.113.10/32");
const bgp::Prefix kVip6 = *bgp::Prefix::parse("2001:db8:ffff::10/128");

TEST(VipBinder, BindsBothFamiliesDeprecatedSoTheyAreNeverASourceAddress) {
  netlink::FakeAddressTable table;
  VipBinder binder(table, {vipOn("203.0.113.10/32"), vipOn("2001:db8:ffff::10/128")});
  auto events = binder.bind();
  EXPECT_TRUE(hasEvent(events, BindEvent::Kind::Bound, "bound on lo"));
  EXPECT_EQ(binder.announceable(), (std::set<bgp::Prefix>{kVip4, kVip6}));
  for (const char* cidr : {"203.0.113.10/32", "2001:db8:ffff::10/128"}) {
    auto entries = entriesFor(table, "lo", cidr);
    ASSERT_EQ(entries.size(), 1u) << cidr;
    EXPECT_NE(entries[0].flags & IFA_F_DEPRECATED, 0u) << cidr;
    EXPECT_EQ(entries[0].validLifetimeSeconds, netlink::kForever) << cidr;
  }
  EXPECT_TRUE(binder.status()[0].ownedByVipd);
}

TEST(VipBinder, RestartFindsItsOwnAddressAndAddsNoSecondCopy) {
  netlink::FakeAddressTable table;
  {
    VipBinder first(table, {vipOn("203.0.113.10/32")});
    (void)first.bind();
  }
  VipBinder second(table, {vipOn("203.0.113.10/32")});
  auto events = second.bind();
  EXPECT_FALSE(hasEvent(events, BindEvent::Kind::Problem));
  EXPECT_EQ(entriesFor(table, "lo", "203.0.113.10/32").size(), 1u);
  EXPECT_TRUE(second.status()[0].ownedByVipd);
  EXPECT_EQ(second.announceable(), std::set<bgp::Prefix>{kVip4});
}

TEST(VipBinder, OperatorsAddressIsUsedButNeverRemoved) {
  netlink::FakeAddressTable table;
  table.addForeignAddress("lo", addr("203.0.113.10/32"));
  table.addForeignAddress("lo", addr("198.51.100.5/32"));  // unrelated operator address
  VipBinder binder(table, {vipOn("203.0.113.10/32")});
  auto events = binder.bind();
  EXPECT_TRUE(hasEvent(events, BindEvent::Kind::Bound, "will not remove"));
  EXPECT_FALSE(binder.status()[0].ownedByVipd);
  auto unbound = binder.unbindOwned();
  EXPECT_TRUE(unbound.empty());
  EXPECT_EQ(entriesFor(table, "lo", "203.0.113.10/32").size(), 1u);
  EXPECT_EQ(entriesFor(table, "lo", "198.51.100.5/32").size(), 1u);
}

TEST(VipBinder, UnbindRemovesOnlyWhatVipdAdded) {
  netlink::FakeAddressTable table;
  table.addForeignAddress("lo", addr("198.51.100.5/32"));
  VipBinder binder(table, {vipOn("203.0.113.10/32"), vipOn("2001:db8:ffff::10/128")});
  (void)binder.bind();
  auto events = binder.unbindOwned();
  EXPECT_EQ(std::count_if(events.begin(), events.end(),
                          [](const BindEvent& e) { return e.kind == BindEvent::Kind::Unbound; }),
            2);
  EXPECT_TRUE(entriesFor(table, "lo", "203.0.113.10/32").empty());
  EXPECT_TRUE(entriesFor(table, "lo", "2001:db8:ffff::10/128").empty());
  EXPECT_EQ(entriesFor(table, "lo", "198.51.100.5/32").size(), 1u);
  EXPECT_TRUE(binder.announceable().empty());
  // Removed on purpose: not counted as lost, and a later refresh reports no loss either.
  EXPECT_EQ(binder.status()[0].lostCount, 0u);
  EXPECT_EQ(binder.status()[0].state, BindState::NotBound);
  EXPECT_FALSE(hasEvent(binder.refresh(), BindEvent::Kind::Lost));
}

// Issue 17 item 6: a withdrawn node's new vipd (a new binder that never binds) removes what an
// earlier run added, by its marking, and leaves the operator's addresses, VIP or not.
TEST(VipBinder, ANewRunRemovesWhatAnEarlierRunAddedAndNothingElse) {
  netlink::FakeAddressTable table;
  table.addForeignAddress("lo", addr("203.0.113.30/32"));  // the operator's VIP
  table.addForeignAddress("lo", addr("198.51.100.5/32"));  // the operator's, not a VIP
  {
    VipBinder killed(table, {vipOn("203.0.113.10/32"), vipOn("203.0.113.30/32")});
    (void)killed.bind();
  }
  VipBinder restarted(table, {vipOn("203.0.113.10/32"), vipOn("203.0.113.30/32")});
  (void)restarted.refresh();
  auto events = restarted.unbindOwned();
  EXPECT_TRUE(hasEvent(events, BindEvent::Kind::Unbound, "removed from lo"));
  EXPECT_TRUE(entriesFor(table, "lo", "203.0.113.10/32").empty());
  EXPECT_EQ(entriesFor(table, "lo", "203.0.113.30/32").size(), 1u);
  EXPECT_EQ(entriesFor(table, "lo", "198.51.100.5/32").size(), 1u);
}

TEST(VipBinder, LostAddressIsWithdrawnThenRebound) {
  netlink::FakeAddressTable table;
  VipBinder binder(table, {vipOn("203.0.113.10/32")});
  (void)binder.bind();
  ASSERT_TRUE(table.removeAddress("lo", addr("203.0.113.10/32")));  // `ip addr del` behind vipd
  auto events = binder.refresh();
  EXPECT_TRUE(hasEvent(events, BindEvent::Kind::Lost, "binding it again"));
  EXPECT_TRUE(binder.announceable().empty());
  EXPECT_EQ(binder.status()[0].lostCount, 1u);
  events = binder.bind();
  EXPECT_TRUE(hasEvent(events, BindEvent::Kind::Bound));
  EXPECT_EQ(binder.announceable(), std::set<bgp::Prefix>{kVip4});
}

TEST(VipBinder, RebindOffLeavesALostAddressAlone) {
  netlink::FakeAddressTable table;
  auto vip = vipOn("203.0.113.10/32");
  vip.rebind = false;
  VipBinder binder(table, {vip});
  (void)binder.bind();
  ASSERT_TRUE(table.removeAddress("lo", addr("203.0.113.10/32")));
  (void)binder.refresh();
  (void)binder.bind();
  EXPECT_TRUE(entriesFor(table, "lo", "203.0.113.10/32").empty());
  EXPECT_TRUE(binder.announceable().empty());
  EXPECT_EQ(binder.status()[0].state, BindState::NotBound);
}

// Issue 29: a reload adds a VIP (bound at the next bind, even with rebind off, the others
// untouched) and removes one (only vipd's address goes, then the VIP is forgotten).
TEST(VipBinder, AVipAddedByAReloadIsBoundOnceAndTheOthersAreUntouched) {
  netlink::FakeAddressTable table;
  VipBinder binder(table, {vipOn("203.0.113.10/32")});
  (void)binder.bind();
  auto added = vipOn("2001:db8:ffff::10/128");
  added.rebind = false;
  binder.addOrUpdate(added);
  auto found = binder.refresh();
  EXPECT_FALSE(hasEvent(found, BindEvent::Kind::Problem)) << "not bound yet is not an error";
  EXPECT_EQ(binder.announceable(), std::set<bgp::Prefix>{kVip4});
  auto events = binder.bind();
  EXPECT_TRUE(hasEvent(events, BindEvent::Kind::Bound));
  EXPECT_FALSE(hasEvent(events, BindEvent::Kind::Lost));
  EXPECT_EQ(binder.announceable(), (std::set<bgp::Prefix>{kVip4, kVip6}));
  EXPECT_EQ(entriesFor(table, "lo", "203.0.113.10/32").size(), 1u);
  // Its rebind off holds from now on.
  ASSERT_TRUE(table.removeAddress("lo", addr("2001:db8:ffff::10/128")));
  (void)binder.refresh();
  (void)binder.bind();
  EXPECT_TRUE(entriesFor(table, "lo", "2001:db8:ffff::10/128").empty());
}

TEST(VipBinder, AVipRemovedByAReloadLosesOnlyVipdsAddress) {
  netlink::FakeAddressTable table;
  table.addForeignAddress("lo", addr("2001:db8:ffff::10/128"));  // the operator's
  VipBinder binder(table, {vipOn("203.0.113.10/32"), vipOn("2001:db8:ffff::10/128")});
  (void)binder.bind();
  auto events = binder.remove(kVip4);
  EXPECT_TRUE(hasEvent(events, BindEvent::Kind::Unbound, "removed from lo"));
  EXPECT_TRUE(entriesFor(table, "lo", "203.0.113.10/32").empty());
  ASSERT_EQ(binder.status().size(), 1u);
  EXPECT_EQ(binder.status()[0].vip.prefix, kVip6);
  events = binder.remove(kVip6);
  EXPECT_FALSE(hasEvent(events, BindEvent::Kind::Unbound));
  EXPECT_EQ(entriesFor(table, "lo", "2001:db8:ffff::10/128").size(), 1u);
  EXPECT_TRUE(binder.status().empty());
}

TEST(VipBinder, AReloadChangesAKnownVipsRebindNotItsInterface) {
  netlink::FakeAddressTable table;
  VipBinder binder(table, {vipOn("203.0.113.10/32")});
  (void)binder.bind();
  auto changed = vipOn("203.0.113.10/32", "eth9");
  changed.rebind = false;
  binder.addOrUpdate(changed);
  ASSERT_EQ(binder.status().size(), 1u);
  EXPECT_FALSE(binder.status()[0].vip.rebind);
  EXPECT_EQ(binder.status()[0].vip.interface, "lo");
}

TEST(VipBinder, MissingInterfaceIsAnErrorForThatVipOnly) {
  netlink::FakeAddressTable table;
  VipBinder binder(table, {vipOn("203.0.113.10/32", "vip0"), vipOn("203.0.113.11/32")});
  auto events = binder.bind();
  EXPECT_TRUE(hasEvent(events, BindEvent::Kind::Problem, "interface vip0 does not exist"));
  EXPECT_EQ(binder.status()[0].state, BindState::InterfaceMissing);
  EXPECT_EQ(binder.announceable(),
            std::set<bgp::Prefix>{*bgp::Prefix::parse("203.0.113.11/32")});
  auto links = table.findLink("vip0");
  ASSERT_TRUE(links.has_value());
  EXPECT_FALSE(links->has_value()) << "vipd must not create an interface it was not asked to";
}

// Issue 17 item 9: a VIP read before vipd binds it (every normal start) is not an error; what
// the first binding leaves unbound is.
TEST(VipBinder, NotBoundBeforeTheFirstBindIsFoundNotAProblem) {
  netlink::FakeAddressTable table;
  VipBinder binder(table, {vipOn("203.0.113.10/32"), vipOn("203.0.113.11/32", "vip0")});
  auto events = binder.refresh();
  EXPECT_FALSE(hasEvent(events, BindEvent::Kind::Problem));
  EXPECT_TRUE(hasEvent(events, BindEvent::Kind::Found, "address not bound on lo"));
  EXPECT_TRUE(hasEvent(events, BindEvent::Kind::Found, "interface vip0 does not exist"));
  EXPECT_TRUE(binder.refresh().empty()) << "reported once";
  events = binder.bind();
  EXPECT_TRUE(hasEvent(events, BindEvent::Kind::Bound, "bound on lo"));
  EXPECT_TRUE(hasEvent(events, BindEvent::Kind::Problem, "interface vip0 does not exist"))
      << "still unbound after binding: now an error";
  EXPECT_FALSE(hasEvent(events, BindEvent::Kind::Found));
}

TEST(VipBinder, AlreadyBoundBeforeTheFirstBindIsReportedOnce) {
  netlink::FakeAddressTable table;
  table.addForeignAddress("lo", addr("203.0.113.10/32"));
  VipBinder binder(table, {vipOn("203.0.113.10/32")});
  EXPECT_TRUE(hasEvent(binder.refresh(), BindEvent::Kind::Bound));
  EXPECT_TRUE(binder.bind().empty());
}

TEST(VipBinder, CreateInterfaceMakesAnUpDummy) {
  netlink::FakeAddressTable table;
  auto vip = vipOn("203.0.113.10/32", "vip0");
  vip.createInterface = true;
  VipBinder binder(table, {vip});
  auto events = binder.bind();
  EXPECT_TRUE(hasEvent(events, BindEvent::Kind::InterfaceCreated, "vip0"));
  auto link = table.findLink("vip0");
  ASSERT_TRUE(link && *link);
  EXPECT_EQ((*link)->kind, "dummy");
  EXPECT_TRUE((*link)->adminUp);
  EXPECT_EQ(binder.announceable(), std::set<bgp::Prefix>{kVip4});
}

TEST(VipBinder, FailedInterfaceCreationIsTheReasonShown) {
  netlink::FakeAddressTable table;
  table.failNext("create dummy",
                 netlink::Error{"create dummy", "vip0", "Operation not supported", 95});
  auto vip = vipOn("203.0.113.10/32", "vip0");
  vip.createInterface = true;
  VipBinder binder(table, {vip});
  (void)binder.bind();
  EXPECT_EQ(binder.status()[0].state, BindState::Error);
  EXPECT_NE(binder.status()[0].reason.find("Operation not supported"), std::string::npos)
      << binder.status()[0].reason;
  EXPECT_TRUE(binder.announceable().empty());
}

TEST(VipBinder, InterfaceDownWithdrawsAndUpAnnouncesAgain) {
  netlink::FakeAddressTable table;
  auto vip = vipOn("203.0.113.10/32", "vip0");
  vip.createInterface = true;
  VipBinder binder(table, {vip});
  (void)binder.bind();
  ASSERT_TRUE(table.setLinkUp("vip0", false));
  auto events = binder.refresh();
  EXPECT_TRUE(hasEvent(events, BindEvent::Kind::Lost, "interface vip0 is down"));
  EXPECT_TRUE(binder.announceable().empty());
  ASSERT_TRUE(table.setLinkUp("vip0", true));
  events = binder.refresh();
  EXPECT_TRUE(hasEvent(events, BindEvent::Kind::Bound));
  EXPECT_EQ(binder.announceable(), std::set<bgp::Prefix>{kVip4});
}

TEST(VipBinder, InterfaceDeletedIsLost) {
  netlink::FakeAddressTable table;
  auto vip = vipOn("203.0.113.10/32", "vip0");
  vip.createInterface = true;
  VipBinder binder(table, {vip});
  (void)binder.bind();
  ASSERT_TRUE(table.deleteLink("vip0"));
  auto events = binder.refresh();
  EXPECT_TRUE(hasEvent(events, BindEvent::Kind::Lost, "does not exist"));
  EXPECT_TRUE(binder.announceable().empty());
  (void)binder.bind();  // rebind recreates it, since createInterface is set
  EXPECT_EQ(binder.announceable(), std::set<bgp::Prefix>{kVip4});
}

TEST(VipBinder, NetlinkFailureIsReportedAndNotAnnounced) {
  netlink::FakeAddressTable table;
  table.failNext("add address",
                 netlink::Error{"add address", "203.0.113.10/32 on lo", "Operation not permitted",
                                1});
  VipBinder binder(table, {vipOn("203.0.113.10/32")});
  auto events = binder.bind();
  EXPECT_TRUE(hasEvent(events, BindEvent::Kind::Problem, "Operation not permitted"));
  EXPECT_TRUE(binder.announceable().empty());
  (void)binder.bind();  // the next reconcile succeeds
  EXPECT_EQ(binder.announceable(), std::set<bgp::Prefix>{kVip4});
}

TEST(VipBinder, ConcernsOnlyItsInterfacesAndAddresses) {
  netlink::FakeAddressTable table;
  VipBinder binder(table, {vipOn("203.0.113.10/32", "vip0")});
  netlink::Change otherLink{netlink::Change::Kind::LinkChanged, 7, "eth0"};
  EXPECT_FALSE(binder.concerns(otherLink));
  netlink::Change ourLink{netlink::Change::Kind::LinkChanged, 8, "vip0"};
  EXPECT_TRUE(binder.concerns(ourLink));
  netlink::Change ourAddress{netlink::Change::Kind::AddressRemoved, 9, "", addr("203.0.113.10/32")};
  EXPECT_TRUE(binder.concerns(ourAddress));
  netlink::Change overflow{netlink::Change::Kind::Overflow};
  EXPECT_TRUE(binder.concerns(overflow));
}

TEST(RouterIdCheck, AcceptsALocalAddressAndNamesWhatItFoundOtherwise) {
  netlink::FakeAddressTable table;
  table.addForeignAddress("lo", addr("192.0.2.11/32"));
  auto all = table.addresses();
  ASSERT_TRUE(all.has_value());
  EXPECT_FALSE(checkRouterIdIsLocal(*bgp::IpAddress::parse("192.0.2.11"), *all).has_value());
  auto problem = checkRouterIdIsLocal(*bgp::IpAddress::parse("192.0.2.99"), *all);
  ASSERT_TRUE(problem.has_value());
  EXPECT_NE(problem->find("router ID 192.0.2.99 is not an address of this node"),
            std::string::npos);
  EXPECT_NE(problem->find("192.0.2.11/32 on lo"), std::string::npos) << *problem;
  EXPECT_NE(problem->find("allowNonLocalRouterId"), std::string::npos);
}

}  // namespace
}  // namespace vipd::daemon
