// The daemon's own client of another vipd's control socket (the handoff). vipctl has its own,
// synchronous one; this one runs on the event loop and is bounded by a deadline.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

namespace vipd::daemon {

namespace asio = boost::asio;

using ControlResponse = std::function<void(tl::expected<nlohmann::json, std::string> response)>;

// Sends one request line to the socket at `path` and calls `done` exactly once with the parsed
// response, or an error saying what failed (connect, write, timeout, malformed answer).
void sendControlRequest(asio::io_context& io, const std::string& path,
                        const nlohmann::json& request, std::chrono::milliseconds timeout,
                        ControlResponse done);

}  // namespace vipd::daemon
