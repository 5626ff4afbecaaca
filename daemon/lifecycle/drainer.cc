#include "daemon/lifecycle/drainer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace vipd::daemon {
namespace {

using namespace std::chrono_literals;

// How long `vipctl withdraw --wait --timeout` may ask the peers to take at most.
constexpr std::chrono::milliseconds kMaxAckTimeout = 10min;

std::chrono::milliseconds since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               t);
}

}  // namespace

Drainer::Drainer(asio::io_context& io, const config::Drain& settings, std::string stateDir,
                 const Logger& log, DrainHost& host)
    : settings_(settings), log_(log), host_(host), state_(std::move(stateDir)), timer_(io) {}

void Drainer::loadWithdrawn() {
  withdrawnPersisted_ = true;
  auto persisted = state_.load();
  if (persisted) {
    withdrawn_ = *persisted;
    stateError_.reset();
    return;
  }
  // Fail safe: the operator wrote that file on purpose, so an unreadable one means withdrawn.
  // Guessing "not withdrawn" could announce a node someone drained; exiting would leave the node
  // without a speaker (and restarting into the same file). `vipctl announce` rewrites it.
  stateError_ = persisted.error();
  withdrawn_ = Withdrawn{fmt::format("{}; treated as withdrawn until `vipctl announce`",
                                     persisted.error()),
                         state_.modifiedAt()};
  log_.error("withdrawn state",
             "{}; treating the node as withdrawn: nothing is bound or announced until `vipctl "
             "announce` clears the file",
             persisted.error());
}

void Drainer::start(std::string why, std::optional<std::chrono::milliseconds> ackTimeout,
                    Settled onSettled, std::function<void()> onFinished, Guard guard,
                    std::function<void(std::string)> onRefused, bool api) {
  log_.info("drain", "{}: GRACEFUL_SHUTDOWN for {}ms, {}then withdraw, wait up to {}ms for every "
            "peer to acknowledge, then unbind after {}ms",
            why, settings_.gracefulShutdownTime.count(),
            guard ? "check the withdraw guard again, " : "",
            ackTimeout.value_or(settings_.timeout).count(), settings_.unbindDelay.count());
  const bool guarded = guard != nullptr;
  drain_.emplace(Drain{DrainSequence(settings_.gracefulShutdownTime,
                                     ackTimeout.value_or(settings_.timeout),
                                     settings_.unbindDelay, guarded),
                       false, {}, std::move(onSettled), std::move(onFinished), std::move(guard),
                       std::move(onRefused), {}, api});
  run(drain_->sequence.start());
}

void Drainer::thenRun(std::function<void()> then) {
  drain_->guard = nullptr;
  drain_->sequence.unguard();
  drain_->onFinished = [previous = std::move(drain_->onFinished),
                        then = std::move(then)]() mutable {
    if (previous) {
      previous();
    }
    then();
  };
}

void Drainer::run(std::vector<DrainAction> actions) {
  using Kind = DrainAction::Kind;
  for (const auto& action : actions) {
    if (!drain_) {
      return;
    }
    switch (action.kind) {
      case Kind::MarkGracefulShutdown:
        log_.info("drain", "step 1: announcing with GRACEFUL_SHUTDOWN (65535:0)");
        host_.setGracefulShutdown(true);
        break;
      case Kind::Withdraw:
        log_.info("drain", "step 2: withdrawing every VIP from every peer");
        drain_->withdrawSent = true;
        drain_->withdrawSentAt = std::chrono::steady_clock::now();
        host_.pushAnnouncements();
        break;
      case Kind::CheckAcks:
        // CheckAcks always ends its batch; what follows comes from onAcks.
        run(drain_->sequence.onAcks(host_.unacknowledgedPeers().empty(),
                                    since(drain_->withdrawSentAt)));
        return;
      case Kind::Wait:
        timer_.expires_after(action.after);
        timer_.async_wait([this](const boost::system::error_code& ec) {
          if (!ec && drain_) {
            run(drain_->sequence.onTimer());
          }
        });
        break;
      case Kind::AcksSettled:
        settle(action.acknowledged);
        break;
      case Kind::Unbind:
        log_.info("drain", "step 4: removing the addresses vipd added");
        host_.unbindOwned();
        break;
      case Kind::Finished:
        finish();
        return;
      case Kind::CheckGuard: {
        // CheckGuard ends its batch too: what follows comes from onGuard.
        auto refusal = drain_->guard ? drain_->guard() : std::nullopt;
        if (!refusal) {
          log_.info("drain", "step 1b: the withdraw guard still allows the withdrawal");
        }
        drain_->refusal = refusal.value_or("");
        run(drain_->sequence.onGuard(!refusal));
        return;
      }
      case Kind::Refused:
        refuse(drain_->refusal);
        return;
    }
  }
}

