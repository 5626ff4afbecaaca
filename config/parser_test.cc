// Config parsing and validation: golden files for the happy path, inline YAML for each error so
// that the expected line:column can be read straight off the test.
#include <gmock/gmock.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "config/parser.h"

namespace vipd::config {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kDataDir = std::string(VIPD_TEST_DATA) + "/config/";

bgp::IpAddress ip(std::string_view text) {
  auto a = bgp::IpAddress::parse(text);
  EXPECT_TRUE(a.has_value()) << text;
  return a.value_or(bgp::IpAddress{});
}

bgp::Prefix prefix(std::string_view text) {
  auto p = bgp::Prefix::parse(text);
  EXPECT_TRUE(p.has_value()) << text;
  return p.value_or(bgp::Prefix{});
}

std::string describeErrors(const std::vector<ConfigError>& errors) {
  std::string out;
  for (const auto& e : errors) {
    out += e.toString() + "\n";
  }
  return out;
}

// Parses text that must fail and returns its errors.
std::vector<ConfigError> errorsOf(std::string_view yaml) {
  auto result = parseConfig(yaml, "vipd.yaml");
  EXPECT_FALSE(result.has_value()) << "expected errors, config was accepted";
  return result.has_value() ? std::vector<ConfigError>{} : result.error();
}

// Parses text that must fail with exactly one error and returns its toString().
std::string onlyError(std::string_view yaml) {
  auto errors = errorsOf(yaml);
  EXPECT_EQ(errors.size(), 1u) << describeErrors(errors);
  return errors.empty() ? "" : errors.front().toString();
}

// A valid document with one IPv4 VIP and one IPv4 peer; tests splice their variations in.
constexpr std::string_view kHeader =
    "apiVersion: vipd.io/v1alpha1\n"   // line 1
    "kind: SpeakerConfiguration\n"     // line 2
    "routerId: 192.0.2.11\n"           // line 3
    "localAsn: 65001\n"                // line 4
    "vips:\n"                          // line 5
    "  - address: 203.0.113.10/32\n";  // line 6
constexpr std::string_view kOnePeer =
    "peers:\n"                  // line 7
    "  - address: 192.0.2.1\n"  // line 8
    "    asn: 65000\n";         // line 9

// `health` is required; it goes last so that it never moves the lines the tests assert on.
constexpr std::string_view kHealthNone = "health: {type: none}\n";

std::string withPeer(std::string_view peerExtra) {
  // extra: line 10; health follows it
  return std::string(kHeader) + std::string(kOnePeer) + std::string(peerExtra) +
         std::string(kHealthNone);
}

// A valid document whose health block is `healthBody`: "health:" is line 10, the body line 11 on.
std::string withHealth(std::string_view healthBody) {
  return std::string(kHeader) + std::string(kOnePeer) + "health:\n" + std::string(healthBody);
}

// ---- Valid configs ----

TEST(ConfigParse, FullConfigParsesToExpectedValues) {
  auto result = loadConfigFile(kDataDir + "full.yaml");
  ASSERT_TRUE(result.has_value()) << describeErrors(result.error());
  const Config& c = *result;
  EXPECT_EQ(c.apiVersion, "vipd.io/v1alpha1");
  EXPECT_EQ(c.kind, "SpeakerConfiguration");
  EXPECT_EQ(c.routerId, ip("192.0.2.11"));
  EXPECT_EQ(c.localAsn, 4200000001u);
  ASSERT_EQ(c.vips.size(), 3u);
  EXPECT_EQ(c.vips[0], (Vip{prefix("203.0.113.10/32"), "vip0", /*createInterface=*/true,
                            /*rebind=*/false}));
  EXPECT_EQ(c.vips[1], (Vip{prefix("203.0.113.11/32"), "lo"}));
  EXPECT_EQ(c.vips[2], (Vip{prefix("2001:db8:100::10/128"), "lo"}));
  EXPECT_EQ(c.communities, (std::vector<Community>{{65000, 100}, {65535, 0}}));
  ASSERT_EQ(c.communities.size(), 2u);
  EXPECT_EQ(c.communities[1].wire(), bgp::kGracefulShutdownCommunity);
  EXPECT_EQ(c.largeCommunities, (std::vector<bgp::LargeCommunity>{{4200000000u, 1, 2}}));
  ASSERT_EQ(c.peers.size(), 2u);

  const Peer& p0 = c.peers[0];
  EXPECT_EQ(p0.address, ip("192.0.2.1"));
  EXPECT_EQ(p0.asn, 65000u);
  EXPECT_EQ(p0.port, 1179);
  EXPECT_EQ(p0.sourceAddress, ip("192.0.2.11"));
  EXPECT_EQ(p0.holdTime, milliseconds{30000});
  EXPECT_EQ(p0.keepaliveTime, milliseconds{10000});
  EXPECT_EQ(p0.connectRetryTime, milliseconds{250});
  EXPECT_EQ(p0.ebgpMultihop, 2);
  EXPECT_EQ(p0.nextHopIpv6, ip("2001:db8::11"));
  // No `families`: an IPv4 session with nextHopIpv6 carries both (there are VIPs of both).
  EXPECT_EQ(p0.families, (std::vector<bgp::Afi>{bgp::Afi::Ipv4, bgp::Afi::Ipv6}));

  const Peer& p1 = c.peers[1];
  EXPECT_EQ(p1.address, ip("198.51.100.1"));
  EXPECT_EQ(p1.asn, 4200000001u);  // iBGP
  EXPECT_EQ(p1.port, 179);
  EXPECT_EQ(p1.sourceAddress, std::nullopt);
  EXPECT_EQ(p1.holdTime, milliseconds{0});
  EXPECT_EQ(p1.keepaliveTime, milliseconds{0});  // no keepalives without a hold timer
  EXPECT_EQ(p1.connectRetryTime, milliseconds{1000});
  EXPECT_EQ(p1.ebgpMultihop, 0);
  EXPECT_EQ(p1.nextHopIpv6, ip("2001:db8::12"));

  EXPECT_TRUE(c.listen.enabled);
  EXPECT_EQ(c.listen.address, ip("::"));
  EXPECT_EQ(c.listen.port, 1179);
  EXPECT_EQ(c.control.socket, "/var/run/vipd.sock");
  EXPECT_EQ(c.control.stateDir, "/var/lib/vipd-test");
  EXPECT_EQ(c.control.group, "vipctl");
  EXPECT_TRUE(c.allowNonLocalRouterId);

  EXPECT_EQ(c.drain.gracefulShutdownTime, milliseconds{0});
  EXPECT_EQ(c.drain.timeout, milliseconds{30000});
  EXPECT_EQ(c.drain.unbindDelay, milliseconds{500});

  EXPECT_EQ(c.health.type, Health::Type::Apiserver);
  EXPECT_EQ(c.health.url, "https://[::1]:16443/livez?verbose");
  EXPECT_EQ(c.health.serverName, "kubernetes.default.svc");
  EXPECT_EQ(c.health.caFile, "/etc/kubernetes/pki/ca.crt");
  EXPECT_EQ(c.health.certFile, "/etc/kubernetes/pki/apiserver-kubelet-client.crt");
  EXPECT_EQ(c.health.keyFile, "/etc/kubernetes/pki/apiserver-kubelet-client.key");
  EXPECT_EQ(c.health.interval, milliseconds{2000});
  EXPECT_EQ(c.health.timeout, milliseconds{500});
  EXPECT_EQ(c.health.rise, 1u);
  EXPECT_EQ(c.health.fall, 5u);

  EXPECT_EQ(c.metrics.address, ip("::1"));
  EXPECT_EQ(c.metrics.port, 19472);
}

TEST(ConfigParse, DefaultsAreApplied) {
  auto result = loadConfigFile(kDataDir + "minimal.yaml");
  ASSERT_TRUE(result.has_value()) << describeErrors(result.error());
  const Config& c = *result;
  EXPECT_TRUE(c.communities.empty());
  EXPECT_TRUE(c.largeCommunities.empty());
  ASSERT_EQ(c.vips.size(), 1u);
  EXPECT_EQ(c.vips[0].interface, "lo");
  EXPECT_FALSE(c.vips[0].createInterface);
  EXPECT_TRUE(c.vips[0].rebind);
  EXPECT_FALSE(c.allowNonLocalRouterId);
  ASSERT_EQ(c.peers.size(), 2u);
  const Peer& p = c.peers[0];
  EXPECT_EQ(p.port, 179);
  EXPECT_EQ(p.sourceAddress, std::nullopt);
  EXPECT_EQ(p.holdTime, milliseconds{9000});
  EXPECT_EQ(p.keepaliveTime, milliseconds{3000});
  EXPECT_EQ(p.connectRetryTime, milliseconds{1000});
  EXPECT_EQ(p.openHoldTime, milliseconds{240000});  // RFC 4271 section 8.2.2's 4 minutes
  EXPECT_EQ(p.ebgpMultihop, 0);
  EXPECT_EQ(p.nextHopIpv6, std::nullopt);
  EXPECT_EQ(p.families, std::vector<bgp::Afi>{bgp::Afi::Ipv4});  // its own, the only VIP's
  // keepaliveTime follows an explicit holdTime.
  EXPECT_EQ(c.peers[1].holdTime, milliseconds{90000});
  EXPECT_EQ(c.peers[1].keepaliveTime, milliseconds{30000});
  EXPECT_FALSE(c.listen.enabled);
  EXPECT_EQ(c.listen.address, bgp::IpAddress::v4(0u));
  EXPECT_EQ(c.listen.port, 179);
  EXPECT_EQ(c.control.socket, "/run/vipd/vipd.sock");
  EXPECT_EQ(c.control.stateDir, "/var/lib/vipd");
  EXPECT_EQ(c.control.group, std::nullopt);
  EXPECT_EQ(c.drain.gracefulShutdownTime, milliseconds{2000});
  EXPECT_EQ(c.drain.timeout, milliseconds{10000});
  EXPECT_EQ(c.drain.unbindDelay, milliseconds{1000});
  // minimal.yaml says only `type: none`; every other health key has its default.
  EXPECT_EQ(c.health.type, Health::Type::None);
  EXPECT_EQ(c.health.url, "https://127.0.0.1:6443/readyz");
  // Unset: the checker derives it from the URL (`kubernetes` for this IP address).
  EXPECT_EQ(c.health.serverName, std::nullopt);
  EXPECT_EQ(c.health.caFile, "");
  EXPECT_EQ(c.health.certFile, std::nullopt);
  EXPECT_EQ(c.health.keyFile, std::nullopt);
  EXPECT_EQ(c.health.address, "127.0.0.1:6443");
  EXPECT_EQ(c.health.interval, milliseconds{1000});
  EXPECT_EQ(c.health.timeout, milliseconds{1000});
  EXPECT_EQ(c.health.rise, 2u);
  EXPECT_EQ(c.health.fall, 3u);
  EXPECT_EQ(c.metrics.address, ip("127.0.0.1"));
  EXPECT_EQ(c.metrics.port, 9472);
}

TEST(ConfigParse, HealthDefaultsForApiserverAndTcp) {
  auto result =
      parseConfig(withHealth("  type: apiserver\n  caFile: /etc/vipd/ca.crt\n"), "vipd.yaml");
  ASSERT_TRUE(result.has_value()) << describeErrors(result.error());
  EXPECT_EQ(result->health,
            (Health{.type = Health::Type::Apiserver, .caFile = "/etc/vipd/ca.crt"}));
  result = parseConfig(withHealth("  type: tcp\n"), "vipd.yaml");
  ASSERT_TRUE(result.has_value()) << describeErrors(result.error());
  EXPECT_EQ(result->health, (Health{.type = Health::Type::Tcp}));
  EXPECT_EQ(result->health.address, "127.0.0.1:6443");
}

TEST(ConfigParse, DefaultKeepaliveRoundsDownToWholeSeconds) {
  auto result = parseConfig(withPeer("    holdTime: 10s\n"), "vipd.yaml");
  ASSERT_TRUE(result.has_value()) << describeErrors(result.error());
  EXPECT_EQ(result->peers[0].keepaliveTime, milliseconds{3000});
  result = parseConfig(withPeer("    holdTime: 4s\n"), "vipd.yaml");
  ASSERT_TRUE(result.has_value()) << describeErrors(result.error());
  EXPECT_EQ(result->peers[0].keepaliveTime, milliseconds{1000});
}

TEST(ConfigParse, ExampleConfigIsValid) {
  auto result = loadConfigFile(VIPD_EXAMPLE_CONFIG);
  ASSERT_TRUE(result.has_value()) << describeErrors(result.error());
  EXPECT_EQ(result->vips.size(), 2u);
  EXPECT_EQ(result->peers.size(), 2u);
  // The values written out are the defaults, except where the example shows a non-default use.
  EXPECT_EQ(result->health,
            (Health{.type = Health::Type::Apiserver, .caFile = "/etc/kubernetes/pki/ca.crt"}));
  EXPECT_EQ(result->drain, Drain{});
  EXPECT_EQ(result->control, Control{});
  EXPECT_EQ(result->metrics, Metrics{});
  EXPECT_EQ(result->listen, Listen{});
  EXPECT_FALSE(result->allowNonLocalRouterId);
  ASSERT_EQ(result->vips.size(), 2u);
  EXPECT_EQ(result->vips[0], (Vip{prefix("203.0.113.10/32")}));
  EXPECT_TRUE(result->vips[1].createInterface);
}

TEST(ConfigParse, QuotedAndFlowStylesAreAccepted) {
  auto result = parseConfig(
      "{apiVersion: 'vipd.io/v1alpha1', kind: \"SpeakerConfiguration\", routerId: '192.0.2.11',"
      " localAsn: 65001, vips: [{address: '203.0.113.10/32'}],"
      " peers: [{address: '192.0.2.1', asn: 65000, holdTime: '9s'}], health: {type: none}}",
      "vipd.yaml");
  ASSERT_TRUE(result.has_value()) << describeErrors(result.error());
  EXPECT_EQ(result->peers[0].holdTime, milliseconds{9000});
}

// ---- Document-level errors ----

TEST(ConfigErrors, EmptyFile) {
  EXPECT_EQ(onlyError(""),
            "vipd.yaml:1:1: the file is empty; expected a SpeakerConfiguration mapping");
  EXPECT_THAT(onlyError("# only a comment\n"), HasSubstr("the file is empty"));
  EXPECT_THAT(onlyError("---\n"), HasSubstr("the document is empty"));
}

TEST(ConfigErrors, TopLevelMustBeAMapping) {
  EXPECT_EQ(onlyError("- a\n- b\n"),
            "vipd.yaml:1:1: expected a mapping at the top level, got a list");
  EXPECT_EQ(onlyError("hello\n"),
            "vipd.yaml:1:1: expected a mapping at the top level, got 'hello'");
}

TEST(ConfigErrors, YamlSyntaxErrorNamesLineAndColumn) {
  auto errors = errorsOf("apiVersion: vipd.io/v1alpha1\nkind: [SpeakerConfiguration\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].line, 3);
  EXPECT_THAT(errors[0].message, HasSubstr("YAML syntax error"));
  EXPECT_EQ(errors[0].path, "");

  errors = errorsOf("a: b: c\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].toString(), "vipd.yaml:1:5: YAML syntax error: illegal map value");
}

TEST(ConfigErrors, MoreThanOneDocument) {
  // The first document is complete (health on line 10); the second starts on line 11.
  std::string yaml = withPeer("") + "---\nfoo: 1\n";
  auto errors = errorsOf(yaml);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].toString(),
            "vipd.yaml:12:1: the file holds 2 YAML documents; expected exactly one");
}

TEST(ConfigErrors, MissingRequiredKeys) {
  auto errors = errorsOf("listen:\n  enabled: true\n");
  ASSERT_EQ(errors.size(), 7u) << describeErrors(errors);
  EXPECT_EQ(errors[0].toString(),
            "vipd.yaml:1:1: apiVersion: required key 'apiVersion' is missing");
  std::vector<std::string> paths;
  for (const auto& e : errors) {
    paths.push_back(e.path);
  }
  EXPECT_THAT(paths, ::testing::UnorderedElementsAre("apiVersion", "kind", "routerId", "localAsn",
                                                     "vips", "peers", "health"));
}

TEST(ConfigErrors, MissingPeerKeyPointsAtThePeer) {
  std::string yaml =
      std::string(kHeader) + "peers:\n  - address: 192.0.2.1\n" + std::string(kHealthNone);
  EXPECT_EQ(onlyError(yaml), "vipd.yaml:8:5: peers[0].asn: required key 'asn' is missing");
}

TEST(ConfigErrors, WrongApiVersionAndKind) {
  std::string yaml = withPeer("");
  yaml.replace(yaml.find("v1alpha1"), 8, "v1");
  yaml.replace(yaml.find("SpeakerConfiguration"), 20, "Speaker");
  auto errors = errorsOf(yaml);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].toString(),
            "vipd.yaml:1:13: apiVersion: expected 'vipd.io/v1alpha1', got 'vipd.io/v1'");
  EXPECT_EQ(errors[1].toString(),
            "vipd.yaml:2:7: kind: expected 'SpeakerConfiguration', got 'Speaker'");
}

