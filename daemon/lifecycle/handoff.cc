#include "daemon/lifecycle/handoff.h"

#include <fmt/format.h>

#include "daemon/control/client.h"
#include "daemon/control/request.h"
#include "daemon/lifecycle/handoff_protocol.h"
#include "daemon/lifecycle/instance_lock.h"

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

// Whether the lock's previous holder yielded to this node moments ago: then the peers still hold
// its path and the sessions reopen as a graceful restart.
bool yieldedMomentsAgo(HostLock& lock, const config::Config& config, const Logger& log) {
  auto marker = lock.takeYieldMarker();
  if (!marker) {
    // Without a usable marker the peers are told to drop any stale path: safe, if not seamless.
    log.error("handoff", "{}; ignoring it: the sessions open as a fresh start, not as a graceful "
              "restart", marker.error());
    return false;
  }
  return *marker && (*marker)->routerId == config.routerId.toString() &&
         bootTimeMs() - (*marker)->yieldedAtBootMs < (*marker)->restartTimeMs;
}

// A daemonset instance takes over from the static pod (day 0 to day 2) and from the daemonset
// pod it replaces (a rollout with maxSurge).
bool mayTakeOverFrom(const LockHolder& holder) {
  return holder.mode == config::modeName(config::Mode::StaticPod) ||
         holder.mode == config::modeName(config::Mode::DaemonSet);
}

// How long a holder may have no Established session before it counts as silent: as long as the
// most patient peer waits for it (the longest hold time), at least 3 s.
std::chrono::steady_clock::duration silenceAfter(const config::Config& config) {
  std::chrono::milliseconds longest{3000};
  for (const auto& peer : config.peers) {
    longest = std::max(longest, peer.holdTime);
  }
  return longest;
}

// How often a waiting instance looks at the kernel's TCP table.
constexpr auto kHolderLook = 1s;

}  // namespace

Handoff::Handoff(asio::io_context& io, const config::Config& config, const Logger& log,
                 HandoffHost& host)
    : io_(io),
      config_(config),
      log_(log),
      host_(host),
      lockTimer_(io),
      silence_(silenceAfter(config)) {}

std::string_view Handoff::roleName() const {
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

tl::expected<void, std::string> Handoff::start() {
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
    bool restarting = yieldedMomentsAgo(*lock_, config_, log_);
    return becomeActive(restarting, restarting ? "the previous instance yielded moments ago"
                                               : "no other instance holds the speaker lock");
  }
  auto holder = lock_->holder();
  bool contend = config_.mode == config::Mode::DaemonSet && (!holder || mayTakeOverFrom(*holder));
  waitForLock(contend ? Role::Contending : Role::Standby,
              holder ? fmt::format("the {} instance ({}) speaks BGP on this node",
                                   holder->mode, describe(*holder))
                     : std::string("another instance holds the speaker lock"));
  return {};
}

void Handoff::stop() { lockTimer_.cancel(); }

tl::expected<void, std::string> Handoff::becomeActive(bool restarting, std::string_view why) {
  role_ = Role::Active;
  silence_.reset();
  state_.waitingFor.clear();
  state_.lastRestarting = restarting;
  return host_.startSpeaking(restarting, why);
}

void Handoff::waitForLock(Role role, std::string why) {
  role_ = role;
  state_.waitingFor =
      role == Role::Contending
          ? fmt::format("{}; taking over once the local health gate is open", why)
          : fmt::format("on standby: {}; taking the node back if it goes away", why);
  log_.info("handoff", "{}", state_.waitingFor);
  scheduleLockPoll(kLockPoll);
}

void Handoff::scheduleLockPoll(std::chrono::milliseconds after) {
  lockTimer_.expires_after(after);
  lockTimer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec && !host_.shuttingDown() && role_ != Role::Active) {
      pollLock();
    }
  });
}

bool Handoff::acquireLock() {
  auto acquired = lock_->tryAcquire(
      thisProcess(std::string(config::modeName(config_.mode)), config_.control.socket));
  if (!acquired) {
    log_.error("handoff", "{}", acquired.error());
    return false;
  }
  if (!*acquired) {
    return false;
  }
  const bool granted = std::chrono::steady_clock::now() < state_.expectLockUntil;
  const LockTaken taken = lockTaken(granted, yieldedMomentsAgo(*lock_, config_, log_),
                                    role_ == Role::Contending, state_.takingOverFrom);
  ++(granted ? state_.tookOver : state_.tookBack);
  state_.expectLockUntil = {};
  if (auto active = becomeActive(taken.restarting, taken.why); !active) {
    // Speaking with half a state would be worse than not speaking: say so and stay silent.
    log_.error("handoff", "cannot speak after taking the lock: {}; releasing it", active.error());
    host_.stopSpeaking();
    lock_->release();
    waitForLock(Role::Standby, fmt::format("failed to start: {}", active.error()));
    return false;
  }
  return true;
}

