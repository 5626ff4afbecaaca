// Instance metadata: every missing or invalid field is reported at once, with its line, column
// and path; what the renderer needs (router ID, next hops, password files, health, image) is
// resolved here.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "bootstrap/instance_metadata.h"
#include "bootstrap/test_support.h"

namespace vipd::bootstrap {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::joined;
using testing::strings;

const MetadataContext kContext{"/etc/vipd/vipd.yaml", std::nullopt};

bgp::IpAddress ip(std::string_view text) { return bgp::IpAddress::parse(text).value(); }

// Parses text that must fail; returns each error's toString().
std::vector<std::string> errorsOf(std::string_view text,
                                  const MetadataContext& context = kContext) {
  auto result = parseMetadata(text, "metadata.yaml", context);
  EXPECT_FALSE(result.has_value()) << "expected errors, the metadata was accepted";
  return result ? std::vector<std::string>{} : strings(result.error());
}

InstanceMetadata parsed(std::string_view text, const MetadataContext& context = kContext) {
  auto result = parseMetadata(text, "metadata.yaml", context);
  EXPECT_TRUE(result.has_value()) << joined(result ? std::vector<std::string>{}
                                                   : strings(result.error()));
  return result.value_or(InstanceMetadata{});
}

// A valid document; tests append to it or replace a line of it.
constexpr std::string_view kValid =
    "apiVersion: vipd.io/v1alpha1\n"                 // 1
    "kind: InstanceMetadata\n"                       // 2
    "node:\n"                                        // 3
    "  addresses: [192.0.2.11, \"2001:db8::11\"]\n"  // 4
    "localAsn: 4200000001\n"                         // 5
    "vips: [203.0.113.10/32]\n"                      // 6
    "peers:\n"                                       // 7
    "  - {address: 192.0.2.1, asn: 4200000000}\n"    // 8
    "image: registry.example/vipd:0.1.0\n";          // 9

std::string replaced(std::string_view from, std::string_view to) {
  std::string text(kValid);
  auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(BootstrapMetadata, ValidDocumentResolvesWhatTheRendererNeeds) {
  InstanceMetadata m = parsed(kValid);
  EXPECT_EQ(m.routerId, ip("192.0.2.11"));
  EXPECT_EQ(m.localAsn, 4200000001u);
  ASSERT_EQ(m.vips.size(), 1u);
  EXPECT_EQ(m.vips[0].toString(), "203.0.113.10/32");
  ASSERT_EQ(m.peers.size(), 1u);
  EXPECT_EQ(m.peers[0].address, ip("192.0.2.1"));
  EXPECT_EQ(m.peers[0].asn, 4200000000u);
  EXPECT_EQ(m.peers[0].passwordFile, std::nullopt);
  EXPECT_EQ(m.peers[0].nextHopIpv6, std::nullopt) << "no IPv6 VIP, so no IPv6 next hop";
  EXPECT_TRUE(m.bootstrapEnabled);
  EXPECT_EQ(m.image, "registry.example/vipd:0.1.0");
  // No health in the document: the kubeadm apiserver check.
  EXPECT_EQ(m.health.type, "apiserver");
  EXPECT_EQ(m.health.url, "https://127.0.0.1:6443/readyz");
  EXPECT_EQ(m.health.caFile, "/etc/kubernetes/pki/ca.crt");
  EXPECT_EQ(m.health.address, std::nullopt);
}

TEST(BootstrapMetadata, RouterIdIsTheFirstIpv4AddressAndNextHopTheFirstIpv6) {
  InstanceMetadata m = parsed(
      "apiVersion: vipd.io/v1alpha1\n"
      "kind: InstanceMetadata\n"
      "node:\n"
      "  addresses: [\"2001:db8::11\", 198.51.100.7, \"2001:db8::12\", 192.0.2.11]\n"
      "localAsn: 4200000001\n"
      "vips: [203.0.113.10/32, \"2001:db8:ffff::10/128\"]\n"
      "peers:\n"
      "  - {address: 192.0.2.1, asn: 4200000000}\n"
      "  - {address: \"2001:db8::1\", asn: 4200000000}\n"
      "image: vipd\n");
  EXPECT_EQ(m.routerId, ip("198.51.100.7"));
  ASSERT_EQ(m.peers.size(), 2u);
  // The IPv4 session carries the IPv6 VIP with this node's first IPv6 address as next hop; the
  // IPv6 session uses its own local address.
  EXPECT_EQ(m.peers[0].nextHopIpv6, ip("2001:db8::11"));
  EXPECT_EQ(m.peers[1].nextHopIpv6, std::nullopt);
}

TEST(BootstrapMetadata, PasswordFileDefaultAppliesToPeersWithoutTheirOwn) {
  InstanceMetadata m = parsed(replaced("  - {address: 192.0.2.1, asn: 4200000000}\n",
                                       "  - {address: 192.0.2.1, asn: 4200000000}\n"
                                       "  - {address: 192.0.2.2, asn: 4200000000, "
                                       "passwordFile: /etc/vipd/keys/two}\n") +
                              "passwordFile: /etc/vipd/bgp-password\n");
  ASSERT_EQ(m.peers.size(), 2u);
  EXPECT_EQ(m.peers[0].passwordFile, "/etc/vipd/bgp-password");
  EXPECT_EQ(m.peers[1].passwordFile, "/etc/vipd/keys/two");
}

TEST(BootstrapMetadata, JsonIsAcceptedToo) {
  InstanceMetadata m = parsed(R"({
    "apiVersion": "vipd.io/v1alpha1", "kind": "InstanceMetadata",
    "node": {"addresses": ["192.0.2.11"]}, "localAsn": 65001, "vips": ["203.0.113.10/32"],
    "peers": [{"address": "192.0.2.1", "asn": 65000}], "bootstrap": {"enabled": false}
  })");
  EXPECT_EQ(m.localAsn, 65001u);
  EXPECT_FALSE(m.bootstrapEnabled);
  EXPECT_EQ(m.image, "") << "no image needed when bootstrap is disabled";
}

TEST(BootstrapMetadata, EveryMissingRequiredFieldAtOnce) {
  EXPECT_THAT(errorsOf("{}\n"),
              ElementsAre("metadata.yaml:1:1: apiVersion: required key 'apiVersion' is missing",
                          "metadata.yaml:1:1: kind: required key 'kind' is missing",
                          "metadata.yaml:1:1: node: required key 'node' is missing",
                          "metadata.yaml:1:1: localAsn: required key 'localAsn' is missing",
                          "metadata.yaml:1:1: vips: required key 'vips' is missing",
                          "metadata.yaml:1:1: peers: required key 'peers' is missing",
                          "metadata.yaml:1:1: image: no container image for the static pod: set "
                          "image here or pass --image (exactly one)"));
  EXPECT_THAT(errorsOf("apiVersion: vipd.io/v1alpha1\n"
                       "kind: InstanceMetadata\n"
                       "node: {}\n"
                       "localAsn: 1\n"
                       "vips: [203.0.113.10/32]\n"
                       "peers: [{}]\n"
                       "health: {}\n"
                       "image: vipd\n"),
              ElementsAre("metadata.yaml:3:7: node.addresses: required key 'addresses' is missing",
                          "metadata.yaml:6:9: peers[0].address: required key 'address' is missing",
                          "metadata.yaml:6:9: peers[0].asn: required key 'asn' is missing",
                          "metadata.yaml:7:9: health.type: required key 'type' is missing"));
}

TEST(BootstrapMetadata, WrongTypesAtOnce) {
  auto errors = errorsOf(
      "apiVersion: [vipd.io/v1alpha1]\n"           // 1
      "kind: Pod\n"                                // 2
      "node: 192.0.2.11\n"                         // 3
      "localAsn: \"4200000001\"\n"                 // 4
      "vips: 203.0.113.10/32\n"                    // 5
      "peers: {address: 192.0.2.1, asn: 65000}\n"  // 6
      "bootstrap: {enabled: \"yes\"}\n"            // 7
      "health: apiserver\n"                        // 8
      "image: {name: vipd}\n"                      // 9
      "passwordFile: [a]\n");                      // 10
  EXPECT_THAT(errors,
              ElementsAre("metadata.yaml:1:13: apiVersion: expected a string, got a list",
                          "metadata.yaml:2:7: kind: expected 'InstanceMetadata', got 'Pod'",
                          "metadata.yaml:3:7: node: expected a mapping, got '192.0.2.11'",
                          "metadata.yaml:4:11: localAsn: expected an integer, got the string "
                          "'4200000001'",
                          "metadata.yaml:5:7: vips: expected a list, got '203.0.113.10/32'",
                          "metadata.yaml:6:8: peers: expected a list, got a mapping",
                          "metadata.yaml:7:22: bootstrap.enabled: expected true or false, got the "
                          "string 'yes'",
                          "metadata.yaml:8:9: health: expected a mapping, got 'apiserver'",
                          "metadata.yaml:9:8: image: expected a string, got a mapping",
                          "metadata.yaml:10:15: passwordFile: expected a string, got a list"))
      << joined(errors);
}

TEST(BootstrapMetadata, BadAddressesAtOnce) {
  auto errors = errorsOf(
      "apiVersion: vipd.io/v1alpha1\n"  // 1
      "kind: InstanceMetadata\n"        // 2
      "node:\n"                         // 3
      "  addresses: [192.0.2.300, 192.0.2.11/24, \"fe80::1\", 127.0.0.1, 192.0.2.11, "
      "192.0.2.11]\n"                                                     // 4
      "localAsn: 4200000001\n"                                            // 5
      "vips: [203.0.113.10, 203.0.113.999/32, vip, [203.0.113.11/32]]\n"  // 6
      "peers:\n"                                                          // 7
      "  - {address: 192.0.2.256, asn: 4200000000}\n"                     // 8
      "  - {address: 192.0.2.2, asn: 4294967296}\n"                       // 9
      "  - {address: 192.0.2.3, asn: 0}\n"                                // 10
      "  - {address: 192.0.2.4, asn: -1}\n"                               // 11
      "image: vipd\n");
  EXPECT_THAT(
      errors,
      ElementsAre(
          "metadata.yaml:4:15: node.addresses[0]: '192.0.2.300' is not an IP address",
          "metadata.yaml:4:28: node.addresses[1]: '192.0.2.11/24' has a prefix length; write the "
          "address alone: 192.0.2.11",
          "metadata.yaml:4:43: node.addresses[2]: fe80::1 is not a global unicast address; list "
          "the addresses this node uses in the fabric",
          "metadata.yaml:4:54: node.addresses[3]: 127.0.0.1 is not a global unicast address; "
          "list the addresses this node uses in the fabric",
          "metadata.yaml:4:77: node.addresses[5]: duplicate address 192.0.2.11",
          "metadata.yaml:6:8: vips[0]: '203.0.113.10' needs a prefix length: write "
          "203.0.113.10/32",
          "metadata.yaml:6:22: vips[1]: '203.0.113.999/32' is not a VIP such as 203.0.113.10/32 "
          "or 2001:db8:ffff::10/128",
          "metadata.yaml:6:40: vips[2]: 'vip' is not a VIP such as 203.0.113.10/32 or "
          "2001:db8:ffff::10/128",
          "metadata.yaml:6:45: vips[3]: expected a string, got a list",
          "metadata.yaml:8:15: peers[0].address: '192.0.2.256' is not an IP address",
          "metadata.yaml:9:31: peers[1].asn: must be between 1 and 4294967295, got 4294967296",
          "metadata.yaml:10:31: peers[2].asn: must be between 1 and 4294967295, got 0",
          "metadata.yaml:11:31: peers[3].asn: must be between 1 and 4294967295, got -1"))
      << joined(errors);
}

TEST(BootstrapMetadata, NoIpv4NodeAddress) {
  EXPECT_THAT(errorsOf(replaced("[192.0.2.11, \"2001:db8::11\"]", "[\"2001:db8::11\"]")),
              ElementsAre("metadata.yaml:4:14: node.addresses: no IPv4 address; the router ID is "
                          "rendered from this node's first IPv4 address (a BGP identifier is 32 "
                          "bits, even on an IPv6-only node)"));
  // An entry that failed to parse might have been the IPv4 one: only its own error is reported.
  EXPECT_THAT(errorsOf(replaced("[192.0.2.11, \"2001:db8::11\"]", "[192.0.2.1.1]")),
              ElementsAre(HasSubstr("'192.0.2.1.1' is not an IP address")));
}

TEST(BootstrapMetadata, Ipv6VipOverIpv4PeerWithoutIpv6NodeAddress) {
  std::string text = replaced("[192.0.2.11, \"2001:db8::11\"]", "[192.0.2.11]");
  text = text.replace(text.find("vips: [203.0.113.10/32]"), 23,
                      "vips: [203.0.113.10/32, \"2001:db8:ffff::10/128\"]");
  EXPECT_THAT(errorsOf(text),
              ElementsAre("metadata.yaml:4:14: node.addresses: no IPv6 address; the IPv6 VIPs "
                          "are announced to IPv4 peer 192.0.2.1 with this node's first IPv6 "
                          "address as next hop"));
}

TEST(BootstrapMetadata, VipEqualToANodeAddress) {
  EXPECT_THAT(errorsOf(replaced("vips: [203.0.113.10/32]",
                                "vips: [192.0.2.11/32, \"2001:db8::11/128\", 203.0.113.10/32]")),
              ElementsAre("metadata.yaml:6:8: vips[0]: VIP 192.0.2.11/32 is also listed in "
                          "node.addresses; a VIP must not be a node's own address",
                          "metadata.yaml:6:23: vips[1]: VIP 2001:db8::11/128 is also listed in "
                          "node.addresses; a VIP must not be a node's own address"));
}

TEST(BootstrapMetadata, UnknownKeysAtEveryLevel) {
  auto errors = errorsOf(replaced("  addresses:", "  hostname: cp-1\n  addresses:") +
                         "routerId: 192.0.2.11\n"
                         "bootstrap: {enabled: true, delay: 3s}\n"
                         "health: {type: tcp, interval: 1s}\n"
                         "peers2: []\n");
  EXPECT_THAT(
      errors,
      ElementsAre("metadata.yaml:4:3: node.hostname: unknown key 'hostname'; expected one of: "
                  "addresses",
                  "metadata.yaml:11:1: routerId: unknown key 'routerId'; expected one of: "
                  "apiVersion, kind, node, localAsn, vips, peers, passwordFile, bootstrap, "
                  "health, metrics, image",
                  "metadata.yaml:12:28: bootstrap.delay: unknown key 'delay'; expected one of: "
                  "enabled",
                  "metadata.yaml:13:21: health.interval: unknown key 'interval'; expected one of: "
                  "type, url, caFile, address",
                  // The same reader as vipd's config: a near miss gets the key suggested.
                  "metadata.yaml:14:1: peers2: unknown key 'peers2' (did you mean 'peers'?)"))
      << joined(errors);
  EXPECT_THAT(errorsOf(replaced("asn: 4200000000}", "asn: 4200000000, port: 1179}")),
              ElementsAre("metadata.yaml:8:43: peers[0].port: unknown key 'port'; expected one "
                          "of: address, asn, passwordFile"));
}

TEST(BootstrapMetadata, AsTransIsRefusedAsVipdsConfigRefusesIt) {
  EXPECT_THAT(errorsOf(replaced("asn: 4200000000}", "asn: 23456}")),
              ElementsAre("metadata.yaml:8:31: peers[0].asn: AS 23456 is AS_TRANS (RFC 6793), a "
                          "placeholder that is never a real ASN"));
}

TEST(BootstrapMetadata, DuplicateKey) {
  EXPECT_THAT(errorsOf(std::string(kValid) + "localAsn: 65001\n"),
              ElementsAre("metadata.yaml:10:1: localAsn: duplicate key 'localAsn' (first set on "
                          "line 5)"));
}

TEST(BootstrapMetadata, PasswordFilesMustBeInsideTheConfigDirectory) {
  auto errors = errorsOf(
      replaced("  - {address: 192.0.2.1, asn: 4200000000}\n",
               "  - {address: 192.0.2.1, asn: 4200000000, passwordFile: /root/bgp-password}\n"
               "  - {address: 192.0.2.2, asn: 4200000000, passwordFile: /etc/vipd/../shadow}\n"
               "  - {address: 192.0.2.3, asn: 4200000000, passwordFile: bgp-password}\n"
               "  - {address: 192.0.2.4, asn: 4200000000, passwordFile: /etc/vipd/vipd.yaml}\n"
               "  - {address: 192.0.2.5, asn: 4200000000, passwordFile: /etc/vipd/keys/}\n"
               "  - {address: 192.0.2.6, asn: 4200000000, passwordFile: /etc/vipdx/key}\n"
               "  - {address: 192.0.2.7, asn: 4200000000, passwordFile: /etc/vipd/keys/../k}\n") +
      "passwordFile: /etc/bgp-password\n");
  EXPECT_THAT(
      errors,
      ElementsAre(
          "metadata.yaml:8:57: peers[0].passwordFile: /root/bgp-password is outside /etc/vipd, "
          "the directory of the rendered config /etc/vipd/vipd.yaml: the static pod mounts only "
          "that directory (read-only), so vipd could not read the password file; put the file "
          "in /etc/vipd",
          "metadata.yaml:9:57: peers[1].passwordFile: /etc/vipd/../shadow is outside /etc/vipd, "
          "the directory of the rendered config /etc/vipd/vipd.yaml: the static pod mounts only "
          "that directory (read-only), so vipd could not read the password file; put the file "
          "in /etc/vipd",
          "metadata.yaml:10:57: peers[2].passwordFile: the password file must be an absolute "
          "path, got 'bgp-password'",
          "metadata.yaml:11:57: peers[3].passwordFile: '/etc/vipd/vipd.yaml' is the rendered "
          "config itself; the password file needs a file of its own",
          "metadata.yaml:12:57: peers[4].passwordFile: '/etc/vipd/keys/' names a directory, not "
          "a password file",
          "metadata.yaml:13:57: peers[5].passwordFile: /etc/vipdx/key is outside /etc/vipd, the "
          "directory of the rendered config /etc/vipd/vipd.yaml: the static pod mounts only that "
          "directory (read-only), so vipd could not read the password file; put the file in "
          "/etc/vipd",
          "metadata.yaml:16:15: passwordFile: /etc/bgp-password is outside /etc/vipd, the "
          "directory of the rendered config /etc/vipd/vipd.yaml: the static pod mounts only that "
          "directory (read-only), so vipd could not read the password file; put the file in "
          "/etc/vipd"))
      << joined(errors);
}

TEST(BootstrapMetadata, CaFileMustBeMountedInThePod) {
  auto errors =
      errorsOf(std::string(kValid) + "health: {type: apiserver, caFile: /etc/ssl/ca.pem}\n");
  EXPECT_THAT(errors, ElementsAre(HasSubstr("metadata.yaml:10:35: health.caFile: /etc/ssl/ca.pem "
                                            "is outside /etc/vipd")));
  EXPECT_THAT(errors, ElementsAre(HasSubstr("(or use /etc/kubernetes/pki/ca.crt, which the "
                                            "static pod mounts too)")));
  InstanceMetadata m =
      parsed(std::string(kValid) + "health: {type: apiserver, caFile: /etc/vipd/ca.crt}\n");
  EXPECT_EQ(m.health.caFile, "/etc/vipd/ca.crt");
  EXPECT_EQ(m.health.url, "https://127.0.0.1:6443/readyz") << "url still defaults";
  m = parsed(std::string(kValid) + "health: {type: tcp, address: \"127.0.0.1:6443\"}\n");
  EXPECT_EQ(m.health.type, "tcp");
  EXPECT_EQ(m.health.url, std::nullopt) << "apiserver defaults apply only to apiserver";
  EXPECT_EQ(m.health.address, "127.0.0.1:6443");
}

TEST(BootstrapMetadata, ImageHasExactlyOneSource) {
  MetadataContext withFlag{"/etc/vipd/vipd.yaml", "registry.example/vipd:0.2.0"};
  EXPECT_THAT(errorsOf(kValid, withFlag),
              ElementsAre("metadata.yaml:9:8: image: image is set both here and by --image "
                          "registry.example/vipd:0.2.0; each value has exactly one source, so "
                          "remove one of them"));
  std::string noImage = replaced("image: registry.example/vipd:0.1.0\n", "");
  EXPECT_EQ(parsed(noImage, withFlag).image, "registry.example/vipd:0.2.0");
  EXPECT_THAT(errorsOf(noImage), ElementsAre(HasSubstr("image: no container image")));
  EXPECT_EQ(parsed(noImage + "bootstrap: {enabled: false}\n").image, "");
  EXPECT_THAT(errorsOf(replaced("registry.example/vipd:0.1.0", "\"vipd:1 # x\"")),
              ElementsAre(HasSubstr("metadata.yaml:9:8: image: 'vipd:1 # x' is not an image "
                                    "reference")));
  MetadataContext badFlag{"/etc/vipd/vipd.yaml", "vipd\nname: x"};
  EXPECT_THAT(errorsOf(noImage, badFlag),
              ElementsAre(HasSubstr("--image: 'vipd\nname: x' is not an image reference")));
}

// vipd render passes its own release as the default (localhost/vipd:VERSION): it fills in only
// when neither the document nor --image names an image, and never hides a conflict between them.
TEST(BootstrapMetadata, TheDefaultImageFillsInOnlyWhenNoneIsGiven) {
  std::string noImage = replaced("image: registry.example/vipd:0.1.0\n", "");
  MetadataContext withDefault{"/etc/vipd/vipd.yaml", std::nullopt, "localhost/vipd:0.2.0"};
  EXPECT_EQ(parsed(noImage, withDefault).image, "localhost/vipd:0.2.0");
  EXPECT_EQ(parsed(kValid, withDefault).image, "registry.example/vipd:0.1.0");
  MetadataContext flagAndDefault{"/etc/vipd/vipd.yaml", "registry.example/vipd:flag",
                                 "localhost/vipd:0.2.0"};
  EXPECT_EQ(parsed(noImage, flagAndDefault).image, "registry.example/vipd:flag");
  EXPECT_THAT(errorsOf(kValid, flagAndDefault),
              ElementsAre(HasSubstr("image is set both here and by --image")));
}

TEST(BootstrapMetadata, EveryKindOfErrorInOnePass) {
  // One of each: a missing field, a wrong type, a bad address, no IPv4 node address, a VIP that
  // is a node address, an unknown key, a password file outside the config directory, and the
  // image given twice.
  auto errors = errorsOf(
      "apiVersion: vipd.io/v1alpha1\n"                                        // 1
      "node: {addresses: [\"2001:db8::11\"]}\n"                               // 2
      "localAsn: sixty-five\n"                                                // 3
      "vips: [\"2001:db8::11/128\", 203.0.113.10/32]\n"                       // 4
      "peers:\n"                                                              // 5
      "  - {address: 192.0.2.x, asn: 65000}\n"                                // 6
      "  - {address: \"2001:db8::1\", asn: 65000, passwordFile: /tmp/key}\n"  // 7
      "colour: blue\n"                                                        // 8
      "image: vipd\n",                                                        // 9
      {"/etc/vipd/vipd.yaml", "vipd:flag"});
  EXPECT_THAT(errors,
              ElementsAre(HasSubstr(":1:1: kind: required key 'kind' is missing"),
                          HasSubstr(":2:19: node.addresses: no IPv4 address"),
                          HasSubstr(":3:11: localAsn: expected an integer, got 'sixty-five'"),
                          HasSubstr(":4:8: vips[0]: VIP 2001:db8::11/128 is also listed in "
                                    "node.addresses"),
                          HasSubstr(":6:15: peers[0].address: '192.0.2.x' is not an IP address"),
                          HasSubstr(":7:56: peers[1].passwordFile: /tmp/key is outside /etc/vipd"),
                          HasSubstr(":8:1: colour: unknown key 'colour'"),
                          HasSubstr(":9:8: image: image is set both here and by --image")))
      << joined(errors);
}

TEST(BootstrapMetadata, DocumentLevelErrors) {
  EXPECT_THAT(errorsOf(""), ElementsAre("metadata.yaml: the document is empty; expected an "
                                        "InstanceMetadata mapping"));
  EXPECT_THAT(errorsOf("[1, 2]\n"),
              ElementsAre("metadata.yaml:1:1: expected an InstanceMetadata mapping at the top "
                          "level, got a list"));
  EXPECT_THAT(errorsOf("{\"apiVersion\": \"vipd.io/v1alpha1\",\n \"kind\": \"x\"\n"),
              ElementsAre(HasSubstr("metadata.yaml:3:1: YAML/JSON syntax error: ")));
  EXPECT_THAT(errorsOf(std::string(kValid) + "---\nkind: Other\n"),
              ElementsAre(HasSubstr("the file holds 2 YAML documents; expected exactly one")));
}

TEST(BootstrapMetadata, ConfigOutPath) {
  EXPECT_EQ(configOutProblem("/etc/vipd/vipd.yaml"), std::nullopt);
  EXPECT_THAT(configOutProblem("vipd.yaml").value_or(""), HasSubstr("must be an absolute path"));
  EXPECT_THAT(configOutProblem("/etc/vipd/").value_or(""), HasSubstr("names a directory"));
  EXPECT_THAT(configOutProblem("/etc/vipd/..").value_or(""), HasSubstr("names a directory"));
  EXPECT_THAT(configOutProblem("/etc/vipd//vipd.yaml").value_or(""),
              HasSubstr("not in normal form; write /etc/vipd/vipd.yaml"));
  EXPECT_THAT(configOutProblem("/etc/my vipd/vipd.yaml").value_or(""),
              HasSubstr("may use only letters, digits"));
  EXPECT_THAT(configOutProblem("/vipd.yaml").value_or(""), HasSubstr("directly in /"));
}

// Found by the metadata fuzz target (tests/fuzz/corpus/metadata/repro-yaml-loadall-stray-comma):
// yaml-cpp 0.7's LoadAll() never returned on a ',' outside a flow collection.
TEST(BootstrapMetadata, StrayCommaIsASyntaxErrorNotAHang) {
  auto errors = errorsOf("[13 2 ],F+\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0], HasSubstr("metadata.yaml:1:"));
  EXPECT_THAT(errors[0], HasSubstr("YAML/JSON syntax error"));
  EXPECT_EQ(errorsOf(",").size(), 1u);
}

}  // namespace
}  // namespace vipd::bootstrap