// ---- Keys ----

TEST(ConfigErrors, UnknownKeyWithSuggestion) {
  EXPECT_EQ(onlyError(withPeer("    holdtime: 9s\n")),
            "vipd.yaml:10:5: peers[0].holdtime: unknown key 'holdtime' (did you mean 'holdTime'?)");
  EXPECT_EQ(onlyError(withPeer("    keepalive: 3s\n")),
            "vipd.yaml:10:5: peers[0].keepalive: unknown key 'keepalive' (did you mean "
            "'keepaliveTime'?)");
  EXPECT_EQ(onlyError(std::string("routerID: 1.2.3.4\n") + withPeer("")),
            "vipd.yaml:1:1: routerID: unknown key 'routerID' (did you mean 'routerId'?)");
}

TEST(ConfigErrors, UnknownKeyWithoutCloseMatchListsKnownKeys) {
  EXPECT_EQ(onlyError(withPeer("listen:\n  backlog: 5\n")),
            "vipd.yaml:11:3: listen.backlog: unknown key 'backlog'; expected one of: enabled, "
            "address, port");
}

TEST(ConfigErrors, DuplicateKey) {
  EXPECT_EQ(onlyError(withPeer("    asn: 65002\n")),
            "vipd.yaml:10:5: peers[0].asn: duplicate key 'asn' (first set on line 9)");
  std::string yaml = withPeer("localAsn: 65002\n");
  EXPECT_EQ(onlyError(yaml),
            "vipd.yaml:10:1: localAsn: duplicate key 'localAsn' (first set on "
            "line 4)");
}

TEST(ConfigErrors, MergeKeysAreNotSupported) {
  EXPECT_THAT(onlyError(withPeer("    <<: {port: 1}\n")), HasSubstr("unknown key '<<'"));
}

// ---- Scalars ----

TEST(ConfigErrors, LocalAsnRange) {
  auto asnError = [](std::string_view value) {
    std::string yaml = withPeer("");
    yaml.replace(yaml.find("65001"), 5, value);
    return onlyError(yaml);
  };
  EXPECT_EQ(asnError("0"), "vipd.yaml:4:11: localAsn: must be between 1 and 4294967295, got 0");
  EXPECT_EQ(asnError("-5"), "vipd.yaml:4:11: localAsn: must be between 1 and 4294967295, got -5");
  EXPECT_EQ(asnError("4294967296"),
            "vipd.yaml:4:11: localAsn: must be between 1 and 4294967295, got 4294967296");
  EXPECT_EQ(asnError("99999999999999999999999"),
            "vipd.yaml:4:11: localAsn: must be between 1 and 4294967295, got "
            "99999999999999999999999");
  EXPECT_EQ(asnError("23456"),
            "vipd.yaml:4:11: localAsn: AS 23456 is AS_TRANS (RFC 6793), a placeholder that is "
            "never a real ASN");
  EXPECT_EQ(asnError("\"65001\""),
            "vipd.yaml:4:11: localAsn: expected an integer, got the string '65001'");
  EXPECT_EQ(asnError("65001.5"), "vipd.yaml:4:11: localAsn: expected an integer, got '65001.5'");
  EXPECT_EQ(asnError("[1]"), "vipd.yaml:4:11: localAsn: expected an integer, got a list");
  EXPECT_EQ(asnError(""), "vipd.yaml:4:1: localAsn: expected an integer, got no value");
  std::string yaml = withPeer("");
  yaml.replace(yaml.find("65001"), 5, "4294967295");
  EXPECT_TRUE(parseConfig(yaml, "vipd.yaml").has_value());
}

TEST(ConfigErrors, PeerAsn) {
  std::string yaml = withPeer("");
  yaml.replace(yaml.find("asn: 65000"), 10, "asn: 23456");
  EXPECT_THAT(onlyError(yaml), HasSubstr("vipd.yaml:9:10: peers[0].asn: AS 23456 is AS_TRANS"));
}

TEST(ConfigErrors, RouterId) {
  auto idError = [](std::string_view value) {
    std::string yaml = withPeer("");
    yaml.replace(yaml.find("192.0.2.11"), 10, value);
    return onlyError(yaml);
  };
  EXPECT_EQ(idError("0.0.0.0"),
            "vipd.yaml:3:11: routerId: 0.0.0.0 is not a valid BGP identifier (RFC 6286)");
  EXPECT_EQ(idError("255.255.255.255"),
            "vipd.yaml:3:11: routerId: 255.255.255.255 is not a valid BGP identifier (RFC 6286)");
  EXPECT_THAT(idError("2001:db8::1"), HasSubstr("routerId: the router ID is a 32-bit BGP "
                                                "identifier written as an IPv4 address"));
  EXPECT_EQ(idError("router1"), "vipd.yaml:3:11: routerId: 'router1' is not an IP address");
  // FieldReader::readAddress, shared with vipd render's metadata reader.
  EXPECT_EQ(idError("192.0.2.1/32"), "vipd.yaml:3:11: routerId: '192.0.2.1/32' has a prefix "
                                     "length; write the address alone: 192.0.2.1");
}

TEST(ConfigErrors, RouterIdEqualsVip) {
  std::string yaml = withPeer("");
  yaml.replace(yaml.find("192.0.2.11"), 10, "203.0.113.10");
  EXPECT_EQ(onlyError(yaml),
            "vipd.yaml:3:11: routerId: router ID 203.0.113.10 equals VIP 203.0.113.10/32; use this "
            "node's own address");
}

TEST(ConfigErrors, BooleanMustBeTrueOrFalse) {
  EXPECT_EQ(onlyError(withPeer("listen:\n  enabled: yes\n")),
            "vipd.yaml:11:12: listen.enabled: expected true or false, got 'yes'");
  EXPECT_EQ(onlyError(withPeer("listen:\n  enabled: 'true'\n")),
            "vipd.yaml:11:12: listen.enabled: expected true or false, got the string 'true'");
}

TEST(ConfigErrors, Ports) {
  EXPECT_EQ(onlyError(withPeer("    port: 0\n")),
            "vipd.yaml:10:11: peers[0].port: must be between 1 and 65535, got 0");
  EXPECT_EQ(onlyError(withPeer("listen:\n  port: 65536\n")),
            "vipd.yaml:11:9: listen.port: must be between 1 and 65535, got 65536");
}

TEST(ConfigErrors, ControlSocket) {
  EXPECT_EQ(onlyError(withPeer("control:\n  socket: run/vipd.sock\n")),
            "vipd.yaml:11:11: control.socket: the control socket must be an absolute path, got "
            "'run/vipd.sock'");
  EXPECT_THAT(onlyError(withPeer("control:\n  socket: /" + std::string(120, 'a') + "\n")),
              HasSubstr("a Unix socket path holds at most 107"));
  EXPECT_EQ(onlyError(withPeer("control: /run/vipd.sock\n")),
            "vipd.yaml:10:10: control: expected a mapping, got '/run/vipd.sock'");
}

// ---- VIPs ----

TEST(ConfigErrors, CoveringPrefixVipIsRejected) {
  std::string yaml = withPeer("");
  yaml.replace(yaml.find("203.0.113.10/32"), 15, "203.0.113.0/24");
  EXPECT_EQ(onlyError(yaml),
            "vipd.yaml:6:14: vips[0].address: a VIP is a single address (/32), but 203.0.113.0/24 "
            "is a covering prefix; vipd announces host routes only");
}

TEST(ConfigErrors, VipAddressForms) {
  auto vipError = [](std::string_view value) {
    std::string yaml = withPeer("");
    yaml.replace(yaml.find("203.0.113.10/32"), 15, value);
    return onlyError(yaml);
  };
  EXPECT_EQ(vipError("203.0.113.10"),
            "vipd.yaml:6:14: vips[0].address: '203.0.113.10' needs a prefix length: write "
            "203.0.113.10/32");
  EXPECT_THAT(vipError("2001:db8::/64"), HasSubstr("a VIP is a single address (/128)"));
  EXPECT_THAT(vipError("203.0.113.10/33"), HasSubstr("is not an address such as"));
  EXPECT_THAT(vipError("0.0.0.0/32"), HasSubstr("0.0.0.0 is not a routable unicast address"));
  EXPECT_THAT(vipError("fe80::1/128"), HasSubstr("is not a routable unicast address"));
}

TEST(ConfigErrors, VipListRules) {
  std::string base =
      "apiVersion: vipd.io/v1alpha1\nkind: SpeakerConfiguration\n"
      "routerId: 192.0.2.11\nlocalAsn: 65001\n";
  std::string peers = std::string(kOnePeer) + std::string(kHealthNone);
  EXPECT_EQ(onlyError(base + "vips: []\n" + peers),
            "vipd.yaml:5:7: vips: at least one VIP is required");
  EXPECT_EQ(onlyError(base + "vips: 203.0.113.10/32\n" + peers),
            "vipd.yaml:5:7: vips: expected a list, got '203.0.113.10/32'");
  EXPECT_EQ(onlyError(base + "vips:\n  - 203.0.113.10/32\n" + peers),
            "vipd.yaml:6:5: vips[0]: expected a mapping, got '203.0.113.10/32'");
  EXPECT_EQ(onlyError(base + "vips:\n  - address: 203.0.113.10/32\n  - address: 203.0.113.10/32\n" +
                      peers),
            "vipd.yaml:7:14: vips[1].address: duplicate VIP 203.0.113.10/32");
}

TEST(ConfigErrors, InterfaceName) {
  std::string yaml = withPeer("");
  yaml.insert(yaml.find("peers:"), "    interface: " + std::string(16, 'x') + "\n");
  EXPECT_EQ(onlyError(yaml),
            "vipd.yaml:7:16: vips[0].interface: 'xxxxxxxxxxxxxxxx' is not a valid Linux interface "
            "name (1 to 15 characters, no '/', ':' or whitespace)");
  yaml = withPeer("");
  yaml.insert(yaml.find("peers:"), "    interface: 'eth 0'\n");
  EXPECT_THAT(onlyError(yaml), HasSubstr("vips[0].interface: 'eth 0' is not a valid"));
  yaml = withPeer("");
  yaml.insert(yaml.find("peers:"), "    interface: a/b\n");
  EXPECT_THAT(onlyError(yaml), HasSubstr("not a valid Linux interface name"));
  yaml = withPeer("");
  yaml.insert(yaml.find("peers:"), "    interface: " + std::string(15, 'x') + "\n");
  EXPECT_TRUE(parseConfig(yaml, "vipd.yaml").has_value());
}

// ---- Communities ----

