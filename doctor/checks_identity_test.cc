// The VIP never becomes the node's identity (doctor/checks_identity.cc, issue 42): each check's
// ok, warn and fail from facts written by hand, and the flags read from the programs' own text
// (doctor/identity_flags.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/test_support.h"
#include "doctor/checks.h"
#include "doctor/identity_flags.h"

namespace vipd::doctor {
namespace {

using ::testing::HasSubstr;
using namespace vipd::config::testing;

config::Config twoVips() {
  auto c = nodeConfig();
  c.vips = {vip("203.0.113.10/32"), vip("2001:db8:ffff::10/128")};
  c.peers = {peer("192.0.2.1")};
  return c;
}

NodeFacts node() {
  NodeFacts f;
  f.addresses = {{prefix("203.0.113.10/32"), "lo"}, {prefix("192.0.2.11/24"), "eth0"}};
  f.interfaces = {{"lo", "", true}, {"eth0", "veth", false}, {"dummy0", "dummy", false}};
  f.routes = {{ip("192.0.2.1"), "eth0", std::nullopt, ip("192.0.2.11"), false, ""}};
  f.kubeletSeen = f.kubeletNodeIpSet = true;
  f.identities = {{"kubelet", "--node-ip", "/proc/100/cmdline", {ip("192.0.2.11")}}};
  f.vipRoutes = {{prefix("203.0.113.10/32"), true, "lo", ""}};
  f.vipReplyRoutes = {{prefix("203.0.113.10/32"), ip("192.0.2.1"), "eth0", ""}};
  return f;
}

TEST(VipIdentity, FailsWhenAProgramTakesTheVipAsItsAddress) {
  auto f = node();
  f.identities.push_back({"kube-apiserver", "--advertise-address", "/proc/200/cmdline",
                          {ip("203.0.113.10")}});
  f.identities.push_back({"etcd", "--advertise-client-urls",
                          "/etc/kubernetes/manifests/etcd.yaml",
                          {ip("192.0.2.11"), ip("2001:db8:ffff::10")}});
  auto c = checkVipIdentity(twoVips(), f);
  EXPECT_EQ(c.verdict, Verdict::Fail);
  EXPECT_THAT(c.detail, HasSubstr("VIP 203.0.113.10 is kube-apiserver's --advertise-address "
                                  "(/proc/200/cmdline)"));
  EXPECT_THAT(c.detail, HasSubstr("VIP 2001:db8:ffff::10 is etcd's --advertise-client-urls "
                                  "(/etc/kubernetes/manifests/etcd.yaml)"));
  EXPECT_THAT(c.fix, HasSubstr("give kube-apiserver this node's own address in "
                               "--advertise-address"));
}

TEST(VipIdentity, TheKubeletsNodeIpAsTheVipFails) {
  auto f = node();
  f.identities = {{"kubelet", "--node-ip", "/var/lib/kubelet/kubeadm-flags.env",
                   {ip("203.0.113.10")}}};
  auto c = checkVipIdentity(twoVips(), f);
  EXPECT_EQ(c.verdict, Verdict::Fail);
  EXPECT_THAT(c.detail, HasSubstr("kubelet's --node-ip (/var/lib/kubelet/kubeadm-flags.env)"));
}

TEST(VipIdentity, OkNamesWhatItCompared) {
  auto c = checkVipIdentity(twoVips(), node());
  EXPECT_EQ(c.verdict, Verdict::Ok) << c.detail;
  EXPECT_EQ(c.detail, "no VIP among kubelet --node-ip 192.0.2.11");
}

TEST(VipIdentity, AKubeletWithoutNodeIpBesideAVipOnARealInterfaceWarns) {
  auto f = node();
  f.kubeletNodeIpSet = false;
  f.identities.clear();
  EXPECT_EQ(checkVipIdentity(twoVips(), f).verdict, Verdict::Ok);  // the VIP is on lo
  f.addresses.push_back({prefix("203.0.113.10/32"), "eth0"});
  auto c = checkVipIdentity(twoVips(), f);
  EXPECT_EQ(c.verdict, Verdict::Warn);
  EXPECT_THAT(c.detail, HasSubstr("no --node-ip and VIP 203.0.113.10 is bound on eth0"));
  f.addresses.back().interface = "dummy0";  // a dummy is not where the kubelet looks
  EXPECT_EQ(checkVipIdentity(twoVips(), f).verdict, Verdict::Ok);
}

TEST(VipIdentity, NothingVisibleIsSaidNotGuessed) {
  NodeFacts f;
  auto c = checkVipIdentity(twoVips(), f);
  EXPECT_EQ(c.verdict, Verdict::Ok);
  EXPECT_THAT(c.detail, HasSubstr("run vipd doctor on the host"));
}

TEST(VipReachable, ARefusedRouteFails) {
  auto f = node();
  EXPECT_EQ(checkVipReachable(twoVips(), f).detail, "203.0.113.10 is bound here");
  f.vipRoutes = {{prefix("203.0.113.10/32"), false, "eth0", ""},
                 {prefix("2001:db8:ffff::10/128"), false, std::nullopt, "No route to host"}};
  auto c = checkVipReachable(twoVips(), f);
  EXPECT_EQ(c.verdict, Verdict::Fail);
  EXPECT_THAT(c.detail, HasSubstr("cannot reach VIP 2001:db8:ffff::10: No route to host"));
  EXPECT_THAT(c.fix, HasSubstr("ip route get 2001:db8:ffff::10"));
  // No route at all (a node without a default route, the VIP not bound yet): a warning.
  f.vipRoutes[1] = {prefix("2001:db8:ffff::10/128"), false, std::nullopt,
                    "Network is unreachable", true};
  c = checkVipReachable(twoVips(), f);
  EXPECT_EQ(c.verdict, Verdict::Warn);
  EXPECT_THAT(c.detail, HasSubstr("2001:db8:ffff::10 not bound here and no route to it"));
}

TEST(VipReplies, APolicyRuleSendingRepliesElsewhereFails) {
  auto f = node();
  EXPECT_EQ(checkVipReplies(twoVips(), f).verdict, Verdict::Ok);
  f.vipReplyRoutes[0].interface = "dummy0";
  auto c = checkVipReplies(twoVips(), f);
  EXPECT_EQ(c.verdict, Verdict::Fail);
  EXPECT_THAT(c.detail, HasSubstr("replies from VIP 203.0.113.10 to 192.0.2.1 leave by dummy0, "
                                  "not by eth0"));
  EXPECT_THAT(c.fix, HasSubstr("ip route get 192.0.2.1 from 203.0.113.10"));
}

TEST(VipReplies, AnUnboundVipIsCheckedOnceBound) {
  auto f = node();
  f.vipRoutes[0].local = false;
  f.vipReplyRoutes[0] = {prefix("203.0.113.10/32"), ip("192.0.2.1"), std::nullopt,
                         "Invalid argument"};
  auto c = checkVipReplies(twoVips(), f);
  EXPECT_EQ(c.verdict, Verdict::Ok);
  EXPECT_THAT(c.detail, HasSubstr("203.0.113.10 not bound here yet"));
  f.vipRoutes[0].local = true;  // bound, yet refused: a real problem
  EXPECT_EQ(checkVipReplies(twoVips(), f).verdict, Verdict::Fail);
}

TEST(VipExposure, AVipOnARealInterfaceBesideARoutingDaemonFails) {
  auto f = node();
  f.routingDaemons = {{77, "bird"}};
  auto c = checkVipExposure(twoVips(), f);
  EXPECT_EQ(c.verdict, Verdict::Ok);
  EXPECT_THAT(c.detail, HasSubstr("bird (pid 77) runs here"));
  f.addresses.push_back({prefix("203.0.113.10/32"), "eth0"});
  c = checkVipExposure(twoVips(), f);
  EXPECT_EQ(c.verdict, Verdict::Fail);
  EXPECT_THAT(c.detail, HasSubstr("VIP 203.0.113.10 is bound on eth0 while bird (pid 77) runs"));
  f.routingDaemons.clear();
  EXPECT_EQ(checkVipExposure(twoVips(), f).verdict, Verdict::Ok);
}

TEST(IdentityFlags, ReadsACommandLineInBothForms) {
  auto argv = splitCmdline(std::string_view("kubelet\0--node-ip=192.0.2.11,2001:db8::11\0"
                                            "--v=1\0",
                                            43));
  ASSERT_EQ(argv.size(), 3u);
  auto flags = identityFlags("kubelet", argv, "/proc/1/cmdline");
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0].flag, "--node-ip");
  EXPECT_EQ(flags[0].addresses, (std::vector{ip("192.0.2.11"), ip("2001:db8::11")}));
  flags = identityFlags("kube-apiserver", {"kube-apiserver", "--advertise-address", "192.0.2.12"},
                        "x");
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0].addresses, std::vector{ip("192.0.2.12")});
  // Another program's flag, a host name, a flag without a value: nothing.
  EXPECT_TRUE(identityFlags("etcd", {"etcd", "--node-ip=192.0.2.1"}, "x").empty());
  EXPECT_TRUE(identityFlags("kubelet", {"kubelet", "--node-ip=node1.example"}, "x").empty());
  EXPECT_TRUE(identityFlags("kubelet", {"kubelet", "--node-ip"}, "x").empty());
}

