// The verdict on the apiserver's answer to the health check's GET (pure): what counts as healthy
// and the one phrase an operator reads for everything else.
#include "daemon/health/apiserver_answer.h"

#include <gtest/gtest.h>

#include <string>

namespace vipd::daemon {
namespace {

TEST(ApiserverAnswer, OnlyHttp200WithOkIsHealthy) {
  for (const char* body : {"ok", "ok\n", "ok\r\n"}) {
    auto verdict = judgeApiserverAnswer(200, "text/plain", body);
    EXPECT_TRUE(verdict.ok) << body;
    EXPECT_EQ(verdict.detail, "HTTP 200 ok");
  }
  for (const char* body : {"", "OK", "ok\n\n", " ok", "okay"}) {
    EXPECT_FALSE(judgeApiserverAnswer(200, "text/plain", body).ok) << body;
  }
  EXPECT_EQ(judgeApiserverAnswer(200, "text/plain", "hello").detail, "body 'hello' is not 'ok'");
}

TEST(ApiserverAnswer, FailedChecksAreListed) {
  auto verdict = judgeApiserverAnswer(
      500, "text/plain",
      "[+]ping ok\n[-]etcd failed: reason withheld\n[+]log ok\n[-]informer-sync failed\n");
  EXPECT_FALSE(verdict.ok);
  EXPECT_EQ(verdict.detail,
            "HTTP 500: failed checks: etcd failed: reason withheld, "
            "informer-sync failed");
  EXPECT_EQ(judgeApiserverAnswer(503, "", "").detail, "HTTP 503: empty body");
  EXPECT_EQ(judgeApiserverAnswer(401, "application/json", "{\"kind\":\"Status\"}").detail,
            "HTTP 401: '{\"kind\":\"Status\"}'");
}

TEST(ApiserverAnswer, HtmlIsNotAnApiserver) {
  EXPECT_EQ(judgeApiserverAnswer(502, "text/html; charset=utf-8", "<p>bad gateway</p>").detail,
            "HTTP 502 with a text/html body: not an apiserver");
  EXPECT_EQ(judgeApiserverAnswer(404, "", "  <!DOCTYPE html><html></html>").detail,
            "HTTP 404 with a HTML body: not an apiserver");
}

TEST(ApiserverAnswer, QuotedTextIsShortAndPrintable) {
  EXPECT_EQ(excerpt("a\tb\r\nc\x01\xff", 100), "a b  c??");
  EXPECT_EQ(excerpt("abcdef", 3), "abc...");
  auto verdict = judgeApiserverAnswer(200, "text/plain", std::string(200, 'x'));
  EXPECT_EQ(verdict.detail, "body '" + std::string(64, 'x') + "...' is not 'ok'");
}

}  // namespace
}  // namespace vipd::daemon
