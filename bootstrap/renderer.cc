#include "bootstrap/renderer.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>

#include "bootstrap/template_filler.h"
#include "config/layers.h"
#include "config/parser.h"

namespace vipd::bootstrap {
namespace {

// Words a YAML reader may take for a boolean or null rather than a string.
bool looksLikeNonString(std::string_view text) {
  static constexpr std::array<std::string_view, 10> kWords = {"true", "false", "yes", "no", "on",
                                                              "off",  "null",  "y",   "n",  "~"};
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::find(kWords.begin(), kWords.end(), lower) != kWords.end() ||
         lower.find_first_not_of("0123456789") == std::string::npos;
}

// A YAML scalar for `text`: plain when that reads back as the same string, double-quoted
// otherwise (IPv6 addresses, URLs, anything with ':' or characters YAML treats specially).
std::string scalar(std::string_view text) {
  bool plain = !text.empty() &&
               (std::isalnum(static_cast<unsigned char>(text[0])) || text[0] == '/') &&
               std::all_of(text.begin(), text.end(),
                           [](char c) {
                             return std::isalnum(static_cast<unsigned char>(c)) || c == '.' ||
                                    c == '_' || c == '-' || c == '/';
                           }) &&
               !looksLikeNonString(text);
  if (plain) {
    return std::string(text);
  }
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// The metadata path as one line of a comment.
std::string commentSafe(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      c = '?';
    }
  }
  return out;
}

std::string_view lineOf(std::string_view text, int line) {
  size_t start = 0;
  for (int i = 1; i < line && start != std::string_view::npos; ++i) {
    start = text.find('\n', start);
    start = start == std::string_view::npos ? start : start + 1;
  }
  if (start == std::string_view::npos || start >= text.size()) {
    return {};
  }
  size_t end = text.find('\n', start);
  return text.substr(start, end == std::string_view::npos ? text.npos : end - start);
}

// Checks the rendered text with the one config schema. Errors are labelled with the config path
// and quote the rendered line, since the operator never sees the text that was not written.
Errors validateRendered(std::string_view text, const std::string& configPath) {
  auto parsed = config::parseConfig(text, fmt::format("rendered {}", configPath));
  if (parsed) {
    return {};
  }
  Errors errors = parsed.error();
  for (auto& e : errors) {
    std::string_view line = lineOf(text, e.line);
    if (e.line > 0 && !line.empty()) {
      e.message += fmt::format(" (rendered line {}: `{}`)", e.line, line);
    }
  }
  return errors;
}

const Distro& distroOf(const RenderInput& input) {
  return input.distro ? *input.distro : defaultDistro();
}

// One line of text at a time.
class Lines {
 public:
  void operator()(std::string_view text) {
    out_ += text;
    out_ += '\n';
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

void renderHeader(Lines& line, std::string_view metadataPath, std::string_view kind) {
  line(fmt::format("# Rendered by `vipd render` from {}; do not edit.", commentSafe(metadataPath)));
  line("# Change the instance metadata and render again (docs/metadata.md).");
  line(fmt::format("apiVersion: {}", scalar("vipd.io/v1alpha1")));
  line(fmt::format("kind: {}", kind));
}

void renderRouterIdAndAsn(Lines& line, const InstanceMetadata& metadata) {
  line(fmt::format("routerId: {}", scalar(metadata.routerId.toString())));
  line(fmt::format("localAsn: {}", metadata.localAsn));
}

void renderPeers(Lines& line, const InstanceMetadata& metadata) {
  line("peers:");
  for (const auto& peer : metadata.peers) {
    line(fmt::format("  - address: {}", scalar(peer.address.toString())));
    line(fmt::format("    asn: {}", peer.asn));
    if (peer.nextHopIpv6) {
      line(fmt::format("    nextHopIpv6: {}", scalar(peer.nextHopIpv6->toString())));
    }
    if (peer.passwordFile) {
      line(fmt::format("    passwordFile: {}", scalar(*peer.passwordFile)));
    }
  }
}

// Checks the node file: merged under the config without its node facts, it must give exactly the
// config the static pod runs with, so the DaemonSet and the static pod speak as the same node;
// only metrics.listen differs, the DaemonSet's own.
Errors validateNodeConfig(const InstanceMetadata& metadata, const Rendered& rendered,
                          const RenderInput& input, const std::string& nodeConfigPath) {
  std::string policy = renderConfig(metadata, input.metadataPath, false);
  auto layered = config::parseConfigLayers(
      {policy, fmt::format("rendered {} without node facts", input.configPath)},
      config::ConfigFile{rendered.nodeConfig, fmt::format("rendered {}", nodeConfigPath)});
  if (!layered) {
    return layered.error();
  }
  auto whole = config::parseConfig(rendered.config, input.configPath);
  config::Config staticPod = layered->config;
  if (whole) {
    staticPod.metrics = whole->metrics;
  }
  if (!whole || staticPod != *whole) {
    return {{nodeConfigPath, 0, 0, "",
             "the rendered node file does not carry the same node facts as the rendered config; "
             "this is a bug in vipd render"}};
  }
  return {};
}

}  // namespace

std::string renderConfig(const InstanceMetadata& metadata, std::string_view metadataPath,
                         bool nodeFacts) {
  Lines line;
  renderHeader(line, metadataPath, "SpeakerConfiguration");
  line(fmt::format("mode: {}", config::modeName(config::Mode::StaticPod)));
  if (nodeFacts) {
    renderRouterIdAndAsn(line, metadata);
  }
  line("vips:");
  for (const auto& vip : metadata.vips) {
    line(fmt::format("  - address: {}", scalar(vip.toString())));
    line(fmt::format("    interface: {}", kVipInterface));
  }
  if (nodeFacts) {
    renderPeers(line, metadata);
  }
  line("health:");
  line(fmt::format("  type: {}", scalar(metadata.health.type)));
  for (auto [key, value] :
       {std::pair{"url", &metadata.health.url}, std::pair{"caFile", &metadata.health.caFile},
        std::pair{"address", &metadata.health.address}}) {
    if (*value) {
      line(fmt::format("  {}: {}", key, scalar(**value)));
    }
  }
  line("handoff:");
  line(fmt::format("  dir: {}", scalar(kHandoffDir)));
  line(fmt::format("  restartTime: {}", config::formatDuration(kRestartTime)));
  line("control:");
  line(fmt::format("  socket: {}", scalar(kControlSocket)));
  line(fmt::format("  stateDir: {}", scalar(kStateDir)));
  if (nodeFacts) {
    line("metrics:");
    line(fmt::format("  listen: {}", scalar(fmt::format("{}:{}", kMetricsAddress, kMetricsPort))));
  }
  return line.take();
}

std::string renderNodeConfig(const InstanceMetadata& metadata, std::string_view metadataPath) {
  Lines line;
  renderHeader(line, metadataPath, config::kNodeConfigKind);
  line("# This node's own facts. The DaemonSet reads this file (vipd --node-config) and merges it");
  line("# with its ConfigMap; the static pod's config carries the same values, except");
  line("# metrics.listen: the DaemonSet's /metrics on this node's address (the static pod's is");
  line(fmt::format("# {}:{}).", kMetricsAddress, kMetricsPort));
  renderRouterIdAndAsn(line, metadata);
  renderPeers(line, metadata);
  line("metrics:");
  line(fmt::format("  listen: {}", scalar(metadata.metricsListen)));
  return line.take();
}

Result<Rendered> render(const RenderInput& input) {
  if (auto problem = configOutProblem(input.configPath)) {
    return tl::unexpected(Errors{{"--config-out", 0, 0, "", *problem}});
  }
  const MetadataContext context{input.configPath, input.image, input.defaultImage, input.distro,
                                input.nodeConfigPath};
  auto metadata = parseMetadata(input.metadataText, input.metadataPath, context);
  if (!metadata) {
    return tl::unexpected(metadata.error());
  }
  Rendered rendered;
  rendered.config = renderConfig(*metadata, input.metadataPath);
  if (Errors errors = validateRendered(rendered.config, input.configPath); !errors.empty()) {
    return tl::unexpected(std::move(errors));
  }
  rendered.nodeConfig = renderNodeConfig(*metadata, input.metadataPath);
  if (Errors errors = validateNodeConfig(*metadata, rendered, input, nodeConfigPathOf(context));
      !errors.empty()) {
    return tl::unexpected(std::move(errors));
  }
  if (!metadata->bootstrapEnabled) {
    return rendered;
  }
  if (!input.manifestTemplate) {
    return tl::unexpected(Errors{{input.templateName, 0, 0, "",
                                  "this vipd was built without the static-pod template, so it "
                                  "cannot render the manifest; rebuild it from a source tree "
                                  "that has manifests/static-pod/vipd.yaml"}});
  }
  std::filesystem::path configPath(input.configPath);
  auto manifest = fillTemplate(*input.manifestTemplate, input.templateName,
                               {{"IMAGE", metadata->image},
                                {"CONFIG_PATH", configPath.string()},
                                {"CONFIG_DIR", configPath.parent_path().string()},
                                {"METRICS_PORT", std::to_string(kMetricsPort)},
                                {"CA_FILE", std::string(distroOf(input).caFile)},
                                {"CONTROL_SOCKET", std::string(kControlSocket)}});
  if (!manifest) {
    return tl::unexpected(manifest.error());
  }
  // kubelet skips a manifest it cannot parse with only a log line; a broken template must fail
  // here instead.
  try {
    YAML::Node pod = YAML::Load(*manifest);
    if (!pod.IsMap()) {
      return tl::unexpected(Errors{
          {input.templateName, 0, 0, "", "the filled manifest is not a YAML mapping (a Pod)"}});
    }
  } catch (const YAML::Exception& e) {
    return tl::unexpected(
        Errors{{input.templateName, e.mark.is_null() ? 0 : e.mark.line + 1,
                e.mark.is_null() ? 0 : e.mark.column + 1, "",
                fmt::format("the filled manifest is not valid YAML: {}", e.msg)}});
  }
  rendered.manifest = std::move(*manifest);
  return rendered;
}

}  // namespace vipd::bootstrap
