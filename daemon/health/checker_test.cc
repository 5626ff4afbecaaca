// HealthChecker against real local servers on 127.0.0.1, run on the test's own io_context. The
// certificates are made at test time with the OpenSSL C API: a CA; from it a server certificate
// shaped like a stock kubeadm apiserver's (the `kubernetes` names, the Service and node addresses,
// no 127.0.0.1), a client certificate, and server certificates that lack the name `kubernetes`
// (another name; 127.0.0.1 only, as an IP SAN or as the CN); and a second ("foreign") CA with its
// own kubeadm-shaped server certificate.
#include "daemon/health/checker.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace vipd::daemon {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// ---- certificates ----

struct EvpPkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};
using Key = std::unique_ptr<EVP_PKEY, EvpPkeyFree>;
using Cert = std::unique_ptr<X509, X509Free>;

Key makeKey() {
  Key key(EVP_EC_gen("P-256"));
  if (!key) {
    std::abort();
  }
  return key;
}

void addExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr || X509_add_ext(cert, ext, -1) != 1) {
    std::abort();
  }
  X509_EXTENSION_free(ext);
}

// A certificate for `key` named `cn`; self-signed when `issuer` is null. `san` is for leaves.
Cert makeCert(const char* cn, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuerKey, const char* san) {
  static long serial = 1;
  Cert cert(X509_new());
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial++);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 86400);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                             -1, -1, 0);
  X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : name);
  X509_set_pubkey(cert.get(), key);
  X509* signer = issuer ? issuer : cert.get();
  if (san == nullptr) {
    addExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE");
    addExtension(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    addExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:FALSE");
    addExtension(cert.get(), signer, NID_subject_alt_name, san);
  }
  if (X509_sign(cert.get(), issuerKey ? issuerKey : key, EVP_sha256()) == 0) {
    std::abort();
  }
  return cert;
}

void writePem(const std::string& path, X509* cert) {
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  PEM_write_X509(f, cert);
  std::fclose(f);
}

void writePem(const std::string& path, EVP_PKEY* key) {
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(f);
}

// What kubeadm puts in the apiserver's serving certificate: the `kubernetes` Service's names, its
// ClusterIP and the node's address, but no loopback address (192.0.2.11 stands for the node).
constexpr const char* kKubeadmSan =
    "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,"
    "DNS:kubernetes.default.svc.cluster.local,IP:10.96.0.1,IP:192.0.2.11";

struct Pki {
  std::string dir;
  std::string ca, serverCert, serverKey, clientCert, clientKey;
  std::string otherNameCert, otherNameKey;  // from our CA, for the name etcd and 127.0.0.1
  std::string ipOnlyCert, ipOnlyKey;        // from our CA, IP SAN 127.0.0.1 only
  std::string cnOnlyCert, cnOnlyKey;        // from our CA, CN kubernetes, IP SAN 127.0.0.1 only
  std::string foreignCa, foreignCert, foreignKey;  // kubeadm-shaped, from another CA

  std::string path(const char* file) const { return dir + "/" + file; }

  void make() {
    char pattern[] = "/tmp/vipd-health-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir = pattern;
    Key caKey = makeKey();
    Cert caCert = makeCert("vipd test CA", caKey.get(), nullptr, nullptr, nullptr);
    writePem(ca = path("ca.crt"), caCert.get());

    auto leaf = [&](const char* name, const char* cn, const char* san, X509* issuer,
                    EVP_PKEY* issuerKey, std::string& certPath, std::string& keyPath) {
      Key key = makeKey();
      Cert cert = makeCert(cn, key.get(), issuer, issuerKey, san);
      writePem(certPath = path((std::string(name) + ".crt").c_str()), cert.get());
      writePem(keyPath = path((std::string(name) + ".key").c_str()), key.get());
    };
    leaf("server", "kube-apiserver", kKubeadmSan, caCert.get(), caKey.get(), serverCert, serverKey);
    leaf("client", "vipd", "DNS:vipd", caCert.get(), caKey.get(), clientCert, clientKey);
    leaf("other", "etcd", "DNS:etcd,IP:127.0.0.1", caCert.get(), caKey.get(), otherNameCert,
         otherNameKey);
    leaf("iponly", "127.0.0.1", "IP:127.0.0.1", caCert.get(), caKey.get(), ipOnlyCert, ipOnlyKey);
    leaf("cnonly", "kubernetes", "IP:127.0.0.1", caCert.get(), caKey.get(), cnOnlyCert, cnOnlyKey);

    Key foreignCaKey = makeKey();
    Cert foreignCaCert = makeCert("foreign CA", foreignCaKey.get(), nullptr, nullptr, nullptr);
    writePem(foreignCa = path("foreign-ca.crt"), foreignCaCert.get());
    leaf("foreign", "kube-apiserver", kKubeadmSan, foreignCaCert.get(), foreignCaKey.get(),
         foreignCert, foreignKey);
  }
};

