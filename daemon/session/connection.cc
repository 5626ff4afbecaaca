#include "daemon/session/connection.h"

#include <boost/asio/buffer.hpp>
#include <boost/asio/write.hpp>

namespace vipd::daemon {

void Connection::startReading(DataHandler onData, ErrorHandler onError) {
  onData_ = std::move(onData);
  onError_ = std::move(onError);
  readMore();
}

void Connection::readMore() {
  socket_.async_read_some(
      asio::buffer(readBuffer_),
      [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
        if (self->closing_ || self->closed_) {
          return;
        }
        if (ec) {
          self->closing_ = true;
          if (self->onError_) {
            self->onError_(*self, ec);
          }
          self->closeNow();
          return;
        }
        if (self->onData_) {
          self->onData_(*self, std::span<const uint8_t>(self->readBuffer_.data(), n));
        }
        if (!self->closing_ && !self->closed_) {
          self->readMore();
        }
      });
}

void Connection::send(std::vector<uint8_t> bytes) {
  if (closed_) {
    return;
  }
  writeQueue_.push_back(std::move(bytes));
  if (!writing_) {
    writeNext();
  }
}

size_t Connection::queuedBytes() const {
  size_t total = 0;
  for (const auto& m : writeQueue_) {
    total += m.size();
  }
  return total;
}

void Connection::writeNext() {
  if (writeQueue_.empty()) {
    writing_ = false;
    if (closing_) {
      finishClose();
    }
    return;
  }
  writing_ = true;
  asio::async_write(socket_, asio::buffer(writeQueue_.front()),
                    [self = shared_from_this()](const boost::system::error_code& ec, size_t) {
                      if (self->closed_) {
                        return;
                      }
                      self->writeQueue_.pop_front();
                      if (ec) {
                        self->writeQueue_.clear();
                        self->writing_ = false;
                        if (!self->closing_) {
                          self->closing_ = true;
                          if (self->onError_) {
                            self->onError_(*self, ec);
                          }
                        }
                        self->finishClose();
                        return;
                      }
                      self->writeNext();
                    });
}

void Connection::closeAfterFlush(std::chrono::milliseconds flushTimeout,
                                 std::function<void()> done) {
  onClosed_ = std::move(done);
  if (closed_) {
    if (onClosed_) {
      std::exchange(onClosed_, nullptr)();
    }
    return;
  }
  closing_ = true;
  if (!writing_) {
    finishClose();
    return;
  }
  // A peer that stopped reading must not keep a closed session's socket alive forever.
  flushDeadline_ = std::make_unique<asio::steady_timer>(socket_.get_executor(), flushTimeout);
  flushDeadline_->async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (!ec) {
      self->finishClose();
    }
  });
}

void Connection::closeNow() {
  closing_ = true;
  writeQueue_.clear();
  finishClose();
}

void Connection::finishClose() {
  if (closed_) {
    return;
  }
  closed_ = true;
  boost::system::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  if (flushDeadline_) {
    flushDeadline_->cancel();
  }
  onData_ = nullptr;
  onError_ = nullptr;
  if (onClosed_) {
    std::exchange(onClosed_, nullptr)();
  }
}

}  // namespace vipd::daemon
