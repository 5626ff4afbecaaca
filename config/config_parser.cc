#include "config/config_parser.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <utility>

#include "config/yaml_documents.h"

namespace vipd::config {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr std::string_view kApiVersion = "vipd.io/v1alpha1";
constexpr std::string_view kKind = "SpeakerConfiguration";

// Larger than any sane config; stops `vipd --config /dev/zero` from eating memory.
constexpr size_t kMaxFileSize = size_t{4} << 20;

// RFC 4271 section 4.2: the hold time is 0 or at least 3 seconds, in a 16-bit field of seconds.
constexpr milliseconds kMinHoldTime{3000};
constexpr milliseconds kMaxHoldTime{65535 * 1000};
constexpr milliseconds kMinConnectRetry{100};
constexpr uint32_t kMaxAsn = 4294967295u;
// Linux IFNAMSIZ is 16 including the terminating NUL.
constexpr size_t kMaxInterfaceNameLength = 15;
// sockaddr_un::sun_path is 108 bytes on Linux, including the terminating NUL.
constexpr size_t kMaxSocketPathLength = 107;
// Longer than a minute is a mistake, not a drain: kubelet would kill the pod first.
constexpr milliseconds kMaxDrainStep{60000};

// Where a value sits in the document and what it is called, for error messages.
struct Field {
  YAML::Node key;
  YAML::Node value;
  std::string path;
};

// A mapping whose keys were checked against the schema: no unknown keys, no duplicates.
struct Mapping {
  YAML::Mark mark;
  std::string path;
  std::vector<std::pair<std::string, Field>> fields;

  const Field* find(std::string_view key) const {
    for (const auto& [name, field] : fields) {
      if (name == key) {
        return &field;
      }
    }
    return nullptr;
  }
};

std::string joinPath(const std::string& path, std::string_view key) {
  if (path.empty()) {
    return std::string(key);
  }
  return fmt::format("{}.{}", path, key);
}

std::string indexPath(const std::string& path, size_t index) {
  return fmt::format("{}[{}]", path, index);
}

// What the operator wrote, for "expected X, got Y" messages.
std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar: {
      constexpr size_t kMaxShown = 40;
      const std::string& text = node.Scalar();
      if (text.size() > kMaxShown) {
        return fmt::format("'{}...'", text.substr(0, kMaxShown));
      }
      return fmt::format("'{}'", text);
    }
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      break;
  }
  return "no value";
}

// Quoted scalars carry the non-specific tag "!"; plain ones carry "?". A quoted "65001" is a
// string, and accepting it where a number belongs would hide a templating mistake.
bool isQuoted(const YAML::Node& node) { return node.Tag() == "!"; }

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

// Splits "a:b:c" into exactly `parts` decimal fields no larger than `max`.
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

// "127.0.0.1:6443", "[::1]:6443": an IP address (no host names: resolving would make the config's
// meaning depend on DNS at start-up) and a port 1..65535.
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

// Why `text` is not a DNS name as a certificate carries one (RFC 1123 labels: letters, digits and
// '-', not at either end of a label; no empty label, so no leading, trailing or doubled dot; no
// wildcard), or nothing when it is one.
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

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
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
    return fmt::format("unknown key '{}' (did you mean '{}'?)", key, best);
  }
  std::string list;
  for (std::string_view candidate : known) {
    list += list.empty() ? "" : ", ";
    list += candidate;
  }
  return fmt::format("unknown key '{}'; expected one of: {}", key, list);
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

const char* familyName(const bgp::IpAddress& a) { return a.isV4() ? "IPv4" : "IPv6"; }

// Reads one document into a Config, collecting every error it finds. Values that fail validation
// are left at their defaults; the Config is only returned when there were no errors at all.
class ConfigReader {
 public:
  ConfigReader(std::string_view fileName, const ConfigOverrides& overrides)
      : fileName_(fileName), overrides_(overrides) {}

  void error(const YAML::Mark& mark, std::string path, std::string message) {
    ConfigError e;
    e.file = fileName_;
    if (!mark.is_null()) {
      e.line = mark.line + 1;
      e.column = mark.column + 1;
    }
    e.path = std::move(path);
    e.message = std::move(message);
    errors_.push_back(std::move(e));
  }

  void error(const Field& field, std::string message) {
    // yaml-cpp marks an empty value ("holdTime:") at the next token, often on the next line; the
    // key is where the operator has to look.
    bool useKey = field.value.IsNull() && field.key.IsDefined() && field.key.IsScalar();
    error(useKey ? field.key.Mark() : field.value.Mark(), field.path, std::move(message));
  }

  std::vector<ConfigError> takeErrors() {
    std::stable_sort(errors_.begin(), errors_.end(), [](const auto& a, const auto& b) {
      return std::pair(a.line, a.column) < std::pair(b.line, b.column);
    });
    return std::move(errors_);
  }

  bool ok() const { return errors_.empty(); }

  void readDocument(const YAML::Node& root, Config& config);

 private:
  std::optional<Mapping> readMapping(const YAML::Node& node, const std::string& path,
                                     std::initializer_list<std::string_view> known);
  const Field* require(const Mapping& m, std::string_view key);

  std::optional<std::string> readString(const Field& f);
  std::optional<uint64_t> readUnsigned(const Field& f, uint64_t min, uint64_t max);
  std::optional<bool> readBool(const Field& f);
  std::optional<milliseconds> readDuration(const Field& f);
  std::optional<bgp::IpAddress> readAddress(const Field& f);
  std::optional<uint32_t> readAsn(const Field& f);
  std::optional<YAML::Node> readList(const Field& f);

