// The kernel's interfaces and addresses, through rtnetlink. The only folder that includes libnl;
// it includes nothing else of vipd's, so addresses here are netlink's own small value type.
//
// Every operation is idempotent: adding an address that is present, removing one that is absent,
// creating a dummy interface that exists (as a dummy) all succeed. Errors are values naming the
// operation, the object and the kernel's reason.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <tl/expected.hpp>

namespace vipd::netlink {

// An interface address: family (AF_INET or AF_INET6), bytes (IPv4 uses the first 4) and prefix
// length.
struct InterfaceAddress {
  int family = 0;
  std::array<uint8_t, 16> bytes{};
  uint8_t prefixLength = 0;

  // "203.0.113.10/32", "2001:db8::10/128"; nullopt when malformed.
  static std::optional<InterfaceAddress> parse(std::string_view cidr);
  std::string toString() const;
  auto operator<=>(const InterfaceAddress&) const = default;
};

struct Link {
  int index = 0;
  std::string name;
  bool adminUp = false;  // IFF_UP
  bool lowerUp = false;  // IFF_LOWER_UP (carrier); always true for lo and dummy once up
  bool loopback = false;
  std::string kind;  // "dummy", "veth", ... ("" for lo and physical devices)
  auto operator<=>(const Link&) const = default;
};

struct AddressEntry {
  int ifindex = 0;
  std::string ifname;
  InterfaceAddress address;
  uint32_t flags = 0;                   // IFA_F_* (IFA_F_DEPRECATED, IFA_F_NODAD, ...)
  uint32_t preferredLifetimeSeconds = 0;  // 0xFFFFFFFF = forever
  uint32_t validLifetimeSeconds = 0;      // 0xFFFFFFFF = forever
  auto operator<=>(const AddressEntry&) const = default;
};

inline constexpr uint32_t kForever = 0xFFFFFFFF;

struct Error {
  std::string operation;  // "add address", "list links", ...
  std::string object;     // "203.0.113.10/32 on lo"
  std::string reason;     // the kernel's reason, e.g. strerror / nl_geterror text
  int code = 0;           // errno-style code where known
  // "add address 203.0.113.10/32 on lo: Operation not permitted"
  std::string toString() const;
};

template <typename T>
using Result = tl::expected<T, Error>;

// How vipd adds a VIP: never to be chosen as a source address for the node's own traffic
// (preferred lifetime 0, valid forever), and for IPv6 without duplicate address detection.
struct AddOptions {
  bool deprecated = true;  // preferred lifetime 0, valid lifetime forever
  bool noDad = true;       // IFA_F_NODAD (IPv6)
};

class AddressTable {
 public:
  virtual ~AddressTable() = default;

  [[nodiscard]] virtual Result<std::vector<Link>> links() = 0;
  // nullopt when no interface has that name.
  [[nodiscard]] virtual Result<std::optional<Link>> findLink(std::string_view name) = 0;
  [[nodiscard]] virtual Result<std::vector<AddressEntry>> addresses() = 0;

  [[nodiscard]] virtual Result<void> addAddress(std::string_view ifname,
                                                const InterfaceAddress& address,
                                                const AddOptions& options) = 0;
  [[nodiscard]] virtual Result<void> removeAddress(std::string_view ifname,
                                                   const InterfaceAddress& address) = 0;
  // Creates a dummy interface and brings it up. An existing interface of that name that is not
  // a dummy is an error (vipd never takes over someone else's device).
  [[nodiscard]] virtual Result<void> createDummy(std::string_view name) = 0;
  [[nodiscard]] virtual Result<void> deleteLink(std::string_view name) = 0;
  [[nodiscard]] virtual Result<void> setLinkUp(std::string_view name, bool up) = 0;
};

// A change reported by the kernel (RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR).
struct Change {
  enum class Kind { LinkChanged, LinkRemoved, AddressAdded, AddressRemoved, Overflow };
  Kind kind = Kind::LinkChanged;
  int ifindex = 0;
  std::string ifname;  // may be empty for address changes on an interface already gone
  std::optional<InterfaceAddress> address;  // for address changes
  bool adminUp = false;                     // for link changes
  bool lowerUp = false;
};

// Subscribes to link and address changes. fd() becomes readable when changes are pending; the
// daemon waits on it with its own event loop and then calls readChanges(), which never blocks.
// Kind::Overflow means the kernel dropped messages (ENOBUFS): re-read the full state.
class Monitor {
 public:
  virtual ~Monitor() = default;
  virtual int fd() const = 0;
  [[nodiscard]] virtual Result<std::vector<Change>> readChanges() = 0;
};

// The real kernel, through libnl-route-3, in the calling thread's network namespace.
[[nodiscard]] Result<std::unique_ptr<AddressTable>> openKernelAddressTable();
[[nodiscard]] Result<std::unique_ptr<Monitor>> openKernelMonitor();

}  // namespace vipd::netlink
