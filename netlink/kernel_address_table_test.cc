// The libnl AddressTable and Monitor against the real kernel. Every test runs in a network
// namespace of its own: SetUp() unshares one (the old one vanishes with its last socket), so the
// test sees only a fresh "lo" and changes nothing outside. `ip` commands run with std::system
// inherit it. Needs root (CAP_SYS_ADMIN for unshare): skipped without it, except with CI=true,
// where a missing privilege is a failure.
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <linux/if_addr.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <string>

#include "netlink/address_table.h"
#include "netlink/fake_address_table.h"
#include "netlink/route_lookup.h"

namespace vipd::netlink {
namespace {

using namespace std::chrono_literals;

InterfaceAddress addr(std::string_view text) {
  auto parsed = InterfaceAddress::parse(text);
  EXPECT_TRUE(parsed.has_value()) << text;
  return parsed.value_or(InterfaceAddress{});
}

bool inCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

// Runs a shell command in this test's namespace; its exit status.
int run(const std::string& command) {
  const int status = std::system((command + " >/dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string output(const std::string& command) {
  std::string text;
  if (FILE* pipe = popen((command + " 2>&1").c_str(), "r")) {
    char buffer[4096];
    size_t n = 0;
    while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) {
      text.append(buffer, n);
    }
    pclose(pipe);
  }
  return text;
}

std::string describe(const Change& change) {
  static const char* kinds[] = {"LinkChanged", "LinkRemoved", "AddressAdded", "AddressRemoved",
                                "Overflow"};
  std::string text = kinds[static_cast<int>(change.kind)];
  text += " " + change.ifname + "#" + std::to_string(change.ifindex);
  if (change.address) {
    text += " " + change.address->toString();
  } else {
    text += change.adminUp ? " up" : " down";
  }
  return text;
}

class NetlinkKernel : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0 || unshare(CLONE_NEWNET) != 0) {
      const std::string why = geteuid() != 0
                                  ? std::string("not root")
                                  : std::string("unshare(CLONE_NEWNET): ") + std::strerror(errno);
      if (inCi()) {
        FAIL() << "CI=true and the kernel netlink tests cannot make a network namespace: " << why;
      }
      GTEST_SKIP() << "needs root to make a network namespace (" << why << ")";
    }
    auto table = openKernelAddressTable();
    ASSERT_TRUE(table) << table.error().toString();
    table_ = std::move(*table);
    auto monitor = openKernelMonitor();
    ASSERT_TRUE(monitor) << monitor.error().toString();
    monitor_ = std::move(*monitor);
    auto up = table_->setLinkUp("lo", true);
    ASSERT_TRUE(up) << up.error().toString();
  }

  std::optional<AddressEntry> entryFor(std::string_view ifname, std::string_view address) {
    auto entries = table_->addresses();
    EXPECT_TRUE(entries) << entries.error().toString();
    for (const AddressEntry& entry : entries.value_or(std::vector<AddressEntry>{})) {
      if (entry.ifname == ifname && entry.address == addr(address)) {
        return entry;
      }
    }
    return std::nullopt;
  }

