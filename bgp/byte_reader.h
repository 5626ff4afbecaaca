// Bounds-checked big-endian reader over untrusted peer bytes. Every read either succeeds and
// advances, or fails and leaves the position unchanged, so a parse loop built on it always makes
// progress or stops. No reinterpret_cast: values are assembled byte by byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace vipd::bgp {

class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> data) : data_(data) {}

  size_t remaining() const { return data_.size() - pos_; }
  size_t position() const { return pos_; }
  bool atEnd() const { return pos_ == data_.size(); }

  std::optional<uint8_t> u8() {
    if (remaining() < 1) {
      return std::nullopt;
    }
    return data_[pos_++];
  }

  std::optional<uint16_t> u16() {
    if (remaining() < 2) {
      return std::nullopt;
    }
    uint16_t v = static_cast<uint16_t>((data_[pos_] << 8) | data_[pos_ + 1]);
    pos_ += 2;
    return v;
  }

  std::optional<uint32_t> u32() {
    if (remaining() < 4) {
      return std::nullopt;
    }
    uint32_t v = (uint32_t{data_[pos_]} << 24) | (uint32_t{data_[pos_ + 1]} << 16) |
                 (uint32_t{data_[pos_ + 2]} << 8) | uint32_t{data_[pos_ + 3]};
    pos_ += 4;
    return v;
  }

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
  std::span<const uint8_t> data_;
  size_t pos_ = 0;
};

}  // namespace vipd::bgp
