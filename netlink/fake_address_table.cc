#include "netlink/fake_address_table.h"

#include <linux/if_addr.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "netlink/checks.h"

namespace vipd::netlink {
namespace {

// The queue behind one FakeMonitor; the table's state holds it weakly so a closed monitor
// simply stops receiving.
struct MonitorQueue {
  MonitorQueue() : fd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (fd < 0) {
      std::fprintf(stderr, "FakeMonitor: eventfd failed: %s\n", std::strerror(errno));
      std::abort();
    }
  }
  ~MonitorQueue() { close(fd); }
  MonitorQueue(const MonitorQueue&) = delete;
  MonitorQueue& operator=(const MonitorQueue&) = delete;

  void signal() const {
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t written = write(fd, &one, sizeof one);
  }

  int fd;
  std::deque<Change> changes;
};

class FakeMonitor final : public Monitor {
 public:
  explicit FakeMonitor(std::shared_ptr<MonitorQueue> queue) : queue_(std::move(queue)) {}

  int fd() const override { return queue_->fd; }

  Result<std::vector<Change>> readChanges() override {
    uint64_t count = 0;
    [[maybe_unused]] const ssize_t drained = read(queue_->fd, &count, sizeof count);
    std::vector<Change> changes(queue_->changes.begin(), queue_->changes.end());
    queue_->changes.clear();
    return changes;
  }

 private:
  std::shared_ptr<MonitorQueue> queue_;
};

bool isV6(const InterfaceAddress& address) { return address.family == AF_INET6; }

// The kernel's identity of an address on one interface (see the header).
bool sameAddress(const InterfaceAddress& a, const InterfaceAddress& b) {
  const size_t length = isV6(a) ? 16 : 4;
  if (a.family != b.family ||
      !std::equal(a.bytes.begin(), a.bytes.begin() + length, b.bytes.begin())) {
    return false;
  }
  return isV6(a) || a.prefixLength == b.prefixLength;
}

InterfaceAddress parsed(std::string_view text) {
  auto address = InterfaceAddress::parse(text);
  if (!address) {
    std::abort();
  }
  return *address;
}

}  // namespace

struct FakeAddressTable::State {
  struct FakeLink {
    Link link;
    bool carrier = true;  // lowerUp while admin up
  };

  std::map<int, FakeLink> links;  // by index
  int nextIndex = 2;
  std::vector<AddressEntry> addresses;  // in the order added, like the kernel's per-family lists
  std::vector<std::weak_ptr<MonitorQueue>> monitors;
  std::map<std::string, Error> failures;

  void publish(const Change& change) {
    std::erase_if(monitors, [](const auto& weak) { return weak.expired(); });
    for (const auto& weak : monitors) {
      if (auto queue = weak.lock()) {
        queue->changes.push_back(change);
        queue->signal();
      }
    }
  }

  void publishLink(const FakeLink& link, Change::Kind kind = Change::Kind::LinkChanged) {
    Change change;
    change.kind = kind;
    change.ifindex = link.link.index;
    change.ifname = link.link.name;
    change.adminUp = link.link.adminUp;
    change.lowerUp = link.link.lowerUp;
    publish(change);
  }

  void publishAddress(const AddressEntry& entry, Change::Kind kind) {
    Change change;
    change.kind = kind;
    change.ifindex = entry.ifindex;
    change.ifname = entry.ifname;
    change.address = entry.address;
    publish(change);
  }

  std::optional<Error> takeFailure(const std::string& operation) {
    auto it = failures.find(operation);
    if (it == failures.end()) {
      return std::nullopt;
    }
    Error error = std::move(it->second);
    failures.erase(it);
    return error;
  }

  FakeLink* find(std::string_view name) {
    for (auto& [index, link] : links) {
      if (link.link.name == name) {
        return &link;
      }
    }
    return nullptr;
  }

  // Adds or, when present, replaces (flags and lifetimes) an address; reports AddressAdded.
  void put(AddressEntry entry) {
    auto it = std::find_if(addresses.begin(), addresses.end(), [&](const AddressEntry& e) {
      return e.ifindex == entry.ifindex && sameAddress(e.address, entry.address);
    });
    if (it != addresses.end()) {
      entry.address.prefixLength = it->address.prefixLength;  // IPv6 keeps its length
      *it = entry;
    } else {
      addresses.push_back(entry);
    }
    publishAddress(entry, Change::Kind::AddressAdded);
  }

