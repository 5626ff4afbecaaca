#include "daemon/doctor/apiserver_certificate.h"

#include <fmt/format.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "config/health_target.h"
#include "daemon/health/apiserver_call.h"  // formatDuration()
#include "daemon/health/tls.h"

namespace vipd::daemon {
namespace {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

struct X509Deleter {
  void operator()(X509* cert) const { X509_free(cert); }
};
struct GeneralNamesDeleter {
  void operator()(GENERAL_NAMES* names) const { GENERAL_NAMES_free(names); }
};

// The subjectAltName entries of `cert` that name a host: DNS names and IP addresses.
void readNames(X509* cert, doctor::ApiserverCertificate& out) {
  std::unique_ptr<GENERAL_NAMES, GeneralNamesDeleter> names(static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr)));
  if (!names) {
    return;
  }
  for (int i = 0; i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names.get(), i);
    if (name->type == GEN_DNS) {
      const ASN1_STRING* dns = name->d.dNSName;
      out.dnsNames.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(dns)),
                                static_cast<size_t>(ASN1_STRING_length(dns)));
    } else if (name->type == GEN_IPADD) {
      const ASN1_OCTET_STRING* ip = name->d.iPAddress;
      const unsigned char* bytes = ASN1_STRING_get0_data(ip);
      const int length = ASN1_STRING_length(ip);
      if (length == 4) {
        out.ipAddresses.push_back(bgp::IpAddress::v4({bytes[0], bytes[1], bytes[2], bytes[3]}));
      } else if (length == 16) {
        std::array<uint8_t, 16> v6{};
        std::memcpy(v6.data(), bytes, 16);
        out.ipAddresses.push_back(bgp::IpAddress::v6(v6));
      }
    }
  }
}

}  // namespace

doctor::ApiserverCertificate fetchApiserverCertificate(const config::Health& health,
                                                       std::chrono::milliseconds timeout) {
  doctor::ApiserverCertificate out;
  auto target = config::healthTarget(health);
  if (!target) {
    out.endpoint = health.url;
    out.fetchError = target.error();
    return out;
  }
  out.endpoint = target->authority;
  // The health check's own context, so the chain is judged as the check judges it. When it
  // cannot be built (the CA file is missing), the certificate is still read, untrusted, and
  // the reason stands as the verification's.
  std::shared_ptr<ssl::context> tls;
  if (auto context = makeHealthTlsContext(health)) {
    tls = *context;
  } else {
    out.verifyError = context.error();
    try {
      tls = std::make_shared<ssl::context>(ssl::context::tls_client);
    } catch (const boost::system::system_error& e) {
      out.fetchError = fmt::format("cannot create a TLS context: {}", e.what());
      return out;
    }
  }
  asio::io_context io(1);
  ssl::stream<tcp::socket> stream(io, *tls);
  // Verified, but not refused: the handshake completes whatever the chain, so the names can be
  // read, and the verifier's result (SSL_get_verify_result) says whether it is trusted. No
  // SSL_set1_host: the name the health check wants is its own concern, the VIPs are this one's.
  boost::system::error_code ignored;
  stream.set_verify_mode(ssl::verify_none, ignored);
  tcp::resolver resolver(io);
  std::string stage = "resolving " + target->host;
  std::optional<boost::system::error_code> outcome;
  resolver.async_resolve(
      target->host, target->port,
      [&](const boost::system::error_code& ec, const tcp::resolver::results_type& results) {
        if (ec) {
          outcome = ec;
          return;
        }
        stage = "connecting";
        asio::async_connect(
            stream.lowest_layer(), results,
            [&](const boost::system::error_code& connected, const tcp::endpoint&) {
              if (connected) {
                outcome = connected;
                return;
              }
              stage = "in the TLS handshake";
              stream.async_handshake(ssl::stream_base::client,
                                     [&](const boost::system::error_code& shaken) {
                                       outcome = shaken;
                                     });
            });
      });
  io.run_for(timeout);
  if (!outcome) {
    out.fetchError = fmt::format("no answer within {} ({})", formatDuration(timeout), stage);
    return out;
  }
  if (*outcome) {
    out.fetchError = fmt::format("{} ({})", outcome->message(), stage);
    return out;
  }
  SSL* handle = stream.native_handle();
  std::unique_ptr<X509, X509Deleter> cert(SSL_get1_peer_certificate(handle));
  if (!cert) {
    out.fetchError = "the server sent no certificate";
    return out;
  }
  readNames(cert.get(), out);
  if (!out.verifyError) {
    if (const long result = SSL_get_verify_result(handle); result != X509_V_OK) {
      out.verifyError = X509_verify_cert_error_string(result);
    }
  }
  stream.lowest_layer().close(ignored);
  return out;
}

}  // namespace vipd::daemon
