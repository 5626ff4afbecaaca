// Fuzz target: config::parseConfig() on arbitrary text (YAML through yaml-cpp, then vipd's
// validation), and config::parseDuration() on the same text.
//
// Checks: every error is reported as a value with a message and a position ordered as the header
// promises; nothing escapes as an exception (an escaping yaml-cpp exception would abort here);
// a duration that parses formats back to text that parses to the same value.
#include <string_view>

#include "config/config_parser.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  auto config = vipd::config::parseConfig(text, "fuzz.yaml");
  if (!config) {
    VIPD_FUZZ_CHECK(!config.error().empty(), "a rejected config names at least one error");
    int line = 0;
    int column = 0;
    for (const auto& error : config.error()) {
      VIPD_FUZZ_CHECK(!error.message.empty(), "every config error has a message");
      VIPD_FUZZ_CHECK(error.file == "fuzz.yaml", "every config error names the file");
      VIPD_FUZZ_CHECK(!error.toString().empty(), "every config error prints");
      VIPD_FUZZ_CHECK(error.line >= 0 && error.column >= 0, "positions are not negative");
      VIPD_FUZZ_CHECK(
          error.line > line || (error.line == line && error.column >= column) || error.line == 0,
          "errors are ordered by position");
      if (error.line != 0) {
        line = error.line;
        column = error.column;
      }
    }
  }

  if (auto duration = vipd::config::parseDuration(text)) {
    VIPD_FUZZ_CHECK(duration->count() >= 0, "a parsed duration is not negative");
    auto again = vipd::config::parseDuration(vipd::config::formatDuration(*duration));
    VIPD_FUZZ_CHECK(again == duration, "parseDuration(formatDuration(d)) == d");
  }
  return 0;
}
