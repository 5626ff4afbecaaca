// The ProbeConfiguration (config/probe_config.h): the example file, the site's one source, each
// refused value with its line:column, read off the inline YAML.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "config/probe_config.h"

namespace vipd::config {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;

std::string describeErrors(const std::vector<ConfigError>& errors) {
  std::string out;
  for (const auto& e : errors) {
    out += e.toString() + "\n";
  }
  return out;
}

constexpr std::string_view kHead =
    "apiVersion: vipd.io/v1alpha1\n"
    "kind: ProbeConfiguration\n";

constexpr std::string_view kTargets =
    "targets:\n"
    "  - name: vip\n"
    "    url: https://192.0.2.10:6443/readyz\n"
    "    caFile: /ca.crt\n";

std::vector<ConfigError> errorsOf(const std::string& yaml, const ProbeOverrides& overrides = {}) {
  auto parsed = parseProbeConfig(yaml, "probe.yaml", overrides);
  EXPECT_FALSE(parsed.has_value()) << yaml;
  return parsed ? std::vector<ConfigError>{} : parsed.error();
}

TEST(ProbeConfig, ExampleFileIsValidAndSaysWhatItSays) {
  auto config = loadProbeConfigFile(VIPD_PROBE_EXAMPLE_CONFIG);
  ASSERT_TRUE(config.has_value()) << describeErrors(config.error());
  EXPECT_EQ(config->site, "site-a");
  EXPECT_EQ(config->interval, milliseconds(5000));
  EXPECT_EQ(config->timeout, milliseconds(2000));
  ASSERT_EQ(config->targets.size(), 3u);
  EXPECT_EQ(config->targets[0].name, "vip");
  EXPECT_EQ(config->targets[0].serverName, "kubernetes");
  EXPECT_EQ(config->targets[0].expect, ProbeExpect::Readyz);
  EXPECT_EQ(config->targets[1].expect, ProbeExpect::Version);
  EXPECT_EQ(config->targets[2].serverName, std::nullopt);
  EXPECT_EQ(config->listen.port, 9474);
  EXPECT_EQ(config->listen.address.toString(), "127.0.0.1");
}

TEST(ProbeConfig, DefaultsApply) {
  auto config = parseProbeConfig(std::string(kHead) + "site: a\n" + std::string(kTargets), "p");
  ASSERT_TRUE(config.has_value()) << describeErrors(config.error());
  EXPECT_EQ(config->interval, milliseconds(5000));
  EXPECT_EQ(config->timeout, milliseconds(2000));
  EXPECT_EQ(config->targets[0].expect, ProbeExpect::Readyz);
}

TEST(ProbeConfig, SiteComesFromExactlyOneSource) {
  std::string withoutSite = std::string(kHead) + std::string(kTargets);
  auto fromFlag = parseProbeConfig(withoutSite, "p", {"site-b"});
  ASSERT_TRUE(fromFlag.has_value()) << describeErrors(fromFlag.error());
  EXPECT_EQ(fromFlag->site, "site-b");

  auto missing = errorsOf(withoutSite);
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0].path, "site");
  EXPECT_THAT(missing[0].message, HasSubstr("--site"));

  auto both = errorsOf(std::string(kHead) + "site: a\n" + std::string(kTargets), {"b"});
  ASSERT_EQ(both.size(), 1u);
  EXPECT_EQ(both[0].line, 3);
  EXPECT_THAT(both[0].message, HasSubstr("both"));

  auto badFlag = errorsOf(withoutSite, {"node-1.example/x"});
  ASSERT_EQ(badFlag.size(), 1u);
  EXPECT_THAT(badFlag[0].message, HasSubstr("label value"));
}

TEST(ProbeConfig, SiteAndNamesAreLabelValues) {
  EXPECT_EQ(labelValueProblem("site-a"), std::nullopt);
  EXPECT_EQ(labelValueProblem("eu_west.1"), std::nullopt);
  EXPECT_NE(labelValueProblem(""), std::nullopt);
  EXPECT_NE(labelValueProblem("-a"), std::nullopt);
  EXPECT_NE(labelValueProblem("a b"), std::nullopt);
  EXPECT_NE(labelValueProblem(std::string(64, 'a')), std::nullopt);
  auto errors = errorsOf(std::string(kHead) + "site: 'a/b'\n" + std::string(kTargets));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].toString(),
            "probe.yaml:3:7: site: 'a/b' may hold only letters, digits, '-', '_' and '.' (a "
            "Kubernetes label value)");
}