  void readVips(const Field& f, std::vector<Vip>& vips);
  void readRouterId(const Field& f, const std::vector<Vip>& vips, Config& config);
  template <typename Value, typename Make>
  void readColonList(const Field& f, size_t fields, uint64_t maxField, std::string_view expected,
                     std::string_view name, Make make, std::vector<Value>& out);
  void readCommunities(const Field& f, std::vector<Community>& out);
  void readLargeCommunities(const Field& f, std::vector<bgp::LargeCommunity>& out);
  void readPeers(const Field& f, std::optional<uint32_t> localAsn, const std::vector<Vip>& vips,
                 std::vector<Peer>& peers);
  std::optional<Peer> readPeer(const YAML::Node& node, const std::string& path,
                               std::optional<uint32_t> localAsn, const std::vector<Vip>& vips);
  void readHoldAndKeepalive(const Mapping& m, Peer& peer);
  void readListen(const Field& f, Listen& listen);
  void readControl(const Field& f, Control& control);
  void readDrain(const Field& f, Drain& drain);
  void readBfd(const Field& f, Peer& peer);
  void readHealth(const Field& f, Health& health);
  void readMetrics(const Field& f, Metrics& metrics);
  std::optional<std::string> readAbsolutePath(const Field& f, std::string_view what);
  std::optional<milliseconds> readBoundedDuration(const Field& f, milliseconds min,
                                                  milliseconds max);

  void readMode(const Field& f, Config& config);
  void readHandoff(const Field& f, Handoff& handoff);

  std::string fileName_;
  ConfigOverrides overrides_;
  std::vector<ConfigError> errors_;
};

std::optional<Mapping> ConfigReader::readMapping(const YAML::Node& node, const std::string& path,
                                                 std::initializer_list<std::string_view> known) {
  if (!node.IsMap()) {
    error(node.Mark(), path, fmt::format("expected a mapping, got {}", describe(node)));
    return std::nullopt;
  }
  Mapping m{node.Mark(), path, {}};
  for (const auto& entry : node) {
    const YAML::Node& key = entry.first;
    if (!key.IsScalar()) {
      error(key.Mark(), path, fmt::format("keys must be strings, got {}", describe(key)));
      continue;
    }
    const std::string& name = key.Scalar();
    std::string keyPath = joinPath(path, name);
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      error(key.Mark(), keyPath, unknownKeyMessage(name, known));
      continue;
    }
    // yaml-cpp keeps every duplicate in the node, and lookups would silently pick one of them.
    if (const Field* first = m.find(name)) {
      error(key.Mark(), keyPath,
            fmt::format("duplicate key '{}' (first set on line {})", name,
                        first->key.Mark().line + 1));
      continue;
    }
    m.fields.emplace_back(name, Field{key, entry.second, keyPath});
  }
  return m;
}

const Field* ConfigReader::require(const Mapping& m, std::string_view key) {
  const Field* f = m.find(key);
  if (f == nullptr) {
    error(m.mark, joinPath(m.path, key), fmt::format("required key '{}' is missing", key));
  }
  return f;
}

std::optional<std::string> ConfigReader::readString(const Field& f) {
  if (!f.value.IsScalar()) {
    error(f, fmt::format("expected a string, got {}", describe(f.value)));
    return std::nullopt;
  }
  return f.value.Scalar();
}

std::optional<uint64_t> ConfigReader::readUnsigned(const Field& f, uint64_t min, uint64_t max) {
  if (!f.value.IsScalar() || isQuoted(f.value)) {
    error(f, fmt::format("expected an integer, got {}{}", isQuoted(f.value) ? "the string " : "",
                         describe(f.value)));
    return std::nullopt;
  }
  std::string_view text = f.value.Scalar();
  bool negative = !text.empty() && text[0] == '-';
  std::string_view digits = negative ? text.substr(1) : text;
  if (!isAllDigits(digits)) {
    error(f, fmt::format("expected an integer, got {}", describe(f.value)));
    return std::nullopt;
  }
  auto value = parseDecimal(digits);
  if (negative || !value || *value < min || *value > max) {
    error(f, fmt::format("must be between {} and {}, got {}", min, max, text));
    return std::nullopt;
  }
  return value;
}

std::optional<bool> ConfigReader::readBool(const Field& f) {
  if (f.value.IsScalar() && !isQuoted(f.value)) {
    const std::string& text = f.value.Scalar();
    if (text == "true" || text == "True" || text == "TRUE") {
      return true;
    }
    if (text == "false" || text == "False" || text == "FALSE") {
      return false;
    }
  }
  error(f, fmt::format("expected true or false, got {}{}", isQuoted(f.value) ? "the string " : "",
                       describe(f.value)));
  return std::nullopt;
}

std::optional<milliseconds> ConfigReader::readDuration(const Field& f) {
  if (!f.value.IsScalar()) {
    error(f, fmt::format("expected a duration such as 9s or 300ms, got {}", describe(f.value)));
    return std::nullopt;
  }
  auto d = parseDuration(f.value.Scalar());
  if (!d) {
    const std::string& text = f.value.Scalar();
    if (isAllDigits(text)) {
      error(f, fmt::format("duration '{}' needs a unit: write e.g. {}s or {}ms", text, text, text));
    } else {
      error(f, fmt::format("'{}' is not a duration: write e.g. 9s, 300ms or 1m30s", text));
    }
    return std::nullopt;
  }
  return d;
}

std::optional<bgp::IpAddress> ConfigReader::readAddress(const Field& f) {
  if (!f.value.IsScalar()) {
    error(f, fmt::format("expected an IP address, got {}", describe(f.value)));
    return std::nullopt;
  }
  auto address = bgp::IpAddress::parse(f.value.Scalar());
  if (!address) {
    error(f, fmt::format("'{}' is not an IP address", f.value.Scalar()));
  }
  return address;
}

std::optional<uint32_t> ConfigReader::readAsn(const Field& f) {
  auto asn = readUnsigned(f, 1, kMaxAsn);
  if (!asn) {
    return std::nullopt;
  }
  if (*asn == bgp::kAsTrans) {
    error(f, "AS 23456 is AS_TRANS (RFC 6793), a placeholder that is never a real ASN");
    return std::nullopt;
  }
  return static_cast<uint32_t>(*asn);
}

