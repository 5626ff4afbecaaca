// The control socket (`control.socket`, a unix stream socket): one JSON request line in, one JSON
// response line out, then close. vipctl is its client.
//
// Access: mode 0600 (root only), or 0660 owned by `control.group` when one is configured. Every
// caller is also checked with SO_PEERCRED: uid 0, or a member of that group; anyone else gets
// {"error":"permission denied ..."} and the refusal is logged.
// Requests: {"command":"status"|"withdraw"|"announce", ...}. Responses: the command's JSON object,
// or {"error":"..."}. Oversized (> kMaxControlRequestBytes) or malformed requests get an error.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio.hpp>
#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

#include "daemon/base/logger.h"

namespace vipd::daemon {

namespace asio = boost::asio;

inline constexpr size_t kMaxControlRequestBytes = 4096;

class ControlServer {
 public:
  // Answers one request (already parsed and authorised) by calling `reply` exactly once, now or
  // later (`vipctl withdraw --wait` answers when the drain has been acknowledged).
  using Reply = std::function<void(nlohmann::json response)>;
  using Handler = std::function<void(const nlohmann::json& request, Reply reply)>;

  // `group`: members may use the socket too (mode 0660); nullopt: root only (mode 0600).
  ControlServer(asio::io_context& io, std::string path, std::optional<std::string> group,
                Handler handler, const Logger& log);
  ~ControlServer();

  // Binds the socket. Fails if another live process owns it; a stale file is replaced.
  [[nodiscard]] tl::expected<void, std::string> open();

 private:
  void acceptNext();

  asio::io_context& io_;
  std::string path_;
  std::optional<std::string> group_;
  std::optional<unsigned> groupId_;  // resolved in open()
  Handler handler_;
  const Logger& log_;
  asio::local::stream_protocol::acceptor acceptor_;
  bool bound_ = false;
};

}  // namespace vipd::daemon
