// The running vipd, wiring the libraries together: one PeerSession per configured peer, the
// Announcer (what is announced and bound), the health gate, the control socket, the listener of
// /metrics and the health endpoints, BFD, the return-path check and (optionally) the BGP
// listener. Runs on one io_context thread.
//
// Who may change what:
//   Speaker   the sessions, the listeners and the timers below; it passes events between the
//             rooms and decides nothing.
//   Announcer what is announced (policy::decide(), once per change, kept for status, /readyz and
//             the logs), the VIPs' bindings (its VipKeeper) and the withdraw guard; it reads the
//             other rooms through AnnouncerHost, which the Speaker implements.
//   Drainer   the drain in progress and the withdrawn state; it acts on the sessions and
//             bindings only through DrainHost, which the Speaker implements.
//   Handoff   the role (active, standby, contending) and the speaker lock; it starts, stops and
//             yields the sessions only through HandoffHost, which the Speaker implements.
//   StatusReport  reads all of the above, changes none of it.
//   KubeLink  the link to Kubernetes: reports the status document, and asks the Drainer to
//             withdraw (through the guard) when the Node asks; reaches the rest only through
//             KubeLinkHost, which the Speaker implements.
//
// A reload (issue 29; daemon/config_reloader.h is the one path to it) tries first what may fail,
// then plans once: config::planReload() (config/reload_plan.h) says what each change means, the
// Speaker carries it out step by step, and config_ is always the config that runs (status
// `config.pendingRestart`, daemon/reload/reload_record.h, lists what the file says and the
// process keeps until a restart, and why, as a typed value).
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
#include "daemon/announce/announcer.h"
#include "daemon/base/logger.h"
#include "daemon/bfd/service.h"
#include "daemon/control/server.h"
#include "daemon/doctor/runner.h"
#include "daemon/health/checker.h"
#include "daemon/http/server.h"
#include "daemon/http/metrics.h"
#include "daemon/kubelink/kube_link.h"
#include "daemon/lifecycle/drainer.h"
#include "daemon/lifecycle/handoff.h"
#include "daemon/lifecycle/instance_lock.h"
#include "daemon/peers/peer_set.h"
#include "daemon/reload/reload_record.h"
#include "daemon/session/bgp_listener.h"
#include "daemon/session/peer_session.h"
#include "daemon/returnpath/checker.h"
#include "daemon/status_report.h"
#include "netlink/address_table.h"

