// `vipd render`'s pure core: instance metadata in, the vipd config, the node file and the
// static-pod manifest out.
// Deterministic: the same input gives byte-identical output, and nothing is read from the machine
// it runs on (no interfaces, no clock, no files).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "bootstrap/instance_metadata.h"

namespace vipd::bootstrap {

// Fixed parts of every rendered config. The static-pod instance uses its own control socket and
// metrics port so that it and a DaemonSet instance (defaults /run/vipd/vipd.sock and 9472) can
// run side by side on one node during the handover; both mount handoff.dir.
inline constexpr std::string_view kHandoffDir = "/run/vipd";
inline constexpr std::chrono::seconds kRestartTime{3};
inline constexpr std::string_view kControlSocket = "/run/vipd/static-pod.sock";
inline constexpr std::string_view kStateDir = "/var/lib/vipd";
inline constexpr std::string_view kMetricsAddress = "127.0.0.1";
inline constexpr uint16_t kMetricsPort = 9473;
inline constexpr std::string_view kVipInterface = "lo";

// The manifest's file name in the manifest directory, which kubelet reads as a pod.
inline constexpr std::string_view kManifestFileName = "vipd.yaml";

struct RenderInput {
  std::string_view metadataText;
  std::string metadataPath;          // labels errors and goes into the config's header comment
  std::string configPath;            // --config-out; must pass configOutProblem()
  std::optional<std::string> image;  // --image
  // The static-pod template; nullopt when this vipd was built without one (an error only when
  // the metadata enables bootstrap).
  std::optional<std::string_view> manifestTemplate;
  std::string templateName;  // labels template errors
  std::string defaultImage;  // MetadataContext::defaultImage
  const Distro* distro = nullptr;  // --distro; nullptr is kubeadm
  // --node-out: labels the node file's errors; no password or CA file may be it. Empty:
  // defaultNodeConfigPath().
  std::string nodeConfigPath;
};

struct Rendered {
  std::string config;
  // The node file (config/layers.h): this node's router ID, AS and peers, which the DaemonSet
  // reads with --node-config, the same values as in `config`, checked to be; and the
  // DaemonSet's metrics.listen (InstanceMetadata::metricsListen), which `config` does not share.
  std::string nodeConfig;
  // nullopt when the metadata disables bootstrap: the static pod must go away.
  std::optional<std::string> manifest;
};

// Parses the metadata, renders the config and checks it with config::parseConfig() (the schema
// `vipd validate` uses), then fills the template. Errors come from the first stage that fails:
// the metadata's (file:line:column: path), the rendered config's (labelled "rendered CONFIG",
// with the offending rendered line quoted), or the template's. Nothing is returned on any error.
[[nodiscard]] Result<Rendered> render(const RenderInput& input);

// The config text for `metadata`, before validation. The header names `metadataPath`. Without
// `nodeFacts` it leaves out what the node file holds (routerId, localAsn, peers, metrics.listen).
std::string renderConfig(const InstanceMetadata& metadata, std::string_view metadataPath,
                         bool nodeFacts = true);
// The node file's text for `metadata`, before validation.
std::string renderNodeConfig(const InstanceMetadata& metadata, std::string_view metadataPath);

}  // namespace vipd::bootstrap
