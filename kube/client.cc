#include "kube/client.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <array>
#include <boost/asio/buffer.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "config/file_reader.h"
#include "kube/node_intent.h"
#include "kube/token_source.h"

namespace vipd::kube {
namespace {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr size_t kReadChunkBytes = 16 * 1024;

std::string_view methodName(Method m) {
  switch (m) {
    case Method::Get:
      return "GET";
    case Method::Post:
      return "POST";
    case Method::Patch:
      return "PATCH";
  }
  return "GET";
}

http::verb verbOf(Method m) {
  switch (m) {
    case Method::Get:
      return http::verb::get;
    case Method::Post:
      return http::verb::post;
    case Method::Patch:
      return http::verb::patch;
  }
  return http::verb::get;
}

std::string formatMs(milliseconds d) {
  return d.count() % 1000 == 0 ? fmt::format("{}s", d.count() / 1000)
                               : fmt::format("{}ms", d.count());
}

bool isIpAddress(const std::string& host) {
  boost::system::error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

// OpenSSL's reason for a failed handshake, and for a rejected certificate the verifier's, with
// what to change.
std::string describeTlsError(const boost::system::error_code& ec, SSL* ssl,
                             const Credentials& c) {
  if (ec == ssl::error::stream_truncated) {
    return "the server closed the connection";
  }
  if (ec.category() != asio::error::get_ssl_category()) {
    return ec.message();
  }
  auto code = static_cast<unsigned long>(static_cast<unsigned int>(ec.value()));
  const char* reason = ERR_reason_error_string(code);
  std::string text = reason != nullptr ? reason : ec.message();
  if (ERR_GET_REASON(code) == SSL_R_CERTIFICATE_VERIFY_FAILED && ssl != nullptr) {
    long verify = SSL_get_verify_result(ssl);
    if (verify != X509_V_OK) {
      text += fmt::format(": {}", X509_verify_cert_error_string(verify));
    }
    if (verify == X509_V_ERR_HOSTNAME_MISMATCH || verify == X509_V_ERR_IP_ADDRESS_MISMATCH) {
      text += fmt::format(" (the certificate does not name '{}'; set the kubeconfig cluster's "
                          "tls-server-name to a name it carries)",
                          c.serverName);
    } else if (verify == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY ||
               verify == X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN ||
               verify == X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT) {
      text += fmt::format(" (the server's certificate is not signed by the CA of {})", c.source);
    }
  }
  return text;
}

Result<std::shared_ptr<ssl::context>> makeTlsContext(const Credentials& c) {
  std::shared_ptr<ssl::context> tls;
  try {
    tls = std::make_shared<ssl::context>(ssl::context::tls_client);
  } catch (const boost::system::system_error& e) {
    return fail(ErrorKind::Local, fmt::format("cannot create a TLS context: {}", e.what()));
  }
  boost::system::error_code ec;
  tls->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                       ssl::context::no_tlsv1_1,
                   ec);
  tls->add_certificate_authority(asio::buffer(c.caPem), ec);
  if (ec) {
    return fail(ErrorKind::Config, fmt::format("{}: the certificate authority holds no usable PEM "
                                               "certificate ({})",
                                               c.source, ec.message()));
  }
  tls->set_verify_mode(ssl::verify_peer, ec);
  if (c.clientCertPem) {
    tls->use_certificate_chain(asio::buffer(*c.clientCertPem), ec);
    if (ec) {
      return fail(ErrorKind::Config, fmt::format("{}: the client certificate is not a PEM "
                                                 "certificate ({})",
                                                 c.source, ec.message()));
    }
    tls->use_private_key(asio::buffer(*c.clientKeyPem), ssl::context::pem, ec);
    if (ec || SSL_CTX_check_private_key(tls->native_handle()) != 1) {
      return fail(ErrorKind::Config,
                  fmt::format("{}: the client key is not a PEM key of the client certificate",
                              c.source));
    }
  }
  return tls;
}

// One exchange: resolve (for a name), connect, handshake, write, then a whole response (request)
// or a stream of lines (watch). The handlers in flight own it; the first outcome wins.
class Exchange : public Call, public std::enable_shared_from_this<Exchange> {
 public:
  Exchange(asio::io_context& io, const Credentials& credentials, const Limits& limits,
           std::shared_ptr<ssl::context> tls, Request request, std::optional<std::string> token)
      : io_(io),
        c_(credentials),
        limits_(limits),
        tls_(std::move(tls)),
        request_(std::move(request)),
        token_(std::move(token)),
        resolver_(io),
        deadline_(io),
        maxTimer_(io),
        buffer_(limits.maxHeaderBytes + kReadChunkBytes) {}

