#include "daemon/health/health_checker.h"
#include "daemon/base/version.h"

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>
#include <utility>

namespace vipd::daemon {

namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

namespace {

// Certificate, key and CA files are small; this only stops a wrong path (a disk image, a device)
// from being read into memory.
constexpr size_t kMaxPemFileBytes = 4 * 1024 * 1024;

using Target = HealthTarget;

tl::unexpected<std::string> fail(std::string message) { return tl::unexpected(std::move(message)); }

// "host:port", "[v6]:port" or, when `defaultPort` is set, also "host" and "[v6]".
tl::expected<Target, std::string> parseAuthority(std::string_view authority,
                                                 std::string_view defaultPort) {
  Target target;
  target.authority = std::string(authority);
  std::string_view host;
  std::string_view port;
  if (authority.starts_with('[')) {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return fail("an IPv6 address must be closed with ']'");
    }
    host = authority.substr(1, close - 1);
    std::string_view rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') {
        return fail("expected ':port' after ']'");
      }
      port = rest.substr(1);
    }
  } else {
    size_t colon = authority.find(':');
    if (colon != std::string_view::npos &&
        authority.find(':', colon + 1) != std::string_view::npos) {
      return fail("write an IPv6 address in brackets, as [2001:db8::1]:6443");
    }
    host = authority.substr(0, colon);
    if (colon != std::string_view::npos) {
      port = authority.substr(colon + 1);
    }
  }
  if (host.empty()) {
    return fail("the host is empty");
  }
  if (port.empty()) {
    if (defaultPort.empty()) {
      return fail("expected host:port");
    }
    port = defaultPort;
  }
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
    return tl::unexpected(fmt::format("port '{}' is not a number from 1 to 65535", port));
  }
  target.host = std::string(host);
  target.port = std::string(port);
  return target;
}

tl::expected<Target, std::string> parseHttpsUrl(std::string_view url) {
  constexpr std::string_view kScheme = "https://";
  if (!url.starts_with(kScheme)) {
    return fail("only https:// URLs are supported");
  }
  std::string_view rest = url.substr(kScheme.size());
  rest = rest.substr(0, rest.find('#'));
  size_t slash = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, slash);
  if (authority.find('@') != std::string_view::npos) {
    return fail("user information in the URL is not supported");
  }
  auto target = parseAuthority(authority, "443");
  if (!target) {
    return target;
  }
  target->path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (target->path.starts_with('?')) {
    target->path.insert(0, "/");
  }
  return target;
}

bool isIpAddress(const std::string& host) {
  boost::system::error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

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

std::string formatDuration(milliseconds d) {
  if (d.count() % 1000 == 0) {
    return fmt::format("{}s", d.count() / 1000);
  }
  return fmt::format("{}ms", d.count());
}

std::string plural(uint64_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

// Untrusted bytes, shortened and made printable for one log line.
std::string excerpt(std::string_view text, size_t limit) {
  std::string out;
  for (char c : text.substr(0, limit)) {
    if (c == '\n' || c == '\r' || c == '\t') {
      out += ' ';
    } else if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      out += '?';
    } else {
      out += c;
    }
  }
  if (text.size() > limit) {
    out += "...";
  }
  return out;
}

// The apiserver's /readyz and /livez list each check as "[+]name ok" or "[-]name failed: ...";
// the failed ones are what an operator needs to see.
std::string describeErrorBody(std::string_view body) {
  std::string failed;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find('\n', pos);
    std::string_view line = body.substr(pos, end == std::string_view::npos ? body.npos : end - pos);
    if (line.starts_with("[-]")) {
      failed += failed.empty() ? "" : ", ";
      failed += excerpt(line.substr(3), 80);
    }
    if (end == std::string_view::npos) {
      break;
    }
    pos = end + 1;
  }
  if (!failed.empty()) {
    return "failed checks: " + failed;
  }
  if (body.empty()) {
    return "empty body";
  }
  return fmt::format("'{}'", excerpt(body, 120));
}

