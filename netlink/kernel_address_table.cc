// AddressTable over libnl-route-3. Every call re-reads what it needs from the kernel (no caches
// kept between calls), so the table never acts on a stale view.
#include <linux/if_addr.h>
#include <linux/netlink.h>
#include <net/if.h>
// After <net/if.h>: linux/if.h then adds only what glibc lacks (IFF_LOWER_UP).
#include <linux/if.h>
#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/msg.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <string>

#include "netlink/address_table.h"
#include "netlink/checks.h"
#include "netlink/libnl_handles.h"

namespace vipd::netlink {
namespace {

using libnl::AddrPtr;
using libnl::CachePtr;
using libnl::LinkPtr;
using libnl::NlAddrPtr;
using libnl::SocketPtr;

// What the kernel said in its last NLMSG_ERROR: the errno and, when the socket has extended
// acknowledgements, the kernel's own sentence ("Unknown device type").
struct KernelReply {
  int error = 0;
  std::string message;
};

int onKernelError(sockaddr_nl* /*who*/, nlmsgerr* error, void* arg) {
  auto* reply = static_cast<KernelReply*>(arg);
  reply->error = -error->error;
  // The error message itself: the nlmsghdr sits right before its payload (the nlmsgerr).
  const auto* header =
      reinterpret_cast<const nlmsghdr*>(reinterpret_cast<const char*>(error) - NLMSG_HDRLEN);
  if ((header->nlmsg_flags & NLM_F_ACK_TLVS) != 0) {
    size_t offset = sizeof(nlmsgerr);
    if ((header->nlmsg_flags & NLM_F_CAPPED) == 0 && error->msg.nlmsg_len >= NLMSG_HDRLEN) {
      offset += NLMSG_ALIGN(error->msg.nlmsg_len - NLMSG_HDRLEN);
    }
    const size_t payload = header->nlmsg_len - NLMSG_HDRLEN;
    if (offset < payload) {
      auto* head = reinterpret_cast<nlattr*>(reinterpret_cast<char*>(error) + offset);
      nlattr* attribute = nullptr;
      int remaining = 0;
      nla_for_each_attr(attribute, head, static_cast<int>(payload - offset), remaining) {
        if (nla_type(attribute) == NLMSGERR_ATTR_MSG && nla_len(attribute) > 0) {
          reply->message.assign(static_cast<const char*>(nla_data(attribute)),
                                strnlen(static_cast<const char*>(nla_data(attribute)),
                                        static_cast<size_t>(nla_len(attribute))));
        }
      }
    }
  }
  return -nl_syserr2nlerr(reply->error);
}

Link toLink(rtnl_link* link) {
  const unsigned flags = rtnl_link_get_flags(link);
  const char* name = rtnl_link_get_name(link);
  const char* kind = rtnl_link_get_type(link);
  Link result;
  result.index = rtnl_link_get_ifindex(link);
  result.name = name != nullptr ? name : "";
  result.adminUp = (flags & IFF_UP) != 0;
  result.lowerUp = (flags & IFF_LOWER_UP) != 0;
  result.loopback = (flags & IFF_LOOPBACK) != 0;
  result.kind = kind != nullptr ? kind : "";
  return result;
}

// libnl's cache objects all begin with the common nl_object header; this is libnl's own
// documented downcast (its OBJ_CAST macro is a C cast).
template <typename T>
T* objectAs(nl_object* object) {
  return reinterpret_cast<T*>(object);
}

size_t addressLength(int family) { return family == AF_INET ? 4 : 16; }

class KernelAddressTable final : public AddressTable {
 public:
  explicit KernelAddressTable(SocketPtr socket) : socket_(std::move(socket)) {
    nl_socket_modify_err_cb(socket_.get(), NL_CB_CUSTOM, onKernelError, &reply_);
  }

  Result<std::vector<Link>> links() override {
    auto cache = linkCache("list links", "");
    if (!cache) {
      return tl::unexpected(cache.error());
    }
    std::vector<Link> result;
    for (nl_object* object = nl_cache_get_first(cache->get()); object != nullptr;
         object = nl_cache_get_next(object)) {
      result.push_back(toLink(objectAs<rtnl_link>(object)));
    }
    return result;
  }

  Result<std::optional<Link>> findLink(std::string_view name) override {
    return lookup("find link", name);
  }

