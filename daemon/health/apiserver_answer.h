// The verdict on the apiserver's answer to the health check's GET: pure, no I/O. Success only on
// HTTP 200 with the body "ok" (one trailing newline, or CRLF, allowed); anything else is a
// failure with one phrase for the operator. The answer is untrusted: what is quoted from it is
// shortened and made printable.
#pragma once

#include <string>
#include <string_view>

namespace vipd::daemon {

// Why an answer failed, for callers that count failures by kind (vipd probe's metrics).
enum class AnswerFault {
  None,          // ok
  NotApiserver,  // an HTML page (a proxy's or a load balancer's error or login page)
  HttpStatus,    // a status other than 200 with a body that is not HTML
  Body,          // HTTP 200 with a body that is not the expected one
};

struct AnswerVerdict {
  bool ok = false;
  // "HTTP 200 ok", "body 'hello' is not 'ok'", "HTTP 500: failed checks: etcd failed: ...",
  // "HTTP 502 with a text/html body: not an apiserver".
  std::string detail;
  AnswerFault fault = AnswerFault::None;
};

[[nodiscard]] AnswerVerdict judgeApiserverAnswer(unsigned status, std::string_view contentType,
                                                 std::string_view body);

// Whether an answer is an HTML page: a Content-Type naming html, or a body that starts (after
// blanks) with "<html" or "<!doctype", case ignored. No apiserver endpoint answers HTML.
[[nodiscard]] bool looksLikeHtml(std::string_view contentType, std::string_view body);

// `text` cut to `limit` characters ("..." appended when cut), with newlines and tabs as spaces and
// other control or non-ASCII bytes as '?': fit for one log line.
[[nodiscard]] std::string excerpt(std::string_view text, size_t limit);

}  // namespace vipd::daemon
