// credentials.h: kubeconfig and in-cluster credentials, with files and the environment faked.
#include "kube/credentials.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <map>
#include <string>

namespace vipd::kube {
namespace {

using ::testing::HasSubstr;

// "CA PEM\n" and "CERT\n", "KEY\n" base64-encoded, as kubeconfig's *-data fields hold them.
constexpr std::string_view kCaData = "Q0EgUEVNCg==";
constexpr std::string_view kCertData = "Q0VSVAo=";
constexpr std::string_view kKeyData = "S0VZCg==";

struct FakeFiles {
  std::map<std::string, std::string> files;
  std::vector<std::string> reads;
  ReadFile reader() {
    return [this](const std::string& path) -> tl::expected<std::string, std::string> {
      reads.push_back(path);
      auto it = files.find(path);
      if (it == files.end()) {
        return tl::unexpected(std::string("No such file or directory"));
      }
      return it->second;
    };
  }
};

std::string kubeconfig(std::string_view cluster, std::string_view user) {
  return fmt::format(R"(apiVersion: v1
kind: Config
current-context: admin@k
contexts:
- name: other
  context: {{cluster: nowhere, user: nobody}}
- name: admin@k
  context: {{cluster: k, user: admin}}
clusters:
- name: k
  cluster:
{}
users:
- name: admin
  user:
{}
)",
                     cluster, user);
}

Result<Credentials> parse(std::string_view cluster, std::string_view user,
                          FakeFiles* files = nullptr) {
  FakeFiles none;
  return parseKubeconfig(kubeconfig(cluster, user), "/etc/kubernetes/admin.conf",
                         (files ? files : &none)->reader());
}

std::string errorOf(std::string_view cluster, std::string_view user, FakeFiles* files = nullptr) {
  auto c = parse(cluster, user, files);
  EXPECT_FALSE(c.has_value());
  if (c) {
    return "";
  }
  EXPECT_EQ(c.error().kind, ErrorKind::Config);
  return c.error().message;
}

TEST(Kubeconfig, InlineDataAndToken) {
  auto c = parse(fmt::format("    server: https://192.0.2.1:6443\n"
                             "    certificate-authority-data: {}",
                             kCaData),
                 "    token: abc.def-ghi_jkl\n");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->host, "192.0.2.1");
  EXPECT_EQ(c->port, 6443);
  EXPECT_EQ(c->basePath, "");
  EXPECT_EQ(c->serverName, "192.0.2.1");
  EXPECT_EQ(c->caPem, "CA PEM\n");
  EXPECT_EQ(c->token, "abc.def-ghi_jkl");
  EXPECT_FALSE(c->tokenFile);
  EXPECT_FALSE(c->clientCertPem);
  EXPECT_EQ(c->source, "kubeconfig /etc/kubernetes/admin.conf, context admin@k");
  EXPECT_EQ(serverUrl(*c), "https://192.0.2.1:6443");
}

TEST(Kubeconfig, FilesRelativeToTheKubeconfigAndAClientCertificate) {
  FakeFiles files;
  files.files = {{"/etc/kubernetes/pki/ca.crt", "CA"},
                 {"/etc/kubernetes/admin.crt", "CERT"},
                 {"/etc/admin.key", "KEY"}};
  auto c = parse("    server: https://api.example:443/k8s/clusters/c-1/\n"
                 "    certificate-authority: pki/ca.crt\n"
                 "    tls-server-name: kubernetes",
                 "    client-certificate: admin.crt\n"
                 "    client-key: /etc/admin.key\n",
                 &files);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->host, "api.example");
  EXPECT_EQ(c->port, 443);
  EXPECT_EQ(c->basePath, "/k8s/clusters/c-1") << "a proxy's path prefix, trailing / dropped";
  EXPECT_EQ(c->serverName, "kubernetes") << "tls-server-name";
  EXPECT_EQ(c->caPem, "CA");
  EXPECT_EQ(c->clientCertPem, "CERT");
  EXPECT_EQ(c->clientKeyPem, "KEY");
  EXPECT_EQ(files.reads, (std::vector<std::string>{"/etc/kubernetes/pki/ca.crt",
                                                   "/etc/kubernetes/admin.crt",
                                                   "/etc/admin.key"}));
}