  Result<std::vector<AddressEntry>> addresses() override {
    auto linkList = links();
    if (!linkList) {
      return tl::unexpected(
          Error{"list addresses", "", linkList.error().reason, linkList.error().code});
    }
    std::map<int, std::string> names;
    for (const Link& link : *linkList) {
      names[link.index] = link.name;
    }
    nl_cache* raw = nullptr;
    const int err = withRetry([&] {
      nl_cache_free(raw);
      raw = nullptr;
      return rtnl_addr_alloc_cache(socket_.get(), &raw);
    });
    CachePtr cache(raw);
    if (err < 0) {
      return tl::unexpected(kernelError("list addresses", "", err));
    }
    std::vector<AddressEntry> result;
    for (nl_object* object = nl_cache_get_first(cache.get()); object != nullptr;
         object = nl_cache_get_next(object)) {
      auto* addr = objectAs<rtnl_addr>(object);
      const int family = rtnl_addr_get_family(addr);
      nl_addr* local = rtnl_addr_get_local(addr);
      if ((family != AF_INET && family != AF_INET6) || local == nullptr ||
          nl_addr_get_len(local) != addressLength(family)) {
        continue;
      }
      AddressEntry entry;
      entry.ifindex = rtnl_addr_get_ifindex(addr);
      if (auto it = names.find(entry.ifindex); it != names.end()) {
        entry.ifname = it->second;
      }
      entry.address.family = family;
      std::memcpy(entry.address.bytes.data(), nl_addr_get_binary_addr(local),
                  addressLength(family));
      entry.address.prefixLength = static_cast<uint8_t>(rtnl_addr_get_prefixlen(addr));
      entry.flags = rtnl_addr_get_flags(addr);
      entry.preferredLifetimeSeconds = rtnl_addr_get_preferred_lifetime(addr);
      entry.validLifetimeSeconds = rtnl_addr_get_valid_lifetime(addr);
      result.push_back(std::move(entry));
    }
    return result;
  }

  Result<void> addAddress(std::string_view ifname, const InterfaceAddress& address,
                          const AddOptions& options) override {
    static constexpr const char* kOperation = "add address";
    const std::string object = address.toString() + " on " + std::string(ifname);
    auto request = buildAddress(kOperation, object, ifname, address);
    if (!request) {
      return tl::unexpected(request.error());
    }
    if (!*request) {
      return tl::unexpected(checks::noSuchDevice(kOperation, object));
    }
    rtnl_addr* addr = request->get();
    // A VIP must never be a route of its own: vipd adds host addresses and the routing is BGP's.
    unsigned flags = IFA_F_NOPREFIXROUTE;
    if (options.noDad && address.family == AF_INET6) {
      flags |= IFA_F_NODAD;
    }
    rtnl_addr_set_flags(addr, flags);
    // Always explicit, so that NLM_F_REPLACE brings a present address to these lifetimes.
    rtnl_addr_set_valid_lifetime(addr, kForever);
    rtnl_addr_set_preferred_lifetime(addr, options.deprecated ? 0 : kForever);
    // NLM_F_REPLACE: a present address succeeds and takes these flags and lifetimes (the kernel
    // updates lifetimes and IFA_F_NODAD/NOPREFIXROUTE in place), so a repeated add converges.
    const int err = call([&] { return rtnl_addr_add(socket_.get(), addr, NLM_F_REPLACE); });
    if (err < 0 && !(reply_.error == EEXIST || err == -NLE_EXIST)) {
      return tl::unexpected(kernelError(kOperation, object, err));
    }
    return {};
  }

  Result<void> removeAddress(std::string_view ifname, const InterfaceAddress& address) override {
    static constexpr const char* kOperation = "remove address";
    const std::string object = address.toString() + " on " + std::string(ifname);
    auto request = buildAddress(kOperation, object, ifname, address);
    if (!request) {
      return tl::unexpected(request.error());
    }
    if (!*request) {
      return {};  // no such interface: the address is certainly absent
    }
    const int err = call([&] { return rtnl_addr_delete(socket_.get(), request->get(), 0); });
    if (err < 0) {
      const bool absent = reply_.error == EADDRNOTAVAIL || reply_.error == ENODEV ||
                          err == -NLE_NOADDR || err == -NLE_OBJ_NOTFOUND;
      if (!absent) {
        return tl::unexpected(kernelError(kOperation, object, err));
      }
    }
    return {};
  }

