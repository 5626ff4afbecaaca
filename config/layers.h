// A config read from two layers (issue 18): the cluster file and the node file.
//
// The DaemonSet's ConfigMap is the same on every node, so it can only hold cluster-wide policy
// (VIPs, timers, the health gate, communities, drain). What differs per node or per rack (router
// ID, local AS, peers, source addresses, password files) is boot metadata: `vipd render` writes
// it at the node's first boot into the node file (kind NodeConfiguration, by default
// /etc/vipd/node.yaml), which the DaemonSet mounts from the host. The effective config is the two
// merged, key by key.
//
// Exactly one layer is authoritative for each field: a key set in both files is an error naming
// both files and the key, never a precedence rule. Mappings (health, drain, metrics ...) merge
// key by key, so the node file may set metrics.listen while the cluster file sets the rest of
// metrics; a list (vips, peers, communities) is one field and comes whole from one file.
//
// Pure like parser.h, except loadConfig(), which reads the files.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "config/parser.h"

namespace vipd::config {

inline constexpr std::string_view kNodeConfigKind = "NodeConfiguration";
// Where `vipd render` writes the node file unless told otherwise, and where the DaemonSet reads
// it (hostPath).
inline constexpr std::string_view kDefaultNodeConfigPath = "/etc/vipd/node.yaml";

// Which file set each key of the effective config. Paths are in ConfigError::path's spelling,
// lists by index: "routerId", "peers[1].holdTime", "metrics.listen".
class FieldOrigins {
 public:
  // `path` is set by `source`. A mapping found in both files is recorded for both.
  void record(const std::string& path, const std::string& source);
  // The file that set exactly `path`; nullopt when no file sets it (the default applies) or when
  // it is a mapping both files contribute to.
  std::optional<std::string> sourceOf(std::string_view path) const;
  // The file an error at `path` belongs to: the source of the longest prefix of `path` (itself
  // included) that one file alone set; `fallback` when there is none (a missing key, an error
  // about the document as a whole).
  std::string blame(std::string_view path, std::string_view fallback) const;

 private:
  // An empty source: both files set this mapping.
  std::map<std::string, std::string, std::less<>> sources_;
};

struct ConfigFile {
  std::string_view text;
  std::string name;  // labels errors and origins: the path as the operator gave it
};

struct LoadedConfig {
  Config config;
  FieldOrigins origins;
};

// Parses `cluster` (kind SpeakerConfiguration) and, when given, `node` (kind NodeConfiguration,
// the same keys otherwise), merges them and validates the result with the one schema. Every
// error found in either file is returned, each labelled with the file it is in.
[[nodiscard]] Result<LoadedConfig> parseConfigLayers(const ConfigFile& cluster,
                                                     const std::optional<ConfigFile>& node,
                                                     const ConfigOverrides& overrides = {});

// What the daemon, `vipd validate` and `vipd config` are given on the command line.
struct ConfigSources {
  std::string configPath;                     // --config
  std::optional<std::string> nodeConfigPath;  // --node-config
  ConfigOverrides overrides;                  // --router-id
};

// Reads the files and calls parseConfigLayers(). An unreadable file is one error without position
// that carries the OS's reason, as in loadConfigFile().
[[nodiscard]] Result<LoadedConfig> loadConfig(const ConfigSources& sources);

// The effective config one line per field, "path: value  # source", where the source is the file
// that set the field, "--router-id" or "default". Peers and VIPs are named by address, as
// diffConfig() names them. For `vipd config --show`.
std::string showConfig(const LoadedConfig& loaded);

}  // namespace vipd::config