void Drainer::settle(bool acknowledged) {
  auto took = since(drain_->withdrawSentAt);
  std::string detail;
  if (acknowledged) {
    detail = fmt::format("every Established peer acknowledged the withdraw in {}ms", took.count());
    log_.info("drain", "step 3: {}", detail);
  } else {
    auto pending = host_.unacknowledgedPeers();
    detail = fmt::format("peers did not acknowledge the withdraw within {}ms: {}", took.count(),
                         pending.empty() ? std::string("none pending now")
                                         : fmt::format("{}", fmt::join(pending, ", ")));
    log_.warn("drain", "step 3: {}", detail);
  }
  lastResult_ = detail;
  if (drain_->onSettled) {
    std::exchange(drain_->onSettled, nullptr)(acknowledged, detail);
  }
}

void Drainer::finish() {
  auto finished = std::move(drain_->onFinished);
  host_.setGracefulShutdown(false);  // a later announce goes out unmarked
  drain_.reset();
  if (finished) {
    finished();
  }
}

// The guard refused at the end of the GRACEFUL_SHUTDOWN phase: nothing was withdrawn, so the
// node goes back to announcing unmarked, and is not left withdrawn in memory or on disk.
void Drainer::refuse(const std::string& refusalText) {
  const std::string refusal = refusalText;  // it may live in drain_, reset below
  if (drain_->api) {
    log_.warn("kubernetes", "the Node's withdrawal {}", refusal);
    apiWithdrawn_.reset();
  } else {
    log_.warn("control", "vipctl withdraw {}", refusal);
    if (withdrawnPersisted_) {
      if (auto cleared = state_.clear(); !cleared) {
        log_.error("drain", "{}; a restart would come back withdrawn until `vipctl announce`",
                   cleared.error());
      }
    }
    withdrawn_.reset();
  }
  lastResult_ = refusal;
  auto refused = std::move(drain_->onRefused);
  auto finished = std::move(drain_->onFinished);
  drain_.reset();
  timer_.cancel();
  host_.setGracefulShutdown(false);
  host_.pushAnnouncements();
  if (refused) {
    refused(refusal);
  }
  if (finished) {
    finished();
  }
}

void Drainer::handleWithdraw(const ControlRequest& request, ControlServer::Reply reply,
                             Guard guard) {
  std::string reason = request.reason.value_or("vipctl withdraw");
  bool wait = request.wait;
  std::optional<std::chrono::milliseconds> ackTimeout;
  if (request.timeoutMs) {
    ackTimeout = std::min(std::chrono::milliseconds(*request.timeoutMs), kMaxAckTimeout);
  }
  if (drain_) {
    log_.warn("drain", "refused vipctl withdraw (\"{}\"): a drain is already in progress",
              reason);
    reply({{"error", "a drain is already in progress; retry when it has finished"},
           {"refused", "busy"}});
    return;
  }
  if (withdrawn_) {
    reply({{"ok", true},
           {"alreadyWithdrawn", true},
           {"reason", withdrawn_->reason},
           {"since", withdrawn_->since}});
    return;
  }
  if (apiWithdrawn_) {
    // The Node's request withdrew it already: record vipctl's too (no drain), so the node stays
    // withdrawn when the Node's annotation goes, until `vipctl announce`.
    Withdrawn state{reason, utcNow()};
    if (request.persist) {
      if (auto saved = state_.save(state); !saved) {
        reply({{"error", fmt::format("{}; the node is withdrawn all the same (by the Node's "
                                     "request: {})", saved.error(), apiWithdrawn_->reason)},
               {"refused", "state"}});
        return;
      }
    }
    withdrawn_ = state;
    withdrawnPersisted_ = request.persist;
    log_.warn("drain", "vipctl withdraw: \"{}\"; already withdrawn by the Node's request ({})",
              reason, apiWithdrawn_->reason);
    reply({{"ok", true},
           {"alreadyWithdrawn", true},
           {"reason", apiWithdrawn_->reason},
           {"since", apiWithdrawn_->since}});
    return;
  }
  // A transient withdraw (a pod's preStop hook) drains this process only: persisting it would
  // leave the pod that replaces this one withdrawn forever.
  bool persist = request.persist;
  Withdrawn state{reason, utcNow()};
  // Persist first: if vipd or the node dies mid-drain, it must come back withdrawn.
  if (persist) {
    if (auto saved = state_.save(state); !saved) {
      // Refused before anything changed: the node keeps announcing, and says so.
      log_.error("drain", "refused vipctl withdraw (\"{}\"): {}; the node is still announcing",
                 reason, saved.error());
      reply({{"error", fmt::format("{}; the node is still announcing (nothing was withdrawn); "
                                   "`vipctl withdraw --transient` drains this process without "
                                   "persisting the withdrawn state",
                                   saved.error())},
             {"refused", "state"}});
      return;
    }
  }
  withdrawn_ = state;
  withdrawnPersisted_ = persist;
  if (persist) {
    log_.warn("drain",
              "vipctl withdraw: \"{}\"; the node stays withdrawn until `vipctl announce`",
              reason);
  } else {
    log_.warn("drain",
              "vipctl withdraw --transient: \"{}\"; withdrawn until this process exits or "
              "`vipctl announce` (not persisted)",
              reason);
  }
  auto settled = [reply, wait](bool acknowledged, const std::string& detail) {
    if (!wait) {
      return;
    }
    if (acknowledged) {
      reply({{"ok", true}, {"acknowledged", true}, {"detail", detail}});
    } else {
      reply({{"error", fmt::format("{}; the node is withdrawn all the same", detail)},
             {"withdrawn", true},
             {"acknowledged", false}});
    }
  };
  auto refused = [reply, wait](const std::string& refusal) {
    if (wait) {
      reply({{"error", refusal}, {"refused", "guard"}});
    }
  };
  start("vipctl withdraw", ackTimeout, settled, nullptr, std::move(guard), refused);
  if (!wait) {
    reply({{"ok", true}, {"draining", true}});
  }
}

