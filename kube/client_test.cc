// client.h's pure part: how a refusal becomes an Error. The exchanges themselves are tested
// against hostile servers by tests/e2e/test_hostile_api.py.
#include "kube/client.h"

#include <gtest/gtest.h>

namespace vipd::kube {
namespace {

TEST(HttpError, StatusMessageAndRetryAfter) {
  Error e = httpError("PATCH", "https://192.0.2.1:6443/apis/vipd.io/v1alpha1/vipdnodes/n/status",
                      429, "Too Many Requests",
                      R"({"kind":"Status","code":429,"message":"storage is (re)initializing"})",
                      " 7 ");
  EXPECT_EQ(e.kind, ErrorKind::Http);
  EXPECT_EQ(e.httpStatus, 429u);
  EXPECT_EQ(e.retryAfter, std::chrono::seconds{7});
  EXPECT_EQ(e.message,
            "PATCH https://192.0.2.1:6443/apis/vipd.io/v1alpha1/vipdnodes/n/status: HTTP 429 Too "
            "Many Requests: storage is (re)initializing");
}

TEST(HttpError, WhatToDoFor401And403) {
  EXPECT_EQ(httpError("GET", "https://h:443/api/v1/nodes", 401, "Unauthorized", "", "").message,
            "GET https://h:443/api/v1/nodes: HTTP 401 Unauthorized (the token or client "
            "certificate was refused; a service account token is read again)");
  Error e = httpError("GET", "https://h:443/api/v1/nodes", 403, "Forbidden",
                      R"({"message":"nodes is forbidden: User \"x\" cannot list"})", "");
  EXPECT_EQ(e.message,
            "GET https://h:443/api/v1/nodes: HTTP 403 Forbidden: nodes is forbidden: User \"x\" "
            "cannot list (RBAC: see manifests/kube/rbac.yaml for what vipd's account needs)");
}

TEST(HttpError, HostileAnswersAreCutAndPrintable) {
  Error e = httpError("GET", "https://h:443/x", 500, "Oops\r\nX-Forged: 1",
                      R"({"message":"a\u001b[2Jb)" + std::string(5000, 'm') + "\"}",
                      "Wed, 21 Oct 2015 07:28:00 GMT");
  EXPECT_EQ(e.retryAfter, std::nullopt) << "an HTTP-date is ignored";
  EXPECT_EQ(e.message, "GET https://h:443/x: HTTP 500 Oops??X-Forged: 1: a?[2Jb" +
                           std::string(250, 'm') + "...");
  EXPECT_EQ(httpError("GET", "u", 500, "", "{\"message\":\"raw \x1b\"}", "").message,
            "GET u: HTTP 500 ") << "not JSON (a raw control character): no detail";
  EXPECT_EQ(httpError("GET", "u", 503, "", "not json", "99999999999").retryAfter, std::nullopt)
      << "a Retry-After of 11 digits is not taken";
}

}  // namespace
}  // namespace vipd::kube
