// Whether the instance that holds the speaker lock still speaks BGP (issue 29 part 3). A standby
// or contending instance cannot ask a frozen holder anything (its control socket does not
// answer), but it shares the node's network: the kernel's TCP table shows whether any BGP session
// to a configured peer is Established. None for longer than the longest hold time means the
// holder has stopped speaking (frozen, stuck) or its fabric is gone; either way the node
// announces nothing, and the instance that watches says so: not ready, with the reason, and
// vipd_handoff_holder_silent (an alert fires).
//
// It never breaks the lock: the frozen holder would wake up as a second speaker for the node (its
// sessions and timers resume where they stopped; a second session from the same router ID is a
// collision at every peer). It fences the holder instead (issue 43): when the silent holder is a
// process it can see (the same PID namespace: hostPID pods, systemd units, the lab) that is
// stopped (SIGSTOP, a debugger: state T or t) and holds the lock, it is killed with SIGKILL
// through a pidfd, so it never wakes; the kernel frees the lock and the watcher takes the node
// the usual way. A holder it cannot see, or one that runs (its fabric may be down: killing it
// would change nothing), is left alone: the watcher says so, and the holder's own pod ends it
// (the liveness probe, `vipctl status`, fails on a frozen vipd and the kubelet restarts it).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <tl/expected.hpp>

#include "bgp/ip_address.h"
#include "daemon/base/tcp_table.h"  // TcpEntry, readKernelTcpTable()
#include "daemon/lifecycle/host_lock.h"

namespace vipd::daemon {

struct BgpPeerEndpoint {
  bgp::IpAddress address;
  uint16_t port = 179;
};

// Whether some Established connection is a BGP session with one of `peers`: to its port, or from
// it to port 179 (a session the peer opened). Pure.
bool anyBgpSessionEstablished(const std::vector<TcpEntry>& table,
                              const std::vector<BgpPeerEndpoint>& peers);

// The judgement over time: fed one sample at a time, says whether the holder is silent.
class HolderSilence {
 public:
  using Clock = std::chrono::steady_clock;
  // `after`: the longest hold time of the peers (how long a peer itself waits).
  explicit HolderSilence(Clock::duration after) : after_(after) {}
  // One look at the TCP table at `now`. Returns true when silent() changed.
  bool sample(bool established, Clock::time_point now);
  // Forgets everything (this instance became active, or a new holder took the lock).
  void reset() { since_.reset(); silent_ = false; }
  bool silent() const { return silent_; }
  // How long no session has been Established (0 when one is).
  Clock::duration silentFor(Clock::time_point now) const {
    return since_ ? now - *since_ : Clock::duration::zero();
  }

 private:
  Clock::duration after_;
  std::optional<Clock::time_point> since_;  // when the last Established session was last seen
  bool silent_ = false;
};

// The state letter of a /proc/PID/stat line ("4711 (vipd) T 1 ..."): after the last ')', since
// the command name may hold one. nullopt when the line is not one. Pure.
std::optional<char> processState(std::string_view procStat);

// Whether /proc/locks (its text) shows `pid` holding the flock on the file `fileId`
// (HostLock::fileId()), not merely waiting for it ("->" lines). Pure.
bool holdsFlock(std::string_view procLocks, int pid, std::string_view fileId);

// What the watcher knows about a silent holder, and the judgement over it (pure): nullopt when it
// may be fenced (killed), else why not, for the log and status.
struct SilentHolder {
  bool samePidNamespace = false;  // sharesPidNamespace(): its pid means this process here
  std::optional<char> state;      // processState(); nullopt: no such process (or unreadable)
  bool holdsLock = false;         // holdsFlock(): that process really holds the speaker lock
};
std::optional<std::string> fenceRefusal(const SilentHolder& holder);

// Whether `holder` is a process this one can see (the same PID namespace) that is stopped (state
// T or t). A stopped holder speaks to no one even where the kernel keeps its TCP connection
// Established (a connect() completes in the kernel after SIGSTOP, and the peer then waits minutes
// in OpenSent): the watcher counts its connections as silence. Not pure: /proc.
bool holderStopped(const LockHolder& holder);

// Fences the silent `holder` of `lock` when fenceRefusal() allows it: opens a pidfd for it (so a
// reused pid cannot be hit), checks what fenceRefusal() needs through /proc, and sends SIGKILL.
// Returns what was done ("killed pid 4711 (stopped, state T)"), or why not (an error: the holder
// is left alone). Not pure: /proc and a signal.
tl::expected<std::string, std::string> fenceStoppedHolder(const LockHolder& holder,
                                                          const HostLock& lock);

}  // namespace vipd::daemon
