// vipd probe's pure parts: the verdicts on /readyz and /version answers, a target's history and
// its summary, the matrix as JSON and text, and the watcher's URL parsing. No sockets.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "daemon/probe/answer.h"
#include "daemon/probe/fetch.h"
#include "daemon/probe/history.h"
#include "daemon/probe/matrix.h"
#include "daemon/probe/metrics.h"

namespace vipd::daemon {
namespace {

using nlohmann::json;
using std::chrono::microseconds;
using std::chrono::seconds;
using std::chrono::system_clock;
using ::testing::HasSubstr;

constexpr std::string_view kProxyPage =
    "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>nginx</body></html>\r\n";

TEST(ProbeAnswer, ReadyzOkIsTheOnlySuccess) {
  EXPECT_TRUE(judgeReadyzAnswer(200, "text/plain", "ok").ok);
  auto body = judgeReadyzAnswer(200, "text/plain", "hello");
  EXPECT_FALSE(body.ok);
  EXPECT_EQ(body.fault, AnswerFault::Body);
  auto status = judgeReadyzAnswer(500, "text/plain", "[-]etcd failed: x\n");
  EXPECT_EQ(status.fault, AnswerFault::HttpStatus);
}

TEST(ProbeAnswer, AnHtmlPageIsNotAnApiserverWhateverItsStatus) {
  for (unsigned code : {200u, 502u, 503u, 404u}) {
    for (auto judge : {judgeReadyzAnswer, judgeVersionAnswer}) {
      auto v = judge(code, "text/html", kProxyPage);
      EXPECT_FALSE(v.ok) << code;
      EXPECT_EQ(v.fault, AnswerFault::NotApiserver) << code;
      EXPECT_THAT(v.detail, HasSubstr("not an apiserver"));
      // A page without a Content-Type is recognized by its start.
      EXPECT_EQ(judge(code, "", kProxyPage).fault, AnswerFault::NotApiserver) << code;
    }
  }
}

TEST(ProbeAnswer, VersionNeedsAJsonObjectWithGitVersion) {
  auto ok = judgeVersionAnswer(200, "application/json",
                               R"({"major":"1","minor":"30","gitVersion":"v1.30.2"})");
  EXPECT_TRUE(ok.ok);
  EXPECT_EQ(ok.detail, "HTTP 200 gitVersion v1.30.2");
  for (std::string_view body : {"ok", "{}", "[1]", R"({"gitVersion":""})", R"({"gitVersion":3})",
                                "{\"gitVersion\":", ""}) {
    auto v = judgeVersionAnswer(200, "application/json", body);
    EXPECT_FALSE(v.ok) << body;
    EXPECT_EQ(v.fault, AnswerFault::Body) << body;
  }
  EXPECT_EQ(judgeVersionAnswer(403, "application/json", R"({"kind":"Status"})").fault,
            AnswerFault::HttpStatus);
}

TEST(ProbeHistory, EveryFailureHasAReasonLabelFromTheFixedSet) {
  for (auto f : {CallFailure::Resolve, CallFailure::ConnectionRefused, CallFailure::Connect,
                 CallFailure::Timeout, CallFailure::Tls, CallFailure::Transport,
                 CallFailure::NotApiserver, CallFailure::HttpStatus, CallFailure::Body,
                 CallFailure::Local}) {
    auto reason = probeFailureReason(f);
    EXPECT_NE(std::find(std::begin(kProbeFailureReasons), std::end(kProbeFailureReasons), reason),
              std::end(kProbeFailureReasons))
        << reason;
  }
  EXPECT_EQ(probeFailureReason(CallFailure::None), "");
  EXPECT_EQ(probeFailureReason(CallFailure::NotApiserver), "not_apiserver");
}

TEST(ProbeHistory, PercentileIsNearestRank) {
  std::vector<microseconds> v;
  EXPECT_EQ(percentile(v, 0.5), std::nullopt);
  for (int i = 100; i >= 1; --i) {
    v.push_back(microseconds(i * 1000));
  }
  EXPECT_EQ(percentile(v, 0.5), microseconds(50000));
  EXPECT_EQ(percentile(v, 0.99), microseconds(99000));
  std::vector<microseconds> one{microseconds(7)};
  EXPECT_EQ(percentile(one, 0.99), microseconds(7));
}

TEST(ProbeHistory, SummaryCoversTheWindowAndLatencyOnlyTheSuccesses) {
  ProbeHistory history(100);
  auto t0 = system_clock::time_point(seconds(1'000'000));
  history.record({t0 - seconds(700), true, microseconds(900'000)}, "old");  // outside the window
  for (int i = 0; i < 9; ++i) {
    history.record({t0 + seconds(i), true, microseconds(1000 * (i + 1))}, "HTTP 200 ok");
  }
  history.record({t0 + seconds(9), false, microseconds(2'000'000), CallFailure::Timeout},
                 "timed out after 2s (waiting for the response)");
  auto s = history.summarize(t0 + seconds(10), seconds(600));
  EXPECT_EQ(s.probes, 10u);
  EXPECT_EQ(s.successes, 9u);
  EXPECT_DOUBLE_EQ(*s.successRate, 0.9);
  EXPECT_EQ(s.p50, microseconds(5000));
  EXPECT_EQ(s.p99, microseconds(9000));

  json doc = history.toJson(t0 + seconds(10), seconds(600), 3);
  EXPECT_EQ(doc["last"]["reason"], "timeout");
  EXPECT_EQ(doc["lastFailure"]["detail"], "timed out after 2s (waiting for the response)");
  ASSERT_EQ(doc["recent"].size(), 3u);
  EXPECT_EQ(doc["recent"][2], json({{"ok", false}, {"reason", "timeout"}}));
  EXPECT_DOUBLE_EQ(doc["recent"][1]["ms"].get<double>(), 9.0);
}

TEST(ProbeHistory, KeepsAtMostItsCapacity) {
  ProbeHistory history(5);
  auto t0 = system_clock::time_point(seconds(1'000'000));
  for (int i = 0; i < 50; ++i) {
    history.record({t0 + seconds(i), true, microseconds(10)}, "ok");
  }
  EXPECT_EQ(history.summarize(t0 + seconds(50), seconds(600)).probes, 5u);
}

TEST(ProbeMatrix, SparklineScalesToTheSlowestAndMarksFailures) {
  json recent = json::array({{{"ok", true}, {"ms", 1.0}},
                             {{"ok", true}, {"ms", 8.0}},
                             {{"ok", false}, {"reason", "timeout"}},
                             {{"ok", true}, {"ms", 4.0}}});
  EXPECT_EQ(sparkline(recent, 10), "\u2582\u2588x\u2585");
  EXPECT_EQ(sparkline(recent, 2), "x\u2588");  // scaled to the slowest shown
  EXPECT_EQ(sparkline(json("garbage"), 10), "");
}

json probeDocument(const std::string& site) {
  return {{"site", site},
          {"targets",
           json::array({{{"name", "vip"},
                         {"url", "https://192.0.2.10:6443/readyz"},
                         {"probes", 10},
                         {"successRate", 1.0},
                         {"p50Ms", 1.5},
                         {"p99Ms", 3.25},
                         {"last", {{"ok", true}, {"detail", "HTTP 200 ok"}}},
                         {"recent", json::array({{{"ok", true}, {"ms", 1.5}}})}},
                        {{"name", "proxy"},
                         {"successRate", 0.0},
                         {"p50Ms", nullptr},
                         {"last", {{"ok", false}, {"reason", "not_apiserver"}}},
                         {"recent", json::array({{{"ok", false}}})}}})}};
}

TEST(ProbeMatrix, RowsAreSitesColumnsTargets) {
  std::vector<ProbeSource> sources{{"b:9474", probeDocument("site-b"), ""},
                                   {"a:9474", probeDocument("site-a"), ""},
                                   {"c:9474", nullptr, "connect to c:9474 failed: refused"}};
  json matrix = probeMatrixJson(sources);
  EXPECT_EQ(matrix["sites"], json({"site-a", "site-b"}));
  EXPECT_EQ(matrix["targets"], json({"vip", "proxy"}));
  EXPECT_EQ(matrix["cells"].size(), 4u);
  EXPECT_EQ(matrix["unreachable"][0]["url"], "c:9474");
  std::string text = renderProbeMatrix(matrix, "title");
  EXPECT_THAT(text, HasSubstr("site    vip"));
  EXPECT_THAT(text, HasSubstr("site-a  100.0%   1.5/3.2  ms \u2588"));
  EXPECT_THAT(text, HasSubstr("0.0%     -/-    ms x not_apiserver"));
  EXPECT_THAT(text, HasSubstr("unreachable: c:9474: connect to c:9474 failed: refused"));
}

TEST(ProbeMatrix, GarbageDocumentsNeverThrow) {
  std::vector<ProbeSource> sources{{"x", json::array({1, 2}), ""},
                                   {"y", json({{"site", 3}}), ""},
                                   {"z", json({{"site", "s"}, {"targets", "no"}}), ""},
                                   {"w", json({{"site", "s"}, {"targets", {1, "a", nullptr}}}), ""}};
  json matrix;
  EXPECT_NO_THROW(matrix = probeMatrixJson(sources));
  EXPECT_NO_THROW(renderProbeMatrix(matrix, "t"));
  EXPECT_EQ(matrix["unreachable"].size(), 2u);
}

// A field of the wrong type where the reader expects a boolean or a number: json::value() throws
// type_error 302 on those, and `vipd probe --watch` aborted (exit 134) on such a /probe.json.
TEST(ProbeMatrix, WronglyTypedFieldsNeverThrow) {
  json doc = probeDocument("site-a");
  doc["targets"][0]["last"]["ok"] = "yes";
  doc["targets"][0]["recent"] = json::array({{{"ok", "yes"}, {"ms", "fast"}}, {{"ok", 1}}});
  doc["targets"][1]["last"] = {{"ok", nullptr}, {"reason", 7}};
  doc["targets"][1]["recent"] = json::array({{{"ok", true}, {"ms", "slow"}}});
  std::vector<ProbeSource> sources{{"a:9474", doc, ""}};
  json matrix;
  ASSERT_NO_THROW(matrix = probeMatrixJson(sources));
  ASSERT_EQ(matrix["cells"].size(), 2u);
  // What is not a boolean is not a success; a success without a number is drawn at the bottom.
  EXPECT_EQ(matrix["cells"][0]["lastOk"], json());
  EXPECT_EQ(matrix["cells"][0]["sparkline"], "xx");
  EXPECT_EQ(matrix["cells"][1]["lastOk"], json());
  EXPECT_EQ(matrix["cells"][1]["lastReason"], "");
  EXPECT_EQ(matrix["cells"][1]["sparkline"], "\u2581");
  EXPECT_NO_THROW(renderProbeMatrix(matrix, "t"));
  // A matrix that is not what probeMatrixJson builds is drawn as far as it goes.
  for (const json& odd : {json::array(), json({{"sites", "x"}}),
                          json({{"cells", {{{"lastOk", "no"}}, 5}}, {"unreachable", {7}}})}) {
    EXPECT_NO_THROW(renderProbeMatrix(odd, "t")) << odd.dump();
  }
}

// Names and reasons come from other hosts' documents: a terminal must never get their control
// characters (an escape sequence could clear the screen, retitle the window or fake a line).
TEST(ProbeMatrix, ControlCharactersFromADocumentAreEscaped) {
  json doc = probeDocument("a\x1b]0;owned\x07" "b");
  doc["targets"][1]["name"] = "t\x1b[2J";
  doc["targets"][1]["last"]["reason"] = "refused\nsite-z  100.0%";
  std::vector<ProbeSource> sources{{"a:9474", doc, ""},
                                   {"c\x1b[31m:9474", nullptr, "connect to c failed:\r\x1b[K"}};
  json matrix = probeMatrixJson(sources);
  EXPECT_EQ(matrix["sites"], json({"a\x1b]0;owned\x07" "b"}));  // the JSON keeps the values
  std::string text = renderProbeMatrix(matrix, "title");
  for (char c : text) {
    EXPECT_TRUE(c == '\n' || static_cast<unsigned char>(c) >= 0x20) << text;
  }
  // The title, the legend, a blank line, the header, site a's row and the unreachable one.
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 6) << text;
  EXPECT_THAT(text, HasSubstr("a\\x1b]0;owned\\x07b"));
  EXPECT_THAT(text, HasSubstr("t\\x1b[2J"));
  EXPECT_THAT(text, HasSubstr("x refused\\nsite-z  100.0%"));
  EXPECT_THAT(text, HasSubstr("unreachable: c\\x1b[31m:9474: connect to c failed:\\r\\x1b[K"));
}

TEST(ProbeFetch, UrlForms) {
  auto a = parseFetchUrl("192.0.2.1:9474");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->host, "192.0.2.1");
  EXPECT_EQ(a->port, "9474");
  EXPECT_EQ(a->path, "/probe.json");
  auto b = parseFetchUrl("http://[2001:db8::1]:9474/x.json");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->host, "2001:db8::1");
  EXPECT_EQ(b->path, "/x.json");
  EXPECT_FALSE(parseFetchUrl("https://a:1").has_value());
  EXPECT_FALSE(parseFetchUrl("a").has_value());
  EXPECT_FALSE(parseFetchUrl("a:0").has_value());
  EXPECT_FALSE(parseFetchUrl("a:99999").has_value());
  EXPECT_FALSE(parseFetchUrl("[::1:9").has_value());
}

TEST(ProbeMetrics, SeriesPerSiteAndTargetFailuresByReason) {
  ProbeMetrics metrics("site-a", {"vip", "proxy"}, std::chrono::seconds(5));
  CallResult ok{true, "HTTP 200 ok", microseconds(1500)};
  CallResult page{false, "HTTP 502 with a text/html body: not an apiserver", microseconds(900),
                   false, CallFailure::NotApiserver};
  metrics.record("vip", ok);
  metrics.record("proxy", page);
  metrics.record("proxy", page);
  std::string text = metrics.serialize();
  EXPECT_THAT(text, HasSubstr("vipd_probe_successes_total{site=\"site-a\",target=\"vip\"} 1"));
  EXPECT_THAT(text, HasSubstr("vipd_probe_failures_total{reason=\"not_apiserver\",site=\"site-a\","
                              "target=\"proxy\"} 2"));
  EXPECT_THAT(text, HasSubstr("vipd_probe_failures_total{reason=\"timeout\",site=\"site-a\","
                              "target=\"vip\"} 0"));
  EXPECT_THAT(text, HasSubstr("vipd_probe_duration_seconds_count{site=\"site-a\",target=\"vip\"} 1"));
  EXPECT_THAT(text, HasSubstr("vipd_probe_up{site=\"site-a\",target=\"proxy\"} 0"));
  EXPECT_THAT(text, HasSubstr("vipd_probe_interval_seconds{site=\"site-a\"} 5"));
}

}  // namespace
}  // namespace vipd::daemon