TEST(ConfigErrors, Communities) {
  EXPECT_EQ(onlyError(withPeer("communities: [\"65536:1\"]\n")),
            "vipd.yaml:10:15: communities[0]: '65536:1' is not a community: write ASN:VALUE, each "
            "0 to 65535");
  EXPECT_THAT(onlyError(withPeer("communities: [\"1:2:3\"]\n")),
              HasSubstr("'1:2:3' is not a community"));
  EXPECT_THAT(onlyError(withPeer("communities: [\"1:\"]\n")), HasSubstr("is not a community"));
  EXPECT_THAT(onlyError(withPeer("communities: [\"1:2\", \"1:2\"]\n")),
              HasSubstr("communities[1]: duplicate community 1:2"));
  EXPECT_THAT(onlyError(withPeer("largeCommunities: [\"1:2\"]\n")),
              HasSubstr("largeCommunities[0]: '1:2' is not a large community"));
  EXPECT_THAT(onlyError(withPeer("largeCommunities: [\"4294967296:0:0\"]\n")),
              HasSubstr("is not a large community"));
  auto ok = parseConfig(withPeer("communities:\n  - 65000:100\nlargeCommunities:\n  - 1:2:3\n"),
                        "vipd.yaml");
  ASSERT_TRUE(ok.has_value()) << describeErrors(ok.error());
  EXPECT_EQ(ok->communities, (std::vector<Community>{{65000, 100}}));
  EXPECT_EQ(ok->largeCommunities, (std::vector<bgp::LargeCommunity>{{1, 2, 3}}));
}

// ---- Peers ----

TEST(ConfigErrors, HoldTimeOfOneOrTwoSecondsIsForbidden) {
  EXPECT_EQ(onlyError(withPeer("    holdTime: 2s\n")),
            "vipd.yaml:10:15: peers[0].holdTime: hold time 2s is not allowed; use 0 (no "
            "keepalives) or at least 3s (RFC 4271 section 4.2 forbids 1 and 2 seconds)");
  EXPECT_THAT(onlyError(withPeer("    holdTime: 1s\n")), HasSubstr("hold time 1s is not allowed"));
}

TEST(ConfigErrors, HoldTimeLimits) {
  EXPECT_THAT(onlyError(withPeer("    holdTime: 9500ms\n")),
              HasSubstr("peers[0].holdTime: hold time must be whole seconds"));
  EXPECT_THAT(onlyError(withPeer("    holdTime: 65536s\n")),
              HasSubstr("hold time 65536s is too long; the most BGP can carry is 18h12m15s"));
  EXPECT_EQ(onlyError(withPeer("    holdTime: 9\n")),
            "vipd.yaml:10:15: peers[0].holdTime: duration '9' needs a unit: write e.g. 9s or 9ms");
  EXPECT_EQ(onlyError(withPeer("    holdTime: -9s\n")),
            "vipd.yaml:10:15: peers[0].holdTime: '-9s' is not a duration: write e.g. 9s, 300ms or "
            "1m30s");
  EXPECT_TRUE(parseConfig(withPeer("    holdTime: 65535s\n"), "vipd.yaml").has_value());
  EXPECT_TRUE(parseConfig(withPeer("    holdTime: 3s\n"), "vipd.yaml").has_value());
}

TEST(ConfigErrors, KeepaliveRules) {
  EXPECT_EQ(onlyError(withPeer("    keepaliveTime: 9s\n")),
            "vipd.yaml:10:20: peers[0].keepaliveTime: keepalive time 9s must be less than the hold "
            "time 9s (one third is usual)");
  EXPECT_THAT(onlyError(withPeer("    holdTime: 0s\n    keepaliveTime: 3s\n")),
              HasSubstr("peers[0].keepaliveTime: keepalive time must be 0 when holdTime is 0"));
  EXPECT_THAT(onlyError(withPeer("    keepaliveTime: 0\n")),
              HasSubstr("keepalive time 0 would let the peer's hold timer (9s) expire"));
  EXPECT_THAT(onlyError(withPeer("    keepaliveTime: 1500ms\n")),
              HasSubstr("keepalive time must be whole seconds, got 1500ms"));
  // A bad hold time is reported once, not again through the keepalive comparison.
  EXPECT_THAT(onlyError(withPeer("    holdTime: 2s\n    keepaliveTime: 3s\n")),
              HasSubstr("hold time 2s is not allowed"));
  auto ok = parseConfig(withPeer("    holdTime: 0\n    keepaliveTime: 0s\n"), "vipd.yaml");
  ASSERT_TRUE(ok.has_value()) << describeErrors(ok.error());
  EXPECT_EQ(ok->peers[0].keepaliveTime, milliseconds{0});
}

TEST(ConfigErrors, ConnectRetryRange) {
  EXPECT_EQ(onlyError(withPeer("    connectRetryTime: 50ms\n")),
            "vipd.yaml:10:23: peers[0].connectRetryTime: connect retry time 50ms is out of range; "
            "use 100ms to 30s");
  EXPECT_THAT(onlyError(withPeer("    connectRetryTime: 31s\n")), HasSubstr("out of range"));
  auto ok = parseConfig(withPeer("    connectRetryTime: 100ms\n"), "vipd.yaml");
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->peers[0].connectRetryTime, milliseconds{100});
}

TEST(ConfigErrors, OpenHoldTimeRange) {
  EXPECT_EQ(onlyError(withPeer("    openHoldTime: 2s\n")),
            "vipd.yaml:10:19: peers[0].openHoldTime: 2s is out of range; use 3s to 1h");
  EXPECT_THAT(onlyError(withPeer("    openHoldTime: 61m\n")), HasSubstr("out of range"));
  auto ok = parseConfig(withPeer("    openHoldTime: 4s\n"), "vipd.yaml");
  ASSERT_TRUE(ok.has_value()) << describeErrors(ok.error());
  EXPECT_EQ(ok->peers[0].openHoldTime, milliseconds{4000});
}

TEST(ConfigErrors, EbgpMultihop) {
  EXPECT_EQ(onlyError(withPeer("    ebgpMultihop: 256\n")),
            "vipd.yaml:10:19: peers[0].ebgpMultihop: must be between 0 and 255, got 256");
  std::string yaml = withPeer("    ebgpMultihop: 2\n");
  yaml.replace(yaml.find("asn: 65000"), 10, "asn: 65001");
  EXPECT_EQ(onlyError(yaml),
            "vipd.yaml:10:19: peers[0].ebgpMultihop: ebgpMultihop only applies to eBGP; this peer "
            "is iBGP (asn 65001 equals localAsn); remove it");
  yaml = withPeer("    ebgpMultihop: 0\n");
  yaml.replace(yaml.find("asn: 65000"), 10, "asn: 65001");
  EXPECT_TRUE(parseConfig(yaml, "vipd.yaml").has_value());
}

TEST(ConfigErrors, PeerAddresses) {
  auto addressError = [](std::string_view value, std::string_view extra = "") {
    std::string yaml = withPeer(extra);
    yaml.replace(yaml.find("192.0.2.1\n"), 9, value);
    return onlyError(yaml);
  };
  EXPECT_EQ(addressError("fe80::1", "    nextHopIpv6: 2001:db8::11\n"),
            "vipd.yaml:8:14: peers[0].address: fe80::1 is link-local, which needs an interface "
            "scope that vipd does not support; use a global address");
  EXPECT_THAT(addressError("0.0.0.0"), HasSubstr("0.0.0.0 is not a unicast address"));
  EXPECT_THAT(addressError("peer.example.com"),
              HasSubstr("'peer.example.com' is not an IP address"));
  EXPECT_EQ(onlyError(withPeer("    sourceAddress: 2001:db8::11\n")),
            "vipd.yaml:10:20: peers[0].sourceAddress: sourceAddress 2001:db8::11 is IPv6 but the "
            "peer address 192.0.2.1 is IPv4; they must be the same family");
  EXPECT_EQ(onlyError(withPeer("  - address: 192.0.2.1\n    asn: 65002\n")),
            "vipd.yaml:10:14: peers[1].address: duplicate peer 192.0.2.1 (also peers[0])");
  EXPECT_EQ(onlyError(std::string(kHeader) + "peers: []\n" + std::string(kHealthNone)),
            "vipd.yaml:7:8: peers: at least one peer is required");
}

TEST(ConfigErrors, NextHopIpv6MustBeGlobalIpv6) {
  EXPECT_EQ(onlyError(withPeer("    nextHopIpv6: 192.0.2.11\n")),
            "vipd.yaml:10:18: peers[0].nextHopIpv6: nextHopIpv6 must be an IPv6 address, got "
            "192.0.2.11");
  EXPECT_THAT(onlyError(withPeer("    nextHopIpv6: fe80::1\n")),
              HasSubstr("fe80::1 cannot be a next hop"));
  EXPECT_THAT(onlyError(withPeer("    nextHopIpv6: '::'\n")), HasSubstr(":: cannot be a next hop"));
}

// ---- Cross-field rules ----

// ---- Address families per session (peers[].families) ----

// The header's IPv4 VIP, an IPv6 VIP (line 7) and `peers` (line 8; its first entry on line 9).
std::string dualStack(std::string_view peers) {
  return std::string(kHeader) + "  - address: 2001:db8::10/128\n" + "peers:\n" +
         std::string(peers) + std::string(kHealthNone);
}

using Families = std::vector<bgp::Afi>;
constexpr bgp::Afi kV4 = bgp::Afi::Ipv4;
constexpr bgp::Afi kV6 = bgp::Afi::Ipv6;

TEST(ConfigFamilies, SessionPerFamilyByDefault) {
  // The dual-stack fabric's default: one IPv4 and one IPv6 session, each with its own family.
  auto result = parseConfig(dualStack("  - address: 192.0.2.1\n    asn: 65000\n"
                                      "  - address: 2001:db8::1\n    asn: 65000\n"),
                            "vipd.yaml");
  ASSERT_TRUE(result.has_value()) << describeErrors(result.error());
  EXPECT_EQ(result->peers[0].families, Families{kV4});
  EXPECT_EQ(result->peers[1].families, Families{kV6});
}

TEST(ConfigFamilies, Ipv4SessionWithNextHopIpv6CarriesBothByDefault) {
  // What every dual-stack config looked like before `families`: it keeps working unchanged.
  auto result = parseConfig(dualStack("  - address: 192.0.2.1\n    asn: 65000\n"
                                      "    nextHopIpv6: 2001:db8::11\n"),
                            "vipd.yaml");
  ASSERT_TRUE(result.has_value()) << describeErrors(result.error());
  EXPECT_EQ(result->peers[0].families, (Families{kV4, kV6}));
}

TEST(ConfigFamilies, DefaultsFollowTheVips) {
  // Only families some VIP has: a single-stack cluster's sessions offer nothing else.
  auto v4Only = parseConfig(withPeer("    nextHopIpv6: 2001:db8::11\n"), "vipd.yaml");
  ASSERT_TRUE(v4Only.has_value()) << describeErrors(v4Only.error());
  EXPECT_EQ(v4Only->peers[0].families, Families{kV4});
  auto v6Only = parseConfig(
      "apiVersion: vipd.io/v1alpha1\nkind: SpeakerConfiguration\nrouterId: 192.0.2.11\n"
      "localAsn: 65001\nvips:\n  - address: 2001:db8::10/128\n"
      "peers:\n  - address: 192.0.2.1\n    asn: 65000\n    nextHopIpv6: 2001:db8::11\n"
      "  - address: 2001:db8::1\n    asn: 65000\nhealth: {type: none}\n",
      "vipd.yaml");
  ASSERT_TRUE(v6Only.has_value()) << describeErrors(v6Only.error());
  EXPECT_EQ(v6Only->peers[0].families, Families{kV6});
  EXPECT_EQ(v6Only->peers[1].families, Families{kV6});
  // Two IPv4 routers, only one with an IPv6 next hop: the other carries the IPv4 VIP only.
  auto mixed = parseConfig(dualStack("  - address: 192.0.2.1\n    asn: 65000\n"
                                     "  - address: 192.0.2.2\n    asn: 65000\n"
                                     "    nextHopIpv6: 2001:db8::11\n"),
                           "vipd.yaml");
  ASSERT_TRUE(mixed.has_value()) << describeErrors(mixed.error());
  EXPECT_EQ(mixed->peers[0].families, Families{kV4});
  EXPECT_EQ(mixed->peers[1].families, (Families{kV4, kV6}));
  EXPECT_EQ(defaultFamilies(ip("2001:db8::1"), false, mixed->vips), Families{kV6});
  EXPECT_EQ(defaultFamilies(ip("192.0.2.1"), true, {}), Families{});
}

TEST(ConfigFamilies, ExplicitFamilies) {
  auto result = parseConfig(dualStack("  - address: 192.0.2.1\n    asn: 65000\n"
                                      "    nextHopIpv6: 2001:db8::11\n"
                                      "    families: [ipv6, ipv4]\n"  // stored in a fixed order
                                      "  - address: 192.0.2.2\n    asn: 65000\n"
                                      "    nextHopIpv6: 2001:db8::11\n"
                                      "    families: [ipv6]\n"
                                      "  - address: 2001:db8::1\n    asn: 65000\n"
                                      "    families:\n      - ipv6\n"),
                            "vipd.yaml");
  ASSERT_TRUE(result.has_value()) << describeErrors(result.error());
  EXPECT_EQ(result->peers[0].families, (Families{kV4, kV6}));
  EXPECT_EQ(result->peers[1].families, Families{kV6});
  EXPECT_EQ(result->peers[2].families, Families{kV6});
  // A family with no VIP yet may be listed: the session negotiates it and ends it with an
  // End-of-RIB, announcing nothing in it.
  auto ahead = parseConfig(withPeer("    nextHopIpv6: 2001:db8::11\n    families: [ipv4, ipv6]\n"),
                           "vipd.yaml");
  ASSERT_TRUE(ahead.has_value()) << describeErrors(ahead.error());
  EXPECT_EQ(ahead->peers[0].families, (Families{kV4, kV6}));
}

TEST(ConfigFamilies, MalformedFamilies) {
  EXPECT_EQ(onlyError(withPeer("    families: ipv4\n")),
            "vipd.yaml:10:15: peers[0].families: expected a list, got 'ipv4'");
  EXPECT_EQ(onlyError(withPeer("    families: []\n")),
            "vipd.yaml:10:15: peers[0].families: list at least one family (ipv4, ipv6), or leave "
            "families out for the default: the session's own family, and ipv6 on an IPv4 "
            "session with nextHopIpv6");
  EXPECT_EQ(onlyError(withPeer("    families: [ipv4, IPv6]\n")),
            "vipd.yaml:10:22: peers[0].families[1]: 'IPv6' is not an address family; use ipv4 "
            "or ipv6");
  EXPECT_EQ(onlyError(withPeer("    families: [ipv4, ipv4]\n")),
            "vipd.yaml:10:22: peers[0].families[1]: ipv4 is listed twice");
  EXPECT_THAT(onlyError(withPeer("    families: [[ipv4]]\n")),
              HasSubstr("peers[0].families[0]: expected a string, got a list"));
}

