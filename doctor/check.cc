#include "doctor/check.h"

#include <fmt/format.h>

#include <utility>

namespace vipd::doctor {

std::string_view verdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::Ok:
      return "ok";
    case Verdict::Warn:
      return "warn";
    case Verdict::Fail:
      return "fail";
  }
  return "fail";
}

std::string formatLine(const Check& check) {
  std::string line = fmt::format("{:<4}  {:<21}  {}", verdictName(check.verdict), check.name,
                                 check.detail);
  if (!check.fix.empty()) {
    line += "; fix: " + check.fix;
  }
  return line;
}

Counts count(const std::vector<Check>& checks) {
  Counts counts;
  for (const auto& check : checks) {
    switch (check.verdict) {
      case Verdict::Ok:
        ++counts.ok;
        break;
      case Verdict::Warn:
        ++counts.warn;
        break;
      case Verdict::Fail:
        ++counts.fail;
        break;
    }
  }
  return counts;
}

std::string formatCounts(const Counts& counts) {
  return fmt::format("{} ok, {} warn, {} fail", counts.ok, counts.warn, counts.fail);
}

int exitCode(const std::vector<Check>& checks) {
  return count(checks).fail > 0 ? kExitFailed : 0;
}

Check unobserved(Check check, std::string detail) {
  check.verdict = Verdict::Warn;
  check.inconclusive = true;
  check.detail = std::move(detail);
  return check;
}

}  // namespace vipd::doctor
