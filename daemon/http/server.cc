#include "daemon/http/server.h"

#include <algorithm>
#include <array>
#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/socket_base.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <exception>
#include <optional>

namespace vipd::daemon {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// State the server and its connections share, so a connection or a pending accept that outlives
// the server (the io_context runs on) finds `stopped` instead of a dangling server.
struct HttpServer::Shared {
  Handler handler;
  HttpServerOptions options;
  const Logger& log;
  std::string subject;
  bool stopped = false;
  ListenerStats stats;  // idle timeouts and accept failures; the rest comes from the ClientCap
};

namespace {

std::string endpointText(const tcp::endpoint& endpoint) {
  const auto address = endpoint.address();
  return address.is_v6() ? fmt::format("[{}]:{}", address.to_string(), endpoint.port())
                         : fmt::format("{}:{}", address.to_string(), endpoint.port());
}

}  // namespace

// One client connection: read a request (bounded in size and time), answer it, and either read
// the next one (keep-alive) or close.
class HttpServer::Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, std::shared_ptr<Shared> shared)
      : stream_(std::move(socket)),
        shared_(std::move(shared)),
        buffer_(shared_->options.maxHeaderBytes + shared_->options.maxBodyBytes) {
    boost::system::error_code ec;
    auto remote = stream_.socket().remote_endpoint(ec);
    client_ = ec ? std::string("unknown client") : endpointText(remote);
  }

  void start() { readRequest(); }

  // Waiting for a request (the first, or the next on a keep-alive connection): may be closed to
  // make room (HttpServer's cap).
  bool waitingForRequest() const { return waitingForRequest_; }

  void close() {
    boost::system::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
  }

 private:
  void readRequest() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(shared_->options.maxHeaderBytes));
    parser_->body_limit(shared_->options.maxBodyBytes);
    stream_.expires_after(shared_->options.readTimeout);
    waitingForRequest_ = true;
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](const beast::error_code& ec, size_t) {
          self->waitingForRequest_ = false;
          self->onRead(ec);
        });
  }

  void onRead(const beast::error_code& ec) {
    if (shared_->stopped) {
      return;
    }
    if (ec == http::error::end_of_stream) {
      close();
      return;
    }
    if (ec == beast::error::timeout) {
      ++shared_->stats.idleTimeouts;
      shared_->log.debug(shared_->subject, "client {} sent no complete request within {}ms; closed",
                         client_, shared_->options.readTimeout.count());
      return;  // tcp_stream closed the socket
    }
    if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
      reject(431,
             fmt::format("request head longer than {} bytes\n", shared_->options.maxHeaderBytes));
      return;
    }
    if (ec == http::error::body_limit) {
      reject(413,
             fmt::format("request body longer than {} bytes\n", shared_->options.maxBodyBytes));
      return;
    }
    if (ec && ec.category() == http::make_error_code(http::error::bad_target).category()) {
      reject(400, fmt::format("malformed request: {}\n", ec.message()));
      return;
    }
    if (ec) {
      close();  // reset by the client or similar: nobody to answer
      return;
    }
    answer(parser_->get());
  }

  void answer(const http::request<http::string_body>& request) {
    const auto method = request.method();
    if (method != http::verb::get && method != http::verb::head) {
      auto response = make(405, "text/plain; charset=utf-8", "only GET and HEAD are allowed\n",
                           request.version(), false);
      response->set(http::field::allow, "GET, HEAD");
      send(std::move(response));
      return;
    }
    HttpResponse result;
    try {
      result = shared_->handler(std::string_view(request.target().data(), request.target().size()));
    } catch (const std::exception& e) {
      shared_->log.error(shared_->subject, "handler failed for {}: {}; answered 500",
                         std::string_view(request.target().data(), request.target().size()),
                         e.what());
      result = {500, "text/plain; charset=utf-8", "internal error\n"};
    }
    auto response = make(result.status, result.contentType, std::move(result.body),
                         request.version(), request.keep_alive());
    if (method == http::verb::head) {
      const auto length = response->body().size();
      response->body().clear();
      response->content_length(length);
    }
    send(std::move(response));
  }

  static std::unique_ptr<http::response<http::string_body>> make(unsigned status,
                                                                 std::string_view contentType,
                                                                 std::string body, unsigned version,
                                                                 bool keepAlive) {
    auto response = std::make_unique<http::response<http::string_body>>();
    response->version(version);
    response->result(status);
    response->set(http::field::server, "vipd");
    response->set(http::field::content_type, contentType);
    response->keep_alive(keepAlive);
    response->body() = std::move(body);
    response->prepare_payload();
    return response;
  }

  // Answers a request that could not be read whole, then closes: the rest of the stream cannot
  // be trusted to start at a request boundary.
  void reject(unsigned status, std::string body) {
    shared_->log.debug(shared_->subject, "client {}: {}; answered {} and closed", client_,
                       std::string_view(body).substr(0, body.size() - 1), status);
    send(make(status, "text/plain; charset=utf-8", std::move(body), 11, false));
  }

  void send(std::unique_ptr<http::response<http::string_body>> response) {
    response_ = std::move(response);
    stream_.expires_after(shared_->options.readTimeout);
    http::async_write(
        stream_, *response_,
        [self = shared_from_this()](const beast::error_code& ec, size_t) { self->onWritten(ec); });
  }

  void onWritten(const beast::error_code& ec) {
    if (shared_->stopped || ec) {
      return;
    }
    const bool keepAlive = response_->keep_alive();
    response_.reset();
    if (!keepAlive) {
      // Lingering close: closing with unread request bytes in the kernel makes it send RST, which
      // can destroy the response before the client reads it. Stop sending, then discard what the
      // client still sends until it closes (or the read timeout does).
      boost::system::error_code ignored;
      stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
      stream_.expires_after(shared_->options.readTimeout);
      drain();
      return;
    }
    readRequest();
  }

  void drain() {
    stream_.async_read_some(asio::buffer(discard_),
                            [self = shared_from_this()](const beast::error_code& ec, size_t) {
                              if (ec) {
                                self->close();
                              } else if (!self->shared_->stopped) {
                                self->drain();
                              }
                            });
  }

  beast::tcp_stream stream_;
  std::shared_ptr<Shared> shared_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::unique_ptr<http::response<http::string_body>> response_;
  std::string client_;
  std::array<char, 1024> discard_;
  bool waitingForRequest_ = false;
};

