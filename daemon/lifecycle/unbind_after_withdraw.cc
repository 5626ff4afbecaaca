#include "daemon/lifecycle/unbind_after_withdraw.h"

namespace vipd::daemon {

using Kind = DrainAction::Kind;

UnbindAfterWithdraw::UnbindAfterWithdraw(asio::io_context& io, const config::Drain& settings)
    : settings_(settings), timer_(io) {}

void UnbindAfterWithdraw::start(Steps steps) {
  cancel();
  steps_ = std::move(steps);
  // No GRACEFUL_SHUTDOWN step: the withdrawal has gone out already.
  sequence_.emplace(std::chrono::milliseconds{0}, settings_.timeout, settings_.unbindDelay);
  startedAt_ = std::chrono::steady_clock::now();
  run(sequence_->startAfterWithdraw());
}

void UnbindAfterWithdraw::cancel() {
  sequence_.reset();
  timer_.cancel();
}

void UnbindAfterWithdraw::run(const std::vector<DrainAction>& actions) {
  for (const auto& action : actions) {
    if (!sequence_) {
      return;  // cancelled by a step
    }
    switch (action.kind) {
      case Kind::CheckAcks: {
        const auto since = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - startedAt_);
        run(sequence_->onAcks(steps_.acknowledged(), since));
        break;
      }
      case Kind::Wait:
        timer_.expires_after(action.after);
        timer_.async_wait([this](const boost::system::error_code& ec) {
          if (ec || !sequence_) {
            return;
          }
          if (!steps_.still()) {
            sequence_.reset();
            return;
          }
          run(sequence_->onTimer());
        });
        break;
      case Kind::Unbind: {
        // The end (Finished follows): over before `unbind` runs, which may start another.
        sequence_.reset();
        const auto unbind = std::move(steps_.unbind);
        unbind();
        return;
      }
      case Kind::Finished:
        sequence_.reset();
        break;
      case Kind::MarkGracefulShutdown:
      case Kind::Withdraw:
      case Kind::AcksSettled:
        break;  // not part of this sequence, or nothing to do
    }
  }
}

}  // namespace vipd::daemon
