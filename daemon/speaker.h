// The running vipd: one PeerSession per configured peer, the VIP binder that decides which VIPs
// may be announced, the kernel monitor that tells it when that changes, the health gate, the
// drain sequence, the control socket, the metrics/probe listener and (optionally) the BGP
// listener. Runs on one io_context thread and is the single owner of all of that state.
//
// What is announced, at any instant, is intendedAnnouncements(): the VIPs bound on their
// interface, while the health gate is open, the node is not withdrawn (vipctl withdraw, persisted)
// and no drain has reached its withdraw step.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/asio.hpp>
#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

#include "config/config.h"
#include "daemon/bfd/bfd_service.h"
#include "daemon/control/control_server.h"
#include "daemon/lifecycle/drain_sequence.h"
#include "daemon/lifecycle/handoff_protocol.h"
#include "daemon/health/health_checker.h"
#include "daemon/lifecycle/host_lock.h"
#include "daemon/http/http_server.h"
#include "daemon/base/logger.h"
#include "daemon/http/metrics.h"
#include "daemon/session/peer_session.h"
#include "daemon/vip/vip_binder.h"
#include "daemon/lifecycle/withdrawn_state.h"
#include "netlink/address_table.h"

namespace vipd::daemon {

class Speaker {
 public:
  // Only the Active instance speaks BGP and binds or unbinds addresses. In standalone mode vipd
  // is always Active. With mode static-pod or daemonset the speaker lock decides: a static-pod
  // instance that yielded (or found a daemonset instance speaking) is on Standby, ready to take
  // the node back; a daemonset instance that found a static-pod instance speaking is Contending
  // until it has taken over.
  enum class Role { Active, Standby, Contending };

  // `table` and `monitor` are the kernel's (or fakes); they must outlive the Speaker.
  Speaker(asio::io_context& io, config::Config config, netlink::AddressTable& table,
          netlink::Monitor& monitor, const Logger& log);

  // Checks the router ID, loads the withdrawn state, binds the VIPs (unless withdrawn), opens the
  // control socket, the metrics listener and the BGP listener (if enabled), starts the health
  // checks, then every session. An error is one sentence saying what to fix.
  [[nodiscard]] tl::expected<void, std::string> start();
  // SIGTERM: drains (unless already withdrawn), sends Cease 6/2 "vipd: node draining" to every
  // peer, then runs `done`. An instance that is not Active touches nothing and runs `done` now.
  void shutdown(std::function<void()> done);

  nlohmann::json status() const;

 private:
  // ---- announcements (speaker.cc) ----
  std::set<bgp::Prefix> intendedAnnouncements() const;
  void pushAnnouncements();
  void refreshAndAnnounce(std::string_view why);
  void logBindEvents(const std::vector<BindEvent>& events);
  void watchKernel();
  void onKernelChanges();
  void scheduleRebind();
  void scheduleReconcile();
  void warnAboutArp() const;
  tl::expected<void, std::string> openBgpListener();
  void acceptNext();
  void onHealthChange(bool healthy);
  // ---- BFD (speaker.cc) ----
  std::vector<BfdPeer> bfdPeers() const;
  void onBfdChange(const BfdStateChange& change);
  void startDeferredPeers(std::string_view why);

  // ---- drain, withdraw, announce (speaker_drain.cc) ----
  using DrainSettled = std::function<void(bool acknowledged, std::string detail)>;
  void startDrain(std::string why, std::optional<std::chrono::milliseconds> ackTimeout,
                  DrainSettled onSettled, std::function<void()> onFinished);
  void runDrainActions(std::vector<DrainAction> actions);
  std::string unacknowledgedDetail() const;
  void handleWithdraw(const nlohmann::json& request, ControlServer::Reply reply);
  void handleAnnounce(ControlServer::Reply reply);
  void stopPeers(std::string shutdownCommunication, std::function<void()> done);

