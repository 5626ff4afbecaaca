#include "daemon/lifecycle/instance_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <optional>

#include <boost/asio/error.hpp>

#include <fmt/format.h>

#include "daemon/lifecycle/host_lock.h"

namespace vipd::daemon {
namespace {

using local = boost::asio::local::stream_protocol;

constexpr std::string_view kStaticPod = "static-pod";
constexpr std::string_view kDaemonSet = "daemonset";
constexpr std::string_view kStopOrSeparate =
    "stop it first, or give this instance its own control.stateDir and VIPs; this instance "
    "changed nothing";

// "pid 4711" from a lock file's "4711 pid:[4026531836]\n"; "an unknown pid" when the holder has
// not written it yet or the file holds anything else.
std::string holderOfFile(int fd) {
  char text[128] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  if (n <= 0) {
    return "an unknown pid";
  }
  std::string_view view(text, static_cast<size_t>(n));
  int pid = 0;
  auto [end, error] = std::from_chars(view.data(), view.data() + view.size(), pid);
  if (error != std::errc() || pid <= 0) {
    return "an unknown pid";
  }
  std::string_view rest(end, static_cast<size_t>(view.data() + view.size() - end));
  const auto first = rest.find_first_not_of(' ');
  const auto last = rest.find_last_not_of(" \n");
  LockHolder holder;
  holder.pid = pid;
  if (first != std::string_view::npos && last != std::string_view::npos && first <= last) {
    holder.pidNamespace = std::string(rest.substr(first, last - first + 1));
  }
  return describe(holder);
}

// Locks <dir>/instance.<slot>.lock. Returns the open descriptor, or nullopt with a warning when
// the directory cannot hold the file, or an error when another instance holds it.
tl::expected<std::optional<int>, std::string> lockStateDir(const std::string& dir,
                                                           std::string_view slot,
                                                           std::vector<std::string>& warnings) {
  const std::string path = fmt::format("{}/instance.{}.lock", dir, slot);
  std::error_code fsError;
  std::filesystem::create_directories(dir, fsError);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0 && (errno == EROFS || errno == EACCES)) {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);  // flock works read-only
  }
  if (fd < 0) {
    warnings.push_back(fmt::format(
        "cannot open {} ({}): a second vipd using state directory {} is not stopped by it (the "
        "VIP locks still apply)",
        path, std::strerror(errno), dir));
    return std::nullopt;
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    std::string holder = holderOfFile(fd);
    ::close(fd);
    if (error == EWOULDBLOCK) {
      return tl::unexpected(fmt::format(
          "another vipd ({}) already runs with state directory {} (it holds {}); {}", holder, dir,
          path, kStopOrSeparate));
    }
    return tl::unexpected(fmt::format("cannot lock {}: {}", path, std::strerror(error)));
  }
  const LockHolder self = thisProcess({}, {});
  const std::string me = fmt::format("{} {}\n", self.pid, self.pidNamespace);
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, me.data(), me.size(), 0) < 0) {
    // Still locked: only the contender's message loses the PID.
    warnings.push_back(fmt::format("cannot write this process's PID into {}: {}", path,
                                   std::strerror(errno)));
  }
  return fd;
}

sockaddr_un abstractAddress(std::string_view name, socklen_t& length) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const size_t size = std::min(name.size(), sizeof address.sun_path - 1);
  std::memcpy(address.sun_path + 1, name.data(), size);  // sun_path[0] == 0: abstract
  length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + size);
  return address;
}

// The PID of the process listening on the abstract socket `name`, as "pid N"; "an unknown pid"
// when it cannot be asked (its queue is full, or it is not visible in this PID namespace).
std::string holderOfSocket(std::string_view name) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    return "an unknown pid";
  }
  socklen_t length = 0;
  const sockaddr_un address = abstractAddress(name, length);
  std::string holder = "an unknown pid";
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), length) == 0) {
    ucred cred{};
    socklen_t size = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &size) == 0 && cred.pid > 0) {
      holder = fmt::format("pid {}", cred.pid);
    }
  }
  ::close(fd);
  return holder;
}