// ---- servers ----

struct Reply {
  unsigned status = 200;
  std::string contentType = "text/plain; charset=utf-8";
  std::string body = "ok";
  bool silent = false;  // accept and never answer (not even the TLS handshake)
};

// An HTTPS server on 127.0.0.1:<ephemeral> that answers every request with `reply` (which a test
// may change between checks), and records the SNI of every handshake.
class TlsServer {
 public:
  TlsServer(asio::io_context& io, const std::string& certFile, const std::string& keyFile,
            const std::string* clientCa = nullptr)
      : ctx_(ssl::context::tls_server), acceptor_(io, {asio::ip::make_address("127.0.0.1"), 0}) {
    ctx_.use_certificate_chain_file(certFile);
    ctx_.use_private_key_file(keyFile, ssl::context::pem);
    if (clientCa != nullptr) {
      ctx_.load_verify_file(*clientCa);
      ctx_.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
    }
    SSL_CTX_set_tlsext_servername_callback(ctx_.native_handle(), &TlsServer::onServerName);
    SSL_CTX_set_tlsext_servername_arg(ctx_.native_handle(), this);
    acceptNext();
  }

  uint16_t port() const { return acceptor_.local_endpoint().port(); }
  std::string url(const std::string& path = "/readyz",
                  const std::string& host = "127.0.0.1") const {
    return "https://" + host + ":" + std::to_string(port()) + path;
  }

  Reply reply;
  int requests = 0;
  std::vector<std::string> targets;
  std::vector<std::string> hosts;
  std::vector<std::string> serverNames;  // SNI per handshake; "" when the client sent none

 private:
  // Called for every ClientHello (OpenSSL calls it also when there is no SNI extension).
  static int onServerName(SSL* ssl, int*, void* arg) {
    const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    static_cast<TlsServer*>(arg)->serverNames.emplace_back(name != nullptr ? name : "");
    return SSL_TLSEXT_ERR_OK;
  }

  struct Session {
    explicit Session(tcp::socket s, ssl::context& ctx) : stream(std::move(s), ctx) {}
    ssl::stream<tcp::socket> stream;
    beast::flat_buffer buffer;
    http::request<http::string_body> request;
    http::response<http::string_body> response;
  };

  void acceptNext() {
    acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
      if (ec) {
        return;
      }
      if (reply.silent) {
        held_.push_back(std::make_unique<tcp::socket>(std::move(socket)));
      } else {
        serve(std::make_shared<Session>(std::move(socket), ctx_));
      }
      acceptNext();
    });
  }

  void serve(std::shared_ptr<Session> s) {
    s->stream.async_handshake(ssl::stream_base::server, [this, s](boost::system::error_code ec) {
      if (ec) {
        return;
      }
      http::async_read(
          s->stream, s->buffer, s->request, [this, s](boost::system::error_code ec, size_t) {
            if (ec) {
              return;
            }
            ++requests;
            targets.emplace_back(s->request.target());
            hosts.emplace_back(s->request[http::field::host]);
            s->response.result(reply.status);
            s->response.version(11);
            s->response.set(http::field::content_type, reply.contentType);
            s->response.body() = reply.body;
            s->response.prepare_payload();
            http::async_write(s->stream, s->response, [s](boost::system::error_code, size_t) {
              boost::system::error_code ignored;
              s->stream.lowest_layer().close(ignored);
            });
          });
    });
  }

  ssl::context ctx_;
  tcp::acceptor acceptor_;
  std::vector<std::unique_ptr<tcp::socket>> held_;
};

// A port with nothing listening on it.
uint16_t closedPort(asio::io_context& io) {
  tcp::acceptor check(io, {asio::ip::make_address("127.0.0.1"), 0});
  return check.local_endpoint().port();
}

// ---- fixture ----

struct Change {
  bool healthy;
  CallResult last;
};

class HealthCheckerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pki_ = new Pki;
    pki_->make();
  }
  static void TearDownTestSuite() {
    std::error_code ignored;
    std::filesystem::remove_all(pki_->dir, ignored);
    delete pki_;
    pki_ = nullptr;
  }

  config::Health apiserver(const std::string& url, uint32_t rise = 1, uint32_t fall = 1) {
    config::Health h;
    h.type = config::Health::Type::Apiserver;
    h.url = url;
    h.caFile = pki_->ca;
    h.interval = 50ms;
    h.timeout = 2000ms;  // generous: only the timeout tests wait for it
    h.rise = rise;
    h.fall = fall;
    return h;
  }

  HealthChecker& make(config::Health health) {
    checker_ = std::make_unique<HealthChecker>(io_, std::move(health), log_,
                                               [this](bool healthy, const CallResult& last) {
                                                 changes_.push_back({healthy, last});
                                               });
    return *checker_;
  }

  // Runs the io_context until `done` holds or `limit` passes; never sleeps beyond that.
  bool runUntil(const std::function<bool()>& done, std::chrono::milliseconds limit = 5000ms) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      if (io_.stopped()) {
        io_.restart();
      }
      io_.run_one_for(10ms);
    }
    return done();
  }

  uint64_t checks() const { return checker_->status()["checks"].get<uint64_t>(); }

  // Starts an apiserver check with rise 1, fall 1 and returns the first check's result.
  CallResult firstCheck(config::Health health) {
    auto& checker = make(std::move(health));
    EXPECT_TRUE(checker.start().has_value());
    EXPECT_TRUE(runUntil([&] { return checks() >= 1; }));
    return checker.last();
  }

  static Pki* pki_;
  asio::io_context io_;
  Logger log_{LogFormat::Text, LogLevel::Debug};
  std::vector<Change> changes_;
  std::unique_ptr<HealthChecker> checker_;
};

Pki* HealthCheckerTest::pki_ = nullptr;

// ---- apiserver ----

TEST_F(HealthCheckerTest, OkBecomesHealthyExactlyAfterRise) {
  TlsServer server(io_, pki_->serverCert, pki_->serverKey);
  auto& checker = make(apiserver(server.url(), /*rise=*/3, /*fall=*/2));
  ASSERT_TRUE(checker.start().has_value());
  EXPECT_FALSE(checker.healthy());
  ASSERT_TRUE(runUntil([&] { return checker.healthy(); }));

  ASSERT_EQ(changes_.size(), 1u);
  EXPECT_TRUE(changes_[0].healthy);
  EXPECT_TRUE(changes_[0].last.ok);
  EXPECT_EQ(changes_[0].last.detail, "HTTP 200 ok");
  EXPECT_EQ(server.targets.at(0), "/readyz");
  EXPECT_EQ(server.hosts.at(0), "127.0.0.1:" + std::to_string(server.port()));

  auto status = checker.status();
  EXPECT_EQ(status["type"], "apiserver");
  EXPECT_EQ(status["target"], server.url());
  EXPECT_EQ(status["serverName"], "kubernetes");
  EXPECT_EQ(status["healthy"], true);
  EXPECT_EQ(status["consecutiveSuccesses"], 3);  // not one check earlier
  EXPECT_EQ(status["consecutiveFailures"], 0);
  EXPECT_EQ(status["lastResult"], "success");
  EXPECT_EQ(status["lastDetail"], "HTTP 200 ok");
  EXPECT_GT(status["lastLatencyMs"].get<double>(), 0.0);
}

TEST_F(HealthCheckerTest, StatusBeforeTheFirstCheckIsPending) {
  TlsServer server(io_, pki_->serverCert, pki_->serverKey);
  auto& checker = make(apiserver(server.url()));
  ASSERT_TRUE(checker.start().has_value());
  auto status = checker.status();
  EXPECT_EQ(status["lastResult"], "pending");
  EXPECT_EQ(status["healthy"], false);
  EXPECT_EQ(status["checks"], 0);
}

TEST_F(HealthCheckerTest, ProxyErrorPageWithdrawsAfterFall) {
  TlsServer server(io_, pki_->serverCert, pki_->serverKey);
  auto& checker = make(apiserver(server.url(), /*rise=*/1, /*fall=*/2));
  ASSERT_TRUE(checker.start().has_value());
  ASSERT_TRUE(runUntil([&] { return checker.healthy(); }));

  server.reply = {502, "text/html", "<html><body><h1>502 Bad Gateway</h1></body></html>"};
  testing::internal::CaptureStderr();
  ASSERT_TRUE(runUntil([&] { return !checker.healthy(); }));
  std::string logged = testing::internal::GetCapturedStderr();

  ASSERT_EQ(changes_.size(), 2u);
  EXPECT_FALSE(changes_[1].healthy);
  EXPECT_FALSE(changes_[1].last.ok);
  EXPECT_EQ(changes_[1].last.detail, "HTTP 502 with a text/html body: not an apiserver");
  EXPECT_EQ(checker.status()["consecutiveFailures"], 2);
  EXPECT_EQ(checker.status()["failures"], 2);
  EXPECT_THAT(logged, HasSubstr("check failed with hard evidence (1 of 2 before withdrawing)"));
  EXPECT_THAT(logged, HasSubstr("health: apiserver " + server.url() +
                                " (server name kubernetes) unhealthy after 2 failures (last: HTTP "
                                "502 with a text/html body: not an apiserver); withdrawing VIPs"));
}

