// Where the Kubernetes API is and how vipd proves who it is (issue 41, part 1). Two sources:
// - a kubeconfig file (`kubernetes.kubeconfig`: a static pod or a systemd host using an admin
//   kubeconfig): its current context's cluster (server, certificate authority, tls-server-name)
//   and user (client certificate and key, token or tokenFile);
// - in-cluster (a DaemonSet pod): KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT and the
//   service account's files, /var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt}.
//
// Pure: files are read through the ReadFile given and the environment through GetEnv, so the
// rules are unit-tested without a file system. What is refused, and why, is part of the
// contract: `insecure-skip-tls-verify` (vipd never talks to an API it cannot verify), a server
// that is not https, a cluster without a certificate authority (the system trust store is never
// used), `exec` and `auth-provider` users (vipd runs no plugins), and a token with characters an
// HTTP header cannot carry.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "kube/error.h"

namespace vipd::kube {

inline constexpr std::string_view kServiceAccountDir =
    "/var/run/secrets/kubernetes.io/serviceaccount";
// A kubeconfig, a CA bundle or a certificate beyond this is not one: refused before parsing.
inline constexpr size_t kMaxCredentialFileBytes = 1024 * 1024;
// A bearer token beyond this is refused (service account tokens are about 1 KiB).
inline constexpr size_t kMaxTokenBytes = 16 * 1024;

// The text of a file, or one phrase saying why it could not be read (the caller names the file).
using ReadFile = std::function<tl::expected<std::string, std::string>(const std::string& path)>;
// An environment variable's value, if set.
using GetEnv = std::function<std::optional<std::string>(std::string_view name)>;

struct Credentials {
  std::string host;        // the server's host: an IPv4 or IPv6 address (no brackets) or a DNS name
  uint16_t port = 443;
  std::string basePath;    // a path prefix the server URL carries (a proxy's), "" or "/k8s/c1"
  std::string serverName;  // the name (or address) the server certificate must carry; SNI if a name
  std::string caPem;       // trusted for this server alone
  std::optional<std::string> clientCertPem;  // with clientKeyPem: TLS client authentication
  std::optional<std::string> clientKeyPem;
  std::optional<std::string> token;      // a bearer token written inline
  std::optional<std::string> tokenFile;  // a bearer token read from this file (TokenSource)
  std::string source;  // for messages: "kubeconfig /etc/kubernetes/admin.conf, context admin@k"
  auto operator<=>(const Credentials&) const = default;
};

// The current context of kubeconfig `text` (read from `path`, which names it in errors and
// against which relative file references resolve, as kubectl does). Every error is Config.
[[nodiscard]] Result<Credentials> parseKubeconfig(std::string_view text, const std::string& path,
                                                  const ReadFile& readFile);

// The pod's service account (`serviceAccountDir` is kServiceAccountDir but in tests). The token is
// left to TokenSource (it rotates); the CA is read now. Every error is Config.
[[nodiscard]] Result<Credentials> inClusterCredentials(
    const GetEnv& getEnv, const ReadFile& readFile,
    std::string_view serviceAccountDir = kServiceAccountDir);

// "https://10.96.0.1:443", "https://[2001:db8::1]:6443" (for messages).
[[nodiscard]] std::string serverUrl(const Credentials& credentials);

// Why `token` cannot be sent as "Authorization: Bearer <token>" (empty, too long, a character
// outside visible ASCII), or nothing when it can. Surrounding white space is not part of a token
// file's token: the callers trim it first.
[[nodiscard]] std::optional<std::string> tokenProblem(std::string_view token);
[[nodiscard]] std::string_view trimSpace(std::string_view text);

}  // namespace vipd::kube
