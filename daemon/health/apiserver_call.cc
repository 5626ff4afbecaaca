#include "daemon/health/apiserver_call.h"

#include <cerrno>

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <array>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/base/version.h"
#include "daemon/health/apiserver_answer.h"

namespace vipd::daemon {

namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

std::string formatDuration(milliseconds d) {
  if (d.count() % 1000 == 0) {
    return fmt::format("{}s", d.count() / 1000);
  }
  return fmt::format("{}ms", d.count());
}

namespace {

// See CallExchange::connect(): when an unanswered connect is raced by a new one.
constexpr milliseconds kConnectResendAfter{200};
constexpr size_t kMaxConnectAttempts = 3;

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

// The call's states follow its stages: connect (resolving first when the host is a name), then
// for the apiserver handshake, write the request, read the answer. Every handler first checks
// `finished_`: a timeout or abandon() may have ended the call while it was pending.
class CallExchange final : public ApiserverCall, public std::enable_shared_from_this<CallExchange> {
 public:
  // `tls` is null for a TCP call.
  CallExchange(asio::io_context& io, config::HealthTarget target,
                std::shared_ptr<ssl::context> tls,
                milliseconds timeout, Judge judge, std::string accept, Done done,
                HeldClosed heldClosed)
      : target_(std::move(target)),
        tls_(std::move(tls)),
        timeout_(timeout),
        judge_(std::move(judge)),
        accept_(std::move(accept)),
        done_(std::move(done)),
        heldClosed_(std::move(heldClosed)),
        resolver_(io),
        resendTimer_(io),
        socket_(io),
        deadline_(io) {}

  void start() {
    started_ = steady_clock::now();
    deadline_.expires_after(timeout_);
    deadline_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec || self->finished_) {
        return;
      }
      std::string stage = self->stage_;
      if (!self->connected_ && self->attemptsStarted_ > 1) {
        stage += fmt::format(", {} attempts", self->attemptsStarted_);
      }
      self->finish(false,
                   fmt::format("timed out after {} ({})", formatDuration(self->timeout_), stage),
                   CallFailure::Timeout);
    });

