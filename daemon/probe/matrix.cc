#include "daemon/probe/matrix.h"


#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "daemon/base/json_fields.h"
#include "daemon/base/printable.h"

namespace vipd::daemon {

using nlohmann::json;

namespace {

// U+2581..U+2588, lower one eighth block to full block.
constexpr std::string_view kBlocks[] = {"\u2581", "\u2582", "\u2583", "\u2584",
                                        "\u2585", "\u2586", "\u2587", "\u2588"};

using json_fields::boolean;
using json_fields::member;
using json_fields::number;

std::string text(const json& object, const char* key) {
  return json_fields::string(object, key).value_or("");
}

// A string of the matrix as the terminal gets it: whatever another host put in it (site and
// target names, failure reasons), no control character reaches the operator's terminal.
std::string shown(const json& object, const char* key) { return printable(text(object, key)); }

// The array at `key`, or an empty one when it is missing or something else.
const json& list(const json& object, const char* key) {
  static const json kEmpty = json::array();
  const json* value = member(object, key);
  return value != nullptr && value->is_array() ? *value : kEmpty;
}

// A member that may be missing, as null.
const json& orNull(const json& object, const char* key) {
  static const json kNull;
  const json* value = member(object, key);
  return value != nullptr ? *value : kNull;
}

// Terminal columns of UTF-8 text: one per code point (every character drawn here is narrow).
size_t displayWidth(std::string_view s) {
  return static_cast<size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

std::string padded(const std::string& s, size_t width) {
  size_t w = displayWidth(s);
  return w >= width ? s : s + std::string(width - w, ' ');
}

std::string formatMs(std::optional<double> ms) {
  if (!ms) {
    return "-";
  }
  return *ms >= 100 ? fmt::format("{:.0f}", *ms) : fmt::format("{:.1f}", *ms);
}

}  // namespace

std::string sparkline(const json& recent, size_t width) {
  if (!recent.is_array()) {
    return "";
  }
  size_t first = recent.size() > width ? recent.size() - width : 0;
  double slowest = 0;
  // Whatever is not `"ok": true` is a failure (a string "yes" too).
  auto ok = [&recent](size_t i) { return boolean(recent[i], "ok").value_or(false); };
  for (size_t i = first; i < recent.size(); ++i) {
    if (ok(i)) {
      slowest = std::max(slowest, number(recent[i], "ms").value_or(0));
    }
  }
  std::string out;
  for (size_t i = first; i < recent.size(); ++i) {
    if (!ok(i)) {
      out += 'x';
      continue;
    }
    double ms = number(recent[i], "ms").value_or(0);
    size_t level = slowest > 0 ? static_cast<size_t>(ms / slowest * 7.0 + 0.5) : 0;
    out += kBlocks[std::min<size_t>(level, 7)];
  }
  return out;
}

json probeMatrixJson(const std::vector<ProbeSource>& sources, size_t sparkWidth) {
  std::set<std::string> sites;
  std::vector<std::string> targets;
  json cells = json::array();
  json unreachable = json::array();
  for (const auto& source : sources) {
    if (!source.error.empty() || !source.document.is_object()) {
      unreachable.push_back(
          {{"url", source.url},
           {"error", source.error.empty() ? "not a /probe.json document" : source.error}});
      continue;
    }
    std::string site = text(source.document, "site");
    if (site.empty()) {
      unreachable.push_back({{"url", source.url}, {"error", "the document names no site"}});
      continue;
    }
    sites.insert(site);
    for (const auto& target : list(source.document, "targets")) {
      std::string name = text(target, "name");
      if (name.empty()) {
        continue;
      }
      if (std::find(targets.begin(), targets.end(), name) == targets.end()) {
        targets.push_back(name);
      }
      auto valueOrNull = [](auto v) { return v ? json(*v) : json(); };
      const json& last = orNull(target, "last");
      json cell = {{"site", site},
                   {"target", name},
                   {"url", text(target, "url")},
                   {"probes", valueOrNull(number(target, "probes"))},
                   {"successRate", valueOrNull(number(target, "successRate"))},
                   {"p50Ms", valueOrNull(number(target, "p50Ms"))},
                   {"p99Ms", valueOrNull(number(target, "p99Ms"))},
                   {"lastOk", valueOrNull(boolean(last, "ok"))},
                   {"lastReason", text(last, "reason")},
                   {"lastDetail", text(last, "detail")},
                   {"sparkline", sparkline(orNull(target, "recent"), sparkWidth)}};
      cells.push_back(std::move(cell));
    }
  }
  return {{"sites", json(std::vector<std::string>(sites.begin(), sites.end()))},
          {"targets", targets},
          {"cells", std::move(cells)},
          {"unreachable", std::move(unreachable)}};
}

std::string renderProbeMatrix(const json& matrix, const std::string& title) {
  std::vector<std::string> sites;
  std::vector<std::string> targets;
  // Names as they are drawn, escaped; the cells below are keyed by the same (shown()).
  for (const auto& s : list(matrix, "sites")) {
    sites.push_back(s.is_string() ? printable(s.get<std::string>()) : "?");
  }
  for (const auto& t : list(matrix, "targets")) {
    targets.push_back(t.is_string() ? printable(t.get<std::string>()) : "?");
  }
  std::map<std::pair<std::string, std::string>, std::string> cellText;
  for (const auto& cell : list(matrix, "cells")) {
    auto rate = number(cell, "successRate");
    std::string s = fmt::format("{:>6} {:>5}/{:<5}ms {}",
                                rate ? fmt::format("{:.1f}%", *rate * 100) : "-",
                                formatMs(number(cell, "p50Ms")), formatMs(number(cell, "p99Ms")),
                                shown(cell, "sparkline"));
    if (auto lastOk = boolean(cell, "lastOk"); lastOk && !*lastOk) {
      s += " " + shown(cell, "lastReason");
    }
    cellText[{shown(cell, "site"), shown(cell, "target")}] = s;
  }
  size_t siteWidth = displayWidth("site");
  for (const auto& s : sites) {
    siteWidth = std::max(siteWidth, displayWidth(s));
  }
  std::vector<size_t> widths;
  for (const auto& t : targets) {
    size_t w = displayWidth(t);
    for (const auto& s : sites) {
      auto it = cellText.find({s, t});
      w = std::max(w, it == cellText.end() ? 1 : displayWidth(it->second));
    }
    widths.push_back(w);
  }
  std::string out = title + "\n";
  out += "cells: success rate, p50/p99 latency of the successes, the last probes (x failed)\n\n";
  std::string line = padded("site", siteWidth);
  for (size_t i = 0; i < targets.size(); ++i) {
    line += "  " + padded(targets[i], widths[i]);
  }
  // Trailing blanks would linger on a terminal line redrawn in place.
  line.erase(line.find_last_not_of(' ') + 1);
  out += line + "\n";
  for (const auto& s : sites) {
    line = padded(s, siteWidth);
    for (size_t i = 0; i < targets.size(); ++i) {
      auto it = cellText.find({s, targets[i]});
      line += "  " + padded(it == cellText.end() ? "-" : it->second, widths[i]);
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + "\n";
  }
  for (const auto& u : list(matrix, "unreachable")) {
    out += fmt::format("unreachable: {}: {}\n", shown(u, "url"), shown(u, "error"));
  }
  return out;
}

}  // namespace vipd::daemon