  // Reads changes until one matches, waiting on the fd with poll() for at most `limit`.
  bool waitFor(const std::function<bool(const Change&)>& match,
               std::chrono::milliseconds limit = 3000ms) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
      while (!pending_.empty()) {
        const Change change = pending_.front();
        pending_.pop_front();
        seen_.push_back(describe(change));
        if (match(change)) {
          return true;
        }
      }
      auto changes = monitor_->readChanges();
      EXPECT_TRUE(changes) << changes.error().toString();
      for (const Change& change : changes.value_or(std::vector<Change>{})) {
        pending_.push_back(change);
      }
      if (!pending_.empty()) {
        continue;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left <= 0ms) {
        return false;
      }
      pollfd p{monitor_->fd(), POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) == 0) {
        return false;
      }
    }
  }

  std::string seen() const {
    std::string text;
    for (const std::string& line : seen_) {
      text += "\n  " + line;
    }
    return text.empty() ? "\n  (nothing)" : text;
  }

  static std::function<bool(const Change&)> address(Change::Kind kind, std::string ifname,
                                                    std::string text) {
    return [=](const Change& c) {
      return c.kind == kind && c.ifname == ifname && c.address && c.address->toString() == text;
    };
  }

  // A veth pair stands in for "someone else's device" (and for a non-lo interface where the
  // kernel has no dummy driver).
  void addVeth() { ASSERT_EQ(run("ip link add veth0 type veth peer name veth1"), 0); }

  // Whether this kernel has the dummy driver (CONFIG_DUMMY); probed with `ip`, not with the code
  // under test.
  static bool kernelHasDummy() {
    const bool has = run("ip link add vipprobe0 type dummy") == 0;
    if (has) {
      run("ip link del vipprobe0");
    }
    return has;
  }

  std::unique_ptr<AddressTable> table_;
  std::unique_ptr<Monitor> monitor_;
  std::deque<Change> pending_;  // read but not yet looked at
  std::vector<std::string> seen_;
};

TEST_F(NetlinkKernel, ListsTheFreshNamespace) {
  auto links = table_->links();
  ASSERT_TRUE(links) << links.error().toString();
  ASSERT_EQ(links->size(), 1u);
  EXPECT_EQ(links->front(), (Link{1, "lo", true, true, true, ""}));
  addVeth();
  auto veth = table_->findLink("veth0");
  ASSERT_TRUE(veth) << veth.error().toString();
  ASSERT_TRUE(veth->has_value());
  EXPECT_EQ((*veth)->kind, "veth");
  EXPECT_FALSE((*veth)->adminUp);
  EXPECT_FALSE((*veth)->loopback);
  EXPECT_FALSE(table_->findLink("eth9").value().has_value());
  EXPECT_FALSE(table_->findLink("a-name-longer-than-15").value().has_value());
  EXPECT_FALSE(table_->findLink("").value().has_value());

  auto entries = table_->addresses();
  ASSERT_TRUE(entries) << entries.error().toString();
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0].address, addr("127.0.0.1/8"));
  EXPECT_EQ((*entries)[1].address, addr("::1/128"));
  EXPECT_EQ((*entries)[0].ifname, "lo");
  EXPECT_EQ((*entries)[0].flags, unsigned{IFA_F_PERMANENT});
}

TEST_F(NetlinkKernel, AddsDeprecatedVipsToLoopbackIdempotently) {
  for (int round = 0; round < 2; ++round) {
    auto v4 = table_->addAddress("lo", addr("203.0.113.10/32"), AddOptions{});
    ASSERT_TRUE(v4) << v4.error().toString();
    auto v6 = table_->addAddress("lo", addr("2001:db8::10/128"), AddOptions{});
    ASSERT_TRUE(v6) << v6.error().toString();
  }
  auto v4 = entryFor("lo", "203.0.113.10/32");
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->flags, unsigned{IFA_F_PERMANENT | IFA_F_DEPRECATED | IFA_F_NOPREFIXROUTE});
  // The kernel keeps IFA_F_DEPRECATED on IPv4 but reports a permanent address's lifetimes as
  // forever.
  EXPECT_EQ(v4->preferredLifetimeSeconds, kForever);
  EXPECT_EQ(v4->validLifetimeSeconds, kForever);
  auto v6 = entryFor("lo", "2001:db8::10/128");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->flags,
            unsigned{IFA_F_PERMANENT | IFA_F_DEPRECATED | IFA_F_NOPREFIXROUTE | IFA_F_NODAD});
  EXPECT_EQ(v6->preferredLifetimeSeconds, 0u);
  EXPECT_EQ(v6->validLifetimeSeconds, kForever);
  EXPECT_EQ(table_->addresses()->size(), 4u);

  // What an operator sees.
  const std::string shown = output("ip -d addr show dev lo");
  EXPECT_NE(shown.find("inet 203.0.113.10/32 scope global deprecated noprefixroute lo"),
            std::string::npos)
      << shown;
  EXPECT_NE(shown.find("inet6 2001:db8::10/128 scope global nodad deprecated noprefixroute"),
            std::string::npos)
      << shown;
  EXPECT_NE(shown.find("valid_lft forever preferred_lft 0sec"), std::string::npos) << shown;
}