TEST(IdentityFlags, ReadsKubeadmsFiles) {
  // kubeadm's etcd.yaml and kube-apiserver.yaml (their command lists), and kubeadm-flags.env.
  const std::string etcd = R"(apiVersion: v1
kind: Pod
metadata:
  annotations:
    kubeadm.kubernetes.io/etcd.advertise-client-urls: https://192.0.2.11:2379
spec:
  containers:
  - command:
    - etcd
    - --advertise-client-urls=https://192.0.2.11:2379
    - --initial-advertise-peer-urls=https://[2001:db8::11]:2380
    - --listen-client-urls=https://127.0.0.1:2379,https://192.0.2.11:2379
)";
  auto flags = identityFlagsInText(etcd, "etcd.yaml");
  ASSERT_EQ(flags.size(), 2u);
  EXPECT_EQ(flags[0].program, "etcd");
  EXPECT_EQ(flags[0].flag, "--advertise-client-urls");
  EXPECT_EQ(flags[0].addresses, std::vector{ip("192.0.2.11")});
  EXPECT_EQ(flags[1].addresses, std::vector{ip("2001:db8::11")});
  flags = identityFlagsInText(
      R"({"command": ["kube-apiserver", "--advertise-address=203.0.113.10"]})",
      "kube-apiserver.json");
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0].program, "kube-apiserver");
  EXPECT_EQ(flags[0].addresses, std::vector{ip("203.0.113.10")});
  flags = identityFlagsInText(
      "KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=unix:///run/containerd/containerd.sock "
      "--node-ip=203.0.113.10 --pod-infra-container-image=registry.k8s.io/pause:3.10\"\n",
      "kubeadm-flags.env");
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0].program, "kubelet");
  EXPECT_EQ(flags[0].addresses, std::vector{ip("203.0.113.10")});
}

TEST(IdentityFlags, KnowsTheRoutingDaemons) {
  EXPECT_TRUE(isRoutingDaemon("bird"));
  EXPECT_TRUE(isRoutingDaemon("zebra"));
  EXPECT_TRUE(isRoutingDaemon("cilium-agent"));
  EXPECT_FALSE(isRoutingDaemon("vipd"));
  EXPECT_FALSE(isRoutingDaemon("birdc"));
  EXPECT_TRUE(isIdentityProgram("kube-apiserver"));
  EXPECT_FALSE(isIdentityProgram("kube-scheduler"));
}

}  // namespace
}  // namespace vipd::doctor
