// The Kubernetes API client: HTTPS requests and watches over Boost.Beast and OpenSSL
// (boost::asio::ssl), on the caller's io_context thread. The I/O edge of kube/: it turns answers
// into values (Response, or an Error of a kind the caller can act on) and decides nothing.
//
// Every exchange is bounded (issue 41, part 5: an API that is down, slow or hostile must never
// hang, spin or grow vipd):
// - time: a connect deadline, and a deadline for the whole request (connect to last body byte),
//   so a server that drips one byte a second still ends it; a watch instead has an idle deadline
//   (no byte for that long ends it) and a longest duration (a watch that never ends is ended);
// - memory: the header (16 KiB), a body (4 MiB, enough for a list of a few hundred Nodes), a
//   watch event (64 KiB, LineFramer); the read buffers are bounded too, and a Content-Length
//   beyond the limit is refused before any of the body is read.
// Errors are values (error.h) naming the server, the stage and the cure where there is one. No
// exception leaves this file's functions.
//
// One TLS connection per exchange ("Connection: close"): vipd writes at most about once a second
// and watches one object; a handshake per write is cheap beside a connection pool's states.
// Trust is the credentials' CA alone (the system store is never loaded); the server certificate
// must name credentials.serverName (a DNS name, checked with SNI, or an IP address).
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "kube/credentials.h"
#include "kube/error.h"
#include "kube/node_watch.h"

namespace vipd::kube {

struct Limits {
  std::chrono::milliseconds connectTimeout{5000};
  std::chrono::milliseconds requestTimeout{15000};  // whole exchange, connect included
  std::chrono::milliseconds watchIdleTimeout{120000};  // > the apiserver's bookmark interval
  std::chrono::milliseconds watchMaxDuration{(kWatchTimeoutSeconds + 60) * 1000};
  size_t maxHeaderBytes = 16 * 1024;
  size_t maxBodyBytes = 4 * 1024 * 1024;
  size_t maxEventBytes = kMaxWatchEventBytes;
};

enum class Method { Get, Post, Patch };

struct Request {
  Method method = Method::Get;
  std::string target;  // path and query, below the server's base path
  std::string body;
  std::string contentType;  // with a body: application/json, application/merge-patch+json
};

struct Response {
  unsigned status = 0;  // 2xx: other statuses are Errors of kind Http
  std::string body;
};

// Cancels what it was returned for; neither callback runs after cancel().
class Call {
 public:
  virtual ~Call() = default;
  virtual void cancel() = 0;
};

class Client {
 public:
  using Done = std::function<void(Result<Response>)>;
  using OnLine = std::function<void(std::string_view line)>;
  // A watch's end: a value when the server ended the stream cleanly (timeoutSeconds), else why.
  using Ended = std::function<void(Result<void>)>;

  // A client of the server `credentials` name. Config errors: a CA, certificate or key OpenSSL
  // cannot use. `readFile` reads the token file (TokenSource).
  [[nodiscard]] static Result<std::shared_ptr<Client>> create(boost::asio::io_context& io,
                                                              const Credentials& credentials,
                                                              Limits limits, ReadFile readFile);
  virtual ~Client() = default;

  // One request; `done` runs once on the io_context thread, within limits.requestTimeout,
  // unless the returned Call is cancelled first. A 401 makes the token be read again before the
  // next request (the caller retries).
  virtual std::shared_ptr<Call> request(Request request, Done done) = 0;
  // A watch (GET target, which carries watch=1): `onLine` for each event line as it arrives,
  // then `ended` once. A status other than 200 ends it at once with an Http error (410: relist).
  virtual std::shared_ptr<Call> watch(std::string target, OnLine onLine, Ended ended) = 0;

  virtual const Credentials& credentials() const = 0;
  virtual const Limits& limits() const = 0;
};

// Reads small local files (token, CA, kubeconfig) for credentials.h and Client: regular files
// only, never blocking, at most kMaxCredentialFileBytes (config/file_reader.h).
[[nodiscard]] ReadFile localFileReader();

// An Error from a non-2xx answer: "<METHOD> <url>: HTTP 429 Too Many Requests: <the Status
// object's message>" (both printable ASCII, the message cut at 256 bytes; a body that is not
// JSON adds nothing), with what to do for 401 and 403, httpStatus and Retry-After
// (delta-seconds only; an HTTP-date is ignored).
[[nodiscard]] Error httpError(std::string_view method, std::string_view target, unsigned status,
                              std::string_view reasonPhrase, std::string_view body,
                              std::string_view retryAfter);

}  // namespace vipd::kube