  // ---- roles and the handoff between two instances (speaker_handoff.cc) ----
  // Takes the speaker lock or waits for it; standalone mode goes straight to becomeActive().
  tl::expected<void, std::string> startRole();
  // Loads the withdrawn state, binds, opens the BGP listener and starts every session.
  // `restarting`: the sessions reopen as a graceful restart after a planned handoff.
  tl::expected<void, std::string> becomeActive(bool restarting, std::string_view why);
  void waitForLock(Role role, std::string why);
  void scheduleLockPoll(std::chrono::milliseconds after);
  void pollLock();
  bool acquireLock();
  void attemptTakeover(const LockHolder& holder);
  void handleHandoffCheck(const nlohmann::json& request, ControlServer::Reply reply);
  void handleHandoffYield(const nlohmann::json& request, ControlServer::Reply reply);
  nlohmann::json handoffStatus() const;
  std::string_view roleName() const;

  // ---- status, readiness, probes (speaker_status.cc) ----
  void handleControl(const nlohmann::json& request, ControlServer::Reply reply);
  std::vector<std::string> notReadyReasons() const;
  HttpResponse handleHttp(std::string_view target);
  void scheduleHousekeeping();
  void warnAboutStuckPeers();

  asio::io_context& io_;
  config::Config config_;
  netlink::AddressTable& table_;
  netlink::Monitor& monitor_;
  const Logger& log_;
  VipBinder binder_;
  std::vector<std::unique_ptr<PeerSession>> peers_;
  // After a graceful-restart takeover, a session with BFD opens only once its BFD is Up (or
  // the restart time is half gone): an End-of-RIB sent while BFD still held the routes back
  // would make the peer drop the path it kept for us.
  std::vector<bool> deferredStart_;
  ControlServer control_;
  HealthChecker health_;
  Metrics metrics_;
  HttpServer http_;
  WithdrawnState withdrawnState_;
  std::optional<Withdrawn> withdrawn_;
  bool withdrawnPersisted_ = true;  // false after `vipctl withdraw --transient`
  std::optional<asio::ip::tcp::acceptor> listener_;
  asio::posix::stream_descriptor kernelEvents_;
  asio::steady_timer rebindTimer_;
  asio::steady_timer reconcileTimer_;
  asio::steady_timer housekeepingTimer_;

  // The drain in progress, if any.
  struct Drain {
    DrainSequence sequence;
    bool withdrawSent = false;
    std::chrono::steady_clock::time_point withdrawSentAt;
    DrainSettled onSettled;
    std::function<void()> onFinished;
  };
  std::optional<Drain> drain_;
  asio::steady_timer drainTimer_;
  std::string lastDrainResult_;

  std::vector<std::chrono::steady_clock::time_point> lastStuckWarning_;  // per peer
  bool rebindPending_ = false;
  bool shuttingDown_ = false;

  // Declared after everything its callbacks touch; its thread ends before they are destroyed.
  BfdService bfd_;
  asio::steady_timer deferredStartTimer_;

  Role role_ = Role::Active;
  std::optional<HostLock> lock_;
  asio::steady_timer lockTimer_;
  struct Handoff {
    std::string state;        // one sentence for status: what this instance waits for
    std::string lastRefusal;  // why the last takeover was refused; empty once one succeeded
    bool refused = false;
    bool inFlight = false;
    std::chrono::steady_clock::time_point nextAttempt{};
    std::chrono::steady_clock::time_point expectLockUntil{};  // after a yield was granted
    std::chrono::steady_clock::time_point noTakebackBefore{};  // after yielding
    uint64_t tookOver = 0;   // daemonset: took over from a static-pod instance
    uint64_t yielded = 0;    // static-pod: handed over
    uint64_t tookBack = 0;   // took the lock after its holder went away
    uint64_t refusals = 0;
    bool lastRestarting = false;  // the last becomeActive() reopened as a graceful restart
    std::vector<nlohmann::json> lastYieldPeers;
  } handoff_;
};

}  // namespace vipd::daemon