bool looksLikeHtml(std::string_view contentType, std::string_view body) {
  auto lower = [](std::string_view s) {
    std::string out(s);
    for (char& c : out) {
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return out;
  };
  if (lower(contentType).find("html") != std::string::npos) {
    return true;
  }
  std::string start = lower(body.substr(0, 64));
  size_t first = start.find_first_not_of(" \t\r\n");
  return first != std::string::npos &&
         (start.compare(first, 5, "<html") == 0 || start.compare(first, 9, "<!doctype") == 0);
}

// One message for a failed TLS handshake: OpenSSL's reason, and for a rejected certificate the
// verifier's reason ("unable to get local issuer certificate", "hostname mismatch"). A name
// mismatch also says which name was expected and which setting changes it, since on a stock
// apiserver certificate the cure is health.serverName, not the URL.
std::string describeTlsError(const boost::system::error_code& ec, SSL* ssl,
                             std::string_view serverName) {
  if (ec == ssl::error::stream_truncated) {
    return "the server closed the connection";
  }
  if (ec.category() != asio::error::get_ssl_category()) {
    return ec.message();
  }
  unsigned long code = static_cast<unsigned long>(static_cast<unsigned int>(ec.value()));
  const char* reason = ERR_reason_error_string(code);
  std::string text = reason != nullptr ? reason : ec.message();
  if (ERR_GET_REASON(code) == SSL_R_CERTIFICATE_VERIFY_FAILED) {
    long verify = SSL_get_verify_result(ssl);
    if (verify != X509_V_OK) {
      text += fmt::format(": {}", X509_verify_cert_error_string(verify));
    }
    if (verify == X509_V_ERR_HOSTNAME_MISMATCH) {
      text +=
          fmt::format(" (the certificate does not name '{}'; set health.serverName)", serverName);
    }
  }
  return text;
}

std::string_view typeName(config::Health::Type type) {
  switch (type) {
    case config::Health::Type::Apiserver:
      return "apiserver";
    case config::Health::Type::Tcp:
      return "tcp";
    case config::Health::Type::None:
      return "none";
  }
  return "none";
}

}  // namespace

// One probe: resolve, connect and, for the apiserver, TLS + one HTTP exchange. Owned by the
// handlers in flight (shared_ptr) so the checker may abandon it at any point; `done` runs at most
// once, on the io_context thread, and never after abandon().
class HealthProbe : public std::enable_shared_from_this<HealthProbe> {
 public:
  using Done = std::function<void(const ProbeResult&)>;

  // `tls` is null for a TCP probe.
  HealthProbe(asio::io_context& io, Target target, std::shared_ptr<ssl::context> tls,
              milliseconds timeout, Done done)
      : target_(std::move(target)),
        tls_(std::move(tls)),
        timeout_(timeout),
        done_(std::move(done)),
        resolver_(io),
        socket_(io),
        deadline_(io) {}

