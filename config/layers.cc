// The two config layers (layers.h): reading the files, merging the node file into the
// cluster file key by key with every key's origin recorded, and `vipd config --show`.
#include "config/layers.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <tuple>
#include <utility>

#include "config/diff.h"
#include "config/file_reader.h"
#include "config/reader.h"
#include "config/yaml_documents.h"

namespace vipd::config {

void FieldOrigins::record(const std::string& path, const std::string& source) {
  auto [it, inserted] = sources_.emplace(path, source);
  if (!inserted && it->second != source) {
    it->second.clear();
  }
}

std::optional<std::string> FieldOrigins::sourceOf(std::string_view path) const {
  auto it = sources_.find(path);
  if (it == sources_.end() || it->second.empty()) {
    return std::nullopt;
  }
  return it->second;
}

std::string FieldOrigins::blame(std::string_view path, std::string_view fallback) const {
  // Shorten "peers[1].bfd.minTx" to "peers[1].bfd", "peers[1]", "peers" until a key is found.
  while (!path.empty()) {
    if (auto source = sourceOf(path)) {
      return *source;
    }
    size_t cut = path.find_last_of(".[");
    path = path.substr(0, cut == std::string_view::npos ? 0 : cut);
  }
  return std::string(fallback);
}

namespace internal {
namespace {

const YAML::Node* findKey(const std::vector<std::pair<YAML::Node, YAML::Node>>& entries,
                          std::string_view key) {
  for (const auto& [k, v] : entries) {
    if (k.IsScalar() && k.Scalar() == key) {
      return &v;
    }
  }
  return nullptr;
}

std::vector<std::pair<YAML::Node, YAML::Node>> entriesOf(const YAML::Node& map) {
  std::vector<std::pair<YAML::Node, YAML::Node>> out;
  for (const auto& entry : map) {
    out.emplace_back(entry.first, entry.second);
  }
  return out;
}

// Deeper than any key vipd has (peers[0].bfd.minTx is 3). A YAML alias can make a document that
// contains itself ("a: &x [*x]"): walks stop here instead of recursing forever.
constexpr int kMaxDepth = 16;

// Records `node` and everything under it at `path` as set by `source`.
void recordTree(const YAML::Node& node, const std::string& path, const std::string& source,
                FieldOrigins& origins, int depth = 0) {
  if (depth > kMaxDepth) {
    return;
  }
  if (node.IsMap()) {
    for (const auto& entry : node) {
      if (entry.first.IsScalar()) {
        std::string p = joinPath(path, entry.first.Scalar());
        origins.record(p, source);
        recordTree(entry.second, p, source, origins, depth + 1);
      }
    }
  } else if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) {
      std::string p = indexPath(path, i);
      origins.record(p, source);
      recordTree(node[i], p, source, origins, depth + 1);
    }
  }
}

// Merges the node file's document into the cluster file's, recording where every key came from.
// Errors found here (the node file's own shape, keys set twice) are collected in `errors`; what
// is wrong with values is left to the schema (ConfigReader), which reads the merged document.
class LayerMerger {
 public:
  LayerMerger(const ConfigFile& cluster, const ConfigFile& node, FieldOrigins& origins,
              std::vector<ConfigError>& errors)
      : cluster_(cluster), node_(node), origins_(origins), errors_(errors) {}

  // The merged document; the cluster document itself when either is not a mapping (the errors
  // say why). Records the node file's keys; the caller records the cluster file's first.
  YAML::Node merge(const YAML::Node& clusterRoot, const YAML::Node& nodeRoot) {
    if (!checkNodeDocument(nodeRoot) || !clusterRoot.IsMap()) {
      return clusterRoot;
    }
    return mergeMaps(clusterRoot, nodeRoot, "", 0);
  }

 private:
  void error(const YAML::Mark& mark, std::string path, std::string message) {
    ConfigError e{node_.name, 0, 0, std::move(path), std::move(message)};
    if (!mark.is_null()) {
      e.line = mark.line + 1;
      e.column = mark.column + 1;
    }
    errors_.push_back(std::move(e));
  }

  // A mapping with apiVersion vipd.io/v1alpha1 and kind NodeConfiguration.
  bool checkNodeDocument(const YAML::Node& root) {
    if (!root.IsMap()) {
      error(root.Mark(), "",
            fmt::format("expected a {} mapping at the top level, got {}", kNodeConfigKind,
                        describe(root)));
      return false;
    }
    auto entries = entriesOf(root);
    for (auto [key, wanted] : {std::pair{std::string_view("apiVersion"), kApiVersion},
                               std::pair{std::string_view("kind"), kNodeConfigKind}}) {
      const YAML::Node* value = findKey(entries, key);
      if (value == nullptr) {
        error(root.Mark(), std::string(key), fmt::format("required key '{}' is missing", key));
      } else if (!value->IsScalar() || value->Scalar() != wanted) {
        error(value->Mark(), std::string(key),
              fmt::format("expected '{}' in the node file, got {}", wanted, describe(*value)));
      }
    }
    return true;
  }

