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

  // The persisted state, nullopt when there is no file. A file that cannot be read, is not JSON,
  // or has a field of the wrong type is an error naming the file and the field: guessing "not
  // withdrawn" could announce a node someone drained. Never throws.
  [[nodiscard]] tl::expected<std::optional<Withdrawn>, std::string> load() const;
  // When the file was last written (UTC, ISO 8601), for a file load() cannot read; now if even
  // that is unknown.
  std::string modifiedAt() const;
  [[nodiscard]] tl::expected<void, std::string> save(const Withdrawn& withdrawn) const;
  [[nodiscard]] tl::expected<void, std::string> clear() const;
  const std::string& path() const { return path_; }

 private:
  std::string stateDir_;
  std::string path_;
};

std::string utcNow();

}  // namespace vipd::daemon