  void start() {
    started_ = steady_clock::now();
    deadline_.expires_after(timeout_);
    deadline_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec || self->finished_) {
        return;
      }
      self->finish(false, fmt::format("timed out after {} ({})", formatDuration(self->timeout_),
                                      self->stage_));
    });

    stage_ = fmt::format("connecting to {}", target_.authority);
    boost::system::error_code ec;
    auto address = asio::ip::make_address(target_.host, ec);
    if (!ec) {
      tcp::endpoint endpoint(address, static_cast<uint16_t>(std::stoi(target_.port)));
      socket_.async_connect(endpoint,
                            [self = shared_from_this()](const boost::system::error_code& ec) {
                              self->onConnect(ec);
                            });
      return;
    }
    stage_ = fmt::format("resolving {}", target_.host);
    resolver_.async_resolve(
        target_.host, target_.port,
        [self = shared_from_this()](const boost::system::error_code& ec,
                                    const tcp::resolver::results_type& results) {
          if (self->finished_) {
            return;
          }
          if (ec) {
            self->finish(false,
                         fmt::format("cannot resolve {}: {}", self->target_.host, ec.message()));
            return;
          }
          self->stage_ = fmt::format("connecting to {}", self->target_.authority);
          asio::async_connect(self->socket_, results,
                              [self](const boost::system::error_code& ec, const tcp::endpoint&) {
                                self->onConnect(ec);
                              });
        });
  }

  void abandon() {
    done_ = nullptr;
    finished_ = true;
    deadline_.cancel();
    closeTransport();
  }

 private:
  void onConnect(const boost::system::error_code& ec) {
    if (finished_) {
      return;
    }
    if (ec) {
      finish(false, fmt::format("connect to {} failed: {}", target_.authority, ec.message()));
      return;
    }
    if (!tls_) {
      finish(true, fmt::format("connected to {}", target_.authority));
      return;
    }
    handshake();
  }

  void handshake() {
    stream_.emplace(std::move(socket_), *tls_);
    SSL* handle = stream_->native_handle();
    // The server name is never an IP address (start() made sure), so it may go in SNI (RFC 6066
    // section 3), whatever the URL's host is.
    if (SSL_set_tlsext_host_name(handle, target_.serverName.c_str()) != 1) {
      finish(false, fmt::format("cannot set TLS server name {}", target_.serverName));
      return;
    }
    // OpenSSL checks the name once the chain has verified to caFile and, on a mismatch, fails
    // the handshake with X509_V_ERR_HOSTNAME_MISMATCH, which describeTlsError() names. Like
    // Go's crypto/tls (kubectl, kubelet), only subjectAltName DNS entries count, never the
    // subject's CN; a wildcard must be a whole label.
    SSL_set_hostflags(handle,
                      X509_CHECK_FLAG_NEVER_CHECK_SUBJECT | X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    if (SSL_set1_host(handle, target_.serverName.c_str()) != 1) {
      finish(false, fmt::format("cannot set the expected certificate name {}", target_.serverName));
      return;
    }
    boost::system::error_code ec;
    stream_->set_verify_mode(ssl::verify_peer, ec);
    if (ec) {
      finish(false, fmt::format("cannot set up TLS verification: {}", ec.message()));
      return;
    }
    stage_ = "in the TLS handshake";
    stream_->async_handshake(ssl::stream_base::client,
                             [self = shared_from_this()](const boost::system::error_code& ec) {
                               self->onHandshake(ec);
                             });
  }

  std::string tlsError(const boost::system::error_code& ec) {
    return describeTlsError(ec, stream_->native_handle(), target_.serverName);
  }

  void onHandshake(const boost::system::error_code& ec) {
    if (finished_) {
      return;
    }
    if (ec) {
      finish(false, fmt::format("TLS handshake failed: {}", tlsError(ec)));
      return;
    }
    request_.version(11);
    request_.method(http::verb::get);
    request_.target(target_.path);
    request_.set(http::field::host, target_.authority);
    request_.set(http::field::user_agent, fmt::format("vipd/{}", version()));
    request_.set(http::field::accept, "text/plain");
    request_.set(http::field::connection, "close");
    stage_ = "sending the request";
    http::async_write(*stream_, request_,
                      [self = shared_from_this()](const boost::system::error_code& ec, size_t) {
                        self->onWrite(ec);
                      });
  }

  void onWrite(const boost::system::error_code& ec) {
    if (finished_) {
      return;
    }
    if (ec) {
      finish(false, fmt::format("sending the request failed: {}", tlsError(ec)));
      return;
    }
    parser_.emplace();
    parser_->header_limit(kMaxHealthHeaderBytes);
    parser_->body_limit(kMaxHealthBodyBytes);
    stage_ = "waiting for the response";
    http::async_read(*stream_, buffer_, *parser_,
                     [self = shared_from_this()](const boost::system::error_code& ec, size_t) {
                       self->onRead(ec);
                     });
  }

  void onRead(const boost::system::error_code& ec) {
    if (finished_) {
      return;
    }
    if (ec == http::error::body_limit) {
      finish(false, fmt::format("response body larger than {} KiB", kMaxHealthBodyBytes / 1024));
      return;
    }
    if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
      finish(false,
             fmt::format("response header larger than {} KiB", kMaxHealthHeaderBytes / 1024));
      return;
    }
    if (ec == http::error::end_of_stream || ec == ssl::error::stream_truncated) {
      finish(false, "the server closed the connection before a complete response");
      return;
    }
    if (ec) {
      finish(false, fmt::format("reading the response failed: {}", tlsError(ec)));
      return;
    }
    evaluate(parser_->get());
  }

  void evaluate(const http::response<http::string_body>& response) {
    unsigned status = response.result_int();
    std::string_view body = response.body();
    std::string_view contentType = response[http::field::content_type];
    if (status != 200) {
      if (looksLikeHtml(contentType, body)) {
        std::string_view media = contentType.substr(0, contentType.find(';'));
        finish(false, fmt::format("HTTP {} with a {} body: not an apiserver", status,
                                  media.empty() ? "HTML" : excerpt(media, 40)));
      } else {
        finish(false, fmt::format("HTTP {}: {}", status, describeErrorBody(body)));
      }
      return;
    }
    std::string_view trimmed = body;
    if (trimmed.ends_with('\n')) {
      trimmed.remove_suffix(1);
      if (trimmed.ends_with('\r')) {
        trimmed.remove_suffix(1);
      }
    }
    if (trimmed != "ok") {
      finish(false, fmt::format("body '{}' is not 'ok'", excerpt(trimmed, 64)));
      return;
    }
    finish(true, "HTTP 200 ok");
  }

  void closeTransport() {
    boost::system::error_code ignored;
    resolver_.cancel();
    if (stream_) {
      stream_->lowest_layer().close(ignored);
    } else {
      socket_.close(ignored);
    }
  }

  // The first outcome wins; a timeout closes the socket so the pending operation ends at once.
  void finish(bool ok, std::string detail) {
    if (finished_) {
      return;
    }
    finished_ = true;
    deadline_.cancel();
    closeTransport();
    ProbeResult result{
        ok, std::move(detail),
        std::chrono::duration_cast<std::chrono::microseconds>(steady_clock::now() - started_)};
    if (auto done = std::exchange(done_, nullptr)) {
      done(result);
    }
  }

  Target target_;
  std::shared_ptr<ssl::context> tls_;
  milliseconds timeout_;
  Done done_;
  tcp::resolver resolver_;
  tcp::socket socket_;  // until the TLS stream takes it over
  std::optional<ssl::stream<tcp::socket>> stream_;
  asio::steady_timer deadline_;
  beast::flat_buffer buffer_;
  http::request<http::empty_body> request_;
  std::optional<http::response_parser<http::string_body>> parser_;
  std::string stage_;  // what a timeout interrupted
  steady_clock::time_point started_{};
  bool finished_ = false;
};

