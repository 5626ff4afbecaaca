// The pure renderer: golden config and manifest files (byte-exact), determinism, the check
// against config::parseConfig, and the template filler's errors.
//
// To regenerate the golden files after an intended change, run the test with
// VIPD_UPDATE_GOLDEN=1 and review the diff.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "bootstrap/renderer.h"
#include "bootstrap/template_filler.h"
#include "bootstrap/test_support.h"
#include "config/layers.h"
#include "config/parser.h"

namespace vipd::bootstrap {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::joined;
using testing::kDataDir;
using testing::readFile;
using testing::strings;

constexpr std::string_view kConfigPath = "/etc/vipd/vipd.yaml";
constexpr std::string_view kNodeConfigPath = "/etc/vipd/node.yaml";

struct Golden {
  std::string name;  // tests/data/bootstrap/<name>.metadata.<ext> -> <name>.config.yaml, ...
  std::string metadataFile;
  std::optional<std::string> image;  // --image
};

// Names the case in failure messages instead of dumping its bytes.
void PrintTo(const Golden& g, std::ostream* os) { *os << g.name; }

Result<Rendered> renderData(const std::string& metadataFile, std::optional<std::string> image,
                            std::string_view templateText) {
  std::string text = readFile(kDataDir / metadataFile);
  // The header names the metadata by the path given; the file name keeps goldens independent
  // of where the source tree lives.
  return render({text, metadataFile, std::string(kConfigPath), std::move(image), templateText,
                 "static-pod-template.yaml", "", nullptr, std::string(kNodeConfigPath)});
}

void expectGolden(const std::string& fileName, const std::string& actual) {
  auto path = kDataDir / fileName;
  if (std::getenv("VIPD_UPDATE_GOLDEN") != nullptr) {
    testing::writeFile(path, actual);
  }
  EXPECT_EQ(actual, readFile(path))
      << "differs from " << path << " (VIPD_UPDATE_GOLDEN=1 rewrites it)";
}

class BootstrapGolden : public ::testing::TestWithParam<Golden> {};

TEST_P(BootstrapGolden, ConfigAndManifestAreByteExact) {
  const Golden& g = GetParam();
  std::string templateText = testing::testTemplate();
  auto rendered = renderData(g.metadataFile, g.image, templateText);
  ASSERT_TRUE(rendered.has_value()) << joined(strings(rendered.error()));
  expectGolden(g.name + ".config.yaml", rendered->config);
  ASSERT_TRUE(rendered->manifest.has_value());
  expectGolden(g.name + ".manifest.yaml", *rendered->manifest);
  expectGolden(g.name + ".node.yaml", rendered->nodeConfig);
}

// The node file under the config without its node facts is the config the static pod runs: the
// DaemonSet, reading the node file, speaks as the same node.
TEST_P(BootstrapGolden, TheNodeFileCarriesTheNodeFacts) {
  const Golden& g = GetParam();
  std::string templateText = testing::testTemplate();
  auto rendered = renderData(g.metadataFile, g.image, templateText);
  ASSERT_TRUE(rendered.has_value()) << joined(strings(rendered.error()));
  auto whole = config::parseConfig(rendered->config, kConfigPath);
  ASSERT_TRUE(whole.has_value());
  auto node = config::parseConfigLayers(
      {"apiVersion: vipd.io/v1alpha1\nkind: SpeakerConfiguration\nmode: static-pod\n" +
           std::string(rendered->config.substr(rendered->config.find("vips:"))),
       "policy"},
      config::ConfigFile{rendered->nodeConfig, "node.yaml"});
  // The policy above still has the peers: the node file carrying them too is the error that
  // proves the node file holds them.
  ASSERT_FALSE(node.has_value());
  EXPECT_THAT(joined(strings(node.error())), HasSubstr("peers: set in both policy"));
  EXPECT_THAT(rendered->nodeConfig, HasSubstr("kind: NodeConfiguration\n"));
  EXPECT_THAT(rendered->nodeConfig,
              HasSubstr(fmt::format("routerId: {}\n", whole->routerId.toString())));
  EXPECT_THAT(rendered->nodeConfig, HasSubstr(fmt::format("localAsn: {}\n", whole->localAsn)));
  EXPECT_EQ(rendered->nodeConfig.find("vips:"), std::string::npos);
}

// The DaemonSet's /metrics: the node file puts it on the router ID (this node's first IPv4
// address) at 9472, where Prometheus scrapes the node, and not on 0.0.0.0, which served it on the
// VIP to every client of the API. Under a ConfigMap that sets no metrics.listen (as
// manifests/daemonset/vipd.yaml) it is what the DaemonSet listens on; the static pod keeps
// 127.0.0.1:9473.
TEST_P(BootstrapGolden, TheNodeFileListensForMetricsOnTheNodeAddress) {
  const Golden& g = GetParam();
  auto rendered = renderData(g.metadataFile, g.image, testing::testTemplate());
  ASSERT_TRUE(rendered.has_value()) << joined(strings(rendered.error()));
  auto daemonSet = config::parseConfigLayers(
      {"apiVersion: vipd.io/v1alpha1\nkind: SpeakerConfiguration\nmode: daemonset\n"
       "vips: [{address: 203.0.113.10/32, interface: lo}]\nhealth: {type: none}\n"
       "metrics: {healthListen: \"127.0.0.1:9474\"}\n",
       "configmap.yaml"},
      config::ConfigFile{rendered->nodeConfig, "node.yaml"});
  ASSERT_TRUE(daemonSet.has_value()) << joined(strings(daemonSet.error()));
  EXPECT_EQ(daemonSet->config.metrics.address.toString(), "192.0.2.11");
  EXPECT_EQ(daemonSet->config.metrics.port, 9472);
  EXPECT_EQ(daemonSet->origins.sourceOf("metrics.listen"), "node.yaml");
  auto staticPod = config::parseConfig(rendered->config, kConfigPath);
  ASSERT_TRUE(staticPod.has_value());
  EXPECT_EQ(staticPod->metrics.address.toString(), "127.0.0.1");
  EXPECT_EQ(staticPod->metrics.port, 9473);
}

// metrics.listen in the metadata widens (or moves) the DaemonSet's listener; its rules are the
// config schema's, checked on the rendered node file.
TEST(BootstrapRender, MetadataMetricsListenGoesIntoTheNodeFileOnly) {
  std::string base = readFile(kDataDir / "ipv4-only.metadata.yaml");
  for (const char* listen : {"0.0.0.0:9472", "[2001:db8::11]:9500"}) {
    auto rendered =
        render({base + fmt::format("metrics: {{listen: \"{}\"}}\n", listen), "m.yaml",
                std::string(kConfigPath), {}, testing::testTemplate(), "t", "", nullptr,
                std::string(kNodeConfigPath)});
    ASSERT_TRUE(rendered.has_value()) << listen << ": " << joined(strings(rendered.error()));
    EXPECT_THAT(rendered->nodeConfig,
                HasSubstr(fmt::format("metrics:\n  listen: \"{}\"\n", listen)));
    EXPECT_THAT(rendered->config, HasSubstr("metrics:\n  listen: \"127.0.0.1:9473\"\n"));
  }
  auto bad = render({base + "metrics: {listen: 192.0.2.11}\n", "m.yaml", std::string(kConfigPath),
                     {}, testing::testTemplate(), "t", "", nullptr, std::string(kNodeConfigPath)});
  ASSERT_FALSE(bad.has_value());
  EXPECT_THAT(strings(bad.error()),
              ElementsAre(AllOf(StartsWith("rendered /etc/vipd/node.yaml:"),
                                HasSubstr("metrics.listen: '192.0.2.11' is not an address:port"))));
  auto empty = render({base + "metrics: {}\n", "m.yaml", std::string(kConfigPath), {},
                       testing::testTemplate(), "t", "", nullptr, std::string(kNodeConfigPath)});
  ASSERT_FALSE(empty.has_value());
  EXPECT_THAT(strings(empty.error()),
              ElementsAre("m.yaml:12:10: metrics.listen: required key 'listen' is missing"));
}

// --distro k3s and rke2: the health check asks their apiserver and trusts their server CA, and
// the static pod mounts that CA.
TEST(BootstrapRender, EachDistroHasItsOwnCaAndStaticPodDirectory) {
  std::string text = readFile(kDataDir / "ipv4-only.metadata.yaml");
  std::string templateText = testing::testTemplate();
  for (const Distro& d : distros()) {
    auto rendered = render({text, "m.yaml", std::string(kConfigPath), std::nullopt, templateText,
                            "t.yaml", "vipd:1", &d, std::string(kNodeConfigPath)});
    ASSERT_TRUE(rendered.has_value()) << d.name << ": " << joined(strings(rendered.error()));
    auto config = config::parseConfig(rendered->config, kConfigPath);
    ASSERT_TRUE(config.has_value()) << d.name;
    EXPECT_EQ(config->health.caFile, d.caFile) << d.name;
    EXPECT_EQ(config->health.url, fmt::format("https://127.0.0.1:{}/readyz", d.apiserverPort));
    ASSERT_TRUE(rendered->manifest.has_value());
    EXPECT_THAT(*rendered->manifest, HasSubstr(fmt::format("path: \"{}\"", d.caFile))) << d.name;
  }
  EXPECT_EQ(findDistro("k3s")->staticPodDir, "/var/lib/rancher/k3s/agent/pod-manifests");
  EXPECT_EQ(findDistro("rke2")->caFile, "/var/lib/rancher/rke2/server/tls/server-ca.crt");
  EXPECT_EQ(defaultDistro().name, "kubeadm");
  EXPECT_EQ(findDistro("openshift"), nullptr);
}

TEST_P(BootstrapGolden, RenderingTwiceIsByteIdentical) {
  const Golden& g = GetParam();
  std::string templateText = testing::testTemplate();
  auto first = renderData(g.metadataFile, g.image, templateText);
  auto second = renderData(g.metadataFile, g.image, templateText);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->config, second->config);
  EXPECT_EQ(first->manifest, second->manifest);
}

