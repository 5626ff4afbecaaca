// The running vipd: one PeerSession per configured peer, the VIP binder that decides which VIPs
// may be announced, the kernel monitor that tells it when that changes, the health gate, the
// control socket, the listener of /metrics and the health endpoints, BFD and (optionally) the BGP listener. Runs on one
// io_context thread.
//
// Who may change what:
//   Speaker   the sessions, the listeners and the timers below; the only one that decides what is
//             announced: intendedAnnouncements().
//   VipKeeper the VIPs' bindings and the kernel watch; it binds only while VipKeeperHost::mayBind().
//   Drainer   the drain in progress and the withdrawn state; it acts on the sessions and
//             bindings only through DrainHost, which the Speaker implements.
//   Handoff   the role (active, standby, contending) and the speaker lock; it starts, stops and
//             yields the sessions only through HandoffHost, which the Speaker implements.
//   StatusReport  reads all of the above, changes none of it.
//
// What is announced, at any instant, is decision(): policy::decide() (policy/announce_policy.h)
// over every input the Speaker gathers: the VIPs bound on their interface, the health gate, the
// speaker lock, the withdrawn state and the drain, the VIPs the return-path check holds back, the
// VIPs a reload removed, and the fabric's view (the paths the peers send back,
// policy/fabric_view.h), which the never-zero rule needs. The Speaker carries the decision out;
// it decides nothing itself.
//
// A reload (issue 29; daemon/config_reloader.h is the one path to it) is carried out the same
// way: config::planReload() (config/reload_plan.h) says what each change means, the Speaker does
// exactly that, and config_ is always the config that runs (status `config.pendingRestart` lists
// what the file says and the process keeps until a restart).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

#include "config/config.h"
#include "config/diff.h"
#include "config/reload_plan.h"
#include "daemon/base/logger.h"
#include "daemon/bfd/service.h"
#include "daemon/control/server.h"
#include "daemon/doctor/runner.h"
#include "daemon/health/checker.h"
#include "daemon/http/server.h"
#include "daemon/http/metrics.h"
#include "daemon/lifecycle/drainer.h"
#include "daemon/lifecycle/handoff.h"
#include "daemon/lifecycle/instance_lock.h"
#include "daemon/lifecycle/unbind_after_withdraw.h"
#include "daemon/session/bgp_listener.h"
#include "daemon/session/peer_session.h"
#include "daemon/returnpath/checker.h"
#include "daemon/status_report.h"
#include "daemon/vip/keeper.h"
#include "netlink/address_table.h"
#include "policy/announce_policy.h"
#include "policy/fabric_view.h"
#include "policy/withdraw_confirmation.h"
#include "policy/withdraw_guard.h"

namespace vipd::daemon {

class Speaker final : private DrainHost, private HandoffHost, private VipKeeperHost {
 public:
  // `table` and `monitor` are the kernel's (or fakes); they must outlive the Speaker.
  Speaker(asio::io_context& io, config::Config config, netlink::AddressTable& table,
          netlink::Monitor& monitor, const Logger& log);

  // Checks the router ID, reads the session keys, opens the control socket and the metrics
  // listener, starts the health checks, then takes its role: an Active instance loads the
  // withdrawn state, binds the VIPs (when withdrawn: removes those vipd added instead), opens the
  // BGP listener (if enabled) and starts every session. Then runs vipd doctor's checks (logged,
  // status `doctor`; never fatal). An error is one sentence saying what to fix.
  [[nodiscard]] tl::expected<void, std::string> start();
  // SIGTERM: drains (unless already withdrawn), sends Cease 6/2 "vipd: node draining" to every
  // peer, then runs `done`. An instance that is not Active touches nothing and runs `done` now.
  void shutdown(std::function<void()> done);

  nlohmann::json status() const;

