// Speaker: the two lives of issue 5. With mode static-pod or daemonset, the speaker lock under
// handoff.dir decides which instance on the node speaks BGP; a daemonset instance takes over from
// a static-pod one through the control socket, with graceful restart so the node's path never
// leaves the fabric, and a static-pod instance on standby takes the node back when the lock comes
// free. The protocol's values and checks are in handoff_protocol.h; the lock in host_lock.h.
#include <unistd.h>

#include <fmt/format.h>

#include "daemon/control/control_client.h"
#include "daemon/speaker.h"

namespace vipd::daemon {
namespace {

// A field of the other instance's answer, or `fallback` when it is absent or of another type:
// nlohmann::json::value() throws on a wrong type, and nothing catches on the io_context thread.
template <typename T>
T field(const nlohmann::json& answer, const char* key, T fallback) {
  if (!answer.is_object()) {
    return fallback;
  }
  auto it = answer.find(key);
  if (it == answer.end()) {
    return fallback;
  }
  if constexpr (std::is_same_v<T, nlohmann::json>) {
    return *it;
  } else if constexpr (std::is_same_v<T, bool>) {
    return it->is_boolean() ? it->template get<bool>() : fallback;
  } else {
    return it->is_string() ? it->template get<std::string>() : fallback;
  }
}

using namespace std::chrono_literals;

// How often an instance that is not speaking tries the lock. flock is one cheap system call.
constexpr auto kLockPoll = 100ms;
// Right after a yield was granted the lock should be ours within milliseconds.
constexpr auto kExpectLockPoll = 10ms;
// How long after a granted yield the taker keeps polling fast; beyond it the lock is late.
constexpr auto kExpectLockFor = 5s;
// A yielded instance leaves the lock to the taker this long before it may take the node back
// (the taker died between the answer and the lock). Shorter than any allowed restart time, so the
// peers still hold the path when it does.
constexpr auto kTakebackDelay = 700ms;
// A refused takeover is retried this often (the fix usually restarts the pod anyway).
constexpr auto kRefusedRetry = 30s;
constexpr auto kHandoffRequestTimeout = 5s;

}  // namespace

std::string_view Speaker::roleName() const {
  switch (role_) {
    case Role::Active:
      return "active";
    case Role::Standby:
      return "standby";
    case Role::Contending:
      return "contending";
  }
  return "unknown";
}

tl::expected<void, std::string> Speaker::startRole() {
  if (config_.mode == config::Mode::Standalone) {
    return becomeActive(false, "standalone");
  }
  auto lock = HostLock::open(config_.handoff.dir);
  if (!lock) {
    return tl::unexpected(lock.error());
  }
  lock_.emplace(std::move(*lock));
  auto acquired = lock_->tryAcquire(
      thisProcess(std::string(config::modeName(config_.mode)), config_.control.socket));
  if (!acquired) {
    return tl::unexpected(acquired.error());
  }
  if (*acquired) {
    auto marker = lock_->takeYieldMarker();
    bool restarting = marker && marker->routerId == config_.routerId.toString() &&
                      bootTimeMs() - marker->yieldedAtBootMs < marker->restartTimeMs;
    return becomeActive(restarting, restarting ? "the previous instance yielded moments ago"
                                               : "no other instance holds the speaker lock");
  }
  auto holder = lock_->holder();
  bool contend = config_.mode == config::Mode::DaemonSet &&
                 (!holder || holder->mode == config::modeName(config::Mode::StaticPod));
  waitForLock(contend ? Role::Contending : Role::Standby,
              holder ? fmt::format("the {} instance ({}) speaks BGP on this node",
                                   holder->mode, describe(*holder))
                     : std::string("another instance holds the speaker lock"));
  return {};
}

void Speaker::waitForLock(Role role, std::string why) {
  role_ = role;
  handoff_.state = role == Role::Contending
                       ? fmt::format("{}; taking over once the local health gate is open", why)
                       : fmt::format("on standby: {}; taking the node back if it goes away", why);
  log_.info("handoff", "{}", handoff_.state);
  scheduleLockPoll(kLockPoll);
}

void Speaker::scheduleLockPoll(std::chrono::milliseconds after) {
  lockTimer_.expires_after(after);
  lockTimer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec && !shuttingDown_ && role_ != Role::Active) {
      pollLock();
    }
  });
}

