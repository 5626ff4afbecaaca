// The text the fact gathering reads (doctor/fact_parsing.h), as the kernel and kubelet's users
// write it.
#include "doctor/fact_parsing.h"

#include <gtest/gtest.h>

namespace vipd::doctor {
namespace {

TEST(FactParsing, EffectiveCapabilitiesFromProcStatus) {
  // /proc/self/status of a process with NET_BIND_SERVICE, NET_ADMIN and NET_RAW (the pods' set).
  constexpr std::string_view kStatus =
      "Name:\tvipd\nUmask:\t0022\nState:\tS (sleeping)\nCapInh:\t0000000000000000\n"
      "CapPrm:\t0000000000003400\nCapEff:\t0000000000003400\nCapBnd:\t0000000000003400\n"
      "CapAmb:\t0000000000000000\nNoNewPrivs:\t1\n";
  auto caps = parseEffectiveCapabilities(kStatus);
  ASSERT_TRUE(caps.has_value());
  EXPECT_EQ(*caps, (1ULL << kCapNetBindService) | (1ULL << kCapNetAdmin) | (1ULL << kCapNetRaw));
  // root's full set.
  EXPECT_EQ(parseEffectiveCapabilities("CapEff:\t000001ffffffffff\n"), 0x000001ffffffffffULL);
  // Only the key at the start of a line, only hex.
  EXPECT_FALSE(parseEffectiveCapabilities("Name:\tCapEff:\n").has_value());
  EXPECT_FALSE(parseEffectiveCapabilities("CapEff:\tzz\n").has_value());
  EXPECT_FALSE(parseEffectiveCapabilities("CapEff:\t\n").has_value());
  EXPECT_FALSE(parseEffectiveCapabilities("").has_value());
}

TEST(FactParsing, SysctlIntegers) {
  EXPECT_EQ(parseSysctlInteger("1\n"), 1);
  EXPECT_EQ(parseSysctlInteger("2"), 2);
  EXPECT_EQ(parseSysctlInteger("1024\n"), 1024);
  EXPECT_FALSE(parseSysctlInteger("").has_value());
  EXPECT_FALSE(parseSysctlInteger("1 2\n").has_value());
  EXPECT_FALSE(parseSysctlInteger("strict\n").has_value());
}

TEST(FactParsing, SysctlNamesAsSysctlTakesThem) {
  EXPECT_EQ(sysctlName("eth0", "rp_filter"), "net.ipv4.conf.eth0.rp_filter");
  EXPECT_EQ(sysctlName("all", "arp_ignore"), "net.ipv4.conf.all.arp_ignore");
  // A VLAN interface's dot is written as a slash, or sysctl reads it as a separator.
  EXPECT_EQ(sysctlName("eth0.100", "rp_filter"), "net.ipv4.conf.eth0/100.rp_filter");
}

TEST(FactParsing, AManifestRunsVipdWhenAnImageIsVipds) {
  // vipd render's static pod (YAML, the image quoted).
  EXPECT_TRUE(manifestRunsVipd("spec:\n  containers:\n    - name: vipd\n      image: "
                               "\"localhost/vipd:0.2.0\"\n      imagePullPolicy: IfNotPresent\n"));
  EXPECT_TRUE(manifestRunsVipd("  - image: registry.example:5000/infra/vipd@sha256:abcd\n"));
  EXPECT_TRUE(manifestRunsVipd("    image: 'vipd'  # pinned\n"));
  // JSON on one line.
  EXPECT_TRUE(manifestRunsVipd(
      R"({"spec":{"containers":[{"name":"x","image":"ghcr.io/x/vipd:1.0","args":[]}]}})"));
  // Another pod: kube-apiserver; a container named vipd with another image; vipd in a path.
  EXPECT_FALSE(manifestRunsVipd("    image: registry.k8s.io/kube-apiserver:v1.30.0\n"));
  EXPECT_FALSE(manifestRunsVipd("  - name: vipd\n    image: busybox\n"));
  EXPECT_FALSE(manifestRunsVipd("    image: registry.example/vipd/tools:1\n"));
  EXPECT_FALSE(manifestRunsVipd("    image: vipd-exporter:1\n"));
  // Only the key `image`, not imagePullPolicy or baseimage.
  EXPECT_FALSE(manifestRunsVipd("    baseimage: vipd\n    imagePullPolicy: vipd\n"));
  EXPECT_FALSE(manifestRunsVipd(""));
}

}  // namespace
}  // namespace vipd::doctor
