// The order of a drain (SIGTERM or `vipctl withdraw`), as a pure state machine:
//   (1) re-announce with GRACEFUL_SHUTDOWN (RFC 8326) for gracefulShutdownTime (skipped if 0),
//   (1b) a guarded drain (`vipctl withdraw` without --force) checks the withdraw guard again,
//       now that the others' draining paths are visible (issue 40): refused, the drain ends
//       there and the node keeps announcing; allowed, it goes on,
//   (2) withdraw,
//   (3) wait until every Established peer has acknowledged the withdraw (its socket's send queue
//       is empty), bounded by `timeout`,
//   (4) wait unbindDelay, then remove the addresses vipd added.
// The daemon carries out the actions and reports timer expiries and acknowledgement checks; the
// order lives here so it is tested without sockets or sleeps.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace vipd::daemon {

using std::chrono::milliseconds;

struct DrainAction {
  enum class Kind {
    MarkGracefulShutdown,  // re-announce every VIP with 65535:0 (and LOCAL_PREF 0 on iBGP)
    Withdraw,              // withdraw every VIP from every peer
    CheckAcks,             // report onAcks(): are the peers' send queues empty?
    Wait,                  // report onTimer() after `after`
    Unbind,                // remove the addresses vipd added
    AcksSettled,           // step (3) is over: `acknowledged` says how (vipctl --wait answers)
    Finished,              // the drain is complete
    CheckGuard,            // report onGuard(): does the withdraw guard still allow it?
    Refused,               // the guard refused at (1b): nothing was withdrawn; undo the drain
  };
  Kind kind;
  milliseconds after{0};
  bool acknowledged = false;
};

enum class DrainStep {
  NotStarted,
  GracefulShutdown,
  CheckingGuard,
  WaitingForAcks,
  UnbindDelay,
  Done,
  Refused,
};

class DrainSequence {
 public:
  // `guarded`: check the withdraw guard again before withdrawing (1b).
  DrainSequence(milliseconds gracefulShutdownTime, milliseconds ackTimeout,
                milliseconds unbindDelay, bool guarded = false);

  std::vector<DrainAction> start();
  // Steps (3) and (4) alone, for a withdrawal the caller has already sent (the health gate's
  // unbind, a VIP removed from the config): the same wait for acknowledgements, the same
  // unbindDelay, then Unbind, as a drain.
  std::vector<DrainAction> startAfterWithdraw();
  // The last Wait elapsed.
  std::vector<DrainAction> onTimer();
  // Result of a CheckAcks: `allAcknowledged` when every Established peer's send queue is empty;
  // `sinceWithdraw` is how long ago the withdraw was sent.
  std::vector<DrainAction> onAcks(bool allAcknowledged, milliseconds sinceWithdraw);
  // Result of a CheckGuard: `allowed` goes on to withdraw, else Refused and the drain is over.
  std::vector<DrainAction> onGuard(bool allowed);
  // The guard no longer applies (SIGTERM during a guarded drain: the node leaves anyway).
  void unguard() { guarded_ = false; }

  DrainStep step() const { return step_; }
  // How step (3) ended; meaningful once step() is UnbindDelay or Done.
  bool acknowledged() const { return acknowledged_; }

  // How often the send queues are polled while waiting for acknowledgements.
  static constexpr milliseconds kAckPollInterval{5};

 private:
  std::vector<DrainAction> withdraw();
  std::vector<DrainAction> settle(bool acknowledged);

  milliseconds gracefulShutdownTime_;
  milliseconds ackTimeout_;
  milliseconds unbindDelay_;
  bool guarded_;
  DrainStep step_ = DrainStep::NotStarted;
  bool acknowledged_ = false;
};

}  // namespace vipd::daemon
