// The verdicts `vipd probe` applies to a target's answer: pure, no I/O. Both accept only what an
// apiserver answers, so a proxy's or load balancer's page (any HTML, whatever its status) is a
// failure of its own kind (AnswerFault::NotApiserver), never mistaken for a down apiserver or an
// up one.
#pragma once

#include <string_view>

#include "config/probe_config.h"
#include "daemon/health/apiserver_answer.h"
#include "daemon/health/apiserver_call.h"

namespace vipd::daemon {

// GET /readyz: HTTP 200 "ok", as judgeApiserverAnswer; an HTML page with status 200 (a login or
// maintenance page) is NotApiserver rather than a wrong body.
[[nodiscard]] AnswerVerdict judgeReadyzAnswer(unsigned status, std::string_view contentType,
                                              std::string_view body);

// GET /version: HTTP 200 with a JSON object whose "gitVersion" is a non-empty string
// ("HTTP 200 gitVersion v1.30.2"). Other statuses are judged as judgeApiserverAnswer does.
[[nodiscard]] AnswerVerdict judgeVersionAnswer(unsigned status, std::string_view contentType,
                                               std::string_view body);

// The verdict and the Accept header for `expect`.
[[nodiscard]] ApiserverCall::Judge judgeFor(config::ProbeExpect expect);
[[nodiscard]] std::string_view acceptFor(config::ProbeExpect expect);

}  // namespace vipd::daemon