  // The cluster file's keys in its order, each mapping found in both merged, then the keys only
  // the node file has. At the top level the node file's apiVersion and kind are its own.
  YAML::Node mergeMaps(const YAML::Node& cluster, const YAML::Node& node, const std::string& path,
                       int depth) {
    YAML::Node out(YAML::NodeType::Map);
    auto nodeEntries = entriesOf(node);
    for (const auto& entry : cluster) {
      const YAML::Node* theirs =
          entry.first.IsScalar() ? findKey(nodeEntries, entry.first.Scalar()) : nullptr;
      if (theirs != nullptr && path.empty() && isTypeMeta(entry.first.Scalar())) {
        theirs = nullptr;
      }
      if (theirs == nullptr) {
        out.force_insert(entry.first, entry.second);
        continue;
      }
      std::string p = joinPath(path, entry.first.Scalar());
      if (entry.second.IsMap() && theirs->IsMap() && depth < kMaxDepth) {
        origins_.record(p, node_.name);
        recordTree(*theirs, p, node_.name, origins_);
        out.force_insert(entry.first, mergeMaps(entry.second, *theirs, p, depth + 1));
      } else {
        reportConflict(p, entry.first, keyFor(node, entry.first.Scalar()));
        out.force_insert(entry.first, entry.second);
      }
    }
    auto clusterEntries = entriesOf(cluster);
    for (const auto& [key, value] : nodeEntries) {
      if (!key.IsScalar()) {
        error(key.Mark(), path, fmt::format("keys must be strings, got {}", describe(key)));
        continue;
      }
      if ((path.empty() && isTypeMeta(key.Scalar())) || findKey(clusterEntries, key.Scalar())) {
        continue;
      }
      std::string p = joinPath(path, key.Scalar());
      origins_.record(p, node_.name);
      recordTree(value, p, node_.name, origins_);
      out.force_insert(key, value);
    }
    return out;
  }

  static bool isTypeMeta(std::string_view key) { return key == "apiVersion" || key == "kind"; }

  static YAML::Node keyFor(const YAML::Node& map, std::string_view name) {
    for (const auto& entry : map) {
      if (entry.first.IsScalar() && entry.first.Scalar() == name) {
        return entry.first;
      }
    }
    return YAML::Node();
  }

  void reportConflict(const std::string& path, const YAML::Node& clusterKey,
                      const YAML::Node& nodeKey) {
    error(nodeKey.Mark(), path,
          fmt::format("set in both {} (line {}) and {} (line {}); each field comes from exactly "
                      "one file: cluster-wide policy from {}, this node's facts from {}; remove it "
                      "from one of them",
                      cluster_.name, clusterKey.Mark().line + 1, node_.name,
                      nodeKey.Mark().line + 1, cluster_.name, node_.name));
  }

  const ConfigFile& cluster_;
  const ConfigFile& node_;
  FieldOrigins& origins_;
  std::vector<ConfigError>& errors_;
};

// The one document of `file`; errors (syntax, none, several) go to `errors`.
std::optional<YAML::Node> loadDocument(const ConfigFile& file, std::string_view kind,
                                       std::vector<ConfigError>& errors) {
  auto add = [&](const YAML::Mark& mark, std::string message) {
    errors.push_back({file.name, mark.is_null() ? 0 : mark.line + 1,
                      mark.is_null() ? 0 : mark.column + 1, "", std::move(message)});
  };
  try {
    std::vector<YAML::Node> documents = loadAllDocuments(file.text);
    if (documents.empty()) {
      add(YAML::Mark(), fmt::format("the file is empty; expected a {} mapping", kind));
      return std::nullopt;
    }
    if (documents.size() > 1) {
      add(documents[1].Mark(), fmt::format("the file holds {} YAML documents; expected exactly one",
                                           documents.size()));
    }
    return documents[0];
  } catch (const YamlTooLarge& e) {
    add(e.mark, e.msg);
  } catch (const YAML::Exception& e) {
    add(e.mark, fmt::format("YAML syntax error: {}", e.msg));
  } catch (const std::exception& e) {
    add(YAML::Mark::null_mark(), fmt::format("cannot parse: {}", e.what()));
  }
  return std::nullopt;
}

// The cluster file's errors first, then the node file's, each by position.
void sortErrors(std::vector<ConfigError>& errors, const std::string& clusterName) {
  std::stable_sort(errors.begin(), errors.end(), [&](const auto& a, const auto& b) {
    return std::tuple(a.file != clusterName, a.line, a.column) <
           std::tuple(b.file != clusterName, b.line, b.column);
  });
}

}  // namespace
}  // namespace internal