void Handoff::watchHolder() {
  auto now = std::chrono::steady_clock::now();
  if (now < nextHolderLook_) {
    return;
  }
  nextHolderLook_ = now + kHolderLook;
  std::vector<BgpPeerEndpoint> peers;
  for (const auto& p : config_.peers) {
    peers.push_back({p.address, p.port});
  }
  // A stopped holder's connections count as silence (holderStopped()): one frozen mid-handshake
  // keeps an Established TCP connection the peer holds for minutes in OpenSent.
  auto holder = lock_ ? lock_->holder() : std::nullopt;
  const bool speaking = anyBgpSessionEstablished(readKernelTcpTable(), peers) &&
                        !(holder && holderStopped(*holder));
  const bool changed = silence_.sample(speaking, now);
  if (silence_.silent()) {
    fenceSilentHolder(changed);
  } else if (changed) {
    state_.lastFenceRefusal.clear();
    log_.info("handoff", "the instance holding the speaker lock has a BGP session again");
  }
}

// Issue 43: a stopped holder kept the node out of the fabric until the kubelet restarted its pod.
// Killing it is the one safe way to take the node while it holds the lock: breaking the lock
// instead would leave a second speaker the moment it woke (holder_watch.h).
void Handoff::fenceSilentHolder(bool silentJustNow) {
  auto holder = lock_ ? lock_->holder() : std::nullopt;
  if (!holder) {
    return;
  }
  auto fenced = fenceStoppedHolder(*holder, *lock_);
  if (fenced) {
    ++state_.fenced;
    state_.lastFenceRefusal.clear();
    state_.waitingFor = fmt::format("fenced the stopped holder ({}); taking the node once the "
                                    "kernel frees the speaker lock",
                                    *fenced);
    log_.error("handoff", "{}; it is stopped: {}, so that it never wakes as a second speaker; "
               "taking the node once the kernel frees the speaker lock",
               holderSilent().value_or("the instance holding the speaker lock is silent"),
               *fenced);
    return;
  }
  if (silentJustNow || state_.lastFenceRefusal != fenced.error()) {
    log_.error("handoff", "{}; not taking over: {}; its pod's liveness probe restarts it, and "
               "this instance takes the node back then",
               holderSilent().value_or("the instance holding the speaker lock is silent"),
               fenced.error());
  }
  state_.lastFenceRefusal = fenced.error();
}

std::optional<std::string> Handoff::holderSilent() const {
  if (role_ == Role::Active || !silence_.silent()) {
    return std::nullopt;
  }
  auto holder = this->holder();
  return fmt::format(
      "the instance holding the speaker lock ({}) has had no Established BGP session for {}s: "
      "frozen, stuck or cut off; the node announces nothing",
      holder ? fmt::format("{} {}", holder->mode, describe(*holder)) : std::string("unknown"),
      std::chrono::duration_cast<std::chrono::seconds>(
          silence_.silentFor(std::chrono::steady_clock::now()))
          .count());
}

void Handoff::pollLock() {
  watchHolder();
  auto now = std::chrono::steady_clock::now();
  bool expecting = now < state_.expectLockUntil;
  if (now >= state_.noTakebackBefore && acquireLock()) {
    return;
  }
  if (role_ == Role::Contending && !expecting && !state_.inFlight &&
      now >= state_.nextAttempt) {
    auto holder = lock_->holder();
    if (holder && mayTakeOverFrom(*holder)) {
      if (host_.healthy()) {
        attemptTakeover(*holder);
      } else {
        state_.waitingFor = "waiting for the local health gate to open before taking over";
      }
    }
  }
  scheduleLockPoll(expecting ? std::chrono::milliseconds(kExpectLockPoll)
                             : std::chrono::milliseconds(kLockPoll));
}

