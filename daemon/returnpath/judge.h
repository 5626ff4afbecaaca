// The return-path check's judgement for one VIP (issue 19): pure, no clock and no I/O. The
// checker feeds it one round at a time; tests feed it sequences.
//
// A round is one echo from the node's address and `flows` echoes from the VIP to each target.
// Its verdict:
//   answered      a VIP-sourced echo was answered (here, or relayed by the node that got it)
//   unanswered    a trusted target answered the node-sourced echo and none answered the VIP,
//                 and something says this node alone loses them (`aloneEvidence`: answers from
//                 that target to other nodes' VIP-sourced echoes reached this node in the
//                 round, or a node that relayed this node's answers before says they still
//                 reach it and it dropped none for this node): the VIP's packets (or their
//                 answers) are dropped. Counted only while the VIP was announced from the
//                 round's start to its end, or while already broken: before this node
//                 announces, the answer can come back only if another node announces, so
//                 silence proves nothing.
//   inconclusive  nothing answered at all (the target or the link is down), silence before
//                 announcing, or silence with no evidence that it is this node's alone (the
//                 node that relayed its answers froze or died, issue 28). Never a reason to
//                 withdraw.
//
// States: unverified (no verdict yet) -> passing on an answered round; broken after `fall`
// unanswered rounds in a row; passing again after `rise` answered rounds. Inconclusive rounds
// break a run of unanswered ones. A broken VIP is withdrawn; while withdrawn its answers can come
// back only through another node, so if no other node announces it, none ever will. To never
// leave the VIP withdrawn everywhere for good, a VIP broken for kFirstRetryRounds rounds is
// retried: announced again (state retrying) until it passes or fails `fall` rounds, and each
// failed retry doubles the wait, up to kMaxRetryRounds.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>

namespace vipd::daemon {

enum class ReturnPathState { Unverified, Passing, Broken, Retrying };
enum class RoundVerdict { Answered, Unanswered, Inconclusive };

std::string_view returnPathStateName(ReturnPathState state);
std::string_view roundVerdictName(RoundVerdict verdict);

struct RoundOutcome {
  bool vipAnswered = false;    // some VIP-sourced echo was answered
  bool nodeAnswered = false;   // some trusted target answered the node-sourced echo
  bool announcedThroughout = false;  // the VIP was announced at the round's start and end
  bool aloneEvidence = false;  // answers from the target reached the fleet, none of this node's
};

class ReturnPathJudge {
 public:
  static constexpr uint32_t kFirstRetryRounds = 30;   // 60 s at the default 2 s interval
  static constexpr uint32_t kMaxRetryRounds = 300;    // 10 min at the default interval

  // fall and rise are at least 1 (the config validator enforces it; 0 is treated as 1).
  ReturnPathJudge(uint32_t fall, uint32_t rise)
      : fall_(std::max<uint32_t>(fall, 1)), rise_(std::max<uint32_t>(rise, 1)) {}

  // The verdict of a round in the current state (see above).
  RoundVerdict verdictOf(const RoundOutcome& round) const;
  // Records one round. Returns true when state() changed because of it.
  bool record(const RoundOutcome& round);

  ReturnPathState state() const { return state_; }
  // Whether the VIP is kept from being announced (in enforce mode).
  bool blocks() const { return state_ == ReturnPathState::Broken; }
  RoundVerdict lastVerdict() const { return last_; }
  bool judged() const { return rounds_ > 0; }
  uint32_t consecutiveUnanswered() const { return unanswered_; }
  uint32_t consecutiveAnswered() const { return answered_; }
  // Rounds until the next retry while broken (0 otherwise).
  uint32_t roundsUntilRetry() const {
    return state_ == ReturnPathState::Broken ? retryAfter_ - std::min(retryAfter_, brokenFor_) : 0;
  }
  uint64_t rounds() const { return rounds_; }

 private:
  void enter(ReturnPathState next);

  uint32_t fall_;
  uint32_t rise_;
  ReturnPathState state_ = ReturnPathState::Unverified;
  RoundVerdict last_ = RoundVerdict::Inconclusive;
  uint32_t unanswered_ = 0;
  uint32_t answered_ = 0;
  uint32_t brokenFor_ = 0;  // rounds since entering Broken
  uint32_t retryAfter_ = kFirstRetryRounds;
  uint64_t rounds_ = 0;
};

}  // namespace vipd::daemon
