// ControlServer::handOver against close(). A daemonset instance that yields hands the node's
// control socket to its successor while it answers that successor's own yield request. The
// request being answered must still get its answer (before handOver existed it got an EOF, and
// every rollout logged "handoff interrupted"); a client that sent nothing yet is closed, and the
// path is free for the successor. And a client that has gone before its request was read (issue
// 43): a state-changing request is not carried out.
#include "daemon/control/server.h"

#include <grp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace vipd::daemon {
namespace {

using namespace std::chrono_literals;

// A blocking client with a 2 s receive timeout, so a missing answer fails the test, not hangs it.
int connectTo(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  timeval timeout{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  return fd;
}

// Everything the peer sends until it closes (or the receive timeout).
std::string readAll(int fd) {
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) {
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

class ControlServerHandOverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/vipd-control-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/vipd.sock";
    // The caller must be root or in the socket's group: the test's own group lets it run
    // unprivileged too.
    const group* own = ::getgrgid(::getgid());
    ASSERT_NE(own, nullptr);
    server_ = std::make_unique<ControlServer>(
        io_, path_, std::string(own->gr_name),
        [this](const ControlRequest& request, ControlServer::Reply reply) {
          // Held, as handleYield holds it while the sessions close.
          pendingCommand_ = request.name;
          pending_ = std::move(reply);
        },
        log_);
    ASSERT_TRUE(server_->open());
  }

  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Runs the event loop until `done` (bounded: 2 s).
  template <typename Done>
  bool runUntil(Done done) {
    auto deadline = std::chrono::steady_clock::now() + 2s;
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      io_.run_for(5ms);
      io_.restart();
    }
    return done();
  }

  // One client whose request is held by the handler, and one that sent nothing yet.
  void connectBoth() {
    answering_ = connectTo(path_);
    ASSERT_GE(answering_, 0);
    std::string request = R"({"command":"handoff-yield","identity":{}})" "\n";
    ASSERT_EQ(::write(answering_, request.data(), request.size()),
              static_cast<ssize_t>(request.size()));
    ASSERT_TRUE(runUntil([&] { return static_cast<bool>(pending_); }));
    waiting_ = connectTo(path_);
    ASSERT_GE(waiting_, 0);
    ASSERT_TRUE(runUntil([&] { return server_->stats().open == 2; }))
        << "open clients: " << server_->stats().open;
  }

  void answerAndFlush() {
    pending_({{"ok", true}});
    io_.run_for(100ms);
    io_.restart();
  }

  boost::asio::io_context io_;
  Logger log_{LogFormat::Text, LogLevel::Error};
  std::string dir_, path_;
  std::unique_ptr<ControlServer> server_;
  ControlServer::Reply pending_;
  std::string pendingCommand_;
  int answering_ = -1, waiting_ = -1;
};

TEST_F(ControlServerHandOverTest, TheRequestInHandIsAnsweredAndTheRestClosed) {
  connectBoth();
  EXPECT_EQ(pendingCommand_, "handoff-yield");
  server_->handOver();
  EXPECT_FALSE(std::filesystem::exists(path_)) << "the path is the successor's now";
  EXPECT_LT(connectTo(path_), 0) << "nothing accepts on the old path";
  answerAndFlush();
  EXPECT_EQ(readAll(answering_), "{\"ok\":true}\n");
  EXPECT_EQ(readAll(waiting_), "") << "the client that sent nothing is closed";
  ::close(answering_);
  ::close(waiting_);
}

TEST_F(ControlServerHandOverTest, CloseCutsEveryClientOff) {
  connectBoth();
  server_->close();
  EXPECT_FALSE(std::filesystem::exists(path_));
  answerAndFlush();
  EXPECT_EQ(readAll(answering_), "") << "close() (vipd exiting) answers nobody";
  EXPECT_EQ(readAll(waiting_), "");
  ::close(answering_);
  ::close(waiting_);
}

// Issue 43: a client that gave up (vipctl's deadline, a `timeout` wrapper) before vipd read its
// request. A frozen vipd that wakes finds the request in the socket and the client gone: a
// withdraw must not be carried out then. A client that only half-closes (done writing, still
// reading: lab.control_exchange) is still there and is answered.
TEST_F(ControlServerHandOverTest, AStateChangingRequestFromAClientThatHasGoneIsNotCarriedOut) {
  for (const char* command : {"withdraw", "announce", "handoff-yield"}) {
    int fd = connectTo(path_);
    ASSERT_GE(fd, 0);
    const std::string request = fmt::format(R"({{"command":"{}","identity":{{}}}})" "\n",
                                            command);
    ASSERT_EQ(::write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
    ::close(fd);  // before vipd has read a byte, as if it were frozen
  }
  EXPECT_FALSE(runUntil([&] { return static_cast<bool>(pending_); }))
      << pendingCommand_ << " was carried out for a client that had gone";
  EXPECT_EQ(server_->stats().open, 0u);

  int fd = connectTo(path_);
  ASSERT_GE(fd, 0);
  const std::string request = R"({"command":"withdraw"})" "\n";
  ASSERT_EQ(::write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  ::shutdown(fd, SHUT_WR);
  ASSERT_TRUE(runUntil([&] { return static_cast<bool>(pending_); }))
      << "a half-closed client is still waiting for its answer";
  EXPECT_EQ(pendingCommand_, "withdraw");
  answerAndFlush();
  EXPECT_EQ(readAll(fd), "{\"ok\":true}\n");
  ::close(fd);
}

}  // namespace
}  // namespace vipd::daemon
