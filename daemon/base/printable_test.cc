// printable() and unprintableIn() (daemon/base/printable.h): what counts as a control character
// or as a byte that is not UTF-8, and how each is written. The logger, `vipd probe --watch`,
// vipctl and the control socket's check of a withdraw reason all go through these two.
#include "daemon/base/printable.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace vipd::daemon {
namespace {

TEST(Printable, ControlCharactersAreEscapedAndTextIsNot) {
  EXPECT_EQ(printable("replace node 3, ticket #42"), "replace node 3, ticket #42");
  EXPECT_EQ(printable("a\nb\rc\td"), "a\\nb\\rc\\td");
  EXPECT_EQ(printable(std::string("\x00\x01\x1b[2J\x7f", 7)), "\\x00\\x01\\x1b[2J\\x7f");
  EXPECT_EQ(printable("\u0080\u009b2J\u009f"), "\\u0080\\u009b2J\\u009f");  // C1
  // UTF-8 of every length is text, U+00A0 (after C1) included.
  const std::string text = "gr\u00f6\u00dfer \u00a0 \u20ac \U0001F600";
  EXPECT_EQ(printable(text), text);
  EXPECT_EQ(printable("a\\nb"), "a\\nb");  // a backslash typed as such stays one
  EXPECT_EQ(printable(""), "");
}

TEST(Printable, BytesThatAreNotUtf8AreEscapedOneByOne) {
  EXPECT_EQ(printable("\xff"), "\\xff");
  EXPECT_EQ(printable("a\x9b" "2J"), "a\\x9b2J");  // a lone C1 byte: CSI on 8-bit terminals
  EXPECT_EQ(printable("\xe2\x82"), "\\xe2\\x82");            // truncated
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");            // overlong '/'
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");   // a surrogate
  EXPECT_EQ(printable("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
  EXPECT_EQ(printable("\xe2\x82x\xe2\x82\xac"), "\\xe2\\x82x\u20ac");
}

TEST(Printable, UnprintableInNamesTheFirstOne) {
  EXPECT_EQ(unprintableIn("replace node 3, gr\u00f6\u00dfer"), std::nullopt);
  EXPECT_EQ(unprintableIn("a\nb\x1b"), "a line feed (\\n)");
  EXPECT_EQ(unprintableIn("a\rb"), "a carriage return (\\r)");
  EXPECT_EQ(unprintableIn("a\tb"), "a tab (\\t)");
  EXPECT_EQ(unprintableIn("a\x1b[2J"), "the control character \\x1b");
  EXPECT_EQ(unprintableIn(std::string("a\0b", 3)), "the control character \\x00");
  EXPECT_EQ(unprintableIn("\u009b"), "the control character \\u009b");
  EXPECT_EQ(unprintableIn("x\xff"), "a byte that is not UTF-8 (\\xff)");
}

}  // namespace
}  // namespace vipd::daemon
