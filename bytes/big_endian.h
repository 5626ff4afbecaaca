// The one big-endian (network byte order) helper every wire format of vipd uses: BGP (bgp/),
// BFD (bfd/) and the return path's echoes, relays and witness messages (daemon/returnpath/).
// Header-only and at the bottom of the layers: it includes nothing of vipd's, so the pure
// libraries that may use nothing else of ours may use it.
//
// Values are assembled and spread byte by byte, never by reinterpret_cast over a wire struct.
// - load16/32/64 and store16/32/64 read and write at an offset the caller has already checked
//   (a size check of the whole message comes first); an offset out of range is our bug and aborts
//   with a message, never a read or write past the buffer.
// - ByteReader reads untrusted bytes in sequence: each read either succeeds and advances or fails
//   and leaves the position unchanged, so a parse loop built on it makes progress or stops.
// - ByteWriter builds a message; a length field that precedes its contents is written as a
//   placeholder and patched once the contents are known.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace vipd::bytes {

namespace detail {

// Offsets come from the caller's own size checks, so one out of range is a broken invariant.
inline void checkRange(size_t offset, size_t width, size_t size, const char* what) {
  if (offset > size || width > size - offset) {
    std::fprintf(stderr, "bytes::%s: %zu bytes at offset %zu of a %zu-byte buffer\n", what, width,
                 offset, size);
    std::abort();
  }
}

template <typename T>
T load(std::span<const uint8_t> bytes, size_t offset, const char* what) {
  checkRange(offset, sizeof(T), bytes.size(), what);
  T value = 0;
  for (size_t i = 0; i < sizeof(T); ++i) {
    value = static_cast<T>((value << 8) | bytes[offset + i]);
  }
  return value;
}

template <typename T>
void store(std::span<uint8_t> bytes, size_t offset, T value, const char* what) {
  checkRange(offset, sizeof(T), bytes.size(), what);
  for (size_t i = 0; i < sizeof(T); ++i) {
    bytes[offset + i] = static_cast<uint8_t>(value >> (8 * (sizeof(T) - 1 - i)));
  }
}

}  // namespace detail

// The big-endian value at `offset`. Precondition: offset + width <= bytes.size().
inline uint16_t load16(std::span<const uint8_t> bytes, size_t offset) {
  return detail::load<uint16_t>(bytes, offset, "load16");
}
inline uint32_t load32(std::span<const uint8_t> bytes, size_t offset) {
  return detail::load<uint32_t>(bytes, offset, "load32");
}
inline uint64_t load64(std::span<const uint8_t> bytes, size_t offset) {
  return detail::load<uint64_t>(bytes, offset, "load64");
}

// Writes `value` big-endian at `offset`. Precondition: offset + width <= bytes.size().
inline void store16(std::span<uint8_t> bytes, size_t offset, uint16_t value) {
  detail::store(bytes, offset, value, "store16");
}
inline void store32(std::span<uint8_t> bytes, size_t offset, uint32_t value) {
  detail::store(bytes, offset, value, "store32");
}
inline void store64(std::span<uint8_t> bytes, size_t offset, uint64_t value) {
  detail::store(bytes, offset, value, "store64");
}

// Bounds-checked sequential reader over untrusted bytes (see the top of this file).
class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> data) : data_(data) {}

  size_t remaining() const { return data_.size() - pos_; }
  size_t position() const { return pos_; }
  bool atEnd() const { return pos_ == data_.size(); }

  std::optional<uint8_t> u8() { return next<uint8_t>(); }
  std::optional<uint16_t> u16() { return next<uint16_t>(); }
  std::optional<uint32_t> u32() { return next<uint32_t>(); }
  std::optional<uint64_t> u64() { return next<uint64_t>(); }

  // The next `n` bytes as a view into the underlying buffer.
  std::optional<std::span<const uint8_t>> bytes(size_t n) {
    if (remaining() < n) {
      return std::nullopt;
    }
    auto view = data_.subspan(pos_, n);
    pos_ += n;
    return view;
  }

  // Everything not yet read; the reader is at its end afterwards.
  std::span<const uint8_t> rest() {
    auto view = data_.subspan(pos_);
    pos_ = data_.size();
    return view;
  }

 private:
  template <typename T>
  std::optional<T> next() {
    if (remaining() < sizeof(T)) {
      return std::nullopt;
    }
    T value = detail::load<T>(data_, pos_, "ByteReader");
    pos_ += sizeof(T);
    return value;
  }

  std::span<const uint8_t> data_;
  size_t pos_ = 0;
};

// Big-endian writer for building wire messages (see the top of this file).
class ByteWriter {
 public:
  void u8(uint8_t v) { out_.push_back(v); }
  void u16(uint16_t v) { append(v); }
  void u32(uint32_t v) { append(v); }
  void u64(uint64_t v) { append(v); }

  void bytes(std::span<const uint8_t> b) { out_.insert(out_.end(), b.begin(), b.end()); }

  size_t size() const { return out_.size(); }

  // Overwrites a previously written field. Offsets come from our own size() calls, so an
  // out-of-range offset is a bug in the encoder, not bad input: it aborts.
  void patchU8(size_t offset, uint8_t v) { detail::store(std::span(out_), offset, v, "patchU8"); }
  void patchU16(size_t offset, uint16_t v) {
    detail::store(std::span(out_), offset, v, "patchU16");
  }

  std::vector<uint8_t> take() && { return std::move(out_); }
  const std::vector<uint8_t>& data() const { return out_; }

 private:
  template <typename T>
  void append(T value) {
    out_.resize(out_.size() + sizeof(T));
    detail::store(std::span(out_), out_.size() - sizeof(T), value, "ByteWriter");
  }

  std::vector<uint8_t> out_;
};

}  // namespace vipd::bytes