  void removeWhere(const std::function<bool(const AddressEntry&)>& match) {
    std::vector<AddressEntry> removed;
    std::erase_if(addresses, [&](const AddressEntry& e) {
      if (match(e)) {
        removed.push_back(e);
        return true;
      }
      return false;
    });
    for (const AddressEntry& entry : removed) {
      publishAddress(entry, Change::Kind::AddressRemoved);
    }
  }

  static AddressEntry plainEntry(const FakeLink& link, const InterfaceAddress& address) {
    AddressEntry entry;
    entry.ifindex = link.link.index;
    entry.ifname = link.link.name;
    entry.address = address;
    entry.flags = IFA_F_PERMANENT;
    entry.preferredLifetimeSeconds = kForever;
    entry.validLifetimeSeconds = kForever;
    return entry;
  }

  void setUp(FakeLink& link, bool up) {
    if (link.link.adminUp == up) {
      return;  // the kernel reports nothing for a no-op
    }
    link.link.adminUp = up;
    link.link.lowerUp = up && link.carrier;
    publishLink(link);
    const int index = link.link.index;
    if (!up) {
      removeWhere([index](const AddressEntry& e) { return e.ifindex == index && isV6(e.address); });
      return;
    }
    if (!link.link.lowerUp) {
      return;  // IPv6 configures an interface once it has carrier
    }
    InterfaceAddress automatic;
    if (link.link.loopback) {
      automatic = parsed("::1/128");
    } else {
      automatic = parsed("fe80::200:ff:fe00:0/64");
      automatic.bytes[14] = static_cast<uint8_t>(index >> 8);
      automatic.bytes[15] = static_cast<uint8_t>(index);
    }
    put(plainEntry(link, automatic));
  }
};

FakeAddressTable::FakeAddressTable() : state_(std::make_shared<State>()) {
  State::FakeLink lo;
  lo.link = Link{1, "lo", true, true, true, ""};
  state_->links[1] = lo;
  state_->addresses.push_back(State::plainEntry(lo, parsed("127.0.0.1/8")));
  state_->addresses.push_back(State::plainEntry(lo, parsed("::1/128")));
}

Result<std::vector<Link>> FakeAddressTable::links() {
  if (auto error = state_->takeFailure("list links")) {
    return tl::unexpected(*error);
  }
  std::vector<Link> result;
  for (const auto& [index, link] : state_->links) {
    result.push_back(link.link);
  }
  return result;
}

Result<std::optional<Link>> FakeAddressTable::findLink(std::string_view name) {
  if (auto error = state_->takeFailure("find link")) {
    return tl::unexpected(*error);
  }
  if (const auto* link = state_->find(name)) {
    return std::optional<Link>(link->link);
  }
  return std::optional<Link>{};
}

Result<std::vector<AddressEntry>> FakeAddressTable::addresses() {
  if (auto error = state_->takeFailure("list addresses")) {
    return tl::unexpected(*error);
  }
  // The kernel dumps IPv4 before IPv6, each in interface order.
  std::vector<AddressEntry> result = state_->addresses;
  std::stable_sort(result.begin(), result.end(), [](const AddressEntry& a, const AddressEntry& b) {
    if (a.address.family != b.address.family) {
      return a.address.family == AF_INET;
    }
    return a.ifindex < b.ifindex;
  });
  return result;
}

Result<void> FakeAddressTable::addAddress(std::string_view ifname, const InterfaceAddress& address,
                                          const AddOptions& options) {
  static constexpr const char* kOperation = "add address";
  ++operations_;
  const std::string object = address.toString() + " on " + std::string(ifname);
  if (auto error = state_->takeFailure(kOperation)) {
    return tl::unexpected(*error);
  }
  if (auto error = checks::address(kOperation, object, address)) {
    return tl::unexpected(*error);
  }
  const auto* link = state_->find(ifname);
  if (link == nullptr) {
    return tl::unexpected(checks::noSuchDevice(kOperation, object));
  }
  AddressEntry entry = State::plainEntry(*link, address);
  entry.flags |= IFA_F_NOPREFIXROUTE;
  if (options.noDad && isV6(address)) {
    entry.flags |= IFA_F_NODAD;
  }
  if (options.deprecated) {
    entry.flags |= IFA_F_DEPRECATED;
    // The kernel reports a permanent IPv4 address's preferred lifetime as forever.
    entry.preferredLifetimeSeconds = isV6(address) ? 0 : kForever;
  }
  state_->put(entry);
  return {};
}

