// Where a health check goes: health.url and health.address parsed with Boost.URL, the server name
// chosen for the certificate check, and the messages for values that cannot be used. Pure.
#include "config/health_target.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace vipd::config {
namespace {

using ::testing::HasSubstr;

struct UrlCase {
  const char* url;
  const char* host;
  const char* port;
  const char* authority;
  const char* path;
};

TEST(HealthTarget, HttpsUrls) {
  const UrlCase cases[] = {
      {"https://127.0.0.1:6443/readyz", "127.0.0.1", "6443", "127.0.0.1:6443", "/readyz"},
      {"https://[::1]:16443/livez?verbose", "::1", "16443", "[::1]:16443", "/livez?verbose"},
      {"https://localhost/readyz", "localhost", "443", "localhost", "/readyz"},
      {"https://[2001:db8::1]/readyz", "2001:db8::1", "443", "[2001:db8::1]", "/readyz"},
      // No path: the root; a query alone is the root's.
      {"https://127.0.0.1:6443", "127.0.0.1", "6443", "127.0.0.1:6443", "/"},
      {"https://h:1?x=1", "h", "1", "h:1", "/?x=1"},
      // The fragment is never sent; an empty query is kept as written.
      {"https://h/readyz?#top", "h", "443", "h", "/readyz?"},
      // An empty port is the default one; the port stays as written.
      {"https://h:/readyz", "h", "443", "h:", "/readyz"},
      {"https://h:06443/readyz", "h", "06443", "h:06443", "/readyz"},
      // Percent-encodings are passed on as written.
      {"https://h/a%20b?q=%41", "h", "443", "h", "/a%20b?q=%41"},
  };
  for (const auto& c : cases) {
    auto target = parseHttpsUrl(c.url);
    ASSERT_TRUE(target.has_value()) << c.url << ": " << target.error();
    EXPECT_EQ(target->host, c.host) << c.url;
    EXPECT_EQ(target->port, c.port) << c.url;
    EXPECT_EQ(target->authority, c.authority) << c.url;
    EXPECT_EQ(target->path, c.path) << c.url;
    EXPECT_EQ(target->serverName, "") << c.url;
  }
}

TEST(HealthTarget, BadUrlsSayWhatIsWrong) {
  const std::pair<const char*, const char*> cases[] = {
      {"http://127.0.0.1:6443/readyz", "only https:// URLs are supported"},
      {"ftp://[::1/readyz", "only https:// URLs are supported"},
      {"https:127.0.0.1/readyz", "only https:// URLs are supported"},
      {"/readyz", "only https:// URLs are supported"},
      {"https://:6443/readyz", "the host is empty"},
      {"https://", "the host is empty"},
      {"https://127.0.0.1:99999/readyz", "port '99999' is not a number from 1 to 65535"},
      {"https://127.0.0.1:0/readyz", "port '0' is not a number from 1 to 65535"},
      {"https://127.0.0.1:x/readyz", "port 'x' is not a number from 1 to 65535"},
      {"https://::1:6443/readyz", "write an IPv6 address in brackets, as [2001:db8::1]:6443"},
      {"https://[::1:6443/readyz", "an IPv6 address must be closed with ']'"},
      {"https://user@127.0.0.1/readyz", "user information in the URL is not supported"},
      {"https://[::1]6443/readyz", "expected ':port' after ']'"},
      {"https://[v1.x]/readyz", "'[v1.x]' is not an IPv6 address"},
      {"https://[fe80::1%25eth0]:6443/readyz", "an IPv6 zone ID ('%25' and an interface)"},
      {"https://[::1]:6443:1/readyz", "'[::1]:6443:1' is not host:port"},
      {"https://127.0.0.1/ready z",
       "a space (at offset 23) is not allowed in a URL; percent-encode it"},
      {"https://127.0.0.1/readyz\n", "byte 0x0a (at offset 24) is not allowed in a URL"},
      {"https://h/readyz?exclude=[etcd]", "'[' (at offset 25) is not allowed in the path or query"},
      {"https://h/ready%zz", "'%' (at offset 15) does not start a percent-encoding such as %20"},
      {"https://h/readyz?x=%4", "'%' (at offset 19) does not start a percent-encoding"},
  };
  for (const auto& [url, message] : cases) {
    auto target = parseHttpsUrl(url);
    ASSERT_FALSE(target.has_value()) << url;
    EXPECT_THAT(target.error(), HasSubstr(message)) << url;
  }
}

TEST(HealthTarget, HostPortAddresses) {
  auto v4 = parseHostPort("127.0.0.1:6443");
  ASSERT_TRUE(v4.has_value()) << v4.error();
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->port, "6443");
  EXPECT_EQ(v4->authority, "127.0.0.1:6443");
  auto v6 = parseHostPort("[::1]:2379");
  ASSERT_TRUE(v6.has_value()) << v6.error();
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, "2379");
  EXPECT_EQ(v6->authority, "[::1]:2379");
  auto name = parseHostPort("etcd.local:2379");
  ASSERT_TRUE(name.has_value()) << name.error();
  EXPECT_EQ(name->host, "etcd.local");
}

