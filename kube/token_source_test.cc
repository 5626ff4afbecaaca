// token_source.h: when the token file is read again, and what a bad read leaves.
#include "kube/token_source.h"

#include <gtest/gtest.h>

#include <string>

namespace vipd::kube {
namespace {

using std::chrono::milliseconds;
using Clock = TokenSource::Clock;

struct TokenFile {
  std::optional<std::string> text = "tok-1\n";
  int reads = 0;
  ReadFile reader() {
    return [this](const std::string&) -> tl::expected<std::string, std::string> {
      ++reads;
      if (!text) {
        return tl::unexpected(std::string("No such file or directory"));
      }
      return *text;
    };
  }
};

Credentials withFile() {
  Credentials c;
  c.tokenFile = "/sa/token";
  return c;
}

TEST(TokenSource, InlineTokenAndNone) {
  Credentials c;
  c.token = "inline";
  TokenFile f;
  TokenSource inlineToken(c, f.reader());
  EXPECT_EQ(*inlineToken.token(Clock::time_point{}), "inline");
  TokenSource none(Credentials{}, f.reader());
  EXPECT_EQ(*none.token(Clock::time_point{}), std::nullopt) << "a client certificate instead";
  EXPECT_EQ(f.reads, 0);
}

TEST(TokenSource, ReadAgainEveryMinuteAndAfterA401) {
  TokenFile f;
  TokenSource s(withFile(), f.reader(), milliseconds{60000});
  Clock::time_point t0{};
  EXPECT_EQ(*s.token(t0), "tok-1") << "trailing newline trimmed";
  EXPECT_EQ(*s.token(t0 + milliseconds{59999}), "tok-1");
  EXPECT_EQ(f.reads, 1) << "cached within the minute";
  f.text = "tok-2";
  EXPECT_EQ(*s.token(t0 + milliseconds{60000}), "tok-2") << "a rotation, a minute on";
  EXPECT_EQ(f.reads, 2);
  EXPECT_EQ(s.rotations(), 1u);
  f.text = "tok-3";
  s.invalidate();
  EXPECT_EQ(*s.token(t0 + milliseconds{60001}), "tok-3") << "at once after a 401";
  EXPECT_EQ(s.rotations(), 2u);
}

TEST(TokenSource, ABadReadKeepsTheLastGoodToken) {
  TokenFile f;
  TokenSource s(withFile(), f.reader(), milliseconds{1000});
  Clock::time_point t0{};
  EXPECT_EQ(*s.token(t0), "tok-1");
  f.text.reset();  // being replaced
  EXPECT_EQ(*s.token(t0 + milliseconds{1000}), "tok-1");
  f.text = "half a token\n with a space";
  EXPECT_EQ(*s.token(t0 + milliseconds{2000}), "tok-1");
  EXPECT_EQ(s.rotations(), 0u);
}

TEST(TokenSource, NeverAGoodToken) {
  TokenFile f;
  f.text.reset();
  TokenSource s(withFile(), f.reader());
  auto t = s.token(Clock::time_point{});
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().kind, ErrorKind::Config);
  EXPECT_EQ(t.error().message, "token file /sa/token: No such file or directory");
  f.text = "";
  s.invalidate();
  t = s.token(Clock::time_point{});
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().message, "token file /sa/token: the token is empty");
}

}  // namespace
}  // namespace vipd::kube
