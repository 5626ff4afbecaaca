// Which of a node's vipd instances speaks BGP (issue 5's two lives), and the handoff between
// them. With mode static-pod or daemonset, the speaker lock under handoff.dir decides; a daemonset
// instance takes over from a static-pod one (day 0 to day 2) or from the daemonset pod it
// replaces (a rollout with maxSurge, issue 29) through the control socket, with graceful restart
// so the node's path never leaves the fabric, and an instance on standby takes the node back
// when the lock comes free (the instance it yielded to went away: a failed rollout rolls back);
// a waiting instance fences a holder that is stopped and silent (holder_watch.h), then takes the
// node the same way. Owns: the role, the lock, the lock poll's timer and the handoff's counters.
// The protocol's values and checks are handoff_protocol.h's; the lock is host_lock.h's; what
// speaking and yielding do to the sessions is the HandoffHost's.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

#include "config/config.h"
#include "daemon/base/logger.h"
#include "daemon/control/server.h"
#include "daemon/lifecycle/holder_watch.h"
#include "daemon/lifecycle/host_lock.h"

namespace vipd::daemon {

// What the handoff may ask of the rest of the speaker; the Speaker implements it.
class HandoffHost {
 public:
  // Loads the withdrawn state, binds, opens the BGP listener and starts every session.
  // `restarting`: the sessions reopen as a graceful restart after a planned handoff.
  virtual tl::expected<void, std::string> startSpeaking(bool restarting, std::string_view why) = 0;
  // After startSpeaking failed half-way: closes whatever it opened.
  virtual void stopSpeaking() = 0;
  // Closes every session without a NOTIFICATION (the peers keep the path through graceful
  // restart), then BFD with AdminDown; the VIPs stay bound. `toSuccessor`: the taker is an
  // instance of this one's own mode (a DaemonSet rollout), which needs the listeners this one
  // holds (the node's control socket, metrics and probe ports): close them. `done` gets one JSON
  // object per peer: {"address", "gracefulRestart": whether that peer keeps the path}.
  virtual void yieldSessions(bool toSuccessor,
                             std::function<void(std::vector<nlohmann::json> peers)> done) = 0;
  virtual bool healthy() const = 0;
  virtual bool draining() const = 0;
  virtual bool shuttingDown() const = 0;

 protected:
  ~HandoffHost() = default;
};

class Handoff {
 public:
  // Only the Active instance speaks BGP and binds or unbinds addresses. In standalone mode vipd
  // is always Active. With mode static-pod or daemonset the speaker lock decides: a static-pod
  // instance that yielded (or found a daemonset instance speaking) is on Standby, ready to take
  // the node back; a daemonset instance that found a static-pod instance speaking is Contending
  // until it has taken over.
  enum class Role { Active, Standby, Contending };

  Handoff(asio::io_context& io, const config::Config& config, const Logger& log,
          HandoffHost& host);

  // Takes the speaker lock or waits for it; standalone mode starts speaking at once.
  [[nodiscard]] tl::expected<void, std::string> start();
  // Stops polling the lock (the process is exiting).
  void stop();

  // The control commands `handoff-check` and `handoff-yield`, from the other instance.
  void handleCheck(const ControlRequest& request, ControlServer::Reply reply);
  void handleYield(const ControlRequest& request, ControlServer::Reply reply);

  // A stopping daemonset instance (its pod's preStop hook: `vipctl withdraw --transient`) whose
  // node has a static-pod instance on standby hands the node back to it, as a rollout hands it
  // to a successor (graceful restart, the VIPs stay bound), instead of draining: deleting the
  // DaemonSet (`helm uninstall`) then leaves every node to its static pod with no route change,
  // where draining every node at once would empty the fabric's route. Returns false, having
  // done nothing, when there is no such standby (or this is not an active daemonset instance):
  // the caller drains as before. Otherwise `reply` gets the answer once the sessions are closed.
  bool handBack(ControlServer::Reply& reply);

  Role role() const { return role_; }
  bool active() const { return role_ == Role::Active; }
  std::string_view roleName() const;
  // One sentence: what an instance that is not speaking waits for.
  const std::string& waitingFor() const { return state_.waitingFor; }
  // The instance that holds the speaker lock, when it is not this one.
  std::optional<LockHolder> holder() const;
  // Why the instance holding the lock seems to have stopped speaking (holder_watch.h): no BGP
  // session Established for longer than the hold time. nullopt while it speaks, or when this
  // instance is the one speaking.
  std::optional<std::string> holderSilent() const;
  nlohmann::json status() const;

 private:
  tl::expected<void, std::string> becomeActive(bool restarting, std::string_view why);
  void waitForLock(Role role, std::string why);
  void scheduleLockPoll(std::chrono::milliseconds after);
  void pollLock();
  bool acquireLock();
  void watchHolder();
  void fenceSilentHolder(bool silentJustNow);
  void attemptTakeover(const LockHolder& holder);
  void onCheckAnswer(const LockHolder& holder, tl::expected<nlohmann::json, std::string> answer);
  void onYieldAnswer(tl::expected<nlohmann::json, std::string> answer);
  void refuse(std::string reason);
  std::optional<std::string> yieldRefusal(const ControlRequest& request) const;

  asio::io_context& io_;
  const config::Config& config_;
  const Logger& log_;
  HandoffHost& host_;
  Role role_ = Role::Active;
  std::optional<HostLock> lock_;
  asio::steady_timer lockTimer_;
  HolderSilence silence_;
  std::chrono::steady_clock::time_point nextHolderLook_{};
  struct State {
    std::string waitingFor;   // one sentence for status: what this instance waits for
    std::string lastRefusal;  // why the last takeover was refused; empty once one succeeded
    bool refused = false;
    bool inFlight = false;
    std::chrono::steady_clock::time_point nextAttempt{};
    std::chrono::steady_clock::time_point expectLockUntil{};  // after a yield was granted
    std::chrono::steady_clock::time_point noTakebackBefore{};  // after yielding
    uint64_t tookOver = 0;   // daemonset: took over from a static-pod or daemonset instance
    uint64_t yielded = 0;    // handed over
    std::string takingOverFrom;  // the mode of the instance this one is taking over from
    uint64_t tookBack = 0;   // took the lock after its holder went away
    uint64_t refusals = 0;
    uint64_t fenced = 0;          // stopped holders killed (holder_watch.h)
    std::string lastFenceRefusal;  // why the silent holder was not fenced, when it was not
    bool lastRestarting = false;  // the last takeover reopened the sessions as a graceful restart
    std::vector<nlohmann::json> lastYieldPeers;
  } state_;
};

}  // namespace vipd::daemon