  void startRequest(Client::Done done) {
    done_ = std::move(done);
    start();
  }

  void startWatch(Client::OnLine onLine, Client::Ended ended) {
    onLine_ = std::move(onLine);
    ended_ = std::move(ended);
    framer_.emplace(limits_.maxEventBytes);
    start();
  }

  void cancel() override {
    if (finished_) {
      return;
    }
    // The callbacks are kept, never called again: cancel() may come from inside onLine_, which
    // must not be destroyed while it runs. They go with the exchange.
    finished_ = true;
    closeTransport();
  }

  // The exchange in messages: "PATCH https://10.0.0.1:6443/apis/..." (the query left out).
  std::string url() const {
    return serverUrl(c_) + request_.target.substr(0, request_.target.find('?'));
  }
  std::string what() const { return fmt::format("{} {}", methodName(request_.method), url()); }

 private:
  bool watching() const { return framer_.has_value(); }

  // What is left of the request's deadline (the whole exchange, connect included).
  milliseconds remaining() const {
    auto left = limits_.requestTimeout -
                std::chrono::duration_cast<milliseconds>(steady_clock::now() - startedAt_);
    return std::max(left, milliseconds{1});
  }

  void start() {
    startedAt_ = steady_clock::now();
    armDeadline(std::min(limits_.connectTimeout, limits_.requestTimeout), "connecting");
    if (isIpAddress(c_.host)) {
      boost::system::error_code ec;
      tcp::endpoint endpoint(asio::ip::make_address(c_.host, ec), c_.port);
      connect(std::vector<tcp::endpoint>{endpoint});
      return;
    }
    stage_ = "resolving";
    resolver_.async_resolve(c_.host, std::to_string(c_.port),
                            [self = shared_from_this()](const boost::system::error_code& ec,
                                                        const tcp::resolver::results_type& r) {
                              self->onResolve(ec, r);
                            });
  }

  // Each expiry closes the transport, so the pending operation ends with operation_aborted and
  // the outcome is the timeout, named by the stage it interrupted.
  void armDeadline(milliseconds after, const char* stage) {
    stage_ = stage;
    deadlineFor_ = after;
    deadline_.expires_after(after);
    deadline_.async_wait([self = shared_from_this(), generation = ++deadlineGeneration_](
                             const boost::system::error_code& ec) {
      if (!ec && generation == self->deadlineGeneration_) {
        self->timeout(self->deadlineFor_);
      }
    });
  }

  void timeout(milliseconds after) {
    if (finished_) {
      return;
    }
    std::string message =
        watching() && headerDone_
            ? fmt::format("{}: the watch sent nothing for {}", what(), formatMs(after))
            : fmt::format("{}: timed out after {} while {}", what(), formatMs(after), stage_);
    finish(fail(ErrorKind::Timeout, std::move(message)).value());
  }

  void onResolve(const boost::system::error_code& ec, const tcp::resolver::results_type& r) {
    if (finished_) {
      return;
    }
    if (ec) {
      finish(fail(ErrorKind::Resolve,
                  fmt::format("{}: cannot resolve {}: {}", what(), c_.host, ec.message())).value());
      return;
    }
    std::vector<tcp::endpoint> endpoints;
    for (const auto& entry : r) {
      endpoints.push_back(entry.endpoint());
    }
    connect(std::move(endpoints));
  }