void Drainer::handleAnnounce(ControlServer::Reply reply) {
  if (drain_) {
    log_.warn("drain", "refused vipctl announce: a drain is in progress");
    reply({{"error", "a drain is in progress; retry when it has finished"}, {"refused", "busy"}});
    return;
  }
  if (auto cleared = state_.clear(); !cleared) {
    log_.error("drain", "refused vipctl announce: {}", cleared.error());
    reply({{"error", cleared.error()}, {"refused", "state"}});
    return;
  }
  bool wasWithdrawn = withdrawn_.has_value();
  withdrawn_.reset();
  stateError_.reset();
  if (apiWithdrawn_) {
    log_.warn("speaker", "vipctl announce: {}the node stays withdrawn: {}",
              wasWithdrawn ? "withdrawn state cleared, but " : "", apiWithdrawn_->reason);
    reply({{"error", fmt::format("{}the node stays withdrawn while its Node asks for it ({}); "
                                 "remove that first (kubectl annotate node NODE "
                                 "vipd.io/withdraw-, or the out-of-service taint)",
                                 wasWithdrawn ? "vipctl's withdrawn state is cleared, but "
                                              : "",
                                 apiWithdrawn_->reason)},
           {"refused", "kubernetes"},
           {"wasWithdrawn", wasWithdrawn}});
    return;
  }
  log_.info("speaker", "vipctl announce: {}binding and announcing again{}",
            wasWithdrawn ? "withdrawn state cleared; " : "",
            host_.healthy() ? "" : " once the health gate opens");
  host_.bindAndAnnounce();
  reply({{"ok", true},
         {"wasWithdrawn", wasWithdrawn},
         {"healthy", host_.healthy()},
         {"announceable", host_.announceableCount()}});
}

void Drainer::apiWithdraw(std::string reason, Guard guard,
                          std::function<void(std::string)> onRefused) {
  if (drain_ || apiWithdrawn_) {
    return;
  }
  apiWithdrawn_ = Withdrawn{reason, utcNow()};
  if (withdrawn_) {
    log_.info("kubernetes", "the Node asks for a withdrawal ({}); vipctl withdrew the node "
              "already", reason);
    return;
  }
  log_.warn("kubernetes", "the Node asks for a withdrawal ({}); withdrawn until it no longer "
            "does (not persisted: the Node is the record)", reason);
  start(fmt::format("the Node's request ({})", reason), std::nullopt, nullptr, nullptr,
        std::move(guard), std::move(onRefused), /*api=*/true);
}

bool Drainer::apiAnnounce() {
  if (!apiWithdrawn_) {
    return true;
  }
  if (drain_) {
    return false;
  }
  apiWithdrawn_.reset();
  if (withdrawn_) {
    log_.info("kubernetes", "the Node no longer asks for a withdrawal; vipctl's withdrawal "
              "holds (\"{}\") until `vipctl announce`", withdrawn_->reason);
    return true;
  }
  log_.info("kubernetes", "the Node no longer asks for a withdrawal: binding and announcing "
            "again{}", host_.healthy() ? "" : " once the health gate opens");
  host_.bindAndAnnounce();
  return true;
}

nlohmann::json Drainer::withdrawnStatus() const {
  const auto effective = withdrawn();
  nlohmann::json out{{"active", effective.has_value()}};
  if (effective) {
    out["reason"] = effective->reason;
    out["since"] = effective->since;
    out["persisted"] = withdrawn_.has_value() && withdrawnPersisted_;
    nlohmann::json sources = nlohmann::json::array();
    if (withdrawn_) {
      sources.push_back("vipctl");
    }
    if (apiWithdrawn_) {
      sources.push_back("kubernetes");
      out["kubernetes"] = {{"reason", apiWithdrawn_->reason}, {"since", apiWithdrawn_->since}};
    }
    out["sources"] = std::move(sources);
  }
  if (stateError_) {
    out["stateFileError"] = *stateError_;
  }
  return out;
}

}  // namespace vipd::daemon
