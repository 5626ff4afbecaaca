#include "kube/status_writer.h"

#include <utility>

namespace vipd::kube {

using Clock = std::chrono::steady_clock;

StatusWriter::StatusWriter(boost::asio::io_context& io, std::shared_ptr<Client> client,
                           std::string nodeName, StatusSchedule::Settings schedule,
                           Backoff::Settings backoff, OnResult onResult)
    : io_(io),
      client_(std::move(client)),
      nodeName_(std::move(nodeName)),
      schedule_(schedule),
      backoff_(backoff,
               [this](uint64_t bound) {
                 return std::uniform_int_distribution<uint64_t>(0, bound)(random_);
               }),
      onResult_(std::move(onResult)),
      timer_(io),
      random_(std::random_device{}()),
      alive_(std::make_shared<bool>(true)) {}

StatusWriter::~StatusWriter() { stop(); }

void StatusWriter::stop() {
  stopped_ = true;
  *alive_ = false;
  timer_.cancel();
  if (auto call = std::exchange(call_, nullptr)) {
    call->cancel();
  }
}

void StatusWriter::update(VipdNodeStatus status) {
  if (stopped_) {
    return;
  }
  status_ = std::move(status);
  schedule_.changed(Clock::now());
  arm();
}

void StatusWriter::arm() {
  auto due = schedule_.dueAt();
  if (!due || !status_) {
    return;  // a write is in flight; done() arms again
  }
  timer_.expires_at(std::max(*due, Clock::now()));
  timer_.async_wait([this, alive = alive_](const boost::system::error_code& ec) {
    if (!ec && *alive && !schedule_.inFlight()) {
      write();
    }
  });
}

void StatusWriter::write() {
  schedule_.started(Clock::now());
  call_ = client_->request(Request{Method::Patch, vipdNodeStatusPath(nodeName_),
                                   statusMergePatch(*status_), "application/merge-patch+json"},
                           [this, alive = alive_](Result<Response> result) {
                             if (!*alive) {
                               return;
                             }
                             call_.reset();
                             const bool afterCreate = std::exchange(justCreated_, false);
                             if (!result && result.error().httpStatus == 404 && !afterCreate) {
                               create();
                               return;
                             }
                             done(result ? std::nullopt : std::optional<Error>(result.error()));
                           });
}

void StatusWriter::create() {
  call_ = client_->request(
      Request{Method::Post, vipdNodesPath(), vipdNodeObject(nodeName_), "application/json"},
      [this, alive = alive_](Result<Response> result) {
        if (!*alive) {
          return;
        }
        call_.reset();
        if (result || result.error().httpStatus == 409) {
          ++stats_.creates;
          justCreated_ = true;
          // Created (or someone else did): the status goes in with the next write, at once.
          schedule_.failed(Clock::now(), std::chrono::milliseconds{0});
          arm();
          return;
        }
        done(result.error());
      });
}

void StatusWriter::done(std::optional<Error> error) {
  auto now = Clock::now();
  std::chrono::milliseconds wait{0};
  if (error) {
    ++stats_.failures;
    wait = backoff_.next(*error);
    schedule_.failed(now, wait);
    stats_.lastError = error;
  } else {
    ++stats_.writes;
    backoff_.reset();
    schedule_.succeeded(now);
    stats_.lastWrite = now;
    stats_.lastError.reset();
  }
  if (onResult_) {
    onResult_(error, wait);
  }
  arm();
}

}  // namespace vipd::kube