TEST_F(HealthCheckerTest, OkWithAnotherBodyFails) {
  TlsServer server(io_, pki_->serverCert, pki_->serverKey);
  server.reply.body = "hello";
  CallResult r = firstCheck(apiserver(server.url()));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.detail, "body 'hello' is not 'ok'");
  EXPECT_FALSE(checker_->healthy());
  EXPECT_TRUE(changes_.empty());
}

TEST_F(HealthCheckerTest, OkWithATrailingNewlineSucceeds) {
  TlsServer server(io_, pki_->serverCert, pki_->serverKey);
  server.reply.body = "ok\n";
  CallResult r = firstCheck(apiserver(server.url()));
  EXPECT_TRUE(r.ok) << r.detail;
  EXPECT_TRUE(checker_->healthy());
}

TEST_F(HealthCheckerTest, HtmlOkPageFails) {
  TlsServer server(io_, pki_->serverCert, pki_->serverKey);
  server.reply = {200, "text/html", "<!DOCTYPE html><html>ok</html>"};
  CallResult r = firstCheck(apiserver(server.url()));
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.detail, StartsWith("body '<!DOCTYPE html>"));
}

TEST_F(HealthCheckerTest, ReadyzFailureNamesTheFailedChecks) {
  TlsServer server(io_, pki_->serverCert, pki_->serverKey);
  server.reply = {500, "text/plain; charset=utf-8",
                  "[+]ping ok\n[-]etcd failed: reason withheld\n[+]informer-sync ok\n"
                  "readyz check failed\n"};
  CallResult r = firstCheck(apiserver(server.url()));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.detail, "HTTP 500: failed checks: etcd failed: reason withheld");
}

TEST_F(HealthCheckerTest, OversizedBodyFails) {
  TlsServer server(io_, pki_->serverCert, pki_->serverKey);
  server.reply.body = std::string(kMaxHealthBodyBytes + 1, 'x');
  CallResult r = firstCheck(apiserver(server.url()));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.detail, "response body larger than 64 KiB");
}

// ---- the certificate's name ----

TEST_F(HealthCheckerTest, KubeadmCertificateWithoutLoopbackPassesAsKubernetes) {
  // The stock kubeadm apiserver certificate names no 127.0.0.1: with the URL's IP address the
  // check verifies the name `kubernetes` instead, and sends it as SNI.
  TlsServer server(io_, pki_->serverCert, pki_->serverKey);
  auto& checker = make(apiserver(server.url()));
  testing::internal::CaptureStderr();
  ASSERT_TRUE(checker.start().has_value());
  ASSERT_TRUE(runUntil([&] { return checks() >= 1; }));
  std::string logged = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(checker.last().ok) << checker.last().detail;
  EXPECT_EQ(server.serverNames.at(0), "kubernetes");
  // The connection still goes to the URL's address, and says so in the Host header.
  EXPECT_EQ(server.hosts.at(0), "127.0.0.1:" + std::to_string(server.port()));
  EXPECT_THAT(logged, HasSubstr("probing apiserver " + server.url() + " (server name kubernetes)"));
}

// The URL's address in the certificate is not enough (ipOnly: IP 127.0.0.1 alone), nor is another
// name (otherName: etcd): it must name `kubernetes`, and the detail says so.
TEST_F(HealthCheckerTest, CertificateWithoutTheNameFailsNamingTheExpectedName) {
  for (auto [cert, key] : {std::pair{pki_->ipOnlyCert, pki_->ipOnlyKey},
                           std::pair{pki_->otherNameCert, pki_->otherNameKey}}) {
    TlsServer server(io_, cert, key);
    CallResult r = firstCheck(apiserver(server.url()));
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.detail,
              "TLS handshake failed: certificate verify failed: hostname mismatch (the "
              "certificate does not name 'kubernetes'; set health.serverName)");
    EXPECT_EQ(server.requests, 0);
  }
}

TEST_F(HealthCheckerTest, SubjectCommonNameIsNotAName) {
  // CN=kubernetes without a DNS subjectAltName: ignored, as Go's crypto/tls (kubectl) does.
  TlsServer server(io_, pki_->cnOnlyCert, pki_->cnOnlyKey);
  CallResult r = firstCheck(apiserver(server.url()));
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.detail, HasSubstr("hostname mismatch (the certificate does not name 'kubernetes'"));
}

TEST_F(HealthCheckerTest, ExplicitServerNameThatTheCertificateCarriesPasses) {
  TlsServer server(io_, pki_->serverCert, pki_->serverKey);
  auto health = apiserver(server.url());
  health.serverName = "kubernetes.default.svc.cluster.local";
  CallResult r = firstCheck(health);
  EXPECT_TRUE(r.ok) << r.detail;
  EXPECT_EQ(server.serverNames.at(0), "kubernetes.default.svc.cluster.local");
  EXPECT_EQ(checker_->status()["serverName"], "kubernetes.default.svc.cluster.local");

  // The name chooses which certificate passes: one without `kubernetes` but with this name.
  TlsServer other(io_, pki_->otherNameCert, pki_->otherNameKey);
  health = apiserver(other.url());
  health.serverName = "etcd";
  r = firstCheck(health);
  EXPECT_TRUE(r.ok) << r.detail;
  EXPECT_EQ(other.serverNames.at(0), "etcd");
}

