// Parsing and validation of vipd's YAML configuration (apiVersion vipd.io/v1alpha1, kind
// SpeakerConfiguration; see config/example.yaml for every key). Pure: parseConfig() does no I/O,
// so the daemon and the bootstrap renderer (which parses back what it renders) share one schema.
//
// Validation reports every problem in one pass, not just the first: an operator fixing a file
// should not have to run the daemon once per typo. yaml-cpp exceptions stop here and become
// ConfigErrors; nothing in this header throws.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <tl/expected.hpp>
#include <vector>

#include "config/config.h"
#include "config/duration.h"  // parseDuration(), formatDuration(): part of this interface

namespace vipd::config {

// One problem in a config file. `line` and `column` are 1-based; 0 means the error has no position
// (the file could not be read at all). `path` names the offending key in the YAML spelling, e.g.
// "routerId" or "peers[1].holdTime"; it is empty for errors about the document as a whole (YAML
// syntax, empty file).
struct ConfigError {
  std::string file;
  int line = 0;
  int column = 0;
  std::string path;
  std::string message;

  // "vipd.yaml:12:5: peers[1].holdTime: hold time 2s is not allowed; ..." (position and path are
  // left out when absent). One line, suitable as the daemon's exit message.
  std::string toString() const;
};

template <class T>
using Result = tl::expected<T, std::vector<ConfigError>>;

// Parses and validates `yamlText`; `fileName` is only used to label errors. On failure returns all
// errors found, ordered by position in the file. Defaults are applied to optional keys; see
// config.h for their values (keepaliveTime defaults to holdTime / 3 in whole seconds).
//
// `overrides` are values given outside the file (command-line flags fed by the Kubernetes
// downward API). Each config field has exactly one source: a field set both in the file and by an
// override is an error, never a silent precedence rule.
struct ConfigOverrides {
  std::optional<std::string> routerId;  // --router-id
};
[[nodiscard]] Result<Config> parseConfig(std::string_view yamlText, std::string_view fileName,
                                         const ConfigOverrides& overrides = {});

// Reads `path` and calls parseConfig(). An unreadable file (missing, permission, a directory, over
// 4 MiB) is a single ConfigError without position that carries the OS's reason.
// Why `name` is not a Node's name (a lowercase RFC 1123 subdomain: labels of a-z, 0-9 and '-',
// not at either end, joined by dots; at most kMaxNodeNameLength characters), or nothing when it is
// one. kubernetes.nodeName is checked with it, and so is NODE_NAME where the daemon reads it.
[[nodiscard]] std::optional<std::string> nodeNameProblem(std::string_view name);

[[nodiscard]] Result<Config> loadConfigFile(const std::string& path,
                                            const ConfigOverrides& overrides = {});

}  // namespace vipd::config