  // TCP keepalive, probing after 10 s of silence every 5 s, 3 probes: a connection whose path
  // is cut (a partition, a frozen host) fails within about 25 s instead of waiting for the
  // watch's idle deadline (120 s, above the apiserver's bookmark interval), so the watch starts
  // again, and lists again, soon after the API is back. Best effort: a socket that refuses an
  // option keeps the deadlines it has.
  void setTcpKeepalive() {
    const int fd = stream_->lowest_layer().native_handle();
    const int on = 1, idle = 10, interval = 5, count = 3;
    ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
  }

  void connect(std::vector<tcp::endpoint> endpoints) {
    stage_ = "connecting";
    try {
      stream_.emplace(io_, *tls_);
    } catch (const boost::system::system_error& e) {
      finish(Error{ErrorKind::Local, fmt::format("{}: cannot set up TLS: {}", what(), e.what())});
      return;
    }
    asio::async_connect(stream_->lowest_layer(), endpoints,
                        [self = shared_from_this()](const boost::system::error_code& ec,
                                                    const tcp::endpoint&) {
                          self->onConnect(ec);
                        });
  }

  void onConnect(const boost::system::error_code& ec) {
    if (finished_) {
      return;
    }
    if (ec) {
      finish(fail(ErrorKind::Connect,
                  fmt::format("{}: connect failed: {}{}", what(), ec.message(),
                              ec == asio::error::connection_refused
                                  ? " (is the API server running, and is this its address?)"
                                  : "")).value());
      return;
    }
    setTcpKeepalive();
    armDeadline(remaining(), "in the TLS handshake");
    SSL* handle = stream_->native_handle();
    if (isIpAddress(c_.serverName)) {
      // An IP address is checked against the certificate's IP SANs; SNI carries no address.
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(handle), c_.serverName.c_str());
    } else {
      SSL_set_tlsext_host_name(handle, c_.serverName.c_str());
      SSL_set_hostflags(handle,
                        X509_CHECK_FLAG_NEVER_CHECK_SUBJECT | X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
      SSL_set1_host(handle, c_.serverName.c_str());
    }
    stream_->async_handshake(ssl::stream_base::client,
                             [self = shared_from_this()](const boost::system::error_code& ec) {
                               self->onHandshake(ec);
                             });
  }

  void onHandshake(const boost::system::error_code& ec) {
    if (finished_) {
      return;
    }
    if (ec) {
      finish(Error{ErrorKind::Tls,
                   fmt::format("{}: TLS handshake failed: {}", what(),
                               describeTlsError(ec, stream_->native_handle(), c_))});
      return;
    }
    stage_ = "sending the request";
    http::request<http::string_body>& req = httpRequest_;
    req.version(11);
    req.method(verbOf(request_.method));
    req.target(c_.basePath + request_.target);
    bool v6 = c_.host.find(':') != std::string::npos;
    req.set(http::field::host,
            fmt::format("{}{}{}:{}", v6 ? "[" : "", c_.host, v6 ? "]" : "", c_.port));
    req.set(http::field::user_agent, "vipd");
    req.set(http::field::accept, "application/json");
    req.set(http::field::connection, "close");
    if (token_) {
      req.set(http::field::authorization, "Bearer " + *token_);
    }
    if (!request_.body.empty() || request_.method != Method::Get) {
      req.set(http::field::content_type,
              request_.contentType.empty() ? "application/json" : request_.contentType);
      req.body() = request_.body;
      req.prepare_payload();
    }
    http::async_write(*stream_, req,
                      [self = shared_from_this()](const boost::system::error_code& ec, size_t) {
                        self->onWrite(ec);
                      });
  }

  void onWrite(const boost::system::error_code& ec) {
    if (finished_) {
      return;
    }
    if (ec) {
      finish(transportError("sending the request", ec));
      return;
    }
    stage_ = "waiting for the answer";
    deadlineFor_ = limits_.requestTimeout;  // a timeout from here on is the whole request's
    if (watching()) {
      streamParser_.emplace();
      streamParser_->header_limit(static_cast<uint32_t>(limits_.maxHeaderBytes));
      streamParser_->body_limit(boost::none);  // a stream: bounded per line and by duration
      http::async_read_header(
          *stream_, buffer_, *streamParser_,
          [self = shared_from_this()](const boost::system::error_code& ec, size_t) {
            self->onWatchHeader(ec);
          });
      return;
    }
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(limits_.maxHeaderBytes));
    parser_->body_limit(limits_.maxBodyBytes);
    http::async_read(*stream_, buffer_, *parser_,
                     [self = shared_from_this()](const boost::system::error_code& ec, size_t) {
                       self->onRead(ec);
                     });
  }

