#include "bootstrap/template_filler.h"

#include <fmt/format.h>

#include <algorithm>

namespace vipd::bootstrap {
namespace {

bool isPlaceholderName(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

}  // namespace

Result<std::string> fillTemplate(std::string_view templateText, std::string_view templateName,
                                 const std::vector<TemplateValue>& values) {
  Errors errors;
  auto error = [&](int line, int column, std::string message) {
    errors.push_back({std::string(templateName), line, column, "", std::move(message)});
  };
  std::vector<bool> used(values.size(), false);
  std::string out;
  out.reserve(templateText.size());
  int line = 1;
  size_t lineStart = 0;
  size_t i = 0;
  while (i < templateText.size()) {
    if (i == lineStart && templateText.compare(i, 2, kNotePrefix) == 0) {
      // A note for whoever edits the template: not copied, placeholders in it not filled.
      size_t end = templateText.find('\n', i);
      i = end == std::string_view::npos ? templateText.size() : end + 1;
      ++line;
      lineStart = i;
      continue;
    }
    if (templateText.compare(i, 2, "{{") != 0) {
      if (templateText[i] == '\n') {
        ++line;
        lineStart = i + 1;
      }
      out += templateText[i++];
      continue;
    }
    int column = static_cast<int>(i - lineStart) + 1;
    size_t close = templateText.find("}}", i + 2);
    size_t newline = templateText.find('\n', i + 2);
    if (close == std::string_view::npos || close > newline) {
      error(line, column, "'{{' without a closing '}}' on the same line");
      out += templateText.substr(i, 2);
      i += 2;
      continue;
    }
    std::string_view name = templateText.substr(i + 2, close - i - 2);
    auto value = std::find_if(values.begin(), values.end(),
                              [&](const TemplateValue& v) { return v.name == name; });
    if (value == values.end()) {
      std::string known;
      for (const auto& v : values) {
        known += fmt::format("{}{{{{{}}}}}", known.empty() ? "" : ", ", v.name);
      }
      error(line, column,
            fmt::format("{} placeholder {{{{{}}}}}; vipd render fills only {}",
                        isPlaceholderName(name) ? "unknown" : "malformed", name, known));
    } else {
      used[value - values.begin()] = true;
      out += value->value;
    }
    i = close + 2;
  }
  for (size_t v = 0; v < values.size(); ++v) {
    if (!used[v]) {
      error(0, 0,
            fmt::format("the template never uses {{{{{}}}}}, which vipd render fills; the "
                        "template and this vipd disagree",
                        values[v].name));
    }
  }
  if (!errors.empty()) {
    return tl::unexpected(std::move(errors));
  }
  return out;
}

}  // namespace vipd::bootstrap
