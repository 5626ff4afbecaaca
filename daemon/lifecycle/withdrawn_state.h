// The persisted "withdrawn" state set by `vipctl withdraw`: a node drained for replacement stays
// withdrawn across vipd restarts and reboots until `vipctl announce` clears it.
// Stored as JSON in <control.stateDir>/withdrawn.json, written atomically (temporary file in the
// same directory, fsync, rename).
#pragma once

#include <optional>
#include <string>

#include <tl/expected.hpp>

namespace vipd::daemon {

struct Withdrawn {
  std::string reason;
  std::string since;  // UTC, ISO 8601
};

class WithdrawnState {
 public:
  explicit WithdrawnState(std::string stateDir);

  // The persisted state, nullopt when not withdrawn. A file that cannot be parsed is an error:
  // guessing "not withdrawn" could announce a node someone drained.
  [[nodiscard]] tl::expected<std::optional<Withdrawn>, std::string> load() const;
  [[nodiscard]] tl::expected<void, std::string> save(const Withdrawn& withdrawn) const;
  [[nodiscard]] tl::expected<void, std::string> clear() const;
  const std::string& path() const { return path_; }

 private:
  std::string stateDir_;
  std::string path_;
};

std::string utcNow();

}  // namespace vipd::daemon