TEST_F(HealthCheckerTest, ExplicitServerNameThatTheCertificateLacksFails) {
  TlsServer server(io_, pki_->serverCert, pki_->serverKey);
  auto health = apiserver(server.url());
  health.serverName = "apiserver.example.com";
  CallResult r = firstCheck(health);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.detail,
            "TLS handshake failed: certificate verify failed: hostname mismatch (the certificate "
            "does not name 'apiserver.example.com'; set health.serverName)");
  EXPECT_EQ(server.serverNames.at(0), "apiserver.example.com");
  EXPECT_EQ(server.requests, 0);
}

TEST_F(HealthCheckerTest, UrlWithADnsNameVerifiesThatName) {
  // "localhost" (from /etc/hosts) is the default server name; the kubeadm certificate lacks it.
  TlsServer server(io_, pki_->serverCert, pki_->serverKey);
  CallResult r = firstCheck(apiserver(server.url("/readyz", "localhost")));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.detail,
            "TLS handshake failed: certificate verify failed: hostname mismatch (the certificate "
            "does not name 'localhost'; set health.serverName)");
  EXPECT_EQ(server.serverNames.at(0), "localhost");
  EXPECT_EQ(checker_->status()["serverName"], "localhost");
}

TEST_F(HealthCheckerTest, CertificateFromAnotherCaFailsEvenWithTheRightName) {
  // The foreign certificate names `kubernetes` like ours: only the chain to caFile differs.
  TlsServer server(io_, pki_->foreignCert, pki_->foreignKey);
  CallResult r = firstCheck(apiserver(server.url()));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.detail,
            "TLS handshake failed: certificate verify failed: unable to get local issuer "
            "certificate");
  EXPECT_EQ(server.requests, 0);
}

TEST_F(HealthCheckerTest, ServerThatNeverAnswersTimesOut) {
  TlsServer server(io_, pki_->serverCert, pki_->serverKey);
  server.reply.silent = true;
  auto health = apiserver(server.url());
  health.timeout = 100ms;
  CallResult r = firstCheck(health);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.detail, "timed out after 100ms (in the TLS handshake)");
  EXPECT_GE(r.latency, 100ms);
  EXPECT_LT(r.latency, 1000ms);
}

TEST_F(HealthCheckerTest, TimeoutInWholeSecondsIsSpelledInSeconds) {
  TlsServer server(io_, pki_->serverCert, pki_->serverKey);
  server.reply.silent = true;
  auto health = apiserver(server.url());
  health.timeout = 1000ms;
  CallResult r = firstCheck(health);
  EXPECT_EQ(r.detail, "timed out after 1s (in the TLS handshake)");
}

TEST_F(HealthCheckerTest, NothingListeningFails) {
  uint16_t port = closedPort(io_);
  CallResult r = firstCheck(apiserver("https://127.0.0.1:" + std::to_string(port) + "/readyz"));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.detail,
            "connect to 127.0.0.1:" + std::to_string(port) + " failed: Connection refused");
}

TEST_F(HealthCheckerTest, ClientCertificateIsPresented) {
  TlsServer server(io_, pki_->serverCert, pki_->serverKey, &pki_->ca);
  auto health = apiserver(server.url());
  health.certFile = pki_->clientCert;
  health.keyFile = pki_->clientKey;
  CallResult r = firstCheck(health);
  EXPECT_TRUE(r.ok) << r.detail;
}

TEST_F(HealthCheckerTest, ServerThatRequiresAClientCertificateFailsWithoutOne) {
  TlsServer server(io_, pki_->serverCert, pki_->serverKey, &pki_->ca);
  CallResult r = firstCheck(apiserver(server.url()));
  EXPECT_FALSE(r.ok);
  // TLS 1.3 reports the server's alert after the handshake, when the response is read.
  EXPECT_THAT(r.detail, HasSubstr("certificate required"));
  EXPECT_EQ(server.requests, 0);
}

TEST_F(HealthCheckerTest, StopEndsProbingAndCallbacks) {
  TlsServer server(io_, pki_->serverCert, pki_->serverKey);
  auto& checker = make(apiserver(server.url()));
  ASSERT_TRUE(checker.start().has_value());
  ASSERT_TRUE(runUntil([&] { return checker.healthy(); }));
  checker.stop();
  int requests = server.requests;
  server.reply.status = 503;
  runUntil([] { return false; }, 200ms);
  EXPECT_EQ(server.requests, requests);
  EXPECT_EQ(changes_.size(), 1u);
  EXPECT_TRUE(checker.healthy());
}

