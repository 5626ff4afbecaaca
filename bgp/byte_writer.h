// Big-endian writer for building wire messages. Length fields that precede their contents are
// written as placeholders and patched once the contents are known.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <utility>
#include <vector>

namespace vipd::bgp {

class ByteWriter {
 public:
  void u8(uint8_t v) { out_.push_back(v); }

  void u16(uint16_t v) {
    out_.push_back(static_cast<uint8_t>(v >> 8));
    out_.push_back(static_cast<uint8_t>(v));
  }

  void u32(uint32_t v) {
    u16(static_cast<uint16_t>(v >> 16));
    u16(static_cast<uint16_t>(v));
  }

  void bytes(std::span<const uint8_t> b) { out_.insert(out_.end(), b.begin(), b.end()); }

  size_t size() const { return out_.size(); }

  // Overwrites a previously written field. Offsets come from our own size() calls, so an
  // out-of-range offset is a bug in the encoder, not bad input.
  void patchU8(size_t offset, uint8_t v) {
    checkPatch(offset, 1);
    out_[offset] = v;
  }

  void patchU16(size_t offset, uint16_t v) {
    checkPatch(offset, 2);
    out_[offset] = static_cast<uint8_t>(v >> 8);
    out_[offset + 1] = static_cast<uint8_t>(v);
  }

  std::vector<uint8_t> take() && { return std::move(out_); }
  const std::vector<uint8_t>& data() const { return out_; }

 private:
  void checkPatch(size_t offset, size_t width) const {
    if (offset + width > out_.size()) {
      std::fprintf(stderr, "ByteWriter: patch at %zu+%zu past end %zu\n", offset, width,
                   out_.size());
      std::abort();
    }
  }

  std::vector<uint8_t> out_;
};

}  // namespace vipd::bgp
