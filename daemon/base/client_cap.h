// The cap on a listener's clients (issue 17, item 3), shared by the control socket and the
// metrics listener. At the cap, the client that has waited longest for its request is closed to
// admit the new one, so idle clients (a flood, a scraper's pool, a stuck script) can never lock
// out vipctl or the kubelet's probes; only when every client is busy (answering) is the new one
// turned away. Each hit is counted, and logged at most once per 10 s with a count.
//
// Client must offer waitingForRequest() and close().
#pragma once

#include <algorithm>
#include <cstdint>
#include <list>
#include <memory>
#include <string>

#include "daemon/base/logger.h"
#include "daemon/base/throttled_count.h"

namespace vipd::daemon {

template <typename Client>
class ClientCap {
 public:
  // `log` must outlive the cap.
  ClientCap(const Logger& log, size_t limit) : log_(log), limit_(std::max<size_t>(limit, 1)) {}

  void setLimit(size_t limit) { limit_ = std::max<size_t>(limit, 1); }
  size_t limit() const { return limit_; }
  uint64_t hits() const { return hits_; }

  // Before serving a new client: whether it may be served, having made room if needed.
  // `subject` and `what` name the listener and its clients in the log ("control socket
  // /run/vipd/vipd.sock", "clients").
  bool admit(const std::string& subject, const char* what) {
    prune();
    if (clients_.size() < limit_) {
      return true;
    }
    ++hits_;
    std::shared_ptr<Client> evicted;
    for (auto& weak : clients_) {
      auto client = weak.lock();
      if (client && client->waitingForRequest()) {
        evicted = std::move(client);
        break;
      }
    }
    if (auto count = warnings_.add(ThrottledCount::Clock::now())) {
      log_.warn(subject, "{} {}, the limit: {} ({} time(s) since the last report)", limit_, what,
                evicted ? "closed the one idle the longest to admit a new one"
                        : "closed a new one (every one is busy answering)",
                *count);
    }
    if (!evicted) {
      return false;
    }
    evicted->close();
    clients_.remove_if([&](const auto& weak) { return weak.lock() == evicted; });
    return true;
  }

  void add(const std::shared_ptr<Client>& client) { clients_.push_back(client); }

  size_t open() const {
    return static_cast<size_t>(std::count_if(clients_.begin(), clients_.end(),
                                             [](const auto& weak) { return !weak.expired(); }));
  }

  void closeAll() {
    for (auto& weak : clients_) {
      if (auto client = weak.lock()) {
        client->close();
      }
    }
  }

  // Closes the clients still waiting for their request; those being answered get the answer.
  void closeWaiting() {
    for (auto& weak : clients_) {
      if (auto client = weak.lock(); client && client->waitingForRequest()) {
        client->close();
      }
    }
  }

 private:
  void prune() {
    clients_.remove_if([](const auto& weak) { return weak.expired(); });
  }

  const Logger& log_;
  size_t limit_;
  uint64_t hits_ = 0;
  std::list<std::weak_ptr<Client>> clients_;  // in the order they were accepted
  ThrottledCount warnings_;
};

}  // namespace vipd::daemon
