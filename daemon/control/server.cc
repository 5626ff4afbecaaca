#include "daemon/control/server.h"

#include <grp.h>
#include <pwd.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/socket_base.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include "daemon/control/request.h"

namespace vipd::daemon {
namespace {

using local = asio::local::stream_protocol;

// Who is on the other end of `socket` (SO_PEERCRED, recorded by the kernel at connect()); nullopt
// when it cannot be read.
std::optional<ControlCaller> callerOf(local::socket& socket) {
  ucred cred{};
  socklen_t length = sizeof cred;
  if (::getsockopt(socket.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &length) != 0) {
    return std::nullopt;
  }
  return ControlCaller{cred.uid, cred.gid, cred.pid};
}

// Whether `caller` may use the control socket: root, or a member (primary or supplementary) of
// the configured group. Returns the refusal reason otherwise.
std::optional<std::string> refuse(const std::optional<ControlCaller>& caller,
                                  std::optional<unsigned> groupId,
                                  const std::optional<std::string>& groupName) {
  if (!caller) {
    return "cannot read the caller's credentials (SO_PEERCRED)";
  }
  if (caller->uid == 0) {
    return std::nullopt;
  }
  if (groupId) {
    if (caller->gid == *groupId) {
      return std::nullopt;
    }
    if (passwd* pw = ::getpwuid(caller->uid)) {
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
    return fmt::format("uid {} (pid {}) is not root and not in group {}", caller->uid,
                       caller->pid, *groupName);
  }
  return fmt::format("uid {} (pid {}) is not root", caller->uid, caller->pid);
}

// Whether the client has closed its end (POLLHUP: a unix stream socket's peer is gone, not merely
// done writing, which a half-close is): it gave up waiting, was killed by a `timeout` wrapper, or
// exited. What it asked for is then not carried out: nobody would learn the outcome, and a
// withdraw a frozen vipd reads when it wakes (the client long gone) would take the node out for a
// script that has moved on believing it failed.
bool clientGone(local::socket& socket) {
  pollfd p{socket.native_handle(), 0, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR)) != 0;
}

}  // namespace

// One client: read a line (bounded in size and time), answer, close.
class ControlConnection : public std::enable_shared_from_this<ControlConnection> {
 public:
  // `refusal`: the caller is not allowed; its request is still read (closing a unix socket with
  // unread data resets it, and the caller would lose the refusal) and answered with it.
  ControlConnection(local::socket socket, const ControlServer::Handler& handler,
                    std::optional<ControlCaller> caller, std::optional<std::string> refusal,
                    std::shared_ptr<ControlServer::Shared> shared,
                    std::chrono::milliseconds readTimeout)
      : socket_(std::move(socket)),
        handler_(handler),
        caller_(caller),
        refusal_(std::move(refusal)),
        shared_(std::move(shared)),
        readTimer_(socket_.get_executor()),
        readTimeout_(readTimeout) {}

  void run() {
    readTimer_.expires_after(readTimeout_);
    readTimer_.async_wait([weak = weak_from_this()](const boost::system::error_code& ec) {
      auto self = weak.lock();
      if (!ec && self && self->waitingForRequest_) {
        ++self->shared_->stats.idleTimeouts;
        self->close();
      }
    });
    asio::async_read_until(
        socket_, asio::dynamic_buffer(request_, kMaxControlRequestBytes), '\n',
        [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
          self->waitingForRequest_ = false;
          self->readTimer_.cancel();
          self->dispatch(ec, n);
        });
  }

  // Still waiting for its request line: may be closed to make room (ControlServer's cap).
  bool waitingForRequest() const { return waitingForRequest_; }

  void close() {
    boost::system::error_code ignored;
    socket_.shutdown(local::socket::shutdown_both, ignored);
    socket_.close(ignored);
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
    if (request->command) {
      if (!admit(*request->command)) {
        return;
      }
    }
    handler_(*request, [self = shared_from_this()](nlohmann::json response) {
      self->send(response);
    });
  }