std::optional<YAML::Node> ConfigReader::readList(const Field& f) {
  if (!f.value.IsSequence()) {
    error(f, fmt::format("expected a list, got {}", describe(f.value)));
    return std::nullopt;
  }
  return f.value;
}

void ConfigReader::readDocument(const YAML::Node& root, Config& config) {
  if (root.IsNull()) {
    error(root.Mark(), "", "the document is empty; expected a SpeakerConfiguration mapping");
    return;
  }
  if (!root.IsMap()) {
    error(root.Mark(), "",
          fmt::format("expected a mapping at the top level, got {}", describe(root)));
    return;
  }
  auto m = readMapping(root, "",
                       {"apiVersion", "kind", "routerId", "localAsn", "vips", "communities",
                        "largeCommunities", "peers", "listen", "control", "drain",
                        "allowNonLocalRouterId", "health", "metrics", "mode", "handoff"});
  if (const Field* f = require(*m, "apiVersion")) {
    auto text = readString(*f);
    if (text && *text != kApiVersion) {
      error(*f, fmt::format("expected '{}', got '{}'", kApiVersion, *text));
    } else if (text) {
      config.apiVersion = *text;
    }
  }
  if (const Field* f = require(*m, "kind")) {
    auto text = readString(*f);
    if (text && *text != kKind) {
      error(*f, fmt::format("expected '{}', got '{}'", kKind, *text));
    } else if (text) {
      config.kind = *text;
    }
  }
  std::optional<uint32_t> localAsn;
  if (const Field* f = require(*m, "localAsn")) {
    localAsn = readAsn(*f);
    config.localAsn = localAsn.value_or(0);
  }
  if (const Field* f = require(*m, "vips")) {
    readVips(*f, config.vips);
  }
  if (overrides_.routerId) {
    // Given by the downward API (status.hostIP): the file must not also carry one.
    if (const Field* f = m->find("routerId")) {
      error(*f, fmt::format("routerId is set both here and by --router-id {}; each field has "
                            "exactly one source, so remove it from the file",
                            *overrides_.routerId));
    } else {
      Field flag{YAML::Node("routerId"), YAML::Node(*overrides_.routerId), "--router-id"};
      readRouterId(flag, config.vips, config);
    }
  } else if (const Field* f = require(*m, "routerId")) {
    readRouterId(*f, config.vips, config);
  }
  if (const Field* f = m->find("communities")) {
    readCommunities(*f, config.communities);
  }
  if (const Field* f = m->find("largeCommunities")) {
    readLargeCommunities(*f, config.largeCommunities);
  }
  if (const Field* f = require(*m, "peers")) {
    readPeers(*f, localAsn, config.vips, config.peers);
  }
  if (const Field* f = m->find("listen")) {
    readListen(*f, config.listen);
  }
  if (const Field* f = m->find("control")) {
    readControl(*f, config.control);
  }
  if (const Field* f = m->find("drain")) {
    readDrain(*f, config.drain);
  }
  if (const Field* f = require(*m, "health")) {
    readHealth(*f, config.health);
  }
  if (const Field* f = m->find("metrics")) {
    readMetrics(*f, config.metrics);
  }
  if (const Field* f = m->find("allowNonLocalRouterId")) {
    if (auto allow = readBool(*f)) {
      config.allowNonLocalRouterId = *allow;
    }
  }
  if (const Field* f = m->find("mode")) {
    readMode(*f, config);
  }
  if (const Field* f = m->find("handoff")) {
    if (config.mode == Mode::Standalone && !m->find("mode")) {
      error(*f, "handoff applies only with mode static-pod or daemonset; set mode or remove "
                "handoff");
    } else if (config.mode == Mode::Standalone) {
      error(*f, "handoff applies only with mode static-pod or daemonset, but mode is "
                "standalone");
    } else {
      readHandoff(*f, config.handoff);
    }
  }
}

void ConfigReader::readMode(const Field& f, Config& config) {
  auto text = readString(f);
  if (!text) {
    return;
  }
  if (*text == "standalone") {
    config.mode = Mode::Standalone;
  } else if (*text == "static-pod") {
    config.mode = Mode::StaticPod;
  } else if (*text == "daemonset") {
    config.mode = Mode::DaemonSet;
  } else {
    error(f, fmt::format("unknown mode '{}'; expected standalone, static-pod or daemonset",
                         *text));
  }
}

void ConfigReader::readHandoff(const Field& f, Handoff& handoff) {
  auto m = readMapping(f.value, f.path, {"dir", "restartTime"});
  if (!m) {
    return;
  }
  if (const Field* d = m->find("dir")) {
    if (auto dir = readAbsolutePath(*d, "handoff directory")) {
      handoff.dir = *dir;
    }
  }
  if (const Field* r = m->find("restartTime")) {
    // RFC 4724 carries whole seconds in 12 bits; more than a minute is not "short".
    if (auto t = readBoundedDuration(*r, milliseconds{1000}, milliseconds{60000})) {
      if (t->count() % 1000 != 0) {
        error(*r, fmt::format("the restart time is sent in whole seconds; {} is not",
                              formatDuration(*t)));
      } else {
        handoff.restartTime = *t;
      }
    }
  }
}

