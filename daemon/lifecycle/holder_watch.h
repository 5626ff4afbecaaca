// Whether the instance that holds the speaker lock still speaks BGP (issue 29 part 3). A standby
// or contending instance cannot ask a frozen holder anything (its control socket does not
// answer), but it shares the node's network: the kernel's TCP table shows whether any BGP session
// to a configured peer is Established. None for longer than the longest hold time means the
// holder has stopped speaking (frozen, stuck) or its fabric is gone; either way the node
// announces nothing, and the instance that watches says so: not ready, with the reason, and
// vipd_handoff_holder_silent (an alert fires).
//
// It never takes over: the frozen holder still holds the lock, and breaking the lock would leave
// two speakers for the node the moment it wakes up (its sessions and timers resume where they
// stopped). What ends it is the holder's own pod: the DaemonSet's and the static pod's liveness
// probe (`vipctl status`) fails on a frozen vipd and the kubelet restarts it; the lock is then
// free and a standby takes the node back within 100 ms.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bgp/ip_address.h"
#include "daemon/base/tcp_table.h"  // TcpEntry, readKernelTcpTable()

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

}  // namespace vipd::daemon