TEST_P(BootstrapGolden, RenderedConfigPassesTheConfigValidator) {
  const Golden& g = GetParam();
  std::string templateText = testing::testTemplate();
  auto rendered = renderData(g.metadataFile, g.image, templateText);
  ASSERT_TRUE(rendered.has_value());
  auto config = config::parseConfig(rendered->config, kConfigPath);
  ASSERT_TRUE(config.has_value()) << joined(strings(config.error()));
  EXPECT_EQ(config->mode, config::Mode::StaticPod);
  EXPECT_EQ(config->routerId, bgp::IpAddress::parse("192.0.2.11").value());
  EXPECT_EQ(config->localAsn, 4200000001u);
  EXPECT_EQ(config->control.socket, "/run/vipd/static-pod.sock");
  EXPECT_EQ(config->control.stateDir, "/var/lib/vipd");
  EXPECT_EQ(config->metrics.port, 9473);
  EXPECT_EQ(config->metrics.address.toString(), "127.0.0.1");
  EXPECT_EQ(config->handoff.dir, "/run/vipd");
  EXPECT_EQ(config->handoff.restartTime, std::chrono::seconds(3));
  EXPECT_EQ(config->health.type, config::Health::Type::Apiserver);
  EXPECT_EQ(config->health.caFile, "/etc/kubernetes/pki/ca.crt");
  for (const auto& vip : config->vips) {
    EXPECT_EQ(vip.interface, "lo");
  }
}