Result<void> FakeAddressTable::removeAddress(std::string_view ifname,
                                             const InterfaceAddress& address) {
  static constexpr const char* kOperation = "remove address";
  ++operations_;
  const std::string object = address.toString() + " on " + std::string(ifname);
  if (auto error = state_->takeFailure(kOperation)) {
    return tl::unexpected(*error);
  }
  if (auto error = checks::address(kOperation, object, address)) {
    return tl::unexpected(*error);
  }
  const auto* link = state_->find(ifname);
  if (link == nullptr) {
    return {};
  }
  const int index = link->link.index;
  state_->removeWhere([&](const AddressEntry& e) {
    // Exact: the prefix length must match for both families.
    return e.ifindex == index && sameAddress(e.address, address) &&
           e.address.prefixLength == address.prefixLength;
  });
  return {};
}

Result<void> FakeAddressTable::createDummy(std::string_view name) {
  static constexpr const char* kOperation = "create dummy";
  ++operations_;
  if (auto error = state_->takeFailure(kOperation)) {
    return tl::unexpected(*error);
  }
  if (auto error = checks::interfaceName(kOperation, name)) {
    return tl::unexpected(*error);
  }
  auto* existing = state_->find(name);
  if (existing == nullptr) {
    State::FakeLink link;
    link.link = Link{state_->nextIndex++, std::string(name), false, false, false, "dummy"};
    auto& stored = state_->links[link.link.index] = link;
    state_->publishLink(stored);
    existing = &stored;
  } else if (existing->link.kind != "dummy") {
    return tl::unexpected(checks::notADummy(name, existing->link.kind));
  }
  state_->setUp(*existing, true);
  return {};
}

Result<void> FakeAddressTable::deleteLink(std::string_view name) {
  static constexpr const char* kOperation = "delete link";
  ++operations_;
  if (auto error = state_->takeFailure(kOperation)) {
    return tl::unexpected(*error);
  }
  auto* link = state_->find(name);
  if (link == nullptr) {
    return {};
  }
  if (link->link.loopback) {
    return tl::unexpected(
        Error{kOperation, std::string(name), std::strerror(EOPNOTSUPP), EOPNOTSUPP});
  }
  state_->setUp(*link, false);
  const int index = link->link.index;
  state_->removeWhere([index](const AddressEntry& e) { return e.ifindex == index; });
  State::FakeLink gone = *link;
  state_->links.erase(index);
  state_->publishLink(gone, Change::Kind::LinkRemoved);
  return {};
}

Result<void> FakeAddressTable::setLinkUp(std::string_view name, bool up) {
  const char* operation = up ? "set link up" : "set link down";
  ++operations_;
  if (auto error = state_->takeFailure(operation)) {
    return tl::unexpected(*error);
  }
  auto* link = state_->find(name);
  if (link == nullptr) {
    return tl::unexpected(checks::noSuchDevice(operation, std::string(name)));
  }
  state_->setUp(*link, up);
  return {};
}

void FakeAddressTable::addLink(Link link) {
  if (state_->find(link.name) != nullptr || state_->links.count(link.index) != 0) {
    std::fprintf(stderr, "FakeAddressTable::addLink: %s (index %d) already exists\n",
                 link.name.c_str(), link.index);
    std::abort();
  }
  if (link.index <= 0) {
    link.index = state_->nextIndex;
  }
  state_->nextIndex = std::max(state_->nextIndex, link.index + 1);
  State::FakeLink stored;
  stored.carrier = link.lowerUp || !link.adminUp;
  link.lowerUp = link.adminUp && stored.carrier;
  stored.link = link;
  state_->publishLink(state_->links[link.index] = stored);
}

void FakeAddressTable::addForeignAddress(std::string_view ifname, const InterfaceAddress& address) {
  const auto* link = state_->find(ifname);
  if (link == nullptr) {
    std::fprintf(stderr, "FakeAddressTable::addForeignAddress: no interface %.*s\n",
                 static_cast<int>(ifname.size()), ifname.data());
    std::abort();
  }
  state_->put(State::plainEntry(*link, address));
}

void FakeAddressTable::failNext(std::string operation, Error error) {
  state_->failures[std::move(operation)] = std::move(error);
}

void FakeAddressTable::overflowMonitors() {
  for (const auto& weak : state_->monitors) {
    if (auto queue = weak.lock()) {
      queue->changes.clear();
      queue->changes.push_back(Change{Change::Kind::Overflow});
      queue->signal();
    }
  }
}

std::unique_ptr<Monitor> FakeAddressTable::openMonitor() {
  auto queue = std::make_shared<MonitorQueue>();
  state_->monitors.push_back(queue);
  return std::make_unique<FakeMonitor>(std::move(queue));
}

}  // namespace vipd::netlink
