// A minimal HTTP/1.1 server for /metrics and the health endpoints (/healthz, /readyz).
// It runs on the caller's io_context (no threads of its own) and routes nothing itself: every
// GET or HEAD request's target goes to the Handler, whose answer is sent back.
//
// Untrusted clients are bounded: the request head and body have size limits (431 / 413, then
// close), malformed requests get 400 and close, other methods get 405, each connection must send a
// whole request within the read timeout (also the idle timeout between keep-alive requests) and
// take the response within the same timeout, and at most maxConnections connections are served at
// once: at the cap the one idle the longest is closed to admit the new one (a throttled warning
// and a counter say so), and accept() failures back off (AcceptBackoff) instead of spinning.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <tl/expected.hpp>

#include "daemon/base/accept_backoff.h"
#include "daemon/base/client_cap.h"
#include "daemon/base/listener_stats.h"
#include "daemon/base/logger.h"
#include "daemon/base/throttled_count.h"

namespace vipd::daemon {

namespace asio = boost::asio;

struct HttpResponse {
  unsigned status = 200;
  std::string contentType = "text/plain; charset=utf-8";
  std::string body;
};

struct HttpServerOptions {
  // Names the listener in logs ("metrics listener 127.0.0.1:9472") and in its status entry.
  std::string name = "metrics";
  // What it serves, for the bind error ("cannot listen for metrics on ...").
  std::string purpose = "metrics";
  // Time a connection has to deliver one whole request (and, separately, to take one response).
  std::chrono::milliseconds readTimeout{std::chrono::seconds(5)};
  size_t maxHeaderBytes = 8 * 1024;
  size_t maxBodyBytes = 1024;  // GET and HEAD carry no body worth reading
  size_t maxConnections = 32;
};

class HttpServer {
 public:
  // Answers one GET or HEAD request. `target` is the request-target as sent (path and query,
  // e.g. "/metrics" or "/readyz?verbose"). Runs on the io_context thread; must not block. An
  // exception thrown here becomes a 500 response.
  using Handler = std::function<HttpResponse(std::string_view target)>;

  // `log` must outlive the server.
  HttpServer(asio::io_context& io, const Logger& log, Handler handler,
             HttpServerOptions options = {});
  // Closes the listener and every open connection; the handler is not called afterwards.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts accepting. `address` is a literal IPv4 or IPv6 address; port 0 picks a free
  // port (see port()). The error names the address:port and the reason, e.g.
  // "cannot listen for metrics on 127.0.0.1:9472: Address already in use" (options.purpose).
  [[nodiscard]] tl::expected<void, std::string> listen(std::string_view address, uint16_t port);

  // The bound port once listen() succeeded, 0 before.
  [[nodiscard]] uint16_t port() const;
  bool listening() const { return acceptor_.is_open(); }
  // Whether the last listen() failed because the address is in use (EADDRINUSE): a daemonset
  // instance replacing another one takes the port over once that one has yielded (issue 29).
  bool lastListenInUse() const { return lastListenInUse_; }
  // Stops listening and closes every connection, as if never listening; listen() may be called
  // again. A yielding daemonset instance frees the port for its successor this way.
  void close();

  // Lowers (or raises) the connection cap, e.g. to fit the descriptor limit; at least 1.
  void setMaxConnections(size_t limit);
  ListenerStats stats() const;

  // Exposed for the implementation only.
  struct Shared;
  class Connection;

 private:
  void acceptNext();

  const Logger& log_;
  std::shared_ptr<Shared> shared_;
  asio::ip::tcp::acceptor acceptor_;
  AcceptBackoff backoff_;
  ClientCap<Connection> connections_;
  bool lastListenInUse_ = false;
};

// An HTTP request-target split into its path and its query (without the '?').
std::pair<std::string_view, std::string_view> splitTarget(std::string_view target);
// Whether the query holds `name` as a key (`verbose`, `verbose=1`, `a=b&verbose`).
bool hasQueryFlag(std::string_view query, std::string_view name);

}  // namespace vipd::daemon