void Handoff::refuse(std::string reason) {
  state_.inFlight = false;
  state_.nextAttempt = std::chrono::steady_clock::now() + kRefusedRetry;
  ++state_.refusals;
  if (!state_.refused || state_.lastRefusal != reason) {
    log_.error("handoff",
               "not taking over: {}; the {} instance keeps speaking; retrying every {}s", reason,
               state_.takingOverFrom.empty() ? std::string("running") : state_.takingOverFrom,
               std::chrono::duration_cast<std::chrono::seconds>(kRefusedRetry).count());
  }
  state_.refused = true;
  state_.lastRefusal = std::move(reason);
  state_.waitingFor = fmt::format("takeover refused: {}", state_.lastRefusal);
}

void Handoff::attemptTakeover(const LockHolder& holder) {
  state_.inFlight = true;
  state_.takingOverFrom = holder.mode;
  state_.waitingFor = fmt::format("asking the {} instance ({}, {}) to hand over", holder.mode,
                                  describe(holder), holder.controlSocket);
  // Step 1 changes nothing on either side: both check the prerequisites first.
  sendControlRequest(io_, holder.controlSocket,
                     {{"command", commandName(ControlCommand::HandoffCheck)}, {"identity", toJson(identityOf(config_))}},
                     kHandoffRequestTimeout,
                     [this, holder](tl::expected<nlohmann::json, std::string> answer) {
                       onCheckAnswer(holder, std::move(answer));
                     });
}

void Handoff::onCheckAnswer(const LockHolder& holder,
                            tl::expected<nlohmann::json, std::string> answer) {
  if (host_.shuttingDown() || role_ != Role::Contending) {
    state_.inFlight = false;
    return;
  }
  if (!answer) {
    state_.inFlight = false;
    state_.nextAttempt = std::chrono::steady_clock::now() + 1s;
    state_.waitingFor =
        fmt::format("cannot reach the {} instance: {}", holder.mode, answer.error());
    log_.warn("handoff", "{}; retrying in 1s", state_.waitingFor);
    return;
  }
  if (answer->contains("error")) {
    return refuse(
        fmt::format("the {} instance answered: {}", holder.mode, (*answer)["error"].dump()));
  }
  auto mine = identityOf(config_);
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
  // Step 2: the holder checks again, closes its sessions without a NOTIFICATION, releases the
  // lock and answers.
  sendControlRequest(io_, holder.controlSocket,
                     {{"command", commandName(ControlCommand::HandoffYield)}, {"identity", toJson(mine)}},
                     kHandoffRequestTimeout,
                     [this](tl::expected<nlohmann::json, std::string> answer) {
                       onYieldAnswer(std::move(answer));
                     });
}

void Handoff::onYieldAnswer(tl::expected<nlohmann::json, std::string> answer) {
  state_.inFlight = false;
  if (host_.shuttingDown() || role_ != Role::Contending) {
    return;
  }
  if (!answer) {
    state_.nextAttempt = std::chrono::steady_clock::now() + 1s;
    state_.waitingFor = fmt::format("handoff interrupted: {}", answer.error());
    log_.warn("handoff", "{}; polling the lock and retrying", state_.waitingFor);
    return;
  }
  if (!field(*answer, "ok", false)) {
    return refuse(field(*answer, "refusal",
                        field(*answer, "error", std::string("refused without a reason"))));
  }
  state_.refused = false;
  state_.lastRefusal.clear();
  state_.expectLockUntil = std::chrono::steady_clock::now() + kExpectLockFor;
  state_.waitingFor =
      fmt::format("the {} instance yielded; taking the speaker lock", state_.takingOverFrom);
  log_.info("handoff", "the {} instance yielded ({}); taking the lock", state_.takingOverFrom,
            field(*answer, "peers", nlohmann::json::array()).dump());
  lockTimer_.cancel();
  pollLock();
}

