#include "daemon/lifecycle/host_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace vipd::daemon {
namespace {

std::optional<nlohmann::json> readJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  auto j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return std::nullopt;
  }
  return j;
}

// Readers must never see half a record: write aside, then rename over. The directory is a tmpfs
// under /run in practice and the records describe running processes, so no fsync.
tl::expected<void, std::string> writeJson(const std::string& path, const nlohmann::json& j) {
  const std::string tmp = fmt::format("{}.{}.tmp", path, ::getpid());
  const std::string body = j.dump() + "\n";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return tl::unexpected(fmt::format("cannot write {}: {}", tmp, std::strerror(errno)));
  }
  bool ok = ::write(fd, body.data(), body.size()) == static_cast<ssize_t>(body.size());
  int savedErrno = errno;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    if (ok) {
      savedErrno = errno;
    }
    ::unlink(tmp.c_str());
    return tl::unexpected(fmt::format("cannot write {}: {}", path, std::strerror(savedErrno)));
  }
  return {};
}

std::string ownPidNamespace() {
  std::error_code ec;
  auto target = std::filesystem::read_symlink("/proc/self/ns/pid", ec);
  return ec ? std::string() : target.string();
}

}  // namespace

LockHolder thisProcess(std::string mode, std::string controlSocket) {
  return {::getpid(), std::move(mode), std::move(controlSocket), ownPidNamespace()};
}

bool sharesPidNamespace(const LockHolder& holder) {
  static const std::string mine = ownPidNamespace();
  return !holder.pidNamespace.empty() && holder.pidNamespace == mine;
}

std::string describe(const LockHolder& holder) {
  static const std::string mine = ownPidNamespace();
  if (holder.pidNamespace.empty() || holder.pidNamespace == mine) {
    return fmt::format("pid {}", holder.pid);
  }
  return fmt::format("pid {} in PID namespace {} (another container)", holder.pid,
                     holder.pidNamespace);
}

int64_t bootTimeMs() {
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

tl::expected<HostLock, std::string> HostLock::open(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return tl::unexpected(fmt::format("cannot create the handoff directory {}: {}", dir,
                                      ec.message()));
  }
  const std::string path = dir + "/speaker.lock";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return tl::unexpected(fmt::format("cannot open the speaker lock {}: {}", path,
                                      std::strerror(errno)));
  }
  return HostLock(dir, fd);
}

HostLock::HostLock(HostLock&& other) noexcept
    : dir_(std::move(other.dir_)), fd_(std::exchange(other.fd_, -1)),
      held_(std::exchange(other.held_, false)) {}

HostLock& HostLock::operator=(HostLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) {
      ::close(fd_);
    }
    dir_ = std::move(other.dir_);
    fd_ = std::exchange(other.fd_, -1);
    held_ = std::exchange(other.held_, false);
  }
  return *this;
}

std::string HostLock::fileId() const {
  struct stat st {};
  if (fd_ < 0 || ::fstat(fd_, &st) != 0) {
    return {};
  }
  // As fs/locks.c prints it: "%02x:%02x:%lu".
  return fmt::format("{:02x}:{:02x}:{}", major(st.st_dev), minor(st.st_dev), st.st_ino);
}

HostLock::~HostLock() {
  if (fd_ >= 0) {
    ::close(fd_);  // releases the flock
  }
}

tl::expected<bool, std::string> HostLock::tryAcquire(const LockHolder& me) {
  if (held_) {
    return true;
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return false;
    }
    return tl::unexpected(fmt::format("cannot lock {}/speaker.lock: {}", dir_,
                                      std::strerror(errno)));
  }
  held_ = true;
  auto written = writeJson(dir_ + "/speaker.json", {{"pid", me.pid},
                                                    {"pidNamespace", me.pidNamespace},
                                                    {"mode", me.mode},
                                                    {"controlSocket", me.controlSocket}});
  if (!written) {
    // Holding the lock without saying so would leave a contender unable to ask for a handoff.
    release();
    return tl::unexpected(written.error());
  }
  return true;
}

void HostLock::release() {
  if (held_) {
    ::flock(fd_, LOCK_UN);
    held_ = false;
  }
}

std::optional<LockHolder> HostLock::holder() const {
  auto j = readJson(dir_ + "/speaker.json");
  if (!j || !(*j)["pid"].is_number_integer() || !(*j)["mode"].is_string() ||
      !(*j)["controlSocket"].is_string()) {
    return std::nullopt;
  }
  const auto& ns = (*j)["pidNamespace"];
  return LockHolder{(*j)["pid"].get<int>(), (*j)["mode"].get<std::string>(),
                    (*j)["controlSocket"].get<std::string>(),
                    ns.is_string() ? ns.get<std::string>() : std::string()};
}

tl::expected<void, std::string> HostLock::writeYieldMarker(const YieldMarker& marker) {
  return writeJson(dir_ + "/handoff.json", {{"routerId", marker.routerId},
                                           {"yieldedAtBootMs", marker.yieldedAtBootMs},
                                           {"restartTimeMs", marker.restartTimeMs}});
}

tl::expected<std::optional<YieldMarker>, std::string> HostLock::takeYieldMarker() {
  const std::string path = dir_ + "/handoff.json";
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT) {
      return std::nullopt;
    }
    const int error = errno;
    ::unlink(path.c_str());
    return tl::unexpected(fmt::format("cannot read {}: {}", path, std::strerror(error)));
  }
  std::stringstream text;
  text << in.rdbuf();
  ::unlink(path.c_str());  // used once, whatever it holds
  // Untrusted input: every problem is a value naming the file and the field, never an exception.
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    return tl::unexpected(fmt::format("{} is not valid JSON ({})", path, e.what()));
  }
  if (!j.is_object()) {
    return tl::unexpected(
        fmt::format("{} holds a JSON {}, expected an object", path, j.type_name()));
  }
  auto check = [&](const char* name, bool (nlohmann::json::*is)() const noexcept,
                   const char* expected) -> tl::expected<void, std::string> {
    auto it = j.find(name);
    if (it == j.end()) {
      return tl::unexpected(fmt::format("{}: field \"{}\" is missing", path, name));
    }
    if (!((*it).*is)()) {
      return tl::unexpected(fmt::format("{}: field \"{}\" is a JSON {}, expected {}", path, name,
                                        it->type_name(), expected));
    }
    return {};
  };
  for (auto checked : {check("routerId", &nlohmann::json::is_string, "a string"),
                       check("yieldedAtBootMs", &nlohmann::json::is_number_integer, "an integer"),
                       check("restartTimeMs", &nlohmann::json::is_number_integer, "an integer")}) {
    if (!checked) {
      return tl::unexpected(checked.error());
    }
  }
  return YieldMarker{j["routerId"].get<std::string>(), j["yieldedAtBootMs"].get<int64_t>(),
                     j["restartTimeMs"].get<int64_t>()};
}

}  // namespace vipd::daemon
