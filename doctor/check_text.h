// Shared by the checks' files: how they name things. Private to doctor/.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <string_view>
#include <vector>

#include "bgp/ip_address.h"
#include "doctor/node_facts.h"

namespace vipd::doctor::text {

// " (from node.yaml)" when the facts know which file set `path`; "" otherwise.
inline std::string from(const NodeFacts& facts, std::string_view path) {
  if (facts.config.origins) {
    if (auto source = facts.config.origins->sourceOf(path)) {
      return fmt::format(" (from {})", *source);
    }
  }
  return "";
}

// "a, b and c".
inline std::string list(const std::vector<std::string>& items) {
  if (items.empty()) {
    return "";
  }
  std::string out = items.front();
  for (size_t i = 1; i < items.size(); ++i) {
    out += (i + 1 == items.size() ? " and " : ", ") + items[i];
  }
  return out;
}

// The address alone: "203.0.113.10" for 203.0.113.10/32.
inline std::string address(const bgp::Prefix& prefix) { return prefix.address.toString(); }

}  // namespace vipd::doctor::text