Result<LoadedConfig> parseConfigLayers(const ConfigFile& cluster,
                                       const std::optional<ConfigFile>& node,
                                       const ConfigOverrides& overrides) {
  std::vector<ConfigError> errors;
  LoadedConfig loaded;
  auto clusterRoot = internal::loadDocument(cluster, "SpeakerConfiguration", errors);
  std::optional<YAML::Node> nodeRoot;
  if (node) {
    nodeRoot = internal::loadDocument(*node, kNodeConfigKind, errors);
  }
  if (clusterRoot && (!node || nodeRoot)) {
    YAML::Node merged = *clusterRoot;
    try {
      internal::recordTree(*clusterRoot, "", cluster.name, loaded.origins);
      if (nodeRoot) {
        merged = internal::LayerMerger(cluster, *node, loaded.origins, errors)
                     .merge(*clusterRoot, *nodeRoot);
      }
      internal::ConfigReader reader(cluster.name, overrides, node ? &loaded.origins : nullptr);
      reader.readDocument(merged, loaded.config);
      for (auto& e : reader.takeErrors()) {
        errors.push_back(std::move(e));
      }
    } catch (const std::exception& e) {
      // Validation only reads nodes (no as<>, no non-const operator[]): a safety net.
      errors.push_back({cluster.name, 0, 0, "", fmt::format("cannot parse: {}", e.what())});
    }
  }
  if (!errors.empty()) {
    internal::sortErrors(errors, cluster.name);
    return tl::unexpected(std::move(errors));
  }
  if (overrides.routerId) {
    loaded.origins.record("routerId", "--router-id");
  }
  return loaded;
}

namespace {

// Larger than any sane config; stops `vipd --config /dev/zero` from eating memory. The text's
// nodes are bounded apart (kMaxYamlNodes), so what a refused file can make vipd allocate is a
// few times this.
constexpr size_t kMaxFileSize = size_t{4} << 20;

// The text of `path`, or the error saying why there is none (config/file_reader.h: a regular
// file only, never waited on, no symlink out of its directory).
tl::expected<std::string, ConfigError> readConfigText(const std::string& path,
                                                      std::string_view what) {
  auto text = readBoundedFile(path, what, kMaxFileSize);
  if (!text) {
    return tl::unexpected(ConfigError{path, 0, 0, "", std::move(text.error())});
  }
  return std::move(*text);
}

}  // namespace

Result<LoadedConfig> loadConfig(const ConfigSources& sources) {
  std::vector<ConfigError> errors;
  auto clusterText = readConfigText(sources.configPath, "config file");
  if (!clusterText) {
    errors.push_back(clusterText.error());
  }
  std::optional<tl::expected<std::string, ConfigError>> nodeText;
  if (sources.nodeConfigPath) {
    nodeText = readConfigText(*sources.nodeConfigPath, "node config file");
    if (!*nodeText) {
      errors.push_back(nodeText->error());
    }
  }
  if (!errors.empty()) {
    return tl::unexpected(std::move(errors));
  }
  std::optional<ConfigFile> node;
  if (nodeText) {
    node = ConfigFile{**nodeText, *sources.nodeConfigPath};
  }
  return parseConfigLayers({*clusterText, sources.configPath}, node, sources.overrides);
}

std::string showConfig(const LoadedConfig& loaded) {
  const Config& c = loaded.config;
  // listFields() names list elements by address; origins know them by index.
  std::map<std::string, std::string> byIndex;
  for (size_t i = 0; i < c.peers.size(); ++i) {
    byIndex[fmt::format("peers[{}]", c.peers[i].address.toString())] = fmt::format("peers[{}]", i);
  }
  for (size_t i = 0; i < c.vips.size(); ++i) {
    byIndex[fmt::format("vips[{}]", c.vips[i].prefix.toString())] = fmt::format("vips[{}]", i);
  }
  auto sourceOf = [&](std::string path) {
    if (size_t end = path.find(']'); end != std::string::npos) {
      if (auto it = byIndex.find(path.substr(0, end + 1)); it != byIndex.end()) {
        path = it->second + path.substr(end + 1);
      }
    }
    if (path == "metrics.address" || path == "metrics.port") {
      path = "metrics.listen";  // one key in the file, two fields
    }
    if (auto source = loaded.origins.sourceOf(path)) {
      return *source;
    }
    // A peer's key it does not set itself may come from peerDefaults.
    if (path.starts_with("peers[")) {
      size_t key = path.find("].");
      if (key != std::string::npos) {
        if (auto source = loaded.origins.sourceOf("peerDefaults." + path.substr(key + 2))) {
          return fmt::format("{} (peerDefaults)", *source);
        }
      }
    }
    return std::string("default");
  };
  auto fields = listFields(c);
  size_t width = 0;
  for (const auto& [path, value] : fields) {
    width = std::max(width, path.size() + value.size() + 2);
  }
  std::string out;
  for (const auto& [path, value] : fields) {
    out += fmt::format("{:<{}}  # {}\n", fmt::format("{}: {}", path, value), width, sourceOf(path));
  }
  return out;
}

}  // namespace vipd::config
