// HttpServer over loopback with a real client: the server runs on an io_context in a background
// thread (it has none of its own); the client is plain blocking POSIX sockets with a receive
// timeout, so a server bug fails a test instead of hanging it.
#include "daemon/http/server.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <optional>
#include <string>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

namespace vipd::daemon {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// A blocking loopback client. Every receive gives up after 3 s.
class Client {
 public:
  explicit Client(uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    timeval timeout{3, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  }
  ~Client() { ::close(fd_); }

  bool connected() const { return connected_; }

  bool send(std::string_view data) {
    while (!data.empty()) {
      auto n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) {
        return false;
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Everything until the server closes; nullopt if it did not close within the timeout.
  std::optional<std::string> readToEof() {
    std::string out = std::move(pending_);
    pending_.clear();
    char buffer[4096];
    for (;;) {
      auto n = ::recv(fd_, buffer, sizeof buffer, 0);
      if (n == 0) {
        return out;
      }
      if (n < 0) {
        return errno == ECONNRESET ? std::optional(out) : std::nullopt;
      }
      out.append(buffer, static_cast<size_t>(n));
    }
  }

  // One response (head + Content-Length body); empty on timeout or close.
  std::string readResponse(bool head = false) {
    char buffer[4096];
    size_t end;
    while ((end = pending_.find("\r\n\r\n")) == std::string::npos) {
      if (!fill(buffer, sizeof buffer)) {
        return {};
      }
    }
    end += 4;
    size_t length = 0;
    if (auto at = pending_.find("Content-Length: "); at != std::string::npos && at < end) {
      length = std::stoul(pending_.substr(at + 16));
    }
    if (head) {
      length = 0;
    }
    while (pending_.size() < end + length) {
      if (!fill(buffer, sizeof buffer)) {
        return {};
      }
    }
    auto response = pending_.substr(0, end + length);
    pending_.erase(0, end + length);
    return response;
  }

 private:
  bool fill(char* buffer, size_t size) {
    auto n = ::recv(fd_, buffer, size, 0);
    if (n <= 0) {
      return false;
    }
    pending_.append(buffer, static_cast<size_t>(n));
    return true;
  }

  int fd_;
  bool connected_ = false;
  std::string pending_;
};

HttpResponse route(std::string_view target) {
  if (target == "/metrics") {
    return {200, "text/plain; version=0.0.4", "vipd_ready 1\n"};
  }
  if (target == "/throw") {
    throw std::runtime_error("boom");
  }
  return {404, "text/plain", "not found\n"};
}

class HttpServerTest : public ::testing::Test {
 protected:
  void start(HttpServerOptions options = {}) {
    server_.emplace(io_, log_, route, options);
    auto listening = server_->listen("127.0.0.1", 0);
    ASSERT_TRUE(listening) << listening.error();
    ASSERT_NE(server_->port(), 0);
    thread_ = std::thread([this] { io_.run(); });
  }

  void TearDown() override {
    if (thread_.joinable()) {
      asio::post(io_, [this] { server_.reset(); });
      work_.reset();
      io_.stop();
      thread_.join();
    }
  }

  uint16_t port() const { return server_->port(); }

  // Read on the server's thread.
  ListenerStats stats() {
    std::promise<ListenerStats> result;
    asio::post(io_, [&] { result.set_value(server_->stats()); });
    return result.get_future().get();
  }

  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_{
      asio::make_work_guard(io_)};
  Logger log_{LogFormat::Text, LogLevel::Error};
  std::optional<HttpServer> server_;
  std::thread thread_;
};

TEST_F(HttpServerTest, AnswersGetWithTheHandlersResponse) {
  start();
  Client client(port());
  ASSERT_TRUE(client.connected());
  ASSERT_TRUE(client.send("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  auto response = client.readToEof();
  ASSERT_TRUE(response);
  EXPECT_THAT(*response, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(*response, HasSubstr("Content-Type: text/plain; version=0.0.4\r\n"));
  EXPECT_THAT(*response, HasSubstr("Content-Length: 13\r\n"));
  EXPECT_THAT(*response, HasSubstr("\r\n\r\nvipd_ready 1\n"));
}

TEST_F(HttpServerTest, PassesTheHandlers404Through) {
  start();
  Client client(port());
  ASSERT_TRUE(client.send("GET /nope?x=1 HTTP/1.1\r\nHost: x\r\n\r\n"));
  auto response = client.readResponse();
  EXPECT_THAT(response, StartsWith("HTTP/1.1 404 Not Found\r\n"));
  EXPECT_THAT(response, HasSubstr("\r\n\r\nnot found\n"));
}

TEST_F(HttpServerTest, HeadGetsTheLengthButNoBody) {
  start();
  Client client(port());
  ASSERT_TRUE(client.send("HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  auto response = client.readToEof();
  ASSERT_TRUE(response);
  EXPECT_THAT(*response, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(*response, HasSubstr("Content-Length: 13\r\n"));
  EXPECT_EQ(response->substr(response->find("\r\n\r\n") + 4), "");
}

TEST_F(HttpServerTest, RejectsOtherMethodsWith405) {
  start();
  Client client(port());
  ASSERT_TRUE(client.send("POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"));
  auto response = client.readToEof();
  ASSERT_TRUE(response);
  EXPECT_THAT(*response, StartsWith("HTTP/1.1 405 Method Not Allowed\r\n"));
  EXPECT_THAT(*response, HasSubstr("Allow: GET, HEAD\r\n"));
}

TEST_F(HttpServerTest, RejectsAnOversizedHeadWith431AndCloses) {
  start({.maxHeaderBytes = 1024});
  Client client(port());
  ASSERT_TRUE(client.send(
      "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Padding: " + std::string(4000, 'a') + "\r\n\r\n"));
  auto response = client.readToEof();
  ASSERT_TRUE(response);
  EXPECT_THAT(*response, StartsWith("HTTP/1.1 431 "));
}

TEST_F(HttpServerTest, RejectsAnOversizedBodyWith413AndCloses) {
  start();
  Client client(port());
  ASSERT_TRUE(client.send("GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" +
                          std::string(2000, 'a')));
  auto response = client.readToEof();
  ASSERT_TRUE(response);
  EXPECT_THAT(*response, StartsWith("HTTP/1.1 413 Payload Too Large\r\n"));
}

TEST_F(HttpServerTest, RejectsGarbageWith400) {
  start();
  Client client(port());
  ASSERT_TRUE(client.send("\x16\x03\x01 this is not http\r\n\r\n"));
  auto response = client.readToEof();
  ASSERT_TRUE(response);
  EXPECT_THAT(*response, StartsWith("HTTP/1.1 400 Bad Request\r\n"));
}

TEST_F(HttpServerTest, HandlerExceptionBecomes500) {
  start();
  Client client(port());
  ASSERT_TRUE(client.send("GET /throw HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_THAT(client.readResponse(), StartsWith("HTTP/1.1 500 Internal Server Error\r\n"));
  // The connection survives a handler failure.
  ASSERT_TRUE(client.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_THAT(client.readResponse(), StartsWith("HTTP/1.1 200 OK\r\n"));
}

TEST_F(HttpServerTest, ClosesAnIdleClientAfterTheReadTimeout) {
  start({.readTimeout = std::chrono::milliseconds(200)});
  Client client(port());
  ASSERT_TRUE(client.connected());
  const auto begin = std::chrono::steady_clock::now();
  auto response = client.readToEof();
  ASSERT_TRUE(response) << "server kept an idle connection open";
  EXPECT_EQ(*response, "");
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(2));
}

TEST_F(HttpServerTest, ClosesASlowClientThatTricklesItsRequest) {
  start({.readTimeout = std::chrono::milliseconds(300)});
  Client client(port());
  const auto begin = std::chrono::steady_clock::now();
  // Each byte comes well within the timeout, but the request as a whole does not.
  for (char c : std::string_view("GET /metrics HTTP/1.1\r\n")) {
    if (!client.send(std::string(1, c))) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
  }
  auto response = client.readToEof();
  ASSERT_TRUE(response);
  EXPECT_EQ(*response, "");
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(3));
}

TEST_F(HttpServerTest, ServesSequentialRequestsOnOneConnection) {
  start();
  Client client(port());
  ASSERT_TRUE(client.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_THAT(client.readResponse(), StartsWith("HTTP/1.1 200 OK\r\n"));
  ASSERT_TRUE(client.send("GET /other HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_THAT(client.readResponse(), StartsWith("HTTP/1.1 404 Not Found\r\n"));
}

TEST_F(HttpServerTest, ServesSequentialConnections) {
  start();
  for (int i = 0; i < 2; ++i) {
    Client client(port());
    ASSERT_TRUE(client.send("GET /metrics HTTP/1.0\r\n\r\n"));
    auto response = client.readToEof();
    ASSERT_TRUE(response);
    EXPECT_THAT(*response, StartsWith("HTTP/1.0 200 OK\r\n"));
  }
}

// At the cap, an idle keep-alive connection makes room for a new client: idle clients (a flood,
// or a scraper's pool) must not lock out the kubelet's probes (issue 17, item 3).
TEST_F(HttpServerTest, ClosesTheLongestIdleConnectionToAdmitANewOneAtTheLimit) {
  start({.maxConnections = 2});
  Client first(port());
  ASSERT_TRUE(first.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
  ASSERT_THAT(first.readResponse(), StartsWith("HTTP/1.1 200 OK\r\n"));
  Client second(port());  // idle: sends nothing
  ASSERT_TRUE(second.connected());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // accepted before the third
  Client third(port());
  ASSERT_TRUE(third.send("GET /metrics HTTP/1.0\r\n\r\n"));
  auto answered = third.readToEof();
  ASSERT_TRUE(answered);
  EXPECT_THAT(*answered, StartsWith("HTTP/1.0 200 OK\r\n"));
  auto evicted = first.readToEof();  // the first was accepted first: idle the longest
  ASSERT_TRUE(evicted) << "the longest-idle connection should have been closed";
  EXPECT_EQ(*evicted, "");
  ASSERT_TRUE(second.send("GET /metrics HTTP/1.0\r\n\r\n"));
  auto stillServed = second.readToEof();
  ASSERT_TRUE(stillServed);
  EXPECT_THAT(*stillServed, StartsWith("HTTP/1.0 200 OK\r\n"));
  EXPECT_EQ(stats().limitHits, 1u);
  EXPECT_EQ(stats().limit, 2u);
}

TEST_F(HttpServerTest, CountsIdleTimeouts) {
  start({.readTimeout = std::chrono::milliseconds(100)});
  Client client(port());
  ASSERT_TRUE(client.readToEof());
  EXPECT_EQ(stats().idleTimeouts, 1u);
  EXPECT_EQ(stats().open, 0u);
}

TEST(HttpServerListen, NamesTheAddressAndTheReasonWhenThePortIsTaken) {
  asio::io_context io;
  Logger log(LogFormat::Text, LogLevel::Error);
  HttpServer first(io, log, route);
  ASSERT_TRUE(first.listen("127.0.0.1", 0));
  HttpServer second(io, log, route);
  auto result = second.listen("127.0.0.1", first.port());
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error(), fmt::format("cannot listen for metrics on 127.0.0.1:{}: Address "
                                        "already in use",
                                        first.port()));
  EXPECT_EQ(second.port(), 0);
}

// metrics.healthListen's listener: the error names what it is for.
TEST(HttpServerListen, TheBindErrorSaysWhatTheListenerServes) {
  asio::io_context io;
  Logger log(LogFormat::Text, LogLevel::Error);
  HttpServer metrics(io, log, route);
  ASSERT_TRUE(metrics.listen("127.0.0.1", 0));
  HttpServer health(io, log, route,
                    HttpServerOptions{.name = "health", .purpose = "the health endpoints"});
  auto result = health.listen("127.0.0.1", metrics.port());
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error(), fmt::format("cannot listen for the health endpoints on 127.0.0.1:{}: "
                                        "Address already in use",
                                        metrics.port()));
}

TEST(HttpServerListen, RejectsAnAddressThatIsNotAnIp) {
  asio::io_context io;
  Logger log(LogFormat::Text, LogLevel::Error);
  HttpServer server(io, log, route);
  auto result = server.listen("localhost", 9472);
  ASSERT_FALSE(result);
  EXPECT_THAT(result.error(), StartsWith("cannot listen for metrics on localhost:9472: "));
}

TEST(HttpServerListen, ListensOnIpv6Loopback) {
  asio::io_context io;
  Logger log(LogFormat::Text, LogLevel::Error);
  HttpServer server(io, log, route);
  auto result = server.listen("::1", 0);
  if (!result) {
    GTEST_SKIP() << result.error();  // no IPv6 in this environment
  }
  EXPECT_NE(server.port(), 0);
}

}  // namespace
}  // namespace vipd::daemon

namespace vipd::daemon {
namespace {

TEST(RequestTarget, PathAndQuerySplitAtTheFirstQuestionMark) {
  EXPECT_EQ(splitTarget("/readyz"), (std::pair<std::string_view, std::string_view>{"/readyz", ""}));
  EXPECT_EQ(splitTarget("/readyz?verbose"),
            (std::pair<std::string_view, std::string_view>{"/readyz", "verbose"}));
  EXPECT_EQ(splitTarget("/m?a=b?c"), (std::pair<std::string_view, std::string_view>{"/m", "a=b?c"}));
}

TEST(RequestTarget, QueryFlagIsAKeyWithOrWithoutAValue) {
  EXPECT_TRUE(hasQueryFlag("verbose", "verbose"));
  EXPECT_TRUE(hasQueryFlag("verbose=1", "verbose"));
  EXPECT_TRUE(hasQueryFlag("x=1&verbose", "verbose"));
  EXPECT_FALSE(hasQueryFlag("", "verbose"));
  EXPECT_FALSE(hasQueryFlag("verbosely", "verbose"));
  EXPECT_FALSE(hasQueryFlag("x=verbose", "verbose"));
}

}  // namespace
}  // namespace vipd::daemon
