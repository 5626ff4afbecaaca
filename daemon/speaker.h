// The running vipd: one PeerSession per configured peer, the VIP binder that decides which VIPs
// may be announced, the kernel monitor that tells it when that changes, the control socket and
// (optionally) the BGP listener. Runs on one io_context thread and owns all of that state.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio.hpp>
#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

#include "config/config.h"
#include "daemon/control_server.h"
#include "daemon/logger.h"
#include "daemon/peer_session.h"
#include "daemon/vip_binder.h"
#include "netlink/address_table.h"

namespace vipd::daemon {

class Speaker {
 public:
  // `table` and `monitor` are the kernel's (or fakes); they must outlive the Speaker.
  Speaker(asio::io_context& io, config::Config config, netlink::AddressTable& table,
          netlink::Monitor& monitor, const Logger& log);

  // Checks the router ID, binds the VIPs, opens the control socket and the listener (if enabled),
  // then starts every session. An error is one sentence saying what to fix.
  [[nodiscard]] tl::expected<void, std::string> start();
  // Withdraws every VIP, sends Cease 6/2 with `shutdownCommunication` to each peer, waits
  // drain.unbindDelay, removes the addresses vipd added, then runs `done`.
  void shutdown(std::string shutdownCommunication, std::function<void()> done);

  nlohmann::json status() const;

 private:
  // Re-reads the kernel, logs what changed and sends the resulting announcements or
  // withdrawals to every peer at once.
  void refreshAndAnnounce(std::string_view why);
  void logBindEvents(const std::vector<BindEvent>& events);
  void pushAnnouncements();
  void watchKernel();
  void onKernelChanges();
  void scheduleRebind();
  void scheduleReconcile();
  void warnAboutArp() const;
  void acceptNext();
  nlohmann::json handleControl(const nlohmann::json& request);

  asio::io_context& io_;
  config::Config config_;
  netlink::AddressTable& table_;
  netlink::Monitor& monitor_;
  const Logger& log_;
  VipBinder binder_;
  std::vector<std::unique_ptr<PeerSession>> peers_;
  ControlServer control_;
  std::optional<asio::ip::tcp::acceptor> listener_;
  asio::posix::stream_descriptor kernelEvents_;
  asio::steady_timer rebindTimer_;
  asio::steady_timer reconcileTimer_;
  asio::steady_timer unbindTimer_;
  bool rebindPending_ = false;
  bool shuttingDown_ = false;
};

}  // namespace vipd::daemon
