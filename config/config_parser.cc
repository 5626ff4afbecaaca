// The public entry points of config_parser.h (parseConfig, loadConfigFile, ConfigError::toString,
// modeName) and the top level of the document: which keys it holds, the order they are read in,
// and the rules that tie top-level keys together (routerId against --router-id, handoff against
// mode). The sections themselves are read in read_vips.cc, read_peers.cc and read_sections.cc.
#include "config/config_parser.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <utility>

#include "config/config_reader.h"
#include "config/yaml_documents.h"

namespace vipd::config {
namespace internal {
namespace {

constexpr std::string_view kApiVersion = "vipd.io/v1alpha1";
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
                        "largeCommunities", "peers", "listen", "control", "drain",
                        "allowNonLocalRouterId", "health", "metrics", "mode", "handoff"});
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

namespace {

// Larger than any sane config; stops `vipd --config /dev/zero` from eating memory.
constexpr size_t kMaxFileSize = size_t{4} << 20;

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
  internal::ConfigReader reader(fileName, overrides);
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