  // A change the running process keeps its old value for, and why: it needs a restart, or it
  // could not be applied (the reason says what failed; a restart would fail the same way).
  struct PendingChange {
    config::ConfigChange change;
    std::string reason;
  };
  struct ReloadOutcome {
    std::vector<config::ConfigChange> applied;
    std::vector<PendingChange> pending;
    bool failedSome = false;  // some pending change could not be applied (not just "restart")
  };
  // A re-read config that loaded and validated (SIGHUP or a change to the watched files;
  // `trigger` says which). Reads every TCP-MD5 key it names, by content: a key file that cannot
  // be read fails the whole reload as an invalid file does (the error, nothing changed). Then
  // carries out config::planReload(), each change touching only what it concerns: a VIP added is
  // bound and announced, one removed is withdrawn and unbound once the peers acknowledge, new
  // communities are re-announced (no withdrawal), the health and return-path checks restart, a
  // peer added or removed leaves the other sessions alone, a peer's changed settings or key reset
  // that session alone (Cease 6/6 saying why). What needs a restart, or fails to apply (a health
  // CA that cannot be read, a relay port in use, a BFD port, another vipd holding a VIP), keeps
  // its running value and is returned, logged and shown as pending. Each change is logged.
  tl::expected<ReloadOutcome, std::string> reload(const config::Config& next,
                                                  std::string_view trigger);
  // A re-read file that did not load or validate: the running config stays; status `config`
  // (and vipd_config_last_reload_successful) says so until a reload succeeds. `error` is the
  // first error, one line.
  void reloadFailed(std::string error, std::string_view trigger);
  // How the doctor's checks (status `doctor`, their log lines) name the config: "vipd.yaml +
  // node.yaml". Before start().
  void setConfigNames(std::string names) { doctor_.setConfigNames(std::move(names)); }
  // What watches the config files (daemon/config_reloader.h), for status `config.watch`.
  void setConfigWatch(nlohmann::json watch) { configWatch_ = std::move(watch); }
  // The one-instance lock main() took: a reload that adds a VIP takes that VIP's lock too (and
  // releases a removed one's). Without it (tests) VIPs are added unlocked.
  void useInstanceLock(InstanceLock& lock) { instanceLock_ = &lock; }
  // The TCP-MD5 key files the running config names (what a reload re-reads).
  std::vector<std::string> keyFiles() const;