TEST(ConfigFamilies, Ipv4OverAnIpv6SessionIsRefused) {
  EXPECT_EQ(onlyError(dualStack("  - address: 192.0.2.1\n    asn: 65000\n"
                                "  - address: 2001:db8::1\n    asn: 65000\n"
                                "    families: [ipv4, ipv6]\n")),  // line 13
            "vipd.yaml:13:16: peers[1].families[0]: ipv4 over an IPv6 session needs an IPv4 "
            "next hop, which vipd cannot supply; carry the IPv4 VIPs over a peer with an IPv4 "
            "address (peer 2001:db8::1 is IPv6)");
}

TEST(ConfigFamilies, Ipv6OverAnIpv4SessionNeedsNextHopIpv6) {
  EXPECT_EQ(onlyError(dualStack("  - address: 192.0.2.1\n    asn: 65000\n"
                                "    families: [ipv4, ipv6]\n"  // line 11
                                "  - address: 2001:db8::1\n    asn: 65000\n")),
            "vipd.yaml:11:22: peers[0].families[1]: ipv6 over an IPv4 session needs an IPv6 next "
            "hop: set nextHopIpv6 to a global IPv6 address of this node (peer 192.0.2.1 is IPv4)");
}

TEST(ConfigFamilies, NextHopIpv6UnusedWhenFamiliesLeaveOutIpv6) {
  EXPECT_EQ(onlyError(dualStack("  - address: 192.0.2.1\n    asn: 65000\n"
                                "    nextHopIpv6: 2001:db8::11\n"  // line 11
                                "    families: [ipv4]\n"
                                "  - address: 2001:db8::1\n    asn: 65000\n")),
            "vipd.yaml:11:18: peers[0].nextHopIpv6: nextHopIpv6 is never used: families leaves "
            "out ipv6, so this session carries no IPv6 VIP; remove nextHopIpv6 or add ipv6 to "
            "families");
}

TEST(ConfigFamilies, SessionThatWouldCarryNoVipIsRefused) {
  // An IPv6 session in an IPv4-only cluster: it could carry nothing.
  EXPECT_EQ(onlyError(std::string(kHeader) + "peers:\n  - address: 2001:db8::1\n    asn: 65000\n" +
                      std::string(kHealthNone)),
            "vipd.yaml:8:5: peers[0]: IPv4 VIP 203.0.113.10/32 over an IPv6 session needs an "
            "IPv4 next hop, which vipd cannot supply, so this session would carry no VIP; use an "
            "IPv4 peer address");
  // An IPv4 session without nextHopIpv6 in an IPv6-only cluster.
  EXPECT_EQ(onlyError("apiVersion: vipd.io/v1alpha1\nkind: SpeakerConfiguration\n"
                      "routerId: 192.0.2.11\nlocalAsn: 65001\nvips:\n"
                      "  - address: 2001:db8::10/128\n"
                      "peers:\n  - address: 192.0.2.1\n    asn: 65000\n" +
                      std::string(kHealthNone)),
            "vipd.yaml:8:5: peers[0]: VIP 2001:db8::10/128 needs an IPv6 next hop; this IPv4 "
            "session has none, so it would carry no VIP: set nextHopIpv6");
}

TEST(ConfigFamilies, VipCarriedByNoSessionIsRefused) {
  // Before `families`, this was "VIP ... needs an IPv6 next hop; this IPv4 session has none".
  EXPECT_EQ(onlyError(dualStack("  - address: 192.0.2.1\n    asn: 65000\n")),
            "vipd.yaml:9:3: peers: VIP 2001:db8::10/128 is carried by no session: no peer "
            "carries ipv6 (an IPv6 peer does by default, an IPv4 peer only with nextHopIpv6); "
            "add ipv6 to a peer's families, or add a peer that carries it");
  EXPECT_EQ(onlyError(dualStack("  - address: 2001:db8::1\n    asn: 65000\n")),
            "vipd.yaml:9:3: peers: VIP 203.0.113.10/32 is carried by no session: no peer "
            "carries ipv4 (only an IPv4 peer address can: vipd cannot give an IPv6 session an "
            "IPv4 next hop); add ipv4 to a peer's families, or add a peer that carries it");
  // Explicit families can leave a VIP out too.
  EXPECT_THAT(onlyError(dualStack("  - address: 192.0.2.1\n    asn: 65000\n"
                                  "    nextHopIpv6: 2001:db8::11\n    families: [ipv6]\n")),
              HasSubstr("peers: VIP 203.0.113.10/32 is carried by no session"));
}

TEST(ConfigParse, Ipv6VipOverIpv6SessionUsesTheSessionAddress) {
  std::string yaml =
      "apiVersion: vipd.io/v1alpha1\nkind: SpeakerConfiguration\nrouterId: 192.0.2.11\n"
      "localAsn: 65001\nvips:\n  - address: 2001:db8::10/128\n"
      "peers:\n  - address: 2001:db8::1\n    asn: 65000\nhealth: {type: none}\n";
  auto result = parseConfig(yaml, "vipd.yaml");
  ASSERT_TRUE(result.has_value()) << describeErrors(result.error());
  EXPECT_EQ(result->peers[0].nextHopIpv6, std::nullopt);
  EXPECT_EQ(result->peers[0].families, Families{kV6});
}

// ---- Health ----

TEST(ConfigErrors, HealthIsRequired) {
  // There is no implicit "announce without a check": `health: {type: none}` must be written.
  std::string yaml = std::string(kHeader) + std::string(kOnePeer);
  EXPECT_EQ(onlyError(yaml), "vipd.yaml:1:1: health: required key 'health' is missing");
  EXPECT_EQ(onlyError(withHealth("  rise: 2\n")),
            "vipd.yaml:11:3: health.type: required key 'type' is missing");
  EXPECT_EQ(onlyError(std::string(kHeader) + std::string(kOnePeer) + "health: {}\n"),
            "vipd.yaml:10:9: health.type: required key 'type' is missing");
  EXPECT_EQ(onlyError(std::string(kHeader) + std::string(kOnePeer) + "health: none\n"),
            "vipd.yaml:10:9: health: expected a mapping, got 'none'");
}

TEST(ConfigErrors, HealthTypeIsOneOfTheKnownTypes) {
  EXPECT_EQ(onlyError(withHealth("  type: http\n")),
            "vipd.yaml:11:9: health.type: 'http' is not a health check type; use apiserver, tcp or "
            "none (none announces without any check)");
  EXPECT_THAT(onlyError(withHealth("  type: None\n")), HasSubstr("'None' is not a health check"));
  EXPECT_THAT(onlyError(withHealth("  type: [tcp]\n")),
              HasSubstr("health.type: expected a string, got a list"));
  EXPECT_THAT(onlyError(withHealth("  type: none\n  kind: tcp\n")),
              HasSubstr("health.kind: unknown key 'kind'"));
}

TEST(ConfigErrors, ApiserverNeedsAnAbsoluteCaFile) {
  EXPECT_EQ(onlyError(withHealth("  type: apiserver\n")),
            "vipd.yaml:11:3: health.caFile: required key 'caFile' is missing");
  EXPECT_EQ(onlyError(withHealth("  type: apiserver\n  caFile: pki/ca.crt\n")),
            "vipd.yaml:12:11: health.caFile: the CA file must be an absolute path, got "
            "'pki/ca.crt'");
  // Other types do not need one.
  EXPECT_TRUE(parseConfig(withHealth("  type: tcp\n"), "vipd.yaml").has_value());
}

TEST(ConfigErrors, HealthUrlMustBeHttps) {
  const std::string apiserver = "  type: apiserver\n  caFile: /ca.crt\n";
  EXPECT_EQ(onlyError(withHealth(apiserver + "  url: http://127.0.0.1:6443/readyz\n")),
            "vipd.yaml:13:8: health.url: 'http://127.0.0.1:6443/readyz' is not an https:// URL; "
            "the apiserver check always verifies TLS");
  EXPECT_THAT(onlyError(withHealth(apiserver + "  url: https://\n")),
              HasSubstr("'https://' is not an https:// URL"));
  EXPECT_THAT(onlyError(withHealth(apiserver + "  url: HTTPS://127.0.0.1:6443/readyz\n")),
              HasSubstr("is not an https:// URL"));
  auto ok =
      parseConfig(withHealth(apiserver + "  url: https://10.0.0.1:6443/livez\n"), "vipd.yaml");
  ASSERT_TRUE(ok.has_value()) << describeErrors(ok.error());
  EXPECT_EQ(ok->health.url, "https://10.0.0.1:6443/livez");
}

TEST(ConfigParse, HealthServerName) {
  const std::string apiserver = "  type: apiserver\n  caFile: /ca.crt\n";
  auto ok = parseConfig(withHealth(apiserver), "vipd.yaml");
  ASSERT_TRUE(ok.has_value()) << describeErrors(ok.error());
  EXPECT_EQ(ok->health.serverName, std::nullopt);  // derived from the URL by the checker
  for (const char* name : {"kubernetes", "kubernetes.default.svc.cluster.local",
                           "API-1.example.com", "k8s-api.internal", "x"}) {
    ok = parseConfig(withHealth(apiserver + "  serverName: " + name + "\n"), "vipd.yaml");
    ASSERT_TRUE(ok.has_value()) << name << ": " << describeErrors(ok.error());
    EXPECT_EQ(ok->health.serverName, name);
  }
}

TEST(ConfigErrors, HealthServerNameIsADnsName) {
  const std::string apiserver = "  type: apiserver\n  caFile: /ca.crt\n";
  auto nameError = [&](std::string_view name) {
    return onlyError(withHealth(apiserver + "  serverName: " + std::string(name) + "\n"));
  };
  EXPECT_EQ(nameError("kube_rnetes"),
            "vipd.yaml:13:15: health.serverName: 'kube_rnetes' is not a DNS name: '_' is not "
            "allowed; use letters, digits, '-' and '.'");
  EXPECT_EQ(nameError("kubernetes..svc"),
            "vipd.yaml:13:15: health.serverName: 'kubernetes..svc' is not a DNS name: it has an "
            "empty label (a leading, trailing or doubled '.')");
  EXPECT_THAT(nameError("kubernetes."), HasSubstr("it has an empty label"));
  EXPECT_THAT(nameError(".kubernetes"), HasSubstr("it has an empty label"));
  EXPECT_THAT(nameError("'*.example.com'"), HasSubstr("'*' is not allowed"));
  EXPECT_THAT(nameError("'kube rnetes'"), HasSubstr("byte 0x20 is not allowed"));
  EXPECT_THAT(nameError("-kubernetes"), HasSubstr("label '-kubernetes' starts or ends with '-'"));
  EXPECT_THAT(nameError("https://kubernetes"), HasSubstr("':' is not allowed"));
  EXPECT_THAT(nameError("''"), HasSubstr("health.serverName: '' is not a DNS name: the name is "
                                         "empty"));
  EXPECT_THAT(nameError(std::string(64, 'a')),
              HasSubstr("is not a DNS name: label 'aaaaaaaaaaaaaaaaaaaa...' is longer than 63"));
  std::string longName;
  for (int i = 0; i < 5; ++i) {
    longName += std::string(50, 'a') + ".";  // each label is short enough
  }
  EXPECT_THAT(nameError(longName + "com"),
              HasSubstr("is not a DNS name: the name is 258 characters long; at most 253"));
  EXPECT_EQ(nameError("10.96.0.1"),
            "vipd.yaml:13:15: health.serverName: '10.96.0.1' is an IP address; serverName is the "
            "DNS name the apiserver's certificate must carry, such as kubernetes");
  EXPECT_THAT(nameError("'::1'"), HasSubstr("'::1' is an IP address"));
  EXPECT_THAT(nameError("[kubernetes]"),
              HasSubstr("health.serverName: expected a string, got a list"));
  EXPECT_THAT(nameError(""), HasSubstr("health.serverName: expected a string, got no value"));
}

TEST(ConfigErrors, HealthServerNameWithAnotherTypeIsCheckedButUnused) {
  // As url, caFile, certFile and keyFile: an apiserver-only key is validated whatever the type,
  // so switching the type to apiserver never uncovers a bad value, and otherwise it is ignored.
  auto ok = parseConfig(withHealth("  type: tcp\n  serverName: kubernetes\n"), "vipd.yaml");
  ASSERT_TRUE(ok.has_value()) << describeErrors(ok.error());
  EXPECT_EQ(ok->health.type, Health::Type::Tcp);
  EXPECT_EQ(ok->health.serverName, "kubernetes");
  EXPECT_EQ(onlyError(withHealth("  type: none\n  serverName: kube_rnetes\n")),
            "vipd.yaml:12:15: health.serverName: 'kube_rnetes' is not a DNS name: '_' is not "
            "allowed; use letters, digits, '-' and '.'");
}

TEST(ConfigErrors, ClientCertificateAndKeyGoTogether) {
  const std::string apiserver = "  type: apiserver\n  caFile: /ca.crt\n";
  EXPECT_EQ(onlyError(withHealth(apiserver + "  certFile: /client.crt\n")),
            "vipd.yaml:13:13: health.certFile: certFile and keyFile go together: set both or "
            "neither");
  EXPECT_EQ(onlyError(withHealth(apiserver + "  keyFile: /client.key\n")),
            "vipd.yaml:13:12: health.keyFile: certFile and keyFile go together: set both or "
            "neither");
  EXPECT_EQ(onlyError(withHealth(apiserver + "  certFile: /client.crt\n  keyFile: client.key\n")),
            "vipd.yaml:14:12: health.keyFile: the client key must be an absolute path, got "
            "'client.key'");
  EXPECT_THAT(onlyError(withHealth(apiserver + "  certFile: client.crt\n  keyFile: /c.key\n")),
              HasSubstr("health.certFile: the client certificate must be an absolute path"));
  auto ok = parseConfig(withHealth(apiserver + "  certFile: /client.crt\n  keyFile: /client.key\n"),
                        "vipd.yaml");
  ASSERT_TRUE(ok.has_value()) << describeErrors(ok.error());
  EXPECT_EQ(ok->health.certFile, "/client.crt");
  EXPECT_EQ(ok->health.keyFile, "/client.key");
}