TEST_F(NetlinkKernel, ReAddingTakesTheNewOptions) {
  ASSERT_TRUE(table_->addAddress("lo", addr("2001:db8::10/128"), AddOptions{false, false}));
  ASSERT_TRUE(table_->addAddress("lo", addr("203.0.113.10/32"), AddOptions{false, false}));
  // Without IFA_F_NODAD, IFA_F_TENTATIVE shows for a moment even on lo.
  EXPECT_EQ(entryFor("lo", "2001:db8::10/128")->flags & ~unsigned{IFA_F_TENTATIVE},
            unsigned{IFA_F_PERMANENT | IFA_F_NOPREFIXROUTE});
  EXPECT_EQ(entryFor("lo", "2001:db8::10/128")->preferredLifetimeSeconds, kForever);
  EXPECT_EQ(entryFor("lo", "203.0.113.10/32")->flags & IFA_F_DEPRECATED, 0u);
  ASSERT_TRUE(table_->addAddress("lo", addr("2001:db8::10/128"), AddOptions{}));
  ASSERT_TRUE(table_->addAddress("lo", addr("203.0.113.10/32"), AddOptions{}));
  EXPECT_EQ(entryFor("lo", "2001:db8::10/128")->preferredLifetimeSeconds, 0u);
  EXPECT_NE(entryFor("lo", "2001:db8::10/128")->flags & IFA_F_NODAD, 0u);
  EXPECT_NE(entryFor("lo", "203.0.113.10/32")->flags & IFA_F_DEPRECATED, 0u);

  // IPv6 identifies an address without its length: /64 over /128 changes nothing.
  ASSERT_TRUE(table_->addAddress("lo", addr("2001:db8::10/64"), AddOptions{}));
  EXPECT_TRUE(entryFor("lo", "2001:db8::10/128"));
  EXPECT_FALSE(entryFor("lo", "2001:db8::10/64"));
  // IPv4 does not: the same address with another length is a second address.
  ASSERT_TRUE(table_->addAddress("lo", addr("203.0.113.10/24"), AddOptions{}));
  EXPECT_TRUE(entryFor("lo", "203.0.113.10/32"));
  EXPECT_TRUE(entryFor("lo", "203.0.113.10/24"));
}

TEST_F(NetlinkKernel, ErrorsNameOperationObjectAndReason) {
  auto missing = table_->addAddress("vip9", addr("203.0.113.10/32"), AddOptions{});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ENODEV);
  EXPECT_EQ(missing.error().toString(), "add address 203.0.113.10/32 on vip9: No such device");

  auto invalid = table_->addAddress("lo", InterfaceAddress{}, AddOptions{});
  ASSERT_FALSE(invalid);
  EXPECT_EQ(invalid.error().code, EINVAL);

  auto up = table_->setLinkUp("vip9", true);
  ASSERT_FALSE(up);
  EXPECT_EQ(up.error().toString(), "set link up vip9: No such device");

  auto lo = table_->deleteLink("lo");
  ASSERT_FALSE(lo);
  EXPECT_EQ(lo.error().code, EOPNOTSUPP);
  EXPECT_EQ(lo.error().toString().rfind("delete link lo: Operation not supported", 0), 0u)
      << lo.error().toString();
}

