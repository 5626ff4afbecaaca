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
// Slots make the sanctioned overlaps possible: the static-pod to DaemonSet handoff (issue 5), and
// a DaemonSet rollout with maxSurge (issue 29), where the new pod starts beside the old one and
// takes over from it. A static-pod instance claims the "static-pod" slot; a daemonset instance
// claims "daemonset", or "daemonset-successor" when that one is held (the pod it is replacing);
// a standalone instance claims every slot. So at most one static-pod and two daemonset instances
// run on a node; between them the speaker lock (host_lock.h) decides who speaks.
#pragma once

#include <list>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <tl/expected.hpp>

#include "config/config.h"
#include "daemon/base/accept_backoff.h"
#include "daemon/base/logger.h"

namespace vipd::daemon {

// The slots an instance of `mode` claims together: {"static-pod"}, {"daemonset"}, or every slot
// (standalone).
std::vector<std::string_view> instanceSlots(config::Mode mode);
// The slot a daemonset instance claims when "daemonset" is held: the pod it replaces holds that.
inline constexpr std::string_view kDaemonSetSuccessorSlot = "daemonset-successor";

// The abstract socket name (without the leading NUL) that locks `vip` for `slot`.
std::string vipLockName(std::string_view tag, const bgp::Prefix& vip, std::string_view slot);

// Whether an instance of another process holds `slot` on this node's network: its lock of the
// config's first VIP accepts a connection (a full queue counts as held). The daemonset instance
// asks it of "static-pod" to know a static pod stands by (Handoff::handBack()).
bool slotHeld(const config::Config& config, std::string_view slot, std::string_view tag = "vipd");

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

  // Whether this daemonset instance took the successor slot (another daemonset instance, the
  // pod it replaces, holds "daemonset").
  bool successor() const { return successor_; }

  // A reload added `vip` (issue 29): takes its locks in the slots acquire() took (the successor
  // slot for a successor), and serves them (after serve()). The error names the holder; nothing
  // is taken then.
  [[nodiscard]] tl::expected<void, std::string> lockVip(const bgp::Prefix& vip,
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
  static tl::expected<InstanceLock, std::string> acquireSlots(
      const config::Config& config, const std::vector<std::string_view>& slots,
      std::vector<std::string>& warnings, std::string_view tag);
  static void acceptNext(Served& served);

  // The flock'ed state-directory files (and any VIP socket serve() could not take), held open
  // for the process's life.
  std::vector<int> heldFds_;
  std::list<Served> served_;    // a list: the accept handlers hold references
  // Listening, until serve() hands them to served_.
  std::vector<std::pair<bgp::Prefix, int>> vipSockets_;
  // The slots acquire() took, so a reload's lockVip() takes the same ones.
  std::vector<std::string_view> slots_;
  bool successor_ = false;
};

}  // namespace vipd::daemon
