#include "daemon/health/tls.h"

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/ssl.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>
#include <utility>

namespace vipd::daemon {

namespace {

namespace asio = boost::asio;
namespace ssl = asio::ssl;

// Certificate, key and CA files are small; this only stops a wrong path (a disk image, a device)
// from being read into memory.
constexpr size_t kMaxPemFileBytes = 4 * 1024 * 1024;

tl::expected<std::string, std::string> readPemFile(std::string_view setting,
                                                   const std::string& path) {
  std::unique_ptr<std::FILE, decltype(&std::fclose)> file(std::fopen(path.c_str(), "rb"),
                                                          &std::fclose);
  if (!file) {
    return tl::unexpected(
        fmt::format("health.{} {}: cannot open it: {}", setting, path, std::strerror(errno)));
  }
  std::string contents;
  char chunk[8192];
  size_t n = 0;
  while ((n = std::fread(chunk, 1, sizeof chunk, file.get())) > 0) {
    contents.append(chunk, n);
    if (contents.size() > kMaxPemFileBytes) {
      return tl::unexpected(fmt::format("health.{} {}: larger than {} MiB; is it a PEM file?",
                                        setting, path, kMaxPemFileBytes / (1024 * 1024)));
    }
  }
  if (std::ferror(file.get())) {
    return tl::unexpected(
        fmt::format("health.{} {}: cannot read it: {}", setting, path, std::strerror(errno)));
  }
  return contents;
}

// The client certificate and its key, presented when the server asks for one.
tl::expected<void, std::string> useClientCertificate(ssl::context& tls,
                                                     const config::Health& health,
                                                     const std::string& cert,
                                                     const std::string& key) {
  boost::system::error_code ec;
  tls.use_certificate_chain(asio::buffer(cert), ec);
  if (ec) {
    return tl::unexpected(fmt::format("health.certFile {}: not a PEM certificate ({})",
                                      *health.certFile, ec.message()));
  }
  tls.use_private_key(asio::buffer(key), ssl::context::pem, ec);
  if (ec && ec.category() == asio::error::get_ssl_category() &&
      ERR_GET_REASON(static_cast<unsigned int>(ec.value())) == X509_R_KEY_VALUES_MISMATCH) {
    return tl::unexpected(fmt::format("health.keyFile {} is not the key of health.certFile {}",
                                      *health.keyFile, *health.certFile));
  }
  if (ec) {
    return tl::unexpected(fmt::format("health.keyFile {}: not a PEM private key ({})",
                                      *health.keyFile, ec.message()));
  }
  if (SSL_CTX_check_private_key(tls.native_handle()) != 1) {
    return tl::unexpected(fmt::format("health.keyFile {} is not the key of health.certFile {}",
                                      *health.keyFile, *health.certFile));
  }
  return {};
}

}  // namespace

tl::expected<std::shared_ptr<ssl::context>, std::string> makeHealthTlsContext(
    const config::Health& health) {
  if (health.caFile.empty()) {
    return tl::unexpected(std::string("health.caFile is required for type apiserver"));
  }
  if (health.certFile.has_value() != health.keyFile.has_value()) {
    return tl::unexpected(
        std::string("health.certFile and health.keyFile go together: set both or neither"));
  }
  auto ca = readPemFile("caFile", health.caFile);
  if (!ca) {
    return tl::unexpected(ca.error());
  }
  std::optional<std::string> cert;
  std::optional<std::string> key;
  if (health.certFile) {
    auto c = readPemFile("certFile", *health.certFile);
    if (!c) {
      return tl::unexpected(c.error());
    }
    auto k = readPemFile("keyFile", *health.keyFile);
    if (!k) {
      return tl::unexpected(k.error());
    }
    cert = std::move(*c);
    key = std::move(*k);
  }

  std::shared_ptr<ssl::context> tls;
  try {
    tls = std::make_shared<ssl::context>(ssl::context::tls_client);
  } catch (const boost::system::system_error& e) {
    return tl::unexpected(fmt::format("cannot create a TLS context: {}", e.what()));
  }
  boost::system::error_code ec;
  tls->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1,
                   ec);
  // Only the configured CA: the system trust store is not loaded.
  tls->add_certificate_authority(asio::buffer(*ca), ec);
  if (ec) {
    return tl::unexpected(fmt::format("health.caFile {}: no usable PEM certificate in it ({})",
                                      health.caFile, ec.message()));
  }
  tls->set_verify_mode(ssl::verify_peer, ec);
  if (cert) {
    if (auto used = useClientCertificate(*tls, health, *cert, *key); !used) {
      return tl::unexpected(used.error());
    }
  }
  return tls;
}

}  // namespace vipd::daemon
