// Helpers shared by the BGP codec tests: byte assembly, and the checks every vector goes through
// (encode, decode, and the framer fed one byte at a time).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "bgp/codec.h"
#include "bgp/message_framer.h"

namespace vipd::bgp::test {

using Bytes = std::vector<uint8_t>;

inline const Bytes kMarker(16, 0xFF);

// Concatenates byte groups so a vector can be written one commented field per line.
inline Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const auto& p : parts) {
    out.insert(out.end(), p.begin(), p.end());
  }
  return out;
}

// A whole message around `body`. Only for malformation tests, where the header is not what is
// being checked; the byte-exact vectors spell their headers out.
inline Bytes withHeader(MessageType type, const Bytes& body) {
  const size_t length = kHeaderSize + body.size();
  return cat({kMarker,
              {static_cast<uint8_t>(length >> 8), static_cast<uint8_t>(length),
               static_cast<uint8_t>(type)},
              body});
}

// An UPDATE with the two length fields filled in from the parts.
inline Bytes updateMessage(const Bytes& withdrawn, const Bytes& attributes, const Bytes& nlri) {
  return withHeader(
      MessageType::Update,
      cat({{static_cast<uint8_t>(withdrawn.size() >> 8), static_cast<uint8_t>(withdrawn.size())},
           withdrawn,
           {static_cast<uint8_t>(attributes.size() >> 8), static_cast<uint8_t>(attributes.size())},
           attributes,
           nlri}));
}

// Feeds `wire` to a fresh framer one byte at a time: nothing may come out before the last byte,
// and exactly `wire` must come out after it.
inline void expectFramedByteByByte(const Bytes& wire) {
  MessageFramer framer;
  for (size_t i = 0; i < wire.size(); ++i) {
    framer.append(std::span(&wire[i], 1));
    auto next = framer.next();
    ASSERT_TRUE(next.has_value()) << "framer error at byte " << i << ": " << next.error().reason;
    if (i + 1 < wire.size()) {
      ASSERT_FALSE(next->has_value()) << "message emitted early at byte " << i;
    } else {
      ASSERT_TRUE(next->has_value()) << "no message after the last byte";
      EXPECT_EQ(**next, wire);
    }
  }
  EXPECT_EQ(framer.bufferedBytes(), 0u);
}

// Decodes `wire` and expects `expected` with the given handling.
inline DecodedMessage expectDecodes(const Bytes& wire, const Message& expected,
                                    const CodecOptions& options = {},
                                    UpdateHandling handling = UpdateHandling::Normal) {
  auto decoded = decode(wire, options);
  EXPECT_TRUE(decoded.has_value()) << (decoded ? "" : decoded.error().reason);
  if (!decoded) {
    return {};
  }
  EXPECT_EQ(decoded->message, expected);
  EXPECT_EQ(decoded->handling, handling);
  return *decoded;
}

// The full check for a valid vector: both directions byte-exact, and framed byte by byte.
inline void expectVector(const Bytes& wire, const Message& message,
                         const CodecOptions& options = {}) {
  EXPECT_EQ(encode(message, options), wire);
  auto decoded = expectDecodes(wire, message, options);
  EXPECT_TRUE(decoded.notes.empty());
  expectFramedByteByByte(wire);
}

// Decoding must fail with exactly this NOTIFICATION.
inline void expectDecodeError(const Bytes& wire, ErrorCode code, uint8_t subcode, const Bytes& data,
                              const CodecOptions& options = {}) {
  auto decoded = decode(wire, options);
  ASSERT_FALSE(decoded.has_value()) << "decoded although malformed";
  EXPECT_EQ(decoded.error().notification.code, static_cast<uint8_t>(code));
  EXPECT_EQ(decoded.error().notification.subcode, subcode);
  EXPECT_EQ(decoded.error().notification.data, data);
  EXPECT_FALSE(decoded.error().reason.empty());
}

}  // namespace vipd::bgp::test