    boost::system::error_code ec;
    auto address = asio::ip::make_address(target_.host, ec);
    if (!ec) {
      connect({tcp::endpoint(address, static_cast<uint16_t>(std::stoi(target_.port)))});
      return;
    }
    resolve();
  }

  void abandon() override {
    done_ = nullptr;
    heldClosed_ = nullptr;
    finished_ = true;
    deadline_.cancel();
    closeTransport();
  }

 private:
  void resolve() {
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
                         fmt::format("cannot resolve {}: {}", self->target_.host, ec.message()),
                         CallFailure::Resolve);
            return;
          }
          std::vector<tcp::endpoint> endpoints;
          for (const auto& entry : results) {
            endpoints.push_back(entry.endpoint());
          }
          self->connect(std::move(endpoints));
        });
  }

  // Linux resends a lost SYN (or the server a lost SYN-ACK) only after 1 s, the default
  // timeout: one dropped packet would fail the call. So a connect not done after
  // kConnectResendAfter is raced by a fresh one (a new SYN from a new port), up to
  // kMaxConnectAttempts in all; the first to connect carries the call and the others close.
  // On loopback an answered SYN takes microseconds, so a resend means a packet was lost.
  // Each attempt walks the whole endpoint list in order, as a plain connect would.
  void connect(std::vector<tcp::endpoint> endpoints) {
    stage_ = fmt::format("connecting to {}", target_.authority);
    endpoints_ = std::move(endpoints);
    startAttempt();
  }

  void startAttempt() {
    const size_t index = attemptsStarted_++;
    attempts_[index].emplace(socket_.get_executor());
    asio::async_connect(*attempts_[index], endpoints_,
                        [self = shared_from_this(), index](const boost::system::error_code& ec,
                                                           const tcp::endpoint&) {
                          self->onConnect(index, ec);
                        });
    if (attemptsStarted_ < kMaxConnectAttempts &&
        steady_clock::now() + kConnectResendAfter < started_ + timeout_) {
      resendTimer_.expires_after(kConnectResendAfter);
      resendTimer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
        if (ec || self->finished_ || self->connected_) {
          return;
        }
        self->startAttempt();
      });
    }
  }

  void onConnect(size_t index, const boost::system::error_code& ec) {
    if (finished_ || connected_) {
      return;
    }
    if (ec && index > 0 && isLocalResourceShortage(ec)) {
      // No descriptor for the extra attempt: the first one is still pending (any failure of an
      // earlier attempt would have ended the call) and may yet connect.
      boost::system::error_code ignored;
      attempts_[index]->close(ignored);
      return;
    }
    if (ec) {
      inconclusive_ = isLocalResourceShortage(ec);
      finish(false, fmt::format("connect to {} failed: {}", target_.authority, ec.message()),
             inconclusive_                             ? CallFailure::Local
             : ec == asio::error::connection_refused ? CallFailure::ConnectionRefused
                                                     : CallFailure::Connect);
      return;
    }
    connected_ = true;
    resendTimer_.cancel();
    socket_ = std::move(*attempts_[index]);
    closeAttempts();  // the slower attempts
    if (!tls_) {
      finish(true, fmt::format("connected to {}", target_.authority));
      return;
    }
    handshake();
  }

  void handshake() {
    try {
      stream_.emplace(std::move(socket_), *tls_);
    } catch (const boost::system::system_error& e) {
      // SSL_new failed: this process is short of memory or descriptors (OpenSSL may open files
      // here). Asio throws; uncaught it would abort vipd. No evidence about the apiserver.
      inconclusive_ = true;
      finish(false, fmt::format("cannot set up TLS for {}: {}", target_.authority, e.what()),
             CallFailure::Local);
      return;
    }
    SSL* handle = stream_->native_handle();
    // The server name is never an IP address (healthTarget() made sure), so it may go in SNI
    // (RFC 6066 section 3), whatever the URL's host is.
    if (SSL_set_tlsext_host_name(handle, target_.serverName.c_str()) != 1) {
      finish(false, fmt::format("cannot set TLS server name {}", target_.serverName),
             CallFailure::Tls);
      return;
    }
    // OpenSSL checks the name once the chain has verified to caFile and, on a mismatch, fails
    // the handshake with X509_V_ERR_HOSTNAME_MISMATCH, which describeTlsError() names. Like
    // Go's crypto/tls (kubectl, kubelet), only subjectAltName DNS entries count, never the
    // subject's CN; a wildcard must be a whole label.
    SSL_set_hostflags(handle,
                      X509_CHECK_FLAG_NEVER_CHECK_SUBJECT | X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    if (SSL_set1_host(handle, target_.serverName.c_str()) != 1) {
      finish(false, fmt::format("cannot set the expected certificate name {}", target_.serverName),
             CallFailure::Tls);
      return;
    }
    boost::system::error_code ec;
    stream_->set_verify_mode(ssl::verify_peer, ec);
    if (ec) {
      finish(false, fmt::format("cannot set up TLS verification: {}", ec.message()),
             CallFailure::Tls);
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
      finish(false, fmt::format("TLS handshake failed: {}", tlsError(ec)), CallFailure::Tls);
      return;
    }
    request_.version(11);
    request_.method(http::verb::get);
    request_.target(target_.path);
    request_.set(http::field::host, target_.authority);
    request_.set(http::field::user_agent, fmt::format("vipd/{}", version()));
    request_.set(http::field::accept, accept_);
    if (!heldClosed_) {
      request_.set(http::field::connection, "close");
    }  // else HTTP/1.1's default, keep-alive: the connection is held after the answer
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
      finish(false, fmt::format("sending the request failed: {}", tlsError(ec)),
             CallFailure::Transport);
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
      finish(false, fmt::format("response body larger than {} KiB", kMaxHealthBodyBytes / 1024),
             CallFailure::Body);
      return;
    }
    if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
      finish(false,
             fmt::format("response header larger than {} KiB", kMaxHealthHeaderBytes / 1024),
             CallFailure::Transport);
      return;
    }
    if (ec == http::error::end_of_stream || ec == ssl::error::stream_truncated) {
      finish(false, "the server closed the connection before a complete response",
             CallFailure::Transport);
      return;
    }
    if (ec) {
      finish(false, fmt::format("reading the response failed: {}", tlsError(ec)),
             CallFailure::Transport);
      return;
    }
    const auto& response = parser_->get();
    keepAlive_ = response.keep_alive();
    auto verdict =
        judge_(response.result_int(), response[http::field::content_type], response.body());
    finish(verdict.ok, std::move(verdict.detail), failureOf(verdict.fault));
  }

  // The connect attempts still pending (all of them, or the losers once one connected).
  void closeAttempts() {
    boost::system::error_code ignored;
    for (auto& attempt : attempts_) {
      if (attempt) {
        attempt->close(ignored);
      }
    }
  }

  void closeTransport() {
    boost::system::error_code ignored;
    resolver_.cancel();
    resendTimer_.cancel();
    closeAttempts();
    if (stream_) {
      stream_->lowest_layer().close(ignored);
    } else {
      socket_.close(ignored);
    }
  }

  // The first outcome wins; a timeout closes the socket so the pending operation ends at once.
  static CallFailure failureOf(AnswerFault fault) {
    switch (fault) {
      case AnswerFault::None:
        return CallFailure::None;
      case AnswerFault::NotApiserver:
        return CallFailure::NotApiserver;
      case AnswerFault::HttpStatus:
        return CallFailure::HttpStatus;
      case AnswerFault::Body:
        return CallFailure::Body;
    }
    return CallFailure::Body;
  }

  void finish(bool ok, std::string detail, CallFailure failure = CallFailure::None) {
    if (finished_) {
      return;
    }
    finished_ = true;
    deadline_.cancel();
    bool hold = ok && heldClosed_ && keepAlive_;
    if (hold) {
      holdConnection();
    } else {
      heldClosed_ = nullptr;
      closeTransport();
    }
    CallResult result{
        ok, std::move(detail),
        std::chrono::duration_cast<std::chrono::microseconds>(steady_clock::now() - started_),
        inconclusive_, ok ? CallFailure::None : failure, hold};
    result.connectAttempts = static_cast<unsigned>(attemptsStarted_);
    if (auto done = std::exchange(done_, nullptr)) {
      done(result);
    }
  }

  // The held connection: one read that ends when the connection does. An apiserver sends
  // nothing unasked on an idle HTTP/1.1 connection, so any outcome of the read ends the hold:
  // end of stream or a reset (the process died or closed its idle connections), or unexpected
  // bytes (not a keep-alive we understand). A TCP target may send a banner: it is skipped.
  void holdConnection() {
    auto onRead = [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
      self->onHeldRead(ec, n);
    };
    if (stream_) {
      stream_->async_read_some(asio::buffer(holdBuffer_), std::move(onRead));
    } else {
      socket_.async_read_some(asio::buffer(holdBuffer_), std::move(onRead));
    }
  }

  void onHeldRead(const boost::system::error_code& ec, size_t n) {
    if (!heldClosed_) {
      return;  // abandoned
    }
    if (!ec && !stream_ && n > 0) {
      holdConnection();
      return;
    }
    std::string why;
    if (!ec) {
      why = "the server sent data on an idle connection";
    } else if (ec == asio::error::eof || ec == ssl::error::stream_truncated) {
      why = "the server closed the connection";
    } else {
      why = stream_ ? tlsError(ec) : ec.message();
    }
    closeTransport();
    if (auto closed = std::exchange(heldClosed_, nullptr)) {
      closed(why);
    }
  }

  config::HealthTarget target_;
  std::shared_ptr<ssl::context> tls_;
  milliseconds timeout_;
  Judge judge_;
  std::string accept_;
  Done done_;
  HeldClosed heldClosed_;  // null: close after the answer (or the hold has ended)
  bool keepAlive_ = true;  // the answer allows keep-alive (a TCP call has no answer)
  std::array<char, 512> holdBuffer_{};
  tcp::resolver resolver_;
  std::vector<tcp::endpoint> endpoints_;
  std::array<std::optional<tcp::socket>, kMaxConnectAttempts> attempts_;
  size_t attemptsStarted_ = 0;
  bool connected_ = false;
  asio::steady_timer resendTimer_;
  tcp::socket socket_;  // the attempt that connected, until the TLS stream takes it over
  std::optional<ssl::stream<tcp::socket>> stream_;
  asio::steady_timer deadline_;
  beast::flat_buffer buffer_;
  http::request<http::empty_body> request_;
  std::optional<http::response_parser<http::string_body>> parser_;
  std::string stage_;  // what a timeout interrupted
  steady_clock::time_point started_{};
  bool finished_ = false;
  bool inconclusive_ = false;
};

}  // namespace

