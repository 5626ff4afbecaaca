// The control socket (`control.socket`, a unix stream socket): one JSON request line in, one JSON
// response line out, then close. vipctl is its client.
//
// Access: mode 0600 (root only), or 0660 owned by `control.group` when one is configured. Every
// caller is also checked with SO_PEERCRED: uid 0, or a member of that group; anyone else gets
// {"error":"permission denied ..."} and the refusal is logged.
// Clients are bounded (issue 17): each must send its request line within a read timeout (5 s),
// at most maxClients are held at once (at the cap the longest-idle one makes room, with a
// throttled warning and a counter), and accept() failures back off (AcceptBackoff).
// Requests that change state (request.h's changesState: withdraw, announce, handoff-yield) are
// logged with the caller's uid and pid, and are not carried out when the client has closed the
// connection before vipd read them (it gave up; vipctl has a deadline of its own). The handoff's
// requests (betweenInstances) are taken from root or vipd's own user only (issue 43).
// Requests: {"command": NAME, ...}, NAME one of ControlCommand's (request.h).
// Responses: the command's JSON object, or {"error":"..."}. Oversized (> kMaxControlRequestBytes)
// or malformed requests get an error.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

#include "daemon/base/accept_backoff.h"
#include "daemon/base/client_cap.h"
#include "daemon/base/listener_stats.h"
#include "daemon/base/logger.h"
#include "daemon/base/throttled_count.h"
#include "daemon/control/request.h"

namespace vipd::daemon {

namespace asio = boost::asio;

inline constexpr size_t kMaxControlRequestBytes = 4096;

struct ControlServerOptions {
  // A client must send its whole request line within this time, or it is closed.
  std::chrono::milliseconds readTimeout{std::chrono::seconds(5)};
  // Clients held at once; at the cap the longest-idle one is closed to admit a new one.
  size_t maxClients = 32;
};

class ControlConnection;

// The process on the other end of a control connection, as SO_PEERCRED names it.
struct ControlCaller {
  unsigned uid = 0;
  unsigned gid = 0;
  int pid = 0;
};

class ControlServer {
 public:
  // Answers one request (already parsed and authorised) by calling `reply` exactly once, now or
  // later (`vipctl withdraw --wait` answers when the drain has been acknowledged).
  using Reply = std::function<void(nlohmann::json response)>;
  using Handler = std::function<void(const ControlRequest& request, Reply reply)>;

  // `group`: members may use the socket too (mode 0660); nullopt: root only (mode 0600).
  ControlServer(asio::io_context& io, std::string path, std::optional<std::string> group,
                Handler handler, const Logger& log, ControlServerOptions options = {});
  ~ControlServer();

  // Binds the socket. Fails if another live process owns it; a stale file is replaced.
  [[nodiscard]] tl::expected<void, std::string> open();
  // Whether a live process answers on `path` (the socket of a running vipd).
  static bool answering(asio::io_context& io, const std::string& path);
  bool bound() const { return bound_; }
  // Stops accepting and removes the socket file (only if it is still the one this server bound:
  // a successor may have bound the path since); open() may be called again.
  void close();
  // close() for a successor that takes the path over: the requests being answered still get
  // their answers (the successor's own yield request is one of them); the rest are closed.
  void handOver();
  const std::string& path() const { return path_; }

  // Lowers (or raises) the client cap, e.g. to fit the descriptor limit; at least 1.
  void setMaxClients(size_t limit);
  ListenerStats stats() const;

 private:
  friend class ControlConnection;
  // What the connections share with the server. Shared, not referenced: a connection that is
  // answering may outlive the server (handOver()); never the log.
  struct Shared {
    Shared(const Logger& log, std::string path, unsigned ownUid)
        : log(log), path(std::move(path)), ownUid(ownUid) {}
    const Logger& log;
    std::string path;
    unsigned ownUid;  // vipd's own user: another instance of it may send the handoff's requests
    ListenerStats stats;  // idle timeouts and refusals are counted by the connections
    ThrottledCount refusalWarnings;
  };

  void acceptNext();

  asio::io_context& io_;
  std::string path_;
  std::optional<std::string> group_;
  std::optional<unsigned> groupId_;  // resolved in open()
  Handler handler_;
  const Logger& log_;
  ControlServerOptions options_;
  asio::local::stream_protocol::acceptor acceptor_;
  bool bound_ = false;
  ino_t boundInode_ = 0;  // the socket file this server created
  std::shared_ptr<Shared> shared_;
  AcceptBackoff backoff_;
  ClientCap<ControlConnection> clients_;
};

}  // namespace vipd::daemon
