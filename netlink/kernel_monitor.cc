// Monitor over an rtnetlink multicast socket (RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR,
// RTNLGRP_IPV6_IFADDR). The socket is created and joined through libnl; reading is a plain
// non-blocking recvmsg so that EAGAIN (drained) and ENOBUFS (the kernel dropped messages) are
// told apart exactly, which libnl's receive loop folds into its own error codes.
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
// After <net/if.h>: linux/if.h then adds only what glibc lacks (IFF_LOWER_UP).
#include <linux/if.h>
#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/msg.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "netlink/address_table.h"
#include "netlink/libnl_handles.h"

namespace vipd::netlink {
namespace {

using libnl::SocketPtr;

// Room for any single rtnetlink notification; a larger one would be reported as MSG_TRUNC.
constexpr size_t kReceiveBufferBytes = 64 * 1024;
// How much the kernel may queue for us while the daemon is busy before it drops (ENOBUFS).
constexpr int kSocketBufferBytes = 4 * 1024 * 1024;
// One readChanges() call reads at most this many datagrams, so a flood of changes cannot starve
// the daemon's event loop; the fd stays readable and the rest comes with the next call.
constexpr int kMaxDatagramsPerRead = 1024;

std::string indexToName(int index) {
  char name[IF_NAMESIZE] = {};
  if (index > 0 && if_indextoname(static_cast<unsigned>(index), name) != nullptr) {
    return name;
  }
  return "";
}

std::string attributeString(nlattr* attribute) {
  const auto* text = static_cast<const char*>(nla_data(attribute));
  return std::string(text, strnlen(text, static_cast<size_t>(nla_len(attribute))));
}

std::optional<Change> parseLink(nlmsghdr* header) {
  if (!nlmsg_valid_hdr(header, sizeof(ifinfomsg))) {
    return std::nullopt;
  }
  const auto* info = static_cast<const ifinfomsg*>(nlmsg_data(header));
  // Bridge port notifications (AF_BRIDGE) also arrive on RTNLGRP_LINK; they are not about the
  // device itself.
  if (info->ifi_family != AF_UNSPEC) {
    return std::nullopt;
  }
  nlattr* attributes[IFLA_MAX + 1] = {};
  if (nlmsg_parse(header, sizeof(ifinfomsg), attributes, IFLA_MAX, nullptr) < 0) {
    return std::nullopt;
  }
  Change change;
  change.kind =
      header->nlmsg_type == RTM_DELLINK ? Change::Kind::LinkRemoved : Change::Kind::LinkChanged;
  change.ifindex = info->ifi_index;
  change.ifname = attributes[IFLA_IFNAME] != nullptr ? attributeString(attributes[IFLA_IFNAME])
                                                     : indexToName(info->ifi_index);
  change.adminUp = (info->ifi_flags & IFF_UP) != 0;
  change.lowerUp = (info->ifi_flags & IFF_LOWER_UP) != 0;
  return change;
}

std::optional<Change> parseAddress(nlmsghdr* header) {
  if (!nlmsg_valid_hdr(header, sizeof(ifaddrmsg))) {
    return std::nullopt;
  }
  const auto* message = static_cast<const ifaddrmsg*>(nlmsg_data(header));
  if (message->ifa_family != AF_INET && message->ifa_family != AF_INET6) {
    return std::nullopt;
  }
  nlattr* attributes[IFA_MAX + 1] = {};
  if (nlmsg_parse(header, sizeof(ifaddrmsg), attributes, IFA_MAX, nullptr) < 0) {
    return std::nullopt;
  }
  // IPv4 sends the interface's own address as IFA_LOCAL (IFA_ADDRESS is the peer on
  // point-to-point links); IPv6 sends only IFA_ADDRESS.
  nlattr* local =
      attributes[IFA_LOCAL] != nullptr ? attributes[IFA_LOCAL] : attributes[IFA_ADDRESS];
  const int length = message->ifa_family == AF_INET ? 4 : 16;
  if (local == nullptr || nla_len(local) != length) {
    return std::nullopt;
  }
  InterfaceAddress address;
  address.family = message->ifa_family;
  std::memcpy(address.bytes.data(), nla_data(local), static_cast<size_t>(length));
  address.prefixLength = message->ifa_prefixlen;

  Change change;
  change.kind =
      header->nlmsg_type == RTM_DELADDR ? Change::Kind::AddressRemoved : Change::Kind::AddressAdded;
  change.ifindex = static_cast<int>(message->ifa_index);
  change.ifname = attributes[IFA_LABEL] != nullptr ? attributeString(attributes[IFA_LABEL])
                                                   : indexToName(change.ifindex);
  change.address = address;
  return change;
}

class KernelMonitor final : public Monitor {
 public:
  explicit KernelMonitor(SocketPtr socket)
      : socket_(std::move(socket)), buffer_(kReceiveBufferBytes) {}

