// RTM_GETROUTE through a libnl socket; the answer is parsed from the raw message (rtmsg and its
// attributes), as kernel_monitor.cc parses its notifications: no libnl route cache is needed for
// one answer.
#include "netlink/route_lookup.h"

#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/msg.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "netlink/libnl_handles.h"

namespace vipd::netlink {
namespace {

using libnl::MsgPtr;
using libnl::SocketPtr;

struct Lookup {
  int error = 0;  // the kernel's errno from its NLMSG_ERROR, 0 when none
  std::optional<Route> route;
  int family = 0;
};

size_t addressLength(int family) { return family == AF_INET ? 4 : 16; }

std::optional<InterfaceAddress> addressAttribute(nlattr* attribute, int family) {
  if (attribute == nullptr || static_cast<size_t>(nla_len(attribute)) != addressLength(family)) {
    return std::nullopt;
  }
  InterfaceAddress address;
  address.family = family;
  address.prefixLength = static_cast<uint8_t>(family == AF_INET ? 32 : 128);
  std::memcpy(address.bytes.data(), nla_data(attribute), addressLength(family));
  return address;
}

int onError(sockaddr_nl* /*who*/, nlmsgerr* error, void* arg) {
  auto* lookup = static_cast<Lookup*>(arg);
  lookup->error = -error->error;
  return NL_STOP;
}

int onAnswer(nl_msg* message, void* arg) {
  auto* lookup = static_cast<Lookup*>(arg);
  nlmsghdr* header = nlmsg_hdr(message);
  if (header->nlmsg_type != RTM_NEWROUTE || !nlmsg_valid_hdr(header, sizeof(rtmsg))) {
    return NL_SKIP;
  }
  const auto* rtm = static_cast<const rtmsg*>(nlmsg_data(header));
  nlattr* attributes[RTA_MAX + 1] = {};
  if (nlmsg_parse(header, sizeof(rtmsg), attributes, RTA_MAX, nullptr) < 0) {
    return NL_SKIP;
  }
  Route route;
  if (attributes[RTA_OIF] != nullptr &&
      nla_len(attributes[RTA_OIF]) >= static_cast<int>(sizeof(uint32_t))) {
    route.ifindex = static_cast<int>(nla_get_u32(attributes[RTA_OIF]));
    char name[IF_NAMESIZE] = {};
    if (route.ifindex > 0 && if_indextoname(static_cast<unsigned>(route.ifindex), name)) {
      route.ifname = name;
    }
  }
  route.gateway = addressAttribute(attributes[RTA_GATEWAY], lookup->family);
  route.source = addressAttribute(attributes[RTA_PREFSRC], lookup->family);
  route.local = rtm->rtm_type == RTN_LOCAL;
  lookup->route = std::move(route);
  return NL_OK;
}

}  // namespace

Result<Route> lookupRoute(const InterfaceAddress& destination,
                          const std::optional<InterfaceAddress>& source) {
  static constexpr const char* kOperation = "look up route";
  InterfaceAddress host = destination;
  host.prefixLength = static_cast<uint8_t>(destination.family == AF_INET ? 32 : 128);
  const std::string text = host.toString();
  std::string object = "to " + text.substr(0, text.find('/'));
  if (source) {
    const std::string from = source->toString();
    object += " from " + from.substr(0, from.find('/'));
  }
  if (destination.family != AF_INET && destination.family != AF_INET6) {
    return tl::unexpected(Error{kOperation, object, "not an IPv4 or IPv6 address", EINVAL});
  }
  if (source && source->family != destination.family) {
    return tl::unexpected(Error{kOperation, object, "the source is of another family", EINVAL});
  }
  SocketPtr socket(nl_socket_alloc());
  if (!socket) {
    return tl::unexpected(Error{kOperation, object, std::strerror(ENOMEM), ENOMEM});
  }
  if (const int err = nl_connect(socket.get(), NETLINK_ROUTE); err < 0) {
    return tl::unexpected(Error{kOperation, object, nl_geterror(err), 0});
  }
  MsgPtr message(nlmsg_alloc_simple(RTM_GETROUTE, 0));
  if (!message) {
    return tl::unexpected(Error{kOperation, object, std::strerror(ENOMEM), ENOMEM});
  }
  rtmsg request{};
  request.rtm_family = static_cast<unsigned char>(destination.family);
  request.rtm_dst_len = host.prefixLength;
  request.rtm_src_len = source ? host.prefixLength : 0;
  const int length = static_cast<int>(addressLength(destination.family));
  if (nlmsg_append(message.get(), &request, sizeof(request), NLMSG_ALIGNTO) < 0 ||
      nla_put(message.get(), RTA_DST, length, destination.bytes.data()) < 0 ||
      (source && nla_put(message.get(), RTA_SRC, length, source->bytes.data()) < 0)) {
    return tl::unexpected(Error{kOperation, object, std::strerror(ENOMEM), ENOMEM});
  }
  Lookup lookup;
  lookup.family = destination.family;
  nl_socket_modify_cb(socket.get(), NL_CB_VALID, NL_CB_CUSTOM, onAnswer, &lookup);
  nl_socket_modify_err_cb(socket.get(), NL_CB_CUSTOM, onError, &lookup);
  if (const int err = nl_send_auto(socket.get(), message.get()); err < 0) {
    return tl::unexpected(Error{kOperation, object, nl_geterror(err), 0});
  }
  // One answer: the route (RTM_NEWROUTE) or the kernel's refusal (NLMSG_ERROR).
  const int err = nl_recvmsgs_default(socket.get());
  if (lookup.error != 0) {
    return tl::unexpected(
        Error{kOperation, object, std::strerror(lookup.error), lookup.error});
  }
  if (err < 0) {
    return tl::unexpected(Error{kOperation, object, nl_geterror(err), 0});
  }
  if (!lookup.route) {
    return tl::unexpected(Error{kOperation, object, "the kernel sent no route", 0});
  }
  return *lookup.route;
}

}  // namespace vipd::netlink