void ConfigReader::readVips(const Field& f, std::vector<Vip>& vips) {
  auto list = readList(f);
  if (!list) {
    return;
  }
  if (list->size() == 0) {
    error(f, "at least one VIP is required");
    return;
  }
  for (size_t i = 0; i < list->size(); ++i) {
    std::string path = indexPath(f.path, i);
    auto m = readMapping((*list)[i], path, {"address", "interface", "createInterface", "rebind"});
    if (!m) {
      continue;
    }
    Vip vip;
    bool valid = false;
    if (const Field* a = require(*m, "address")) {
      if (!a->value.IsScalar()) {
        error(*a, fmt::format("expected an address such as 203.0.113.10/32, got {}",
                              describe(a->value)));
      } else if (auto prefix = bgp::Prefix::parse(a->value.Scalar())) {
        const bgp::IpAddress& addr = prefix->address;
        if (!prefix->isHost()) {
          error(*a, fmt::format("a VIP is a single address (/{}), but {} is a covering prefix; "
                                "vipd announces host routes only",
                                prefix->maxLength(), a->value.Scalar()));
        } else if (addr.isZero() || isBroadcast(addr) || isMulticast(addr) || isLoopback(addr) ||
                   addr.isLinkLocalV6()) {
          error(*a, fmt::format("{} is not a routable unicast address", addr.toString()));
        } else {
          valid = true;
          vip.prefix = *prefix;
        }
      } else if (auto bare = bgp::IpAddress::parse(a->value.Scalar())) {
        error(*a, fmt::format("'{}' needs a prefix length: write {}/{}", a->value.Scalar(),
                              bare->toString(), bare->isV4() ? 32 : 128));
      } else {
        error(*a, fmt::format("'{}' is not an address such as 203.0.113.10/32 or "
                              "2001:db8::10/128",
                              a->value.Scalar()));
      }
    }
    bool interfaceValid = true;  // a wrong name is reported once, not again as "on lo"
    if (const Field* n = m->find("interface")) {
      interfaceValid = false;
      if (auto name = readString(*n)) {
        bool bad = name->empty() || name->size() > kMaxInterfaceNameLength || *name == "." ||
                   *name == ".." || std::any_of(name->begin(), name->end(), [](char c) {
                     return c == '/' || c == ':' || c == ' ' || c == '\t' || c == '\n' ||
                            c == '\r' || c == '\v' || c == '\f' || c == '\0';
                   });
        if (bad) {
          error(*n, fmt::format("'{}' is not a valid Linux interface name (1 to {} characters, "
                                "no '/', ':' or whitespace)",
                                *name, kMaxInterfaceNameLength));
        } else {
          vip.interface = *name;
          interfaceValid = true;
        }
      }
    }
    if (const Field* c = m->find("createInterface")) {
      if (auto create = readBool(*c)) {
        vip.createInterface = *create;
        if (*create && interfaceValid && vip.interface == "lo") {
          error(*c, "createInterface makes a dummy interface, but this VIP is on lo; set "
                    "interface to a dummy name such as vip0, or drop createInterface");
        }
      }
    }
    if (const Field* r = m->find("rebind")) {
      if (auto rebind = readBool(*r)) {
        vip.rebind = *rebind;
      }
    }
    if (!valid) {
      continue;
    }
    auto same = std::find_if(vips.begin(), vips.end(),
                             [&](const Vip& v) { return v.prefix == vip.prefix; });
    if (same != vips.end()) {
      error(*m->find("address"), fmt::format("duplicate VIP {}", vip.prefix.toString()));
      continue;
    }
    vips.push_back(std::move(vip));
  }
}

void ConfigReader::readRouterId(const Field& f, const std::vector<Vip>& vips, Config& config) {
  auto id = readAddress(f);
  if (!id) {
    return;
  }
  if (!id->isV4()) {
    error(f, fmt::format("the router ID is a 32-bit BGP identifier written as an IPv4 address; "
                         "{} is IPv6",
                         id->toString()));
    return;
  }
  if (id->isZero() || isBroadcast(*id)) {
    error(f, fmt::format("{} is not a valid BGP identifier (RFC 6286)", id->toString()));
    return;
  }
  for (const Vip& vip : vips) {
    if (vip.prefix.address == *id) {
      // Every node that can hold the VIP would then share one router ID, and peers reject a
      // second session with the same identifier.
      error(f, fmt::format("router ID {} equals VIP {}; use this node's own address",
                           id->toString(), vip.prefix.toString()));
      return;
    }
  }
  config.routerId = *id;
}

// Both community lists: colon-separated numbers, each list without duplicates.
template <typename Value, typename Make>
void ConfigReader::readColonList(const Field& f, size_t fields, uint64_t maxField,
                                 std::string_view expected, std::string_view name, Make make,
                                 std::vector<Value>& out) {
  auto list = readList(f);
  if (!list) {
    return;
  }
  for (size_t i = 0; i < list->size(); ++i) {
    Field item{YAML::Node(), (*list)[i], indexPath(f.path, i)};
    auto text = readString(item);
    if (!text) {
      continue;
    }
    auto parts = parseColonFields(*text, fields, maxField);
    if (!parts) {
      error(item, fmt::format("'{}' is not a {}: write {}", *text, name, expected));
      continue;
    }
    Value value = make(*parts);
    if (std::find(out.begin(), out.end(), value) != out.end()) {
      error(item, fmt::format("duplicate {} {}", name, *text));
      continue;
    }
    out.push_back(value);
  }
}

void ConfigReader::readCommunities(const Field& f, std::vector<Community>& out) {
  readColonList(f, 2, 65535, "ASN:VALUE, each 0 to 65535", "community",
                [](const auto& p) {
                  return Community{static_cast<uint16_t>(p[0]), static_cast<uint16_t>(p[1])};
                },
                out);
}

void ConfigReader::readLargeCommunities(const Field& f, std::vector<bgp::LargeCommunity>& out) {
  readColonList(f, 3, kMaxAsn, "ASN:DATA1:DATA2, each 0 to 4294967295 (RFC 8092)",
                "large community",
                [](const auto& p) {
                  return bgp::LargeCommunity{static_cast<uint32_t>(p[0]),
                                             static_cast<uint32_t>(p[1]),
                                             static_cast<uint32_t>(p[2])};
                },
                out);
}

