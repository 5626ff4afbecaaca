#include "kube/node_watcher.h"

#include <chrono>

namespace vipd::kube {
namespace {

// A watch that ends cleanly sooner than this is no working watch: an apiserver ends one at its
// timeoutSeconds (kWatchTimeoutSeconds), or when it shuts down.
constexpr std::chrono::seconds kShortestWatch{1};

}  // namespace

NodeWatcher::NodeWatcher(boost::asio::io_context& io, std::shared_ptr<Client> client,
                         std::string nodeName, Backoff::Settings backoff, Hooks hooks)
    : io_(io),
      client_(std::move(client)),
      watch_(std::move(nodeName)),
      backoff_(backoff,
               [this](uint64_t bound) {
                 return std::uniform_int_distribution<uint64_t>(0, bound)(random_);
               }),
      hooks_(std::move(hooks)),
      timer_(io),
      random_(std::random_device{}()),
      alive_(std::make_shared<bool>(true)) {}

NodeWatcher::~NodeWatcher() { stop(); }

void NodeWatcher::start() {
  if (!stopped_) {
    next();
  }
}

void NodeWatcher::stop() {
  stopped_ = true;
  *alive_ = false;
  timer_.cancel();
  if (auto call = std::exchange(call_, nullptr)) {
    call->cancel();
  }
}

void NodeWatcher::next() {
  if (watch_.needsList()) {
    list();
  } else {
    startWatch();
  }
}

void NodeWatcher::list() {
  ++stats_.lists;
  call_ = client_->request(
      Request{Method::Get, watch_.listTarget(), {}, {}},
      [this, alive = alive_](Result<Response> result) {
        if (!*alive) {
          return;
        }
        call_.reset();
        if (!result) {
          retry(result.error());
          return;
        }
        auto update = watch_.onList(result->body);
        if (!update) {
          retry(update.error());
          return;
        }
        onUpdate(*update);
        startWatch();
      });
}

void NodeWatcher::startWatch() {
  ++stats_.watches;
  eventThisWatch_ = false;
  watchStarted_ = std::chrono::steady_clock::now();
  call_ = client_->watch(
      watch_.watchTarget(),
      [this, alive = alive_](std::string_view line) {
        if (!*alive) {
          return;
        }
        auto update = watch_.onEvent(line);
        if (!update) {
          // Garbage or an ERROR event: end this watch; 410 has already made NodeWatch relist.
          if (auto call = std::exchange(call_, nullptr)) {
            call->cancel();
          }
          if (update.error().httpStatus == 410) {
            ++stats_.relists;
          }
          retry(update.error());
          return;
        }
        ++stats_.events;
        eventThisWatch_ = true;
        stats_.bookmarks = watch_.bookmarks();
        onUpdate(*update);
      },
      [this, alive = alive_](Result<void> ended) {
        if (!*alive) {
          return;
        }
        call_.reset();
        if (!ended) {
          if (ended.error().httpStatus == 410) {
            ++stats_.relists;
            watch_.onGone();
          }
          retry(ended.error());
          return;
        }
        if (!eventThisWatch_) {
          // A watch that ended cleanly at once, over and over, would be a loop.
          retry(Error{ErrorKind::Protocol, "the watch ended without sending an event"});
          return;
        }
        if (std::chrono::steady_clock::now() - watchStarted_ < kShortestWatch) {
          // So would one event and the end, over and over.
          retry(Error{ErrorKind::Protocol, "the watch ended within a second of its start"});
          return;
        }
        backoff_.reset();
        next();
      });
}

void NodeWatcher::onUpdate(const NodeWatch::Update& update) {
  std::optional<NodeIntent> now = update.intent;
  if (update.deleted) {
    now = NodeIntent{};  // no Node, so nothing an operator asked of it
  }
  if (now && now != intent_) {
    intent_ = now;
    if (hooks_.onIntent) {
      hooks_.onIntent(*intent_);
    }
  }
}

void NodeWatcher::retry(const Error& error) {
  ++stats_.errors;
  auto wait = backoff_.next(error);
  if (hooks_.onError) {
    hooks_.onError(error, wait);
  }
  timer_.expires_after(wait);
  timer_.async_wait([this, alive = alive_](const boost::system::error_code& ec) {
    if (!ec && *alive) {
      next();
    }
  });
}

}  // namespace vipd::kube