TEST(ConfigErrors, HealthIntervalAndTimeout) {
  const std::string none = "  type: none\n";
  EXPECT_EQ(onlyError(withHealth(none + "  interval: 2s\n  timeout: 3s\n")),
            "vipd.yaml:13:12: health.timeout: timeout 3s is longer than interval 2s; checks would "
            "overlap");
  // Against the default timeout of 1s, a shorter interval is what has to change.
  EXPECT_EQ(onlyError(withHealth(none + "  interval: 500ms\n")),
            "vipd.yaml:12:13: health.interval: timeout 1s is longer than interval 500ms; checks "
            "would overlap");
  EXPECT_EQ(onlyError(withHealth(none + "  interval: 50ms\n  timeout: 10ms\n")),
            "vipd.yaml:12:13: health.interval: 50ms is out of range; use 100ms to 1m");
  EXPECT_THAT(onlyError(withHealth(none + "  interval: 61s\n")),
              HasSubstr("health.interval: 1m1s is out of range; use 100ms to 1m"));
  EXPECT_EQ(onlyError(withHealth(none + "  timeout: 5ms\n")),
            "vipd.yaml:12:12: health.timeout: 5ms is out of range; use 10ms to 1m");
  EXPECT_THAT(onlyError(withHealth(none + "  timeout: 1\n")),
              HasSubstr("health.timeout: duration '1' needs a unit"));
  // A bad value is reported once, not compared again with the other's (default) value.
  EXPECT_THAT(onlyError(withHealth(none + "  interval: 500ms\n  timeout: 2m\n")),
              HasSubstr("health.timeout: 2m is out of range"));
  EXPECT_THAT(onlyError(withHealth(none + "  interval: 2m\n  timeout: 5s\n")),
              HasSubstr("health.interval: 2m is out of range"));
  auto ok = parseConfig(withHealth(none + "  interval: 100ms\n  timeout: 10ms\n"), "vipd.yaml");
  ASSERT_TRUE(ok.has_value()) << describeErrors(ok.error());
  EXPECT_EQ(ok->health.interval, milliseconds{100});
  EXPECT_EQ(ok->health.timeout, milliseconds{10});
  ok = parseConfig(withHealth(none + "  interval: 1m\n  timeout: 1m\n"), "vipd.yaml");
  ASSERT_TRUE(ok.has_value()) << describeErrors(ok.error());  // equal is fine
  EXPECT_EQ(ok->health.timeout, milliseconds{60000});
}

TEST(ConfigErrors, HealthRiseAndFall) {
  EXPECT_EQ(onlyError(withHealth("  type: none\n  rise: 0\n")),
            "vipd.yaml:12:9: health.rise: must be between 1 and 100, got 0");
  EXPECT_EQ(onlyError(withHealth("  type: none\n  fall: 101\n")),
            "vipd.yaml:12:9: health.fall: must be between 1 and 100, got 101");
  EXPECT_THAT(onlyError(withHealth("  type: none\n  fall: '3'\n")),
              HasSubstr("health.fall: expected an integer, got the string '3'"));
  auto ok = parseConfig(withHealth("  type: none\n  rise: 1\n  fall: 100\n"), "vipd.yaml");
  ASSERT_TRUE(ok.has_value()) << describeErrors(ok.error());
  EXPECT_EQ(ok->health.rise, 1u);
  EXPECT_EQ(ok->health.fall, 100u);
}

TEST(ConfigErrors, TcpHealthAddress) {
  auto addressError = [](std::string_view address) {
    return onlyError(withHealth("  type: tcp\n  address: " + std::string(address) + "\n"));
  };
  EXPECT_EQ(addressError("localhost:6443"),
            "vipd.yaml:12:12: health.address: 'localhost:6443' is not an address:port such as "
            "127.0.0.1:6443 or [::1]:6443");
  EXPECT_THAT(addressError("127.0.0.1"), HasSubstr("'127.0.0.1' is not an address:port"));
  EXPECT_THAT(addressError("127.0.0.1:0"), HasSubstr("is not an address:port"));
  EXPECT_THAT(addressError("127.0.0.1:65536"), HasSubstr("is not an address:port"));
  EXPECT_THAT(addressError("'[::1]'"), HasSubstr("is not an address:port"));
  EXPECT_THAT(addressError("127.0.0.1:6443x"), HasSubstr("is not an address:port"));
  EXPECT_THAT(addressError("127.0.0.1:0644300"), HasSubstr("is not an address:port"));
  EXPECT_THAT(addressError("'127.0.0.1: 6443'"), HasSubstr("is not an address:port"));
  // IPv6 only in brackets ("2001:db8::1:6443" may be an address without a port); IPv4 never.
  EXPECT_THAT(addressError("'::1:6443'"), HasSubstr("is not an address:port"));
  EXPECT_THAT(addressError("2001:db8::1:6443"), HasSubstr("is not an address:port"));
  EXPECT_THAT(addressError("'[127.0.0.1]:6443'"), HasSubstr("is not an address:port"));
  for (std::string_view good : {"10.0.0.1:443", "'[::1]:6443'", "'[2001:db8::1]:6443'"}) {
    auto ok =
        parseConfig(withHealth("  type: tcp\n  address: " + std::string(good) + "\n"), "vipd.yaml");
    ASSERT_TRUE(ok.has_value()) << good << "\n" << describeErrors(ok.error());
  }
  auto ok = parseConfig(withHealth("  type: tcp\n  address: '[::1]:6443'\n"), "vipd.yaml");
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->health.type, Health::Type::Tcp);
  EXPECT_EQ(ok->health.address, "[::1]:6443");
}

// ---- health.onFailure (issue 19) ----

TEST(ConfigParse, HealthFailureActions) {
  auto ok = parseConfig(withHealth("  type: none\n"), "vipd.yaml");
  ASSERT_TRUE(ok.has_value()) << describeErrors(ok.error());
  EXPECT_EQ(ok->health.onFailure, Health::OnFailure::Withdraw);
  EXPECT_TRUE(ok->health.unbindWhenUnhealthy);
  EXPECT_EQ(ok->health.degrade.prepend, 3u);
  EXPECT_EQ(ok->health.degrade.localPref, 50u);
  ok = parseConfig(withHealth("  type: none\n  onFailure: degrade\n  degrade:\n"
                              "    prepend: 5\n    localPref: 10\n"
                              "    communities: ['65001:666']\n"),
                   "vipd.yaml");
  ASSERT_TRUE(ok.has_value()) << describeErrors(ok.error());
  EXPECT_EQ(ok->health.onFailure, Health::OnFailure::Degrade);
  EXPECT_EQ(ok->health.degrade.prepend, 5u);
  EXPECT_EQ(ok->health.degrade.localPref, 10u);
  EXPECT_EQ(ok->health.degrade.communities, (std::vector{Community{65001, 666}}));
  ok = parseConfig(withHealth("  type: none\n  unbindWhenUnhealthy: false\n"), "vipd.yaml");
  ASSERT_TRUE(ok.has_value()) << describeErrors(ok.error());
  EXPECT_FALSE(ok->health.unbindWhenUnhealthy);
}

TEST(ConfigErrors, HealthFailureActions) {
  EXPECT_EQ(onlyError(withHealth("  type: none\n  onFailure: drop\n")),
            "vipd.yaml:12:14: health.onFailure: 'drop' is not a failure action; use withdraw (the "
            "node's path leaves the fabric) or degrade (it stays, made worse)");
  EXPECT_EQ(onlyError(withHealth("  type: none\n  degrade: {prepend: 2}\n")),
            "vipd.yaml:12:12: health.degrade: degrade applies only with onFailure: degrade");
  EXPECT_THAT(onlyError(withHealth("  type: none\n  onFailure: degrade\n"
                                   "  unbindWhenUnhealthy: true\n")),
              HasSubstr("unbindWhenUnhealthy applies only with onFailure: withdraw"));
  EXPECT_THAT(onlyError(withHealth("  type: none\n  onFailure: degrade\n  degrade:\n"
                                   "    prepend: 0\n")),
              HasSubstr("health.degrade.prepend"));
  EXPECT_THAT(onlyError(withHealth("  type: none\n  onFailure: degrade\n  degrade:\n"
                                   "    prepend: 11\n")),
              HasSubstr("health.degrade.prepend"));
  EXPECT_THAT(onlyError(withHealth("  type: none\n  onFailure: degrade\n  degrade:\n"
                                   "    localPref: 100\n")),
              HasSubstr("health.degrade.localPref"));
  EXPECT_THAT(onlyError(withHealth("  type: none\n  onFailure: degrade\n  degrade:\n"
                                   "    communities: ['65001']\n")),
              HasSubstr("health.degrade.communities[0]"));
  EXPECT_THAT(onlyError(withHealth("  type: none\n  onFailure: degrade\n  degrade:\n"
                                   "    prepends: 2\n")),
              HasSubstr("(did you mean 'prepend'?)"));
  // Well-known communities would make the degraded path unusable (or a drain).
  EXPECT_THAT(onlyError(withHealth("  type: none\n  onFailure: degrade\n  degrade:\n"
                                   "    communities: ['65535:666']\n")),
              HasSubstr("65535:666 is a well-known community (BLACKHOLE, RFC 7999"));
  for (std::string_view wellKnown : {"65535:0", "65535:65281", "65535:65282", "65535:7"}) {
    EXPECT_THAT(onlyError(withHealth("  type: none\n  onFailure: degrade\n  degrade:\n"
                                     "    communities: ['" + std::string(wellKnown) + "']\n")),
                HasSubstr("is a well-known community"))
        << wellKnown;
  }
  std::string nine;
  for (int i = 0; i < 9; ++i) {
    nine += fmt::format("'64512:{}', ", i);
  }
  EXPECT_THAT(onlyError(withHealth("  type: none\n  onFailure: degrade\n  degrade:\n"
                                   "    communities: [" + nine + "]\n")),
              HasSubstr("9 communities; at most 8"));
}

TEST(ConfigErrors, CommunityListsAreCapped) {
  std::string many;
  for (int i = 0; i < 33; ++i) {
    many += fmt::format("'64512:{}', ", i);
  }
  EXPECT_THAT(onlyError(withPeer("communities: [" + many + "]\n")),
              HasSubstr("33 communities; at most 32"));
  std::string large;
  for (int i = 0; i < 17; ++i) {
    large += fmt::format("'64512:1:{}', ", i);
  }
  EXPECT_THAT(onlyError(withPeer("largeCommunities: [" + large + "]\n")),
              HasSubstr("17 large communities; at most 16"));
}

// ---- returnPath (issue 19) ----

TEST(ConfigParse, ReturnPathDefaultsAndValues) {
  auto ok = parseConfig(withPeer(""), "vipd.yaml");
  ASSERT_TRUE(ok.has_value()) << describeErrors(ok.error());
  EXPECT_EQ(ok->returnPath, ReturnPath{});
  EXPECT_EQ(ok->returnPath.mode, ReturnPath::Mode::Enforce);  // on by default
  ok = parseConfig(withPeer("returnPath:\n  mode: warn\n  interval: 5s\n  timeout: 2s\n"
                            "  flows: 8\n  fall: 5\n  rise: 3\n  relayPort: 19475\n"
                            "  targets: [192.0.2.254, '2001:db8::1']\n"),
                   "vipd.yaml");
  ASSERT_TRUE(ok.has_value()) << describeErrors(ok.error());
  const auto& r = ok->returnPath;
  EXPECT_EQ(r.mode, ReturnPath::Mode::Warn);
  EXPECT_EQ(r.interval, milliseconds{5000});
  EXPECT_EQ(r.timeout, milliseconds{2000});
  EXPECT_EQ(r.flows, 8u);
  EXPECT_EQ(r.fall, 5u);
  EXPECT_EQ(r.rise, 3u);
  EXPECT_EQ(r.relayPort, 19475);
  EXPECT_EQ(r.targets, (std::vector{ip("192.0.2.254"), ip("2001:db8::1")}));
  ok = parseConfig(withPeer("returnPath: {mode: 'off'}\n"), "vipd.yaml");
  ASSERT_TRUE(ok.has_value()) << describeErrors(ok.error());
  EXPECT_EQ(ok->returnPath.mode, ReturnPath::Mode::Off);
}

TEST(ConfigErrors, ReturnPath) {
  EXPECT_EQ(onlyError(withPeer("returnPath:\n  mode: strict\n")),
            "vipd.yaml:11:9: returnPath.mode: 'strict' is not a return-path mode; use enforce "
            "(withdraw a VIP whose packets get no answer), warn (only report it) or off");
  // A list is not a mode.
  EXPECT_THAT(onlyError(withPeer("returnPath:\n  mode: [enforce]\n")),
              HasSubstr("returnPath.mode"));
  EXPECT_EQ(onlyError(withPeer("returnPath:\n  interval: 2s\n  timeout: 2s\n")),
            "vipd.yaml:12:12: returnPath.timeout: timeout 2s is not shorter than interval 2s; "
            "rounds would overlap");
  EXPECT_EQ(onlyError(withPeer("returnPath:\n  interval: 100ms\n")),
            "vipd.yaml:11:13: returnPath.interval: 100ms is out of range; use 500ms to 1m");
  EXPECT_THAT(onlyError(withPeer("returnPath:\n  flows: 0\n")), HasSubstr("returnPath.flows"));
  EXPECT_THAT(onlyError(withPeer("returnPath:\n  flows: 17\n")), HasSubstr("returnPath.flows"));
  EXPECT_THAT(onlyError(withPeer("returnPath:\n  fall: 0\n")), HasSubstr("returnPath.fall"));
  EXPECT_EQ(onlyError(withPeer("returnPath:\n  relayPort: 3784\n")),
            "vipd.yaml:11:14: returnPath.relayPort: port 3784 is BFD's; choose another relay port");
  EXPECT_EQ(onlyError(withPeer("returnPath:\n  targets: [203.0.113.10]\n")),
            "vipd.yaml:11:13: returnPath.targets[0]: 203.0.113.10 is a VIP; a return-path target "
            "is a router the VIP's answers come back through");
  for (std::string_view bad : {"127.0.0.1", "224.0.0.5", "0.0.0.0", "'fe80::1'", "'::1'"}) {
    EXPECT_THAT(onlyError(withPeer("returnPath:\n  targets: [" + std::string(bad) + "]\n")),
                HasSubstr("cannot be a return-path target"))
        << bad;
  }
  EXPECT_THAT(onlyError(withPeer("returnPath:\n  targets: [192.0.2.1, 192.0.2.1]\n")),
              HasSubstr("192.0.2.1 is listed twice"));
  EXPECT_THAT(onlyError(withPeer("returnPath:\n  target: [192.0.2.1]\n")),
              HasSubstr("(did you mean 'targets'?)"));
  EXPECT_THAT(onlyError(withPeer("returnPath: on\n")), HasSubstr("returnPath"));
}

