#include "daemon/lifecycle/holder_watch.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace vipd::daemon {
namespace {

std::string readText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) {
      ++i;
    }
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') {
      ++i;
    }
    if (i > start) {
      out.push_back(line.substr(start, i - start));
    }
  }
  return out;
}

}  // namespace

bool anyBgpSessionEstablished(const std::vector<TcpEntry>& table,
                              const std::vector<BgpPeerEndpoint>& peers) {
  constexpr uint16_t kBgpPort = 179;
  for (const auto& e : table) {
    if (e.state != kTcpEstablished) {
      continue;
    }
    for (const auto& p : peers) {
      if (e.remote == p.address && (e.remotePort == p.port || e.localPort == kBgpPort)) {
        return true;
      }
    }
  }
  return false;
}

bool HolderSilence::sample(bool established, Clock::time_point now) {
  const bool before = silent_;
  if (established || !since_) {
    // The first look counts as "seen now": a watcher that starts cannot know for how long.
    since_ = now;
  }
  silent_ = !established && now - *since_ > after_;
  return silent_ != before;
}

}  // namespace vipd::daemon

namespace vipd::daemon {

std::optional<char> processState(std::string_view procStat) {
  const auto close = procStat.rfind(')');
  if (close == std::string_view::npos || close + 2 >= procStat.size() ||
      procStat[close + 1] != ' ') {
    return std::nullopt;
  }
  return procStat[close + 2];
}

bool holdsFlock(std::string_view procLocks, int pid, std::string_view fileId) {
  // "1: FLOCK  ADVISORY  WRITE 4711 fd:01:123456 0 EOF"; a waiter's line has "->" after the
  // number ("1: -> FLOCK ...") and holds nothing.
  const std::string wantPid = std::to_string(pid);
  while (!procLocks.empty()) {
    const auto end = procLocks.find('\n');
    const auto line = procLocks.substr(0, end);
    procLocks = end == std::string_view::npos ? std::string_view() : procLocks.substr(end + 1);
    const auto w = words(line);
    if (w.size() >= 6 && w[1] == "FLOCK" && w[4] == wantPid && w[5] == fileId) {
      return true;
    }
  }
  return false;
}

std::optional<std::string> fenceRefusal(const SilentHolder& holder) {
  if (!holder.samePidNamespace) {
    return "it runs in another PID namespace (another container), where this instance cannot "
           "see or stop it";
  }
  if (!holder.state) {
    return "its process cannot be found";
  }
  if (*holder.state != 'T' && *holder.state != 't') {
    return fmt::format("it runs (state {}), it is not stopped: its fabric may be down, and "
                       "killing it would not bring the node back",
                       *holder.state);
  }
  if (!holder.holdsLock) {
    return "the process with its pid does not hold the speaker lock (/proc/locks)";
  }
  return std::nullopt;
}

bool holderStopped(const LockHolder& holder) {
  if (holder.pid <= 0 || !sharesPidNamespace(holder)) {
    return false;
  }
  const auto state = processState(readText(fmt::format("/proc/{}/stat", holder.pid)));
  return state && (*state == 'T' || *state == 't');
}

tl::expected<std::string, std::string> fenceStoppedHolder(const LockHolder& holder,
                                                          const HostLock& lock) {
  SilentHolder facts{.samePidNamespace = sharesPidNamespace(holder)};
  int pidfd = -1;
  if (facts.samePidNamespace && holder.pid > 0) {
    // The pidfd is taken before anything is checked: if the pid is reused in between, the
    // signal goes to the process that was checked or to nobody, never to a newcomer.
    pidfd = static_cast<int>(::syscall(SYS_pidfd_open, holder.pid, 0));
    if (pidfd >= 0) {
      facts.state = processState(readText(fmt::format("/proc/{}/stat", holder.pid)));
      facts.holdsLock = holdsFlock(readText("/proc/locks"), holder.pid, lock.fileId());
    }
  }
  if (auto refusal = fenceRefusal(facts)) {
    if (pidfd >= 0) {
      ::close(pidfd);
    }
    return tl::unexpected(*refusal);
  }
  const int sent = static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0));
  const int error = errno;
  ::close(pidfd);
  if (sent != 0) {
    return tl::unexpected(fmt::format("SIGKILL to pid {} failed: {}", holder.pid,
                                      std::strerror(error)));
  }
  return fmt::format("killed pid {} (stopped, state {}) with SIGKILL", holder.pid, *facts.state);
}

}  // namespace vipd::daemon