namespace vipd::daemon {

class Speaker final : private DrainHost,
                      private HandoffHost,
                      private AnnouncerHost,
                      private KubeLinkHost {
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
  void setConfigWatch(nlohmann::json watch) { reloads_.setWatch(std::move(watch)); }
  // The one-instance lock main() took: a reload that adds a VIP takes that VIP's lock too (and
  // releases a removed one's). Without it (tests) VIPs are added unlocked.
  void useInstanceLock(InstanceLock& lock) { instanceLock_ = &lock; }
  // The TCP-MD5 key files the running config names (what a reload re-reads).
  std::vector<std::string> keyFiles() const;

 private:
  void fitClientLimits();
  void scheduleHousekeeping(std::chrono::steady_clock::duration after);
  void onHealthChange(bool healthy);
  // ---- reload (speaker_reload.cc) ----
  // Each peer's TCP-MD5 key in `next`, read by content.
  using PeerKeys = PeerSet::Keys;
  // Where a reload's change could not be applied (a path prefix: "health", "vips[X]",
  // "peers[X].bfd") and why; what is under it keeps its running value.
  using NotApplied = std::map<std::string, std::string>;
  // Reads every key `next` names into `keys`, and which peers' keys differ from the running
  // ones; an unreadable key is the error (the reload fails as an invalid file does).
  tl::expected<void, std::string> readKeys(const config::Config& next, PeerKeys& keys,
                                           std::set<bgp::IpAddress>& changed) const;
  // The steps that may fail, tried before anything changes; each failure keeps the running
  // value in `achievable` and says why in `failed`.
  // New health settings the checker cannot use (a CA that cannot be read).
  void keepUnusableHealthCheck(const config::Config& next, config::Config& achievable,
                               NotApplied& failed) const;
  // A reload's new VIPs take their instance lock; one another vipd holds is not added.
  void lockAddedVips(const config::Config& next, config::Config& achievable, NotApplied& failed);
  // The withdraw guard for a reload (issue 40): a VIP it removes, or every VIP when it removes
  // every peer, that fewer than guard.minAnnouncers other nodes announce is kept running.
  void guardReload(config::Config& achievable, NotApplied& failed);
  // BFD for the peers the reload leaves running; a socket that cannot open keeps the peers whose
  // BFD changed as they are, and a new peer with BFD out.
  void openBfd(config::Config& achievable, NotApplied& failed);
  // Carries out `plan` (config_ becomes plan.applied); `keys` are the new keys by peer.
  void carryOut(const config::ReloadPlan& plan, PeerKeys& keys);
  // The return-path check with the new settings; a port in use rolls it (and `plan`) back to the
  // running ones: the reload's one rollback.
  void restartReturnPath(const config::ReturnPath& previous, config::ReloadPlan& plan,
                         NotApplied& failed);
  void recordReload(const ReloadOutcome& outcome, std::string_view trigger);
  // The peers' and the VIPs' addresses, for the return-path check (at start and on a reload).
  static std::vector<bgp::IpAddress> peerAddresses(const config::Config& config);
  static std::vector<bgp::IpAddress> vipAddresses(const config::Config& config);
  // ---- the control socket and the HTTP endpoints ----
  void handleControl(const ControlRequest& request, ControlServer::Reply reply);
  // `vipctl withdraw`: the withdraw guard (never-zero), then the Drainer's withdraw.
  void handleWithdraw(const ControlRequest& request, ControlServer::Reply reply);
  // Which endpoints a listener answers: every one (no metrics.healthListen), only /metrics
  // (metrics.listen beside a health listener) or only /healthz and /readyz (the health listener).
  enum class Endpoints { All, Metrics, Health };
  HttpResponse handleHttp(std::string_view target, Endpoints endpoints);
  void stopPeers(std::string shutdownCommunication, std::function<void()> done);

  // ---- DrainHost ----
  void setGracefulShutdown(bool on) override;
  void pushAnnouncements() override { announcer_.announce(); }
  std::vector<std::string> unacknowledgedPeers() const override {
    return announcer_.unacknowledgedPeers();
  }
  void unbindOwned() override { announcer_.unbindOwned(); }
  void bindAndAnnounce() override { announcer_.bindAndAnnounce(); }
  bool healthy() const override { return health_.healthy(); }
  size_t announceableCount() const override {
    return announcer_.vips().binder().announceable().size();
  }
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
  // ---- AnnouncerHost ----
  AnnounceGate gate() const override;
  bool returnPathBlocks(const bgp::Prefix& vip) const override { return returnPath_.blocks(vip); }
  // ---- KubeLinkHost ----
  nlohmann::json statusForKubernetes() const override { return status(); }
  policy::GuardCheck checkWithdraw(policy::GuardMoment moment) const override {
    return announcer_.checkWithdraw(moment);
  }
  bool mayFollowIntent() const override { return handoff_.active() && !shuttingDown_; }

  asio::io_context& io_;
  config::Config config_;
  netlink::AddressTable& table_;
  netlink::Monitor& monitor_;
  const Logger& log_;
  // The sessions, in config_.peers' order, and their ties to BFD.
  PeerSet peers_;
  Announcer announcer_;
  InstanceLock* instanceLock_ = nullptr;
  ControlServer control_;
  // control.instanceSocket: this instance's own socket (its pod's hooks and probes).
  std::unique_ptr<ControlServer> instanceControl_;
  HealthChecker health_;
  Metrics metrics_;
  HttpServer http_;
  // metrics.healthListen's listener; absent when the health endpoints share http_.
  std::optional<HttpServer> healthHttp_;
  // Config (re)loads since start, for status `config`: the start counts as a successful load.
  ReloadRecord reloads_;
  BgpListener listener_;
  asio::steady_timer housekeepingTimer_;
  bool shuttingDown_ = false;
  Drainer drainer_;
  Handoff handoff_;
  // Runs while this instance speaks; holds back a VIP whose packets get no answer.
  ReturnPathChecker returnPath_;

  // vipd doctor's checks at start and after each reload (issue 30), on a thread of their own;
  // status `doctor`. Its callbacks touch only itself and the logger.
  DoctorRunner doctor_;
  // The checks ran again once the health gate first opened (when, at start, no apiserver
  // answered for the certificate check).
  bool doctorRanOnHealth_ = false;

  // Declared after everything its callbacks touch; its thread ends before they are destroyed.
  BfdService bfd_;
  StatusReport report_;
  // The link to Kubernetes (kubernetes.enabled): the VipdNode, Events, the Node's requests.
  // Declared last: its timer and callbacks read everything above.
  KubeLink kube_;
};

}  // namespace vipd::daemon