void ConfigReader::readPeers(const Field& f, std::optional<uint32_t> localAsn,
                             const std::vector<Vip>& vips, std::vector<Peer>& peers) {
  auto list = readList(f);
  if (!list) {
    return;
  }
  if (list->size() == 0) {
    error(f, "at least one peer is required");
    return;
  }
  std::vector<std::pair<bgp::IpAddress, size_t>> seen;
  for (size_t i = 0; i < list->size(); ++i) {
    std::string path = indexPath(f.path, i);
    auto peer = readPeer((*list)[i], path, localAsn, vips);
    if (!peer) {
      continue;
    }
    auto same = std::find_if(seen.begin(), seen.end(),
                             [&](const auto& s) { return s.first == peer->address; });
    if (same != seen.end()) {
      const YAML::Node peerNode = (*list)[i];
      error(peerNode["address"].Mark(), joinPath(path, "address"),
            fmt::format("duplicate peer {} (also {})", peer->address.toString(),
                        indexPath(f.path, same->second)));
      continue;
    }
    seen.emplace_back(peer->address, i);
    peers.push_back(*peer);
  }
}

std::optional<Peer> ConfigReader::readPeer(const YAML::Node& node, const std::string& path,
                                           std::optional<uint32_t> localAsn,
                                           const std::vector<Vip>& vips) {
  auto m = readMapping(node, path,
                       {"address", "asn", "port", "sourceAddress", "holdTime", "keepaliveTime",
                        "connectRetryTime", "openHoldTime", "ebgpMultihop", "nextHopIpv6",
                        "passwordFile", "ttlSecurity", "bfd"});
  if (!m) {
    return std::nullopt;
  }
  size_t errorsBefore = errors_.size();
  Peer peer;
  std::optional<bgp::IpAddress> address;
  if (const Field* f = require(*m, "address")) {
    address = readAddress(*f);
    if (address) {
      if (address->isLinkLocalV6()) {
        error(*f, fmt::format("{} is link-local, which needs an interface scope that vipd does "
                              "not support; use a global address",
                              address->toString()));
        address.reset();
      } else if (address->isZero() || isBroadcast(*address) || isMulticast(*address)) {
        error(*f, fmt::format("{} is not a unicast address", address->toString()));
        address.reset();
      } else {
        peer.address = *address;
      }
    }
  }
  std::optional<uint32_t> asn;
  if (const Field* f = require(*m, "asn")) {
    asn = readAsn(*f);
    peer.asn = asn.value_or(0);
  }
  if (const Field* f = m->find("port")) {
    if (auto port = readUnsigned(*f, 1, 65535)) {
      peer.port = static_cast<uint16_t>(*port);
    }
  }
  if (const Field* f = m->find("sourceAddress")) {
    if (auto source = readAddress(*f)) {
      if (address && source->family != address->family) {
        error(*f, fmt::format("sourceAddress {} is {} but the peer address {} is {}; they must be "
                              "the same family",
                              source->toString(), familyName(*source), address->toString(),
                              familyName(*address)));
      } else if (source->isZero()) {
        error(*f,
              "leave sourceAddress out to let the kernel choose; it cannot be the unspecified "
              "address");
      } else if (source->isLinkLocalV6() || isMulticast(*source) || isBroadcast(*source)) {
        error(*f, fmt::format("{} cannot be a session's source address; use a global unicast "
                              "address",
                              source->toString()));
      } else {
        peer.sourceAddress = *source;
      }
    }
  }
  readHoldAndKeepalive(*m, peer);
  if (const Field* f = m->find("connectRetryTime")) {
    if (auto d = readDuration(*f)) {
      if (*d < kMinConnectRetry || *d > kMaxConnectRetry) {
        error(*f,
              fmt::format("connect retry time {} is out of range; use {} to {}", f->value.Scalar(),
                          formatDuration(kMinConnectRetry), formatDuration(kMaxConnectRetry)));
      } else {
        peer.connectRetryTime = *d;
      }
    }
  }
  if (const Field* f = m->find("openHoldTime")) {
    if (auto d = readBoundedDuration(*f, kMinOpenHoldTime, kMaxOpenHoldTime)) {
      peer.openHoldTime = *d;
    }
  }
  if (const Field* f = m->find("ebgpMultihop")) {
    if (auto hops = readUnsigned(*f, 0, 255)) {
      if (*hops > 0 && asn && localAsn && *asn == *localAsn) {
        error(*f, fmt::format("ebgpMultihop only applies to eBGP; this peer is iBGP (asn {} equals "
                              "localAsn); remove it",
                              *asn));
      } else {
        peer.ebgpMultihop = static_cast<uint8_t>(*hops);
      }
    }
  }
  bool nextHopIpv6Given = false;
  if (const Field* f = m->find("nextHopIpv6")) {
    nextHopIpv6Given = true;
    if (auto nh = readAddress(*f)) {
      if (!nh->isV6()) {
        error(*f, fmt::format("nextHopIpv6 must be an IPv6 address, got {}", nh->toString()));
      } else if (nh->isZero() || nh->isLinkLocalV6() || isMulticast(*nh) || isLoopback(*nh)) {
        error(*f, fmt::format("{} cannot be a next hop; use a global IPv6 address of this node",
                              nh->toString()));
      } else {
        peer.nextHopIpv6 = *nh;
      }
    }
  }
  if (const Field* f = m->find("passwordFile")) {
    // The file itself (its presence and mode) is checked when the daemon starts: the config is
    // validated on machines, such as a render host, that do not hold the key.
    peer.passwordFile = readAbsolutePath(*f, "TCP-MD5 password file");
  }
  if (const Field* f = m->find("ttlSecurity")) {
    if (auto on = readBool(*f)) {
      // GTSM accepts only TTL 255 on arrival, which only a sender on the link can meet: each
      // router hop lowers the TTL by one. ebgpMultihop 1 means the link too.
      if (*on && peer.ebgpMultihop > 1) {
        error(*f, fmt::format("ttlSecurity (GTSM, RFC 5082) needs the peer on the link, but this "
                              "peer is {} hops away (ebgpMultihop {}); each router hop lowers the "
                              "TTL below the 255 GTSM requires, so the session could never come "
                              "up: remove ebgpMultihop or turn ttlSecurity off",
                              peer.ebgpMultihop, peer.ebgpMultihop));
      } else {
        peer.ttlSecurity = *on;
      }
    }
  }
  if (const Field* f = m->find("bfd")) {
    readBfd(*f, peer);
  }
  // RFC 4760/2545: every announced route needs a next hop of its own family. An IPv6 session
  // supplies its own local address for /128 VIPs; an IPv4 session supplies one for /32 VIPs.
  if (address) {
    auto v6Vip = std::find_if(vips.begin(), vips.end(),
                              [](const Vip& v) { return v.prefix.address.isV6(); });
    auto v4Vip = std::find_if(vips.begin(), vips.end(),
                              [](const Vip& v) { return v.prefix.address.isV4(); });
    if (address->isV4() && v6Vip != vips.end() && !nextHopIpv6Given) {
      error(m->mark, path,
            fmt::format("VIP {} needs an IPv6 next hop; this IPv4 session has none: set "
                        "nextHopIpv6",
                        v6Vip->prefix.toString()));
    }
    if (address->isV6() && v4Vip != vips.end()) {
      error(m->mark, path,
            fmt::format("IPv4 VIP {} over an IPv6 session needs an IPv4 next hop, which vipd "
                        "cannot supply; use an IPv4 peer address",
                        v4Vip->prefix.toString()));
    }
  }
  if (errors_.size() != errorsBefore) {
    return std::nullopt;
  }
  return peer;
}