HealthChecker::HealthChecker(asio::io_context& io, config::Health health, const Logger& log,
                             OnChange onChange)
    : io_(io),
      health_(std::move(health)),
      log_(log),
      onChange_(std::move(onChange)),
      gate_(health_.rise, health_.fall),
      intervalTimer_(io) {}

HealthChecker::~HealthChecker() { stop(); }

tl::expected<void, std::string> HealthChecker::start() {
  if (started_) {
    return fail("the health checker is already started");
  }
  if (health_.type == config::Health::Type::None) {
    started_ = true;
    last_ = ProbeResult{true, "health check disabled (type none)", {}};
    log_.info("health", "check disabled (type none); VIPs are announced without a health gate");
    onChange_(true, last_);
    return {};
  }

  if (health_.type == config::Health::Type::Tcp) {
    auto target = parseAuthority(health_.address, "");
    if (!target) {
      return tl::unexpected(
          fmt::format("health.address '{}': {}", health_.address, target.error()));
    }
    target_ = std::move(*target);
  } else {
    auto target = parseHttpsUrl(health_.url);
    if (!target) {
      return tl::unexpected(fmt::format("health.url '{}': {}", health_.url, target.error()));
    }
    target_ = std::move(*target);
    if (health_.serverName) {
      // The config parser allows only DNS names; a Health built in code gets the same answer.
      // An empty name matters most: OpenSSL takes it as "check no name at all".
      if (isIpAddress(*health_.serverName) || health_.serverName->empty()) {
        return tl::unexpected(
            fmt::format("health.serverName '{}': expected the DNS name the apiserver's "
                        "certificate carries, such as {}",
                        *health_.serverName, config::kDefaultApiserverServerName));
      }
      target_.serverName = *health_.serverName;
    } else if (isIpAddress(target_.host)) {
      target_.serverName = config::kDefaultApiserverServerName;
    } else {
      target_.serverName = target_.host;
    }
    if (health_.caFile.empty()) {
      return fail("health.caFile is required for type apiserver");
    }
    if (health_.certFile.has_value() != health_.keyFile.has_value()) {
      return fail("health.certFile and health.keyFile go together: set both or neither");
    }
    auto ca = readPemFile("caFile", health_.caFile);
    if (!ca) {
      return tl::unexpected(ca.error());
    }
    std::optional<std::string> cert;
    std::optional<std::string> key;
    if (health_.certFile) {
      auto c = readPemFile("certFile", *health_.certFile);
      if (!c) {
        return tl::unexpected(c.error());
      }
      auto k = readPemFile("keyFile", *health_.keyFile);
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
                                        health_.caFile, ec.message()));
    }
    tls->set_verify_mode(ssl::verify_peer, ec);
    if (cert) {
      tls->use_certificate_chain(asio::buffer(*cert), ec);
      if (ec) {
        return tl::unexpected(fmt::format("health.certFile {}: not a PEM certificate ({})",
                                          *health_.certFile, ec.message()));
      }
      tls->use_private_key(asio::buffer(*key), ssl::context::pem, ec);
      if (ec && ec.category() == asio::error::get_ssl_category() &&
          ERR_GET_REASON(static_cast<unsigned int>(ec.value())) == X509_R_KEY_VALUES_MISMATCH) {
        return tl::unexpected(fmt::format("health.keyFile {} is not the key of health.certFile {}",
                                          *health_.keyFile, *health_.certFile));
      }
      if (ec) {
        return tl::unexpected(fmt::format("health.keyFile {}: not a PEM private key ({})",
                                          *health_.keyFile, ec.message()));
      }
      if (SSL_CTX_check_private_key(tls->native_handle()) != 1) {
        return tl::unexpected(fmt::format("health.keyFile {} is not the key of health.certFile {}",
                                          *health_.keyFile, *health_.certFile));
      }
    }
    tls_ = std::move(tls);
  }

  started_ = true;
  log_.info("health",
            "probing {} every {} (timeout {}, rise {}, fall {}); VIPs stay withdrawn "
            "until it is healthy",
            describe(), formatDuration(health_.interval), formatDuration(health_.timeout),
            gate_.rise(), gate_.fall());
  probeNow();
  return {};
}

