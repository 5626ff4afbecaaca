// The instance-metadata document that `vipd render` turns into a vipd config and a static-pod
// manifest (apiVersion vipd.io/v1alpha1, kind InstanceMetadata; docs/metadata.md describes every
// field). JSON or YAML: yaml-cpp reads both.
//
// Pure: parseMetadata() does no I/O. It reports every problem in the document in one pass, in
// the config validator's format (file:line:column: path: message), and resolves everything the
// renderer needs (router ID, next hops, password files, health defaults, image), so the renderer
// only writes values out and decides nothing. Rules that belong to the config schema itself (AS
// 23456, covering VIP prefixes, duplicate peers, health types ...) are not repeated here: the
// renderer checks its output with config::parseConfig().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tl/expected.hpp>
#include <vector>

#include "bgp/ip_address.h"
#include "bootstrap/distro.h"
#include "config/parser.h"

namespace vipd::bootstrap {

// Metadata and rendering problems use the config validator's error type, so both print alike.
using Errors = std::vector<config::ConfigError>;
template <class T>
using Result = tl::expected<T, Errors>;

inline constexpr std::string_view kMetadataApiVersion = "vipd.io/v1alpha1";
inline constexpr std::string_view kMetadataKind = "InstanceMetadata";

// The health check rendered when the metadata has no `health` (or type apiserver without url or
// caFile): the local apiserver's /readyz, verified against the CA of the distribution rendered
// for (MetadataContext::distro; distro.h).

struct PeerMetadata {
  bgp::IpAddress address;
  uint32_t asn = 0;
  // The peer's own passwordFile, else the document's default.
  std::optional<std::string> passwordFile;
  // This node's first IPv6 address, set only on IPv4 sessions when some VIP is IPv6 (the
  // session has no IPv6 address of its own to use as next hop).
  std::optional<bgp::IpAddress> nextHopIpv6;
};

// Values are copied through as text: their rules live in the config schema.
struct HealthMetadata {
  std::string type;
  std::optional<std::string> url;
  std::optional<std::string> caFile;
  std::optional<std::string> address;
};

// The DaemonSet's /metrics port (the static pod's is renderer.h's kMetricsPort, 9473).
inline constexpr uint16_t kDaemonSetMetricsPort = 9472;

struct InstanceMetadata {
  bgp::IpAddress routerId;  // this node's first IPv4 address
  uint32_t localAsn = 0;
  std::vector<bgp::Prefix> vips;
  std::vector<PeerMetadata> peers;
  bool bootstrapEnabled = true;
  HealthMetadata health;  // defaults applied
  // The node file's metrics.listen, the DaemonSet's /metrics listener: the document's
  // metrics.listen as text (its rules are the config schema's), else routerId:9472. The static
  // pod's config keeps its own (renderer.h).
  std::string metricsListen;
  // From the metadata, --image or the context's default; empty only when bootstrap is disabled
  // and none gives one.
  std::string image;
};

// Values given on the command line that the document is checked against.
struct MetadataContext {
  // --config-out, already checked with configOutProblem(). Password files must be inside its
  // directory: the static pod mounts only that directory.
  std::string configPath;
  std::optional<std::string> image;  // --image
  // The image when neither the document nor --image names one: the vipd release this binary is
  // (localhost/vipd:VERSION, what the release archive loads as). Empty: an image is required.
  std::string defaultImage;
  // --distro: the health check's defaults and the CA file the static pod mounts. Not owned;
  // nullptr is defaultDistro() (kubeadm).
  const Distro* distro = nullptr;
  // --node-out, already checked with configOutProblem(); empty: defaultNodeConfigPath(). Like
  // the config, no password or CA file may be it.
  std::string nodeConfigPath;
};

// Where the node file goes without --node-out: node.yaml in the config's directory.
[[nodiscard]] std::string defaultNodeConfigPath(std::string_view configPath);
// The context's node file: nodeConfigPath, or the default beside the config.
[[nodiscard]] std::string nodeConfigPathOf(const MetadataContext& context);

// Parses and checks the document; `fileName` only labels errors. On failure returns every error,
// ordered by position in the document.
[[nodiscard]] Result<InstanceMetadata> parseMetadata(std::string_view text,
                                                     std::string_view fileName,
                                                     const MetadataContext& context);

// Why `path` cannot be the rendered config's path (--config-out), or nullopt when it can: it must
// be absolute, in normal form, name a file, and use only characters that need no quoting in the
// manifest (letters, digits, '.', '_', '-', '/'). Pure: looks at the text only.
[[nodiscard]] std::optional<std::string> configOutProblem(std::string_view path);

// Why `image` cannot go into the manifest, or nullopt when it can: a non-empty reference made of
// letters, digits and . _ - / : @ (nothing that YAML would read differently).
[[nodiscard]] std::optional<std::string> imageProblem(std::string_view image);

}  // namespace vipd::bootstrap