INSTANTIATE_TEST_SUITE_P(
    Data, BootstrapGolden,
    ::testing::Values(Golden{"ipv4-only", "ipv4-only.metadata.yaml", std::nullopt},
                      Golden{"dual-stack", "dual-stack.metadata.yaml",
                             "registry.example/vipd@sha256:"
                             "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}),
    [](const auto& info) { return info.param.name == "ipv4-only" ? "Ipv4Only" : "DualStack"; });

TEST(BootstrapRender, DualStackConfigCarriesNextHopAndPasswordFiles) {
  std::string templateText = testing::testTemplate();
  auto rendered = renderData("dual-stack.metadata.yaml", "vipd:1", templateText);
  ASSERT_TRUE(rendered.has_value()) << joined(strings(rendered.error()));
  auto config = config::parseConfig(rendered->config, kConfigPath);
  ASSERT_TRUE(config.has_value()) << joined(strings(config.error()));
  ASSERT_EQ(config->peers.size(), 2u);
  // The first IPv4 node address is the router ID although an IPv6 one is listed first.
  EXPECT_EQ(config->routerId.toString(), "192.0.2.11");
  for (const auto& peer : config->peers) {
    EXPECT_EQ(peer.nextHopIpv6, bgp::IpAddress::parse("2001:db8::11"));
  }
  EXPECT_EQ(config->peers[0].passwordFile, "/etc/vipd/bgp-password");
  EXPECT_EQ(config->peers[1].passwordFile, "/etc/vipd/peers/192.0.2.2.password");
  EXPECT_EQ(config->health.url, "https://[::1]:6443/readyz");
}

TEST(BootstrapRender, JsonAndYamlMetadataRenderTheSameConfig) {
  std::string templateText = testing::testTemplate();
  std::string yaml = readFile(kDataDir / "ipv4-only.metadata.yaml");
  std::string json = readFile(kDataDir / "ipv4-only.metadata.json");
  auto fromYaml = render({yaml, "metadata", std::string(kConfigPath), {}, templateText, "t"});
  auto fromJson = render({json, "metadata", std::string(kConfigPath), {}, templateText, "t"});
  ASSERT_TRUE(fromYaml && fromJson);
  EXPECT_EQ(fromYaml->config, fromJson->config);
  EXPECT_EQ(fromYaml->manifest, fromJson->manifest);
}

TEST(BootstrapRender, OnlyTheHeaderNamesTheMetadataPath) {
  std::string templateText = testing::testTemplate();
  std::string yaml = readFile(kDataDir / "ipv4-only.metadata.yaml");
  auto a = render({yaml, "/a/metadata.yaml", std::string(kConfigPath), {}, templateText, "t"});
  auto b = render({yaml, "/b/metadata.yaml", std::string(kConfigPath), {}, templateText, "t"});
  ASSERT_TRUE(a && b);
  EXPECT_THAT(a->config, ::testing::StartsWith("# Rendered by `vipd render` from "
                                               "/a/metadata.yaml; do not edit.\n"));
  EXPECT_EQ(a->config.substr(a->config.find('\n')), b->config.substr(b->config.find('\n')));
  // A path cannot break out of its comment line.
  auto c = render({yaml, "/c/x\nkind: Evil", std::string(kConfigPath), {}, templateText, "t"});
  ASSERT_TRUE(c.has_value()) << joined(strings(c.error()));
  EXPECT_THAT(c->config, HasSubstr("from /c/x?kind: Evil; do not edit.\n"));
}

TEST(BootstrapRender, ConfigDirectoryAndPathGoIntoTheManifest) {
  std::string templateText = testing::testTemplate();
  std::string yaml = readFile(kDataDir / "ipv4-only.metadata.yaml");
  auto rendered = render({yaml, "m", "/var/lib/vipd-config/speaker.yaml", {}, templateText, "t"});
  ASSERT_TRUE(rendered.has_value()) << joined(strings(rendered.error()));
  EXPECT_THAT(*rendered->manifest,
              HasSubstr("\"--config\", \"/var/lib/vipd-config/speaker.yaml\""));
  EXPECT_THAT(*rendered->manifest, HasSubstr("path: \"/var/lib/vipd-config\""));
  EXPECT_THAT(*rendered->manifest, HasSubstr("containerPort: 9473\n"));
  EXPECT_THAT(*rendered->manifest, HasSubstr("\"/run/vipd/static-pod.sock\""));
}

TEST(BootstrapRender, RulesOfTheConfigSchemaAreCheckedOnTheRenderedConfig) {
  // Well-formed metadata whose config the validator rejects: a covering VIP prefix, an unknown
  // health type, an IPv4 VIP over an IPv6 session. (AS_TRANS is refused earlier, by the metadata
  // reader: it is config's FieldReader.)
  std::string metadata =
      "apiVersion: vipd.io/v1alpha1\n"
      "kind: InstanceMetadata\n"
      "node: {addresses: [192.0.2.11, \"2001:db8::11\"]}\n"
      "localAsn: 65001\n"
      "vips: [203.0.113.0/24, 203.0.113.10/32]\n"
      "peers: [{address: \"2001:db8::1\", asn: 65000}]\n"
      "health: {type: http}\n"
      "image: vipd\n";
  std::string templateText = testing::testTemplate();
  auto rendered = render({metadata, "m.yaml", std::string(kConfigPath), {}, templateText, "t"});
  ASSERT_FALSE(rendered.has_value());
  EXPECT_THAT(
      strings(rendered.error()),
      ElementsAre(
          HasSubstr("rendered /etc/vipd/vipd.yaml:9:14: vips[0].address: a VIP is a single "
                    "address (/32), but 203.0.113.0/24 is a covering prefix"),
          HasSubstr("rendered /etc/vipd/vipd.yaml:14:5: peers[0]: IPv4 VIP 203.0.113.10/32 over "
                    "an IPv6 session needs an IPv4 next hop"),
          HasSubstr("rendered /etc/vipd/vipd.yaml:17:9: health.type: 'http' is not a health "
                    "check type; use apiserver, tcp or none")));
}

// The node file is rendered too: a password or CA file that is the node file would have vipd read
// its own node facts as a key or a certificate bundle (and fail at start, after render said yes).
TEST(BootstrapRender, APasswordOrCaFileThatIsTheNodeFileIsRefused) {
  std::string base = readFile(kDataDir / "ipv4-only.metadata.yaml");
  struct Case {
    std::string nodeOut;  // --node-out; empty: node.yaml beside the config
    std::string file;     // named in the metadata
  };
  for (const auto& c : {Case{std::string(kNodeConfigPath), std::string(kNodeConfigPath)},
                        Case{"", "/etc/vipd/node.yaml"},
                        Case{"", "/etc/vipd/./keys/../node.yaml"},
                        Case{"/etc/vipd/facts/node-1.yaml", "/etc/vipd/facts/node-1.yaml"}}) {
    std::string metadata = base + "passwordFile: " + c.file +
                           "\nhealth: {type: apiserver, caFile: " + c.file + "}\n";
    auto rendered = render({metadata, "m.yaml", std::string(kConfigPath), {},
                            testing::testTemplate(), "t", "", nullptr, c.nodeOut});
    ASSERT_FALSE(rendered.has_value()) << c.file;
    EXPECT_THAT(strings(rendered.error()),
                ElementsAre(HasSubstr(fmt::format("m.yaml:12:15: passwordFile: '{}' is the "
                                                  "rendered node file itself; the password file "
                                                  "needs a file of its own",
                                                  c.file)),
                            HasSubstr(fmt::format("health.caFile: '{}' is the rendered node file "
                                                  "itself; the CA file needs a file of its own",
                                                  c.file))))
        << c.file;
  }
  // Beside the node file is fine.
  auto rendered = render({base + "passwordFile: /etc/vipd/node.yaml.key\n", "m.yaml",
                          std::string(kConfigPath), {}, testing::testTemplate(), "t", "", nullptr,
                          std::string(kNodeConfigPath)});
  EXPECT_TRUE(rendered.has_value()) << joined(strings(rendered.error()));
}

TEST(BootstrapRender, BootstrapDisabledRendersTheConfigOnly) {
  std::string yaml =
      readFile(kDataDir / "ipv4-only.metadata.yaml") + "bootstrap: {enabled: false}\n";
  auto rendered = render({yaml, "m", std::string(kConfigPath), {}, std::nullopt, "missing"});
  ASSERT_TRUE(rendered.has_value()) << joined(strings(rendered.error()));
  EXPECT_EQ(rendered->manifest, std::nullopt);
  EXPECT_TRUE(config::parseConfig(rendered->config, kConfigPath).has_value());
}

TEST(BootstrapRender, AMissingTemplateIsAnErrorWhenBootstrapIsEnabled) {
  std::string yaml = readFile(kDataDir / "ipv4-only.metadata.yaml");
  auto rendered = render({yaml, "m", std::string(kConfigPath), {}, std::nullopt, "tpl"});
  ASSERT_FALSE(rendered.has_value());
  EXPECT_THAT(strings(rendered.error()),
              ElementsAre(HasSubstr("tpl: this vipd was built without the static-pod template")));
}

TEST(BootstrapRender, ABadConfigOutIsRejectedBeforeAnythingElse) {
  auto rendered = render({"{}", "m", "vipd.yaml", {}, "", "t"});
  ASSERT_FALSE(rendered.has_value());
  EXPECT_THAT(strings(rendered.error()),
              ElementsAre("--config-out: --config-out must be an absolute path, got 'vipd.yaml'"));
}

TEST(BootstrapRender, AFilledManifestThatIsNotYamlIsAnError) {
  std::string yaml = readFile(kDataDir / "ipv4-only.metadata.yaml");
  std::string broken = testing::testTemplate() + "  - [unclosed\n";
  auto rendered = render({yaml, "m", std::string(kConfigPath), {}, broken, "tpl"});
  ASSERT_FALSE(rendered.has_value());
  EXPECT_THAT(strings(rendered.error()),
              ElementsAre(HasSubstr("the filled manifest is not valid YAML")));
}

// --- the template filler ---

const std::vector<TemplateValue> kValues = {{"IMAGE", "vipd:1"}, {"PORT", "9473"}};

TEST(BootstrapTemplate, FillsEveryOccurrence) {
  auto filled =
      fillTemplate("image: {{IMAGE}}\nports: [{{PORT}}, {{PORT}}]\n{ not: a } }}\n", "t", kValues);
  ASSERT_TRUE(filled.has_value()) << joined(strings(filled.error()));
  EXPECT_EQ(*filled, "image: vipd:1\nports: [9473, 9473]\n{ not: a } }}\n");
}

TEST(BootstrapTemplate, NotesAboutTheTemplateAreDropped) {
  auto filled = fillTemplate(
      "#% A template note: {{NOT_A_PLACEHOLDER}} is not filled here\n"
      "# kept: a comment for whoever reads the manifest\n"
      "image: {{IMAGE}}  #% kept: not at the start of a line\n"
      "#%\n"
      "port: {{PORT}}\n"
      "#% the last line, without a newline",
      "t", kValues);
  ASSERT_TRUE(filled.has_value()) << joined(strings(filled.error()));
  EXPECT_EQ(*filled,
            "# kept: a comment for whoever reads the manifest\n"
            "image: vipd:1  #% kept: not at the start of a line\n"
            "port: 9473\n");
  // Line numbers in errors still count the notes.
  auto broken = fillTemplate("#% note\n#% note\nimage: {{IMAGE}} {{X}}\nport: {{PORT}}\n", "t",
                             kValues);
  ASSERT_FALSE(broken.has_value());
  EXPECT_THAT(strings(broken.error()), ElementsAre(HasSubstr("t:3:18: unknown placeholder {{X}}")));
}

TEST(BootstrapTemplate, EveryProblemAtOnce) {
  auto filled = fillTemplate(
      "image: {{IMAGE}}\n"         // 1
      "x: {{IMAGES}}\n"            // 2
      "y: {{ IMAGE }} {{port}}\n"  // 3
      "z: {{IMAGE\n",              // 4
      "tpl.yaml", kValues);
  ASSERT_FALSE(filled.has_value());
  EXPECT_THAT(strings(filled.error()),
              ElementsAre("tpl.yaml:2:4: unknown placeholder {{IMAGES}}; vipd render fills only "
                          "{{IMAGE}}, {{PORT}}",
                          "tpl.yaml:3:4: malformed placeholder {{ IMAGE }}; vipd render fills "
                          "only {{IMAGE}}, {{PORT}}",
                          "tpl.yaml:3:16: malformed placeholder {{port}}; vipd render fills only "
                          "{{IMAGE}}, {{PORT}}",
                          "tpl.yaml:4:4: '{{' without a closing '}}' on the same line",
                          "tpl.yaml: the template never uses {{PORT}}, which vipd render fills; "
                          "the template and this vipd disagree"));
}

TEST(BootstrapTemplate, TheStandInTemplateUsesExactlyWhatTheRendererFills) {
  // The renderer's values against the test template: a placeholder renamed on either side fails.
  std::string yaml = readFile(kDataDir / "ipv4-only.metadata.yaml");
  std::string templateText = testing::testTemplate();
  std::string renamed = templateText;
  renamed.replace(renamed.find("{{METRICS_PORT}}"), 16, "{{METRICSPORT}}");
  auto rendered = render({yaml, "m", std::string(kConfigPath), {}, renamed, "tpl"});
  ASSERT_FALSE(rendered.has_value());
  EXPECT_THAT(strings(rendered.error()),
              ElementsAre(HasSubstr("unknown placeholder {{METRICSPORT}}"),
                          HasSubstr("the template never uses {{METRICS_PORT}}")));
}

}  // namespace
}  // namespace vipd::bootstrap