// ---- returnPath.relayNetworks and guard (issue 28) ----

TEST(ConfigParse, RelayNetworksAndTheGuard) {
  auto ok = parseConfig(withPeer("returnPath:\n  relayNetworks: [192.0.2.0/24, '2001:db8::/64']\n"
                                 "guard:\n  minAnnouncers: 2\n  expectedAnnouncers: 5\n"),
                        "vipd.yaml");
  ASSERT_TRUE(ok) << ok.error().front().toString();
  EXPECT_EQ(ok->returnPath.relayNetworks,
            (std::vector{*bgp::Prefix::parse("192.0.2.0/24"), *bgp::Prefix::parse("2001:db8::/64")}));
  EXPECT_EQ(ok->guard.minAnnouncers, 2u);
  EXPECT_EQ(ok->guard.expectedAnnouncers, 5u);
  ok = parseConfig(withPeer(""), "vipd.yaml");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->guard.minAnnouncers, 1u) << "the guard is on by default";
  EXPECT_EQ(ok->guard.expectedAnnouncers, 0u);
  EXPECT_FALSE(ok->guard.nodesShareAsn) << "an AS per node by default (issue 40)";
  ok = parseConfig(withPeer("guard:\n  nodesShareAsn: true\n"), "vipd.yaml");
  ASSERT_TRUE(ok) << ok.error().front().toString();
  EXPECT_TRUE(ok->guard.nodesShareAsn);
  EXPECT_EQ(ok->guard.confirmTime, std::chrono::milliseconds(300)) << "never zero's default";
  ok = parseConfig(withPeer("guard:\n  confirmTime: 2s\n"), "vipd.yaml");
  ASSERT_TRUE(ok) << ok.error().front().toString();
  EXPECT_EQ(ok->guard.confirmTime, std::chrono::milliseconds(2000));
  EXPECT_THAT(onlyError(withPeer("guard:\n  confirmTime: 10ms\n")), HasSubstr("confirmTime"));
  EXPECT_THAT(onlyError(withPeer("guard:\n  confirmTime: 1m\n")), HasSubstr("confirmTime"));
}

TEST(ConfigErrors, RelayNetworksAndTheGuard) {
  EXPECT_EQ(onlyError(withPeer("returnPath:\n  relayNetworks: [192.0.2.1/24]\n")),
            "vipd.yaml:11:19: returnPath.relayNetworks[0]: 192.0.2.1/24 has host bits set; write "
            "the network, 192.0.2.0/24");
  EXPECT_THAT(onlyError(withPeer("returnPath:\n  relayNetworks: [224.0.0.0/4]\n")),
              HasSubstr("is not a node network"));
  EXPECT_THAT(onlyError(withPeer("returnPath:\n  relayNetworks: [0.0.0.0/0]\n")),
              HasSubstr("is not a node network"));
  EXPECT_THAT(onlyError(withPeer("returnPath:\n  relayNetworks: [nodes]\n")),
              HasSubstr("'nodes' is not a network"));
  EXPECT_THAT(onlyError(withPeer("guard:\n  minAnnouncers: 3\n  expectedAnnouncers: 3\n")),
              HasSubstr("minAnnouncers 3 leaves no node of 3 (expectedAnnouncers) free"));
  EXPECT_THAT(onlyError(withPeer("guard:\n  minAnnouncers: 65\n")),
              HasSubstr("guard.minAnnouncers"));
  EXPECT_THAT(onlyError(withPeer("guard:\n  minAnnouncer: 1\n")),
              HasSubstr("(did you mean 'minAnnouncers'?)"));
}

// ---- Drain, control, metrics ----

TEST(ConfigErrors, DrainRanges) {
  EXPECT_EQ(onlyError(withPeer("drain:\n  gracefulShutdownTime: 61s\n")),
            "vipd.yaml:11:25: drain.gracefulShutdownTime: 1m1s is out of range; use 0s to 1m");
  EXPECT_EQ(onlyError(withPeer("drain:\n  timeout: 50ms\n")),
            "vipd.yaml:11:12: drain.timeout: 50ms is out of range; use 100ms to 1m");
  EXPECT_THAT(onlyError(withPeer("drain:\n  timeout: 2m\n")),
              HasSubstr("drain.timeout: 2m is out of range"));
  EXPECT_EQ(onlyError(withPeer("drain:\n  unbindDelay: 1h\n")),
            "vipd.yaml:11:16: drain.unbindDelay: 1h is out of range; use 0s to 1m");
  EXPECT_THAT(onlyError(withPeer("drain:\n  unbindDelay: -1s\n")),
              HasSubstr("'-1s' is not a duration"));
  EXPECT_THAT(onlyError(withPeer("drain:\n  gracefulShutdown: 2s\n")),
              HasSubstr("(did you mean 'gracefulShutdownTime'?)"));
  auto ok = parseConfig(
      withPeer("drain:\n  gracefulShutdownTime: 1m\n  timeout: 100ms\n  unbindDelay: 0\n"),
      "vipd.yaml");
  ASSERT_TRUE(ok.has_value()) << describeErrors(ok.error());
  EXPECT_EQ(ok->drain, (Drain{milliseconds{60000}, milliseconds{100}, milliseconds{0}}));
  ok = parseConfig(withPeer("drain:\n  gracefulShutdownTime: 0s\n  timeout: 60s\n"), "vipd.yaml");
  ASSERT_TRUE(ok.has_value()) << describeErrors(ok.error());
  EXPECT_EQ(ok->drain, (Drain{milliseconds{0}, milliseconds{60000}, milliseconds{1000}}));
}

TEST(ConfigErrors, ControlStateDirAndGroup) {
  EXPECT_EQ(onlyError(withPeer("control:\n  stateDir: var/lib/vipd\n")),
            "vipd.yaml:11:13: control.stateDir: the state directory must be an absolute path, got "
            "'var/lib/vipd'");
  EXPECT_THAT(onlyError(withPeer("control:\n  stateDir: ''\n")),
              HasSubstr("the state directory must be an absolute path, got ''"));
  EXPECT_EQ(onlyError(withPeer("control:\n  group: ''\n")),
            "vipd.yaml:11:10: control.group: the control group name is empty");
  EXPECT_THAT(onlyError(withPeer("control:\n  group:\n")),
              HasSubstr("control.group: expected a string, got no value"));
  auto ok = parseConfig(withPeer("control:\n  stateDir: /srv/vipd\n  group: vipd\n"), "vipd.yaml");
  ASSERT_TRUE(ok.has_value()) << describeErrors(ok.error());
  EXPECT_EQ(ok->control.stateDir, "/srv/vipd");
  EXPECT_EQ(ok->control.group, "vipd");
  EXPECT_EQ(ok->control.socket, "/run/vipd/vipd.sock");
}

TEST(ConfigErrors, MetricsListen) {
  auto listenError = [](std::string_view value) {
    return onlyError(withPeer("metrics:\n  listen: " + std::string(value) + "\n"));
  };
  EXPECT_EQ(listenError("127.0.0.1"),
            "vipd.yaml:11:11: metrics.listen: '127.0.0.1' is not an address:port such as "
            "127.0.0.1:9472 or [::1]:9472");
  EXPECT_THAT(listenError("224.0.0.1:9472"), HasSubstr("cannot listen on 224.0.0.1"));
  EXPECT_THAT(listenError("'[fe80::1]:9472'"), HasSubstr("cannot listen on fe80::1"));
  EXPECT_THAT(listenError("127.0.0.1:0"), HasSubstr("'127.0.0.1:0' is not an address:port"));
  EXPECT_THAT(listenError("localhost:9472"), HasSubstr("'localhost:9472' is not an address:port"));
  EXPECT_THAT(listenError("':9472'"), HasSubstr("is not an address:port"));
  EXPECT_THAT(listenError("9472"), HasSubstr("'9472' is not an address:port"));
  EXPECT_THAT(listenError("127.0.0.1:94720"), HasSubstr("is not an address:port"));
  EXPECT_THAT(listenError("127.0.0.1:9472/metrics"), HasSubstr("is not an address:port"));
  EXPECT_THAT(listenError("'::1:9472'"), HasSubstr("is not an address:port"));
  EXPECT_THAT(listenError("{port: 9472}"),
              HasSubstr("metrics.listen: expected a string, got a mapping"));

  auto ok = parseConfig(withPeer("metrics:\n  listen: 127.0.0.1:9472\n"), "vipd.yaml");
  ASSERT_TRUE(ok.has_value()) << describeErrors(ok.error());
  EXPECT_EQ(ok->metrics.address, ip("127.0.0.1"));
  EXPECT_EQ(ok->metrics.port, 9472);
  ok = parseConfig(withPeer("metrics:\n  listen: '[::1]:9472'\n"), "vipd.yaml");
  ASSERT_TRUE(ok.has_value()) << describeErrors(ok.error());
  EXPECT_EQ(ok->metrics.address, ip("::1"));
  EXPECT_EQ(ok->metrics.port, 9472);
  ok = parseConfig(withPeer("metrics:\n  listen: 0.0.0.0:65535\n"), "vipd.yaml");
  ASSERT_TRUE(ok.has_value()) << describeErrors(ok.error());
  EXPECT_EQ(ok->metrics.address, ip("0.0.0.0"));
  EXPECT_EQ(ok->metrics.port, 65535);
}

TEST(ConfigErrors, MetricsHealthListen) {
  auto parse = [](std::string_view metrics) {
    return parseConfig(withPeer("metrics:\n" + std::string(metrics)), "vipd.yaml");
  };
  auto ok = parse("  listen: 192.0.2.11:9472\n  healthListen: 127.0.0.1:9474\n");
  ASSERT_TRUE(ok.has_value()) << describeErrors(ok.error());
  EXPECT_EQ(ok->metrics.address, ip("192.0.2.11"));
  ASSERT_TRUE(ok->metrics.health.has_value());
  EXPECT_EQ(ok->metrics.health->address, ip("127.0.0.1"));
  EXPECT_EQ(ok->metrics.health->port, 9474);
  // Unset: the probes stay on metrics.listen.
  ok = parse("  listen: 127.0.0.1:9472\n");
  ASSERT_TRUE(ok.has_value()) << describeErrors(ok.error());
  EXPECT_FALSE(ok->metrics.health.has_value());
  // The same port on different specific addresses, or on different families, can both bind.
  ok = parse("  listen: 192.0.2.11:9472\n  healthListen: 127.0.0.1:9472\n");
  ASSERT_TRUE(ok.has_value()) << describeErrors(ok.error());
  ok = parse("  listen: '[::]:9472'\n  healthListen: 127.0.0.1:9472\n");
  ASSERT_TRUE(ok.has_value()) << describeErrors(ok.error());
  // healthListen alone: metrics.listen keeps its default 127.0.0.1:9472.
  ok = parse("  healthListen: '[::1]:9474'\n");
  ASSERT_TRUE(ok.has_value()) << describeErrors(ok.error());
  EXPECT_EQ(ok->metrics.port, 9472);
  EXPECT_EQ(ok->metrics.health->address, ip("::1"));

  auto error = [](std::string_view metrics) {
    return onlyError(withPeer("metrics:\n" + std::string(metrics)));
  };
  EXPECT_EQ(error("  listen: 127.0.0.1:9472\n  healthListen: 127.0.0.1:9472\n"),
            "vipd.yaml:12:17: metrics.healthListen: 127.0.0.1:9472 overlaps metrics.listen "
            "(127.0.0.1:9472): the two listeners need different ports, or different specific "
            "addresses");
  EXPECT_THAT(error("  healthListen: 127.0.0.1:9472\n"),
              HasSubstr("overlaps metrics.listen (127.0.0.1:9472)"));
  EXPECT_THAT(error("  listen: 0.0.0.0:9472\n  healthListen: 127.0.0.1:9472\n"),
              HasSubstr("overlaps metrics.listen (0.0.0.0:9472)"));
  EXPECT_THAT(error("  listen: '[2001:db8::11]:9472'\n  healthListen: '[::]:9472'\n"),
              HasSubstr("[::]:9472 overlaps metrics.listen ([2001:db8::11]:9472)"));
  EXPECT_THAT(error("  healthListen: 127.0.0.1\n"),
              HasSubstr("metrics.healthListen: '127.0.0.1' is not an address:port"));
  EXPECT_THAT(error("  healthListen: 255.255.255.255:9474\n"),
              HasSubstr("metrics.healthListen: cannot listen on 255.255.255.255"));
  EXPECT_THAT(error("  healthListen: [9474]\n"),
              HasSubstr("metrics.healthListen: expected a string"));
  EXPECT_THAT(error("  healthlisten: 127.0.0.1:9474\n"), HasSubstr("healthlisten"));
}

// ---- VIP binding and the router ID ----

