// One raw ICMP (or ICMPv6) socket of the return-path check (checker.h), receiving echo replies
// only and sending with a chosen source address; and the socket-address conversions the check's
// sockets share. Owns its descriptor. No protocol logic: the echo formats are packet.h's.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <tl/expected.hpp>

#include "bgp/ip_address.h"
#include "daemon/returnpath/checker.h"
#include "daemon/returnpath/packet.h"

namespace vipd::daemon {

namespace raw_socket {
// `a` and `port` as a socket address; `length` gets its size.
sockaddr_storage toSockaddr(const bgp::IpAddress& a, uint16_t port, socklen_t& length);
bgp::IpAddress fromIn6(const in6_addr& a);
}  // namespace raw_socket

class ReturnPathChecker::RawSocket {
 public:
  // The socket, or the errno of the failure (EPERM without CAP_NET_RAW).
  static tl::expected<std::unique_ptr<RawSocket>, int> open(asio::io_context& io, bool v6);

  // Sends `message` to `to` from `source`; 0 or the errno.
  int send(const std::vector<uint8_t>& message, const bgp::IpAddress& source,
           const bgp::IpAddress& to);

  // Calls `ready` once the socket is readable (not after close()).
  template <typename Ready>
  void waitReadable(Ready ready) {
    descriptor_.async_wait(asio::posix::stream_descriptor::wait_read,
                           [ready = std::move(ready)](const boost::system::error_code& ec) {
                             if (!ec) {
                               ready();
                             }
                           });
  }

  // Reads what is queued (bounded), passing each vipd echo reply to `onReply` and counting in
  // `malformed` each packet that carries vipd's echo magic but does not parse.
  void readAvailable(const std::function<void(const EchoReply&)>& onReply, uint64_t& malformed);

 private:
  RawSocket(asio::io_context& io, int fd, bool v6) : descriptor_(io, fd), v6_(v6) {}

  asio::posix::stream_descriptor descriptor_;  // owns the descriptor
  bool v6_;
};

}  // namespace vipd::daemon
