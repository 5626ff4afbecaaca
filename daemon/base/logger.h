// Leveled, one-event-per-line logging to stderr, as text or JSON (--log-format). Each line names
// its subject ("peer 192.0.2.1", "vip 203.0.113.10/32") and says what happens next. One event is
// one line whatever it carries: the text format escapes control characters in the subject and
// the message (daemon/base/printable.h), JSON escapes them its own way.
#pragma once

#include <string>
#include <string_view>

#include <fmt/format.h>

namespace vipd::daemon {

enum class LogLevel { Debug, Info, Warn, Error };
enum class LogFormat { Text, Json };

class Logger {
 public:
  Logger(LogFormat format, LogLevel minimum) : format_(format), minimum_(minimum) {}

  void log(LogLevel level, std::string_view subject, std::string_view message) const;

  template <typename... Args>
  void debug(std::string_view subject, fmt::format_string<Args...> f, Args&&... args) const {
    log(LogLevel::Debug, subject, fmt::format(f, std::forward<Args>(args)...));
  }
  template <typename... Args>
  void info(std::string_view subject, fmt::format_string<Args...> f, Args&&... args) const {
    log(LogLevel::Info, subject, fmt::format(f, std::forward<Args>(args)...));
  }
  template <typename... Args>
  void warn(std::string_view subject, fmt::format_string<Args...> f, Args&&... args) const {
    log(LogLevel::Warn, subject, fmt::format(f, std::forward<Args>(args)...));
  }
  template <typename... Args>
  void error(std::string_view subject, fmt::format_string<Args...> f, Args&&... args) const {
    log(LogLevel::Error, subject, fmt::format(f, std::forward<Args>(args)...));
  }

 private:
  LogFormat format_;
  LogLevel minimum_;
};

}  // namespace vipd::daemon
