// One health call, the exchange itself: resolve and connect to the target and, for the
// apiserver, the TLS handshake (verification against the context's CA, the server name as SNI
// and as the name the certificate must carry) and one HTTP GET whose answer apiserver_answer.h
// judges. Every call ends within its timeout with one CallResult. HealthChecker (the schedule,
// rise/fall and logging) starts one per interval.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "config/health_target.h"
#include "daemon/health/apiserver_answer.h"

namespace boost::asio::ssl {
class context;
}

namespace vipd::daemon {

namespace asio = boost::asio;

inline constexpr size_t kMaxHealthBodyBytes = 64 * 1024;
inline constexpr size_t kMaxHealthHeaderBytes = 16 * 1024;

// The stage a failed call failed at, for callers that count failures by kind (vipd probe's
// failures by reason). The detail string stays the operator's explanation.
enum class CallFailure {
  None,               // the call succeeded
  Resolve,            // the host name did not resolve
  ConnectionRefused,  // the TCP connect was refused (nothing listens there)
  Connect,            // the TCP connect failed otherwise (unreachable, reset, ...)
  Timeout,            // no outcome within the timeout, at whichever stage
  Tls,                // the TLS handshake failed (certificate, name, protocol)
  Transport,          // the connection failed or closed while sending or reading
  NotApiserver,       // an HTML page answered: a proxy or load balancer, not an apiserver
  HttpStatus,         // a non-200 answer that is not HTML
  Body,               // HTTP 200 with a body that is not the expected one
  Local,              // this process could not run the call (inconclusive)
};

struct CallResult {
  bool ok = false;
  std::string detail;  // one phrase for the operator: "HTTP 200 ok", "timed out after 1s (...)"
  std::chrono::microseconds latency{};
  // The call could not run at all (this process is out of file descriptors or memory): no
  // evidence about the target either way, so the gate does not count it (issue 17, item 2).
  bool inconclusive = false;
  CallFailure failure = CallFailure::None;
  // A successful call that keeps its connection open (ApiserverCall::start with heldClosed):
  // the call object stays alive, idle, until the connection ends or abandon().
  bool held = false;
  // TCP connects started: more than one when a connect went unanswered for a while and was
  // raced by a fresh one (a lost SYN or SYN-ACK; see apiserver_call.cc). 0 before connecting.
  unsigned connectAttempts = 0;
};

// Whether a failure is hard evidence that nothing apiserver-like serves the target (issue 20):
// the port refuses, the connection is reset or closed mid-answer, the TLS handshake fails, or
// something that is not an apiserver answers. Timeouts, unreachable addresses, name lookups and
// "not ready" answers are soft: a slow or lossy moment looks the same.
[[nodiscard]] bool isHardEvidence(CallFailure failure);

// Whether a socket error is this process's own shortage (EMFILE, ENFILE, ENOBUFS, ENOMEM) rather
// than anything the target did.
[[nodiscard]] bool isLocalResourceShortage(const boost::system::error_code& ec);

// "1s" for whole seconds, else "1500ms".
[[nodiscard]] std::string formatDuration(std::chrono::milliseconds d);

class ApiserverCall {
 public:
  using Done = std::function<void(const CallResult&)>;
  // Why a held connection ended: "the server closed the connection", "Connection reset by peer".
  using HeldClosed = std::function<void(const std::string& why)>;
  // The verdict on an HTTP answer (status, Content-Type, body); pure, no I/O.
  using Judge = std::function<AnswerVerdict(unsigned status, std::string_view contentType,
                                            std::string_view body)>;

  // Starts one call of `target` on `io`: a TCP connect when `tls` is null, else the apiserver
  // exchange with `tls` (from makeHealthTlsContext()) and target.serverName. `done` runs once, on
  // the io_context thread, within `timeout` (a timeout is a failed result naming the stage it
  // interrupted), unless abandon() comes first. The handlers in flight own the call; the
  // returned pointer only lets the caller abandon it.
  // With `heldClosed`, a successful call keeps its connection open (the request asks for
  // keep-alive; a server that answers "Connection: close" is not held) and reports
  // CallResult::held; `heldClosed` runs once when the server or the network ends that
  // connection, never after abandon(). An idle connection whose close is the first sign of a
  // dead apiserver: the kernel closes a killed process's connections at once.
  [[nodiscard]] static std::shared_ptr<ApiserverCall> start(asio::io_context& io,
                                                          config::HealthTarget target,
                                                          std::shared_ptr<asio::ssl::context> tls,
                                                          std::chrono::milliseconds timeout,
                                                          Done done,
                                                          HeldClosed heldClosed = nullptr);
  // The same exchange with another verdict on the answer than judgeApiserverAnswer's /readyz
  // "ok" (vipd probe's /version check), and `accept` as the Accept header.
  [[nodiscard]] static std::shared_ptr<ApiserverCall> start(asio::io_context& io,
                                                          config::HealthTarget target,
                                                          std::shared_ptr<asio::ssl::context> tls,
                                                          std::chrono::milliseconds timeout,
                                                          Judge judge, std::string accept,
                                                          Done done);

  virtual ~ApiserverCall() = default;

  // Ends the call (or its held connection) at once: the socket closes and neither `done` nor
  // `heldClosed` is called. The handlers still pending run later on the io_context and find the
  // call finished.
  virtual void abandon() = 0;
};

}  // namespace vipd::daemon