TEST_F(HealthCheckerTest, DestroyingTheCheckerMidCheckIsSafe) {
  TlsServer server(io_, pki_->serverCert, pki_->serverKey);
  server.reply.silent = true;
  auto health = apiserver(server.url());
  health.timeout = 50ms;
  auto& checker = make(health);
  ASSERT_TRUE(checker.start().has_value());
  runUntil([] { return false; }, 20ms);  // connected, handshake pending
  checker_.reset();
  runUntil([] { return false; }, 100ms);  // the abandoned check's handlers drain
  EXPECT_TRUE(changes_.empty());
}

// ---- reconfigure() (issue 29) ----

TEST_F(HealthCheckerTest, ReconfigureKeepsAHealthyGateOpenAndProbesWithTheNewSettings) {
  TlsServer server(io_, pki_->serverCert, pki_->serverKey);
  auto& checker = make(apiserver(server.url(), /*rise=*/1, /*fall=*/1));
  ASSERT_TRUE(checker.start().has_value());
  ASSERT_TRUE(runUntil([&] { return checker.healthy(); }));
  const uint64_t before = checks();
  auto next = apiserver(server.url(), /*rise=*/3, /*fall=*/3);
  next.interval = 20ms;
  next.hardFall = 0;  // every failure counts toward fall alike
  ASSERT_TRUE(checker.reconfigure(next).has_value());
  EXPECT_TRUE(checker.healthy()) << "a reload never withdraws a healthy apiserver";
  ASSERT_TRUE(runUntil([&] { return checks() >= before + 5; }));
  EXPECT_TRUE(checker.healthy());
  EXPECT_EQ(changes_.size(), 1u) << "no flap";
  // The new fall: three failures, not one.
  server.reply.status = 503;
  const uint64_t failing = checks();
  ASSERT_TRUE(runUntil([&] { return checks() >= failing + 2; }));
  EXPECT_TRUE(checker.healthy());
  ASSERT_TRUE(runUntil([&] { return !checker.healthy(); }));
  EXPECT_EQ(checker.status()["consecutiveFailures"], 3);
}

TEST_F(HealthCheckerTest, ReconfigureWithABadCaChangesNothing) {
  TlsServer server(io_, pki_->serverCert, pki_->serverKey);
  auto& checker = make(apiserver(server.url()));
  ASSERT_TRUE(checker.start().has_value());
  ASSERT_TRUE(runUntil([&] { return checker.healthy(); }));
  auto next = apiserver(server.url());
  next.caFile = pki_->dir + "/no-such-ca.crt";
  auto reconfigured = checker.reconfigure(next);
  ASSERT_FALSE(reconfigured.has_value());
  EXPECT_THAT(reconfigured.error(), HasSubstr("health.caFile " + next.caFile));
  const uint64_t before = checks();
  ASSERT_TRUE(runUntil([&] { return checks() >= before + 2; })) << "still probing as before";
  EXPECT_TRUE(checker.healthy());
}

TEST_F(HealthCheckerTest, ReconfigureFromNoneToAnApiserverStaysHealthy) {
  TlsServer server(io_, pki_->serverCert, pki_->serverKey);
  config::Health none;
  auto& checker = make(none);
  ASSERT_TRUE(checker.start().has_value());
  ASSERT_TRUE(checker.healthy());
  ASSERT_TRUE(checker.reconfigure(apiserver(server.url(), 2, 2)).has_value());
  EXPECT_TRUE(checker.healthy());
  ASSERT_TRUE(runUntil([&] { return checks() >= 3; }));
  EXPECT_TRUE(checker.healthy());
  EXPECT_EQ(checker.status()["type"], "apiserver");
  // And back to none: healthy at once, no check.
  ASSERT_TRUE(checker.reconfigure(none).has_value());
  EXPECT_TRUE(checker.healthy());
  EXPECT_EQ(checker.status()["type"], "none");
}

// ---- start() errors ----

TEST_F(HealthCheckerTest, MissingCaFileIsAnErrorNamingIt) {
  auto health = apiserver("https://127.0.0.1:6443/readyz");
  health.caFile = pki_->dir + "/no-such-ca.crt";
  auto started = make(health).start();
  ASSERT_FALSE(started.has_value());
  EXPECT_THAT(started.error(), HasSubstr("health.caFile " + health.caFile));
  EXPECT_THAT(started.error(), HasSubstr("No such file or directory"));
}

TEST_F(HealthCheckerTest, CaFileWithoutACertificateIsAnError) {
  auto health = apiserver("https://127.0.0.1:6443/readyz");
  health.caFile = pki_->serverKey;
  auto started = make(health).start();
  ASSERT_FALSE(started.has_value());
  EXPECT_THAT(started.error(), HasSubstr("health.caFile " + pki_->serverKey));
}

