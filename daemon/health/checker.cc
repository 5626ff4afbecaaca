#include "daemon/health/checker.h"

#include <fmt/format.h>

#include <string_view>
#include <utility>

#include "daemon/health/tls.h"

namespace vipd::daemon {

using std::chrono::steady_clock;

namespace {

std::string plural(uint64_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

std::string_view typeName(config::Health::Type type) {
  switch (type) {
    case config::Health::Type::Apiserver:
      return "apiserver";
    case config::Health::Type::Tcp:
      return "tcp";
    case config::Health::Type::None:
      return "none";
  }
  return "none";
}

}  // namespace

HealthChecker::HealthChecker(asio::io_context& io, config::Health health, const Logger& log,
                             OnChange onChange)
    : io_(io),
      health_(std::move(health)),
      log_(log),
      onChange_(std::move(onChange)),
      gate_(health_.rise, health_.fall, health_.hardFall),
      intervalTimer_(io) {}

HealthChecker::~HealthChecker() { stop(); }

tl::expected<void, std::string> HealthChecker::start() {
  if (started_) {
    return tl::unexpected(std::string("the health checker is already started"));
  }
  if (health_.type == config::Health::Type::None) {
    started_ = true;
    last_ = CallResult{true, "health check disabled (type none)", {}};
    log_.info("health", "check disabled (type none); VIPs are announced without a health gate");
    onChange_(true, last_);
    return {};
  }

  if (auto prepared = prepare(health_, target_, tls_); !prepared) {
    return prepared;
  }
  started_ = true;
  logProbing("VIPs stay withdrawn until it is healthy");
  checkNow();
  return {};
}

tl::expected<void, std::string> HealthChecker::check(const config::Health& health) {
  config::HealthTarget target;
  std::shared_ptr<asio::ssl::context> tls;
  return prepare(health, target, tls);
}

tl::expected<void, std::string> HealthChecker::prepare(
    const config::Health& health, config::HealthTarget& target,
    std::shared_ptr<asio::ssl::context>& tls) {
  if (health.type == config::Health::Type::None) {
    return {};
  }
  auto checked = config::healthTarget(health);
  if (!checked) {
    return tl::unexpected(checked.error());
  }
  if (health.type == config::Health::Type::Apiserver) {
    auto context = makeHealthTlsContext(health);
    if (!context) {
      return tl::unexpected(context.error());
    }
    tls = std::move(*context);
  }
  target = std::move(*checked);
  return {};
}

void HealthChecker::logProbing(std::string_view then) const {
  log_.info("health", "probing {} every {} (timeout {}, rise {}, fall {}, hardFall {}); {}",
            describe(), formatDuration(health_.interval), formatDuration(health_.timeout),
            gate_.rise(), gate_.fall(), gate_.hardFall(), then);
}

tl::expected<void, std::string> HealthChecker::reconfigure(config::Health next) {
  config::HealthTarget target;
  std::shared_ptr<asio::ssl::context> tls;
  if (auto prepared = prepare(next, target, tls); !prepared) {
    return prepared;
  }
  const bool wasHealthy = healthy();
  stop();
  // Handlers of the abandoned check and timer hold the old token: they find it expired.
  alive_ = std::make_shared<int>(0);
  stopped_ = false;
  started_ = true;
  health_ = std::move(next);
  target_ = std::move(target);
  tls_ = std::move(tls);
  gate_ = HealthGate(health_.rise, health_.fall, health_.hardFall, gate_, wasHealthy);
  lastCloseCheck_.reset();
  lastFailureLogged_.clear();
  if (health_.type == config::Health::Type::None) {
    last_ = CallResult{true, "health check disabled (type none)", {}};
    log_.info("health", "check disabled by a config reload (type none); VIPs are announced "
              "without a health gate");
    return {};
  }
  logProbing(fmt::format("reloaded: the gate stays {} until {} {} in a row",
                         wasHealthy ? "open" : "closed", wasHealthy ? gate_.fall() : gate_.rise(),
                         wasHealthy ? "failures" : "successes"));
  checkNow();
  return {};
}

void HealthChecker::stop() {
  stopped_ = true;
  intervalTimer_.cancel();
  if (call_) {
    call_->abandon();
    call_.reset();
  }
  if (held_) {
    held_->abandon();
    held_.reset();
  }
}

bool HealthChecker::healthy() const {
  if (health_.type == config::Health::Type::None) {
    return started_;
  }
  return gate_.healthy();
}

const CallResult& HealthChecker::last() const { return last_; }

nlohmann::json HealthChecker::status() const {
  std::string_view result = "pending";
  if (health_.type == config::Health::Type::None) {
    result = started_ ? "success" : "pending";
  } else if (haveResult_) {
    result = last_.ok ? "success" : "failure";
  }
  std::string target;
  if (health_.type == config::Health::Type::Apiserver) {
    target = health_.url;
  } else if (health_.type == config::Health::Type::Tcp) {
    target = health_.address;
  }
  nlohmann::json status{
      {"type", typeName(health_.type)},
      {"target", target},
      {"healthy", healthy()},
      {"consecutiveSuccesses", gate_.consecutiveSuccesses()},
      {"consecutiveFailures", gate_.consecutiveFailures()},
      {"consecutiveHardFailures", gate_.consecutiveHardFailures()},
      {"lastResult", result},
      {"lastDetail", last_.detail},
      {"lastLatencyMs", static_cast<double>(last_.latency.count()) / 1000.0},
      {"checks", gate_.checks()},
      {"failures", gate_.failures()},
      {"hardFailures", gate_.hardFailures()},
      {"inconclusive", inconclusive_},
      {"heldConnection", held_ != nullptr},
      {"heldConnectionCloses", heldCloses_},
      {"connectResends", connectResends_},
  };
  if (health_.type == config::Health::Type::Apiserver) {
    status["serverName"] = target_.serverName;
  }
  return status;
}

void HealthChecker::checkNow() {
  if (stopped_) {
    return;
  }
  callStarted_ = steady_clock::now();
  call_ = ApiserverCall::start(
      io_, target_, tls_, health_.timeout,
      [this, alive = std::weak_ptr<int>(alive_)](const CallResult& result) {
        if (!alive.expired()) {
          onCallDone(result);
        }
      },
      [this, alive = std::weak_ptr<int>(alive_)](const std::string& why) {
        if (!alive.expired()) {
          onHeldConnectionClosed(why);
        }
      });
}

void HealthChecker::scheduleNext() {
  // Checks start every `interval`; one that took longer is followed at once, never overlapped.
  scheduleAt(callStarted_ + health_.interval);
}

void HealthChecker::scheduleAt(steady_clock::time_point when) {
  intervalTimer_.expires_at(when);
  intervalTimer_.async_wait(
      [this, alive = std::weak_ptr<int>(alive_)](const boost::system::error_code& ec) {
        if (ec || alive.expired() || stopped_) {
          return;
        }
        checkNow();
      });
}

void HealthChecker::onCallDone(const CallResult& result) {
  if (result.held) {
    // The newest connection is the one to watch; the previous one closes quietly.
    if (held_) {
      held_->abandon();
    }
    held_ = std::move(call_);
  }
  call_.reset();
  if (result.connectAttempts > 1) {
    connectResends_ += result.connectAttempts - 1;
  }
  if (stopped_) {
    return;
  }
  if (result.inconclusive) {
    // Our own shortage says nothing about the apiserver: neither a failure nor a success.
    if (auto count = inconclusiveWarnings_.add(ThrottledCount::Clock::now())) {
      log_.warn("health", "{} check could not run ({}; {} time(s) since the last report): not "
                "counted, the gate stays {}",
                describe(), result.detail, *count, gate_.healthy() ? "healthy" : "unhealthy");
    }
    ++inconclusive_;
    scheduleNext();
    return;
  }
  last_ = result;
  haveResult_ = true;
  Evidence evidence = result.ok                        ? Evidence::Success
                      : isHardEvidence(result.failure) ? Evidence::HardFailure
                                                       : Evidence::SoftFailure;
  bool flipped = gate_.record(evidence);
  logOutcome(result, evidence, flipped);
  lastFailureLogged_ = result.ok ? std::string() : result.detail;

  if (evidence == Evidence::HardFailure && gate_.healthy() && gate_.hardFall() > 0) {
    // Hard evidence is confirmed at once rather than one interval later: a dead apiserver is
    // withdrawn in milliseconds. Bounded: at most hardFall checks before the gate closes, and
    // any other outcome ends the run.
    scheduleAt(steady_clock::now());
  } else {
    scheduleNext();
  }
  if (flipped) {
    // Last: the owner may stop (or even destroy) the checker from here.
    onChange_(gate_.healthy(), last_);
  }
}

void HealthChecker::logOutcome(const CallResult& result, Evidence evidence, bool flipped) {
  const bool hard = evidence == Evidence::HardFailure;
  if (flipped && gate_.healthy()) {
    log_.info("health", "{} healthy after {} ({}); announcing VIPs", describe(),
              plural(gate_.consecutiveSuccesses(), "success", "successes"), result.detail);
  } else if (flipped && hard && gate_.consecutiveHardFailures() >= gate_.hardFall() &&
             gate_.consecutiveFailures() < gate_.fall()) {
    log_.warn("health", "{} unhealthy after {} in a row (last: {}); withdrawing VIPs",
              describe(),
              plural(gate_.consecutiveHardFailures(), "hard failure", "hard failures"),
              result.detail);
  } else if (flipped) {
    log_.warn("health", "{} unhealthy after {} (last: {}); withdrawing VIPs", describe(),
              plural(gate_.consecutiveFailures(), "failure", "failures"), result.detail);
  } else if (!result.ok && gate_.healthy() && hard && gate_.hardFall() > 0) {
    log_.warn("health", "{} check failed with hard evidence ({} of {} before withdrawing): {}; "
              "checking again at once",
              describe(), gate_.consecutiveHardFailures(), gate_.hardFall(), result.detail);
  } else if (!result.ok && gate_.healthy()) {
    log_.warn("health", "{} check failed ({} of {} before withdrawing): {}", describe(),
              gate_.consecutiveFailures(), gate_.fall(), result.detail);
  } else if (!result.ok) {
    // Unhealthy and still failing: say it once per distinct reason, not once per interval.
    if (result.detail != lastFailureLogged_) {
      log_.warn("health", "{} check failed: {}; VIPs stay withdrawn", describe(), result.detail);
    } else {
      log_.debug("health", "{} check failed: {}", describe(), result.detail);
    }
  } else if (!gate_.healthy()) {
    log_.info("health", "{} check passed ({} of {} before announcing)", describe(),
              gate_.consecutiveSuccesses(), gate_.rise());
  }
}

void HealthChecker::onHeldConnectionClosed(const std::string& why) {
  held_.reset();
  ++heldCloses_;
  if (stopped_ || call_) {
    return;  // the check in flight answers the question
  }
  auto now = steady_clock::now();
  if (lastCloseCheck_ && now - *lastCloseCheck_ < health_.interval) {
    // A server that closes idle connections quickly: the schedule checks soon enough.
    log_.debug("health", "{}: the held connection ended ({}); next check as scheduled",
               describe(), why);
    return;
  }
  lastCloseCheck_ = now;
  log_.debug("health", "{}: the held connection ended ({}); checking at once", describe(), why);
  scheduleAt(now);
}

std::string HealthChecker::describe() const {
  switch (health_.type) {
    case config::Health::Type::Apiserver:
      // The name the certificate must carry, when the URL does not already say it: with
      // an IP address in the URL, a mismatch is otherwise hard to place.
      if (target_.serverName != target_.host) {
        return fmt::format("apiserver {} (server name {})", health_.url, target_.serverName);
      }
      return fmt::format("apiserver {}", health_.url);
    case config::Health::Type::Tcp:
      return fmt::format("tcp {}", health_.address);
    case config::Health::Type::None:
      return "none";
  }
  return "none";
}

}  // namespace vipd::daemon