void ConfigReader::readHoldAndKeepalive(const Mapping& m, Peer& peer) {
  bool holdValid = true;
  if (const Field* f = m.find("holdTime")) {
    holdValid = false;
    if (auto d = readDuration(*f)) {
      const std::string& text = f->value.Scalar();
      if (*d % seconds{1} != milliseconds{0}) {
        error(*f, fmt::format("hold time must be whole seconds (it is a count of seconds in the "
                              "OPEN message), got {}",
                              text));
      } else if (*d > milliseconds{0} && *d < kMinHoldTime) {
        error(*f, fmt::format("hold time {} is not allowed; use 0 (no keepalives) or at least 3s "
                              "(RFC 4271 section 4.2 forbids 1 and 2 seconds)",
                              text));
      } else if (*d > kMaxHoldTime) {
        error(*f, fmt::format("hold time {} is too long; the most BGP can carry is {}", text,
                              formatDuration(kMaxHoldTime)));
      } else {
        peer.holdTime = *d;
        holdValid = true;
      }
    }
  }
  const Field* f = m.find("keepaliveTime");
  if (f == nullptr) {
    if (peer.holdTime == milliseconds{0}) {
      peer.keepaliveTime = milliseconds{0};
    } else {
      peer.keepaliveTime = std::max<milliseconds>(
          seconds{1}, std::chrono::duration_cast<seconds>(peer.holdTime / 3));
    }
    return;
  }
  auto d = readDuration(*f);
  if (!d) {
    return;
  }
  const std::string& text = f->value.Scalar();
  if (*d % seconds{1} != milliseconds{0}) {
    error(*f, fmt::format("keepalive time must be whole seconds, got {}", text));
    return;
  }
  if (!holdValid) {
    // Comparing with a hold time that is already reported as wrong would only add noise.
    return;
  }
  if (peer.holdTime == milliseconds{0}) {
    if (*d != milliseconds{0}) {
      error(*f, fmt::format("keepalive time must be 0 when holdTime is 0: no keepalives are sent "
                            "(RFC 4271 section 4.4), got {}",
                            text));
      return;
    }
  } else if (*d == milliseconds{0}) {
    error(*f, fmt::format("keepalive time 0 would let the peer's hold timer ({}) expire; use at "
                          "least 1s, or set holdTime to 0 as well",
                          formatDuration(peer.holdTime)));
    return;
  } else if (*d >= peer.holdTime) {
    error(*f, fmt::format("keepalive time {} must be less than the hold time {} (one third is "
                          "usual)",
                          text, formatDuration(peer.holdTime)));
    return;
  }
  peer.keepaliveTime = *d;
}

void ConfigReader::readListen(const Field& f, Listen& listen) {
  auto m = readMapping(f.value, f.path, {"enabled", "address", "port"});
  if (!m) {
    return;
  }
  if (const Field* e = m->find("enabled")) {
    if (auto enabled = readBool(*e)) {
      listen.enabled = *enabled;
    }
  }
  if (const Field* a = m->find("address")) {
    if (auto address = readAddress(*a)) {
      if (isMulticast(*address) || isBroadcast(*address) || address->isLinkLocalV6()) {
        error(*a, fmt::format("cannot listen on {}; use a local unicast address, 0.0.0.0 or ::",
                              address->toString()));
      } else {
        listen.address = *address;
      }
    }
  }
  if (const Field* p = m->find("port")) {
    if (auto port = readUnsigned(*p, 1, 65535)) {
      listen.port = static_cast<uint16_t>(*port);
    }
  }
}