TEST_F(HealthCheckerTest, MissingKeyFileIsAnErrorNamingIt) {
  auto health = apiserver("https://127.0.0.1:6443/readyz");
  health.certFile = pki_->clientCert;
  health.keyFile = pki_->dir + "/no-such.key";
  auto started = make(health).start();
  ASSERT_FALSE(started.has_value());
  EXPECT_THAT(started.error(), HasSubstr("health.keyFile " + *health.keyFile));
}

TEST_F(HealthCheckerTest, KeyThatDoesNotMatchTheCertificateIsAnError) {
  auto health = apiserver("https://127.0.0.1:6443/readyz");
  health.certFile = pki_->clientCert;
  health.keyFile = pki_->serverKey;
  auto started = make(health).start();
  ASSERT_FALSE(started.has_value());
  EXPECT_THAT(started.error(), HasSubstr("is not the key of health.certFile"));
}

TEST_F(HealthCheckerTest, CertFileWithoutKeyFileIsAnError) {
  auto health = apiserver("https://127.0.0.1:6443/readyz");
  health.certFile = pki_->clientCert;
  auto started = make(health).start();
  ASSERT_FALSE(started.has_value());
  EXPECT_THAT(started.error(), HasSubstr("health.certFile and health.keyFile"));
}

TEST_F(HealthCheckerTest, ServerNameThatIsNotADnsNameIsAnError) {
  // The config parser rejects these; a Health built in code must not switch the name check off.
  for (const char* name : {"", "127.0.0.1", "::1"}) {
    auto health = apiserver("https://127.0.0.1:6443/readyz");
    health.serverName = name;
    auto started = make(health).start();
    ASSERT_FALSE(started.has_value()) << name;
    EXPECT_THAT(started.error(), StartsWith(std::string("health.serverName '") + name + "'"));
  }
}

TEST_F(HealthCheckerTest, BadUrlsAreErrors) {
  for (const char* url :
       {"http://127.0.0.1:6443/readyz", "https://:6443/readyz", "https://127.0.0.1:99999/readyz",
        "https://::1:6443/readyz", "https://[::1:6443/readyz", "https://user@127.0.0.1/readyz"}) {
    auto started = make(apiserver(url)).start();
    ASSERT_FALSE(started.has_value()) << url;
    EXPECT_THAT(started.error(), StartsWith(std::string("health.url '") + url + "'"));
  }
}

TEST_F(HealthCheckerTest, UrlWithoutAPathRequestsTheRoot) {
  TlsServer server(io_, pki_->serverCert, pki_->serverKey);
  CallResult r = firstCheck(apiserver(server.url("")));
  EXPECT_TRUE(r.ok) << r.detail;
  EXPECT_EQ(server.targets.at(0), "/");
}

TEST_F(HealthCheckerTest, StartTwiceIsAnError) {
  auto& checker = make(apiserver("https://127.0.0.1:6443/readyz"));
  ASSERT_TRUE(checker.start().has_value());
  EXPECT_FALSE(checker.start().has_value());
}

// ---- tcp ----

TEST_F(HealthCheckerTest, TcpConnectSucceeds) {
  tcp::acceptor listener(io_, {asio::ip::make_address("127.0.0.1"), 0});
  config::Health health;
  health.type = config::Health::Type::Tcp;
  health.address = "127.0.0.1:" + std::to_string(listener.local_endpoint().port());
  health.interval = 50ms;
  health.timeout = 200ms;
  health.rise = 2;
  auto& checker = make(health);
  ASSERT_TRUE(checker.start().has_value());
  ASSERT_TRUE(runUntil([&] { return checker.healthy(); }));
  EXPECT_EQ(checker.last().detail, "connected to " + health.address);
  EXPECT_EQ(checker.status()["type"], "tcp");
  EXPECT_EQ(checker.status()["consecutiveSuccesses"], 2);
  ASSERT_EQ(changes_.size(), 1u);
}

TEST_F(HealthCheckerTest, TcpConnectRefusedFails) {
  config::Health health;
  health.type = config::Health::Type::Tcp;
  health.address = "127.0.0.1:" + std::to_string(closedPort(io_));
  health.interval = 50ms;
  health.timeout = 200ms;
  auto& checker = make(health);
  ASSERT_TRUE(checker.start().has_value());
  ASSERT_TRUE(runUntil([&] { return checks() >= 2; }));
  EXPECT_FALSE(checker.healthy());
  EXPECT_EQ(checker.last().detail, "connect to " + health.address + " failed: Connection refused");
  EXPECT_EQ(checker.status()["failures"], 2);
}

