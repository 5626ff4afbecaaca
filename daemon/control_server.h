// The control socket (`control.socket`, a unix stream socket, mode 0600): one JSON request line
// in, one JSON response line out, then close. vipctl is its client.
//
// Requests: {"command":"status"}. Responses: the command's JSON object, or {"error":"..."}.
// Oversized (> kMaxControlRequestBytes) or malformed requests get an error response.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <boost/asio.hpp>
#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

#include "daemon/logger.h"

namespace vipd::daemon {

namespace asio = boost::asio;

inline constexpr size_t kMaxControlRequestBytes = 4096;

class ControlServer {
 public:
  // Answers one request (already parsed) with a JSON object.
  using Handler = std::function<nlohmann::json(const nlohmann::json& request)>;

  ControlServer(asio::io_context& io, std::string path, Handler handler, const Logger& log);
  ~ControlServer();

  // Binds the socket. Fails if another live process owns it; a stale file is replaced.
  [[nodiscard]] tl::expected<void, std::string> open();

 private:
  void acceptNext();

  asio::io_context& io_;
  std::string path_;
  Handler handler_;
  const Logger& log_;
  asio::local::stream_protocol::acceptor acceptor_;
  bool bound_ = false;
};

}  // namespace vipd::daemon