TEST(ConfigErrors, CreateInterfaceOnLoIsRejected) {
  std::string yaml = withPeer("");
  yaml.insert(yaml.find("peers:"), "    createInterface: true\n");
  EXPECT_EQ(onlyError(yaml),
            "vipd.yaml:7:22: vips[0].createInterface: createInterface makes a dummy interface, but "
            "this VIP is on lo; set interface to a dummy name such as vip0, or drop "
            "createInterface");
  yaml = withPeer("");
  yaml.insert(yaml.find("peers:"), "    interface: lo\n    createInterface: true\n");
  EXPECT_THAT(onlyError(yaml), HasSubstr("vips[0].createInterface: createInterface makes"));
  // A wrong interface name is reported once, not again as "this VIP is on lo".
  yaml = withPeer("");
  yaml.insert(yaml.find("peers:"), "    interface: a/b\n    createInterface: true\n");
  EXPECT_THAT(onlyError(yaml), HasSubstr("vips[0].interface: 'a/b' is not a valid"));
  yaml = withPeer("");
  yaml.insert(yaml.find("peers:"), "    createInterface: 'yes'\n");
  EXPECT_THAT(onlyError(yaml), HasSubstr("expected true or false, got the string 'yes'"));

  yaml = withPeer("");
  yaml.insert(yaml.find("peers:"), "    interface: vip0\n    createInterface: true\n");
  auto ok = parseConfig(yaml, "vipd.yaml");
  ASSERT_TRUE(ok.has_value()) << describeErrors(ok.error());
  EXPECT_EQ(ok->vips[0].interface, "vip0");
  EXPECT_TRUE(ok->vips[0].createInterface);
  yaml = withPeer("");
  yaml.insert(yaml.find("peers:"), "    createInterface: false\n");
  EXPECT_TRUE(parseConfig(yaml, "vipd.yaml").has_value());
}

TEST(ConfigParse, RebindCanBeTurnedOff) {
  std::string yaml = withPeer("");
  yaml.insert(yaml.find("peers:"), "    rebind: false\n  - address: 203.0.113.11/32\n");
  auto ok = parseConfig(yaml, "vipd.yaml");
  ASSERT_TRUE(ok.has_value()) << describeErrors(ok.error());
  ASSERT_EQ(ok->vips.size(), 2u);
  EXPECT_FALSE(ok->vips[0].rebind);
  EXPECT_TRUE(ok->vips[1].rebind);  // the default
  yaml = withPeer("");
  yaml.insert(yaml.find("peers:"), "    rebind: no\n");
  EXPECT_EQ(onlyError(yaml), "vipd.yaml:7:13: vips[0].rebind: expected true or false, got 'no'");
}

TEST(ConfigParse, AllowNonLocalRouterId) {
  auto ok = parseConfig(withPeer("allowNonLocalRouterId: true\n"), "vipd.yaml");
  ASSERT_TRUE(ok.has_value()) << describeErrors(ok.error());
  EXPECT_TRUE(ok->allowNonLocalRouterId);
  ok = parseConfig(withPeer("allowNonLocalRouterId: false\n"), "vipd.yaml");
  ASSERT_TRUE(ok.has_value()) << describeErrors(ok.error());
  EXPECT_FALSE(ok->allowNonLocalRouterId);
  EXPECT_EQ(onlyError(withPeer("allowNonLocalRouterId: 1\n")),
            "vipd.yaml:10:24: allowNonLocalRouterId: expected true or false, got '1'");
}

// ---- Many errors at once ----

TEST(ConfigErrors, AllErrorsAreReportedInOnePass) {
  auto result = loadConfigFile(kDataDir + "many_errors.yaml");
  ASSERT_FALSE(result.has_value());
  std::vector<std::string> lines;
  for (const auto& e : result.error()) {
    lines.push_back(e.toString());
  }
  const std::string f = kDataDir + "many_errors.yaml";
  EXPECT_THAT(lines,
              ::testing::ElementsAre(
                  f + ":3:11: routerId: 0.0.0.0 is not a valid BGP identifier (RFC 6286)",
                  f + ":4:11: localAsn: AS 23456 is AS_TRANS (RFC 6793), a placeholder that is "
                      "never a real ASN",
                  f + ":6:14: vips[0].address: a VIP is a single address (/32), but "
                      "203.0.113.0/24 is a covering prefix; vipd announces host routes only",
                  f + ":10:5: peers[0].holdtime: unknown key 'holdtime' (did you mean "
                      "'holdTime'?)",
                  f + ":13:11: peers[1].port: must be between 1 and 65535, got 70000",
                  f + ":14:15: peers[1].holdTime: hold time 2s is not allowed; use 0 (no "
                      "keepalives) or at least 3s (RFC 4271 section 4.2 forbids 1 and 2 seconds)",
                  f + ":16:3: listen.enable: unknown key 'enable' (did you mean 'enabled'?)",
                  f + ":19:9: health.rise: must be between 1 and 100, got 0"));
}

// ---- Files ----

TEST(ConfigLoad, UnreadableFileIsOneErrorWithTheOsReason) {
  auto result = loadConfigFile(kDataDir + "does-not-exist.yaml");
  ASSERT_FALSE(result.has_value());
  ASSERT_EQ(result.error().size(), 1u);
  EXPECT_EQ(
      result.error()[0].toString(),
      kDataDir + "does-not-exist.yaml: cannot open the config file: No such file or directory");
  result = loadConfigFile(kDataDir);
  ASSERT_FALSE(result.has_value());
  EXPECT_THAT(result.error()[0].message, HasSubstr("is a directory, not a regular file"));
}

// ---- Bounds (issue 40, issue 43) ----

// The alias bomb of issue 40: six levels of ten aliases under a key vipd does not know, 633
// bytes that describe a million nodes. On main it was expanded (std::bad_alloc in the daemon,
// an abort in `vipd validate`); now it is refused before any node is built.
std::string aliasBomb() {
  std::string text = withPeer("");
  text += "x0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int level = 1; level <= 6; ++level) {
    text += fmt::format("x{}: &a{} [", level, level);
    for (int i = 0; i < 10; ++i) {
      text += fmt::format("{}*a{}", i == 0 ? "" : ", ", level - 1);
    }
    text += "]\n";
  }
  return text;
}

TEST(ConfigBounds, AnAliasBombIsRefusedBeforeItIsExpanded) {
  auto errors = errorsOf(aliasBomb());
  ASSERT_EQ(errors.size(), 1u) << describeErrors(errors);
  EXPECT_THAT(errors[0].toString(),
              HasSubstr("the YAML describes more than 20000 nodes once its aliases (*name) are "
                        "expanded"));
  EXPECT_GT(errors[0].line, 0);  // where the budget ran out
}

TEST(ConfigBounds, AliasesWithinTheBudgetAreRead) {
  // A legitimate use: one anchored mapping reused; the unknown keys are reported as before.
  std::string text = withPeer("");
  text += "defaults: &d {a: 1, b: 2}\nfirst: *d\nsecond: *d\n";
  auto errors = errorsOf(text);
  ASSERT_EQ(errors.size(), 3u) << describeErrors(errors);
  EXPECT_THAT(errors[0].message, HasSubstr("unknown key 'defaults'"));
}

TEST(ConfigBounds, AnUnknownKeyIsQuotedShortened) {
  // A line of /etc/shadow renamed over the config: the key is cut, the rest never shown.
  std::string text = withPeer("");
  text += "'root:$6$saltsalt$0123456789abcdefghijklmnop:19000:0:99999:7:::': 1\n";
  const std::string error = onlyError(text);
  EXPECT_THAT(error, HasSubstr("unknown key 'root:$6$saltsalt$0123456...'"));
  EXPECT_THAT(error, Not(HasSubstr("89abcdef")));
}

// ---- Durations ----

TEST(Duration, ParseTable) {
  struct Case {
    std::string_view text;
    std::optional<int64_t> ms;
  };
  const Case cases[] = {
      {"0", 0},
      {"0s", 0},
      {"0ms", 0},
      {"9s", 9000},
      {"300ms", 300},
      {"1m", 60000},
      {"1m30s", 90000},
      {"1h", 3600000},
      {"1h2m3s4ms", 3723004},
      {"09s", 9000},
      {"90s", 90000},
      {"", std::nullopt},
      {"9", std::nullopt},
      {"-1s", std::nullopt},
      {"+1s", std::nullopt},
      {"1.5s", std::nullopt},
      {"1 s", std::nullopt},
      {" 1s", std::nullopt},
      {"1s ", std::nullopt},
      {"1S", std::nullopt},
      {"1d", std::nullopt},
      {"1us", std::nullopt},
      {"s", std::nullopt},
      {"1s1m", std::nullopt},   // units out of order
      {"1s1s", std::nullopt},   // unit repeated
      {"1s500", std::nullopt},  // trailing number without a unit
      {"00", std::nullopt},
      {"9223372036854775807ms", INT64_MAX},
      {"9223372036854775808ms", std::nullopt},
      {"9223372036854775807s", std::nullopt},
      {"99999999999999999999999s", std::nullopt},
      {"2562047788016h", std::nullopt},
  };
  for (const auto& c : cases) {
    auto d = parseDuration(c.text);
    if (c.ms) {
      ASSERT_TRUE(d.has_value()) << "'" << c.text << "'";
      EXPECT_EQ(d->count(), *c.ms) << "'" << c.text << "'";
    } else {
      EXPECT_FALSE(d.has_value()) << "'" << c.text << "' parsed as " << d->count();
    }
  }
}

TEST(Duration, FormatTable) {
  EXPECT_EQ(formatDuration(milliseconds{0}), "0s");
  EXPECT_EQ(formatDuration(milliseconds{9000}), "9s");
  EXPECT_EQ(formatDuration(milliseconds{300}), "300ms");
  EXPECT_EQ(formatDuration(milliseconds{90000}), "1m30s");
  EXPECT_EQ(formatDuration(milliseconds{1500}), "1s500ms");
  EXPECT_EQ(formatDuration(milliseconds{3600000}), "1h");
  EXPECT_EQ(formatDuration(milliseconds{-2000}), "-2s");
}

TEST(Duration, FormatThenParseRoundTrips) {
  for (int64_t ms : {int64_t{0}, int64_t{1}, int64_t{999}, int64_t{1000}, int64_t{59999},
                     int64_t{3600001}, int64_t{65535000}, INT64_MAX}) {
    auto back = parseDuration(formatDuration(milliseconds{ms}));
    ASSERT_TRUE(back.has_value()) << ms;
    EXPECT_EQ(back->count(), ms);
  }
}

}  // namespace
}  // namespace vipd::config

namespace vipd::config {
namespace {

// ---- mode, handoff, passwordFile, --router-id (issue 5) ----

TEST(ConfigModes, DefaultIsStandaloneWithoutHandoff) {
  auto c = parseConfig(withPeer(""), "vipd.yaml");
  ASSERT_TRUE(c.has_value()) << describeErrors(c.error());
  EXPECT_EQ(c->mode, Mode::Standalone);
  EXPECT_EQ(c->handoff, Handoff{});
}

TEST(ConfigModes, DaemonsetWithHandoffSettings) {
  auto c = parseConfig(withPeer("mode: daemonset\nhandoff: {dir: /run/vipd-x, restartTime: 5s}\n"),
                       "vipd.yaml");
  ASSERT_TRUE(c.has_value()) << describeErrors(c.error());
  EXPECT_EQ(c->mode, Mode::DaemonSet);
  EXPECT_EQ(c->handoff.dir, "/run/vipd-x");
  EXPECT_EQ(c->handoff.restartTime, milliseconds{5000});
  EXPECT_EQ(modeName(c->mode), "daemonset");
}

TEST(ConfigModes, UnknownModeIsNamed) {
  EXPECT_EQ(onlyError(withPeer("mode: static\n")),
            "vipd.yaml:10:7: mode: unknown mode 'static'; expected standalone, static-pod or "
            "daemonset");
}

TEST(ConfigModes, HandoffInStandaloneIsAnError) {
  EXPECT_THAT(onlyError(withPeer("handoff: {dir: /run/vipd}\n")),
              HasSubstr("handoff: handoff applies only with mode static-pod or daemonset"));
}

TEST(ConfigModes, RestartTimeIsShortAndWholeSeconds) {
  EXPECT_THAT(onlyError(withPeer("mode: static-pod\nhandoff: {restartTime: 1500ms}\n")),
              HasSubstr("whole seconds"));
  EXPECT_THAT(onlyError(withPeer("mode: static-pod\nhandoff: {restartTime: 2m}\n")),
              HasSubstr("out of range; use 1s to 1m"));
  EXPECT_THAT(onlyError(withPeer("mode: static-pod\nhandoff: {dir: run/vipd}\n")),
              HasSubstr("handoff.dir"));
}

TEST(ConfigPeers, PasswordFileIsAnAbsolutePath) {
  auto c = parseConfig(withPeer("    passwordFile: /etc/vipd/key\n"), "vipd.yaml");
  ASSERT_TRUE(c.has_value()) << describeErrors(c.error());
  EXPECT_EQ(c->peers[0].passwordFile, "/etc/vipd/key");
  EXPECT_THAT(onlyError(withPeer("    passwordFile: key\n")),
              HasSubstr("peers[0].passwordFile"));
}

TEST(ConfigOverrides, RouterIdFromTheFlagWhenTheFileHasNone) {
  std::string yaml = withPeer("");
  yaml.replace(yaml.find("routerId: 192.0.2.11\n"), 21, "");
  auto c = parseConfig(yaml, "vipd.yaml", ConfigOverrides{"192.0.2.12"});
  ASSERT_TRUE(c.has_value()) << describeErrors(c.error());
  EXPECT_EQ(c->routerId, ip("192.0.2.12"));
  // Without the flag the same file misses its router ID.
  EXPECT_THAT(onlyError(yaml), HasSubstr("routerId"));
}

TEST(ConfigOverrides, RouterIdGivenTwiceIsAnError) {
  auto c = parseConfig(withPeer(""), "vipd.yaml", ConfigOverrides{"192.0.2.12"});
  ASSERT_FALSE(c.has_value());
  ASSERT_EQ(c.error().size(), 1u);
  EXPECT_EQ(c.error()[0].toString(),
            "vipd.yaml:3:11: routerId: routerId is set both here and by --router-id "
            "192.0.2.12; each field has exactly one source, so remove it from the file");
}

TEST(ConfigOverrides, BadRouterIdFlagIsNamedAsTheFlag) {
  std::string yaml = withPeer("");
  yaml.replace(yaml.find("routerId: 192.0.2.11\n"), 21, "");
  auto c = parseConfig(yaml, "vipd.yaml", ConfigOverrides{"2001:db8::1"});
  ASSERT_FALSE(c.has_value());
  ASSERT_EQ(c.error().size(), 1u);
  EXPECT_THAT(c.error()[0].toString(), HasSubstr("--router-id: the router ID is a 32-bit"));
}

}  // namespace
}  // namespace vipd::config

