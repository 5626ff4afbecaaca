#include "bytes/big_endian.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

namespace vipd::bytes {
namespace {

using ::testing::ElementsAre;

// One buffer whose bytes differ from each other, so a swapped or shifted byte shows.
constexpr std::array<uint8_t, 9> kBytes{0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF, 0xFE};

TEST(BigEndianTest, LoadsEachWidthMostSignificantByteFirst) {
  EXPECT_EQ(load16(kBytes, 0), 0x0123);
  EXPECT_EQ(load16(kBytes, 7), 0xEFFE);  // the last two bytes: high bit set, no sign extension
  EXPECT_EQ(load32(kBytes, 0), 0x01234567u);
  EXPECT_EQ(load32(kBytes, 5), 0xABCDEFFEu);
  EXPECT_EQ(load64(kBytes, 0), 0x0123456789ABCDEFull);
  EXPECT_EQ(load64(kBytes, 1), 0x23456789ABCDEFFEull);
}

TEST(BigEndianTest, StoresEachWidthMostSignificantByteFirst) {
  std::array<uint8_t, 15> out{};
  store16(out, 0, 0xBEEF);
  store32(out, 2, 0xDEADBEEFu);
  store64(out, 6, 0x0102030405060708ull);
  EXPECT_THAT(out, ElementsAre(0xBE, 0xEF,                                     // 16 bits
                               0xDE, 0xAD, 0xBE, 0xEF,                         // 32 bits
                               0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,  // 64 bits
                               0x00));                                         // untouched
  EXPECT_EQ(load16(out, 0), 0xBEEF);
  EXPECT_EQ(load32(out, 2), 0xDEADBEEFu);
  EXPECT_EQ(load64(out, 6), 0x0102030405060708ull);
}

TEST(BigEndianTest, ReaderReadsInSequence) {
  ByteReader r(kBytes);
  EXPECT_EQ(r.u8(), 0x01);
  EXPECT_EQ(r.u16(), 0x2345);
  EXPECT_EQ(r.u32(), 0x6789ABCDu);
  EXPECT_EQ(r.position(), 7u);
  EXPECT_EQ(r.remaining(), 2u);
  auto two = r.bytes(2);
  ASSERT_TRUE(two.has_value());
  EXPECT_THAT(*two, ElementsAre(0xEF, 0xFE));
  EXPECT_TRUE(r.atEnd());
  EXPECT_TRUE(r.rest().empty());
}

TEST(BigEndianTest, ReaderReads64Bits) {
  ByteReader r(kBytes);
  EXPECT_EQ(r.u64(), 0x0123456789ABCDEFull);
  EXPECT_EQ(r.remaining(), 1u);
}

// Untrusted input: a read past the end fails and leaves the position where it was, so the
// caller can report where the message was cut off and a loop cannot spin.
TEST(BigEndianTest, ReaderFailsWholeAtTheEndAndStaysPut) {
  ByteReader r{std::span<const uint8_t>(kBytes).first(3)};
  ASSERT_EQ(r.u8(), 0x01);
  EXPECT_EQ(r.u32(), std::nullopt);
  EXPECT_EQ(r.u64(), std::nullopt);
  EXPECT_EQ(r.bytes(3), std::nullopt);
  EXPECT_EQ(r.position(), 1u);
  EXPECT_EQ(r.u16(), 0x2345);
  EXPECT_EQ(r.u8(), std::nullopt);
  EXPECT_EQ(r.u16(), std::nullopt);
  EXPECT_TRUE(r.atEnd());
}

TEST(BigEndianTest, ReaderOverNothing) {
  ByteReader r(std::span<const uint8_t>{});
  EXPECT_TRUE(r.atEnd());
  EXPECT_EQ(r.u8(), std::nullopt);
  auto none = r.bytes(0);
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->empty());
}

TEST(BigEndianTest, ReaderRestTakesWhatIsLeft) {
  ByteReader r(kBytes);
  ASSERT_EQ(r.u64(), 0x0123456789ABCDEFull);
  EXPECT_THAT(r.rest(), ElementsAre(0xFE));
  EXPECT_TRUE(r.atEnd());
}

TEST(BigEndianTest, WriterAppendsAndPatches) {
  ByteWriter w;
  w.u8(0x01);
  const size_t lengthAt = w.size();
  w.u16(0);  // placeholder, patched below
  w.u32(0x0A0B0C0Du);
  w.u64(0x1112131415161718ull);
  const std::array<uint8_t, 2> tail{0xFF, 0xEE};
  w.bytes(tail);
  w.patchU16(lengthAt, static_cast<uint16_t>(w.size()));
  w.patchU8(0, 0x02);
  EXPECT_THAT(std::move(w).take(),
              ElementsAre(0x02,                                            // patched u8
                          0x00, 0x11,                                      // patched length 17
                          0x0A, 0x0B, 0x0C, 0x0D,                          // u32
                          0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18,  // u64
                          0xFF, 0xEE));                                    // bytes
}

// An offset out of range is our bug (the caller checked the size first): it aborts with a
// message instead of reading or writing past the buffer.
TEST(BigEndianDeathTest, OutOfRangeOffsetsAbort) {
  EXPECT_DEATH(load16(kBytes, 8), "load16: 2 bytes at offset 8 of a 9-byte buffer");
  EXPECT_DEATH(load32(kBytes, 6), "load32");
  EXPECT_DEATH(load64(kBytes, SIZE_MAX), "load64");
  std::array<uint8_t, 4> out{};
  EXPECT_DEATH(store64(out, 0, 1), "store64");
  EXPECT_DEATH(store32(out, 1, 1), "store32");
  ByteWriter w;
  w.u8(0);
  EXPECT_DEATH(w.patchU16(0, 1), "patchU16: 2 bytes at offset 0 of a 1-byte buffer");
  EXPECT_DEATH(w.patchU8(1, 1), "patchU8");
}

}  // namespace
}  // namespace vipd::bytes
