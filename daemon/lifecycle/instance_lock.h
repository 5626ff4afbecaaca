// One vipd per state directory and per VIP on a node (issue 17, item 5). A second instance
// started by mistake (the same config twice, a unit file beside a static pod) would otherwise
// announce, withdraw and unbind the same addresses as the first: its SIGTERM unbinds the first
// one's VIPs. The lock is taken before anything else is touched; the second instance exits
// naming the holder's PID and changes nothing.
//
// Two kinds of lock, both released by the kernel however the holder exits:
// - the state directory: flock(2) on <control.stateDir>/instance.<slot>.lock, which holds the
//   holder's PID for the contender's message;
// - each VIP: an abstract unix socket named after the VIP and the slot. Abstract names belong to
//   a network namespace, as VIPs do, so vipd instances in different namespaces (lab nodes,
//   separate hosts) never see each other; the contender reads the holder's PID with SO_PEERCRED.
//
// Slots make the static-pod to DaemonSet handoff (issue 5) the one sanctioned overlap: an
// instance in mode static-pod or daemonset claims its own mode's slot, a standalone instance
// claims every slot. Two instances conflict unless one is the static-pod and the other the
// daemonset instance; between those two the speaker lock (host_lock.h) decides who speaks.
#pragma once

#include <list>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio.hpp>
#include <tl/expected.hpp>

#include "config/config.h"
#include "daemon/base/accept_backoff.h"
#include "daemon/base/logger.h"

namespace vipd::daemon {

// The slots an instance of `mode` claims: {"static-pod"}, {"daemonset"}, or both (standalone).
std::vector<std::string_view> instanceSlots(config::Mode mode);

// The abstract socket name (without the leading NUL) that locks `vip` for `slot`.
std::string vipLockName(std::string_view tag, const bgp::Prefix& vip, std::string_view slot);

class InstanceLock {
 public:
  // Takes every lock `config` calls for, or none: the error names what is held, by whom, and
  // what to do. A state directory that cannot hold a lock file (read-only, missing and not
  // creatable) is no reason to stop: the VIP locks still apply, and `warnings` says so.
  // `tag` prefixes the socket names (tests use their own, so they never meet a running vipd).
  [[nodiscard]] static tl::expected<InstanceLock, std::string> acquire(
      const config::Config& config, std::vector<std::string>& warnings,
      std::string_view tag = "vipd");

  InstanceLock(InstanceLock&& other) noexcept;
  InstanceLock& operator=(InstanceLock&& other) noexcept;
  InstanceLock(const InstanceLock&) = delete;
  InstanceLock& operator=(const InstanceLock&) = delete;
  ~InstanceLock();

  // Accepts and closes each contender's connection to a VIP lock (it has read the PID by then),
  // so contenders never fill the listen queue. Without it the lock still holds.
  // `log` must outlive the lock.
  void serve(boost::asio::io_context& io, const Logger& log);

  // A reload added `vip` (issue 29): takes its locks for `mode`'s slots as acquire() does, and
  // serves them (after serve()). The error names the holder; nothing is taken then.
  [[nodiscard]] tl::expected<void, std::string> lockVip(config::Mode mode, const bgp::Prefix& vip,
                                                        boost::asio::io_context& io,
                                                        const Logger& log,
                                                        std::string_view tag = "vipd");
  // A reload removed `vip` (and it is unbound): another vipd may take it now.
  void releaseVip(const bgp::Prefix& vip);

 private:
  struct Served {
    bgp::Prefix vip;
    boost::asio::local::stream_protocol::acceptor acceptor;
    AcceptBackoff backoff;
  };
  void serveOne(const bgp::Prefix& vip, int fd, boost::asio::io_context& io, const Logger& log);

  InstanceLock() = default;
  static void acceptNext(Served& served);

  // The flock'ed state-directory files (and any VIP socket serve() could not take), held open
  // for the process's life.
  std::vector<int> heldFds_;
  std::list<Served> served_;    // a list: the accept handlers hold references
  // Listening, until serve() hands them to served_.
  std::vector<std::pair<bgp::Prefix, int>> vipSockets_;
};

}  // namespace vipd::daemon
