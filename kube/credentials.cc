#include "kube/credentials.h"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <yaml-cpp/yaml.h>

#include <boost/url/parse.hpp>
#include <memory>
#include <vector>

namespace vipd::kube {
namespace {

constexpr std::string_view kTokenFileName = "token";
constexpr std::string_view kCaFileName = "ca.crt";

tl::unexpected<Error> configError(std::string message) {
  return fail(ErrorKind::Config, std::move(message));
}

// RFC 4648 base64 with the line breaks a PEM bundle may carry; nothing when it is not base64.
std::optional<std::string> decodeBase64(std::string_view text) {
  std::unique_ptr<EVP_ENCODE_CTX, decltype(&EVP_ENCODE_CTX_free)> ctx(EVP_ENCODE_CTX_new(),
                                                                      &EVP_ENCODE_CTX_free);
  if (!ctx || text.size() > kMaxCredentialFileBytes * 2) {
    return std::nullopt;
  }
  EVP_DecodeInit(ctx.get());
  std::string out(text.size() / 4 * 3 + 3, '\0');
  int written = 0;
  if (EVP_DecodeUpdate(ctx.get(), reinterpret_cast<unsigned char*>(out.data()), &written,
                       reinterpret_cast<const unsigned char*>(text.data()),
                       static_cast<int>(text.size())) < 0) {
    return std::nullopt;
  }
  int last = 0;
  if (EVP_DecodeFinal(ctx.get(), reinterpret_cast<unsigned char*>(out.data()) + written, &last) !=
      1) {
    return std::nullopt;
  }
  out.resize(static_cast<size_t>(written + last));
  return out;
}

std::string directoryOf(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash == 0 ? 1 : slash);
}

std::string resolve(const std::string& base, const std::string& path) {
  if (!path.empty() && path.front() == '/') {
    return path;
  }
  return base == "/" ? "/" + path : base + "/" + path;
}

// The server URL: https only, a host, an optional port and path prefix, nothing else.
Result<Credentials> parseServer(std::string_view server, std::string_view where) {
  auto url = boost::urls::parse_uri(server);
  if (!url) {
    return configError(fmt::format("{}: server '{}' is not a URL", where, server));
  }
  if (url->scheme() != "https") {
    return configError(fmt::format(
        "{}: server '{}' is not https; vipd talks to the Kubernetes API only over verified TLS",
        where, server));
  }
  if (url->host().empty() || url->has_userinfo() || url->has_query() || url->has_fragment()) {
    return configError(fmt::format(
        "{}: server '{}' must be https://HOST[:PORT][/PATH], without user, query or fragment",
        where, server));
  }
  Credentials c;
  c.host = url->host_type() == boost::urls::host_type::ipv6 ? std::string(url->host_address())
                                                             : std::string(url->host());
  if (url->has_port()) {
    if (url->port_number() == 0) {
      return configError(fmt::format("{}: server '{}' has no valid port", where, server));
    }
    c.port = url->port_number();
  }
  std::string path(url->encoded_path());
  while (!path.empty() && path.back() == '/') {
    path.pop_back();
  }
  c.basePath = path;
  c.serverName = c.host;
  return c;
}

// One file a kubeconfig refers to, or its inline base64 twin (`<key>-data`).
Result<std::optional<std::string>> readPemSetting(const YAML::Node& node, const std::string& key,
                                                  const std::string& where,
                                                  const std::string& baseDir,
                                                  const ReadFile& readFile) {
  const YAML::Node data = node[key + "-data"];
  const YAML::Node file = node[key];
  if (data && file) {
    return configError(fmt::format("{}: both {} and {}-data are set; keep one", where, key, key));
  }
  if (data) {
    auto decoded = decodeBase64(data.as<std::string>());
    if (!decoded || decoded->empty()) {
      return configError(fmt::format("{}: {}-data is not base64 (it holds the PEM file's text, "
                                     "base64-encoded)",
                                     where, key));
    }
    return std::optional<std::string>(std::move(*decoded));
  }
  if (file) {
    std::string path = resolve(baseDir, file.as<std::string>());
    auto text = readFile(path);
    if (!text) {
      return configError(fmt::format("{}: {} {}: {}", where, key, path, text.error()));
    }
    return std::optional<std::string>(std::move(*text));
  }
  return std::optional<std::string>();
}

const YAML::Node* findNamed(const std::vector<YAML::Node>& items, const std::string& name) {
  for (const auto& item : items) {
    if (item["name"] && item["name"].as<std::string>() == name) {
      return &item;
    }
  }
  return nullptr;
}

std::vector<YAML::Node> namedList(const YAML::Node& root, const char* key) {
  std::vector<YAML::Node> out;
  const YAML::Node list = root[key];
  if (list && list.IsSequence()) {
    for (const auto& item : list) {
      out.push_back(item);
    }
  }
  return out;
}

Result<Credentials> readKubeconfig(const YAML::Node& root, const std::string& path,
                                   const ReadFile& readFile) {
  const std::string file = "kubeconfig " + path;
  if (!root.IsMap()) {
    return configError(fmt::format("{}: not a kubeconfig (expected a mapping at the top)", file));
  }
  if (!root["current-context"] || root["current-context"].as<std::string>().empty()) {
    return configError(fmt::format("{}: no current-context; set one (kubectl config "
                                   "use-context NAME --kubeconfig {})",
                                   file, path));
  }
  const std::string contextName = root["current-context"].as<std::string>();
  auto contexts = namedList(root, "contexts");
  const YAML::Node* context = findNamed(contexts, contextName);
  if (!context || !(*context)["context"].IsMap()) {
    return configError(fmt::format("{}: current-context '{}' is not among its contexts", file,
                                   contextName));
  }
  const YAML::Node ctx = (*context)["context"];
  const std::string clusterName = ctx["cluster"] ? ctx["cluster"].as<std::string>() : "";
  const std::string userName = ctx["user"] ? ctx["user"].as<std::string>() : "";
  auto clusters = namedList(root, "clusters");
  const YAML::Node* clusterItem = findNamed(clusters, clusterName);
  if (!clusterItem || !(*clusterItem)["cluster"].IsMap()) {
    return configError(fmt::format("{}: context '{}' names cluster '{}', which it does not hold",
                                   file, contextName, clusterName));
  }
  const YAML::Node cluster = (*clusterItem)["cluster"];
  const std::string where = fmt::format("{}: cluster '{}'", file, clusterName);
  if (cluster["insecure-skip-tls-verify"] && cluster["insecure-skip-tls-verify"].as<bool>()) {
    return configError(fmt::format(
        "{}: insecure-skip-tls-verify is refused: vipd verifies the API server's certificate "
        "against the cluster's CA; set certificate-authority(-data) instead",
        where));
  }
  if (!cluster["server"]) {
    return configError(fmt::format("{}: no server", where));
  }
  auto credentials = parseServer(cluster["server"].as<std::string>(), where);
  if (!credentials) {
    return credentials;
  }
  Credentials c = std::move(*credentials);
  const std::string baseDir = directoryOf(path);
  auto ca = readPemSetting(cluster, "certificate-authority", where, baseDir, readFile);
  if (!ca) {
    return tl::unexpected(ca.error());
  }
  if (!*ca) {
    return configError(fmt::format(
        "{}: no certificate-authority or certificate-authority-data; vipd trusts only the "
        "cluster's CA, never the system's store",
        where));
  }
  c.caPem = std::move(**ca);
  if (cluster["tls-server-name"]) {
    c.serverName = cluster["tls-server-name"].as<std::string>();
  }

  auto users = namedList(root, "users");
  const YAML::Node* userItem = findNamed(users, userName);
  if (!userItem || !(*userItem)["user"].IsMap()) {
    return configError(fmt::format("{}: context '{}' names user '{}', which it does not hold",
                                   file, contextName, userName));
  }
  const YAML::Node user = (*userItem)["user"];
  const std::string userWhere = fmt::format("{}: user '{}'", file, userName);
  for (const char* plugin : {"exec", "auth-provider"}) {
    if (user[plugin]) {
      return configError(fmt::format(
          "{}: {} is not supported: vipd runs no credential plugins; use a client certificate "
          "or a token (a service account's, for instance)",
          userWhere, plugin));
    }
  }
  if (user["username"] || user["password"]) {
    return configError(fmt::format(
        "{}: basic authentication (username, password) is not supported; use a client "
        "certificate or a token",
        userWhere));
  }
  auto cert = readPemSetting(user, "client-certificate", userWhere, baseDir, readFile);
  if (!cert) {
    return tl::unexpected(cert.error());
  }
  auto key = readPemSetting(user, "client-key", userWhere, baseDir, readFile);
  if (!key) {
    return tl::unexpected(key.error());
  }
  if (cert->has_value() != key->has_value()) {
    return configError(fmt::format(
        "{}: client-certificate and client-key go together: set both or neither", userWhere));
  }
  c.clientCertPem = std::move(*cert);
  c.clientKeyPem = std::move(*key);
  if (user["token"] && user["tokenFile"]) {
    return configError(fmt::format("{}: both token and tokenFile are set; keep one", userWhere));
  }
  if (user["token"]) {
    std::string token(trimSpace(user["token"].as<std::string>()));
    if (auto problem = tokenProblem(token)) {
      return configError(fmt::format("{}: token {}", userWhere, *problem));
    }
    c.token = std::move(token);
  }
  if (user["tokenFile"]) {
    c.tokenFile = resolve(baseDir, user["tokenFile"].as<std::string>());
  }
  if (!c.clientCertPem && !c.token && !c.tokenFile) {
    return configError(fmt::format(
        "{}: no credentials (client-certificate and client-key, token or tokenFile)", userWhere));
  }
  c.source = fmt::format("{}, context {}", file, contextName);
  return c;
}

}  // namespace

