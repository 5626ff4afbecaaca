// The speaker lock. While a node runs two vipd instances (the day-0 static pod and the day-2
// DaemonSet), only the instance holding this lock speaks BGP. It is flock(2) on
// <handoff.dir>/speaker.lock, a host directory both instances mount: the kernel releases the lock
// when its holder exits, however it exits, so a crashed speaker never blocks the other one.
//
// Next to the lock:
// - speaker.json: who holds the lock (pid, PID namespace, mode, control socket), written by each
//   new holder, so a contender knows whom to ask for a handoff and vipctl which instance speaks.
// - handoff.json: written by a holder that yields on purpose (a planned handoff). The next holder
//   consumes it: within the restart time it reopens its sessions as a graceful restart (RFC 4724
//   R and F bits); without it (a crash) its OPEN tells the peers to drop any stale path.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include <tl/expected.hpp>

namespace vipd::daemon {

struct LockHolder {
  // In the holder's own PID namespace: in a pod that is usually 1, and means nothing on the host
  // or in the other pod, hence pidNamespace.
  int pid = 0;
  std::string mode;           // config::modeName()
  std::string controlSocket;  // where to send the handoff request
  // The holder's PID namespace as /proc/self/ns/pid names it ("pid:[4026531836]"); empty when
  // unknown (a record written by an older vipd).
  std::string pidNamespace;
};

// The record this process writes when it takes the lock.
LockHolder thisProcess(std::string mode, std::string controlSocket);

// Whether `holder`'s pid means the same process here: it recorded its PID namespace and that is
// this process's own (an instance of another container, or of an older vipd, is not).
bool sharesPidNamespace(const LockHolder& holder);

// "pid 4711", or "pid 1 in PID namespace pid:[4026532801] (another container)" when the holder
// does not share this process's PID namespace, for status and log lines.
std::string describe(const LockHolder& holder);

struct YieldMarker {
  std::string routerId;
  int64_t yieldedAtBootMs = 0;  // CLOCK_BOOTTIME: shared by every process on the host
  int64_t restartTimeMs = 0;
};

// Milliseconds since boot (CLOCK_BOOTTIME), comparable across processes on one host.
int64_t bootTimeMs();

class HostLock {
 public:
  // Creates `dir` (0755) if needed and opens the lock file; does not lock.
  [[nodiscard]] static tl::expected<HostLock, std::string> open(const std::string& dir);
  HostLock(HostLock&& other) noexcept;
  HostLock& operator=(HostLock&& other) noexcept;
  HostLock(const HostLock&) = delete;
  HostLock& operator=(const HostLock&) = delete;
  ~HostLock();

  // Takes the lock if nobody holds it and records `me` as the holder. false: someone else holds
  // it (no error).
  [[nodiscard]] tl::expected<bool, std::string> tryAcquire(const LockHolder& me);
  // Lets another instance take the lock.
  void release();
  bool held() const { return held_; }

  // The holder's record; nullopt if it cannot be read (not written yet, or malformed).
  std::optional<LockHolder> holder() const;
  // The lock file as /proc/locks names it ("fd:01:123456": device major and minor in hex, inode),
  // to tell which process holds the lock; empty if it cannot be read.
  std::string fileId() const;

  // Planned yield: written before release().
  [[nodiscard]] tl::expected<void, std::string> writeYieldMarker(const YieldMarker& marker);
  // Reads and removes the marker (call right after acquiring); nullopt when there is none. A
  // marker that cannot be read or is malformed is removed all the same and is an error naming the
  // file and the field (the caller then treats the start as fresh: the safe side).
  [[nodiscard]] tl::expected<std::optional<YieldMarker>, std::string> takeYieldMarker();

  const std::string& dir() const { return dir_; }

 private:
  HostLock(std::string dir, int fd) : dir_(std::move(dir)), fd_(fd) {}

  std::string dir_;
  int fd_ = -1;
  bool held_ = false;
};

}  // namespace vipd::daemon
