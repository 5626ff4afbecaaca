// Speaker: the drain sequence (SIGTERM and `vipctl withdraw`), `vipctl announce`, and stopping
// the sessions. The order of the steps is DrainSequence's; this file carries them out.
#include <fmt/format.h>

#include "daemon/speaker.h"

namespace vipd::daemon {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view kDrainCommunication = "vipd: node draining";
// How long `vipctl withdraw --wait --timeout` may ask the peers to take at most.
constexpr std::chrono::milliseconds kMaxAckTimeout = 10min;

}  // namespace

void Speaker::startDrain(std::string why, std::optional<std::chrono::milliseconds> ackTimeout,
                         DrainSettled onSettled, std::function<void()> onFinished) {
  log_.info("drain", "{}: GRACEFUL_SHUTDOWN for {}ms, then withdraw, wait up to {}ms for every "
            "peer to acknowledge, then unbind after {}ms",
            why, config_.drain.gracefulShutdownTime.count(),
            ackTimeout.value_or(config_.drain.timeout).count(),
            config_.drain.unbindDelay.count());
  drain_.emplace(Drain{DrainSequence(config_.drain.gracefulShutdownTime,
                                     ackTimeout.value_or(config_.drain.timeout),
                                     config_.drain.unbindDelay),
                       false, {}, std::move(onSettled), std::move(onFinished)});
  runDrainActions(drain_->sequence.start());
}

void Speaker::runDrainActions(std::vector<DrainAction> actions) {
  using Kind = DrainAction::Kind;
  for (const auto& action : actions) {
    if (!drain_) {
      return;
    }
    switch (action.kind) {
      case Kind::MarkGracefulShutdown:
        log_.info("drain", "step 1: announcing with GRACEFUL_SHUTDOWN (65535:0)");
        for (auto& peer : peers_) {
          peer->setGracefulShutdown(true);
        }
        break;
      case Kind::Withdraw:
        log_.info("drain", "step 2: withdrawing every VIP from every peer");
        drain_->withdrawSent = true;
        drain_->withdrawSentAt = std::chrono::steady_clock::now();
        pushAnnouncements();
        break;
      case Kind::CheckAcks: {
        bool all = true;
        for (const auto& peer : peers_) {
          all = all && (peer->state() != bgp::SessionState::Established ||
                        peer->unacknowledgedBytes() == 0);
        }
        auto since = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - drain_->withdrawSentAt);
        // CheckAcks always ends its batch; what follows comes from onAcks.
        runDrainActions(drain_->sequence.onAcks(all, since));
        return;
      }
      case Kind::Wait:
        drainTimer_.expires_after(action.after);
        drainTimer_.async_wait([this](const boost::system::error_code& ec) {
          if (!ec && drain_) {
            runDrainActions(drain_->sequence.onTimer());
          }
        });
        break;
      case Kind::AcksSettled: {
        auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - drain_->withdrawSentAt);
        std::string detail =
            action.acknowledged
                ? fmt::format("every Established peer acknowledged the withdraw in {}ms",
                              took.count())
                : fmt::format("peers did not acknowledge the withdraw within {}ms: {}",
                              took.count(), unacknowledgedDetail());
        if (action.acknowledged) {
          log_.info("drain", "step 3: {}", detail);
        } else {
          log_.warn("drain", "step 3: {}", detail);
        }
        lastDrainResult_ = detail;
        if (drain_->onSettled) {
          std::exchange(drain_->onSettled, nullptr)(action.acknowledged, detail);
        }
        break;
      }
      case Kind::Unbind:
        log_.info("drain", "step 4: removing the addresses vipd added");
        logBindEvents(binder_.unbindOwned());
        break;
      case Kind::Finished: {
        auto finished = std::move(drain_->onFinished);
        for (auto& peer : peers_) {
          peer->setGracefulShutdown(false);  // a later announce goes out unmarked
        }
        drain_.reset();
        if (finished) {
          finished();
        }
        return;
      }
    }
  }
}

std::string Speaker::unacknowledgedDetail() const {
  std::vector<std::string> parts;
  for (const auto& peer : peers_) {
    if (peer->state() == bgp::SessionState::Established && peer->unacknowledgedBytes() > 0) {
      parts.push_back(fmt::format("{} has {} bytes unacknowledged", peer->address().toString(),
                                  peer->unacknowledgedBytes()));
    }
  }
  return parts.empty() ? "none pending now" : fmt::format("{}", fmt::join(parts, ", "));
}

