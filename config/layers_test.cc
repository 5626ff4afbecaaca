// The two config layers (config/layers.h): the cluster file (the DaemonSet's ConfigMap) and
// the node file (this node's facts). Inline YAML, so each expected line can be read off the test.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "config/layers.h"

namespace vipd::config {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;

// Cluster-wide policy only: no router ID, AS or peers.
constexpr std::string_view kCluster =
    "apiVersion: vipd.io/v1alpha1\n"   // line 1
    "kind: SpeakerConfiguration\n"     // line 2
    "vips:\n"                          // line 3
    "  - address: 203.0.113.10/32\n"   // line 4
    "health:\n"                        // line 5
    "  type: none\n"                   // line 6
    "drain:\n"                         // line 7
    "  timeout: 5s\n";                 // line 8

// One node's facts.
constexpr std::string_view kNode =
    "apiVersion: vipd.io/v1alpha1\n"   // line 1
    "kind: NodeConfiguration\n"        // line 2
    "routerId: 192.0.2.11\n"           // line 3
    "localAsn: 64513\n"                // line 4
    "peers:\n"                         // line 5
    "  - address: 192.0.2.1\n"         // line 6
    "    asn: 64512\n";                // line 7

Result<LoadedConfig> parse(std::string_view cluster, std::string_view node,
                           const ConfigOverrides& overrides = {}) {
  return parseConfigLayers({cluster, "vipd.yaml"}, ConfigFile{node, "node.yaml"}, overrides);
}

std::string errorsText(const Result<LoadedConfig>& result) {
  EXPECT_FALSE(result.has_value()) << "expected errors, the config was accepted";
  std::string out;
  if (!result) {
    for (const auto& e : result.error()) {
      out += e.toString() + "\n";
    }
  }
  return out;
}

TEST(ConfigLayers, NodeFactsAndClusterPolicyMakeOneConfig) {
  auto loaded = parse(kCluster, kNode);
  ASSERT_TRUE(loaded.has_value()) << errorsText(loaded);
  const Config& c = loaded->config;
  EXPECT_EQ(c.routerId.toString(), "192.0.2.11");
  EXPECT_EQ(c.localAsn, 64513u);
  ASSERT_EQ(c.peers.size(), 1u);
  EXPECT_EQ(c.peers[0].address.toString(), "192.0.2.1");
  EXPECT_EQ(c.peers[0].asn, 64512u);
  ASSERT_EQ(c.vips.size(), 1u);
  EXPECT_EQ(c.drain.timeout, milliseconds(5000));
  EXPECT_EQ(c.kind, "SpeakerConfiguration");
  EXPECT_EQ(loaded->origins.sourceOf("routerId"), "node.yaml");
  EXPECT_EQ(loaded->origins.sourceOf("peers[0].asn"), "node.yaml");
  EXPECT_EQ(loaded->origins.sourceOf("drain.timeout"), "vipd.yaml");
  EXPECT_EQ(loaded->origins.sourceOf("drain.unbindDelay"), std::nullopt);
}

// The same config written as one file gives the same Config: layering changes where a field is
// written, not what it means.
TEST(ConfigLayers, EqualsTheSingleFileConfig) {
  std::string single =
      std::string(kCluster) + std::string(kNode.substr(kNode.find("routerId")));
  auto one = parseConfig(single, "one.yaml");
  ASSERT_TRUE(one.has_value());
  auto layered = parse(kCluster, kNode);
  ASSERT_TRUE(layered.has_value()) << errorsText(layered);
  EXPECT_EQ(layered->config, *one);
}

TEST(ConfigLayers, MappingsMergeKeyByKey) {
  std::string node = std::string(kNode) +
                     "metrics:\n"                       // line 8
                     "  listen: 192.0.2.11:9472\n"      // line 9
                     "drain:\n"                         // line 10
                     "  unbindDelay: 2s\n";             // line 11
  auto loaded = parse(kCluster, node);
  ASSERT_TRUE(loaded.has_value()) << errorsText(loaded);
  EXPECT_EQ(loaded->config.metrics.address.toString(), "192.0.2.11");
  EXPECT_EQ(loaded->config.drain.timeout, milliseconds(5000));
  EXPECT_EQ(loaded->config.drain.unbindDelay, milliseconds(2000));
  EXPECT_EQ(loaded->origins.sourceOf("drain"), std::nullopt);  // both contribute
  EXPECT_EQ(loaded->origins.sourceOf("drain.unbindDelay"), "node.yaml");
}

TEST(ConfigLayers, AKeyInBothFilesIsAnErrorNamingBothFiles) {
  std::string node = std::string(kNode) +
                     "drain:\n"          // line 8
                     "  timeout: 9s\n"   // line 9
                     "vips: []\n";       // line 10
  std::string text = errorsText(parse(kCluster, node));
  EXPECT_THAT(text, HasSubstr("node.yaml:9:3: drain.timeout: set in both vipd.yaml (line 8) and "
                              "node.yaml (line 9)"));
  EXPECT_THAT(text, HasSubstr("node.yaml:10:1: vips: set in both vipd.yaml (line 3) and "
                              "node.yaml (line 10)"));
}

// A list is one field: two files cannot each add peers.
TEST(ConfigLayers, ListsAreNotMerged) {
  std::string cluster = std::string(kCluster) + "peers:\n  - address: 192.0.2.2\n    asn: 64512\n";
  EXPECT_THAT(errorsText(parse(cluster, kNode)),
              HasSubstr("node.yaml:5:1: peers: set in both vipd.yaml (line 9)"));
}

TEST(ConfigLayers, ErrorsNameTheFileTheKeyIsIn) {
  std::string node = std::string(kNode) + "    holdTime: 2s\n";  // line 8
  std::string cluster = std::string(kCluster) + "  unbindDelay: forever\n";  // line 9
  std::string text = errorsText(parse(cluster, node));
  EXPECT_THAT(text, HasSubstr("vipd.yaml:9:16: drain.unbindDelay:"));
  EXPECT_THAT(text, HasSubstr("node.yaml:8:15: peers[0].holdTime:"));
  // The cluster file's errors come first.
  EXPECT_LT(text.find("vipd.yaml:9"), text.find("node.yaml:8"));
}

TEST(ConfigLayers, TheNodeFileHasItsOwnKind) {
  std::string node(kNode);
  node.replace(node.find("NodeConfiguration"), 17, "SpeakerConfiguration");
  EXPECT_THAT(errorsText(parse(kCluster, node)),
              HasSubstr("node.yaml:2:7: kind: expected 'NodeConfiguration' in the node file, got "
                        "'SpeakerConfiguration'"));
  EXPECT_THAT(errorsText(parse(kCluster, "routerId: 192.0.2.11\n")),
              HasSubstr("node.yaml:1:1: apiVersion: required key 'apiVersion' is missing"));
}

TEST(ConfigLayers, ABrokenNodeFileIsReportedAsSuch) {
  EXPECT_THAT(errorsText(parse(kCluster, "")),
              HasSubstr("node.yaml:1:1: the file is empty; expected a NodeConfiguration mapping"));
  EXPECT_THAT(errorsText(parse(kCluster, "- a\n- b\n")),
              HasSubstr("node.yaml:1:1: expected a NodeConfiguration mapping at the top level, "
                        "got a list"));
  EXPECT_THAT(errorsText(parse(kCluster, "routerId: [\n")),
              HasSubstr("node.yaml:2:1: YAML syntax error"));
  EXPECT_THAT(errorsText(parse(kCluster, std::string(kNode) + "---\nlocalAsn: 1\n")),
              HasSubstr("node.yaml:9:1: the file holds 2 YAML documents; expected exactly one"));
}

// "a: &x [*x]" is a document that contains itself; neither the merge nor the origins recurse
// forever (found by tests/fuzz's config corpus once the origins walk existed).
TEST(ConfigLayers, SelfReferencingAliasesEndInAnError) {
  std::string node = std::string(kNode) + "metrics: &m {listen: *m}\n";
  std::string cluster = std::string(kCluster) + "listen: &l [*l]\n";
  EXPECT_THAT(errorsText(parse(cluster, node)), HasSubstr("metrics.listen"));
}

TEST(ConfigLayers, AKeyMissingFromBothSaysSo) {
  std::string node(kNode);
  node.erase(node.find("localAsn"), 16);
  EXPECT_THAT(errorsText(parse(kCluster, node)),
              HasSubstr("vipd.yaml: localAsn: required key 'localAsn' is missing from both the "
                        "config file and the node file"));
}

TEST(ConfigLayers, RouterIdFromTheFlagAndTheNodeFileIsAnError) {
  ConfigOverrides flag{"192.0.2.12"};
  EXPECT_THAT(errorsText(parse(kCluster, kNode, flag)),
              HasSubstr("node.yaml:3:11: routerId: routerId is set both here and by --router-id"));
  std::string node(kNode);
  node.erase(node.find("routerId"), 21);
  auto loaded = parse(kCluster, node, flag);
  ASSERT_TRUE(loaded.has_value()) << errorsText(loaded);
  EXPECT_EQ(loaded->origins.sourceOf("routerId"), "--router-id");
}

TEST(ConfigLayers, ShowNamesEachFieldsSource) {
  std::string node = std::string(kNode) + "    holdTime: 6s\n";
  auto loaded = parse(kCluster, node);
  ASSERT_TRUE(loaded.has_value()) << errorsText(loaded);
  std::string shown = showConfig(*loaded);
  auto lineOf = [&](std::string_view start) {
    size_t at = shown.find(std::string("\n") + std::string(start));
    EXPECT_NE(at, std::string::npos) << start << " not in\n" << shown;
    return at == std::string::npos ? "" : shown.substr(at + 1, shown.find('\n', at + 1) - at - 1);
  };
  EXPECT_THAT(lineOf("routerId: 192.0.2.11 "), HasSubstr("# node.yaml"));
  EXPECT_THAT(lineOf("drain.timeout: 5s "), HasSubstr("# vipd.yaml"));
  EXPECT_THAT(lineOf("drain.unbindDelay: 1s "), HasSubstr("# default"));
  EXPECT_THAT(lineOf("peers[192.0.2.1].holdTime: 6s "), HasSubstr("# node.yaml"));
  EXPECT_THAT(lineOf("peers[192.0.2.1].port: 179 "), HasSubstr("# default"));
  EXPECT_THAT(lineOf("vips[203.0.113.10/32].interface: \"lo\" "), HasSubstr("# default"));
}

TEST(ConfigLayers, ShowWithoutANodeFileNamesTheOneFile) {
  std::string single =
      std::string(kCluster) + std::string(kNode.substr(kNode.find("routerId")));
  auto loaded = parseConfigLayers({single, "vipd.yaml"}, std::nullopt);
  ASSERT_TRUE(loaded.has_value()) << errorsText(loaded);
  EXPECT_THAT(showConfig(*loaded), HasSubstr("localAsn: 64513"));
  EXPECT_EQ(loaded->origins.sourceOf("localAsn"), "vipd.yaml");
}

TEST(ConfigLayers, AnUnreadableNodeFileIsOneClearError) {
  char dir[] = "/tmp/vipd-layers-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string cluster = std::string(dir) + "/vipd.yaml";
  std::FILE* f = std::fopen(cluster.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fwrite(kCluster.data(), 1, kCluster.size(), f);
  std::fclose(f);
  auto loaded = loadConfig({cluster, std::string(dir) + "/absent.yaml", {}});
  EXPECT_THAT(errorsText(loaded),
              HasSubstr("/absent.yaml: cannot open the node config file: No such file"));
  std::remove(cluster.c_str());
  rmdir(dir);
}

// peerDefaults in the cluster file: session settings for the peers the node files list.
TEST(ConfigLayers, PeerDefaultsFromTheClusterFileApplyToTheNodesPeers) {
  std::string cluster = std::string(kCluster) +
                        "peerDefaults:\n"            // line 9
                        "  holdTime: 3s\n"           // line 10
                        "  bfd: {enabled: true}\n";  // line 11
  std::string node = std::string(kNode) +
                     "  - address: 192.0.2.2\n"     // line 8
                     "    asn: 64512\n"             // line 9
                     "    holdTime: 30s\n";         // line 10
  auto loaded = parse(cluster, node);
  ASSERT_TRUE(loaded.has_value()) << errorsText(loaded);
  const auto& peers = loaded->config.peers;
  ASSERT_EQ(peers.size(), 2u);
  EXPECT_EQ(peers[0].holdTime, milliseconds(3000));
  EXPECT_EQ(peers[0].keepaliveTime, milliseconds(1000));  // a third of the hold time it got
  EXPECT_TRUE(peers[0].bfd.enabled);
  EXPECT_EQ(peers[1].holdTime, milliseconds(30000));      // its own value wins: not a conflict
  EXPECT_EQ(peers[1].keepaliveTime, milliseconds(10000));
  EXPECT_TRUE(peers[1].bfd.enabled);
  std::string shown = showConfig(*loaded);
  EXPECT_THAT(shown, HasSubstr("peers[192.0.2.1].holdTime: 3s"));
  EXPECT_THAT(shown, HasSubstr("# vipd.yaml (peerDefaults)\n"));
  EXPECT_THAT(shown, ::testing::ContainsRegex("peers\\[192.0.2.2\\].holdTime: 30s +# node.yaml"));
}

TEST(ConfigLayers, AWrongPeerDefaultIsReportedOnceWhereItIs) {
  std::string cluster = std::string(kCluster) +
                        "peerDefaults:\n"         // line 9
                        "  holdTime: 2s\n"        // line 10
                        "  asn: 64512\n";         // line 11
  std::string node = std::string(kNode) + "  - {address: 192.0.2.2, asn: 64512}\n";
  std::string text = errorsText(parse(cluster, node));
  EXPECT_THAT(text, HasSubstr("vipd.yaml:10:13: peerDefaults.holdTime:"));
  EXPECT_EQ(text.find("peerDefaults.holdTime"), text.rfind("peerDefaults.holdTime")) << text;
  EXPECT_THAT(text, HasSubstr("vipd.yaml:11:3: peerDefaults.asn: unknown key"));
}

}  // namespace
}  // namespace vipd::config