// Takes `capability` out of this thread's effective set (it stays permitted) until destroyed:
// the kernel then judges the thread's requests as it would a process never granted it.
class WithoutEffectiveCapability {
 public:
  explicit WithoutEffectiveCapability(int capability) {
    header_.version = _LINUX_CAPABILITY_VERSION_3;
    ok_ = ::syscall(SYS_capget, &header_, saved_) == 0;
    __user_cap_data_struct reduced[2] = {saved_[0], saved_[1]};
    reduced[capability / 32].effective &= ~(1u << (capability % 32));
    ok_ = ok_ && ::syscall(SYS_capset, &header_, reduced) == 0;
  }
  ~WithoutEffectiveCapability() { ::syscall(SYS_capset, &header_, saved_); }
  bool ok() const { return ok_; }

 private:
  __user_cap_header_struct header_{};
  __user_cap_data_struct saved_[2]{};
  bool ok_ = false;
};

TEST_F(NetlinkKernel, WithoutCapNetAdminChangesFailNamingIt) {
  WithoutEffectiveCapability without(CAP_NET_ADMIN);
  ASSERT_TRUE(without.ok()) << "capset: " << std::strerror(errno);
  // Reading needs no capability: vipd still sees what is bound.
  EXPECT_TRUE(table_->links());
  EXPECT_TRUE(table_->addresses());
  auto added = table_->addAddress("lo", addr("203.0.113.10/32"), AddOptions{});
  ASSERT_FALSE(added);
  EXPECT_EQ(added.error().code, EPERM);
  EXPECT_EQ(added.error().toString(),
            "add address 203.0.113.10/32 on lo: Operation not permitted; changing interfaces and "
            "addresses needs CAP_NET_ADMIN");
  auto created = table_->createDummy("vip0");
  ASSERT_FALSE(created);
  EXPECT_EQ(created.error().code, EPERM);
  EXPECT_NE(created.error().toString().find("CAP_NET_ADMIN"), std::string::npos)
      << created.error().toString();
}

TEST_F(NetlinkKernel, RemoveIsIdempotentAndExact) {
  // Addresses another program added.
  ASSERT_EQ(run("ip addr add 198.51.100.7/24 dev lo"), 0);
  ASSERT_EQ(run("ip addr add 2001:db8::7/64 dev lo"), 0);
  auto foreign = entryFor("lo", "198.51.100.7/24");
  ASSERT_TRUE(foreign);
  EXPECT_EQ(foreign->flags, unsigned{IFA_F_PERMANENT});

  // Another prefix length is another address: absent, so success, and nothing removed.
  ASSERT_TRUE(table_->removeAddress("lo", addr("198.51.100.7/32")));
  ASSERT_TRUE(table_->removeAddress("lo", addr("2001:db8::7/128")));
  EXPECT_TRUE(entryFor("lo", "198.51.100.7/24"));
  EXPECT_TRUE(entryFor("lo", "2001:db8::7/64"));

  for (int round = 0; round < 2; ++round) {
    auto v4 = table_->removeAddress("lo", addr("198.51.100.7/24"));
    ASSERT_TRUE(v4) << v4.error().toString();
    auto v6 = table_->removeAddress("lo", addr("2001:db8::7/64"));
    ASSERT_TRUE(v6) << v6.error().toString();
  }
  EXPECT_FALSE(entryFor("lo", "198.51.100.7/24"));
  EXPECT_FALSE(entryFor("lo", "2001:db8::7/64"));
  EXPECT_TRUE(table_->removeAddress("vip9", addr("198.51.100.7/24")));
}

