// The forms of a doctor report shared by `vipd doctor` and the daemon's status: the JSON of the
// checks, and a check's line made safe for a terminal or a log.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "doctor/check.h"

namespace vipd::daemon {

// {"result": "fail", "counts": {"ok": 11, "warn": 1, "fail": 1}, "checks": [{"name", "result",
// "detail", "fix" (when there is one), "inconclusive" (when true)}, ...]}; "result" is the worst
// verdict. Texts are escaped as printableLine() escapes them, so the JSON is always valid.
[[nodiscard]] nlohmann::json reportJson(const std::vector<doctor::Check>& checks);

// doctor::formatLine() with control characters escaped: a certificate's names and a process's
// name are text from elsewhere.
[[nodiscard]] std::string printableLine(const doctor::Check& check);

}  // namespace vipd::daemon
