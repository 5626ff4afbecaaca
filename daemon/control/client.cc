#include "daemon/control/client.h"

#include <memory>

#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <fmt/format.h>

namespace vipd::daemon {
namespace {

// A response larger than this is not from vipd.
constexpr size_t kMaxResponseBytes = 1 << 20;

struct Exchange : std::enable_shared_from_this<Exchange> {
  Exchange(asio::io_context& io, std::string path, ControlResponse done)
      : socket(io), deadline(io), path(std::move(path)), done(std::move(done)) {}

  void finish(tl::expected<nlohmann::json, std::string> result) {
    if (!done) {
      return;
    }
    deadline.cancel();
    boost::system::error_code ignored;
    socket.close(ignored);
    std::exchange(done, nullptr)(std::move(result));
  }

  void fail(std::string_view step, const boost::system::error_code& ec) {
    finish(tl::unexpected(fmt::format("{} {}: {}", step, path, ec.message())));
  }

  asio::local::stream_protocol::socket socket;
  asio::steady_timer deadline;
  std::string path;
  ControlResponse done;
  std::string out;
  std::string in;
};

}  // namespace

void sendControlRequest(asio::io_context& io, const std::string& path,
                        const nlohmann::json& request, std::chrono::milliseconds timeout,
                        ControlResponse done) {
  auto x = std::make_shared<Exchange>(io, path, std::move(done));
  x->out = request.dump() + "\n";
  x->deadline.expires_after(timeout);
  x->deadline.async_wait([x, timeout](const boost::system::error_code& ec) {
    if (!ec) {
      x->finish(tl::unexpected(
          fmt::format("no answer from {} within {}ms", x->path, timeout.count())));
    }
  });
  x->socket.async_connect(
      asio::local::stream_protocol::endpoint(path), [x](const boost::system::error_code& ec) {
        if (ec) {
          return x->fail("cannot connect to", ec);
        }
        asio::async_write(
            x->socket, asio::buffer(x->out), [x](const boost::system::error_code& ec, size_t) {
              if (ec) {
                return x->fail("cannot write to", ec);
              }
              asio::async_read_until(
                  x->socket, asio::dynamic_buffer(x->in, kMaxResponseBytes), '\n',
                  [x](const boost::system::error_code& ec, size_t n) {
                    if (ec) {
                      return x->fail("no complete answer from", ec);
                    }
                    auto j = nlohmann::json::parse(x->in.substr(0, n), nullptr, false);
                    if (j.is_discarded() || !j.is_object()) {
                      return x->finish(
                          tl::unexpected(fmt::format("malformed answer from {}", x->path)));
                    }
                    x->finish(std::move(j));
                  });
            });
      });
}

}  // namespace vipd::daemon