TEST(HealthTarget, BadAddressesSayWhatIsWrong) {
  const std::pair<const char*, const char*> cases[] = {
      {"127.0.0.1", "expected host:port"},
      {"[::1]", "expected host:port"},
      {"127.0.0.1:", "expected host:port"},
      {":6443", "the host is empty"},
      {"::1:6443", "write an IPv6 address in brackets, as [2001:db8::1]:6443"},
      {"[::1:6443", "an IPv6 address must be closed with ']'"},
      {"[::1]6443", "expected ':port' after ']'"},
      {"127.0.0.1:65536", "port '65536' is not a number from 1 to 65535"},
      {"127.0.0.1:http", "port 'http' is not a number from 1 to 65535"},
      {"127.0.0.1:6443/readyz", "'/' (at offset 14) is not allowed in host:port"},
      {"me@127.0.0.1:6443", "user information (before '@') is not supported"},
  };
  for (const auto& [address, message] : cases) {
    auto target = parseHostPort(address);
    ASSERT_FALSE(target.has_value()) << address;
    EXPECT_THAT(target.error(), HasSubstr(message)) << address;
  }
}

config::Health apiserver(const std::string& url) {
  config::Health health;
  health.type = config::Health::Type::Apiserver;
  health.url = url;
  return health;
}

TEST(HealthTarget, ServerName) {
  // An IP address in the URL: the name every stock apiserver certificate carries.
  auto byIp = healthTarget(apiserver("https://127.0.0.1:6443/readyz"));
  ASSERT_TRUE(byIp.has_value()) << byIp.error();
  EXPECT_EQ(byIp->serverName, config::kDefaultApiserverServerName);
  auto byIpv6 = healthTarget(apiserver("https://[::1]:6443/readyz"));
  ASSERT_TRUE(byIpv6.has_value()) << byIpv6.error();
  EXPECT_EQ(byIpv6->serverName, config::kDefaultApiserverServerName);
  // A DNS name in the URL: that name.
  auto byName = healthTarget(apiserver("https://api.example.com:6443/readyz"));
  ASSERT_TRUE(byName.has_value()) << byName.error();
  EXPECT_EQ(byName->serverName, "api.example.com");
  // health.serverName wins over both.
  auto health = apiserver("https://api.example.com:6443/readyz");
  health.serverName = "kubernetes.default.svc";
  auto set = healthTarget(health);
  ASSERT_TRUE(set.has_value()) << set.error();
  EXPECT_EQ(set->serverName, "kubernetes.default.svc");
  EXPECT_EQ(set->host, "api.example.com");
}

TEST(HealthTarget, ErrorsNameTheSettingAndItsValue) {
  auto url = healthTarget(apiserver("http://127.0.0.1:6443/readyz"));
  ASSERT_FALSE(url.has_value());
  EXPECT_EQ(url.error(),
            "health.url 'http://127.0.0.1:6443/readyz': only https:// URLs are supported");

  auto health = apiserver("https://127.0.0.1:6443/readyz");
  health.serverName = "10.0.0.1";
  auto name = healthTarget(health);
  ASSERT_FALSE(name.has_value());
  EXPECT_THAT(name.error(), HasSubstr("health.serverName '10.0.0.1': expected the DNS name"));

  config::Health tcp;
  tcp.type = config::Health::Type::Tcp;
  tcp.address = "::1:6443";
  auto address = healthTarget(tcp);
  ASSERT_FALSE(address.has_value());
  EXPECT_EQ(address.error(),
            "health.address '::1:6443': write an IPv6 address in brackets, as "
            "[2001:db8::1]:6443");
}

}  // namespace
}  // namespace vipd::config
