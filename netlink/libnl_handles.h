// Owning handles for libnl objects, and the error capture shared by the kernel AddressTable and
// Monitor. Private to netlink/: nothing outside this folder includes libnl.
#pragma once

#include <netlink/addr.h>
#include <netlink/cache.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/socket.h>

#include <memory>

namespace vipd::netlink::libnl {

struct SocketDeleter {
  void operator()(nl_sock* socket) const { nl_socket_free(socket); }
};
struct CacheDeleter {
  void operator()(nl_cache* cache) const { nl_cache_free(cache); }
};
struct LinkDeleter {
  void operator()(rtnl_link* link) const { rtnl_link_put(link); }
};
struct AddrDeleter {
  void operator()(rtnl_addr* addr) const { rtnl_addr_put(addr); }
};
struct NlAddrDeleter {
  void operator()(nl_addr* addr) const { nl_addr_put(addr); }
};
struct MsgDeleter {
  void operator()(nl_msg* message) const { nlmsg_free(message); }
};

using SocketPtr = std::unique_ptr<nl_sock, SocketDeleter>;
using CachePtr = std::unique_ptr<nl_cache, CacheDeleter>;
using LinkPtr = std::unique_ptr<rtnl_link, LinkDeleter>;
using AddrPtr = std::unique_ptr<rtnl_addr, AddrDeleter>;
using NlAddrPtr = std::unique_ptr<nl_addr, NlAddrDeleter>;
using MsgPtr = std::unique_ptr<nl_msg, MsgDeleter>;

}  // namespace vipd::netlink::libnl
