// Helpers shared by the libFuzzer targets in this folder (see docs/testing.md, "Fuzzing").
//
// A target reports a broken invariant with VIPD_FUZZ_CHECK(condition, "what must hold"): it prints
// what failed and where, and aborts, which
// libFuzzer records as a crash and the corpus replay test (replay_main.cc) as a failure. Errors
// that untrusted input is expected to produce are values and are never checked against.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <vector>

namespace vipd::fuzz {

// A macro for __FILE__ and __LINE__: clang 14 with libstdc++ 12 has no std::source_location.
#define VIPD_FUZZ_CHECK(condition, what) \
  ::vipd::fuzz::checkAt(static_cast<bool>(condition), what, __FILE__, __LINE__)

inline void checkAt(bool ok, const char* what, const char* file, int line) {
  if (!ok) {
    std::fprintf(stderr, "%s:%d: fuzz invariant broken: %s\n", file, line, what);
    std::abort();
  }
}

// Splits a fuzz input into a chunk-size pattern and a byte stream, so one input says both what
// arrives and how the transport cuts it up: byte 0 gives the pattern's length (0..15), the next
// that many bytes are chunk sizes (0 means 1), used in a cycle; the rest is the stream. With an
// empty pattern the stream arrives in one piece.
class Chunker {
 public:
  Chunker(const uint8_t* data, size_t size) {
    std::span<const uint8_t> all(data, size);
    if (all.empty()) {
      return;
    }
    const size_t patternLength = std::min<size_t>(all[0] & 0x0f, all.size() - 1);
    pattern_ = all.subspan(1, patternLength);
    stream_ = all.subspan(1 + patternLength);
  }

  std::span<const uint8_t> stream() const { return stream_; }

  // Calls `feed(chunk)` for consecutive chunks covering the whole stream.
  template <typename Feed>
  void forEachChunk(Feed&& feed) const {
    size_t offset = 0;
    size_t index = 0;
    while (offset < stream_.size()) {
      size_t size = stream_.size() - offset;
      if (!pattern_.empty()) {
        size = std::min<size_t>(std::max<uint8_t>(pattern_[index++ % pattern_.size()], 1), size);
      }
      feed(stream_.subspan(offset, size));
      offset += size;
    }
  }

 private:
  std::span<const uint8_t> pattern_;
  std::span<const uint8_t> stream_;
};

}  // namespace vipd::fuzz
