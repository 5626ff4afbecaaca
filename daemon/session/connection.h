// One TCP connection to a BGP peer: a read loop that hands bytes to its owner, and a write queue
// that keeps messages in order. Owned through shared_ptr so that a connection being closed can
// finish writing its last NOTIFICATION after its owner has moved on to a new one.
#pragma once

#include <array>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

namespace vipd::daemon {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  using DataHandler = std::function<void(Connection&, std::span<const uint8_t>)>;
  using ErrorHandler = std::function<void(Connection&, const boost::system::error_code&)>;

  explicit Connection(tcp::socket socket) : socket_(std::move(socket)) {}

  // Starts reading; handlers are called on the io_context thread until close.
  void startReading(DataHandler onData, ErrorHandler onError);
  // Queues one message. Ignored once closing.
  void send(std::vector<uint8_t> bytes);
  // Stops reading, writes what is queued (bounded by `flushTimeout`), then closes. `done` runs
  // once the socket is closed.
  void closeAfterFlush(std::chrono::milliseconds flushTimeout, std::function<void()> done = {});
  // Closes at once, dropping queued bytes.
  void closeNow();

  tcp::socket& socket() { return socket_; }
  bool closing() const { return closing_; }
  size_t queuedBytes() const;

 private:
  void readMore();
  void writeNext();
  void finishClose();

  tcp::socket socket_;
  std::array<uint8_t, 16384> readBuffer_{};
  std::deque<std::vector<uint8_t>> writeQueue_;
  bool writing_ = false;
  bool closing_ = false;
  bool closed_ = false;
  DataHandler onData_;
  ErrorHandler onError_;
  std::function<void()> onClosed_;
  std::unique_ptr<asio::steady_timer> flushDeadline_;
};

}  // namespace vipd::daemon
