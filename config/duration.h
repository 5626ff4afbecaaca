// Durations as written in vipd's config and on vipctl's command line ("9s", "300ms", "1m30s").
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace vipd::config {

// Durations as written in the config: one or more <integer><unit> parts with units h, m, s, ms in
// that order, each at most once ("9s", "300ms", "1m30s", "1h"), or a bare "0". Returns nullopt for
// negative values, fractions, unknown units, whitespace, empty text and values that overflow.
[[nodiscard]] std::optional<std::chrono::milliseconds> parseDuration(std::string_view text);

// The inverse of parseDuration() for non-negative durations: "9s", "300ms", "1m30s", "0s".
// parseDuration(formatDuration(d)) == d for every d >= 0. Negative durations get a leading '-'.
std::string formatDuration(std::chrono::milliseconds duration);

}  // namespace vipd::config
