#include "daemon/control/control_server.h"

#include <grp.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "daemon/control/control_request.h"

namespace vipd::daemon {
namespace {

using local = asio::local::stream_protocol;

// Whether the peer on `socket` may use the control socket: root, or a member (primary or
// supplementary) of the configured group. Returns the refusal reason otherwise.
std::optional<std::string> refuse(local::socket& socket, std::optional<unsigned> groupId,
                                  const std::optional<std::string>& groupName) {
  ucred cred{};
  socklen_t length = sizeof cred;
  if (::getsockopt(socket.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &length) != 0) {
    return "cannot read the caller's credentials (SO_PEERCRED)";
  }
  if (cred.uid == 0) {
    return std::nullopt;
  }
  if (groupId) {
    if (cred.gid == *groupId) {
      return std::nullopt;
    }
    if (passwd* pw = ::getpwuid(cred.uid)) {
      int count = 64;
      std::vector<gid_t> groups(static_cast<size_t>(count));
      if (::getgrouplist(pw->pw_name, pw->pw_gid, groups.data(), &count) >= 0) {
        for (int i = 0; i < count; ++i) {
          if (groups[static_cast<size_t>(i)] == *groupId) {
            return std::nullopt;
          }
        }
      }
    }
    return fmt::format("uid {} (pid {}) is not root and not in group {}", cred.uid, cred.pid,
                       *groupName);
  }
  return fmt::format("uid {} (pid {}) is not root", cred.uid, cred.pid);
}

// One client: read a line (bounded), answer, close.
class ControlClient : public std::enable_shared_from_this<ControlClient> {
 public:
  // `refusal`: the caller is not allowed; its request is still read (closing a unix socket with
  // unread data resets it, and the caller would lose the refusal) and answered with it.
  ControlClient(local::socket socket, const ControlServer::Handler& handler,
                std::optional<std::string> refusal)
      : socket_(std::move(socket)), handler_(handler), refusal_(std::move(refusal)) {}

  void run() {
    asio::async_read_until(
        socket_, asio::dynamic_buffer(request_, kMaxControlRequestBytes), '\n',
        [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
          self->dispatch(ec, n);
        });
  }

  void send(const nlohmann::json& response) {
    reply_ = response.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    asio::async_write(socket_, asio::buffer(reply_),
                      [self = shared_from_this()](const boost::system::error_code&, size_t) {
                        boost::system::error_code ignored;
                        self->socket_.shutdown(local::socket::shutdown_both, ignored);
                      });
  }

 private:
  void dispatch(const boost::system::error_code& ec, size_t n) {
    if (refusal_) {
      send({{"error", "permission denied: " + *refusal_}});
      return;
    }
    if (ec == asio::error::not_found) {
      send({{"error", fmt::format("request longer than {} bytes", kMaxControlRequestBytes)}});
      return;
    }
    if (ec && ec != asio::error::eof) {
      return;
    }
    auto line = request_.substr(0, n == 0 ? request_.size() : n);
    auto request = parseControlRequest(line);
    if (!request) {
      send({{"error", request.error()}});
      return;
    }
    handler_(*request, [self = shared_from_this()](nlohmann::json response) {
      self->send(response);
    });
  }

  local::socket socket_;
  const ControlServer::Handler& handler_;
  std::optional<std::string> refusal_;
  std::string request_;
  std::string reply_;
};

}  // namespace

ControlServer::ControlServer(asio::io_context& io, std::string path,
                             std::optional<std::string> group, Handler handler, const Logger& log)
    : io_(io),
      path_(std::move(path)),
      group_(std::move(group)),
      handler_(std::move(handler)),
      log_(log),
      acceptor_(io) {}

ControlServer::~ControlServer() {
  if (bound_) {
    ::unlink(path_.c_str());
  }
}

tl::expected<void, std::string> ControlServer::open() {
  if (group_) {
    group* g = ::getgrnam(group_->c_str());
    if (g == nullptr) {
      return tl::unexpected(
          fmt::format("control.group '{}' does not exist on this node", *group_));
    }
    groupId_ = g->gr_gid;
  }
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
    // Created with no access for anyone but root until chmod below: no window for others.
    mode_t previous = ::umask(0177);
    acceptor_.bind(local::endpoint(path_), ec);
    ::umask(previous);
  }
  if (!ec) {
    bound_ = true;
    if (groupId_) {
      if (::chown(path_.c_str(), static_cast<uid_t>(-1), *groupId_) != 0 ||
          ::chmod(path_.c_str(), 0660) != 0) {
        const int error = errno;
        // The owner may hand a file only to a group it is in itself; any other group takes
        // CAP_CHOWN, which vipd's manifests do not grant.
        return tl::unexpected(fmt::format(
            "cannot give group {} access to control socket {}: {}{}", *group_, path_,
            std::strerror(error),
            error == EPERM ? fmt::format("; handing the socket to a group vipd is not a member "
                                         "of needs CAP_CHOWN: run vipd with group {} among its "
                                         "groups, or grant CAP_CHOWN",
                                         *group_)
                           : std::string()));
      }
    } else {
      ::chmod(path_.c_str(), 0600);
    }
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
      auto reason = refuse(socket, groupId_, group_);
      if (reason) {
        log_.warn("control", "refused a request on {}: {}", path_, *reason);
      }
      std::make_shared<ControlClient>(std::move(socket), handler_, std::move(reason))->run();
    } else {
      log_.warn("control", "accept on {} failed: {}; still listening", path_, ec.message());
    }
    acceptNext();
  });
}

}  // namespace vipd::daemon
