// FieldReader (field_reader.h): error collection and the primitive readers. Every section reader
// of every vipd document is built from these, so each kind of value is refused with the same
// words wherever it appears.
#include "config/field_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "config/value_rules.h"

namespace vipd::config {

using internal::isAllDigits;
using internal::parseDecimal;
using internal::shortKey;
using internal::unknownKeyMessage;

namespace {

// Quoted scalars carry the non-specific tag "!"; plain ones carry "?". A quoted "65001" is a
// string, and accepting it where a number belongs would hide a templating mistake.
bool isQuoted(const YAML::Node& node) { return node.Tag() == "!"; }

}  // namespace

std::string joinPath(const std::string& path, std::string_view key) {
  if (path.empty()) {
    return std::string(key);
  }
  return fmt::format("{}.{}", path, key);
}

std::string indexPath(const std::string& path, size_t index) {
  return fmt::format("{}[{}]", path, index);
}

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

void FieldReader::error(const YAML::Mark& mark, std::string path, std::string message) {
  ConfigError e;
  e.file = origins_ ? origins_->blame(path, fileName_) : fileName_;
  if (!mark.is_null()) {
    e.line = mark.line + 1;
    e.column = mark.column + 1;
  }
  e.path = std::move(path);
  e.message = std::move(message);
  errors_.push_back(std::move(e));
}

void FieldReader::error(const Field& field, std::string message) {
  // yaml-cpp marks an empty value ("holdTime:") at the next token, often on the next line; the
  // key is where the operator has to look.
  bool useKey = field.value.IsNull() && field.key.IsDefined() && field.key.IsScalar();
  error(useKey ? field.key.Mark() : field.value.Mark(), field.path, std::move(message));
}

std::vector<ConfigError> FieldReader::takeErrors() {
  std::stable_sort(errors_.begin(), errors_.end(), [](const auto& a, const auto& b) {
    return std::pair(a.line, a.column) < std::pair(b.line, b.column);
  });
  // A wrong peerDefaults value is read once per peer: report it once.
  auto same = [](const ConfigError& a, const ConfigError& b) {
    return std::tie(a.file, a.line, a.column, a.path, a.message) ==
           std::tie(b.file, b.line, b.column, b.path, b.message);
  };
  errors_.erase(std::unique(errors_.begin(), errors_.end(), same), errors_.end());
  return std::move(errors_);
}

std::optional<Mapping> FieldReader::readMapping(const YAML::Node& node, const std::string& path,
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
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      error(key.Mark(), joinPath(path, shortKey(name)), unknownKeyMessage(name, known));
      continue;
    }
    std::string keyPath = joinPath(path, name);
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

const Field* FieldReader::require(const Mapping& m, std::string_view key) {
  const Field* f = m.find(key);
  if (f == nullptr) {
    error(m.mark, joinPath(m.path, key), fmt::format("required key '{}' is missing{}", key,
                      origins_ ? " from both the config file and the node file" : ""));
  }
  return f;
}

std::optional<std::string> FieldReader::readString(const Field& f) {
  if (!f.value.IsScalar()) {
    error(f, fmt::format("expected a string, got {}", describe(f.value)));
    return std::nullopt;
  }
  return f.value.Scalar();
}

std::optional<uint64_t> FieldReader::readUnsigned(const Field& f, uint64_t min, uint64_t max) {
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

std::optional<bool> FieldReader::readBool(const Field& f) {
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

std::optional<milliseconds> FieldReader::readDuration(const Field& f) {
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

std::optional<bgp::IpAddress> FieldReader::readAddress(const Field& f) {
  if (!f.value.IsScalar()) {
    error(f, fmt::format("expected an IP address, got {}", describe(f.value)));
    return std::nullopt;
  }
  const std::string& text = f.value.Scalar();
  auto address = bgp::IpAddress::parse(text);
  if (!address) {
    if (auto prefix = bgp::Prefix::parse(text)) {
      error(f, fmt::format("'{}' has a prefix length; write the address alone: {}", text,
                           prefix->address.toString()));
    } else {
      error(f, fmt::format("'{}' is not an IP address", text));
    }
  }
  return address;
}

std::optional<uint32_t> FieldReader::readAsn(const Field& f) {
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

std::optional<YAML::Node> FieldReader::readList(const Field& f) {
  if (!f.value.IsSequence()) {
    error(f, fmt::format("expected a list, got {}", describe(f.value)));
    return std::nullopt;
  }
  return f.value;
}

std::optional<milliseconds> FieldReader::readBoundedDuration(const Field& f, milliseconds min,
                                                              milliseconds max) {
  auto d = readDuration(f);
  if (d && (*d < min || *d > max)) {
    error(f, fmt::format("{} is out of range; use {} to {}", formatDuration(*d),
                         formatDuration(min), formatDuration(max)));
    return std::nullopt;
  }
  return d;
}

std::optional<std::string> FieldReader::readAbsolutePath(const Field& f, std::string_view what) {
  auto path = readString(f);
  if (path && (path->empty() || (*path)[0] != '/')) {
    error(f, fmt::format("the {} must be an absolute path, got '{}'", what, *path));
    return std::nullopt;
  }
  return path;
}

}  // namespace vipd::config
