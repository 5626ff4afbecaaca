// vipd's link to the Kubernetes API (issue 41): the one object the Speaker holds for it. It
// follows this node's Node (NodeWatcher: the operator's intent), writes this node's VipdNode
// status (StatusWriter) and posts Events on the Node (EventLimiter), all on the io_context thread.
//
// The API is never in the announce path: the Link reports and listens, and the Speaker decides
// what an intent means (through the withdraw guard). Nothing here blocks, throws or queues
// without bound; an API that is away only makes the status older and the Events fewer.
//
// Owns: the Client, the watcher, the writer, the limiter, the last status reported (for the
// conditions' transition times and to skip writes that change nothing), and the link's counters
// for `vipctl status` and the metrics.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include "config/config.h"
#include "kube/client.h"
#include "kube/credentials.h"
#include "kube/event.h"
#include "kube/node_intent.h"
#include "kube/node_watcher.h"
#include "kube/status_writer.h"
#include "kube/vipd_node.h"

namespace vipd::kube {

// Where the API is and which Node this vipd speaks for.
struct LinkTarget {
  Credentials credentials;
  std::string nodeName;
};

// The `kubernetes:` section resolved: the kubeconfig's current context (or the pod's service
// account) and the node name (the config's, or NODE_NAME). Errors are Config, one sentence
// naming the file or variable. Pure but for the files and environment given.
[[nodiscard]] Result<LinkTarget> resolveLinkTarget(const config::Kubernetes& settings,
                                                   const GetEnv& getEnv,
                                                   const ReadFile& readFile);

class Link {
 public:
  struct Hooks {
    // The Node's intent changed (the first one read included).
    std::function<void(const NodeIntent&)> onIntent;
    // The link went from working to failing or back: one line for the log. `failing` true with
    // the error, false when a call succeeded again. Never called twice in a row for the same
    // state, so an API that is away for an hour logs once.
    std::function<void(bool failing, const std::string& message)> onHealth;
  };
  struct Stats {
    bool watching = false;   // the Node has been read and the watch runs or is retried
    uint64_t statusWrites = 0;
    uint64_t statusFailures = 0;
    uint64_t eventsSent = 0;
    uint64_t eventsFailed = 0;
    uint64_t eventsDropped = 0;  // by the limiter
    uint64_t watchErrors = 0;
    std::optional<std::chrono::system_clock::time_point> lastWrite;
    std::optional<std::string> lastError;  // the newest failure of any call; cleared by none
    bool failing = false;                  // the newest call failed
  };

  Link(boost::asio::io_context& io, LinkTarget target, Hooks hooks);
  ~Link();
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  // Creates the client (a CA or client key OpenSSL refuses is the error) and starts watching.
  [[nodiscard]] Result<void> start();
  // The status to write from now on. Written when it differs from the last one (updatedAt
  // aside), at most about once a second, and at least once a minute.
  void report(VipdNodeStatus status);
  // Posts an Event on the Node, unless the limiter drops it (counted). Fire and forget: a failed
  // post is counted and logged through onHealth, never retried (the status says what holds).
  void event(EventReason reason, std::string message);
  // Cancels everything in flight; no hook runs after it.
  void stop();

  const std::string& nodeName() const { return target_.nodeName; }
  std::string server() const { return serverUrl(target_.credentials); }
  const std::optional<NodeIntent>& intent() const;
  Stats stats() const;
  // For `vipctl status` (`kubernetes`): node, server, connected, last write, counters, error.
  nlohmann::json status() const;

 private:
  void noteResult(const std::optional<Error>& error);

  boost::asio::io_context& io_;
  LinkTarget target_;
  Hooks hooks_;
  std::shared_ptr<Client> client_;
  std::unique_ptr<NodeWatcher> watcher_;
  std::unique_ptr<StatusWriter> writer_;
  EventLimiter limiter_;
  std::optional<VipdNodeStatus> reported_;
  std::chrono::steady_clock::time_point reportedAt_{};
  uint64_t eventSequence_ = 0;
  std::vector<std::shared_ptr<Call>> eventCalls_;
  Stats stats_;
  std::shared_ptr<bool> alive_;
};

}  // namespace vipd::kube