  Result<void> createDummy(std::string_view name) override {
    static constexpr const char* kOperation = "create dummy";
    const std::string object(name);
    if (auto error = checks::interfaceName(kOperation, name)) {
      return tl::unexpected(*error);
    }
    // Two rounds: if someone creates the name between our lookup and our add, look again.
    for (int round = 0; round < 2; ++round) {
      auto existing = lookup(kOperation, name);
      if (!existing) {
        return tl::unexpected(existing.error());
      }
      if (*existing) {
        if ((*existing)->kind != "dummy") {
          return tl::unexpected(checks::notADummy(name, (*existing)->kind));
        }
        return setUp(kOperation, name, true);
      }
      LinkPtr link(rtnl_link_alloc());
      if (!link) {
        return tl::unexpected(Error{kOperation, object, std::strerror(ENOMEM), ENOMEM});
      }
      rtnl_link_set_name(link.get(), object.c_str());
      if (const int err = rtnl_link_set_type(link.get(), "dummy"); err < 0) {
        return tl::unexpected(Error{kOperation, object, nl_geterror(err), 0});
      }
      const int err =
          call([&] { return rtnl_link_add(socket_.get(), link.get(), NLM_F_CREATE | NLM_F_EXCL); });
      if (err >= 0) {
        return setUp(kOperation, name, true);
      }
      if (reply_.error != EEXIST && err != -NLE_EXIST) {
        return tl::unexpected(kernelError(kOperation, object, err));
      }
    }
    return tl::unexpected(
        Error{kOperation, object, "the name keeps appearing and disappearing; try again", EAGAIN});
  }

  Result<void> deleteLink(std::string_view name) override {
    static constexpr const char* kOperation = "delete link";
    auto existing = lookup(kOperation, name);
    if (!existing) {
      return tl::unexpected(existing.error());
    }
    if (!*existing) {
      return {};
    }
    LinkPtr link(rtnl_link_alloc());
    if (!link) {
      return tl::unexpected(Error{kOperation, std::string(name), std::strerror(ENOMEM), ENOMEM});
    }
    rtnl_link_set_ifindex(link.get(), (*existing)->index);
    const int err = call([&] { return rtnl_link_delete(socket_.get(), link.get()); });
    if (err < 0 && reply_.error != ENODEV) {
      return tl::unexpected(kernelError(kOperation, std::string(name), err));
    }
    return {};
  }

  Result<void> setLinkUp(std::string_view name, bool up) override {
    return setUp(up ? "set link up" : "set link down", name, up);
  }

 private:
  // Runs one request with a fresh reply record.
  int call(const std::function<int()>& request) {
    reply_ = {};
    return request();
  }

  // Dumps can be interrupted by concurrent changes (NLM_F_DUMP_INTR); they are then retried.
  int withRetry(const std::function<int()>& dump) {
    int err = 0;
    for (int attempt = 0; attempt < 5; ++attempt) {
      err = call(dump);
      if (err != -NLE_DUMP_INTR) {
        break;
      }
    }
    return err;
  }

  // rtnl_link_get_kernel() keeps the kernel's ENODEV to itself and answers -NLE_NODEV; other
  // requests reach onKernelError().
  bool isNoDevice(int err) const {
    return reply_.error == ENODEV || err == -NLE_NODEV || err == -NLE_OBJ_NOTFOUND;
  }

  Error kernelError(std::string operation, std::string object, int err) const {
    if (reply_.error != 0) {
      std::string reason = std::strerror(reply_.error);
      if (!reply_.message.empty()) {
        reason += " (" + reply_.message + ")";
      }
      if (reply_.error == EPERM) {
        // rtnetlink's only reason for EPERM: the sender lacks CAP_NET_ADMIN (dumps need none,
        // so a process without it lists interfaces and addresses but changes nothing).
        reason += "; changing interfaces and addresses needs CAP_NET_ADMIN";
      }
      return Error{std::move(operation), std::move(object), std::move(reason), reply_.error};
    }
    return Error{std::move(operation), std::move(object), nl_geterror(err), 0};
  }

  Result<CachePtr> linkCache(const char* operation, const std::string& object) {
    nl_cache* raw = nullptr;
    const int err = withRetry([&] {
      nl_cache_free(raw);
      raw = nullptr;
      return rtnl_link_alloc_cache(socket_.get(), AF_UNSPEC, &raw);
    });
    CachePtr cache(raw);
    if (err < 0) {
      return tl::unexpected(kernelError(operation, object, err));
    }
    return cache;
  }

