#include "daemon/lifecycle/withdrawn_state.h"

#include <fcntl.h>
#include <sys/stat.h>
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
namespace {

// "null", "a number", "an array": what an operator reading the error needs to find the field.
std::string describeType(const nlohmann::json& j) {
  if (j.is_null()) {
    return "null";
  }
  const std::string name = j.type_name();
  return (name.front() == 'a' || name.front() == 'o' ? "an " : "a ") + name;
}

}  // namespace

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
  if (in.bad()) {
    return tl::unexpected(fmt::format("cannot read {}: {}", path_, std::strerror(errno)));
  }
  // The file is untrusted input (an operator may edit it, a full disk may truncate it): every
  // problem is a value naming the file and the field, never an exception on the event loop.
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    return tl::unexpected(fmt::format("{} is not valid JSON ({})", path_, e.what()));
  }
  if (!j.is_object()) {
    return tl::unexpected(
        fmt::format("{} holds {}, expected a JSON object with \"reason\" and \"since\"", path_,
                    describeType(j)));
  }
  auto field = [&](const char* name, bool required) -> tl::expected<std::string, std::string> {
    auto it = j.find(name);
    if (it == j.end()) {
      if (required) {
        return tl::unexpected(fmt::format("{}: field \"{}\" is missing", path_, name));
      }
      return std::string();
    }
    if (!it->is_string()) {
      return tl::unexpected(fmt::format("{}: field \"{}\" is {}, expected a string", path_, name,
                                        describeType(*it)));
    }
    return it->get<std::string>();
  };
  auto reason = field("reason", true);
  if (!reason) {
    return tl::unexpected(reason.error());
  }
  // "since" is for the operator's eyes only; a file written without it is still a withdraw.
  auto since = field("since", false);
  if (!since) {
    return tl::unexpected(since.error());
  }
  return Withdrawn{std::move(*reason), std::move(*since)};
}

std::string WithdrawnState::modifiedAt() const {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) {
    return utcNow();
  }
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}",
                     fmt::gmtime(std::chrono::system_clock::from_time_t(st.st_mtime)));
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
