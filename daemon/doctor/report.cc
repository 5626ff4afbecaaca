#include "daemon/doctor/report.h"

#include "daemon/base/printable.h"

namespace vipd::daemon {

nlohmann::json reportJson(const std::vector<doctor::Check>& checks) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& check : checks) {
    // Escaped as the text lines are: the names in a certificate need not even be UTF-8, which
    // JSON must be.
    nlohmann::json one{{"name", check.name},
                       {"result", doctor::verdictName(check.verdict)},
                       {"detail", printable(check.detail)}};
    if (!check.fix.empty()) {
      one["fix"] = printable(check.fix);
    }
    if (check.inconclusive) {
      one["inconclusive"] = true;
    }
    list.push_back(std::move(one));
  }
  const auto counts = doctor::count(checks);
  const auto worst = counts.fail > 0   ? doctor::Verdict::Fail
                     : counts.warn > 0 ? doctor::Verdict::Warn
                                       : doctor::Verdict::Ok;
  return {{"result", doctor::verdictName(worst)},
          {"counts", {{"ok", counts.ok}, {"warn", counts.warn}, {"fail", counts.fail}}},
          {"checks", std::move(list)}};
}

std::string printableLine(const doctor::Check& check) {
  return printable(doctor::formatLine(check));
}

}  // namespace vipd::daemon