tl::expected<int, std::string> lockVipSocket(std::string_view tag, const bgp::Prefix& vip,
                                       std::string_view slot) {
  const std::string name = vipLockName(tag, vip, slot);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    return tl::unexpected(fmt::format("cannot lock VIP {}: socket: {}", vip.toString(),
                                      std::strerror(errno)));
  }
  socklen_t length = 0;
  const sockaddr_un address = abstractAddress(name, length);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), length) != 0) {
    const int error = errno;
    ::close(fd);
    if (error == EADDRINUSE) {
      return tl::unexpected(fmt::format(
          "VIP {} is already served by another vipd ({}) in this network namespace; {}",
          vip.toString(), holderOfSocket(name), kStopOrSeparate));
    }
    return tl::unexpected(fmt::format("cannot lock VIP {}: bind: {}", vip.toString(),
                                      std::strerror(error)));
  }
  if (::listen(fd, 4) != 0) {
    const int error = errno;
    ::close(fd);
    return tl::unexpected(fmt::format("cannot lock VIP {}: listen: {}", vip.toString(),
                                      std::strerror(error)));
  }
  return fd;
}

}  // namespace

std::vector<std::string_view> instanceSlots(config::Mode mode) {
  switch (mode) {
    case config::Mode::StaticPod:
      return {kStaticPod};
    case config::Mode::DaemonSet:
      return {kDaemonSet};
    case config::Mode::Standalone:
      break;
  }
  return {kStaticPod, kDaemonSet, kDaemonSetSuccessorSlot};
}

std::string vipLockName(std::string_view tag, const bgp::Prefix& vip, std::string_view slot) {
  return fmt::format("{}/vip/{}/{}", tag, vip.toString(), slot);
}

bool slotHeld(const config::Config& config, std::string_view slot, std::string_view tag) {
  if (config.vips.empty()) {
    return false;
  }
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    return false;
  }
  socklen_t length = 0;
  const sockaddr_un address = abstractAddress(vipLockName(tag, config.vips.front().prefix, slot),
                                              length);
  const bool held = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), length) == 0 ||
                    errno == EAGAIN;
  ::close(fd);
  return held;
}

tl::expected<InstanceLock, std::string> InstanceLock::acquire(const config::Config& config,
                                                              std::vector<std::string>& warnings,
                                                              std::string_view tag) {
  std::vector<std::string> firstWarnings;
  auto lock = acquireSlots(config, instanceSlots(config.mode), firstWarnings, tag);
  if (lock || config.mode != config::Mode::DaemonSet) {
    warnings.insert(warnings.end(), firstWarnings.begin(), firstWarnings.end());
    return lock;
  }
  // A DaemonSet rollout with maxSurge starts the new pod beside the one it replaces: the
  // successor slot lets exactly one more daemonset instance run; it takes over through the
  // speaker lock.
  auto successor = acquireSlots(config, {kDaemonSetSuccessorSlot}, warnings, tag);
  if (!successor) {
    return tl::unexpected(fmt::format("{}; and the successor slot is taken too: {}", lock.error(),
                                      successor.error()));
  }
  successor->successor_ = true;
  return successor;
}

tl::expected<InstanceLock, std::string> InstanceLock::acquireSlots(
    const config::Config& config, const std::vector<std::string_view>& slots,
    std::vector<std::string>& warnings, std::string_view tag) {
  InstanceLock lock;  // releases whatever it took if a later step fails
  lock.slots_ = slots;
  for (auto slot : slots) {
    auto file = lockStateDir(config.control.stateDir, slot, warnings);
    if (!file) {
      return tl::unexpected(file.error());
    }
    if (*file) {
      lock.heldFds_.push_back(**file);
    }
  }
  for (const auto& vip : config.vips) {
    for (auto slot : slots) {
      auto socket = lockVipSocket(tag, vip.prefix, slot);
      if (!socket) {
        return tl::unexpected(socket.error());
      }
      lock.vipSockets_.emplace_back(vip.prefix, *socket);
    }
  }
  return lock;
}