std::string_view trimSpace(std::string_view text) {
  constexpr std::string_view kSpace = " \t\r\n";
  auto first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) {
    return {};
  }
  auto last = text.find_last_not_of(kSpace);
  return text.substr(first, last - first + 1);
}

std::optional<std::string> tokenProblem(std::string_view token) {
  if (token.empty()) {
    return std::string("is empty");
  }
  if (token.size() > kMaxTokenBytes) {
    return fmt::format("is {} bytes, more than a bearer token's {} KiB", token.size(),
                       kMaxTokenBytes / 1024);
  }
  for (char ch : token) {
    auto u = static_cast<unsigned char>(ch);
    if (u <= 0x20 || u >= 0x7F) {
      return std::string("holds a character an HTTP header cannot carry (space, control or "
                         "non-ASCII)");
    }
  }
  return std::nullopt;
}

Result<Credentials> parseKubeconfig(std::string_view text, const std::string& path,
                                    const ReadFile& readFile) {
  if (text.size() > kMaxCredentialFileBytes) {
    return configError(fmt::format("kubeconfig {}: larger than {} KiB; is it a kubeconfig?", path,
                                   kMaxCredentialFileBytes / 1024));
  }
  try {
    return readKubeconfig(YAML::Load(std::string(text)), path, readFile);
  } catch (const YAML::Exception& e) {
    // A value of the wrong shape (a list where a string belongs) or YAML syntax.
    return configError(fmt::format("kubeconfig {}:{}:{}: {}", path, e.mark.line + 1,
                                   e.mark.column + 1, e.msg));
  }
}

