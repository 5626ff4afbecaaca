// The public entry points of parser.h (parseConfig, loadConfigFile, ConfigError::toString,
// modeName) and the top level of the document: which keys it holds, the order they are read in,
// and the rules that tie top-level keys together (routerId against --router-id, handoff against
// mode). The sections themselves are read in read_vips.cc, read_peers.cc and read_sections.cc.
#include "config/parser.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <utility>

#include "config/layers.h"
#include "config/reader.h"

namespace vipd::config {
namespace internal {
namespace {

constexpr std::string_view kKind = "SpeakerConfiguration";

}  // namespace

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
                        "largeCommunities", "peerDefaults", "peers", "listen", "control", "drain",
                        "allowNonLocalRouterId", "health", "metrics", "mode", "handoff",
                        "returnPath", "guard", "kubernetes"});
  // Read in this order, not the file's, so errors at one position keep a fixed order; the
  // router ID is checked against the VIPs and the peers against the VIPs and localAsn.
  readTypeMeta(*m, config);
  std::optional<uint32_t> localAsn;
  if (const Field* f = require(*m, "localAsn")) {
    localAsn = readAsn(*f);
    config.localAsn = localAsn.value_or(0);
  }
  if (const Field* f = require(*m, "vips")) {
    readVips(*f, config.vips);
  }
  readRouterIdSource(*m, config);
  if (const Field* f = m->find("communities")) {
    readCommunities(*f, config.communities);
  }
  if (const Field* f = m->find("largeCommunities")) {
    readLargeCommunities(*f, config.largeCommunities);
  }
  if (const Field* f = m->find("peerDefaults")) {
    readPeerDefaults(*f);
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
  readHandoffForMode(*m, config);
  if (const Field* f = m->find("returnPath")) {
    readReturnPath(*f, config.vips, config.returnPath);
  }
  if (const Field* f = m->find("guard")) {
    readGuard(*f, config.guard);
  }
  readKubernetes(*m, config);
}

// apiVersion and kind, both required and each with exactly one accepted value.
void ConfigReader::readTypeMeta(const Mapping& m, Config& config) {
  if (const Field* f = require(m, "apiVersion")) {
    auto text = readString(*f);
    if (text && *text != kApiVersion) {
      error(*f, fmt::format("expected '{}', got '{}'", kApiVersion, *text));
    } else if (text) {
      config.apiVersion = *text;
    }
  }
  if (const Field* f = require(m, "kind")) {
    auto text = readString(*f);
    if (text && *text != kKind) {
      error(*f, fmt::format("expected '{}', got '{}'", kKind, *text));
    } else if (text) {
      config.kind = *text;
    }
  }
}

// The router ID comes from the file or from --router-id, never both. Read after the VIPs, which
// it must not equal.
void ConfigReader::readRouterIdSource(const Mapping& m, Config& config) {
  if (overrides_.routerId) {
    // Given by the downward API (status.hostIP): the file must not also carry one.
    if (const Field* f = m.find("routerId")) {
      error(*f, fmt::format("routerId is set both here and by --router-id {}; each field has "
                            "exactly one source, so remove it from the file",
                            *overrides_.routerId));
    } else {
      Field flag{YAML::Node("routerId"), YAML::Node(*overrides_.routerId), "--router-id"};
      readRouterId(flag, config.vips, config);
    }
  } else if (const Field* f = require(m, "routerId")) {
    readRouterId(*f, config.vips, config);
  }
}

// handoff is read only when mode (read before it) is one that hands off.
void ConfigReader::readHandoffForMode(const Mapping& m, Config& config) {
  const Field* f = m.find("handoff");
  if (f == nullptr) {
    return;
  }
  if (config.mode == Mode::Standalone && !m.find("mode")) {
    error(*f, "handoff applies only with mode static-pod or daemonset; set mode or remove "
              "handoff");
  } else if (config.mode == Mode::Standalone) {
    error(*f, "handoff applies only with mode static-pod or daemonset, but mode is "
              "standalone");
  } else {
    readHandoff(*f, config.handoff);
  }
}

}  // namespace internal

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

std::string_view returnPathModeName(ReturnPath::Mode mode) {
  switch (mode) {
    case ReturnPath::Mode::Enforce:
      return "enforce";
    case ReturnPath::Mode::Warn:
      return "warn";
    case ReturnPath::Mode::Off:
      return "off";
  }
  return "unknown";
}

Result<Config> parseConfig(std::string_view yamlText, std::string_view fileName,
                           const ConfigOverrides& overrides) {
  return parseConfigLayers({yamlText, std::string(fileName)}, std::nullopt, overrides)
      .map([](LoadedConfig&& loaded) { return std::move(loaded.config); });
}

Result<Config> loadConfigFile(const std::string& path, const ConfigOverrides& overrides) {
  return loadConfig({path, std::nullopt, overrides}).map([](LoadedConfig&& loaded) {
    return std::move(loaded.config);
  });
}

}  // namespace vipd::config