void ConfigReader::readControl(const Field& f, Control& control) {
  auto m = readMapping(f.value, f.path, {"socket", "stateDir", "group"});
  if (!m) {
    return;
  }
  if (const Field* s = m->find("socket")) {
    if (auto socket = readString(*s)) {
      if (socket->empty() || (*socket)[0] != '/') {
        error(*s, fmt::format("the control socket must be an absolute path, got '{}'", *socket));
      } else if (socket->size() > kMaxSocketPathLength) {
        error(*s, fmt::format("the control socket path is {} bytes; a Unix socket path holds at "
                              "most {}",
                              socket->size(), kMaxSocketPathLength));
      } else if (socket->find('\0') != std::string::npos) {
        error(*s, "the control socket path contains a NUL byte");
      } else {
        control.socket = *socket;
      }
    }
  }
  if (const Field* d = m->find("stateDir")) {
    if (auto dir = readAbsolutePath(*d, "state directory")) {
      control.stateDir = *dir;
    }
  }
  if (const Field* g = m->find("group")) {
    if (auto group = readString(*g)) {
      if (group->empty()) {
        error(*g, "the control group name is empty");
      } else {
        control.group = *group;
      }
    }
  }
}

std::optional<milliseconds> ConfigReader::readBoundedDuration(const Field& f, milliseconds min,
                                                              milliseconds max) {
  auto d = readDuration(f);
  if (d && (*d < min || *d > max)) {
    error(f, fmt::format("{} is out of range; use {} to {}", formatDuration(*d),
                         formatDuration(min), formatDuration(max)));
    return std::nullopt;
  }
  return d;
}

std::optional<std::string> ConfigReader::readAbsolutePath(const Field& f, std::string_view what) {
  auto path = readString(f);
  if (path && (path->empty() || (*path)[0] != '/')) {
    error(f, fmt::format("the {} must be an absolute path, got '{}'", what, *path));
    return std::nullopt;
  }
  return path;
}

void ConfigReader::readBfd(const Field& f, Peer& peer) {
  auto m = readMapping(f.value, f.path, {"enabled", "minTx", "minRx", "multiplier", "multihop"});
  if (!m) {
    return;
  }
  Bfd& bfd = peer.bfd;
  // Written out, a bfd block means BFD is wanted: `enabled: false` turns it off explicitly.
  bfd.enabled = true;
  if (const Field* e = m->find("enabled")) {
    if (auto enabled = readBool(*e)) {
      bfd.enabled = *enabled;
    }
  }
  if (const Field* t = m->find("minTx")) {
    if (auto d = readBoundedDuration(*t, kMinBfdInterval, kMaxBfdInterval)) {
      bfd.minTx = *d;
    }
  }
  if (const Field* r = m->find("minRx")) {
    if (auto d = readBoundedDuration(*r, kMinBfdInterval, kMaxBfdInterval)) {
      bfd.minRx = *d;
    }
  }
  if (const Field* x = m->find("multiplier")) {
    if (auto mult = readUnsigned(*x, 1, 255)) {
      bfd.multiplier = static_cast<uint8_t>(*mult);
    }
  }
  const Field* hop = m->find("multihop");
  if (hop) {
    if (auto multihop = readBool(*hop)) {
      bfd.multihop = *multihop;
    }
  }
  // RFC 5881 single hop needs the peer on the link (TTL 255 both ways); a session configured
  // as multi-hop eBGP is not, and single-hop packets would be dropped at the first router.
  if (bfd.enabled && !bfd.multihop && peer.ebgpMultihop > 1) {
    error(hop ? *hop : f,
          fmt::format("this peer is {} hops away (ebgpMultihop {}) but BFD is single hop; set "
                      "bfd.multihop: true (RFC 5883, UDP 4784)",
                      peer.ebgpMultihop, peer.ebgpMultihop));
  }
}

void ConfigReader::readDrain(const Field& f, Drain& drain) {
  auto m = readMapping(f.value, f.path, {"gracefulShutdownTime", "timeout", "unbindDelay"});
  if (!m) {
    return;
  }
  if (const Field* d = m->find("gracefulShutdownTime")) {
    if (auto t = readBoundedDuration(*d, milliseconds{0}, kMaxDrainStep)) {
      drain.gracefulShutdownTime = *t;
    }
  }
  if (const Field* d = m->find("timeout")) {
    if (auto t = readBoundedDuration(*d, milliseconds{100}, kMaxDrainStep)) {
      drain.timeout = *t;
    }
  }
  if (const Field* d = m->find("unbindDelay")) {
    if (auto t = readBoundedDuration(*d, milliseconds{0}, kMaxDrainStep)) {
      drain.unbindDelay = *t;
    }
  }
}

