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
#include "daemon/control_server.h"
#include "daemon/drain_sequence.h"
#include "daemon/health_checker.h"
#include "daemon/http_server.h"
#include "daemon/logger.h"
#include "daemon/metrics.h"
#include "daemon/peer_session.h"
#include "daemon/vip_binder.h"
#include "daemon/withdrawn_state.h"
#include "netlink/address_table.h"

namespace vipd::daemon {

class Speaker {
 public:
  // `table` and `monitor` are the kernel's (or fakes); they must outlive the Speaker.
  Speaker(asio::io_context& io, config::Config config, netlink::AddressTable& table,
          netlink::Monitor& monitor, const Logger& log);

  // Checks the router ID, loads the withdrawn state, binds the VIPs (unless withdrawn), opens the
  // control socket, the metrics listener and the BGP listener (if enabled), starts the health
  // checks, then every session. An error is one sentence saying what to fix.
  [[nodiscard]] tl::expected<void, std::string> start();
  // SIGTERM: drains (unless already withdrawn), sends Cease 6/2 "vipd: node draining" to every
  // peer, then runs `done`.
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

  // ---- drain, withdraw, announce (speaker_drain.cc) ----
  using DrainSettled = std::function<void(bool acknowledged, std::string detail)>;
  void startDrain(std::string why, std::optional<std::chrono::milliseconds> ackTimeout,
                  DrainSettled onSettled, std::function<void()> onFinished);
  void runDrainActions(std::vector<DrainAction> actions);
  std::string unacknowledgedDetail() const;
  void handleWithdraw(const nlohmann::json& request, ControlServer::Reply reply);
  void handleAnnounce(ControlServer::Reply reply);
  void stopPeers(std::string shutdownCommunication, std::function<void()> done);

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
  ControlServer control_;
  HealthChecker health_;
  Metrics metrics_;
  HttpServer http_;
  WithdrawnState withdrawnState_;
  std::optional<Withdrawn> withdrawn_;
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
};

}  // namespace vipd::daemon
