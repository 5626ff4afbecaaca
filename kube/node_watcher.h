// Follows this node's Node object (NodeWatch's list-then-watch over Client) and reports the
// operator's intent (node_intent.h) when it changes. The I/O half of NodeWatch: it carries out
// what NodeWatch decides, on the io_context thread.
//
// What the API does never makes it spin or forget: every failure waits what Backoff says
// (capped, jittered, Retry-After honoured); a watch that delivered no event before it ended, or
// ended within a second of its start, counts as a failure too, so an API that answers 200 and
// closes at once (with an event or without) is retried at the backoff's pace, not in a loop.
// Only a watch that ran (an event, a second) and ended cleanly resets the backoff; a list that
// succeeds does not (an API that lists and answers every watch 410 Gone would be a loop).
// Garbage (invalid JSON, another node's object) ends the watch and keeps the last intent: only
// a well-formed Node changes what is reported.
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
#include "kube/node_watch.h"

namespace vipd::kube {

class NodeWatcher {
 public:
  struct Hooks {
    std::function<void(const NodeIntent&)> onIntent;  // on a change (the first one included)
    std::function<void(const Error&, std::chrono::milliseconds retryIn)> onError;
  };
  struct Stats {
    uint64_t lists = 0;
    uint64_t watches = 0;
    uint64_t events = 0;
    uint64_t errors = 0;
    uint64_t relists = 0;  // after 410 Gone
    uint64_t bookmarks = 0;
  };

  NodeWatcher(boost::asio::io_context& io, std::shared_ptr<Client> client, std::string nodeName,
              Backoff::Settings backoff, Hooks hooks);
  ~NodeWatcher();
  NodeWatcher(const NodeWatcher&) = delete;
  NodeWatcher& operator=(const NodeWatcher&) = delete;

  void start();
  // Cancels what is in flight, for good: no hook runs after it, and start() does nothing.
  void stop();

  const Stats& stats() const { return stats_; }
  const std::optional<NodeIntent>& intent() const { return intent_; }
  const std::string& resourceVersion() const { return watch_.resourceVersion(); }

 private:
  void next();
  void list();
  void startWatch();
  void onUpdate(const NodeWatch::Update& update);
  void retry(const Error& error);

  boost::asio::io_context& io_;
  std::shared_ptr<Client> client_;
  NodeWatch watch_;
  Backoff backoff_;
  Hooks hooks_;
  boost::asio::steady_timer timer_;
  std::shared_ptr<Call> call_;
  std::optional<NodeIntent> intent_;
  std::mt19937_64 random_;
  Stats stats_;
  bool eventThisWatch_ = false;
  std::chrono::steady_clock::time_point watchStarted_;
  std::shared_ptr<bool> alive_;
  bool stopped_ = false;
};

}  // namespace vipd::kube