// A listener whose accept queue is full: Linux drops the SYNs that reach it (and the client
// would resend one only after 1 s), as a lossy path to the apiserver would.
struct FullListener {
  explicit FullListener(asio::io_context& io) : acceptor(io), queued(io) {
    acceptor.open(tcp::v4());
    acceptor.bind({asio::ip::make_address("127.0.0.1"), 0});
    acceptor.listen(0);  // room for one connection, which `queued` takes
    queued.connect(acceptor.local_endpoint());
  }
  std::string address() const {
    return "127.0.0.1:" + std::to_string(acceptor.local_endpoint().port());
  }
  tcp::acceptor acceptor;
  tcp::socket queued;
};

config::Health tcpCheck(const std::string& address, std::chrono::milliseconds timeout) {
  config::Health health;
  health.type = config::Health::Type::Tcp;
  health.address = address;
  health.interval = 5000ms;  // one check per test
  health.timeout = timeout;
  return health;
}

TEST_F(HealthCheckerTest, UnansweredConnectIsRacedByNewOnesUntilTheTimeout) {
  FullListener listener(io_);
  auto& checker = make(tcpCheck(listener.address(), 700ms));
  ASSERT_TRUE(checker.start().has_value());
  ASSERT_TRUE(runUntil([&] { return checks() >= 1; }));
  const CallResult& r = checker.last();
  EXPECT_FALSE(r.ok);
  // Started at 0, 200 and 400 ms; a fourth would not be answered before the timeout either.
  EXPECT_EQ(r.detail, "timed out after 700ms (connecting to " + listener.address() +
                          ", 3 attempts)");
  EXPECT_EQ(r.connectAttempts, 3u);
  EXPECT_EQ(r.failure, CallFailure::Timeout);
  EXPECT_EQ(checker.status()["connectResends"], 2);
}

TEST_F(HealthCheckerTest, RacedConnectCarriesTheCheckWhenTheFirstSynIsLost) {
  FullListener listener(io_);
  auto& checker = make(tcpCheck(listener.address(), 1000ms));
  ASSERT_TRUE(checker.start().has_value());
  // Two attempts are out, their SYNs dropped; then the queue makes room for the third (400 ms),
  // long before the kernel would resend the first SYN (1 s).
  auto started = std::chrono::steady_clock::now();
  runUntil([&] { return std::chrono::steady_clock::now() - started >= 300ms; }, 300ms);
  ASSERT_EQ(checks(), 0u);
  listener.acceptor.accept().close();
  ASSERT_TRUE(runUntil([&] { return checks() >= 1; }));
  const CallResult& r = checker.last();
  EXPECT_TRUE(r.ok) << r.detail;
  EXPECT_EQ(r.connectAttempts, 3u);
  EXPECT_GE(r.latency, 400ms);
  EXPECT_LT(r.latency, 1000ms);
  EXPECT_EQ(checker.status()["connectResends"], 2);
}

TEST_F(HealthCheckerTest, AnsweredConnectIsNotRaced) {
  tcp::acceptor listener(io_, {asio::ip::make_address("127.0.0.1"), 0});
  auto& checker =
      make(tcpCheck("127.0.0.1:" + std::to_string(listener.local_endpoint().port()), 1000ms));
  ASSERT_TRUE(checker.start().has_value());
  ASSERT_TRUE(runUntil([&] { return checks() >= 1; }));
  EXPECT_TRUE(checker.last().ok);
  EXPECT_EQ(checker.last().connectAttempts, 1u);
  EXPECT_EQ(checker.status()["connectResends"], 0);
}

TEST_F(HealthCheckerTest, TcpAddressWithoutPortIsAnError) {
  config::Health health;
  health.type = config::Health::Type::Tcp;
  health.address = "127.0.0.1";
  auto started = make(health).start();
  ASSERT_FALSE(started.has_value());
  EXPECT_EQ(started.error(), "health.address '127.0.0.1': expected host:port");
}

// ---- none ----

TEST_F(HealthCheckerTest, NoneIsHealthyAtOnceAndNeverChecks) {
  config::Health health;
  health.type = config::Health::Type::None;
  auto& checker = make(health);
  EXPECT_FALSE(checker.healthy());
  ASSERT_TRUE(checker.start().has_value());
  EXPECT_TRUE(checker.healthy());
  ASSERT_EQ(changes_.size(), 1u);  // before start() returned
  EXPECT_TRUE(changes_[0].healthy);
  runUntil([] { return false; }, 50ms);
  EXPECT_EQ(changes_.size(), 1u);
  auto status = checker.status();
  EXPECT_EQ(status["type"], "none");
  EXPECT_EQ(status["healthy"], true);
  EXPECT_EQ(status["checks"], 0);
  EXPECT_EQ(status["lastResult"], "success");
}

}  // namespace
}  // namespace vipd::daemon