  int fd() const override { return nl_socket_get_fd(socket_.get()); }

  Result<std::vector<Change>> readChanges() override {
    std::vector<Change> changes;
    auto overflow = [&changes] {
      if (changes.empty() || changes.back().kind != Change::Kind::Overflow) {
        changes.push_back(Change{Change::Kind::Overflow});
      }
    };
    for (int datagram = 0; datagram < kMaxDatagramsPerRead; ++datagram) {
      sockaddr_nl sender{};
      iovec vector{buffer_.data(), buffer_.size()};
      msghdr message{};
      message.msg_name = &sender;
      message.msg_namelen = sizeof sender;
      message.msg_iov = &vector;
      message.msg_iovlen = 1;
      const ssize_t received = recvmsg(fd(), &message, MSG_DONTWAIT | MSG_TRUNC);
      if (received < 0) {
        if (errno == EINTR) {
          continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          break;
        }
        if (errno == ENOBUFS) {
          overflow();
          continue;
        }
        const int code = errno;
        return tl::unexpected(
            Error{"read link and address changes", "", std::strerror(code), code});
      }
      if (sender.nl_pid != 0) {
        continue;  // only the kernel speaks on these groups
      }
      if (static_cast<size_t>(received) > buffer_.size() || (message.msg_flags & MSG_TRUNC)) {
        overflow();  // part of a notification was lost
        continue;
      }
      int remaining = static_cast<int>(received);
      for (auto* header = reinterpret_cast<nlmsghdr*>(buffer_.data()); nlmsg_ok(header, remaining);
           header = nlmsg_next(header, &remaining)) {
        std::optional<Change> change;
        switch (header->nlmsg_type) {
          case RTM_NEWLINK:
          case RTM_DELLINK:
            change = parseLink(header);
            break;
          case RTM_NEWADDR:
          case RTM_DELADDR:
            change = parseAddress(header);
            break;
          case NLMSG_OVERRUN:
            overflow();
            break;
          default:
            break;
        }
        if (change) {
          changes.push_back(std::move(*change));
        }
      }
    }
    return changes;
  }

 private:
  SocketPtr socket_;
  std::vector<char> buffer_;
};

}  // namespace

Result<std::unique_ptr<Monitor>> openKernelMonitor() {
  static constexpr const char* kOperation = "open rtnetlink monitor";
  SocketPtr socket(nl_socket_alloc());
  if (!socket) {
    return tl::unexpected(Error{kOperation, "", std::strerror(ENOMEM), ENOMEM});
  }
  nl_socket_disable_seq_check(socket.get());
  if (const int err = nl_connect(socket.get(), NETLINK_ROUTE); err < 0) {
    const int code = errno;
    return tl::unexpected(Error{kOperation, "", nl_geterror(err), code});
  }
  if (const int err = nl_socket_add_memberships(socket.get(), RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR,
                                                RTNLGRP_IPV6_IFADDR, RTNLGRP_NONE);
      err < 0) {
    const int code = errno;
    return tl::unexpected(Error{kOperation, "link and address groups", nl_geterror(err), code});
  }
  if (const int err = nl_socket_set_nonblocking(socket.get()); err < 0) {
    const int code = errno;
    return tl::unexpected(Error{kOperation, "", nl_geterror(err), code});
  }
  // SO_RCVBUFFORCE passes net.core.rmem_max when we have CAP_NET_ADMIN (vipd does, to add
  // addresses); otherwise take what SO_RCVBUF allows.
  const int bytes = kSocketBufferBytes;
  if (setsockopt(nl_socket_get_fd(socket.get()), SOL_SOCKET, SO_RCVBUFFORCE, &bytes,
                 sizeof bytes) != 0) {
    nl_socket_set_buffer_size(socket.get(), kSocketBufferBytes, 0);
  }
  return std::unique_ptr<Monitor>(std::make_unique<KernelMonitor>(std::move(socket)));
}

}  // namespace vipd::netlink
