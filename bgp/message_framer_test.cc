// MessageFramer: header checks of RFC 4271 section 6.1 and RFC 7313, and stream splitting.
#include <gtest/gtest.h>

#include "bgp/message_framer.h"
#include "bgp/codec_test_support.h"

namespace vipd::bgp::test {
namespace {

const Bytes kKeepalive = cat({kMarker, {0x00, 0x13, 0x04}});
const Bytes kEndOfRib = cat({kMarker, {0x00, 0x17, 0x02}, {0x00, 0x00, 0x00, 0x00}});
const Bytes kCease = cat({kMarker, {0x00, 0x15, 0x03}, {0x06, 0x02}});
const Bytes kOpen = cat(
    {kMarker, {0x00, 0x1D, 0x01}, {0x04, 0xFD, 0xE9, 0x00, 0xB4}, {0xC0, 0x00, 0x02, 0x02, 0x00}});

// Appends `wire` at once and expects the framer to fail with exactly this NOTIFICATION.
void expectFramerError(const Bytes& wire, ErrorCode code, uint8_t sub, const Bytes& data) {
  MessageFramer framer;
  framer.append(wire);
  auto next = framer.next();
  ASSERT_FALSE(next.has_value()) << "framed although malformed";
  EXPECT_EQ(next.error().notification.code, static_cast<uint8_t>(code));
  EXPECT_EQ(next.error().notification.subcode, sub);
  EXPECT_EQ(next.error().notification.data, data);
  EXPECT_FALSE(next.error().reason.empty());
  // A failed framer stays failed, whatever arrives next.
  framer.append(kKeepalive);
  EXPECT_FALSE(framer.next().has_value());
}

Bytes header(uint16_t length, uint8_t type) {
  return cat({kMarker, {static_cast<uint8_t>(length >> 8), static_cast<uint8_t>(length), type}});
}

TEST(Framer, MarkerNotAllOnes) {
  Bytes wire = kKeepalive;
  wire[7] = 0xFE;
  expectFramerError(wire, ErrorCode::MessageHeader, subcode::kConnectionNotSynchronized, {});
}

TEST(Framer, LengthBelowHeader) {
  expectFramerError(header(18, 4), ErrorCode::MessageHeader, subcode::kBadMessageLength,
                    {0x00, 0x12});
}

TEST(Framer, LengthAboveMaximum) {
  expectFramerError(header(4097, 2), ErrorCode::MessageHeader, subcode::kBadMessageLength,
                    {0x10, 0x01});
}

TEST(Framer, TypeZero) {
  expectFramerError(header(19, 0), ErrorCode::MessageHeader, subcode::kBadMessageType, {0x00});
}

TEST(Framer, TypeSix) {
  expectFramerError(header(19, 6), ErrorCode::MessageHeader, subcode::kBadMessageType, {0x06});
}

TEST(Framer, OpenTooShort) {
  expectFramerError(header(28, 1), ErrorCode::MessageHeader, subcode::kBadMessageLength,
                    {0x00, 0x1C});
}

TEST(Framer, UpdateTooShort) {
  expectFramerError(header(22, 2), ErrorCode::MessageHeader, subcode::kBadMessageLength,
                    {0x00, 0x16});
}

TEST(Framer, NotificationTooShort) {
  expectFramerError(header(20, 3), ErrorCode::MessageHeader, subcode::kBadMessageLength,
                    {0x00, 0x14});
}

TEST(Framer, KeepaliveWithBody) {
  expectFramerError(header(20, 4), ErrorCode::MessageHeader, subcode::kBadMessageLength,
                    {0x00, 0x14});
}

// RFC 7313 section 5: 7/1 carrying the whole message, so it waits for the whole message.
TEST(Framer, RouteRefreshWrongLength) {
  const Bytes wire = cat({header(24, 5), {0x00, 0x01, 0x00, 0x01, 0xAA}});
  MessageFramer framer;
  framer.append(std::span(wire).first(23));
  auto partial = framer.next();
  ASSERT_TRUE(partial.has_value());
  EXPECT_FALSE(partial->has_value());
  expectFramerError(wire, ErrorCode::RouteRefreshMessage, subcode::kInvalidMessageLength, wire);
}

// decode() repeats the header checks so it is safe on its own.
TEST(Framer, DecodeChecksHeaderToo) {
  expectDecodeError(header(20, 4), ErrorCode::MessageHeader, subcode::kBadMessageLength,
                    {0x00, 0x14});
  expectDecodeError(cat({header(23, 2), {0x00, 0x00}}), ErrorCode::MessageHeader,
                    subcode::kBadMessageLength, {0x00, 0x17});
}

std::vector<Bytes> drain(MessageFramer& framer) {
  std::vector<Bytes> out;
  while (true) {
    auto next = framer.next();
    EXPECT_TRUE(next.has_value());
    if (!next || !next->has_value()) {
      return out;
    }
    out.push_back(**next);
  }
}

TEST(Framer, SeveralMessagesInOneChunk) {
  MessageFramer framer;
  framer.append(cat({kOpen, kKeepalive, kEndOfRib, kCease}));
  EXPECT_EQ(drain(framer), (std::vector<Bytes>{kOpen, kKeepalive, kEndOfRib, kCease}));
  EXPECT_EQ(framer.bufferedBytes(), 0u);
}

// Every possible split of a stream into two reads yields the same messages.
TEST(Framer, SplitAtEveryBoundary) {
  const std::vector<Bytes> messages{kOpen, kKeepalive, kEndOfRib, kCease};
  const Bytes stream = cat({kOpen, kKeepalive, kEndOfRib, kCease});
  for (size_t split = 0; split <= stream.size(); ++split) {
    MessageFramer framer;
    framer.append(std::span(stream).first(split));
    auto got = drain(framer);
    framer.append(std::span(stream).subspan(split));
    auto rest = drain(framer);
    got.insert(got.end(), rest.begin(), rest.end());
    EXPECT_EQ(got, messages) << "split at " << split;
    EXPECT_EQ(framer.bufferedBytes(), 0u);
  }
}

// Draining after every read keeps at most one partial message buffered.
TEST(Framer, BufferStaysBounded) {
  Bytes stream;
  for (int i = 0; i < 200; ++i) {
    stream.insert(stream.end(), kEndOfRib.begin(), kEndOfRib.end());
  }
  MessageFramer framer;
  size_t messages = 0;
  for (size_t at = 0; at < stream.size(); at += 7) {
    framer.append(std::span(stream).subspan(at, std::min<size_t>(7, stream.size() - at)));
    messages += drain(framer).size();
    EXPECT_LT(framer.bufferedBytes(), kEndOfRib.size());
  }
  EXPECT_EQ(messages, 200u);
}

}  // namespace
}  // namespace vipd::bgp::test