void Handoff::handleCheck(const ControlRequest& request, ControlServer::Reply reply) {
  auto mine = identityOf(config_);
  auto theirs = identityFromJson(request.identity);
  nlohmann::json answer{{"identity", toJson(mine)}};
  std::optional<std::string> refusal;
  if (!theirs) {
    refusal = theirs.error();
  } else if (role_ != Role::Active) {
    refusal = fmt::format("this instance is {}, not speaking", roleName());
  } else if (host_.draining() || host_.shuttingDown()) {
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

std::optional<std::string> Handoff::yieldRefusal(const ControlRequest& request) const {
  auto theirs = identityFromJson(request.identity);
  if (!theirs) {
    return theirs.error();
  }
  if (role_ != Role::Active || !lock_ || !lock_->held()) {
    return fmt::format("this instance is {}, not speaking", roleName());
  }
  if (host_.draining() || host_.shuttingDown()) {
    return "this instance is draining";
  }
  return handoffRefusal(identityOf(config_), *theirs);
}

void Handoff::handleYield(const ControlRequest& request, ControlServer::Reply reply) {
  auto mine = identityOf(config_);
  if (auto refusal = yieldRefusal(request)) {
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
  // A taker of this instance's own mode is its successor in a DaemonSet rollout: it needs the
  // node's control socket and the listeners this instance holds.
  const auto taker = identityFromJson(request.identity);
  const bool toSuccessor = taker && taker->mode == config::modeName(config_.mode);
  log_.info("handoff", "yielding to the {}: closing every session without a NOTIFICATION "
            "(graceful restart, restart time {}s); the VIPs stay bound{}",
            toSuccessor ? "daemonset instance that replaces this one" : "daemonset instance",
            std::chrono::duration_cast<std::chrono::seconds>(config_.handoff.restartTime).count(),
            toSuccessor ? "; handing over the control socket and the listeners" : "");
  // From here nothing may announce or withdraw: the sessions close as they are.
  role_ = Role::Standby;
  host_.yieldSessions(toSuccessor, [this, reply, toSuccessor](std::vector<nlohmann::json> peers) {
    lock_->release();
    ++state_.yielded;
    state_.lastYieldPeers = peers;
    state_.noTakebackBefore = std::chrono::steady_clock::now() + kTakebackDelay;
    waitForLock(Role::Standby, toSuccessor ? "yielded to the daemonset instance that replaces "
                                             "this one (a rollout)"
                                           : "yielded to the daemonset instance");
    reply({{"ok", true}, {"identity", toJson(identityOf(config_))}, {"peers", peers}});
  });
}

bool Handoff::handBack(ControlServer::Reply& reply) {
  if (role_ != Role::Active || config_.mode != config::Mode::DaemonSet || !lock_ ||
      !slotHeld(config_, instanceSlots(config::Mode::StaticPod).front())) {
    return false;
  }
  auto marked = lock_->writeYieldMarker({config_.routerId.toString(), bootTimeMs(),
                                         config_.handoff.restartTime.count()});
  if (!marked) {
    log_.warn("handoff", "cannot hand the node back to the static-pod instance: {}; draining",
              marked.error());
    return false;
  }
  log_.info("handoff", "stopping with a static-pod instance on standby: handing the node back "
            "to it: closing every session without a NOTIFICATION (graceful restart, restart time "
            "{}s); the VIPs stay bound, nothing is drained",
            std::chrono::duration_cast<std::chrono::seconds>(config_.handoff.restartTime).count());
  role_ = Role::Standby;
  host_.yieldSessions(false, [this, reply = std::move(reply)](std::vector<nlohmann::json> peers) {
    lock_->release();
    ++state_.yielded;
    state_.lastYieldPeers = peers;
    // Not taken back by this instance unless the static pod leaves it lying (then this one
    // speaks again, and its SIGTERM drains as before).
    state_.noTakebackBefore = std::chrono::steady_clock::now() + kTakebackDelay;
    waitForLock(Role::Standby, "handed the node back to the static-pod instance (this pod is "
                               "stopping)");
    reply({{"ok", true},
           {"acknowledged", true},
           {"handedBack", true},
           {"detail", "handed the node to the static-pod instance on standby (graceful "
                      "restart); nothing drained"},
           {"peers", peers}});
  });
  return true;
}

std::optional<LockHolder> Handoff::holder() const {
  return lock_ ? lock_->holder() : std::nullopt;
}

nlohmann::json Handoff::status() const {
  nlohmann::json h{{"role", roleName()},
                   {"state", role_ == Role::Active ? std::string("speaking") : state_.waitingFor},
                   {"refused", state_.refused},
                   {"lastRefusal", state_.lastRefusal},
                   {"tookOver", state_.tookOver},
                   {"yielded", state_.yielded},
                   {"tookBack", state_.tookBack},
                   {"refusals", state_.refusals},
                   {"gracefulRestart", state_.lastRestarting},
                   {"lastYieldPeers", state_.lastYieldPeers},
                   {"holderSilent", holderSilent().has_value()},
                   {"fenced", state_.fenced}};
  if (auto silent = holderSilent()) {
    h["holderSilentReason"] = *silent;
    if (!state_.lastFenceRefusal.empty()) {
      h["notFencedBecause"] = state_.lastFenceRefusal;
    }
  }
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
