// node_watch.h: LineFramer (each input also fed one byte at a time) and NodeWatch's list and
// watch protocol, event by event.
#include "kube/node_watch.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace vipd::kube {
namespace {

std::vector<std::string> frame(LineFramer& f, std::string_view bytes, bool byteAtATime,
                               Result<void>* result = nullptr) {
  std::vector<std::string> lines;
  auto onLine = [&](std::string_view l) { lines.emplace_back(l); };
  Result<void> r;
  if (byteAtATime) {
    for (char c : bytes) {
      r = f.feed(std::string_view(&c, 1), onLine);
      if (!r) {
        break;
      }
    }
  } else {
    r = f.feed(bytes, onLine);
  }
  if (result) {
    *result = r;
  }
  return lines;
}

TEST(LineFramer, LinesWholeAndByteAtATime) {
  for (bool byteAtATime : {false, true}) {
    LineFramer f(64);
    EXPECT_EQ(frame(f, "{\"a\":1}\n\n{\"b\":2}\r\n{\"c\"", byteAtATime),
              (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}"}))
        << "empty lines skipped, CR dropped";
    EXPECT_EQ(f.buffered(), 4u);
    EXPECT_EQ(frame(f, ":3}\n", byteAtATime), (std::vector<std::string>{"{\"c\":3}"}));
    EXPECT_EQ(f.buffered(), 0u);
  }
}

TEST(LineFramer, ALineBeyondTheLimitIsRefusedAndNothingIsHeld) {
  for (bool byteAtATime : {false, true}) {
    LineFramer f(8);
    Result<void> r;
    EXPECT_EQ(frame(f, "12345678\n", byteAtATime, &r), (std::vector<std::string>{"12345678"}))
        << "exactly the limit";
    ASSERT_TRUE(r);
    EXPECT_TRUE(frame(f, "123456789", byteAtATime, &r).empty());
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().kind, ErrorKind::TooLarge);
    EXPECT_EQ(f.buffered(), 0u);
    r = f.feed("ok\n", [](std::string_view) { ADD_FAILURE() << "a spent framer gives nothing"; });
    EXPECT_FALSE(r);
  }
}

constexpr std::string_view kList =
    R"({"kind":"NodeList","metadata":{"resourceVersion":"100"},"items":[)"
    R"({"kind":"Node","metadata":{"name":"cp-1","resourceVersion":"99",)"
    R"("annotations":{"vipd.io/withdraw":"disk"}}}]})";

TEST(NodeWatch, Targets) {
  NodeWatch w("cp-1");
  EXPECT_TRUE(w.needsList());
  EXPECT_EQ(w.listTarget(), "/api/v1/nodes?fieldSelector=metadata.name%3Dcp-1");
  ASSERT_TRUE(w.onList(kList));
  EXPECT_FALSE(w.needsList());
  EXPECT_EQ(w.watchTarget(),
            "/api/v1/nodes?fieldSelector=metadata.name%3Dcp-1&watch=1&allowWatchBookmarks=true"
            "&resourceVersion=100&timeoutSeconds=300")
      << "from the list's version, not the item's";
}

TEST(NodeWatch, ListThenEvents) {
  NodeWatch w("cp-1");
  auto u = w.onList(kList);
  ASSERT_TRUE(u) << u.error().message;
  ASSERT_TRUE(u->intent);
  EXPECT_EQ(u->intent->withdrawReason, "disk");

  u = w.onEvent(R"({"type":"MODIFIED","object":{"kind":"Node","metadata":{"name":"cp-1",)"
                R"("resourceVersion":"105"}}})");
  ASSERT_TRUE(u) << u.error().message;
  ASSERT_TRUE(u->intent);
  EXPECT_FALSE(u->intent->withdraw()) << "the annotation removed";
  EXPECT_EQ(w.resourceVersion(), "105");

  u = w.onEvent(
      R"({"type":"BOOKMARK","object":{"kind":"Node","metadata":{"resourceVersion":"200"}}})");
  ASSERT_TRUE(u);
  EXPECT_FALSE(u->intent) << "a bookmark carries no Node";
  EXPECT_EQ(w.resourceVersion(), "200");
  EXPECT_EQ(w.bookmarks(), 1u);

  u = w.onEvent(R"({"type":"DELETED","object":{"kind":"Node","metadata":{"name":"cp-1",)"
                R"("resourceVersion":"201"}}})");
  ASSERT_TRUE(u);
  EXPECT_TRUE(u->deleted);
  EXPECT_EQ(w.resourceVersion(), "201");
}

TEST(NodeWatch, GoneMeansRelist) {
  NodeWatch w("cp-1");
  ASSERT_TRUE(w.onList(kList));
  auto u = w.onEvent(R"({"type":"ERROR","object":{"kind":"Status","code":410,)"
                     R"j("reason":"Expired","message":"too old resource version: 100 (150)"}})j");
  ASSERT_FALSE(u);
  EXPECT_EQ(u.error().kind, ErrorKind::Http);
  EXPECT_EQ(u.error().httpStatus, 410u);
  EXPECT_EQ(u.error().message,
            "the watch ended with an error 410: too old resource version: 100 (150)");
  EXPECT_TRUE(w.needsList());
  ASSERT_TRUE(w.onList(kList));
  EXPECT_EQ(w.relists(), 1u);
  w.onGone();  // the watch's own HTTP status 410
  EXPECT_TRUE(w.needsList());
}

TEST(NodeWatch, OtherErrorsKeepTheVersion) {
  NodeWatch w("cp-1");
  ASSERT_TRUE(w.onList(kList));
  auto u = w.onEvent(R"({"type":"ERROR","object":{"kind":"Status","code":500}})");
  ASSERT_FALSE(u);
  EXPECT_EQ(u.error().message, "the watch ended with an error 500: (no message)");
  EXPECT_EQ(w.resourceVersion(), "100") << "watch again from where it was";
}

TEST(NodeWatch, GarbageIsRefusedAndChangesNothing) {
  NodeWatch w("cp-1");
  ASSERT_TRUE(w.onList(kList));
  for (std::string_view line : {
           R"(not json)",
           R"([1,2])",
           R"({"type":"MODIFIED"})",
           R"({"type":"MODIFIED","object":"x"})",
           R"({"type":"SURPRISE","object":{"metadata":{"resourceVersion":"300"}}})",
           R"({"type":"MODIFIED","object":{"metadata":{"name":"cp-1"}}})",
           R"({"type":"MODIFIED","object":{"metadata":{"name":"cp-1",)"
           R"("resourceVersion":"1&watch=0"}}})",
           R"({"type":"MODIFIED","object":{"metadata":{"name":"cp-1","resourceVersion":7}}})",
           R"({"type":"MODIFIED","object":{"metadata":{"name":"cp-2","resourceVersion":"301"}}})",
       }) {
    auto u = w.onEvent(line);
    ASSERT_FALSE(u) << line;
    EXPECT_EQ(u.error().kind, ErrorKind::Protocol) << line;
    EXPECT_EQ(w.resourceVersion(), "100") << line;
  }
}

TEST(NodeWatch, ListShapes) {
  NodeWatch w("cp-1");
  auto u = w.onList(R"({"kind":"NodeList","metadata":{"resourceVersion":"5"},"items":[]})");
  ASSERT_TRUE(u);
  EXPECT_TRUE(u->deleted) << "no such Node";
  EXPECT_EQ(w.resourceVersion(), "5");
  NodeWatch fresh("cp-1");
  for (std::string_view body : {
           R"({"items":[]})",
           R"({"metadata":{"resourceVersion":"5"},"items":{}})",
           R"({"metadata":{"resourceVersion":"5"},"items":[{"metadata":{"name":"cp-1"}},)"
           R"({"metadata":{"name":"cp-1"}}]})",
           R"({"metadata":{"resourceVersion":"5"},"items":[{"metadata":{"name":"cp-9"}}]})",
           R"({"kind":"NodeList","items":[{)",
       }) {
    auto r = fresh.onList(body);
    ASSERT_FALSE(r) << body;
    EXPECT_EQ(r.error().kind, ErrorKind::Protocol) << body;
    EXPECT_TRUE(fresh.needsList()) << body;
  }
}

}  // namespace
}  // namespace vipd::kube
