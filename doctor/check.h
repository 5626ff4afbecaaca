// One check's verdict (ok, warn, fail), what was found and what to do, and the report's forms:
// one line per check for a terminal or a log, the counts, the exit code of `vipd doctor`. Pure.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace vipd::doctor {

enum class Verdict { Ok, Warn, Fail };

// "ok", "warn", "fail": the words of the text lines, the JSON and the metric's label.
std::string_view verdictName(Verdict verdict);

struct Check {
  std::string name;  // stable, kebab-case: "apiserver-certificate"
  Verdict verdict = Verdict::Ok;
  std::string detail;  // what was found, one sentence or several joined by "; "
  std::string fix;     // what to do; empty when there is nothing to do
  // The fact the check needs could not be observed (the apiserver did not answer): the verdict
  // is a warning that says so, and running the check again later may settle it.
  bool inconclusive = false;
};

// `check` as a warning that it could not look: the fact it needs was not observed (`detail`
// says which and why). Running it again later may settle it.
[[nodiscard]] Check unobserved(Check check, std::string detail);

// "fail  apiserver-certificate  DETAIL; fix: FIX": verdict and name padded so lines align.
// The text is as the checks wrote it; text from elsewhere in it (a certificate's names, a
// process name) is escaped by whoever prints it.
std::string formatLine(const Check& check);

struct Counts {
  size_t ok = 0;
  size_t warn = 0;
  size_t fail = 0;
};
Counts count(const std::vector<Check>& checks);

// "11 ok, 1 warn, 0 fail".
std::string formatCounts(const Counts& counts);

// `vipd doctor`'s exit code: 0 when nothing fails (warnings allowed), 1 when something does.
inline constexpr int kExitFailed = 1;
int exitCode(const std::vector<Check>& checks);

}  // namespace vipd::doctor
