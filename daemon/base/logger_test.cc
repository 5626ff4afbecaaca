// Logger (daemon/base/logger.h): one event per line, whatever the subject and message hold. Much
// of what vipd logs comes from elsewhere (an operator's withdraw reason, a peer's shutdown
// communication, a handoff identity, file contents in error messages): a newline in it must not
// start a line of its own that reads as vipd's, and an escape sequence must not reach the
// terminal of whoever reads the log.
#include "daemon/base/logger.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>

namespace vipd::daemon {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;

std::string logged(LogFormat format, std::string_view subject, std::string_view message) {
  Logger log(format, LogLevel::Info);
  ::testing::internal::CaptureStderr();
  log.warn(subject, "vipctl withdraw: \"{}\"; the node stays withdrawn", message);
  return ::testing::internal::GetCapturedStderr();
}

TEST(Logger, TextLinesEscapeControlCharactersInEveryField) {
  const std::string forged = "node 3\n2025-01-01T00:00:00.000Z info  drain: vipctl announce";
  std::string line = logged(LogFormat::Text, "drain", forged);
  EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1) << line;
  EXPECT_THAT(line, EndsWith("warn  drain: vipctl withdraw: \"node 3\\n2025-01-01T00:00:00.000Z "
                             "info  drain: vipctl announce\"; the node stays withdrawn\n"));

  line = logged(LogFormat::Text, "peer 192.0.2.1\r\x1b[2K", "\x1b]0;owned\x07 \t\x7f \u009b2J");
  EXPECT_THAT(line, HasSubstr("peer 192.0.2.1\\r\\x1b[2K: "));
  EXPECT_THAT(line, HasSubstr("\"\\x1b]0;owned\\x07 \\t\\x7f \\u009b2J\""));
  for (char c : line.substr(0, line.size() - 1)) {
    EXPECT_GE(static_cast<unsigned char>(c), 0x20) << line;
    EXPECT_NE(c, 0x7f) << line;
  }
  // Text that is not ASCII is left alone.
  EXPECT_THAT(logged(LogFormat::Text, "drain", "Netzteil größer"),
              HasSubstr("Netzteil größer"));
}

TEST(Logger, JsonLinesKeepTheTextJsonEscaped) {
  std::string line = logged(LogFormat::Json, "drain", "a\nb\x1b[2J");
  EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1) << line;
  auto json = nlohmann::json::parse(line);
  EXPECT_EQ(json["msg"], "vipctl withdraw: \"a\nb\x1b[2J\"; the node stays withdrawn");
}

}  // namespace
}  // namespace vipd::daemon
