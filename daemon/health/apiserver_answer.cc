#include "daemon/health/apiserver_answer.h"

#include <fmt/format.h>

#include <cctype>

namespace vipd::daemon {

namespace {

// The apiserver's /readyz and /livez list each check as "[+]name ok" or "[-]name failed: ...";
// the failed ones are what an operator needs to see.
std::string describeErrorBody(std::string_view body) {
  std::string failed;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find('\n', pos);
    std::string_view line = body.substr(pos, end == std::string_view::npos ? body.npos : end - pos);
    if (line.starts_with("[-]")) {
      failed += failed.empty() ? "" : ", ";
      failed += excerpt(line.substr(3), 80);
    }
    if (end == std::string_view::npos) {
      break;
    }
    pos = end + 1;
  }
  if (!failed.empty()) {
    return "failed checks: " + failed;
  }
  if (body.empty()) {
    return "empty body";
  }
  return fmt::format("'{}'", excerpt(body, 120));
}

}  // namespace

bool looksLikeHtml(std::string_view contentType, std::string_view body) {
  auto lower = [](std::string_view s) {
    std::string out(s);
    for (char& c : out) {
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return out;
  };
  if (lower(contentType).find("html") != std::string::npos) {
    return true;
  }
  std::string start = lower(body.substr(0, 64));
  size_t first = start.find_first_not_of(" \t\r\n");
  return first != std::string::npos &&
         (start.compare(first, 5, "<html") == 0 || start.compare(first, 9, "<!doctype") == 0);
}

std::string excerpt(std::string_view text, size_t limit) {
  std::string out;
  for (char c : text.substr(0, limit)) {
    if (c == '\n' || c == '\r' || c == '\t') {
      out += ' ';
    } else if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      out += '?';
    } else {
      out += c;
    }
  }
  if (text.size() > limit) {
    out += "...";
  }
  return out;
}

AnswerVerdict judgeApiserverAnswer(unsigned status, std::string_view contentType,
                                   std::string_view body) {
  if (status != 200) {
    if (looksLikeHtml(contentType, body)) {
      std::string_view media = contentType.substr(0, contentType.find(';'));
      return {false, fmt::format("HTTP {} with a {} body: not an apiserver", status,
                                 media.empty() ? "HTML" : excerpt(media, 40)),
              AnswerFault::NotApiserver};
    }
    return {false, fmt::format("HTTP {}: {}", status, describeErrorBody(body)),
            AnswerFault::HttpStatus};
  }
  std::string_view trimmed = body;
  if (trimmed.ends_with('\n')) {
    trimmed.remove_suffix(1);
    if (trimmed.ends_with('\r')) {
      trimmed.remove_suffix(1);
    }
  }
  if (trimmed != "ok") {
    return {false, fmt::format("body '{}' is not 'ok'", excerpt(trimmed, 64)), AnswerFault::Body};
  }
  return {true, "HTTP 200 ok"};
}

}  // namespace vipd::daemon