void HealthChecker::stop() {
  stopped_ = true;
  intervalTimer_.cancel();
  if (probe_) {
    probe_->abandon();
    probe_.reset();
  }
}

bool HealthChecker::healthy() const {
  if (health_.type == config::Health::Type::None) {
    return started_;
  }
  return gate_.healthy();
}

const ProbeResult& HealthChecker::last() const { return last_; }

nlohmann::json HealthChecker::status() const {
  std::string_view result = "pending";
  if (health_.type == config::Health::Type::None) {
    result = started_ ? "success" : "pending";
  } else if (haveResult_) {
    result = last_.ok ? "success" : "failure";
  }
  std::string target;
  if (health_.type == config::Health::Type::Apiserver) {
    target = health_.url;
  } else if (health_.type == config::Health::Type::Tcp) {
    target = health_.address;
  }
  nlohmann::json status{
      {"type", typeName(health_.type)},
      {"target", target},
      {"healthy", healthy()},
      {"consecutiveSuccesses", gate_.consecutiveSuccesses()},
      {"consecutiveFailures", gate_.consecutiveFailures()},
      {"lastResult", result},
      {"lastDetail", last_.detail},
      {"lastLatencyMs", static_cast<double>(last_.latency.count()) / 1000.0},
      {"checks", gate_.checks()},
      {"failures", gate_.failures()},
  };
  if (health_.type == config::Health::Type::Apiserver) {
    status["serverName"] = target_.serverName;
  }
  return status;
}

