#include "kube/token_source.h"

#include <fmt/format.h>

#include <utility>

namespace vipd::kube {

TokenSource::TokenSource(const Credentials& credentials, ReadFile readFile,
                         std::chrono::milliseconds refresh)
    : inline_(credentials.token),
      file_(credentials.tokenFile),
      readFile_(std::move(readFile)),
      refresh_(refresh) {}

Result<std::optional<std::string>> TokenSource::token(Clock::time_point now) {
  if (inline_) {
    return inline_;
  }
  if (!file_) {
    return std::optional<std::string>();
  }
  bool due = !readAt_ || stale_ || now - *readAt_ >= refresh_;
  if (!due) {
    return current_;
  }
  readAt_ = now;
  stale_ = false;
  auto text = readFile_(*file_);
  std::string problem;
  if (!text) {
    problem = text.error();
  } else {
    std::string token(trimSpace(*text));
    if (auto p = tokenProblem(token)) {
      problem = "the token " + *p;
    } else {
      if (current_ && *current_ != token) {
        ++rotations_;
      }
      current_ = std::move(token);
      return current_;
    }
  }
  if (current_) {
    return current_;  // being rotated: the last good token until the file is whole again
  }
  return fail(ErrorKind::Config, fmt::format("token file {}: {}", *file_, problem));
}

}  // namespace vipd::kube
