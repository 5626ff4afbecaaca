// The local health check that gates announcements (issue 4): checks the local apiserver (or a TCP
// port) every `interval`, feeds the outcomes to a HealthGate and tells its owner when the gate
// flips. Runs on the io_context thread and never blocks it; every check is bounded by `timeout`.
// This file owns the schedule, the gate, the log lines and the status; one check's exchange is
// apiserver_call.h, the URL and server name health_target.h, the TLS context tls.h.
//
// type apiserver: an HTTPS GET of `url`, connecting to the URL's host and port. The server
// certificate must chain to `caFile` (and only to it: the system trust store is not used) and
// carry the server name as a subjectAltName DNS entry (the subject's CN is not consulted); the
// server name is also sent as SNI. It is `serverName` when set, else the URL's host when that is
// a DNS name, else `kubernetes` (config::kDefaultApiserverServerName): a stock kubeadm, k3s or
// RKE2 apiserver certificate names no loopback address, but always that. `certFile`/`keyFile`
// are presented when the server asks for a client certificate. A check succeeds only on HTTP 200
// with the body `ok` (one trailing newline allowed): a proxy's error page, any other body, a
// certificate from another CA or without the server name, a refused connection and a timeout all
// fail. Response bodies are capped at kMaxHealthBodyBytes.
// type tcp: a check succeeds when a connection to `address` (host:port) is established.
// type none: healthy at once; never checks.
//
// Reacting in milliseconds (issue 20): a failure with hard evidence (isHardEvidence: refused,
// reset, TLS failure, not an apiserver) is followed by the next check at once instead of after
// `interval`, and hardFall of them in a row close the gate. The last successful check's
// connection is held open until the next one succeeds; when it closes (a killed apiserver's
// connections close at once) a check starts at once, at most once per interval so that a server
// that closes idle connections quickly cannot make the checker spin. Timeouts stay soft: a slow
// or lossy apiserver is withdrawn no sooner than `fall` checks allow.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tl/expected.hpp>

#include "config/config.h"
#include "daemon/base/logger.h"
#include "daemon/base/throttled_count.h"
#include "daemon/health/gate.h"
#include "daemon/health/apiserver_call.h"
#include "config/health_target.h"

namespace boost::asio::ssl {
class context;
}

namespace vipd::daemon {

namespace asio = boost::asio;

class HealthChecker {
 public:
  // Called on the io_context thread each time healthy() flips (and once from start() for type
  // none), with the check that flipped it. The owner announces or withdraws in it.
  using OnChange = std::function<void(bool healthy, const CallResult& last)>;

  // `log` must outlive the checker. Nothing happens until start().
  HealthChecker(asio::io_context& io, config::Health health, const Logger& log, OnChange onChange);
  // Abandons a check in flight: its handlers may still run on the io_context afterwards but no
  // longer touch the checker.
  ~HealthChecker();
  HealthChecker(const HealthChecker&) = delete;
  HealthChecker& operator=(const HealthChecker&) = delete;

  // Checks the target and loads the CA, client certificate and key; an error is one sentence
  // naming the file or setting to fix. Then checks at once and every `interval` after. For type
  // none, calls onChange(true, ...) before returning and never checks. Call once.
  [[nodiscard]] tl::expected<void, std::string> start();
  // Stops checking and abandons a check in flight; onChange is not called again. healthy() keeps
  // its last value.
  void stop();
  // A reload changed health.* (issue 29): checks the new target, CA, certificate and key first
  // (an error, one sentence as start() gives, changes nothing), then abandons the check in flight
  // and the held connection and checks with the new settings at once. The gate keeps its state
  // (HealthGate's carrying constructor): a healthy apiserver is never withdrawn by a reload. A
  // change to or from type none takes effect at once: none is healthy. onChange is not called
  // for the change this call makes; the owner compares healthy() before and after. Counters are
  // kept. Only on a started checker.
  [[nodiscard]] tl::expected<void, std::string> reconfigure(config::Health next);
  // What start() and reconfigure() check first (the target, CA, certificate and key), alone.
  [[nodiscard]] static tl::expected<void, std::string> check(const config::Health& health);

  bool healthy() const;
  // The last check's outcome (for type none, a fixed "health check disabled" success).
  const CallResult& last() const;
  // {"type","target","healthy","consecutiveSuccesses","consecutiveFailures",
  //  "consecutiveHardFailures","lastResult","lastDetail","lastLatencyMs","checks","failures",
  //  "hardFailures","inconclusive","heldConnection","heldConnectionCloses","connectResends"},
  // and for type apiserver "serverName" (the name the certificate must carry; empty before
  // start()); lastResult is "success", "failure", or "pending" before the first check has finished.
  nlohmann::json status() const;

 private:
  void checkNow();
  void scheduleNext();
  // The next check at `when` (now: at once) instead of one interval after the last start.
  void scheduleAt(std::chrono::steady_clock::time_point when);
  void onCallDone(const CallResult& result);
  void onHeldConnectionClosed(const std::string& why);
  // The target and, for type apiserver, the TLS context of `health`; an error names what to fix.
  static tl::expected<void, std::string> prepare(const config::Health& health,
                                                 config::HealthTarget& target,
                                                 std::shared_ptr<asio::ssl::context>& tls);
  // "probing X every ... (timeout ..., rise ..., fall ..., hardFall ...)": what start() and
  // reconfigure() log, `then` saying what follows.
  void logProbing(std::string_view then) const;
  // The log lines for one recorded outcome.
  void logOutcome(const CallResult& result, Evidence evidence, bool flipped);
  // "apiserver https://127.0.0.1:6443/readyz (server name kubernetes)"; the server name only
  // when it is not the URL's host.
  std::string describe() const;

  asio::io_context& io_;
  config::Health health_;
  const Logger& log_;
  OnChange onChange_;
  HealthGate gate_;
  config::HealthTarget target_;
  asio::steady_timer intervalTimer_;
  std::shared_ptr<asio::ssl::context> tls_;  // shared with checks in flight
  std::shared_ptr<ApiserverCall> call_;       // the check in flight, if any
  std::shared_ptr<ApiserverCall> held_;        // the last successful check's open connection
  std::chrono::steady_clock::time_point callStarted_{};
  // When a held connection's close last started a check: at most one such check per interval.
  std::optional<std::chrono::steady_clock::time_point> lastCloseCheck_;
  uint64_t heldCloses_ = 0;
  // Connects that went unanswered and were raced by a fresh one (CallResult::connectAttempts):
  // a lossy path to the apiserver that the checks rode out.
  uint64_t connectResends_ = 0;
  CallResult last_;
  bool haveResult_ = false;
  std::string lastFailureLogged_;
  ThrottledCount inconclusiveWarnings_;
  uint64_t inconclusive_ = 0;  // checks that could not run (CallResult::inconclusive)
  bool started_ = false;
  bool stopped_ = false;
  // Expires with the checker; handlers holding a weak_ptr to it know whether `this` is alive.
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace vipd::daemon