  Error transportError(std::string_view doing, const boost::system::error_code& ec) {
    if (ec == http::error::body_limit) {
      return Error{ErrorKind::TooLarge,
                   fmt::format("{}: the answer's body is larger than {} KiB; refused", what(),
                               limits_.maxBodyBytes / 1024)};
    }
    if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
      return Error{ErrorKind::TooLarge,
                   fmt::format("{}: the answer's header is larger than {} KiB; refused", what(),
                               limits_.maxHeaderBytes / 1024)};
    }
    if (ec == http::error::end_of_stream || ec == ssl::error::stream_truncated ||
        ec == asio::error::eof) {
      return Error{ErrorKind::Transport,
                   fmt::format("{}: the server closed the connection while {}", what(), doing)};
    }
    if (ec.category() == http::make_error_code(http::error::end_of_stream).category()) {
      return Error{ErrorKind::Protocol,
                   fmt::format("{}: not an HTTP answer ({})", what(), ec.message())};
    }
    return Error{ErrorKind::Transport, fmt::format("{}: {} failed: {}", what(), doing,
                                                   ec.message())};
  }

  void onRead(const boost::system::error_code& ec) {
    if (finished_) {
      return;
    }
    if (ec) {
      finish(transportError("reading the answer", ec));
      return;
    }
    auto& response = parser_->get();
    unsigned status = response.result_int();
    if (status < 200 || status > 299) {
      finish(httpError(methodName(request_.method), url(), status, response.reason(),
                       response.body(), response[http::field::retry_after]));
      return;
    }
    finishOk(Response{status, std::move(response.body())});
  }

