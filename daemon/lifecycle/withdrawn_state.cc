#include "daemon/lifecycle/withdrawn_state.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace vipd::daemon {

std::string utcNow() {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::chrono::system_clock::now()));
}

WithdrawnState::WithdrawnState(std::string stateDir)
    : stateDir_(std::move(stateDir)), path_(stateDir_ + "/withdrawn.json") {}

tl::expected<std::optional<Withdrawn>, std::string> WithdrawnState::load() const {
  std::ifstream in(path_);
  if (!in) {
    if (errno == ENOENT) {
      return std::nullopt;
    }
    return tl::unexpected(fmt::format("cannot read {}: {}", path_, std::strerror(errno)));
  }
  std::stringstream text;
  text << in.rdbuf();
  auto j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("reason") || !j["reason"].is_string()) {
    return tl::unexpected(fmt::format(
        "{} is not a valid withdrawn-state file; fix or remove it (vipctl announce rewrites it)",
        path_));
  }
  return Withdrawn{j["reason"].get<std::string>(), j.value("since", std::string())};
}

tl::expected<void, std::string> WithdrawnState::save(const Withdrawn& withdrawn) const {
  std::error_code ec;
  std::filesystem::create_directories(stateDir_, ec);
  if (ec) {
    return tl::unexpected(fmt::format("cannot create {}: {}", stateDir_, ec.message()));
  }
  const std::string tmp = path_ + ".tmp";
  const std::string body =
      nlohmann::json{{"reason", withdrawn.reason}, {"since", withdrawn.since}}.dump(2) + "\n";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    return tl::unexpected(fmt::format("cannot write {}: {}", tmp, std::strerror(errno)));
  }
  bool ok = ::write(fd, body.data(), body.size()) == static_cast<ssize_t>(body.size()) &&
            ::fsync(fd) == 0;
  int savedErrno = errno;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path_.c_str()) != 0) {
    if (ok) {
      savedErrno = errno;
    }
    ::unlink(tmp.c_str());
    return tl::unexpected(fmt::format("cannot write {}: {}", path_, std::strerror(savedErrno)));
  }
  // Make the rename itself durable: a reboot right after `vipctl withdraw` must not forget it.
  int dirFd = ::open(stateDir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirFd >= 0) {
    ::fsync(dirFd);
    ::close(dirFd);
  }
  return {};
}

tl::expected<void, std::string> WithdrawnState::clear() const {
  if (::unlink(path_.c_str()) != 0 && errno != ENOENT) {
    return tl::unexpected(fmt::format("cannot remove {}: {}", path_, std::strerror(errno)));
  }
  return {};
}

}  // namespace vipd::daemon