TEST(ProbeConfig, EachWrongTargetValueIsNamedWhereItIs) {
  auto errors = errorsOf(std::string(kHead) +
                         "site: a\n"
                         "targets:\n"
                         "  - name: vip\n"                        // 5
                         "    url: http://192.0.2.10/readyz\n"    // 6
                         "    caFile: ca.crt\n"                   // 7
                         "    serverName: 192.0.2.1\n"            // 8
                         "    expect: healthz\n"                  // 9
                         "    verify: false\n"                    // 10
                         "  - name: vip\n"                        // 11
                         "    url: https://x:6443/\n"
                         "    caFile: /ca\n"
                         "  - url: https://x:6443/\n");           // 14
  ASSERT_EQ(errors.size(), 8u) << describeErrors(errors);
  EXPECT_EQ(errors[0].toString(),
            "probe.yaml:6:10: targets[0].url: 'http://192.0.2.10/readyz': only https:// URLs are "
            "supported");
  EXPECT_EQ(errors[1].line, 7);
  EXPECT_THAT(errors[1].message, HasSubstr("absolute path"));
  EXPECT_EQ(errors[2].line, 8);
  EXPECT_THAT(errors[2].message, HasSubstr("is an IP address"));
  EXPECT_EQ(errors[3].line, 9);
  EXPECT_THAT(errors[3].message, HasSubstr("readyz"));
  EXPECT_EQ(errors[4].path, "targets[0].verify");
  EXPECT_EQ(errors[5].line, 11);
  EXPECT_THAT(errors[5].message, HasSubstr("already used (line 5)"));
  EXPECT_EQ(errors[6].path, "targets[2].name");
  EXPECT_THAT(errors[6].message, HasSubstr("required key 'name'"));
  EXPECT_EQ(errors[7].path, "targets[2].caFile");
}

TEST(ProbeConfig, TimingIsBoundedAndTheTimeoutShorterThanTheInterval) {
  auto tooFast = errorsOf(std::string(kHead) + "site: a\ninterval: 500ms\ntimeout: 200ms\n" +
                          std::string(kTargets));
  ASSERT_EQ(tooFast.size(), 1u) << describeErrors(tooFast);
  EXPECT_EQ(tooFast[0].path, "interval");
  auto overlap = errorsOf(std::string(kHead) + "site: a\ninterval: 2s\ntimeout: 2s\n" +
                          std::string(kTargets));
  ASSERT_EQ(overlap.size(), 1u) << describeErrors(overlap);
  EXPECT_EQ(overlap[0].toString(),
            "probe.yaml:5:10: timeout: the timeout (2s) must be shorter than the interval (2s): a "
            "probe still running when the next one is due would overlap it");
}

TEST(ProbeConfig, DocumentShapeErrors) {
  EXPECT_THAT(errorsOf("")[0].message, HasSubstr("empty"));
  auto speaker = errorsOf("apiVersion: vipd.io/v1alpha1\nkind: SpeakerConfiguration\nsite: a\n" +
                          std::string(kTargets));
  ASSERT_EQ(speaker.size(), 1u);
  EXPECT_THAT(speaker[0].message, HasSubstr("ProbeConfiguration"));
  auto noTargets = errorsOf(std::string(kHead) + "site: a\ntargets: []\n");
  ASSERT_EQ(noTargets.size(), 1u);
  EXPECT_THAT(noTargets[0].message, HasSubstr("at least one target"));
  auto badListen = errorsOf(std::string(kHead) + "site: a\n" + std::string(kTargets) +
                            "metrics:\n  listen: localhost:9474\n");
  ASSERT_EQ(badListen.size(), 1u);
  EXPECT_EQ(badListen[0].path, "metrics.listen");
  auto syntax = errorsOf("site: [a\n");
  ASSERT_EQ(syntax.size(), 1u);
  EXPECT_GT(syntax[0].line, 0);
}

TEST(ProbeConfig, UnreadableFileIsOneErrorWithTheReason) {
  auto config = loadProbeConfigFile("/nonexistent/probe.yaml");
  ASSERT_FALSE(config.has_value());
  ASSERT_EQ(config.error().size(), 1u);
  EXPECT_THAT(config.error()[0].toString(), HasSubstr("No such file"));
}

}  // namespace
}  // namespace vipd::config
