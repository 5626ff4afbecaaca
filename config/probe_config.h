// The config of `vipd probe` (apiVersion vipd.io/v1alpha1, kind ProbeConfiguration; every key in
// config/probe_example.yaml): the site this probe runs in, how often it probes, and the API
// front-ends it probes (a VIP, an old load balancer, a DNS name), each with the CA that must have
// signed the certificate and the answer expected from an apiserver. Pure, like parser.h:
// parseProbeConfig() does no I/O, reports every problem in one pass with file:line:column, and
// catches yaml-cpp's exceptions.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "config/parser.h"

namespace vipd::config {

// What a target's answer must be for the probe to count as a success; both are answers only an
// apiserver gives, so a proxy's page or a stray web server never passes.
enum class ProbeExpect {
  Readyz,   // HTTP 200 with the body "ok" (GET /readyz)
  Version,  // HTTP 200 with a JSON object whose gitVersion is a non-empty string (GET /version)
};

[[nodiscard]] std::string_view probeExpectName(ProbeExpect expect);  // "readyz", "version"

struct ProbeTarget {
  // The target's label value in metrics and the matrix's column: a Kubernetes label value
  // (1 to 63 of [A-Za-z0-9-_.], starting and ending with a letter or digit), unique in the file.
  std::string name;
  std::string url;     // https only; health_target.h's parseHttpsUrl() rules
  std::string caFile;  // absolute path: the only CA the server's certificate may chain to
  // The DNS name the certificate must carry (and SNI). Unset: the URL's host when it is a DNS
  // name, else kDefaultApiserverServerName ("kubernetes"), as health.serverName.
  std::optional<std::string> serverName;
  ProbeExpect expect = ProbeExpect::Readyz;
  auto operator<=>(const ProbeTarget&) const = default;
};

struct ProbeConfig {
  // The site label of every series and row this probe reports: from exactly one source, the
  // file's `site` or `vipd probe --site` (the DaemonSet passes its pod's own vipd.io/probe-site
  // label through the downward API). Never derived from a node or host name.
  std::string site;
  std::chrono::milliseconds interval{5000};  // 1s to 5m
  std::chrono::milliseconds timeout{2000};   // 100ms to 1m, and shorter than the interval
  std::vector<ProbeTarget> targets;          // 1 to 64
  // metrics.listen: /metrics (Prometheus) and /probe.json (the matrix's recent results).
  ListenAddress listen{bgp::IpAddress::v4(0x7F000001u), 9474};
  auto operator<=>(const ProbeConfig&) const = default;
};

struct ProbeOverrides {
  std::optional<std::string> site;  // --site
};

// Parses and validates `yamlText`; `fileName` only labels the errors.
[[nodiscard]] Result<ProbeConfig> parseProbeConfig(std::string_view yamlText,
                                                   std::string_view fileName,
                                                   const ProbeOverrides& overrides = {});

// Reads `path` (at most 1 MiB) and parses it; an unreadable file is one error without position.
[[nodiscard]] Result<ProbeConfig> loadProbeConfigFile(const std::string& path,
                                                      const ProbeOverrides& overrides = {});

// Why `text` is not a Kubernetes label value usable as a site or target name (one clause), or
// nothing when it is one. Empty is refused: a series with an empty label is no series.
[[nodiscard]] std::optional<std::string> labelValueProblem(std::string_view text);

}  // namespace vipd::config