bool Speaker::acquireLock() {
  auto acquired = lock_->tryAcquire(
      thisProcess(std::string(config::modeName(config_.mode)), config_.control.socket));
  if (!acquired) {
    log_.error("handoff", "{}", acquired.error());
    return false;
  }
  if (!*acquired) {
    return false;
  }
  auto marker = lock_->takeYieldMarker();
  bool restarting = marker && marker->routerId == config_.routerId.toString() &&
                    bootTimeMs() - marker->yieldedAtBootMs < marker->restartTimeMs;
  bool granted = std::chrono::steady_clock::now() < handoff_.expectLockUntil;
  std::string why;
  if (granted) {
    ++handoff_.tookOver;
    why = "took over from the static-pod instance";
  } else {
    ++handoff_.tookBack;
    if (restarting) {
      why = "took the node back: the instance it yielded to never took the lock";
    } else if (role_ == Role::Contending) {
      why = "the static-pod instance that held the speaker lock is gone";
    } else {
      why = "took the node back: the instance that held the speaker lock is gone";
    }
  }
  handoff_.expectLockUntil = {};
  if (auto active = becomeActive(restarting, why); !active) {
    // Speaking with half a state would be worse than not speaking: say so and stay silent.
    log_.error("handoff", "cannot speak after taking the lock: {}; releasing it", active.error());
    for (auto& peer : peers_) {
      peer->stop("vipd: cannot start speaking", nullptr);
    }
    bfd_.stop(nullptr);
    lock_->release();
    waitForLock(Role::Standby, fmt::format("failed to start: {}", active.error()));
    return false;
  }
  return true;
}

void Speaker::pollLock() {
  auto now = std::chrono::steady_clock::now();
  bool expecting = now < handoff_.expectLockUntil;
  if (now >= handoff_.noTakebackBefore && acquireLock()) {
    return;
  }
  if (role_ == Role::Contending && !expecting && !handoff_.inFlight &&
      now >= handoff_.nextAttempt) {
    auto holder = lock_->holder();
    if (holder && holder->mode == config::modeName(config::Mode::StaticPod)) {
      if (health_.healthy()) {
        attemptTakeover(*holder);
      } else {
        handoff_.state = "waiting for the local health gate to open before taking over";
      }
    }
  }
  scheduleLockPoll(expecting ? std::chrono::milliseconds(kExpectLockPoll)
                             : std::chrono::milliseconds(kLockPoll));
}

