// The verdict on the apiserver's answer to the health check's GET: pure, no I/O. Success only on
// HTTP 200 with the body "ok" (one trailing newline, or CRLF, allowed); anything else is a
// failure with one phrase for the operator. The answer is untrusted: what is quoted from it is
// shortened and made printable.
#pragma once

#include <string>
#include <string_view>

namespace vipd::daemon {

struct AnswerVerdict {
  bool ok = false;
  // "HTTP 200 ok", "body 'hello' is not 'ok'", "HTTP 500: failed checks: etcd failed: ...",
  // "HTTP 502 with a text/html body: not an apiserver".
  std::string detail;
};

[[nodiscard]] AnswerVerdict judgeApiserverAnswer(unsigned status, std::string_view contentType,
                                                 std::string_view body);

// `text` cut to `limit` characters ("..." appended when cut), with newlines and tabs as spaces and
// other control or non-ASCII bytes as '?': fit for one log line.
[[nodiscard]] std::string excerpt(std::string_view text, size_t limit);

}  // namespace vipd::daemon
