#include "daemon/returnpath/judge.h"

namespace vipd::daemon {

std::string_view returnPathStateName(ReturnPathState state) {
  switch (state) {
    case ReturnPathState::Unverified:
      return "unverified";
    case ReturnPathState::Passing:
      return "passing";
    case ReturnPathState::Broken:
      return "broken";
    case ReturnPathState::Retrying:
      return "retrying";
  }
  return "unknown";
}

std::string_view roundVerdictName(RoundVerdict verdict) {
  switch (verdict) {
    case RoundVerdict::Answered:
      return "answered";
    case RoundVerdict::Unanswered:
      return "unanswered";
    case RoundVerdict::Inconclusive:
      return "inconclusive";
  }
  return "unknown";
}

RoundVerdict ReturnPathJudge::verdictOf(const RoundOutcome& round) const {
  if (round.vipAnswered) {
    return RoundVerdict::Answered;
  }
  if (round.nodeAnswered && round.aloneEvidence &&
      (round.announcedThroughout || state_ == ReturnPathState::Broken)) {
    return RoundVerdict::Unanswered;
  }
  return RoundVerdict::Inconclusive;
}

void ReturnPathJudge::enter(ReturnPathState next) {
  state_ = next;
  unanswered_ = 0;
  answered_ = 0;
  brokenFor_ = 0;
}

bool ReturnPathJudge::record(const RoundOutcome& round) {
  ++rounds_;
  last_ = verdictOf(round);
  const ReturnPathState before = state_;
  switch (last_) {
    case RoundVerdict::Answered:
      unanswered_ = 0;
      ++answered_;
      if (state_ != ReturnPathState::Broken || answered_ >= rise_) {
        if (state_ != ReturnPathState::Passing) {
          enter(ReturnPathState::Passing);
          answered_ = 1;
        }
        retryAfter_ = kFirstRetryRounds;
      }
      break;
    case RoundVerdict::Unanswered:
      answered_ = 0;
      ++unanswered_;
      if (state_ != ReturnPathState::Broken && unanswered_ >= fall_) {
        if (state_ == ReturnPathState::Retrying) {
          retryAfter_ = std::min(retryAfter_ * 2, kMaxRetryRounds);
        }
        enter(ReturnPathState::Broken);
      }
      break;
    case RoundVerdict::Inconclusive:
      // Silence from everything says nothing about the VIP: it ends a run either way.
      unanswered_ = 0;
      answered_ = 0;
      break;
  }
  if (state_ == ReturnPathState::Broken && before == ReturnPathState::Broken &&
      ++brokenFor_ >= retryAfter_) {
    enter(ReturnPathState::Retrying);
  }
  return state_ != before;
}

}  // namespace vipd::daemon