  void onWatchHeader(const boost::system::error_code& ec) {
    if (finished_) {
      return;
    }
    if (ec) {
      finish(transportError("reading the answer", ec));
      return;
    }
    auto& response = streamParser_->get();
    unsigned status = response.result_int();
    if (status != 200) {
      // The body of a refusal is a Status object: read a bounded piece of it for the message.
      statusCode_ = status;
      reason_ = std::string(response.reason());
      retryAfter_ = std::string(response[http::field::retry_after]);
      errorBody_.emplace();
      readWatchBody();
      return;
    }
    headerDone_ = true;
    maxTimer_.expires_after(limits_.watchMaxDuration);
    maxTimer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (!ec && !self->finished_) {
        // Not an error: the watch is simply started again from its resourceVersion.
        self->finishStream(Result<void>{});
      }
    });
    readWatchBody();
  }

  void readWatchBody() {
    if (streamParser_->is_done()) {
      onWatchBodyDone();
      return;
    }
    if (errorBody_) {
      armDeadline(remaining(), "reading the refusal");
    } else {
      armDeadline(limits_.watchIdleTimeout, "reading the watch");
    }
    auto& body = streamParser_->get().body();
    body.data = chunk_.data();
    body.size = chunk_.size();
    http::async_read_some(
        *stream_, buffer_, *streamParser_,
        [self = shared_from_this()](boost::system::error_code ec, size_t) {
          if (ec == http::error::need_buffer) {
            ec = {};
          }
          self->onWatchRead(ec);
        });
  }

  void onWatchRead(const boost::system::error_code& ec) {
    if (finished_) {
      return;
    }
    size_t n = chunk_.size() - streamParser_->get().body().size;
    std::string_view bytes(chunk_.data(), n);
    if (errorBody_) {
      errorBody_->append(bytes.substr(0, 4096 - std::min<size_t>(errorBody_->size(), 4096)));
    } else if (n > 0) {
      auto fed = framer_->feed(bytes, [this](std::string_view line) {
        if (onLine_ && !finished_) {
          onLine_(line);
        }
      });
      if (finished_) {
        return;  // cancelled by onLine
      }
      if (!fed) {
        fed.error().message = fmt::format("{}: {}; the watch is ended", what(),
                                          fed.error().message);
        finishStream(tl::unexpected(fed.error()));
        return;
      }
    }
    if (ec) {
      if (errorBody_) {
        onWatchBodyDone();
        return;
      }
      finishStream(tl::unexpected(transportError("reading the watch", ec)));
      return;
    }
    if (errorBody_ && errorBody_->size() >= 4096) {
      onWatchBodyDone();
      return;
    }
    readWatchBody();
  }

  void onWatchBodyDone() {
    if (errorBody_) {
      finishStream(tl::unexpected(httpError("GET", url(), statusCode_, reason_, *errorBody_,
                                            retryAfter_)));
      return;
    }
    finishStream(Result<void>{});
  }

  void closeTransport() {
    boost::system::error_code ignored;
    resolver_.cancel();
    deadline_.cancel();
    maxTimer_.cancel();
    if (stream_) {
      stream_->lowest_layer().close(ignored);
    }
  }

  void finish(Error error) {
    if (watching()) {
      finishStream(tl::unexpected(std::move(error)));
      return;
    }
    if (finished_) {
      return;
    }
    finished_ = true;
    closeTransport();
    if (auto done = std::exchange(done_, nullptr)) {
      done(tl::unexpected(std::move(error)));
    }
  }

  void finishOk(Response response) {
    if (finished_) {
      return;
    }
    finished_ = true;
    closeTransport();
    if (auto done = std::exchange(done_, nullptr)) {
      done(std::move(response));
    }
  }

  void finishStream(Result<void> result) {
    if (finished_) {
      return;
    }
    finished_ = true;
    closeTransport();
    if (auto ended = std::exchange(ended_, nullptr)) {
      ended(std::move(result));
    }
  }

  asio::io_context& io_;
  const Credentials& c_;  // the Client's, which outlives the exchange (held by shared_ptr)
  const Limits& limits_;
  std::shared_ptr<ssl::context> tls_;
  Request request_;
  std::optional<std::string> token_;
  tcp::resolver resolver_;
  asio::steady_timer deadline_;
  asio::steady_timer maxTimer_;
  uint64_t deadlineGeneration_ = 0;
  steady_clock::time_point startedAt_;
  milliseconds deadlineFor_{0};
  std::optional<ssl::stream<tcp::socket>> stream_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> httpRequest_;
  std::optional<http::response_parser<http::string_body>> parser_;
  std::optional<http::response_parser<http::buffer_body>> streamParser_;
  std::array<char, kReadChunkBytes> chunk_{};
  std::optional<LineFramer> framer_;
  std::optional<std::string> errorBody_;  // a watch refused: its Status, cut at 4 KiB
  unsigned statusCode_ = 0;
  std::string reason_;
  std::string retryAfter_;
  bool headerDone_ = false;
  const char* stage_ = "starting";
  bool finished_ = false;
  Client::Done done_;
  Client::OnLine onLine_;
  Client::Ended ended_;

 public:
  std::shared_ptr<void> keepAlive;  // the Client, so c_ and limits_ outlive this exchange
};

class ClientImpl : public Client, public std::enable_shared_from_this<ClientImpl> {
 public:
  ClientImpl(asio::io_context& io, Credentials credentials, Limits limits,
             std::shared_ptr<ssl::context> tls, ReadFile readFile)
      : io_(io),
        credentials_(std::move(credentials)),
        limits_(limits),
        tls_(std::move(tls)),
        tokens_(credentials_, std::move(readFile)) {}