  // The checks that depend on what is asked, after the request is parsed. Returns whether the
  // handler may have it; otherwise the client is answered (or closed) here.
  bool admit(ControlCommand command) {
    const auto name = commandName(command);
    const auto& log = shared_->log;
    const ControlCaller caller = caller_.value_or(ControlCaller{});
    if (betweenInstances(command) && caller.uid != 0 && caller.uid != shared_->ownUid) {
      ++shared_->stats.refused;
      if (auto count = shared_->refusalWarnings.add(ThrottledCount::Clock::now())) {
        log.warn("control", "refused {} from uid {} (pid {}) on {}: a request between vipd "
                 "instances, taken from root or vipd's own user only; the speaker carries on "
                 "({} refused since the last report)",
                 name, caller.uid, caller.pid, shared_->path, *count);
      }
      send({{"error", fmt::format("permission denied: {} is vipd's own request between its "
                                  "instances; only root (or vipd's own user) may send it",
                                  name)}});
      return false;
    }
    if (changesState(command) && clientGone(socket_)) {
      log.warn("control", "not carrying out {} from uid {} (pid {}) on {}: the client closed the "
               "connection before vipd read the request (it gave up waiting: was vipd frozen or "
               "overloaded?); nothing changed",
               name, caller.uid, caller.pid, shared_->path);
      close();
      return false;
    }
    if (changesState(command)) {
      log.info("control", "{} requested by uid {} (pid {}) on {}", name, caller.uid, caller.pid,
               shared_->path);
    }
    return true;
  }

  local::socket socket_;
  const ControlServer::Handler& handler_;
  std::optional<ControlCaller> caller_;
  std::optional<std::string> refusal_;
  std::shared_ptr<ControlServer::Shared> shared_;
  asio::steady_timer readTimer_;
  std::chrono::milliseconds readTimeout_;
  bool waitingForRequest_ = true;
  std::string request_;
  std::string reply_;
};

ControlServer::ControlServer(asio::io_context& io, std::string path,
                             std::optional<std::string> group, Handler handler, const Logger& log,
                             ControlServerOptions options)
    : io_(io),
      path_(std::move(path)),
      group_(std::move(group)),
      handler_(std::move(handler)),
      log_(log),
      options_(options),
      acceptor_(io),
      shared_(std::make_shared<Shared>(log, path_, ::geteuid())),
      backoff_(io, log, "control socket " + path_),
      clients_(log, options_.maxClients) {}

ControlServer::~ControlServer() { close(); }

void ControlServer::close() {
  clients_.closeAll();
  handOver();
}

void ControlServer::handOver() {
  backoff_.cancel();
  clients_.closeWaiting();
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  if (bound_) {
    // Only our own file: a successor that took the path over has bound a new one there.
    struct stat st {};
    if (::stat(path_.c_str(), &st) == 0 && st.st_ino == boundInode_) {
      ::unlink(path_.c_str());
    }
  }
  bound_ = false;
}

bool ControlServer::answering(asio::io_context& io, const std::string& path) {
  local::socket probe(io);
  boost::system::error_code ec;
  probe.connect(local::endpoint(path), ec);
  return !ec;
}

ListenerStats ControlServer::stats() const {
  ListenerStats out = shared_->stats;
  out.open = clients_.open();
  out.limit = clients_.limit();
  out.limitHits = clients_.hits();
  return out;
}

void ControlServer::setMaxClients(size_t limit) { clients_.setLimit(limit); }

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
    struct stat st {};
    if (::stat(path_.c_str(), &st) == 0) {
      boundInode_ = st.st_ino;
    }
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
    acceptor_.listen(asio::socket_base::max_listen_connections, ec);
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
    if (ec) {
      ++shared_->stats.acceptFailures;
      backoff_.failed(ec, [this] { acceptNext(); });
      return;
    }
    backoff_.succeeded();
    if (!clients_.admit("control socket " + path_, "clients")) {
      boost::system::error_code ignored;
      socket.close(ignored);
    } else {
      const auto caller = callerOf(socket);
      auto reason = refuse(caller, groupId_, group_);
      if (reason) {
        ++shared_->stats.refused;
        if (auto count = shared_->refusalWarnings.add(ThrottledCount::Clock::now())) {
          log_.warn("control", "refused a request on {}: {} ({} refused since the last report)",
                    path_, *reason, *count);
        }
      }
      auto client = std::make_shared<ControlConnection>(std::move(socket), handler_, caller,
                                                        std::move(reason), shared_,
                                                        options_.readTimeout);
      clients_.add(client);
      client->run();
    }
    acceptNext();
  });
}

}  // namespace vipd::daemon