void HealthChecker::probeNow() {
  if (stopped_) {
    return;
  }
  probeStarted_ = steady_clock::now();
  probe_ = std::make_shared<HealthProbe>(
      io_, target_, tls_, health_.timeout,
      [this, alive = std::weak_ptr<int>(alive_)](const ProbeResult& result) {
        if (!alive.expired()) {
          onProbeDone(result);
        }
      });
  probe_->start();
}

void HealthChecker::scheduleNext() {
  // Probes start every `interval`; one that took longer is followed at once, never overlapped.
  intervalTimer_.expires_at(probeStarted_ + health_.interval);
  intervalTimer_.async_wait(
      [this, alive = std::weak_ptr<int>(alive_)](const boost::system::error_code& ec) {
        if (ec || alive.expired() || stopped_) {
          return;
        }
        probeNow();
      });
}

void HealthChecker::onProbeDone(const ProbeResult& result) {
  probe_.reset();
  if (stopped_) {
    return;
  }
  last_ = result;
  haveResult_ = true;
  bool flipped = gate_.record(result.ok);
  if (flipped && gate_.healthy()) {
    log_.info("health", "{} healthy after {} ({}); announcing VIPs", describe(),
              plural(gate_.consecutiveSuccesses(), "success", "successes"), result.detail);
  } else if (flipped) {
    log_.warn("health", "{} unhealthy after {} (last: {}); withdrawing VIPs", describe(),
              plural(gate_.consecutiveFailures(), "failure", "failures"), result.detail);
  } else if (!result.ok && gate_.healthy()) {
    log_.warn("health", "{} check failed ({} of {} before withdrawing): {}", describe(),
              gate_.consecutiveFailures(), gate_.fall(), result.detail);
  } else if (!result.ok) {
    // Unhealthy and still failing: say it once per distinct reason, not once per interval.
    if (result.detail != lastFailureLogged_) {
      log_.warn("health", "{} check failed: {}; VIPs stay withdrawn", describe(), result.detail);
    } else {
      log_.debug("health", "{} check failed: {}", describe(), result.detail);
    }
  } else if (!gate_.healthy()) {
    log_.info("health", "{} check passed ({} of {} before announcing)", describe(),
              gate_.consecutiveSuccesses(), gate_.rise());
  }
  lastFailureLogged_ = result.ok ? std::string() : result.detail;

  scheduleNext();
  if (flipped) {
    // Last: the owner may stop (or even destroy) the checker from here.
    onChange_(gate_.healthy(), last_);
  }
}

std::string HealthChecker::describe() const {
  switch (health_.type) {
    case config::Health::Type::Apiserver:
      // The name the certificate must carry, when the URL does not already say it: with
      // an IP address in the URL, a mismatch is otherwise hard to place.
      if (target_.serverName != target_.host) {
        return fmt::format("apiserver {} (server name {})", health_.url, target_.serverName);
      }
      return fmt::format("apiserver {}", health_.url);
    case config::Health::Type::Tcp:
      return fmt::format("tcp {}", health_.address);
    case config::Health::Type::None:
      return "none";
  }
  return "none";
}

}  // namespace vipd::daemon
