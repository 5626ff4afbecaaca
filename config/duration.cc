// Durations as written in vipd's config and on vipctl's command line. Kept apart from
// parser.cc so that vipctl links this alone: no yaml-cpp (see daemon/meson.build).
#include "config/duration.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdint>
#include <iterator>
#include <utility>

namespace vipd::config {

using std::chrono::milliseconds;

std::optional<milliseconds> parseDuration(std::string_view text) {
  struct Unit {
    std::string_view name;
    int64_t milliseconds;
  };
  static constexpr Unit kUnits[] = {{"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1}};
  if (text == "0") {
    return milliseconds{0};
  }
  if (text.empty()) {
    return std::nullopt;
  }
  int64_t total = 0;
  size_t nextUnit = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t numberStart = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      ++i;
    }
    if (i == numberStart) {
      return std::nullopt;
    }
    int64_t value = 0;
    auto [end, ec] = std::from_chars(text.data() + numberStart, text.data() + i, value);
    if (ec != std::errc() || end != text.data() + i) {
      return std::nullopt;  // more than INT64_MAX
    }
    size_t unitStart = i;
    while (i < text.size() && text[i] >= 'a' && text[i] <= 'z') {
      ++i;
    }
    std::string_view unit = text.substr(unitStart, i - unitStart);
    size_t k = nextUnit;
    while (k < std::size(kUnits) && kUnits[k].name != unit) {
      ++k;
    }
    if (k == std::size(kUnits)) {
      return std::nullopt;
    }
    nextUnit = k + 1;
    int64_t part = 0;
    if (__builtin_mul_overflow(value, kUnits[k].milliseconds, &part) ||
        __builtin_add_overflow(total, part, &total)) {
      return std::nullopt;
    }
  }
  return milliseconds{total};
}

std::string formatDuration(milliseconds duration) {
  int64_t count = duration.count();
  uint64_t rest = count < 0 ? 0 - static_cast<uint64_t>(count) : static_cast<uint64_t>(count);
  if (rest == 0) {
    return "0s";
  }
  std::string out = count < 0 ? "-" : "";
  constexpr std::pair<uint64_t, const char*> kUnits[] = {
      {3600000, "h"}, {60000, "m"}, {1000, "s"}, {1, "ms"}};
  for (const auto& [size, name] : kUnits) {
    if (rest >= size) {
      out += fmt::format("{}{}", rest / size, name);
      rest %= size;
    }
  }
  return out;
}

}  // namespace vipd::config