  Result<std::optional<Link>> lookup(const char* operation, std::string_view name) {
    // A name the kernel could never hold names no interface.
    if (name.empty() || name.size() >= IFNAMSIZ) {
      return std::optional<Link>{};
    }
    const std::string object(name);
    rtnl_link* raw = nullptr;
    const int err =
        call([&] { return rtnl_link_get_kernel(socket_.get(), 0, object.c_str(), &raw); });
    LinkPtr link(raw);
    if (err < 0) {
      if (isNoDevice(err)) {
        return std::optional<Link>{};
      }
      return tl::unexpected(kernelError(operation, object, err));
    }
    return std::optional<Link>(toLink(link.get()));
  }

  // The request object for `address` on `ifname`; a null pointer when the interface is absent.
  Result<AddrPtr> buildAddress(const char* operation, const std::string& object,
                               std::string_view ifname, const InterfaceAddress& address) {
    if (auto error = checks::address(operation, object, address)) {
      return tl::unexpected(*error);
    }
    auto link = lookup(operation, ifname);
    if (!link) {
      return tl::unexpected(link.error());
    }
    if (!*link) {
      return AddrPtr();
    }
    NlAddrPtr local(
        nl_addr_build(address.family, address.bytes.data(), addressLength(address.family)));
    AddrPtr addr(rtnl_addr_alloc());
    if (!local || !addr) {
      return tl::unexpected(Error{operation, object, std::strerror(ENOMEM), ENOMEM});
    }
    nl_addr_set_prefixlen(local.get(), address.prefixLength);
    rtnl_addr_set_ifindex(addr.get(), (*link)->index);
    if (const int err = rtnl_addr_set_local(addr.get(), local.get()); err < 0) {
      return tl::unexpected(Error{operation, object, nl_geterror(err), 0});
    }
    rtnl_addr_set_prefixlen(addr.get(), address.prefixLength);
    return addr;
  }

  Result<void> setUp(const char* operation, std::string_view name, bool up) {
    const std::string object(name);
    rtnl_link* raw = nullptr;
    int err = name.size() >= IFNAMSIZ ? -NLE_OBJ_NOTFOUND : call([&] {
      return rtnl_link_get_kernel(socket_.get(), 0, object.c_str(), &raw);
    });
    LinkPtr original(raw);
    if (err < 0) {
      if (isNoDevice(err)) {
        return tl::unexpected(checks::noSuchDevice(operation, object));
      }
      return tl::unexpected(kernelError(operation, object, err));
    }
    LinkPtr change(rtnl_link_alloc());
    if (!change) {
      return tl::unexpected(Error{operation, object, std::strerror(ENOMEM), ENOMEM});
    }
    if (up) {
      rtnl_link_set_flags(change.get(), IFF_UP);
    } else {
      rtnl_link_unset_flags(change.get(), IFF_UP);
    }
    err = call([&] { return rtnl_link_change(socket_.get(), original.get(), change.get(), 0); });
    if (err < 0) {
      if (reply_.error == ENODEV) {
        return tl::unexpected(checks::noSuchDevice(operation, object));
      }
      return tl::unexpected(kernelError(operation, object, err));
    }
    return {};
  }

  SocketPtr socket_;
  KernelReply reply_;
};

}  // namespace

Result<std::unique_ptr<AddressTable>> openKernelAddressTable() {
  SocketPtr socket(nl_socket_alloc());
  if (!socket) {
    return tl::unexpected(Error{"open rtnetlink socket", "", std::strerror(ENOMEM), ENOMEM});
  }
  if (const int err = nl_connect(socket.get(), NETLINK_ROUTE); err < 0) {
    const int code = errno;
    return tl::unexpected(Error{"open rtnetlink socket", "", nl_geterror(err), code});
  }
  // Ask for the kernel's own sentence with each error, and not for our request echoed back.
  const int on = 1;
  setsockopt(nl_socket_get_fd(socket.get()), SOL_NETLINK, NETLINK_EXT_ACK, &on, sizeof on);
  setsockopt(nl_socket_get_fd(socket.get()), SOL_NETLINK, NETLINK_CAP_ACK, &on, sizeof on);
  return std::unique_ptr<AddressTable>(std::make_unique<KernelAddressTable>(std::move(socket)));
}

}  // namespace vipd::netlink
