// Writes this node's VipdNode status (vipd_node.h) on StatusSchedule's timing: the newest
// status only, coalesced to about one write a second, refreshed every minute, backed off when
// the API fails. Creates the object when the API says it does not exist (404) and writes again
// at once; a write answered 404 right after a create is a failure like any other, backed off (a
// VipdNode CRD without its status subresource answers every status write 404 and every create
// 409), never another create. Never queues: however long the API is away, it holds one status.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include "kube/backoff.h"
#include "kube/client.h"
#include "kube/status_schedule.h"
#include "kube/vipd_node.h"

namespace vipd::kube {

class StatusWriter {
 public:
  struct Stats {
    uint64_t writes = 0;     // succeeded
    uint64_t failures = 0;
    uint64_t creates = 0;    // objects created after a 404
    std::optional<std::chrono::steady_clock::time_point> lastWrite;
    std::optional<Error> lastError;  // cleared by a success
  };
  // After each attempt: the error (nothing on success) and, on failure, the wait before the next.
  using OnResult = std::function<void(const std::optional<Error>&, std::chrono::milliseconds)>;

  StatusWriter(boost::asio::io_context& io, std::shared_ptr<Client> client, std::string nodeName,
               StatusSchedule::Settings schedule, Backoff::Settings backoff,
               OnResult onResult = nullptr);
  ~StatusWriter();
  StatusWriter(const StatusWriter&) = delete;
  StatusWriter& operator=(const StatusWriter&) = delete;

  // The status to report from now on (replaces any not yet written). Ignored after stop().
  void update(VipdNodeStatus status);
  // Cancels what is in flight, for good: no callback runs after it.
  void stop();
  const Stats& stats() const { return stats_; }

 private:
  void arm();
  void write();
  void create();
  void done(std::optional<Error> error);

  boost::asio::io_context& io_;
  std::shared_ptr<Client> client_;
  std::string nodeName_;
  StatusSchedule schedule_;
  Backoff backoff_;
  OnResult onResult_;
  boost::asio::steady_timer timer_;
  std::shared_ptr<Call> call_;
  std::optional<VipdNodeStatus> status_;
  std::mt19937_64 random_;
  Stats stats_;
  std::shared_ptr<bool> alive_;
  bool stopped_ = false;
  bool justCreated_ = false;  // the last create succeeded (or found the object): no second one
};

}  // namespace vipd::kube
