// The YAML field readers every vipd document is read with: a mapping checked against its known
// keys (an unknown key gets the nearest known one suggested), required keys, strings, integers,
// booleans, durations, addresses, ASNs, lists and absolute paths, each refused with file:line:
// column, the key's path and the same words wherever it appears. Pure: yaml-cpp nodes in,
// ConfigErrors out; a document reader derives from FieldReader and adds its own sections.
#pragma once

#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bgp/ip_address.h"
#include "config/layers.h"
#include "config/parser.h"

namespace vipd::config {

// The largest 4-octet AS number (RFC 6793); also the largest large-community field (RFC 8092).
inline constexpr uint32_t kMaxAsn = 4294967295u;

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

// Key paths as ConfigError::path spells them: joinPath("peers[1]", "holdTime") is
// "peers[1].holdTime" (just the key at the top level), indexPath("peers", 1) is "peers[1]".
std::string joinPath(const std::string& path, std::string_view key);
std::string indexPath(const std::string& path, size_t index);

// What the operator wrote, for "expected X, got Y" messages: "a mapping", "a list", "no value",
// or the scalar quoted (cut at 40 characters).
std::string describe(const YAML::Node& node);

// Error collection and the primitive readers every vipd document shares: the speaker's config
// (ConfigReader, reader.h), the probe's (probe_config.cc) and the instance metadata of
// `vipd render` (bootstrap/instance_metadata.cc), so all three refuse a value in the same words.
//
// Errors are kept in the order they are found and stable-sorted by position in takeErrors(), so
// two errors at the same position (a key missing from one mapping, a YAML alias used twice) keep
// the order the readers found them in: the readers read keys in a fixed order.
class FieldReader {
 public:
  // `origins`, when the document was merged from two files (layers.h), labels each error
  // with the file its key came from; errors go to `fileName` otherwise. Not owned.
  explicit FieldReader(std::string_view fileName, const FieldOrigins* origins = nullptr)
      : fileName_(fileName), origins_(origins) {}

  // Records an error at `mark` (1-based in the ConfigError; a null mark gives line 0).
  void error(const YAML::Mark& mark, std::string path, std::string message);
  // Records an error about `field`: at its value, or at its key when the value is empty.
  void error(const Field& field, std::string message);

  // Every error recorded so far, ordered by position.
  std::vector<ConfigError> takeErrors();

  bool ok() const { return errors_.empty(); }

 protected:
  // Each reports its own error and returns nothing on one.
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
  std::optional<std::string> readAbsolutePath(const Field& f, std::string_view what);
  std::optional<milliseconds> readBoundedDuration(const Field& f, milliseconds min,
                                                  milliseconds max);

  std::string fileName_;
  const FieldOrigins* origins_;
  std::vector<ConfigError> errors_;
};

}  // namespace vipd::config