 private:
  void fitClientLimits();
  // ---- what is announced ----
  policy::Decision decision() const;
  std::set<bgp::Prefix> intendedAnnouncements() const { return decision().announced(); }
  // The fabric's view of each VIP, from what the peers hold now.
  std::map<bgp::Prefix, policy::VipView> fabricView() const;
  nlohmann::json fabricStatus(const policy::Decision& decision) const;
  // A session changed state or the paths a peer holds for the VIPs changed: re-decide.
  void onFabricChange();
  // vipctl withdraw's guard (guard.minAnnouncers, policy::checkWithdraw()) at the request or at
  // the end of the drain's GRACEFUL_SHUTDOWN phase.
  policy::GuardCheck checkWithdraw(policy::GuardMoment moment) const;
  void logDecisionChanges(const policy::Decision& decision);
  void scheduleHousekeeping(std::chrono::steady_clock::duration after);
  void onHealthChange(bool healthy);
  // health.onFailure degrade and the check failing: announce the worse path.
  bool degradedNow() const;
  // health.onFailure withdraw with unbindWhenUnhealthy, and the check failing: no VIP bound.
  bool unbindForHealth() const;
  // This instance speaks and nothing else decides its bindings: not withdrawn, not draining,
  // not shutting down. Only then does the health gate bind or unbind.
  bool healthOwnsBinding() const;
  // The end of a drain for the withdrawal the failing check caused (UnbindAfterWithdraw).
  void unbindForHealthOnceAcknowledged();
  // The health gate changed what may be bound: bind again what it had unbound, or start
  // unbinding (health.unbindWhenUnhealthy).
  void followHealthBinding();
  // ---- reload (speaker_reload.cc) ----
  std::unique_ptr<PeerSession> makeSession(const config::Peer& peer);
  PeerSession* findSession(const bgp::IpAddress& address) const;
  // Carries out `plan` (config_ becomes plan.applied); `keys` are the new keys by peer.
  void carryOut(const config::ReloadPlan& plan,
                std::map<bgp::IpAddress, std::optional<SessionKey>>& keys);
  void applyPeers(const config::ReloadPlan& plan,
                  std::map<bgp::IpAddress, std::optional<SessionKey>>& keys);
  void applyVips(const config::ReloadPlan& plan);
  // A reload's new VIPs take their instance lock; one another vipd holds is not added (`failed`).
  void lockAddedVips(const config::Config& next, config::Config& achievable,
                     std::map<std::string, std::string>& failed);
  // The withdraw guard for a reload (issue 40): a VIP it removes, or every VIP when it removes
  // every peer, that fewer than guard.minAnnouncers other nodes announce is kept running
  // (in `achievable`), with the reason in `failed` under its key.
  void guardReload(config::Config& achievable, std::map<std::string, std::string>& failed);
  // Withdraws `vip` (the policy's `removing`), then unbinds and forgets it once the peers have
  // acknowledged.
  void removeVip(const bgp::Prefix& vip);
  void recordReload(const ReloadOutcome& outcome, std::string_view trigger);
  // BFD for the peers of `applied`: sessions added, removed, replaced; started for the first BFD
  // peer. An error (a socket that cannot open) changes nothing.
  tl::expected<void, std::string> updateBfd(const config::Config& applied);
  nlohmann::json configStatus() const;
  // ---- BFD ----
  std::vector<BfdPeer> bfdPeers() const { return bfdPeersOf(config_); }
  static std::vector<BfdPeer> bfdPeersOf(const config::Config& config);
  // bfdPeersOf(config) and the BFD sessions of the peers whose Cease is still being written.
  std::vector<BfdPeer> bfdPeersWithRetiring(const config::Config& config) const;
  // The peers' and the VIPs' addresses, for the return-path check (at start and on a reload).
  static std::vector<bgp::IpAddress> peerAddresses(const config::Config& config);
  static std::vector<bgp::IpAddress> vipAddresses(const config::Config& config);
  void onBfdChange(const BfdStateChange& change);
  void startPeers(bool restarting);
  void startDeferredPeers(std::string_view why);
  // ---- the control socket and the HTTP endpoints ----
  void handleControl(const nlohmann::json& request, ControlServer::Reply reply);
  // `vipctl withdraw`: the withdraw guard (never-zero), then the Drainer's withdraw.
  void handleWithdraw(const nlohmann::json& request, ControlServer::Reply reply);
  // Which endpoints a listener answers: every one (no metrics.healthListen), only /metrics
  // (metrics.listen beside a health listener) or only /healthz and /readyz (the health listener).
  enum class Endpoints { All, Metrics, Health };
  HttpResponse handleHttp(std::string_view target, Endpoints endpoints);
  // Whether `vip` is advertised to at least one Established peer now.
  bool announced(const bgp::Prefix& vip) const;
  SpeakerIntent intent() const;
  void stopPeers(std::string shutdownCommunication, std::function<void()> done);

  // ---- DrainHost ----
  void setGracefulShutdown(bool on) override;
  void pushAnnouncements() override;
  std::vector<std::string> unacknowledgedPeers() const override;
  void unbindOwned() override;
  void bindAndAnnounce() override;
  bool healthy() const override { return health_.healthy(); }
  size_t announceableCount() const override { return vips_.binder().announceable().size(); }
  // ---- HandoffHost ----
  tl::expected<void, std::string> startSpeaking(bool restarting, std::string_view why) override;
  void stopSpeaking() override;
  void yieldSessions(bool toSuccessor,
                     std::function<void(std::vector<nlohmann::json>)> done) override;
  // Opens the node's control socket and the HTTP listeners that are not open yet. `mayWait`: one
  // held by another running instance (the daemonset pod this one replaces) is left for later.
  tl::expected<void, std::string> openListeners(bool mayWait);
  bool draining() const override { return drainer_.draining(); }
  bool shuttingDown() const override { return shuttingDown_; }
  // ---- VipKeeperHost ----
  bool mayBind() const override;
  bool stopping() const override { return shuttingDown_; }

