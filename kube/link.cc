#include "kube/link.h"

#include <algorithm>

#include <fmt/format.h>

#include "config/parser.h"

namespace vipd::kube {
namespace {

using Clock = std::chrono::steady_clock;

// A status that did not change is written again after this long (the writer's own refresh
// would resend the old updatedAt): "refreshed at least once a minute".
constexpr std::chrono::seconds kRefreshReport{50};
// Event posts in flight at once; beyond it an Event is dropped (counted), never queued.
constexpr size_t kMaxEventCalls = 4;
// The link's retries: capped at 10 s (not the client's default 30 s), so that the status is right
// again within about 15 s of the API's return; three nodes retrying every 10 s cost an API
// nothing.
Backoff::Settings linkBackoff() {
  Backoff::Settings settings;
  settings.max = std::chrono::milliseconds{10000};
  return settings;
}

bool sameApartFromTime(const VipdNodeStatus& a, const VipdNodeStatus& b) {
  if (a.vips != b.vips || a.peers != b.peers || a.version != b.version ||
      a.conditions.size() != b.conditions.size()) {
    return false;
  }
  for (size_t i = 0; i < a.conditions.size(); ++i) {
    const auto& x = a.conditions[i];
    const auto& y = b.conditions[i];
    if (x.type != y.type || x.status != y.status || x.reason != y.reason ||
        x.message != y.message) {
      return false;
    }
  }
  return true;
}

}  // namespace

Result<LinkTarget> resolveLinkTarget(const config::Kubernetes& settings, const GetEnv& getEnv,
                                     const ReadFile& readFile) {
  LinkTarget target;
  if (settings.kubeconfig) {
    auto text = readFile(*settings.kubeconfig);
    if (!text) {
      return fail(ErrorKind::Config, fmt::format("kubernetes.kubeconfig {}: {}",
                                                 *settings.kubeconfig, text.error()));
    }
    auto credentials = parseKubeconfig(*text, *settings.kubeconfig, readFile);
    if (!credentials) {
      return tl::unexpected(credentials.error());
    }
    target.credentials = std::move(*credentials);
  } else {
    auto credentials = inClusterCredentials(getEnv, readFile);
    if (!credentials) {
      return tl::unexpected(credentials.error());
    }
    target.credentials = std::move(*credentials);
  }
  if (settings.nodeName) {
    target.nodeName = *settings.nodeName;
  } else {
    auto name = getEnv("NODE_NAME");
    if (!name || name->empty()) {
      return fail(ErrorKind::Config,
                  "NODE_NAME is not set: the DaemonSet passes the pod's spec.nodeName through "
                  "the downward API (env NODE_NAME, fieldRef spec.nodeName); elsewhere set "
                  "kubernetes.nodeName");
    }
    if (auto problem = config::nodeNameProblem(*name)) {
      return fail(ErrorKind::Config, fmt::format("NODE_NAME is not a Node's name: {}", *problem));
    }
    target.nodeName = *name;
  }
  return target;
}

Link::Link(boost::asio::io_context& io, LinkTarget target, Hooks hooks)
    : io_(io), target_(std::move(target)), hooks_(std::move(hooks)),
      alive_(std::make_shared<bool>(true)) {}

Link::~Link() { stop(); }

Result<void> Link::start() {
  auto client = Client::create(io_, target_.credentials, Limits{}, localFileReader());
  if (!client) {
    return tl::unexpected(client.error());
  }
  client_ = std::move(*client);
  writer_ = std::make_unique<StatusWriter>(
      io_, client_, target_.nodeName, StatusSchedule::Settings{}, linkBackoff(),
      [this, alive = alive_](const std::optional<Error>& error, std::chrono::milliseconds) {
        if (!*alive) {
          return;
        }
        if (error) {
          ++stats_.statusFailures;
        } else {
          ++stats_.statusWrites;
          stats_.lastWrite = std::chrono::system_clock::now();
        }
        noteResult(error);
      });
  watcher_ = std::make_unique<NodeWatcher>(
      io_, client_, target_.nodeName, linkBackoff(),
      NodeWatcher::Hooks{
          [this, alive = alive_](const NodeIntent& intent) {
            if (!*alive) {
              return;
            }
            stats_.watching = true;
            noteResult(std::nullopt);
            if (hooks_.onIntent) {
              hooks_.onIntent(intent);
            }
          },
          [this, alive = alive_](const Error& error, std::chrono::milliseconds) {
            if (!*alive) {
              return;
            }
            ++stats_.watchErrors;
            noteResult(error);
          }});
  watcher_->start();
  return {};
}

void Link::report(VipdNodeStatus status) {
  if (!writer_) {
    return;
  }
  const auto now = Clock::now();
  if (reported_ && sameApartFromTime(*reported_, status) && now - reportedAt_ < kRefreshReport) {
    return;
  }
  status.conditions = withTransitionTimes(reported_ ? reported_->conditions
                                                    : std::vector<Condition>{},
                                          std::move(status.conditions), status.updatedAt);
  reported_ = status;
  reportedAt_ = now;
  writer_->update(std::move(status));
}

void Link::event(EventReason reason, std::string message) {
  if (!client_) {
    return;
  }
  if (!limiter_.allow(reason, Clock::now())) {
    return;  // the limiter counts it
  }
  if (eventCalls_.size() >= kMaxEventCalls) {
    ++stats_.eventsDropped;
    return;
  }
  auto body = nodeEvent(target_.nodeName, reason, message, std::chrono::system_clock::now(),
                        ++eventSequence_);
  auto slot = std::make_shared<std::shared_ptr<Call>>();
  auto call = client_->request(
      Request{Method::Post, eventsPath(), std::move(body), "application/json"},
      [this, alive = alive_, slot](Result<Response> result) {
        if (!*alive) {
          return;
        }
        std::erase(eventCalls_, *slot);
        if (result) {
          ++stats_.eventsSent;
          noteResult(std::nullopt);
        } else {
          ++stats_.eventsFailed;
          noteResult(result.error());
        }
      });
  *slot = call;
  eventCalls_.push_back(std::move(call));
}

void Link::stop() {
  if (!*alive_) {
    return;
  }
  *alive_ = false;
  if (watcher_) {
    watcher_->stop();
  }
  if (writer_) {
    writer_->stop();
  }
  for (auto& call : eventCalls_) {
    if (call) {
      call->cancel();
    }
  }
  eventCalls_.clear();
}

const std::optional<NodeIntent>& Link::intent() const {
  static const std::optional<NodeIntent> none;
  return watcher_ ? watcher_->intent() : none;
}

Link::Stats Link::stats() const {
  Stats out = stats_;
  out.eventsDropped = stats_.eventsDropped + limiter_.dropped();
  return out;
}

void Link::noteResult(const std::optional<Error>& error) {
  const bool failing = error.has_value();
  if (error) {
    stats_.lastError = error->message;
  }
  if (failing == stats_.failing) {
    return;
  }
  stats_.failing = failing;
  if (hooks_.onHealth) {
    hooks_.onHealth(failing, failing ? error->message : std::string());
  }
}

nlohmann::json Link::status() const {
  const Stats s = stats();
  nlohmann::json out{{"enabled", true},
                     {"node", target_.nodeName},
                     {"server", server()},
                     {"credentials", target_.credentials.source},
                     {"connected", s.watching && !s.failing},
                     {"watching", s.watching},
                     {"statusWrites", s.statusWrites},
                     {"statusFailures", s.statusFailures},
                     {"eventsSent", s.eventsSent},
                     {"eventsFailed", s.eventsFailed},
                     {"eventsDropped", s.eventsDropped},
                     {"watchErrors", s.watchErrors}};
  if (s.lastWrite) {
    out["lastWrite"] = rfc3339(*s.lastWrite);
  }
  if (s.lastError) {
    out["lastError"] = *stats_.lastError;
  }
  if (const auto& i = intent()) {
    out["intent"] = {{"withdraw", i->withdraw()}, {"reason", i->describe()}};
  }
  return out;
}

}  // namespace vipd::kube