HttpServer::HttpServer(asio::io_context& io, const Logger& log, Handler handler,
                       HttpServerOptions options)
    : log_(log),
      shared_(std::make_shared<Shared>(
          Shared{std::move(handler), options, log, options.name + " listener", false, {}})),
      acceptor_(io),
      backoff_(io, log, options.name + " listener"),
      connections_(log, options.maxConnections) {}

HttpServer::~HttpServer() {
  shared_->stopped = true;
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  backoff_.cancel();
  connections_.closeAll();
}

tl::expected<void, std::string> HttpServer::listen(std::string_view address, uint16_t port) {
  lastListenInUse_ = false;
  auto fail = [&](const boost::system::error_code& ec) {
    lastListenInUse_ = ec == asio::error::address_in_use;
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    const bool v6 = address.find(':') != std::string_view::npos;
    return tl::unexpected(fmt::format("cannot listen for {} on {}{}{}:{}: {}",
                                      shared_->options.purpose, v6 ? "[" : "", address,
                                      v6 ? "]" : "", port, ec.message()));
  };
  boost::system::error_code ec;
  const auto ip = asio::ip::make_address(std::string(address), ec);
  if (ec) {
    return fail(ec);
  }
  const tcp::endpoint endpoint(ip, port);
  acceptor_.open(endpoint.protocol(), ec);
  if (ec) {
    return fail(ec);
  }
  // A restarted vipd must not wait out the previous process's TIME_WAIT connections.
  acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec && ip.is_v6()) {
    acceptor_.set_option(asio::ip::v6_only(true), ec);
  }
  if (!ec) {
    acceptor_.bind(endpoint, ec);
  }
  if (!ec) {
    acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  }
  if (ec) {
    return fail(ec);
  }
  shared_->subject = fmt::format("{} listener {}", shared_->options.name,
                                 endpointText(acceptor_.local_endpoint()));
  backoff_.setSubject(shared_->subject);
  log_.info(shared_->subject, "listening");
  acceptNext();
  return {};
}

void HttpServer::close() {
  if (!acceptor_.is_open()) {
    return;
  }
  log_.info(shared_->subject, "closing (another instance takes it over)");
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  backoff_.cancel();
  connections_.closeAll();
}

uint16_t HttpServer::port() const {
  boost::system::error_code ec;
  auto endpoint = acceptor_.local_endpoint(ec);
  return ec ? 0 : endpoint.port();
}

ListenerStats HttpServer::stats() const {
  ListenerStats out = shared_->stats;
  out.open = connections_.open();
  out.limit = connections_.limit();
  out.limitHits = connections_.hits();
  return out;
}

void HttpServer::setMaxConnections(size_t limit) { connections_.setLimit(limit); }

void HttpServer::acceptNext() {
  acceptor_.async_accept(
      [this, shared = shared_](const boost::system::error_code& ec, tcp::socket socket) {
        if (shared->stopped) {
          return;
        }
        if (ec) {
          ++shared->stats.acceptFailures;
          backoff_.failed(ec, [this, shared] {
            if (!shared->stopped) {
              acceptNext();
            }
          });
          return;
        }
        backoff_.succeeded();
        if (!connections_.admit(shared->subject, "connections")) {
          boost::system::error_code ignored;
          socket.close(ignored);
        } else {
          auto connection = std::make_shared<Connection>(std::move(socket), shared);
          connections_.add(connection);
          connection->start();
        }
        acceptNext();
      });
}

// An HTTP request-target split into its path and its query (without the '?').
std::pair<std::string_view, std::string_view> splitTarget(std::string_view target) {
  auto q = target.find('?');
  if (q == std::string_view::npos) {
    return {target, {}};
  }
  return {target.substr(0, q), target.substr(q + 1)};
}

// Whether the query holds `name` as a key (`verbose`, `verbose=1`, `a=b&verbose`).
bool hasQueryFlag(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    auto amp = query.find('&');
    auto item = query.substr(0, amp);
    if (item.substr(0, item.find('=')) == name) {
      return true;
    }
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
  }
  return false;
}

}  // namespace vipd::daemon
