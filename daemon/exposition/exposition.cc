#include "daemon/exposition/exposition.h"

#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <tuple>

namespace vipd::daemon::exposition {
namespace {

std::string escapeHelp(const std::string& help) {
  std::string out;
  out.reserve(help.size());
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

bool labelsBefore(const prometheus::ClientMetric& a, const prometheus::ClientMetric& b) {
  return std::lexicographical_compare(
      a.label.begin(), a.label.end(), b.label.begin(), b.label.end(),
      [](const auto& x, const auto& y) {
        return std::tie(x.name, x.value) < std::tie(y.name, y.value);
      });
}

}  // namespace

std::string serialize(const prometheus::Registry& registry) {
  auto families = registry.Collect();
  for (auto& family : families) {
    family.help = escapeHelp(family.help);
    std::stable_sort(family.metric.begin(), family.metric.end(), labelsBefore);
  }
  return prometheus::TextSerializer{}.Serialize(families);
}

}  // namespace vipd::daemon::exposition
