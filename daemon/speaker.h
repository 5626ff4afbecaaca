// The running vipd: one PeerSession per configured peer, the VIPs and whether each may be
// announced, the control socket and (optionally) the BGP listener. Runs on one io_context thread.
#pragma once

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

namespace vipd::daemon {

class Speaker {
 public:
  Speaker(asio::io_context& io, config::Config config, const Logger& log);

  // Opens the control socket and the listener (if enabled), then starts every session.
  [[nodiscard]] tl::expected<void, std::string> start();
  // Withdraws every VIP, sends Cease 6/2 with `shutdownCommunication` to each peer and runs
  // `done` once the last NOTIFICATION is written (bounded by a flush timeout).
  void shutdown(std::string shutdownCommunication, std::function<void()> done);

  nlohmann::json status() const;

 private:
  struct VipState {
    config::Vip vip;
    bool interfaceExists = false;
    bool bound = false;
    bool checked = false;  // false until the first check, so the starting state is logged too
  };

  void checkVips();
  void scheduleVipCheck();
  void pushAnnouncements();
  void acceptNext();
  nlohmann::json handleControl(const nlohmann::json& request);

  asio::io_context& io_;
  config::Config config_;
  const Logger& log_;
  std::vector<std::unique_ptr<PeerSession>> peers_;
  std::vector<VipState> vips_;
  ControlServer control_;
  std::optional<asio::ip::tcp::acceptor> listener_;
  asio::steady_timer vipCheckTimer_;
  bool shuttingDown_ = false;
};

}  // namespace vipd::daemon
