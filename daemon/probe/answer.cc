#include "daemon/probe/answer.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace vipd::daemon {

namespace {

AnswerVerdict htmlPage(unsigned status, std::string_view contentType) {
  std::string_view media = contentType.substr(0, contentType.find(';'));
  return {false,
          fmt::format("HTTP {} with a {} body: not an apiserver", status,
                      media.empty() ? "HTML" : excerpt(media, 40)),
          AnswerFault::NotApiserver};
}

}  // namespace

AnswerVerdict judgeReadyzAnswer(unsigned status, std::string_view contentType,
                                std::string_view body) {
  if (status == 200 && looksLikeHtml(contentType, body)) {
    return htmlPage(status, contentType);
  }
  return judgeApiserverAnswer(status, contentType, body);
}

AnswerVerdict judgeVersionAnswer(unsigned status, std::string_view contentType,
                                 std::string_view body) {
  if (status != 200) {
    return judgeApiserverAnswer(status, contentType, body);
  }
  if (looksLikeHtml(contentType, body)) {
    return htmlPage(status, contentType);
  }
  // The body is untrusted: parsed without exceptions, depth-limited by nlohmann's own parser.
  auto json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    return {false, fmt::format("body '{}' is not a JSON object", excerpt(body, 64)),
            AnswerFault::Body};
  }
  auto it = json.find("gitVersion");
  if (it == json.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) {
    return {false, fmt::format("body '{}' has no gitVersion", excerpt(body, 64)),
            AnswerFault::Body};
  }
  return {true, fmt::format("HTTP 200 gitVersion {}", excerpt(it->get_ref<const std::string&>(), 40)),
          AnswerFault::None};
}

ApiserverCall::Judge judgeFor(config::ProbeExpect expect) {
  return expect == config::ProbeExpect::Version ? judgeVersionAnswer : judgeReadyzAnswer;
}

std::string_view acceptFor(config::ProbeExpect expect) {
  return expect == config::ProbeExpect::Version ? "application/json" : "text/plain";
}

}  // namespace vipd::daemon