Result<Credentials> inClusterCredentials(const GetEnv& getEnv, const ReadFile& readFile,
                                         std::string_view serviceAccountDir) {
  auto host = getEnv("KUBERNETES_SERVICE_HOST");
  auto port = getEnv("KUBERNETES_SERVICE_PORT");
  if (!host || host->empty() || !port || port->empty()) {
    return configError(
        "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set (not in a "
        "pod?); set kubernetes.kubeconfig, or kubernetes.enabled: false");
  }
  std::string bracketed = host->find(':') != std::string::npos ? "[" + *host + "]" : *host;
  auto credentials =
      parseServer(fmt::format("https://{}:{}", bracketed, *port), "in-cluster");
  if (!credentials) {
    return credentials;
  }
  Credentials c = std::move(*credentials);
  const std::string dir(serviceAccountDir);
  std::string caPath = dir + "/" + std::string(kCaFileName);
  auto ca = readFile(caPath);
  if (!ca) {
    return configError(fmt::format("in-cluster: the service account's CA {}: {} (is the "
                                   "service account token mounted? automountServiceAccountToken)",
                                   caPath, ca.error()));
  }
  c.caPem = std::move(*ca);
  c.tokenFile = dir + "/" + std::string(kTokenFileName);
  c.source = fmt::format("in-cluster service account ({})", dir);
  return c;
}

std::string serverUrl(const Credentials& c) {
  bool v6 = c.host.find(':') != std::string::npos;
  return fmt::format("https://{}{}{}:{}{}", v6 ? "[" : "", c.host, v6 ? "]" : "", c.port,
                     c.basePath);
}

}  // namespace vipd::kube