TEST_F(NetlinkKernel, AddressesOnADownInterfaceAndIPv6FlushOnDown) {
  addVeth();
  ASSERT_TRUE(table_->addAddress("veth0", addr("203.0.113.10/32"), AddOptions{}));
  ASSERT_TRUE(table_->addAddress("veth0", addr("2001:db8::10/128"), AddOptions{}));
  EXPECT_TRUE(entryFor("veth0", "2001:db8::10/128"));

  ASSERT_TRUE(table_->setLinkUp("veth0", true));
  ASSERT_TRUE(table_->setLinkUp("veth0", true));
  auto up = table_->findLink("veth0").value();
  ASSERT_TRUE(up);
  EXPECT_TRUE(up->adminUp);
  ASSERT_TRUE(table_->setLinkUp("veth0", false));
  ASSERT_TRUE(table_->setLinkUp("veth0", false));
  auto down = table_->findLink("veth0").value();
  ASSERT_TRUE(down);
  EXPECT_FALSE(down->adminUp);
  EXPECT_FALSE(down->lowerUp);
  // net.ipv6.conf.*.keep_addr_on_down=0: the kernel drops IPv6 addresses when a link goes down.
  EXPECT_TRUE(entryFor("veth0", "203.0.113.10/32"));
  EXPECT_FALSE(entryFor("veth0", "2001:db8::10/128"));

  // The same on lo: ::1 comes back on up, a VIP does not.
  ASSERT_TRUE(table_->addAddress("lo", addr("2001:db8::11/128"), AddOptions{}));
  ASSERT_TRUE(table_->setLinkUp("lo", false));
  EXPECT_FALSE(entryFor("lo", "::1/128"));
  EXPECT_TRUE(entryFor("lo", "127.0.0.1/8"));
  ASSERT_TRUE(table_->setLinkUp("lo", true));
  EXPECT_TRUE(entryFor("lo", "::1/128"));
  EXPECT_FALSE(entryFor("lo", "2001:db8::11/128"));
}

TEST_F(NetlinkKernel, CreateDummyRefusesSomeoneElsesDevice) {
  addVeth();
  auto veth = table_->createDummy("veth0");
  ASSERT_FALSE(veth);
  EXPECT_EQ(veth.error().code, EEXIST);
  EXPECT_EQ(veth.error().toString(),
            "create dummy veth0: the name belongs to a veth device; vipd does not take over an "
            "interface it did not create");
  auto lo = table_->createDummy("lo");
  ASSERT_FALSE(lo);
  EXPECT_NE(lo.error().reason.find("without a link kind"), std::string::npos);
  auto longName = table_->createDummy("a-name-longer-than-15");
  ASSERT_FALSE(longName);
  EXPECT_EQ(longName.error().code, EINVAL);
}

TEST_F(NetlinkKernel, CreateDummyIsIdempotent) {
  if (!kernelHasDummy()) {
    // Then vipd's own call must say so plainly.
    auto result = table_->createDummy("vip0");
    ASSERT_FALSE(result);
    EXPECT_EQ(result.error().code, EOPNOTSUPP) << result.error().toString();
    EXPECT_EQ(result.error().toString(),
              "create dummy vip0: Operation not supported (Unknown device type)");
    GTEST_SKIP() << "this kernel has no dummy driver (CONFIG_DUMMY); createDummy reports: "
                 << result.error().toString();
  }
  for (int round = 0; round < 2; ++round) {
    auto result = table_->createDummy("vip0");
    ASSERT_TRUE(result) << result.error().toString();
  }
  auto link = table_->findLink("vip0").value();
  ASSERT_TRUE(link);
  EXPECT_EQ(link->kind, "dummy");
  EXPECT_TRUE(link->adminUp);
  EXPECT_TRUE(link->lowerUp);
  ASSERT_TRUE(table_->addAddress("vip0", addr("203.0.113.10/32"), AddOptions{}));
  ASSERT_TRUE(table_->setLinkUp("vip0", false));
  ASSERT_TRUE(table_->createDummy("vip0"));  // brings it up again
  EXPECT_TRUE(table_->findLink("vip0").value()->adminUp);
  ASSERT_TRUE(table_->deleteLink("vip0"));
  ASSERT_TRUE(table_->deleteLink("vip0"));
  EXPECT_FALSE(table_->findLink("vip0").value());
  EXPECT_FALSE(entryFor("vip0", "203.0.113.10/32"));
}

