// The bearer token to send, when the credentials carry one. A token written inline never
// changes; a token file (the service account's, which the kubelet rotates about every hour) is
// read again at most every `refresh` (a minute, as client-go does) and at once after the server
// answered 401, so a rotated token is used within a minute and a revoked one is replaced at the
// first refusal. A failed read keeps the last good token (the file is being replaced); with none
// yet it is an error. Pure: the file is read through the ReadFile given, time is passed in.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "kube/credentials.h"
#include "kube/error.h"

namespace vipd::kube {

class TokenSource {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kDefaultRefresh{60000};

  TokenSource(const Credentials& credentials, ReadFile readFile,
              std::chrono::milliseconds refresh = kDefaultRefresh);

  // The token to send at `now`; nothing when the credentials carry none (a client certificate).
  // An error (Config) when the file has never yielded a valid token.
  [[nodiscard]] Result<std::optional<std::string>> token(Clock::time_point now);
  // The server refused the token (401): read the file again at the next token().
  void invalidate() { stale_ = true; }
  // How many reads of the file found a token other than the one before (a rotation).
  unsigned rotations() const { return rotations_; }

 private:
  std::optional<std::string> inline_;
  std::optional<std::string> file_;
  ReadFile readFile_;
  std::chrono::milliseconds refresh_;
  std::optional<std::string> current_;
  std::optional<Clock::time_point> readAt_;
  bool stale_ = false;
  unsigned rotations_ = 0;
};

}  // namespace vipd::kube