std::shared_ptr<ApiserverCall> ApiserverCall::start(asio::io_context& io,
                                                config::HealthTarget target,
                                                std::shared_ptr<ssl::context> tls,
                                                milliseconds timeout, Done done,
                                                HeldClosed heldClosed) {
  auto call = std::make_shared<CallExchange>(io, std::move(target), std::move(tls), timeout,
                                               judgeApiserverAnswer, "text/plain",
                                               std::move(done), std::move(heldClosed));
  call->start();
  return call;
}

std::shared_ptr<ApiserverCall> ApiserverCall::start(asio::io_context& io,
                                                config::HealthTarget target,
                                                std::shared_ptr<ssl::context> tls,
                                                milliseconds timeout, Judge judge,
                                                std::string accept, Done done) {
  auto call = std::make_shared<CallExchange>(io, std::move(target), std::move(tls), timeout,
                                               std::move(judge), std::move(accept),
                                               std::move(done), nullptr);
  call->start();
  return call;
}

bool isHardEvidence(CallFailure failure) {
  switch (failure) {
    case CallFailure::ConnectionRefused:
    case CallFailure::Tls:
    case CallFailure::Transport:
    case CallFailure::NotApiserver:
      return true;
    case CallFailure::None:
    case CallFailure::Resolve:
    case CallFailure::Connect:
    case CallFailure::Timeout:
    case CallFailure::HttpStatus:
    case CallFailure::Body:
    case CallFailure::Local:
      return false;
  }
  return false;
}

bool isLocalResourceShortage(const boost::system::error_code& ec) {
  if (ec.category() != boost::system::system_category() &&
      ec.category() != boost::system::generic_category()) {
    return false;
  }
  const int value = ec.value();
  return value == EMFILE || value == ENFILE || value == ENOBUFS || value == ENOMEM;
}

}  // namespace vipd::daemon