TEST(Kubeconfig, Ipv6ServerAndTokenFile) {
  auto c = parse(fmt::format("    server: https://[2001:db8::1]:6443\n"
                             "    certificate-authority-data: {}",
                             kCaData),
                 "    tokenFile: tokens/vipd\n");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->host, "2001:db8::1");
  EXPECT_EQ(c->tokenFile, "/etc/kubernetes/tokens/vipd");
  EXPECT_EQ(serverUrl(*c), "https://[2001:db8::1]:6443");
}

TEST(Kubeconfig, InlineClientCertificate) {
  auto c = parse(fmt::format("    server: https://192.0.2.1\n    certificate-authority-data: {}",
                             kCaData),
                 fmt::format("    client-certificate-data: {}\n    client-key-data: {}\n",
                             kCertData, kKeyData));
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->port, 443) << "https's port when none is written";
  EXPECT_EQ(c->clientCertPem, "CERT\n");
  EXPECT_EQ(c->clientKeyPem, "KEY\n");
}

const std::string kGoodCluster =
    fmt::format("    server: https://192.0.2.1:6443\n    certificate-authority-data: {}", kCaData);

TEST(Kubeconfig, Refusals) {
  EXPECT_EQ(errorOf(kGoodCluster + "\n    insecure-skip-tls-verify: true", "    token: t\n"),
            "kubeconfig /etc/kubernetes/admin.conf: cluster 'k': insecure-skip-tls-verify is "
            "refused: vipd verifies the API server's certificate against the cluster's CA; set "
            "certificate-authority(-data) instead");
  EXPECT_EQ(errorOf(fmt::format("    server: http://192.0.2.1:8080\n"
                                "    certificate-authority-data: {}",
                                kCaData),
                    "    token: t\n"),
            "kubeconfig /etc/kubernetes/admin.conf: cluster 'k': server 'http://192.0.2.1:8080' "
            "is not https; vipd talks to the Kubernetes API only over verified TLS");
  EXPECT_EQ(errorOf("    server: https://192.0.2.1:6443", "    token: t\n"),
            "kubeconfig /etc/kubernetes/admin.conf: cluster 'k': no certificate-authority or "
            "certificate-authority-data; vipd trusts only the cluster's CA, never the system's "
            "store");
  EXPECT_THAT(errorOf(kGoodCluster, "    exec: {command: aws}\n"),
              HasSubstr("user 'admin': exec is not supported: vipd runs no credential plugins"));
  EXPECT_THAT(errorOf(kGoodCluster, "    auth-provider: {name: gcp}\n"),
              HasSubstr("auth-provider is not supported"));
  EXPECT_THAT(errorOf(kGoodCluster, "    username: a\n    password: b\n"),
              HasSubstr("basic authentication (username, password) is not supported"));
  EXPECT_THAT(errorOf(kGoodCluster, fmt::format("    client-certificate-data: {}\n", kCertData)),
              HasSubstr("client-certificate and client-key go together"));
  EXPECT_THAT(errorOf(kGoodCluster, "    token: a\n    tokenFile: /t\n"),
              HasSubstr("both token and tokenFile are set; keep one"));
  EXPECT_THAT(errorOf(kGoodCluster, "    token: \"a b\"\n"),
              HasSubstr("token holds a character an HTTP header cannot carry"));
  EXPECT_THAT(errorOf(kGoodCluster, "    {}\n"),
              HasSubstr("no credentials (client-certificate and client-key, token or "
                        "tokenFile)"));
  EXPECT_THAT(errorOf("    server: https://192.0.2.1\n    certificate-authority-data: '!!!'",
                      "    token: t\n"),
              HasSubstr("certificate-authority-data is not base64"));
  EXPECT_EQ(errorOf("    server: https://192.0.2.1\n    certificate-authority: ca.crt",
                    "    token: t\n"),
            "kubeconfig /etc/kubernetes/admin.conf: cluster 'k': certificate-authority "
            "/etc/kubernetes/ca.crt: No such file or directory");
  EXPECT_THAT(errorOf("    server: https://user@192.0.2.1/?q=1\n    certificate-authority-data: "
                      "Q0EK",
                      "    token: t\n"),
              HasSubstr("must be https://HOST[:PORT][/PATH], without user, query or fragment"));
}