  asio::io_context& io_;
  config::Config config_;
  netlink::AddressTable& table_;
  netlink::Monitor& monitor_;
  const Logger& log_;
  VipKeeper vips_;
  // One per config_.peers entry, in the same order (StatusReport reads them side by side).
  std::vector<std::unique_ptr<PeerSession>> peers_;
  // Sessions a reload removed, until their Cease has been written.
  std::vector<std::unique_ptr<PeerSession>> retiredPeers_;
  // Their BFD sessions, kept until the Cease is written: an AdminDown sent with the Cease races
  // it, and a peer that takes BGP down on BFD first (BIRD does) never reads why it was dropped.
  std::vector<BfdPeer> retiringBfd_;
  // After a graceful-restart takeover, a session with BFD opens only once its BFD is Up (or
  // the restart time is half gone): an End-of-RIB sent while BFD still held the routes back
  // would make the peer drop the path it kept for us.
  std::set<bgp::IpAddress> deferredStart_;
  // VIPs a reload removed, withdrawn and waiting for the peers' acknowledgement before they are
  // unbound (policy input `removing`); each with the timer of that wait.
  std::map<bgp::Prefix, std::unique_ptr<UnbindAfterWithdraw>> removingVips_;
  InstanceLock* instanceLock_ = nullptr;
  nlohmann::json configWatch_;
  ControlServer control_;
  // control.instanceSocket: this instance's own socket (its pod's hooks and probes).
  std::unique_ptr<ControlServer> instanceControl_;
  HealthChecker health_;
  Metrics metrics_;
  HttpServer http_;
  // metrics.healthListen's listener; absent when the health endpoints share http_.
  std::optional<HttpServer> healthHttp_;
  // Config (re)loads since start, for status `config`: the start counts as a successful load.
  struct ConfigLoads {
    // UTC, when the config that runs was loaded: the start, or the last reload that applied
    // something.
    std::string loadedAt;
    std::string lastReloadAt;       // UTC, the last reload attempt; empty before one
    std::string lastReloadTrigger;  // "SIGHUP", "file change"
    // "applied", "partly applied" (some changes pending), "nothing to apply" (the file is what
    // runs, or only pending changes), "failed" (did not load: nothing changed).
    std::string lastReloadResult;
    // The last reload loaded and every change it asked for runs or waits only for a restart.
    bool lastReloadSuccessful = true;
    std::string lastReloadError;
    uint64_t reloads = 0;
    uint64_t reloadFailures = 0;
    std::vector<config::ConfigChange> lastApplied;
    std::vector<PendingChange> pending;
  } configLoads_;
  BgpListener listener_;
  asio::steady_timer housekeepingTimer_;
  bool shuttingDown_ = false;
  Drainer drainer_;
  Handoff handoff_;
  // After a failing health check withdrew the VIPs: the peers' acknowledgements, then
  // drain.unbindDelay, then the unbind (health.unbindWhenUnhealthy).
  UnbindAfterWithdraw healthUnbind_;
  // The VIPs were unbound (or never bound) because the health check fails; bound again when it
  // passes.
  bool vipsHeldForHealth_ = false;
  // Runs while this instance speaks; holds back a VIP whose packets get no answer.
  ReturnPathChecker returnPath_;
  // This node's own addresses (not the VIPs): a path sent back with one of them as next hop is
  // this node's. Re-read from the kernel on every fabric change.
  std::set<bgp::IpAddress> ownAddresses_;
  // Re-decides once a newly Established session has had time to send its paths (kFabricSettle).
  asio::steady_timer fabricSettleTimer_;
  // Never zero at the same instant (issue 40): how long each automatic withdrawal has been
  // announced degraded; pushAnnouncements() feeds it and re-decides when a clock runs out.
  policy::WithdrawConfirmation withdrawConfirmation_;
  asio::steady_timer withdrawConfirmTimer_;
  // The health check has passed at least once since start (the never-zero rule holds only a
  // node that proved it can serve).
  bool healthEverPassed_ = false;
  // What the log last said about the never-zero rule and the fabric, so each change is logged
  // once: VIPs held announced, VIPs withdrawn without a fabric view, duplicate router IDs.
  std::set<bgp::Prefix> loggedHeld_;
  std::set<bgp::Prefix> loggedUnguarded_;
  std::set<std::string> loggedDuplicates_;

  // vipd doctor's checks at start and after each reload (issue 30), on a thread of their own;
  // status `doctor`. Its callbacks touch only itself and the logger.
  DoctorRunner doctor_;
  // The checks ran again once the health gate first opened (when, at start, no apiserver
  // answered for the certificate check).
  bool doctorRanOnHealth_ = false;

  // Declared after everything its callbacks touch; its thread ends before they are destroyed.
  BfdService bfd_;
  asio::steady_timer deferredStartTimer_;
  StatusReport report_;
};

}  // namespace vipd::daemon