TEST_F(NetlinkKernel, MonitorNeverBlocks) {
  auto changes = monitor_->readChanges();
  ASSERT_TRUE(changes) << changes.error().toString();
  // lo came up in SetUp; anything else would be a surprise.
  for (const Change& change : *changes) {
    EXPECT_EQ(change.ifname, "lo") << describe(change);
  }
  auto again = monitor_->readChanges();
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->empty());
}

TEST_F(NetlinkKernel, MonitorReportsChangesMadeWithIp) {
  using K = Change::Kind;
  ASSERT_EQ(run("ip addr add 192.0.2.5/32 dev lo"), 0);
  EXPECT_TRUE(waitFor(address(K::AddressAdded, "lo", "192.0.2.5/32"))) << seen();
  ASSERT_EQ(run("ip addr add 2001:db8::5/128 dev lo"), 0);
  EXPECT_TRUE(waitFor(address(K::AddressAdded, "lo", "2001:db8::5/128"))) << seen();
  ASSERT_EQ(run("ip addr del 192.0.2.5/32 dev lo"), 0);
  EXPECT_TRUE(waitFor(address(K::AddressRemoved, "lo", "192.0.2.5/32"))) << seen();
  ASSERT_EQ(run("ip addr del 2001:db8::5/128 dev lo"), 0);
  EXPECT_TRUE(waitFor(address(K::AddressRemoved, "lo", "2001:db8::5/128"))) << seen();

  addVeth();
  EXPECT_TRUE(waitFor([](const Change& c) {
    return c.kind == K::LinkChanged && c.ifname == "veth0" && !c.adminUp;
  })) << seen();
  ASSERT_EQ(run("ip link set veth0 up"), 0);
  EXPECT_TRUE(waitFor([](const Change& c) {
    return c.kind == K::LinkChanged && c.ifname == "veth0" && c.adminUp;
  })) << seen();
  ASSERT_EQ(run("ip link set veth0 down"), 0);
  EXPECT_TRUE(waitFor([](const Change& c) {
    return c.kind == K::LinkChanged && c.ifname == "veth0" && !c.adminUp && !c.lowerUp;
  })) << seen();
  ASSERT_EQ(run("ip link del veth0"), 0);
  EXPECT_TRUE(waitFor([](const Change& c) {
    return c.kind == K::LinkRemoved && c.ifname == "veth0";
  })) << seen();
}

TEST_F(NetlinkKernel, MonitorReportsTheTablesOwnOperations) {
  using K = Change::Kind;
  addVeth();
  ASSERT_TRUE(table_->addAddress("veth0", addr("203.0.113.10/32"), AddOptions{}));
  EXPECT_TRUE(waitFor(address(K::AddressAdded, "veth0", "203.0.113.10/32"))) << seen();
  ASSERT_TRUE(table_->addAddress("lo", addr("2001:db8::10/128"), AddOptions{}));
  EXPECT_TRUE(waitFor(address(K::AddressAdded, "lo", "2001:db8::10/128"))) << seen();
  ASSERT_TRUE(table_->setLinkUp("veth0", true));
  EXPECT_TRUE(waitFor([](const Change& c) {
    return c.kind == K::LinkChanged && c.ifname == "veth0" && c.adminUp;
  })) << seen();
  ASSERT_TRUE(table_->setLinkUp("veth0", false));
  EXPECT_TRUE(waitFor([](const Change& c) {
    return c.kind == K::LinkChanged && c.ifname == "veth0" && !c.adminUp;
  })) << seen();
  ASSERT_TRUE(table_->removeAddress("lo", addr("2001:db8::10/128")));
  EXPECT_TRUE(waitFor(address(K::AddressRemoved, "lo", "2001:db8::10/128"))) << seen();
  ASSERT_TRUE(table_->deleteLink("veth0"));
  EXPECT_TRUE(waitFor([](const Change& c) {
    return c.kind == K::AddressRemoved && c.address && c.address->toString() == "203.0.113.10/32";
  })) << seen();
  EXPECT_TRUE(waitFor([](const Change& c) {
    return c.kind == K::LinkRemoved && c.ifname == "veth0";
  })) << seen();
}