  std::shared_ptr<Call> request(Request request, Done done) override {
    auto token = tokens_.token(steady_clock::now());
    if (!token) {
      auto call = std::make_shared<NoCall>();
      asio::post(io_, [call, done = std::move(done), error = token.error()] {
        if (!call->cancelled) {
          done(tl::unexpected(error));
        }
      });
      return call;
    }
    auto exchange =
        std::make_shared<Exchange>(io_, credentials_, limits_, tls_, std::move(request), *token);
    exchange->keepAlive = shared_from_this();
    exchange->startRequest([self = shared_from_this(), done = std::move(done)](
                               Result<Response> result) {
      if (!result && result.error().httpStatus == 401) {
        self->tokens_.invalidate();
      }
      done(std::move(result));
    });
    return exchange;
  }

  std::shared_ptr<Call> watch(std::string target, OnLine onLine, Ended ended) override {
    auto token = tokens_.token(steady_clock::now());
    if (!token) {
      auto call = std::make_shared<NoCall>();
      asio::post(io_, [call, ended = std::move(ended), error = token.error()] {
        if (!call->cancelled) {
          ended(tl::unexpected(error));
        }
      });
      return call;
    }
    auto exchange = std::make_shared<Exchange>(
        io_, credentials_, limits_, tls_, Request{Method::Get, std::move(target), {}, {}}, *token);
    exchange->keepAlive = shared_from_this();
    exchange->startWatch(std::move(onLine), [self = shared_from_this(), ended = std::move(ended)](
                                                Result<void> result) {
      if (!result && result.error().httpStatus == 401) {
        self->tokens_.invalidate();
      }
      ended(std::move(result));
    });
    return exchange;
  }

  const Credentials& credentials() const override { return credentials_; }
  const Limits& limits() const override { return limits_; }

 private:
  // What a request that never started returns: its callback is posted, and skipped once
  // cancelled.
  struct NoCall : Call {
    void cancel() override { cancelled = true; }
    bool cancelled = false;
  };

  asio::io_context& io_;
  Credentials credentials_;
  Limits limits_;
  std::shared_ptr<ssl::context> tls_;
  TokenSource tokens_;
};

}  // namespace

Result<std::shared_ptr<Client>> Client::create(asio::io_context& io,
                                               const Credentials& credentials, Limits limits,
                                               ReadFile readFile) {
  auto tls = makeTlsContext(credentials);
  if (!tls) {
    return tl::unexpected(tls.error());
  }
  return std::make_shared<ClientImpl>(io, credentials, limits, std::move(*tls),
                                      std::move(readFile));
}

ReadFile localFileReader() {
  return [](const std::string& path) {
    return config::readBoundedFile(path, "file", kMaxCredentialFileBytes);
  };
}

Error httpError(std::string_view method, std::string_view target, unsigned status,
                std::string_view reasonPhrase, std::string_view body,
                std::string_view retryAfter) {
  // The apiserver answers a refusal with a metav1.Status; its message says what was wrong.
  std::string detail;
  nlohmann::json parsed = nlohmann::json::parse(body, nullptr, false);
  if (!parsed.is_discarded() && parsed.is_object()) {
    if (auto m = parsed.find("message"); m != parsed.end() && m->is_string()) {
      detail = printableReason(m->get_ref<const std::string&>());  // 256 bytes, printable
    }
  }
  Error e;
  e.kind = ErrorKind::Http;
  e.httpStatus = status;
  e.message = fmt::format("{} {}: HTTP {} {}{}{}", method, target, status,
                          printableReason(reasonPhrase.substr(0, 64)), detail.empty() ? "" : ": ",
                          detail);
  if (status == 401) {
    e.message += " (the token or client certificate was refused; a service account token is "
                 "read again)";
  } else if (status == 403 && detail.find("ValidatingAdmissionPolicy") != std::string::npos) {
    e.message += " (vipd writes only its own node's VipdNode, with a token bound to a pod on "
                 "that node: manifests/kube/admission-policy.yaml)";
  } else if (status == 403) {
    e.message += " (RBAC: see manifests/kube/rbac.yaml for what vipd's account needs)";
  }
  std::string_view ra = trimSpace(retryAfter);
  if (!ra.empty() && ra.size() <= 9 &&
      ra.find_first_not_of("0123456789") == std::string_view::npos) {
    e.retryAfter = std::chrono::seconds(std::stoul(std::string(ra)));
  }
  return e;
}

}  // namespace vipd::kube
