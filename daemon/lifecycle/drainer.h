// The drain as it runs (SIGTERM, `vipctl withdraw` and the Node's request through the Kubernetes
// API), `vipctl announce`, and the node's withdrawn state. Owns: the drain in progress and its
// timer, the last drain's result, and the two withdrawn states: vipctl's (in memory and in
// <control.stateDir>/withdrawn.json) and the Node's (in memory only: the Node's annotation or
// taint is its record, read again whenever vipd starts). The order of the steps is
// DrainSequence's; what each step does to the sessions and the addresses is the DrainHost's.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

#include "config/config.h"
#include "daemon/base/logger.h"
#include "daemon/control/server.h"
#include "daemon/lifecycle/drain_sequence.h"
#include "daemon/lifecycle/withdrawn_state.h"

namespace vipd::daemon {

// What a drain may do to the rest of the speaker; the Speaker implements it.
class DrainHost {
 public:
  // Marks (or unmarks) every announcement with GRACEFUL_SHUTDOWN (RFC 8326).
  virtual void setGracefulShutdown(bool on) = 0;
  // Sends every peer what should be announced now (the drain's state is part of that).
  virtual void pushAnnouncements() = 0;
  // One line per Established peer whose socket still holds unacknowledged bytes; empty when
  // every peer has acknowledged everything sent.
  virtual std::vector<std::string> unacknowledgedPeers() const = 0;
  // Removes the addresses vipd added.
  virtual void unbindOwned() = 0;
  // Binds every VIP again and announces what may be announced (`vipctl announce`).
  virtual void bindAndAnnounce() = 0;
  virtual bool healthy() const = 0;
  virtual size_t announceableCount() const = 0;

 protected:
  ~DrainHost() = default;
};

class Drainer {
 public:
  // Called once the peers acknowledged the withdraw, or the wait for them timed out.
  using Settled = std::function<void(bool acknowledged, std::string detail)>;
  // The withdraw guard, checked again when the withdrawal would take effect (the end of the
  // GRACEFUL_SHUTDOWN phase, issue 40): the refusal, or nullopt to go on.
  using Guard = std::function<std::optional<std::string>()>;

  Drainer(asio::io_context& io, const config::Drain& settings, std::string stateDir,
          const Logger& log, DrainHost& host);

  // Reads withdrawn.json again (on every takeover: the other instance may have been withdrawn
  // meanwhile). A file that cannot be read or is malformed fails safe: the node is withdrawn
  // (its reason names the file and the problem, stateError() says so, the error is logged) until
  // `vipctl announce` clears the file. Guessing "not withdrawn" could announce a drained node.
  void loadWithdrawn();

  // Runs the drain's steps; `onFinished` after the last one. `ackTimeout` overrides drain.timeout.
  // `guard` (null: not guarded) is checked again at the end of the GRACEFUL_SHUTDOWN phase;
  // `onRefused` is called with its refusal, and the drain ends there (nothing withdrawn). `api`:
  // the drain is the Node's request (a refusal clears the Node's withdrawal, not vipctl's).
  void start(std::string why, std::optional<std::chrono::milliseconds> ackTimeout,
             Settled onSettled, std::function<void()> onFinished, Guard guard = nullptr,
             std::function<void(std::string)> onRefused = nullptr, bool api = false);
  // Runs `then` once the drain in progress has finished (SIGTERM during `vipctl withdraw`); the
  // drain is no longer guarded: the node is leaving anyway.
  void thenRun(std::function<void()> then);

  // The control commands `withdraw` and `announce`. `guard` (null with --force): checked again
  // at the end of the GRACEFUL_SHUTDOWN phase; a refusal then ends the drain, clears the
  // withdrawn state, keeps the node announcing, and answers (with --wait) as a refusal at the
  // request would: {"error", "refused": "guard"}.
  void handleWithdraw(const ControlRequest& request, ControlServer::Reply reply,
                      Guard guard = nullptr);
  // `vipctl announce` clears vipctl's withdrawn state; while the Node asks for a withdrawal the
  // node stays withdrawn, and the answer says so (refused "kubernetes").
  void handleAnnounce(ControlServer::Reply reply);

  // The Node asks for a withdrawal (issue 41: the annotation vipd.io/withdraw or the taint
  // node.kubernetes.io/out-of-service; `reason` says which): the drain `vipctl withdraw` runs,
  // guarded by `guard` at the end of the GRACEFUL_SHUTDOWN phase, and never persisted. A node
  // vipctl already withdrew is marked at once, without a drain. On a refusal at the end of the
  // phase the Node's withdrawal is dropped and `onRefused` says why (the caller asks again once
  // the fabric allows). Not while a drain runs (the caller asks again when it has finished).
  void apiWithdraw(std::string reason, Guard guard, std::function<void(std::string)> onRefused);
  // The Node no longer asks: its withdrawal is cleared and, unless vipctl's holds, the node binds
  // and announces again. False (nothing done) while a drain runs: the caller asks again.
  bool apiAnnounce();

  bool draining() const { return drain_.has_value(); }
  // The drain in progress has reached its withdraw step: nothing may be announced any more.
  bool withdrawSent() const { return drain_ && drain_->withdrawSent; }
  // The node is withdrawn: vipctl's state, or failing that the Node's.
  std::optional<Withdrawn> withdrawn() const { return withdrawn_ ? withdrawn_ : apiWithdrawn_; }
  const std::optional<Withdrawn>& localWithdrawn() const { return withdrawn_; }
  const std::optional<Withdrawn>& apiWithdrawn() const { return apiWithdrawn_; }
  // Why withdrawn.json could not be used, when that is why the node is withdrawn.
  const std::optional<std::string>& stateError() const { return stateError_; }
  // {"active", and when withdrawn "reason", "since", "persisted", "sources" (["vipctl"],
  // ["kubernetes"] or both), "kubernetes" {"reason", "since"} when the Node asks, and
  // "stateFileError" when the file could not be used} for the status document.
  nlohmann::json withdrawnStatus() const;
  const std::string& lastResult() const { return lastResult_; }

 private:
  void run(std::vector<DrainAction> actions);
  void settle(bool acknowledged);
  void finish();
  void refuse(const std::string& refusal);

  const config::Drain& settings_;
  const Logger& log_;
  DrainHost& host_;
  WithdrawnState state_;
  std::optional<Withdrawn> withdrawn_;
  bool withdrawnPersisted_ = true;  // false after `vipctl withdraw --transient`
  std::optional<std::string> stateError_;
  std::optional<Withdrawn> apiWithdrawn_;

  struct Drain {
    DrainSequence sequence;
    bool withdrawSent = false;
    std::chrono::steady_clock::time_point withdrawSentAt;
    Settled onSettled;
    std::function<void()> onFinished;
    Guard guard;                                 // null: not guarded
    std::function<void(std::string)> onRefused;  // the guard refused at the end of GS
    std::string refusal;                         // what it said
    bool api = false;                            // the Node's withdrawal, not vipctl's
  };
  std::optional<Drain> drain_;
  asio::steady_timer timer_;
  std::string lastResult_;
};

}  // namespace vipd::daemon