TEST(Kubeconfig, StructureErrors) {
  FakeFiles files;
  auto r = parseKubeconfig("apiVersion: v1\nclusters: []\n", "/k", files.reader());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "kubeconfig /k: no current-context; set one (kubectl config use-context NAME "
            "--kubeconfig /k)");
  r = parseKubeconfig("current-context: x\ncontexts: []\n", "/k", files.reader());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "kubeconfig /k: current-context 'x' is not among its contexts");
  r = parseKubeconfig("current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\n",
                      "/k", files.reader());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "kubeconfig /k: context 'x' names cluster 'c', which it does not hold");
  r = parseKubeconfig("current-context: [x\n", "/k", files.reader());
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("kubeconfig /k:2:1: "));
  r = parseKubeconfig("- a list\n", "/k", files.reader());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "kubeconfig /k: not a kubeconfig (expected a mapping at the top)");
  r = parseKubeconfig("current-context: {a: b}\n", "/k", files.reader());
  ASSERT_FALSE(r) << "a mapping where a string belongs";
  EXPECT_EQ(r.error().kind, ErrorKind::Config);
}

TEST(InCluster, ServiceAccount) {
  FakeFiles files;
  files.files = {{"/sa/ca.crt", "CLUSTER CA"}};
  std::map<std::string, std::string> env = {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                                            {"KUBERNETES_SERVICE_PORT", "443"}};
  GetEnv getEnv = [&](std::string_view name) -> std::optional<std::string> {
    auto it = env.find(std::string(name));
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  auto c = inClusterCredentials(getEnv, files.reader(), "/sa");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->host, "10.96.0.1");
  EXPECT_EQ(c->port, 443);
  EXPECT_EQ(c->serverName, "10.96.0.1") << "the Service IP, which the apiserver's cert names";
  EXPECT_EQ(c->caPem, "CLUSTER CA");
  EXPECT_EQ(c->tokenFile, "/sa/token");
  EXPECT_FALSE(c->token) << "the token rotates: TokenSource reads it";
  EXPECT_EQ(c->source, "in-cluster service account (/sa)");

  env["KUBERNETES_SERVICE_HOST"] = "fd00:10:96::1";
  c = inClusterCredentials(getEnv, files.reader(), "/sa");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->host, "fd00:10:96::1");
  EXPECT_EQ(serverUrl(*c), "https://[fd00:10:96::1]:443");

  files.files.clear();
  c = inClusterCredentials(getEnv, files.reader(), "/sa");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message,
            "in-cluster: the service account's CA /sa/ca.crt: No such file or directory (is the "
            "service account token mounted? automountServiceAccountToken)");

  env.clear();
  c = inClusterCredentials(getEnv, files.reader(), "/sa");
  ASSERT_FALSE(c);
  EXPECT_THAT(c.error().message,
              HasSubstr("KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set"));
}

TEST(Token, Problems) {
  EXPECT_EQ(tokenProblem("eyJhbGciOi.x-y_z"), std::nullopt);
  EXPECT_EQ(tokenProblem(""), "is empty");
  EXPECT_TRUE(tokenProblem("a\r\nX-Injected: 1"));
  EXPECT_TRUE(tokenProblem("caf\xc3\xa9"));
  EXPECT_TRUE(tokenProblem(std::string(kMaxTokenBytes + 1, 'a')));
  EXPECT_EQ(trimSpace("  tok\n"), "tok");
  EXPECT_EQ(trimSpace(" \n"), "");
}

}  // namespace
}  // namespace vipd::kube
