#include "daemon/base/logger.h"

#include <chrono>
#include <cstdio>

#include <fmt/chrono.h>
#include <nlohmann/json.hpp>

#include "daemon/base/printable.h"

namespace vipd::daemon {
namespace {

std::string_view levelName(LogLevel level) {
  switch (level) {
    case LogLevel::Debug:
      return "debug";
    case LogLevel::Info:
      return "info";
    case LogLevel::Warn:
      return "warn";
    case LogLevel::Error:
      return "error";
  }
  return "info";
}

std::string timestamp() {
  auto now = std::chrono::system_clock::now();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) % 1000;
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03d}Z", fmt::gmtime(now), ms.count());
}

}  // namespace

void Logger::log(LogLevel level, std::string_view subject, std::string_view message) const {
  if (level < minimum_) {
    return;
  }
  std::string line;
  if (format_ == LogFormat::Json) {
    nlohmann::json j{{"time", timestamp()},
                     {"level", levelName(level)},
                     {"subject", subject},
                     {"msg", message}};
    line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } else {
    // Subjects and messages carry text from elsewhere (an operator's withdraw reason, a peer's
    // shutdown message, file contents): escaped, it can neither forge a line nor reach the
    // reader's terminal as an escape sequence. JSON escapes it already.
    line = fmt::format("{} {:5} {}: {}", timestamp(), levelName(level), printable(subject),
                       printable(message));
  }
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace vipd::daemon