void Speaker::attemptTakeover(const LockHolder& holder) {
  handoff_.inFlight = true;
  handoff_.state = fmt::format("asking the static-pod instance ({}, {}) to hand over",
                               describe(holder), holder.controlSocket);
  auto mine = identityOf(config_);
  auto refuse = [this](std::string reason) {
    handoff_.inFlight = false;
    handoff_.nextAttempt = std::chrono::steady_clock::now() + kRefusedRetry;
    ++handoff_.refusals;
    if (!handoff_.refused || handoff_.lastRefusal != reason) {
      log_.error("handoff",
                 "not taking over: {}; the static-pod instance keeps speaking; retrying every "
                 "{}s",
                 reason, std::chrono::duration_cast<std::chrono::seconds>(kRefusedRetry).count());
    }
    handoff_.refused = true;
    handoff_.lastRefusal = std::move(reason);
    handoff_.state = fmt::format("takeover refused: {}", handoff_.lastRefusal);
  };
  // Step 1 changes nothing on either side: both check the prerequisites first.
  sendControlRequest(
      io_, holder.controlSocket, {{"command", "handoff-check"}, {"identity", toJson(mine)}},
      kHandoffRequestTimeout,
      [this, holder, mine, refuse](tl::expected<nlohmann::json, std::string> answer) {
        if (shuttingDown_ || role_ != Role::Contending) {
          handoff_.inFlight = false;
          return;
        }
        if (!answer) {
          handoff_.inFlight = false;
          handoff_.nextAttempt = std::chrono::steady_clock::now() + 1s;
          handoff_.state = fmt::format("cannot reach the static-pod instance: {}", answer.error());
          log_.warn("handoff", "{}; retrying in 1s", handoff_.state);
          return;
        }
        if (answer->contains("error")) {
          return refuse(fmt::format("the static-pod instance answered: {}",
                                    (*answer)["error"].dump()));
        }
        auto theirs = identityFromJson(field(*answer, "identity", nlohmann::json()));
        if (!theirs) {
          return refuse(theirs.error());
        }
        if (auto refusal = handoffRefusal(*theirs, mine)) {
          return refuse(*refusal);
        }
        if (!field(*answer, "ok", false)) {
          return refuse(field(*answer, "refusal", std::string("refused without a reason")));
        }
        // Step 2: the holder checks again, closes its sessions without a NOTIFICATION, releases
        // the lock and answers.
        sendControlRequest(
            io_, holder.controlSocket, {{"command", "handoff-yield"}, {"identity", toJson(mine)}},
            kHandoffRequestTimeout,
            [this, refuse](tl::expected<nlohmann::json, std::string> answer) {
              handoff_.inFlight = false;
              if (shuttingDown_ || role_ != Role::Contending) {
                return;
              }
              if (!answer) {
                handoff_.nextAttempt = std::chrono::steady_clock::now() + 1s;
                handoff_.state = fmt::format("handoff interrupted: {}", answer.error());
                log_.warn("handoff", "{}; polling the lock and retrying", handoff_.state);
                return;
              }
              if (!field(*answer, "ok", false)) {
                return refuse(field(*answer, "refusal",
                                    field(*answer, "error",
                                          std::string("refused without a reason"))));
              }
              handoff_.refused = false;
              handoff_.lastRefusal.clear();
              handoff_.expectLockUntil = std::chrono::steady_clock::now() + kExpectLockFor;
              handoff_.state = "the static-pod instance yielded; taking the speaker lock";
              log_.info("handoff", "the static-pod instance yielded ({}); taking the lock",
                        field(*answer, "peers", nlohmann::json::array()).dump());
              lockTimer_.cancel();
              pollLock();
            });
      });
}

void Speaker::handleHandoffCheck(const nlohmann::json& request, ControlServer::Reply reply) {
  auto mine = identityOf(config_);
  auto theirs = identityFromJson(request.value("identity", nlohmann::json()));
  nlohmann::json answer{{"identity", toJson(mine)}};
  std::optional<std::string> refusal;
  if (!theirs) {
    refusal = theirs.error();
  } else if (role_ != Role::Active) {
    refusal = fmt::format("this instance is {}, not speaking", roleName());
  } else if (drain_ || shuttingDown_) {
    refusal = "this instance is draining";
  } else {
    refusal = handoffRefusal(mine, *theirs);
  }
  answer["ok"] = !refusal;
  if (refusal) {
    answer["refusal"] = *refusal;
    log_.warn("handoff", "refused a takeover request: {}", *refusal);
  }
  reply(answer);
}