void ConfigReader::readHealth(const Field& f, Health& health) {
  auto m = readMapping(f.value, f.path,
                       {"type", "url", "serverName", "caFile", "certFile", "keyFile", "address",
                        "interval", "timeout", "rise", "fall"});
  if (!m) {
    return;
  }
  if (const Field* t = require(*m, "type")) {
    auto type = readString(*t);
    if (type == "apiserver") {
      health.type = Health::Type::Apiserver;
    } else if (type == "tcp") {
      health.type = Health::Type::Tcp;
    } else if (type == "none") {
      health.type = Health::Type::None;
    } else if (type) {
      error(*t, fmt::format("'{}' is not a health check type; use apiserver, tcp or none (none "
                            "announces without any check)",
                            *type));
    }
  }
  if (const Field* u = m->find("url")) {
    if (auto url = readString(*u)) {
      if (!url->starts_with("https://") || url->size() <= 8) {
        error(*u, fmt::format("'{}' is not an https:// URL; the apiserver check always verifies "
                              "TLS",
                              *url));
      } else {
        health.url = *url;
      }
    }
  }
  // Like the other apiserver-only keys it is checked whatever the type (a later switch to
  // apiserver then finds it valid) and used only by the apiserver check.
  if (const Field* n = m->find("serverName")) {
    if (auto name = readString(*n)) {
      if (bgp::IpAddress::parse(*name)) {
        error(*n, fmt::format("'{}' is an IP address; serverName is the DNS name the apiserver's "
                              "certificate must carry, such as {}",
                              *name, kDefaultApiserverServerName));
      } else if (auto problem = dnsNameProblem(*name)) {
        error(*n, fmt::format("{} is not a DNS name: {}", describe(n->value), *problem));
      } else {
        health.serverName = *name;
      }
    }
  }
  const Field* ca = m->find("caFile");
  if (ca) {
    if (auto path = readAbsolutePath(*ca, "CA file")) {
      health.caFile = *path;
    }
  } else if (health.type == Health::Type::Apiserver) {
    require(*m, "caFile");  // reports it missing: an unverified apiserver answer proves nothing
  }
  const Field* cert = m->find("certFile");
  const Field* key = m->find("keyFile");
  if (cert) {
    health.certFile = readAbsolutePath(*cert, "client certificate");
  }
  if (key) {
    health.keyFile = readAbsolutePath(*key, "client key");
  }
  if ((cert == nullptr) != (key == nullptr)) {
    error(cert ? *cert : *key, "certFile and keyFile go together: set both or neither");
  }
  if (const Field* a = m->find("address")) {
    if (auto address = readString(*a)) {
      if (!parseAddressPort(*address)) {
        error(*a, fmt::format("'{}' is not an address:port such as 127.0.0.1:6443 or "
                              "[::1]:6443",
                              *address));
      } else {
        health.address = *address;
      }
    }
  }
  // Comparing with a value already reported as wrong (and left at its default) would only add a
  // misleading second error.
  bool timingValid = true;
  if (const Field* i = m->find("interval")) {
    if (auto d = readBoundedDuration(*i, milliseconds{100}, milliseconds{60000})) {
      health.interval = *d;
    } else {
      timingValid = false;
    }
  }
  if (const Field* t = m->find("timeout")) {
    if (auto d = readBoundedDuration(*t, milliseconds{10}, milliseconds{60000})) {
      health.timeout = *d;
    } else {
      timingValid = false;
    }
  }
  if (timingValid && health.timeout > health.interval) {
    error(*m->find(m->find("timeout") ? "timeout" : "interval"),
          fmt::format("timeout {} is longer than interval {}; checks would overlap",
                      formatDuration(health.timeout), formatDuration(health.interval)));
  }
  if (const Field* r = m->find("rise")) {
    if (auto n = readUnsigned(*r, 1, 100)) {
      health.rise = static_cast<uint32_t>(*n);
    }
  }
  if (const Field* fl = m->find("fall")) {
    if (auto n = readUnsigned(*fl, 1, 100)) {
      health.fall = static_cast<uint32_t>(*n);
    }
  }
}

void ConfigReader::readMetrics(const Field& f, Metrics& metrics) {
  auto m = readMapping(f.value, f.path, {"listen"});
  if (!m) {
    return;
  }
  if (const Field* l = m->find("listen")) {
    auto text = readString(*l);
    if (!text) {
      return;
    }
    auto addressPort = parseAddressPort(*text);
    if (!addressPort) {
      error(*l, fmt::format("'{}' is not an address:port such as 127.0.0.1:9472", *text));
      return;
    }
    metrics.address = addressPort->first;
    metrics.port = addressPort->second;
  }
}

}  // namespace

std::string ConfigError::toString() const {
  std::string out = file;
  if (line > 0) {
    out += fmt::format(":{}:{}", line, column);
  }
  out += ": ";
  if (!path.empty()) {
    out += path;
    out += ": ";
  }
  out += message;
  return out;
}

std::string_view modeName(Mode mode) {
  switch (mode) {
    case Mode::Standalone:
      return "standalone";
    case Mode::StaticPod:
      return "static-pod";
    case Mode::DaemonSet:
      return "daemonset";
  }
  return "unknown";
}

Result<Config> parseConfig(std::string_view yamlText, std::string_view fileName,
                           const ConfigOverrides& overrides) {
  ConfigReader reader(fileName, overrides);
  try {
    std::vector<YAML::Node> documents = loadAllDocuments(yamlText);
    if (documents.empty()) {
      reader.error(YAML::Mark(), "", "the file is empty; expected a SpeakerConfiguration mapping");
      return tl::unexpected(reader.takeErrors());
    }
    if (documents.size() > 1) {
      reader.error(
          documents[1].Mark(), "",
          fmt::format("the file holds {} YAML documents; expected exactly one", documents.size()));
    }
    Config config;
    reader.readDocument(documents[0], config);
    if (!reader.ok()) {
      return tl::unexpected(reader.takeErrors());
    }
    return config;
  } catch (const YAML::Exception& e) {
    // Validation only reads nodes (no as<>, no non-const operator[]), so in practice this is a
    // syntax error from LoadAll(), found before any validation ran.
    reader.error(e.mark, "", fmt::format("YAML syntax error: {}", e.msg));
  } catch (const std::exception& e) {
    reader.error(YAML::Mark::null_mark(), "", fmt::format("cannot parse: {}", e.what()));
  }
  return tl::unexpected(reader.takeErrors());
}

Result<Config> loadConfigFile(const std::string& path, const ConfigOverrides& overrides) {
  auto fail = [&](std::string message) -> Result<Config> {
    return tl::unexpected(std::vector<ConfigError>{{path, 0, 0, "", std::move(message)}});
  };
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                       &std::fclose);
  if (!file) {
    return fail(fmt::format("cannot open the config file: {}", std::strerror(errno)));
  }
  std::string text;
  char buffer[8192];
  while (true) {
    size_t n = std::fread(buffer, 1, sizeof buffer, file.get());
    text.append(buffer, n);
    if (text.size() > kMaxFileSize) {
      return fail(fmt::format("the config file is larger than {} MiB; is this the right file?",
                              kMaxFileSize >> 20));
    }
    if (n < sizeof buffer) {
      if (std::ferror(file.get())) {
        return fail(fmt::format("cannot read the config file: {}", std::strerror(errno)));
      }
      break;
    }
  }
  return parseConfig(text, path, overrides);
}

}  // namespace vipd::config