// The fake's claims, replayed on the kernel: the same calls give the same results and the same
// address list.
TEST_F(NetlinkKernel, FakeBehavesLikeTheKernel) {
  FakeAddressTable fake;
  std::vector<std::function<Result<void>(AddressTable&)>> steps = {
      [](AddressTable& t) { return t.addAddress("lo", addr("203.0.113.10/32"), AddOptions{}); },
      [](AddressTable& t) { return t.addAddress("lo", addr("203.0.113.10/32"), AddOptions{}); },
      [](AddressTable& t) { return t.addAddress("lo", addr("2001:db8::10/128"), AddOptions{}); },
      [](AddressTable& t) { return t.addAddress("lo", addr("2001:db8::10/64"), AddOptions{}); },
      [](AddressTable& t) {
        // With DAD the kernel shows IFA_F_TENTATIVE for a moment even on lo; the fake does not.
        return t.addAddress("lo", addr("2001:db8::11/128"), AddOptions{false, true});
      },
      [](AddressTable& t) { return t.addAddress("lo", addr("203.0.113.10/24"), AddOptions{}); },
      [](AddressTable& t) { return t.removeAddress("lo", addr("203.0.113.10/24")); },
      [](AddressTable& t) { return t.removeAddress("lo", addr("2001:db8::10/64")); },
      [](AddressTable& t) { return t.removeAddress("lo", addr("198.51.100.1/32")); },
      [](AddressTable& t) { return t.removeAddress("vip9", addr("198.51.100.1/32")); },
      [](AddressTable& t) { return t.addAddress("vip9", addr("198.51.100.1/32"), AddOptions{}); },
      [](AddressTable& t) { return t.setLinkUp("vip9", false); },
      [](AddressTable& t) { return t.deleteLink("vip9"); },
      [](AddressTable& t) { return t.createDummy("lo"); },
      [](AddressTable& t) { return t.createDummy("a-name-longer-than-15"); },
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    auto kernel = steps[i](*table_);
    auto faked = steps[i](fake);
    ASSERT_EQ(kernel.has_value(), faked.has_value())
        << "step " << i << ": " << (kernel ? faked.error() : kernel.error()).toString();
    if (!kernel) {
      EXPECT_EQ(kernel.error().toString(), faked.error().toString()) << "step " << i;
      EXPECT_EQ(kernel.error().code, faked.error().code) << "step " << i;
    }
  }
  // The order of addresses() is unspecified.
  auto sorted = [](AddressTable& t) {
    auto entries = t.addresses().value();
    std::sort(entries.begin(), entries.end());
    return entries;
  };
  EXPECT_EQ(sorted(*table_), sorted(fake));
  EXPECT_EQ(table_->links().value(), fake.links().value());
  // And across lo going down and up.
  ASSERT_TRUE(table_->setLinkUp("lo", false));
  ASSERT_TRUE(fake.setLinkUp("lo", false));
  EXPECT_EQ(sorted(*table_), sorted(fake));
  ASSERT_TRUE(table_->setLinkUp("lo", true));
  ASSERT_TRUE(fake.setLinkUp("lo", true));
  EXPECT_EQ(sorted(*table_), sorted(fake));
}

