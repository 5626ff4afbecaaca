#include "daemon/control_server.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

namespace vipd::daemon {
namespace {

using local = asio::local::stream_protocol;

// One client: read a line (bounded), answer, close.
class ControlClient : public std::enable_shared_from_this<ControlClient> {
 public:
  ControlClient(local::socket socket, const ControlServer::Handler& handler)
      : socket_(std::move(socket)), handler_(handler) {}

  void run() {
    asio::async_read_until(
        socket_, asio::dynamic_buffer(request_, kMaxControlRequestBytes), '\n',
        [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
          self->answer(ec, n);
        });
  }

 private:
  void answer(const boost::system::error_code& ec, size_t n) {
    nlohmann::json response;
    if (ec == asio::error::not_found) {
      response = {{"error", fmt::format("request longer than {} bytes", kMaxControlRequestBytes)}};
    } else if (ec && ec != asio::error::eof) {
      return;
    } else {
      auto line = request_.substr(0, n == 0 ? request_.size() : n);
      auto request = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (request.is_discarded() || !request.is_object() || !request.contains("command") ||
          !request["command"].is_string()) {
        response = {{"error", "malformed request: expected {\"command\": \"...\"}"}};
      } else {
        response = handler_(request);
      }
    }
    reply_ = response.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    asio::async_write(socket_, asio::buffer(reply_),
                      [self = shared_from_this()](const boost::system::error_code&, size_t) {
                        boost::system::error_code ignored;
                        self->socket_.shutdown(local::socket::shutdown_both, ignored);
                      });
  }

  local::socket socket_;
  const ControlServer::Handler& handler_;
  std::string request_;
  std::string reply_;
};

}  // namespace

ControlServer::ControlServer(asio::io_context& io, std::string path, Handler handler,
                             const Logger& log)
    : io_(io), path_(std::move(path)), handler_(std::move(handler)), log_(log), acceptor_(io) {}

ControlServer::~ControlServer() {
  if (bound_) {
    ::unlink(path_.c_str());
  }
}

tl::expected<void, std::string> ControlServer::open() {
  std::error_code fsError;
  std::filesystem::create_directories(std::filesystem::path(path_).parent_path(), fsError);
  if (fsError) {
    return tl::unexpected(fmt::format("cannot create the directory of control socket {}: {}",
                                      path_, fsError.message()));
  }
  if (std::filesystem::exists(path_, fsError)) {
    // A socket that still answers belongs to a running vipd: never steal it.
    local::socket probe(io_);
    boost::system::error_code ec;
    probe.connect(local::endpoint(path_), ec);
    if (!ec) {
      return tl::unexpected(fmt::format(
          "control socket {} is in use by another running vipd; stop it or set control.socket",
          path_));
    }
    ::unlink(path_.c_str());
  }
  boost::system::error_code ec;
  acceptor_.open(local(), ec);
  if (!ec) {
    acceptor_.bind(local::endpoint(path_), ec);
  }
  if (!ec) {
    bound_ = true;
    ::chmod(path_.c_str(), 0600);
    acceptor_.listen(16, ec);
  }
  if (ec) {
    return tl::unexpected(fmt::format("cannot listen on control socket {}: {}", path_,
                                      ec.message()));
  }
  acceptNext();
  return {};
}

void ControlServer::acceptNext() {
  acceptor_.async_accept([this](const boost::system::error_code& ec, local::socket socket) {
    if (ec == asio::error::operation_aborted) {
      return;
    }
    if (!ec) {
      std::make_shared<ControlClient>(std::move(socket), handler_)->run();
    } else {
      log_.warn("control", "accept on {} failed: {}; still listening", path_, ec.message());
    }
    acceptNext();
  });
}

}  // namespace vipd::daemon