namespace vipd::config {
namespace {

// ---- peers[].bfd (issue 6) ----

TEST(ConfigBfd, OffUnlessWritten) {
  auto c = parseConfig(withPeer(""), "vipd.yaml");
  ASSERT_TRUE(c.has_value()) << describeErrors(c.error());
  EXPECT_EQ(c->peers[0].bfd, Bfd{});
  EXPECT_FALSE(c->peers[0].bfd.enabled);
}

TEST(ConfigBfd, ABlockEnablesItWithTheRfcDefaults) {
  auto c = parseConfig(withPeer("    bfd: {}\n"), "vipd.yaml");
  ASSERT_TRUE(c.has_value()) << describeErrors(c.error());
  const Bfd& b = c->peers[0].bfd;
  EXPECT_TRUE(b.enabled);
  EXPECT_EQ(b.minTx, milliseconds{300});
  EXPECT_EQ(b.minRx, milliseconds{300});
  EXPECT_EQ(b.multiplier, 3);
  EXPECT_FALSE(b.multihop);
}

TEST(ConfigBfd, EveryFieldIsRead) {
  auto c = parseConfig(withPeer("    ebgpMultihop: 4\n"
                                "    bfd: {enabled: true, minTx: 50ms, minRx: 1s500ms, multiplier: "
                                "255, multihop: true}\n"),
                       "vipd.yaml");
  ASSERT_TRUE(c.has_value()) << describeErrors(c.error());
  const Bfd& b = c->peers[0].bfd;
  EXPECT_TRUE(b.enabled);
  EXPECT_EQ(b.minTx, milliseconds{50});
  EXPECT_EQ(b.minRx, milliseconds{1500});
  EXPECT_EQ(b.multiplier, 255);
  EXPECT_TRUE(b.multihop);
}

TEST(ConfigBfd, ExplicitlyDisabled) {
  auto c = parseConfig(withPeer("    bfd: {enabled: false, minTx: 100ms}\n"), "vipd.yaml");
  ASSERT_TRUE(c.has_value()) << describeErrors(c.error());
  EXPECT_FALSE(c->peers[0].bfd.enabled);
}

TEST(ConfigBfd, IntervalsBelow50msOrAbove10sAreRefused) {
  EXPECT_EQ(onlyError(withPeer("    bfd: {minTx: 49ms}\n")),
            "vipd.yaml:10:18: peers[0].bfd.minTx: 49ms is out of range; use 50ms to 10s");
  EXPECT_THAT(onlyError(withPeer("    bfd: {minRx: 11s}\n")),
              HasSubstr("peers[0].bfd.minRx: 11s is out of range; use 50ms to 10s"));
  EXPECT_THAT(onlyError(withPeer("    bfd: {minRx: fast}\n")), HasSubstr("peers[0].bfd.minRx"));
}

TEST(ConfigBfd, MultiplierIs1To255) {
  EXPECT_THAT(onlyError(withPeer("    bfd: {multiplier: 0}\n")),
              HasSubstr("peers[0].bfd.multiplier"));
  EXPECT_THAT(onlyError(withPeer("    bfd: {multiplier: 256}\n")),
              HasSubstr("peers[0].bfd.multiplier"));
}

TEST(ConfigBfd, UnknownKeysAndNonMappingsAreErrors) {
  EXPECT_THAT(onlyError(withPeer("    bfd: {interval: 100ms}\n")),
              HasSubstr("peers[0].bfd"));
  EXPECT_THAT(onlyError(withPeer("    bfd: true\n")), HasSubstr("peers[0].bfd"));
}

TEST(ConfigBfd, SingleHopBfdToAMultihopPeerIsAnError) {
  EXPECT_THAT(onlyError(withPeer("    ebgpMultihop: 3\n    bfd: {enabled: true}\n")),
              HasSubstr("ebgpMultihop 3) but BFD is single hop; set bfd.multihop: true"));
  // Disabled BFD, or ebgpMultihop 1 (directly connected), is fine.
  EXPECT_TRUE(parseConfig(withPeer("    ebgpMultihop: 3\n    bfd: {enabled: false}\n"),
                          "vipd.yaml")
                  .has_value());
  EXPECT_TRUE(parseConfig(withPeer("    ebgpMultihop: 1\n    bfd: {}\n"), "vipd.yaml")
                  .has_value());
}

TEST(ConfigTtlSecurity, OffUnlessWritten) {
  auto c = parseConfig(withPeer(""), "vipd.yaml");
  ASSERT_TRUE(c.has_value()) << describeErrors(c.error());
  EXPECT_FALSE(c->peers[0].ttlSecurity);
}

TEST(ConfigTtlSecurity, TrueAndFalseAreRead) {
  auto on = parseConfig(withPeer("    ttlSecurity: true\n"), "vipd.yaml");
  ASSERT_TRUE(on.has_value()) << describeErrors(on.error());
  EXPECT_TRUE(on->peers[0].ttlSecurity);
  auto off = parseConfig(withPeer("    ttlSecurity: false\n"), "vipd.yaml");
  ASSERT_TRUE(off.has_value()) << describeErrors(off.error());
  EXPECT_FALSE(off->peers[0].ttlSecurity);
}

TEST(ConfigTtlSecurity, OnlyABoolean) {
  EXPECT_EQ(onlyError(withPeer("    ttlSecurity: yes please\n")),
            "vipd.yaml:10:18: peers[0].ttlSecurity: expected true or false, got 'yes please'");
  EXPECT_THAT(onlyError(withPeer("    ttlSecurity: \"true\"\n")),
              HasSubstr("peers[0].ttlSecurity: expected true or false, got the string"));
}

TEST(ConfigTtlSecurity, WithMultihopIsAnErrorThatSaysWhy) {
  EXPECT_EQ(onlyError(withPeer("    ebgpMultihop: 2\n    ttlSecurity: true\n")),
            "vipd.yaml:11:18: peers[0].ttlSecurity: ttlSecurity (GTSM, RFC 5082) needs the peer on "
            "the link, but this peer is 2 hops away (ebgpMultihop 2); each router hop lowers the "
            "TTL below the 255 GTSM requires, so the session could never come up: remove "
            "ebgpMultihop or turn ttlSecurity off");
  // The order of the keys does not matter.
  EXPECT_THAT(onlyError(withPeer("    ttlSecurity: true\n    ebgpMultihop: 255\n")),
              HasSubstr("vipd.yaml:10:18: peers[0].ttlSecurity: ttlSecurity (GTSM, RFC 5082) "
                        "needs the peer on the link, but this peer is 255 hops away"));
}

TEST(ConfigTtlSecurity, DirectlyConnectedMultihopValuesAreFine) {
  for (std::string_view hops : {"0", "1"}) {
    std::string extra = "    ebgpMultihop: " + std::string(hops) + "\n    ttlSecurity: true\n";
    auto c = parseConfig(withPeer(extra), "vipd.yaml");
    ASSERT_TRUE(c.has_value()) << hops << ": " << describeErrors(c.error());
    EXPECT_TRUE(c->peers[0].ttlSecurity);
  }
  auto off = parseConfig(withPeer("    ebgpMultihop: 4\n    ttlSecurity: false\n"), "vipd.yaml");
  EXPECT_TRUE(off.has_value());
}

TEST(ConfigTtlSecurity, IbgpOnTheLinkMayUseIt) {
  std::string yaml = withPeer("    ttlSecurity: true\n");
  yaml.replace(yaml.find("asn: 65000"), 10, "asn: 65001");
  auto c = parseConfig(yaml, "vipd.yaml");
  ASSERT_TRUE(c.has_value()) << describeErrors(c.error());
  EXPECT_TRUE(c->peers[0].ttlSecurity);
}

// Found by the config fuzz target (tests/fuzz/corpus/config/repro-yaml-loadall-stray-comma):
// yaml-cpp 0.7's LoadAll() never returned on these (an endless stream of empty documents, until
// memory ran out); config/yaml_documents.h turns them into a syntax error with a position.
TEST(ConfigYaml, StrayCommaIsASyntaxErrorNotAHang) {
  EXPECT_EQ(onlyError(","), "vipd.yaml:1:1: YAML syntax error: unexpected token here (a ',' "
                            "outside [...] or {...}?)");
  EXPECT_THAT(onlyError("--- ,"), HasSubstr("vipd.yaml:1:5: YAML syntax error"));
  EXPECT_THAT(onlyError("apiVersion: vipd.io/v1alpha1\n---\n,\n"),
              HasSubstr("vipd.yaml:3:1: YAML syntax error"));
}

// ---- kubernetes (issue 41) ----

TEST(ConfigParse, KubernetesDefaultsPerMode) {
  auto c = parseConfig(withPeer(""), "vipd.yaml");
  ASSERT_TRUE(c) << describeErrors(c.error());
  EXPECT_EQ(c->kubernetes, Kubernetes{}) << "standalone: off unless configured";
  c = parseConfig(withPeer("mode: daemonset\n"), "vipd.yaml");
  ASSERT_TRUE(c) << describeErrors(c.error());
  EXPECT_TRUE(c->kubernetes.enabled) << "daemonset: on, the pod's service account";
  EXPECT_FALSE(c->kubernetes.kubeconfig);
  EXPECT_FALSE(c->kubernetes.nodeName) << "NODE_NAME, read at start";
  c = parseConfig(withPeer("mode: daemonset\nkubernetes: {enabled: false}\n"), "vipd.yaml");
  ASSERT_TRUE(c) << describeErrors(c.error());
  EXPECT_FALSE(c->kubernetes.enabled);
  c = parseConfig(withPeer("mode: static-pod\n"), "vipd.yaml");
  ASSERT_TRUE(c) << describeErrors(c.error());
  EXPECT_FALSE(c->kubernetes.enabled) << "static-pod: off unless configured";
}

TEST(ConfigParse, KubernetesWithAKubeconfig) {
  auto c = parseConfig(withPeer("mode: static-pod\nkubernetes:\n"
                                "  kubeconfig: /etc/kubernetes/admin.conf\n"
                                "  nodeName: cp-1.example\n"),
                       "vipd.yaml");
  ASSERT_TRUE(c) << describeErrors(c.error());
  EXPECT_EQ(c->kubernetes, (Kubernetes{true, "/etc/kubernetes/admin.conf", "cp-1.example"}))
      << "a kubeconfig turns it on";
  c = parseConfig(withPeer("mode: daemonset\nkubernetes: {nodeName: cp-2}\n"), "vipd.yaml");
  ASSERT_TRUE(c) << describeErrors(c.error());
  EXPECT_EQ(c->kubernetes, (Kubernetes{true, std::nullopt, "cp-2"}));
  c = parseConfig(withPeer("kubernetes: {enabled: false, kubeconfig: /k}\n"), "vipd.yaml");
  ASSERT_TRUE(c) << describeErrors(c.error());
  EXPECT_FALSE(c->kubernetes.enabled) << "turned off, the rest kept for later";
}

TEST(ConfigErrors, Kubernetes) {
  EXPECT_EQ(onlyError(withPeer("kubernetes: {enabled: true}\n")),
            "vipd.yaml:10:23: kubernetes.enabled: outside mode daemonset vipd has no service "
            "account: set kubernetes.kubeconfig (an admin kubeconfig on a static-pod or systemd "
            "host), or kubernetes.enabled: false; mode is standalone");
  EXPECT_EQ(onlyError(withPeer("mode: static-pod\nkubernetes:\n  kubeconfig: /k\n")),
            "vipd.yaml:12:3: kubernetes: kubernetes.nodeName is required outside mode daemonset "
            "(only the DaemonSet's pod gets it from NODE_NAME); mode is static-pod");
  EXPECT_EQ(onlyError(withPeer("kubernetes: {kubeconfig: admin.conf, nodeName: n}\n")),
            "vipd.yaml:10:26: kubernetes.kubeconfig: the kubeconfig must be an absolute path, got "
            "'admin.conf'");
  EXPECT_EQ(onlyError(withPeer("mode: daemonset\nkubernetes: {nodeName: CP_1}\n")),
            "vipd.yaml:11:24: kubernetes.nodeName: 'CP_1' is not a Node's name: a Node's name "
            "holds only lowercase letters, digits, '-' and '.'");
  EXPECT_THAT(onlyError(withPeer("kubernetes: {enabled: yes please}\n")),
              HasSubstr("kubernetes.enabled: "));
  EXPECT_THAT(onlyError(withPeer("kubernetes: {kubeConfig: /k}\n")),
              HasSubstr("kubeconfig"));
}

TEST(NodeName, Rules) {
  EXPECT_EQ(nodeNameProblem("cp-1"), std::nullopt);
  EXPECT_EQ(nodeNameProblem("ip-10-0-0-1.eu-west-1.compute.internal"), std::nullopt);
  EXPECT_EQ(nodeNameProblem("0"), std::nullopt);
  EXPECT_TRUE(nodeNameProblem(""));
  EXPECT_TRUE(nodeNameProblem("-cp"));
  EXPECT_TRUE(nodeNameProblem("cp-"));
  EXPECT_TRUE(nodeNameProblem("cp..1"));
  EXPECT_TRUE(nodeNameProblem(".cp"));
  EXPECT_TRUE(nodeNameProblem("cp."));
  EXPECT_TRUE(nodeNameProblem("cp-.x"));
  EXPECT_TRUE(nodeNameProblem("Cp"));
  EXPECT_TRUE(nodeNameProblem("cp/1"));
  EXPECT_TRUE(nodeNameProblem(std::string(254, 'a')));
  EXPECT_EQ(nodeNameProblem(std::string(253, 'a')), std::nullopt);
}

}  // namespace
}  // namespace vipd::config
