#include "daemon/lifecycle/drain_sequence.h"

namespace vipd::daemon {

using Kind = DrainAction::Kind;

DrainSequence::DrainSequence(milliseconds gracefulShutdownTime, milliseconds ackTimeout,
                             milliseconds unbindDelay, bool guarded)
    : gracefulShutdownTime_(gracefulShutdownTime),
      ackTimeout_(ackTimeout),
      unbindDelay_(unbindDelay),
      guarded_(guarded) {}

std::vector<DrainAction> DrainSequence::start() {
  if (step_ != DrainStep::NotStarted) {
    return {};
  }
  if (gracefulShutdownTime_.count() == 0) {
    // No phase for the others' draining paths to show in: the check at the request was the
    // only one possible (docs/config.md says so).
    return withdraw();
  }
  step_ = DrainStep::GracefulShutdown;
  return {{Kind::MarkGracefulShutdown}, {Kind::Wait, gracefulShutdownTime_}};
}

std::vector<DrainAction> DrainSequence::startAfterWithdraw() {
  if (step_ != DrainStep::NotStarted) {
    return {};
  }
  step_ = DrainStep::WaitingForAcks;
  return {{Kind::CheckAcks}};
}

std::vector<DrainAction> DrainSequence::withdraw() {
  step_ = DrainStep::WaitingForAcks;
  return {{Kind::Withdraw}, {Kind::CheckAcks}};
}

std::vector<DrainAction> DrainSequence::onTimer() {
  switch (step_) {
    case DrainStep::GracefulShutdown:
      if (guarded_) {
        step_ = DrainStep::CheckingGuard;
        return {{Kind::CheckGuard}};
      }
      return withdraw();
    case DrainStep::WaitingForAcks:
      return {{Kind::CheckAcks}};
    case DrainStep::UnbindDelay:
      step_ = DrainStep::Done;
      return {{Kind::Unbind}, {Kind::Finished}};
    case DrainStep::NotStarted:
    case DrainStep::CheckingGuard:
    case DrainStep::Done:
    case DrainStep::Refused:
      return {};
  }
  return {};
}

std::vector<DrainAction> DrainSequence::onGuard(bool allowed) {
  if (step_ != DrainStep::CheckingGuard) {
    return {};
  }
  if (!allowed && guarded_) {
    step_ = DrainStep::Refused;
    return {{Kind::Refused}};
  }
  return withdraw();
}

std::vector<DrainAction> DrainSequence::onAcks(bool allAcknowledged, milliseconds sinceWithdraw) {
  if (step_ != DrainStep::WaitingForAcks) {
    return {};
  }
  if (allAcknowledged) {
    return settle(true);
  }
  if (sinceWithdraw >= ackTimeout_) {
    return settle(false);
  }
  return {{Kind::Wait, kAckPollInterval}};
}

std::vector<DrainAction> DrainSequence::settle(bool acknowledged) {
  acknowledged_ = acknowledged;
  step_ = DrainStep::UnbindDelay;
  DrainAction settled{Kind::AcksSettled};
  settled.acknowledged = acknowledged;
  return {settled, {Kind::Wait, unbindDelay_}};
}

}  // namespace vipd::daemon
