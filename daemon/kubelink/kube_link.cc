#include "daemon/kubelink/kube_link.h"

#include <cstdlib>

#include <fmt/format.h>

namespace vipd::daemon {
namespace {

// How often the status is read and the Node's standing request asked again: the VipdNode is
// right within about a second of a change (kube::Link coalesces the writes), and a refused
// withdrawal goes through about a second after the fabric allows it.
constexpr std::chrono::seconds kTick{1};

std::optional<std::string> environment(std::string_view name) {
  const char* value = std::getenv(std::string(name).c_str());
  return value == nullptr ? std::nullopt : std::optional<std::string>(value);
}

}  // namespace

KubeLink::KubeLink(asio::io_context& io, const config::Kubernetes& settings, Drainer& drainer,
                   const Logger& log, KubeLinkHost& host)
    : io_(io), settings_(settings), drainer_(drainer), log_(log), host_(host), timer_(io) {}

KubeLink::~KubeLink() { stop(); }

void KubeLink::start() {
  auto target = kube::resolveLinkTarget(settings_, environment, kube::localFileReader());
  if (!target) {
    startError_ = target.error().message;
    log_.error("kubernetes", "the link to the Kubernetes API is off: {}; vipd announces as "
               "before (the API is never in the announce path), but writes no VipdNode status, "
               "no Event, and reads no withdraw request from the Node", *startError_);
    return;
  }
  kube::Link::Hooks hooks;
  hooks.onIntent = [this](const kube::NodeIntent& intent) {
    if (!intent_ || *intent_ != intent) {
      log_.info("kubernetes", "Node {}: {}", link_->nodeName(),
                intent.withdraw() ? fmt::format("asks for a withdrawal ({})", intent.describe())
                                  : std::string("asks for nothing (no vipd.io/withdraw "
                                                "annotation, no out-of-service taint)"));
    }
    intent_ = intent;
    followIntent();
  };
  hooks.onHealth = [this](bool failing, const std::string& message) {
    if (failing) {
      log_.warn("kubernetes", "the API fails: {}; retrying with backoff (the announcements do "
                "not depend on it)", message);
    } else {
      log_.info("kubernetes", "the API answers again");
    }
  };
  link_ = std::make_unique<kube::Link>(io_, std::move(*target), std::move(hooks));
  if (auto started = link_->start(); !started) {
    startError_ = started.error().message;
    log_.error("kubernetes", "the link to the Kubernetes API is off: {}", *startError_);
    link_.reset();
    return;
  }
  log_.info("kubernetes", "linked to {} as Node {} ({}): VipdNode status, Events, and the Node's "
            "vipd.io/withdraw annotation and out-of-service taint", link_->server(),
            link_->nodeName(), settings_.kubeconfig ? "kubeconfig" : "the pod's service account");
  tick();
}

void KubeLink::stop() {
  if (stopped_) {
    return;
  }
  stopped_ = true;
  timer_.cancel();
  if (link_) {
    link_->stop();
  }
}

void KubeLink::tick() {
  if (stopped_ || !link_) {
    return;
  }
  followIntent();
  // Only the instance that speaks reports: a standby (the DaemonSet's pod waiting beside the
  // static pod, or the surge pod of a rollout) would contradict it.
  if (host_.mayFollowIntent()) {
    auto report = nodeReport(host_.statusForKubernetes(), refusal_,
                             std::chrono::system_clock::now());
    for (auto& event : nodeEvents(lastReport_ ? &*lastReport_ : nullptr, report)) {
      link_->event(event.reason, std::move(event.message));
    }
    link_->report(report.status);
    lastReport_ = std::move(report);
  }
  timer_.expires_after(kTick);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) {
      tick();
    }
  });
}

// What the Node asks, carried out: as `vipctl withdraw` (the guard at the request and again at
// the end of the GRACEFUL_SHUTDOWN phase) when it asks for a withdrawal, as `vipctl announce`
// when it no longer does. A drain in progress, or an instance that does not speak, defers it to
// a later tick.
void KubeLink::followIntent() {
  if (!intent_ || !host_.mayFollowIntent()) {
    return;
  }
  if (!intent_->withdraw()) {
    refusal_.reset();
    drainer_.apiAnnounce();
    return;
  }
  if (drainer_.apiWithdrawn() || drainer_.draining()) {
    return;
  }
  const std::string reason = intent_->describe();
  if (drainer_.localWithdrawn()) {
    drainer_.apiWithdraw(reason, nullptr, nullptr);
    return;
  }
  if (auto check = host_.checkWithdraw(policy::GuardMoment::Request); check.refusal) {
    refused(*check.refusal);
    return;
  }
  if (refusal_) {
    log_.info("kubernetes", "the Node's withdrawal is allowed now: {}", reason);
  }
  refusal_.reset();
  drainer_.apiWithdraw(
      reason, [this] { return host_.checkWithdraw(policy::GuardMoment::Effect).refusal; },
      [this](const std::string& refusal) { refused(refusal); });
}

// The guard refused the Node's request: said once per refusal (log, Event), and asked again
// every tick; the annotation stays as the operator wrote it.
void KubeLink::refused(const std::string& guardRefusal) {
  // The guard words its refusal for vipctl; the Node's request has no --force.
  std::string refusal = guardRefusal;
  if (auto force = refusal.find(". `vipctl withdraw --force`"); force != std::string::npos) {
    refusal.erase(force);
  }
  const bool first = !refusal_;
  refusal_ = refusal;
  if (!first) {
    return;
  }
  log_.warn("kubernetes", "the Node asks for a withdrawal ({}), {}; asked again until another "
            "node serves", intent_ ? intent_->describe() : std::string(), refusal);
  if (link_) {
    link_->event(kube::EventReason::WithdrawRefused,
                 fmt::format("vipd did not withdraw this node as its Node asks: {}; the request "
                             "stands and is honoured once enough other nodes serve", refusal));
  }
}

nlohmann::json KubeLink::status() const {
  nlohmann::json out = link_ ? link_->status() : nlohmann::json{{"enabled", true}};
  if (startError_) {
    out["connected"] = false;
    out["error"] = *startError_;
  }
  if (refusal_) {
    out["withdrawRefused"] = *refusal_;
  }
  return out;
}

}  // namespace vipd::daemon
