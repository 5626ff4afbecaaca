// vipd doctor's checks (doctor/checks.h): each one's ok, warn and fail, from facts written by
// hand the way the gathering would observe them on a node.
#include "doctor/checks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/test_support.h"
#include "doctor/fact_parsing.h"

namespace vipd::doctor {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace vipd::config::testing;

constexpr int kSelf = 4242;

LocalAddress local(std::string_view cidr, std::string interface) {
  return {prefix(cidr), std::move(interface)};
}

// A control-plane node set up right: router ID 192.0.2.11 (AS 65001), two VIPs on lo, one eBGP
// peer on eth0's network, the apiserver check on 127.0.0.1.
config::Config goodConfig() {
  auto c = nodeConfig();
  c.vips = {vip("203.0.113.10/32"), vip("2001:db8:ffff::10/128")};
  c.peers = {peer("192.0.2.1")};
  c.peers[0].sourceAddress = ip("192.0.2.11");
  c.peers[0].nextHopIpv6 = ip("2001:db8::11");
  c.health.type = config::Health::Type::Apiserver;
  c.health.caFile = "/etc/kubernetes/pki/ca.crt";
  return c;
}

// ... and what the node shows: vipd's own session Established, a kubeadm-shaped certificate
// naming both VIPs, the pods' capabilities, kubelet's directory with two manifests.
NodeFacts goodFacts() {
  NodeFacts f;
  f.config.names = "vipd.yaml";
  f.selfPid = kSelf;
  f.addresses = {local("127.0.0.1/8", "lo"), local("203.0.113.10/32", "lo"),
                 local("192.0.2.11/24", "eth0"), local("2001:db8::11/64", "eth0")};
  f.interfaces = {{"lo", "", true}, {"eth0", "veth", false}};
  f.routes = {{ip("192.0.2.1"), "eth0", std::nullopt, ip("192.0.2.11"), false, ""}};
  f.sysctls["all"] = {0, 0, 0};
  f.sysctls["eth0"] = {2, 0, 0};
  f.sysctls["lo"] = {0, 0, 0};
  f.sockets = {{TcpSocket::State::Established, ip("192.0.2.11"), 40000, ip("192.0.2.1"), 179,
                Process{kSelf, "vipd"}}};
  f.certificate = ApiserverCertificate{
      "127.0.0.1:6443",
      std::nullopt,
      std::nullopt,
      {"kubernetes", "kubernetes.default"},
      {ip("10.96.0.1"), ip("192.0.2.11"), ip("203.0.113.10"), ip("2001:db8:ffff::10")}};
  f.effectiveCapabilities =
      (1ULL << kCapNetAdmin) | (1ULL << kCapNetBindService) | (1ULL << kCapNetRaw);
  f.stateDir = {true, true, true, "", "", false};
  f.staticPods.path = "/etc/kubernetes/manifests";
  f.staticPods.exists = true;
  f.staticPods.files = {{"kube-apiserver.yaml", true, std::nullopt, false},
                        {"vipd.yaml", true, std::nullopt, true}};
  f.identities = {{"kubelet", "--node-ip", "/proc/100/cmdline", {ip("192.0.2.11")}},
                  {"kube-apiserver", "--advertise-address", "/proc/200/cmdline",
                   {ip("192.0.2.11")}}};
  f.kubeletSeen = f.kubeletNodeIpSet = true;
  f.vipRoutes = {{prefix("203.0.113.10/32"), true, "lo", ""},
                 {prefix("2001:db8:ffff::10/128"), true, "lo", ""}};
  f.vipReplyRoutes = {{prefix("203.0.113.10/32"), ip("192.0.2.1"), "eth0", ""}};
  return f;
}

TEST(Doctor, ANodeSetUpRightPassesEveryCheckInOrder) {
  auto checks = judge(goodConfig(), goodFacts());
  std::vector<std::string> names;
  for (const auto& c : checks) {
    names.push_back(c.name);
    EXPECT_EQ(c.verdict, Verdict::Ok) << formatLine(c);
    EXPECT_TRUE(c.fix.empty()) << formatLine(c);
  }
  EXPECT_EQ(names, (std::vector<std::string>{
                       "config", "router-id", "local-addresses", "apiserver-certificate",
                       "bgp-port", "bgp-sessions", "peer-routes", "rp-filter", "arp",
                       "vip-identity", "vip-reachable", "vip-replies", "vip-exposure",
                       "capabilities", "state-dir", "password-files", "static-pods"}));
  EXPECT_EQ(exitCode(checks), 0);
  EXPECT_EQ(formatCounts(count(checks)), "17 ok, 0 warn, 0 fail");
}

TEST(Doctor, LinesAlignAndWarningsDoNotFail) {
  Check warn{"arp", Verdict::Warn, "found this", "do that"};
  EXPECT_EQ(formatLine(warn), "warn  arp                    found this; fix: do that");
  EXPECT_EQ(formatLine({"config", Verdict::Ok, "valid", ""}),
            "ok    config                 valid");
  EXPECT_EQ(exitCode({warn}), 0);
  EXPECT_EQ(exitCode({warn, {"x", Verdict::Fail, "", ""}}), kExitFailed);
}

TEST(Doctor, AConfigThatDoesNotLoadFailsWithEachError) {
  std::vector<config::ConfigError> errors{
      {"node.yaml", 3, 1, "routerId",
       "set in both vipd.yaml (line 3) and node.yaml (line 3); each field comes from exactly "
       "one file"},
      {"vipd.yaml", 9, 5, "peers[0].holdTime", "hold time 2s is not allowed"}};
  auto check = configRefused("vipd.yaml + node.yaml", errors);
  EXPECT_EQ(check.name, "config");
  EXPECT_EQ(check.verdict, Verdict::Fail);
  EXPECT_THAT(check.detail, HasSubstr("vipd.yaml + node.yaml: 2 error(s)"));
  EXPECT_THAT(check.detail, HasSubstr("node.yaml:3:1: routerId: set in both"));
  EXPECT_THAT(check.detail, HasSubstr("vipd.yaml:9:5: peers[0].holdTime: hold time 2s"));
  auto facts = goodFacts();
  facts.config = {"vipd.yaml + node.yaml", true, std::nullopt};
  EXPECT_THAT(checkConfigLayers(facts).detail, HasSubstr("merge without conflict"));
}

TEST(Doctor, RouterIdMustBeThisNodesAddress) {
  auto config = goodConfig();
  auto facts = goodFacts();
  EXPECT_THAT(checkRouterId(config, facts).detail, HasSubstr("192.0.2.11 is this node's address "
                                                             "on eth0"));
  config.routerId = ip("192.0.2.99");
  config::FieldOrigins origins;
  origins.record("routerId", "node.yaml");
  facts.config.origins = origins;
  auto check = checkRouterId(config, facts);
  EXPECT_EQ(check.verdict, Verdict::Fail);
  EXPECT_THAT(check.detail, HasSubstr("router ID 192.0.2.99 (from node.yaml) is not an address "
                                      "of this node"));
  EXPECT_THAT(check.detail, HasSubstr("192.0.2.11/24 on eth0"));
  EXPECT_THAT(check.detail, Not(HasSubstr("2001:db8::11")));
  EXPECT_THAT(check.fix, HasSubstr("allowNonLocalRouterId"));
  config.allowNonLocalRouterId = true;
  EXPECT_EQ(checkRouterId(config, facts).verdict, Verdict::Ok);
  facts.addressesError = "list addresses: Operation not permitted";
  auto unknown = checkRouterId(config, facts);
  EXPECT_EQ(unknown.verdict, Verdict::Warn);
  EXPECT_TRUE(unknown.inconclusive);
}

TEST(Doctor, EveryOtherAddressOfThisNodeInTheConfigIsLocal) {
  auto config = goodConfig();
  auto facts = goodFacts();
  config.metrics.address = ip("127.0.0.2");  // the kernel's local table holds 127/8 whole
  auto ok = checkLocalAddresses(config, facts);
  EXPECT_EQ(ok.verdict, Verdict::Ok) << ok.detail;
  EXPECT_THAT(ok.detail, HasSubstr("peers[0].sourceAddress 192.0.2.11"));
  config.peers[0].sourceAddress = ip("192.0.2.12");  // a node file rendered for another node
  config.peers[0].nextHopIpv6 = ip("2001:db8::12");
  config::FieldOrigins origins;
  origins.record("peers[0].sourceAddress", "node.yaml");
  facts.config.origins = origins;
  auto check = checkLocalAddresses(config, facts);
  EXPECT_EQ(check.verdict, Verdict::Fail);
  EXPECT_THAT(check.detail, HasSubstr("peers[0].sourceAddress 192.0.2.12 (from node.yaml) and "
                                      "peers[0].nextHopIpv6 2001:db8::12 are not an address of "
                                      "this node"));
  EXPECT_THAT(check.fix, HasSubstr("IPv4: 127.0.0.1/8 on lo, 203.0.113.10/32 on lo, "
                                   "192.0.2.11/24 on eth0; IPv6: 2001:db8::11/64 on eth0"));
  // A wildcard listener names no address.
  auto wildcard = goodConfig();
  wildcard.peers[0].sourceAddress.reset();
  wildcard.peers[0].nextHopIpv6.reset();
  wildcard.metrics.address = ip("0.0.0.0");
  EXPECT_THAT(checkLocalAddresses(wildcard, facts).detail,
              HasSubstr("names no address of this node besides the router ID"));
}

TEST(Doctor, TheApiserverCertificateMustNameEveryVip) {
  auto config = goodConfig();
  auto facts = goodFacts();
  EXPECT_THAT(checkApiserverCertificate(config, facts).detail,
              HasSubstr("verifies against /etc/kubernetes/pki/ca.crt and names every VIP "
                        "(203.0.113.10 and 2001:db8:ffff::10)"));
  // kubeadm's certificate without the VIPs: the failure names the VIP and the SAN list.
  facts.certificate->ipAddresses = {ip("10.96.0.1"), ip("192.0.2.11"), ip("2001:db8:ffff::10")};
  auto check = checkApiserverCertificate(config, facts);
  EXPECT_EQ(check.verdict, Verdict::Fail);
  EXPECT_EQ(check.detail,
            "the certificate served at 127.0.0.1:6443 lacks VIP 203.0.113.10 (its "
            "subjectAltNames: DNS:kubernetes, DNS:kubernetes.default, IP:10.96.0.1, "
            "IP:192.0.2.11, IP:2001:db8:ffff::10): clients that reach the apiserver through it "
            "fail TLS");
  EXPECT_THAT(check.fix, HasSubstr("apiServer.certSANs"));
  // Signed by another CA: a failure too, and the VIPs are still judged.
  facts.certificate->verifyError = "unable to get local issuer certificate";
  check = checkApiserverCertificate(config, facts);
  EXPECT_EQ(check.verdict, Verdict::Fail);
  EXPECT_THAT(check.detail, HasSubstr("does not verify against health.caFile "
                                      "/etc/kubernetes/pki/ca.crt: unable to get local issuer"));
  EXPECT_THAT(check.detail, HasSubstr("lacks VIP 203.0.113.10"));
  // No answer: nothing is known, a warning that says so.
  facts.certificate->fetchError = "Connection refused";
  check = checkApiserverCertificate(config, facts);
  EXPECT_EQ(check.verdict, Verdict::Warn);
  EXPECT_TRUE(check.inconclusive);
  EXPECT_THAT(check.detail, HasSubstr("cannot read the certificate served at 127.0.0.1:6443: "
                                      "Connection refused"));
  // No apiserver check configured: not checked, and says how to check by hand.
  config.health.type = config::Health::Type::None;
  facts.certificate.reset();
  check = checkApiserverCertificate(config, facts);
  EXPECT_EQ(check.verdict, Verdict::Warn);
  EXPECT_FALSE(check.inconclusive);
  EXPECT_THAT(check.fix, HasSubstr("openssl s_client"));
}

TEST(Doctor, AnotherDaemonOnPort179) {
  auto config = goodConfig();
  auto facts = goodFacts();
  TcpSocket listener{TcpSocket::State::Listen, ip("0.0.0.0"), 179, ip("0.0.0.0"), 0,
                     Process{77, "bird"}};
  facts.sockets.push_back(listener);
  // vipd dials out: a CNI's speaker may listen there, with a warning.
  auto check = checkBgpPort(config, facts);
  EXPECT_EQ(check.verdict, Verdict::Warn);
  EXPECT_THAT(check.detail, HasSubstr("bird (pid 77) listens on 0.0.0.0:179: vipd dials out "
                                      "(listen.enabled is false)"));
  EXPECT_THAT(check.fix, HasSubstr("192.0.2.1"));
  // vipd listens too: that port is taken.
  config.listen.enabled = true;
  check = checkBgpPort(config, facts);
  EXPECT_EQ(check.verdict, Verdict::Fail);
  EXPECT_THAT(check.detail, HasSubstr("where vipd's BGP listener (listen.enabled, 0.0.0.0:179) "
                                      "must bind"));
  // ... also on a specific address under vipd's wildcard, and an IPv6 wildcard over IPv4.
  facts.sockets.back().local = ip("192.0.2.11");
  EXPECT_EQ(checkBgpPort(config, facts).verdict, Verdict::Fail);
  facts.sockets.back().local = ip("::");
  EXPECT_EQ(checkBgpPort(config, facts).verdict, Verdict::Fail);
  // Elsewhere than vipd's listener: no conflict, a warning.
  facts.sockets.back().local = ip("127.0.0.1");
  config.listen.address = ip("192.0.2.11");
  EXPECT_EQ(checkBgpPort(config, facts).verdict, Verdict::Warn);
  // vipd's own listener (this process, or another vipd) is no conflict.
  facts.sockets.back().local = ip("192.0.2.11");
  facts.sockets.back().owner = Process{kSelf, "vipd"};
  EXPECT_EQ(checkBgpPort(config, facts).verdict, Verdict::Ok);
  facts.sockets.back().owner = Process{99, "vipd"};
  EXPECT_THAT(checkBgpPort(config, facts).detail, HasSubstr("only vipd listens on port 179"));
  // An owner this process cannot see (another pod, not root): a warning saying so.
  facts.sockets.back().owner.reset();
  facts.sockets.back().local = ip("127.0.0.1");
  check = checkBgpPort(config, facts);
  EXPECT_EQ(check.verdict, Verdict::Warn);
  EXPECT_THAT(check.detail, HasSubstr("a process this one cannot see listens on 127.0.0.1:179"));
  EXPECT_THAT(check.fix, HasSubstr("as root on the host"));
  facts.socketsError = "/proc/net/tcp: Permission denied";
  EXPECT_TRUE(checkBgpPort(config, facts).inconclusive);
}

TEST(Doctor, AnotherDaemonsSessionWithVipdsPeer) {
  auto config = goodConfig();
  auto facts = goodFacts();
  EXPECT_THAT(checkBgpSessions(config, facts).detail, HasSubstr("(vipd's own: 1)"));
  // BIRD peering with the same router from the node's address: the router sees two speakers.
  facts.sockets.push_back({TcpSocket::State::Established, ip("192.0.2.11"), 179, ip("192.0.2.1"),
                           51234, Process{77, "bird"}});
  auto check = checkBgpSessions(config, facts);
  EXPECT_EQ(check.verdict, Verdict::Fail);
  EXPECT_THAT(check.detail, HasSubstr("bird (pid 77) holds a BGP session with peer 192.0.2.1 "
                                      "(192.0.2.11:179 - 192.0.2.1:51234), from the address vipd "
                                      "uses"));
  // From another local address: the router can tell them apart; a warning.
  facts.sockets.back().local = ip("192.0.2.50");
  check = checkBgpSessions(config, facts);
  EXPECT_EQ(check.verdict, Verdict::Warn);
  EXPECT_FALSE(check.inconclusive);
  // Without sourceAddress vipd uses the kernel's source for the route: the same test.
  config.peers[0].sourceAddress.reset();
  facts.sockets.back().local = ip("192.0.2.11");
  EXPECT_EQ(checkBgpSessions(config, facts).verdict, Verdict::Fail);
  // Owner not visible: a warning (the node's other vipd instance in another pod, perhaps).
  facts.sockets.back().owner.reset();
  check = checkBgpSessions(config, facts);
  EXPECT_EQ(check.verdict, Verdict::Warn);
  EXPECT_TRUE(check.inconclusive);
  EXPECT_THAT(check.fix, HasSubstr("other vipd instance"));
  // A session with a host that is no peer, or to another port, is none of vipd's business.
  facts.sockets.back() = {TcpSocket::State::Established, ip("192.0.2.11"), 40001, ip("192.0.2.9"),
                          179, Process{77, "bird"}};
  facts.sockets.push_back({TcpSocket::State::Established, ip("192.0.2.11"), 40002,
                           ip("192.0.2.1"), 22, Process{78, "ssh"}});
  EXPECT_EQ(checkBgpSessions(config, facts).verdict, Verdict::Ok);
}

TEST(Doctor, EveryPeerIsRoutedAsTheSessionNeeds) {
  auto config = goodConfig();
  auto facts = goodFacts();
  EXPECT_THAT(checkPeerRoutes(config, facts).detail, HasSubstr("192.0.2.1 on eth0"));
  facts.routes[0] = {ip("192.0.2.1"), std::nullopt, std::nullopt, std::nullopt, false,
                     "Network is unreachable"};
  auto check = checkPeerRoutes(config, facts);
  EXPECT_EQ(check.verdict, Verdict::Fail);
  EXPECT_THAT(check.detail, HasSubstr("no route to peer 192.0.2.1: Network is unreachable"));
  // Through a router: a single-hop eBGP session (TTL 1) cannot get there.
  facts.routes[0] = {ip("192.0.2.1"), "eth0", ip("192.0.2.254"), ip("192.0.2.11"), false, ""};
  check = checkPeerRoutes(config, facts);
  EXPECT_EQ(check.verdict, Verdict::Fail);
  EXPECT_THAT(check.detail, HasSubstr("via 192.0.2.254 on eth0, but the eBGP session is "
                                      "single-hop (TTL 1)"));
  EXPECT_THAT(check.fix, HasSubstr("peers[0].ebgpMultihop"));
  config.peers[0].ebgpMultihop = 2;
  EXPECT_EQ(checkPeerRoutes(config, facts).verdict, Verdict::Ok);
  config.peers[0].ttlSecurity = true;  // GTSM wants a neighbour on the link
  EXPECT_THAT(checkPeerRoutes(config, facts).detail, HasSubstr("ttlSecurity (GTSM)"));
  config.peers[0].ttlSecurity = false;
  config.peers[0].ebgpMultihop = 0;
  config.peers[0].asn = config.localAsn;  // iBGP sends TTL 64
  EXPECT_EQ(checkPeerRoutes(config, facts).verdict, Verdict::Ok);
  facts.routes[0].local = true;
  EXPECT_THAT(checkPeerRoutes(config, facts).detail, HasSubstr("is an address of this node"));
}

TEST(Doctor, StrictRpFilterWhereVipTrafficArrives) {
  auto config = goodConfig();
  auto facts = goodFacts();
  EXPECT_THAT(checkRpFilter(config, facts).detail, HasSubstr("eth0 loose (all 0, eth0 2)"));
  // all=1 wins over eth0's 0 (the larger applies): strict on the one uplink, a warning.
  facts.sysctls["all"].rpFilter = 1;
  facts.sysctls["eth0"].rpFilter = 0;
  auto check = checkRpFilter(config, facts);
  EXPECT_EQ(check.verdict, Verdict::Warn);
  EXPECT_THAT(check.detail, HasSubstr("strict (1, the larger of all and the interface's) on eth0 "
                                      "(all 1, eth0 0)"));
  EXPECT_EQ(check.fix, "sysctl -w net.ipv4.conf.eth0.rp_filter=2 (loose), and the same in "
                       "/etc/sysctl.d/ to keep it");
  // Two uplinks (a second peer on eth1.100): traffic arrives on both, strict drops some.
  config.peers.push_back(peer("198.51.100.1"));
  facts.routes.push_back({ip("198.51.100.1"), "eth1.100", std::nullopt, std::nullopt, false, ""});
  facts.sysctls["eth1.100"] = {0, 0, 0};
  check = checkRpFilter(config, facts);
  EXPECT_EQ(check.verdict, Verdict::Fail);
  EXPECT_THAT(check.detail, HasSubstr("on 2 interfaces (eth0 and eth1.100)"));
  EXPECT_THAT(check.fix, HasSubstr("net.ipv4.conf.eth1/100.rp_filter=2"));
  facts.sysctls["all"].rpFilter = 2;
  EXPECT_EQ(checkRpFilter(config, facts).verdict, Verdict::Ok);
  facts.sysctls.erase("eth1.100");
  EXPECT_TRUE(checkRpFilter(config, facts).inconclusive);
  // A VIP on a real interface is an ingress too; on lo or a dummy it is not.
  auto onNic = goodConfig();
  onNic.vips[0].interface = "eth2";
  auto nicFacts = goodFacts();
  nicFacts.interfaces.push_back({"eth2", "", false});
  EXPECT_EQ(ingressInterfaces(onNic, nicFacts), (std::vector<std::string>{"eth0", "eth2"}));
  nicFacts.interfaces.back().kind = "dummy";
  EXPECT_EQ(ingressInterfaces(onNic, nicFacts), (std::vector<std::string>{"eth0"}));
  // IPv6 only: nothing to judge.
  auto v6 = goodConfig();
  v6.vips = {vip("2001:db8:ffff::10/128")};
  EXPECT_THAT(checkRpFilter(v6, facts).detail, HasSubstr("no IPv4 VIP"));
}

TEST(Doctor, AVipInsideANodeNetworkIsAnsweredByArp) {
  auto config = goodConfig();
  auto facts = goodFacts();
  EXPECT_THAT(checkArp(config, facts).detail, HasSubstr("no IPv4 VIP is inside a network"));
  // The VIP in the node's own /24 (on lo): hosts there ARP for it, and arp_ignore 0 answers.
  config.vips[0] = vip("192.0.2.100/32");
  auto check = checkArp(config, facts);
  EXPECT_EQ(check.verdict, Verdict::Warn);
  EXPECT_THAT(check.detail, HasSubstr("VIP 192.0.2.100 is inside eth0's network 192.0.2.0/24, so "
                                      "hosts there ask for it by ARP, and this node answers "
                                      "(arp_ignore 0, arp_announce 0)"));
  EXPECT_THAT(check.fix, HasSubstr("sysctl -w net.ipv4.conf.eth0.arp_ignore=1 "
                                   "net.ipv4.conf.eth0.arp_announce=2"));
  facts.sysctls["eth0"].arpIgnore = 1;
  facts.sysctls["all"].arpAnnounce = 2;  // the larger of all and eth0's applies
  EXPECT_EQ(checkArp(config, facts).verdict, Verdict::Ok);
  // On eth0 itself, arp_ignore 1 still answers for it.
  config.vips[0].interface = "eth0";
  check = checkArp(config, facts);
  EXPECT_EQ(check.verdict, Verdict::Warn);
  EXPECT_THAT(check.detail, HasSubstr("the VIP is on eth0 itself"));
}

TEST(Doctor, CapabilitiesTheConfigNeeds) {
  auto config = goodConfig();
  auto facts = goodFacts();
  facts.effectiveCapabilities = 1ULL << kCapNetAdmin;
  auto check = checkCapabilities(config, facts);
  EXPECT_EQ(check.verdict, Verdict::Fail);
  EXPECT_THAT(check.detail, HasSubstr("this process (pid 4242) lacks CAP_NET_RAW (the "
                                      "return-path check's ICMP echoes"));
  EXPECT_THAT(check.detail, Not(HasSubstr("CAP_NET_BIND_SERVICE")));  // nothing listens low
  config.returnPath.mode = config::ReturnPath::Mode::Off;
  EXPECT_EQ(checkCapabilities(config, facts).verdict, Verdict::Ok);
  config.listen.enabled = true;  // port 179
  check = checkCapabilities(config, facts);
  EXPECT_EQ(check.verdict, Verdict::Fail);
  EXPECT_THAT(check.detail, HasSubstr("CAP_NET_BIND_SERVICE (binding listen.port 179 (below "
                                      "net.ipv4.ip_unprivileged_port_start 1024))"));
  facts.unprivilegedPortStart = 0;
  EXPECT_EQ(checkCapabilities(config, facts).verdict, Verdict::Ok);
  facts.effectiveCapabilities = 0;
  EXPECT_THAT(checkCapabilities(config, facts).detail, HasSubstr("lacks CAP_NET_ADMIN"));
  facts.effectiveCapabilities.reset();
  EXPECT_EQ(checkCapabilities(config, facts).verdict, Verdict::Warn);
}

TEST(Doctor, TheStateDirectoryIsWritable) {
  auto config = goodConfig();
  auto facts = goodFacts();
  EXPECT_EQ(checkStateDir(config, facts).detail,
            "control.stateDir /var/lib/vipd is a writable directory");
  facts.stateDir = {false, false, false, "", "/var/lib", true};
  auto check = checkStateDir(config, facts);
  EXPECT_EQ(check.verdict, Verdict::Ok);
  EXPECT_THAT(check.detail, HasSubstr("does not exist yet; vipd creates it"));
  facts.stateDir = {false, false, false, "Read-only file system", "/var", false};
  EXPECT_EQ(checkStateDir(config, facts).verdict, Verdict::Fail);
  facts.stateDir = {true, true, false, "Read-only file system", "", false};
  check = checkStateDir(config, facts);
  EXPECT_EQ(check.verdict, Verdict::Fail);
  EXPECT_THAT(check.detail, HasSubstr("is not writable (Read-only file system)"));
  facts.stateDir = {true, false, false, "", "", false};
  EXPECT_THAT(checkStateDir(config, facts).detail, HasSubstr("is not a directory"));
}

TEST(Doctor, KeyFilesAsStartReadsThem) {
  auto config = goodConfig();
  auto facts = goodFacts();
  EXPECT_EQ(checkKeyFiles(config, facts).detail, "no peer has a passwordFile");
  facts.keyFiles = {{0, "/etc/vipd/bgp.key", std::nullopt}};
  EXPECT_EQ(checkKeyFiles(config, facts).verdict, Verdict::Ok);
  facts.keyFiles[0].problem =
      "the password file /etc/vipd/bgp.key has mode 0644, so group or others can read or change "
      "the BGP key; run chmod 600 /etc/vipd/bgp.key";
  config::FieldOrigins origins;
  origins.record("peers", "node.yaml");
  facts.config.origins = origins;
  auto check = checkKeyFiles(config, facts);
  EXPECT_EQ(check.verdict, Verdict::Fail);
  EXPECT_EQ(check.detail,
            "peers[0].passwordFile: the password file /etc/vipd/bgp.key has mode 0644, so group "
            "or others can read or change the BGP key; run chmod 600 /etc/vipd/bgp.key; vipd "
            "refuses to start with it");
}

TEST(Doctor, StrayFilesAndASecondVipdInTheStaticPodDirectory) {
  auto config = goodConfig();
  auto facts = goodFacts();
  EXPECT_THAT(checkStaticPods(config, facts).detail,
              HasSubstr("/etc/kubernetes/manifests holds 2 manifest(s), vipd.yaml vipd's, and no "
                        "stray file"));
  // An editor's swap file: kubelet skips dotfiles, a warning.
  facts.staticPods.files.insert(facts.staticPods.files.begin(),
                                {".vipd.yaml.swp", true, "a hidden file", false});
  auto check = checkStaticPods(config, facts);
  EXPECT_EQ(check.verdict, Verdict::Warn);
  EXPECT_THAT(check.detail, HasSubstr(".vipd.yaml.swp (a hidden file)"));
  // A backup copy of vipd's manifest: kubelet runs it as a second vipd.
  facts.staticPods.files.push_back({"vipd.yaml.bak", true, "not a .yaml manifest", true});
  check = checkStaticPods(config, facts);
  EXPECT_EQ(check.verdict, Verdict::Fail);
  EXPECT_THAT(check.detail, HasSubstr("2 files run vipd: vipd.yaml and vipd.yaml.bak: kubelet "
                                      "starts a pod for each"));
  EXPECT_THAT(check.detail, HasSubstr("holds vipd.yaml.bak (not a .yaml manifest); kubelet reads "
                                      "every file there"));
  EXPECT_THAT(check.fix, HasSubstr("move the stray files out of /etc/kubernetes/manifests"));
  // Two manifests with proper names, both vipd.
  facts.staticPods.files = {{"vipd.yaml", true, std::nullopt, true},
                            {"vipd-old.yaml", true, std::nullopt, true}};
  EXPECT_EQ(checkStaticPods(config, facts).verdict, Verdict::Fail);
  // A subdirectory: kubelet does not read it; a warning.
  facts.staticPods.files = {{"old", false, "not a regular file", false}};
  EXPECT_EQ(checkStaticPods(config, facts).verdict, Verdict::Warn);
  // No kubelet here.
  facts.staticPods = {"", false, false, {"/etc/kubernetes/manifests", "/var/lib/rancher/k3s"}};
  check = checkStaticPods(config, facts);
  EXPECT_EQ(check.verdict, Verdict::Ok);
  EXPECT_THAT(check.detail, HasSubstr("no static-pod directory here"));
  facts.staticPods = {"/etc/k8s", true, false, {}};
  EXPECT_EQ(checkStaticPods(config, facts).verdict, Verdict::Warn);
}

}  // namespace
}  // namespace vipd::doctor