InstanceLock::InstanceLock(InstanceLock&& other) noexcept
    : heldFds_(std::move(other.heldFds_)),
      served_(std::move(other.served_)),
      vipSockets_(std::move(other.vipSockets_)),
      slots_(std::move(other.slots_)),
      successor_(other.successor_) {
  other.heldFds_.clear();
  other.vipSockets_.clear();
}

InstanceLock& InstanceLock::operator=(InstanceLock&& other) noexcept {
  if (this != &other) {
    InstanceLock released(std::move(*this));  // closes ours on scope exit
    heldFds_ = std::move(other.heldFds_);
    served_ = std::move(other.served_);
    vipSockets_ = std::move(other.vipSockets_);
    slots_ = std::move(other.slots_);
    successor_ = other.successor_;
    other.heldFds_.clear();
    other.vipSockets_.clear();
  }
  return *this;
}

InstanceLock::~InstanceLock() {
  for (int fd : heldFds_) {
    ::close(fd);
  }
  for (const auto& [vip, fd] : vipSockets_) {
    ::close(fd);
  }
}

void InstanceLock::serve(boost::asio::io_context& io, const Logger& log) {
  for (const auto& [vip, fd] : vipSockets_) {
    serveOne(vip, fd, io, log);
  }
  vipSockets_.clear();
}

void InstanceLock::serveOne(const bgp::Prefix& vip, int fd, boost::asio::io_context& io,
                            const Logger& log) {
  auto& served = served_.emplace_back(
      Served{vip, local::acceptor(io), AcceptBackoff(io, log, "instance lock")});
  boost::system::error_code ec;
  served.acceptor.assign(local(), fd, ec);
  if (ec) {
    // Cannot happen for a socket this process just made; the lock holds without serving.
    log.warn("instance lock", "cannot serve a VIP lock socket: {}", ec.message());
    served_.pop_back();
    heldFds_.push_back(fd);  // keep it open (and the lock held) until exit
    return;
  }
  acceptNext(served);
}

tl::expected<void, std::string> InstanceLock::lockVip(const bgp::Prefix& vip,
                                                      boost::asio::io_context& io,
                                                      const Logger& log, std::string_view tag) {
  std::vector<int> taken;
  for (auto slot : slots_) {
    auto socket = lockVipSocket(tag, vip, slot);
    if (!socket) {
      for (int fd : taken) {
        ::close(fd);
      }
      return tl::unexpected(socket.error());
    }
    taken.push_back(*socket);
  }
  for (int fd : taken) {
    serveOne(vip, fd, io, log);
  }
  return {};
}

void InstanceLock::releaseVip(const bgp::Prefix& vip) {
  // Closing the acceptor aborts its accept, whose handler then touches nothing.
  for (auto it = served_.begin(); it != served_.end();) {
    if (it->vip == vip) {
      boost::system::error_code ignored;
      it->acceptor.close(ignored);
      it->backoff.cancel();
      it = served_.erase(it);
    } else {
      ++it;
    }
  }
}

void InstanceLock::acceptNext(Served& served) {
  served.acceptor.async_accept([&served](const boost::system::error_code& ec,
                                         local::socket socket) {
    if (ec == boost::asio::error::operation_aborted) {
      return;  // released (releaseVip): `served` may be gone
    }
    if (ec) {
      served.backoff.failed(ec, [&served] { acceptNext(served); });
      return;
    }
    served.backoff.succeeded();
    boost::system::error_code ignored;
    socket.close(ignored);
    acceptNext(served);
  });
}

}  // namespace vipd::daemon