void Speaker::handleWithdraw(const nlohmann::json& request, ControlServer::Reply reply) {
  std::string reason = request.value("reason", std::string("vipctl withdraw"));
  bool wait = request.value("wait", false);
  std::optional<std::chrono::milliseconds> ackTimeout;
  if (request.contains("timeoutMs") && request["timeoutMs"].is_number_unsigned()) {
    ackTimeout = std::min(std::chrono::milliseconds(request["timeoutMs"].get<uint64_t>()),
                          kMaxAckTimeout);
  }
  if (drain_) {
    reply({{"error", "a drain is already in progress; retry when it has finished"}});
    return;
  }
  if (withdrawn_) {
    reply({{"ok", true},
           {"alreadyWithdrawn", true},
           {"reason", withdrawn_->reason},
           {"since", withdrawn_->since}});
    return;
  }
  // A transient withdraw (a pod's preStop hook) drains this process only: persisting it would
  // leave the pod that replaces this one withdrawn forever.
  bool persist = request.value("persist", true);
  Withdrawn state{reason, utcNow()};
  // Persist first: if vipd or the node dies mid-drain, it must come back withdrawn.
  if (persist) {
    if (auto saved = withdrawnState_.save(state); !saved) {
      reply({{"error", saved.error()}});
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
      reply({{"error", detail}, {"acknowledged", false}});
    }
  };
  startDrain("vipctl withdraw", ackTimeout, settled, nullptr);
  if (!wait) {
    reply({{"ok", true}, {"draining", true}});
  }
}

void Speaker::handleAnnounce(ControlServer::Reply reply) {
  if (drain_) {
    reply({{"error", "a drain is in progress; retry when it has finished"}});
    return;
  }
  if (auto cleared = withdrawnState_.clear(); !cleared) {
    reply({{"error", cleared.error()}});
    return;
  }
  bool wasWithdrawn = withdrawn_.has_value();
  withdrawn_.reset();
  log_.info("speaker", "vipctl announce: {}binding and announcing again{}",
            wasWithdrawn ? "withdrawn state cleared; " : "",
            health_.healthy() ? "" : " once the health gate opens");
  logBindEvents(binder_.bind());
  pushAnnouncements();
  reply({{"ok", true},
         {"wasWithdrawn", wasWithdrawn},
         {"healthy", health_.healthy()},
         {"announceable", binder_.announceable().size()}});
}

void Speaker::shutdown(std::function<void()> done) {
  if (shuttingDown_) {
    return;
  }
  if (role_ != Role::Active) {
    // Standby or contending: the other instance speaks and owns the addresses. Nothing here is
    // announced, so nothing is withdrawn or unbound.
    shuttingDown_ = true;
    log_.info("speaker", "{} instance stopping: it announces nothing, so nothing is withdrawn "
              "and no address is touched", roleName());
    lockTimer_.cancel();
    done();
    return;
  }
  auto stop = [this, done = std::move(done)]() mutable {
    stopPeers(std::string(kDrainCommunication), std::move(done));
  };
  if (drain_) {
    // SIGTERM in the middle of `vipctl withdraw`: let that drain finish, then close and exit.
    log_.info("speaker", "SIGTERM during a drain: exiting once the drain has finished");
    drain_->onFinished = [previous = std::move(drain_->onFinished),
                          stop = std::move(stop)]() mutable {
      if (previous) {
        previous();
      }
      stop();
    };
    return;
  }
  if (withdrawn_) {
    // Already drained by vipctl withdraw: nothing is announced or bound by us; just close.
    log_.info("speaker", "SIGTERM while withdrawn: closing sessions");
    stop();
    return;
  }
  startDrain("SIGTERM", std::nullopt, nullptr, std::move(stop));
}

void Speaker::stopPeers(std::string shutdownCommunication, std::function<void()> done) {
  shuttingDown_ = true;
  rebindTimer_.cancel();
  reconcileTimer_.cancel();
  housekeepingTimer_.cancel();
  kernelEvents_.cancel();
  health_.stop();
  if (listener_) {
    boost::system::error_code ignored;
    listener_->close(ignored);
  }
  deferredStartTimer_.cancel();
  if (bfd_.running()) {
    // AdminDown first (RFC 5880 section 6.8.16), so no peer takes the stop for a failure.
    log_.info("speaker", "sending BFD AdminDown to {} peer(s)", bfd_.status().size());
    bfd_.stop([this, shutdownCommunication = std::move(shutdownCommunication),
               done = std::move(done)]() mutable {
      stopPeers(std::move(shutdownCommunication), std::move(done));
    });
    return;
  }
  log_.info("speaker", "sending Cease 6/2 \"{}\" to {} peer(s)", shutdownCommunication,
            peers_.size());
  auto remaining = std::make_shared<size_t>(peers_.size());
  auto finish = std::make_shared<std::function<void()>>(std::move(done));
  if (peers_.empty()) {
    if (*finish) {
      (*finish)();
    }
    return;
  }
  for (auto& peer : peers_) {
    peer->stop(shutdownCommunication, [remaining, finish] {
      if (--*remaining == 0 && *finish) {
        (*finish)();
      }
    });
  }
}

}  // namespace vipd::daemon
