// Pure value rules (value_rules.h): number and colon-field parsing, address:port, DNS names,
// unknown-key suggestions and address classes.
#include "config/value_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>

namespace vipd::config::internal {
namespace {

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return out;
}

}  // namespace

std::optional<uint64_t> parseDecimal(std::string_view text) {
  if (text.empty() || text.size() > 20) {
    return std::nullopt;
  }
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || ptr != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

bool isAllDigits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::optional<std::vector<uint32_t>> parseColonFields(std::string_view text, size_t parts,
                                                      uint64_t max) {
  std::vector<uint32_t> values;
  size_t start = 0;
  while (true) {
    size_t colon = text.find(':', start);
    auto part = text.substr(start, colon == std::string_view::npos ? text.npos : colon - start);
    if (!isAllDigits(part)) {
      return std::nullopt;
    }
    auto value = parseDecimal(part);
    if (!value || *value > max) {
      return std::nullopt;
    }
    values.push_back(static_cast<uint32_t>(*value));
    if (colon == std::string_view::npos) {
      break;
    }
    start = colon + 1;
  }
  if (values.size() != parts) {
    return std::nullopt;
  }
  return values;
}

std::optional<std::pair<bgp::IpAddress, uint16_t>> parseAddressPort(std::string_view text) {
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    return std::nullopt;
  }
  auto host = text.substr(0, colon);
  bool bracketed = host.size() > 2 && host.front() == '[' && host.back() == ']';
  if (bracketed) {
    host = host.substr(1, host.size() - 2);
  }
  auto portText = text.substr(colon + 1);
  unsigned port = 0;
  auto [end, ec] = std::from_chars(portText.data(), portText.data() + portText.size(), port);
  auto address = bgp::IpAddress::parse(host);
  // IPv6 only in brackets: "2001:db8::1:6443" could be an address without a port, and the health
  // checker (like every URL parser) rejects it; IPv4 never in brackets.
  if (!address || address->isV6() != bracketed || portText.empty() || ec != std::errc{} ||
      end != portText.data() + portText.size() || port == 0 || port > 65535) {
    return std::nullopt;
  }
  return std::pair{*address, static_cast<uint16_t>(port)};
}

std::optional<std::string> dnsNameProblem(std::string_view text) {
  constexpr size_t kMaxName = 253;
  constexpr size_t kMaxLabel = 63;
  if (text.empty()) {
    return "the name is empty";
  }
  if (text.size() > kMaxName) {
    return fmt::format("the name is {} characters long; at most {}", text.size(), kMaxName);
  }
  size_t start = 0;
  while (true) {
    size_t dot = text.find('.', start);
    auto label = text.substr(start, dot == std::string_view::npos ? text.npos : dot - start);
    if (label.empty()) {
      return std::string("it has an empty label (a leading, trailing or doubled '.')");
    }
    if (label.size() > kMaxLabel) {
      return fmt::format("label '{}...' is longer than {} characters", label.substr(0, 20),
                         kMaxLabel);
    }
    for (char c : label) {
      bool ok =
          (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
      if (!ok) {
        auto byte = static_cast<unsigned char>(c);
        std::string shown = byte > 0x20 && byte < 0x7f ? fmt::format("'{}'", c)
                                                       : fmt::format("byte 0x{:02x}", byte);
        return fmt::format("{} is not allowed; use letters, digits, '-' and '.'", shown);
      }
    }
    if (label.front() == '-' || label.back() == '-') {
      return fmt::format("label '{}' starts or ends with '-'", label);
    }
    if (dot == std::string_view::npos) {
      return std::nullopt;
    }
    start = dot + 1;
  }
}

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) {
    row[j] = j;
  }
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string shortKey(std::string_view key) {
  std::string out;
  for (char c : key.substr(0, kMaxKeyShown)) {
    out += c >= 0x20 && c < 0x7f ? c : '?';
  }
  if (key.size() > kMaxKeyShown) {
    out += "...";
  }
  return out;
}

std::string unknownKeyMessage(std::string_view key, std::initializer_list<std::string_view> known) {
  // Case is ignored when measuring so that "holdtime" and "HoldTime" point at "holdTime".
  std::string lowerKey = lowercase(key);
  std::string_view best;
  size_t bestDistance = SIZE_MAX;
  for (std::string_view candidate : known) {
    size_t distance = editDistance(lowerKey, lowercase(candidate));
    if (distance < bestDistance) {
      bestDistance = distance;
      best = candidate;
    }
  }
  size_t threshold = std::max<size_t>(2, best.size() / 3);
  if (!best.empty() && bestDistance <= threshold) {
    return fmt::format("unknown key '{}' (did you mean '{}'?)", shortKey(key), best);
  }
  std::string list;
  for (std::string_view candidate : known) {
    list += list.empty() ? "" : ", ";
    list += candidate;
  }
  return fmt::format("unknown key '{}'; expected one of: {}", shortKey(key), list);
}

bool isMulticast(const bgp::IpAddress& a) {
  return a.isV4() ? (a.bytes[0] & 0xf0) == 0xe0 : a.bytes[0] == 0xff;
}

bool isLoopback(const bgp::IpAddress& a) {
  if (a.isV4()) {
    return a.bytes[0] == 127;
  }
  return a == bgp::IpAddress::v6({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1});
}

bool isBroadcast(const bgp::IpAddress& a) { return a.isV4() && a.v4Value() == 0xffffffffu; }

bool isV4MappedV6(const bgp::IpAddress& a) {
  static constexpr std::array<uint8_t, 12> kPrefix{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return a.isV6() && std::equal(kPrefix.begin(), kPrefix.end(), a.bytes.begin());
}

const char* familyName(const bgp::IpAddress& a) { return a.isV4() ? "IPv4" : "IPv6"; }

}  // namespace vipd::config::internal