// lookupRoute (vipd doctor's "peers reachable"): the interface and next hop the kernel picks, and
// each way it refuses, in the kernel's words.
TEST_F(NetlinkKernel, LooksUpTheRouteTheKernelWouldTake) {
  addVeth();
  ASSERT_EQ(run("ip link set veth0 up && ip link set veth1 up"), 0);
  ASSERT_EQ(run("ip addr add 192.0.2.11/24 dev veth0"), 0);
  ASSERT_EQ(run("ip -6 addr add 2001:db8::11/64 dev veth0 nodad"), 0);
  ASSERT_TRUE(table_->addAddress("lo", addr("203.0.113.10/32"), AddOptions{}));

  // On the connected network: no gateway, the node's address as the source.
  auto connected = lookupRoute(addr("192.0.2.1/32"));
  ASSERT_TRUE(connected) << connected.error().toString();
  EXPECT_EQ(connected->ifname, "veth0");
  EXPECT_GT(connected->ifindex, 0);
  EXPECT_FALSE(connected->gateway.has_value());
  ASSERT_TRUE(connected->source.has_value());
  EXPECT_EQ(connected->source->toString(), "192.0.2.11/32");
  EXPECT_FALSE(connected->local);
  auto v6 = lookupRoute(addr("2001:db8::1/128"));
  ASSERT_TRUE(v6) << v6.error().toString();
  EXPECT_EQ(v6->ifname, "veth0");
  EXPECT_FALSE(v6->gateway.has_value());

  // Nothing else routed yet: the kernel's own reason.
  auto none = lookupRoute(addr("198.51.100.1/32"));
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, ENETUNREACH);
  EXPECT_EQ(none.error().toString(), "look up route to 198.51.100.1: Network is unreachable");

  // Through a router: the gateway.
  ASSERT_EQ(run("ip route add 198.51.100.0/24 via 192.0.2.1"), 0);
  auto routed = lookupRoute(addr("198.51.100.1/32"));
  ASSERT_TRUE(routed) << routed.error().toString();
  EXPECT_EQ(routed->ifname, "veth0");
  ASSERT_TRUE(routed->gateway.has_value());
  EXPECT_EQ(routed->gateway->toString(), "192.0.2.1/32");

  // An address of this node, and the routes that refuse.
  auto own = lookupRoute(addr("203.0.113.10/32"));
  ASSERT_TRUE(own) << own.error().toString();
  EXPECT_TRUE(own->local);
  ASSERT_EQ(run("ip route add unreachable 198.51.100.2/32"), 0);
  ASSERT_EQ(run("ip route add prohibit 198.51.100.3/32"), 0);
  auto unreachable = lookupRoute(addr("198.51.100.2/32"));
  ASSERT_FALSE(unreachable);
  EXPECT_EQ(unreachable.error().code, EHOSTUNREACH) << unreachable.error().toString();
  auto prohibited = lookupRoute(addr("198.51.100.3/32"));
  ASSERT_FALSE(prohibited);
  EXPECT_EQ(prohibited.error().code, EACCES) << prohibited.error().toString();

  // From the VIP: through the policy rules that match on the source (vipd doctor's
  // "vip-replies"). Without one, the same interface as from the node's own address.
  auto fromVip = lookupRoute(addr("192.0.2.1/32"), addr("203.0.113.10/32"));
  ASSERT_TRUE(fromVip) << fromVip.error().toString();
  EXPECT_EQ(fromVip->ifname, "veth0");
  // A rule for the VIP's packets into a table whose default goes out another interface (veth1:
  // these machines' kernels have no dummy driver).
  ASSERT_EQ(run("ip route add default dev veth1 table 4242 && "
                "ip rule add from 203.0.113.10 lookup 4242 pref 4242"),
            0);
  auto ruled = lookupRoute(addr("192.0.2.1/32"), addr("203.0.113.10/32"));
  ASSERT_TRUE(ruled) << ruled.error().toString();
  EXPECT_EQ(ruled->ifname, "veth1");
  EXPECT_EQ(lookupRoute(addr("192.0.2.1/32"))->ifname, "veth0");
  // A source that is not this node's: the kernel refuses.
  auto foreign = lookupRoute(addr("192.0.2.1/32"), addr("198.51.100.77/32"));
  ASSERT_FALSE(foreign);
  EXPECT_EQ(foreign.error().toString().rfind("look up route to 192.0.2.1 from 198.51.100.77: ", 0),
            0u)
      << foreign.error().toString();
  run("ip rule del pref 4242");
}

}  // namespace
}  // namespace vipd::netlink