void Speaker::handleHandoffYield(const nlohmann::json& request, ControlServer::Reply reply) {
  auto mine = identityOf(config_);
  auto theirs = identityFromJson(request.value("identity", nlohmann::json()));
  std::optional<std::string> refusal;
  if (!theirs) {
    refusal = theirs.error();
  } else if (role_ != Role::Active || !lock_ || !lock_->held()) {
    refusal = fmt::format("this instance is {}, not speaking", roleName());
  } else if (drain_ || shuttingDown_) {
    refusal = "this instance is draining";
  } else {
    refusal = handoffRefusal(mine, *theirs);
  }
  if (refusal) {
    log_.warn("handoff", "refused to yield: {}", *refusal);
    reply({{"ok", false}, {"refusal", *refusal}, {"identity", toJson(mine)}});
    return;
  }
  auto marked = lock_->writeYieldMarker({config_.routerId.toString(), bootTimeMs(),
                                         config_.handoff.restartTime.count()});
  if (!marked) {
    reply({{"ok", false}, {"refusal", marked.error()}, {"identity", toJson(mine)}});
    return;
  }
  log_.info("handoff", "yielding to the daemonset instance: closing every session without a "
            "NOTIFICATION (graceful restart, restart time {}s); the VIPs stay bound",
            std::chrono::duration_cast<std::chrono::seconds>(config_.handoff.restartTime).count());
  // From here nothing may announce or withdraw: the sessions close as they are.
  role_ = Role::Standby;
  rebindTimer_.cancel();
  if (listener_) {
    boost::system::error_code ignored;
    listener_->close(ignored);
    listener_.reset();
  }
  auto remaining = std::make_shared<size_t>(peers_.size());
  auto results = std::make_shared<std::vector<nlohmann::json>>();
  auto finish = [this, reply, results]() {
    lock_->release();
    ++handoff_.yielded;
    handoff_.lastYieldPeers = *results;
    handoff_.noTakebackBefore = std::chrono::steady_clock::now() + kTakebackDelay;
    waitForLock(Role::Standby, "yielded to the daemonset instance");
    reply({{"ok", true}, {"identity", toJson(identityOf(config_))}, {"peers", *results}});
  };
  if (peers_.empty()) {
    finish();
    return;
  }
  deferredStartTimer_.cancel();
  // The sessions close first (without a NOTIFICATION, so graceful restart keeps our path), then
  // BFD says AdminDown (RFC 5880 6.8.16) so a peer that follows RFC 5882 3.2 does not take the
  // handover for a failure, and the BFD ports are free before the lock is: the daemonset
  // instance binds them as soon as it holds the lock. In this order the session state that
  // decides "the peer keeps our path" is read before any BFD change can close it.
  for (auto& peer : peers_) {
    std::string address = peer->address().toString();
    peer->yield([remaining, results, finish, address, this](bool peerKeepsRoutes) {
      results->push_back({{"address", address}, {"gracefulRestart", peerKeepsRoutes}});
      if (!peerKeepsRoutes) {
        log_.warn("peer " + address,
                  "no graceful restart with this peer: it drops this node's path until the "
                  "daemonset instance announces it again (the other nodes carry the traffic)");
      }
      if (--*remaining == 0) {
        bfd_.stop(finish);
      }
    });
  }
}

nlohmann::json Speaker::handoffStatus() const {
  nlohmann::json h{{"role", roleName()},
                   {"state", role_ == Role::Active ? std::string("speaking") : handoff_.state},
                   {"refused", handoff_.refused},
                   {"lastRefusal", handoff_.lastRefusal},
                   {"tookOver", handoff_.tookOver},
                   {"yielded", handoff_.yielded},
                   {"tookBack", handoff_.tookBack},
                   {"refusals", handoff_.refusals},
                   {"gracefulRestart", handoff_.lastRestarting},
                   {"lastYieldPeers", handoff_.lastYieldPeers}};
  if (lock_) {
    h["dir"] = lock_->dir();
    if (auto holder = lock_->holder(); holder && role_ != Role::Active) {
      h["holder"] = {{"pid", holder->pid}, {"pidNamespace", holder->pidNamespace},
                     {"mode", holder->mode}, {"controlSocket", holder->controlSocket}};
    }
  }
  return h;
}

}  // namespace vipd::daemon
