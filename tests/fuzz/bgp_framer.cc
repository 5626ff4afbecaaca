// Fuzz target: bgp::MessageFramer on a TCP byte stream cut into chunks whose sizes come from the
// input (fuzz_support.h Chunker). Checks: the messages and the error do not depend on how the
// stream was cut (compared with the stream appended in one piece); every message delivered is a
// consecutive slice of the stream with a valid header; the framer buffers less than one maximum
// message once drained; a failed framer stays failed.
#include <optional>
#include <vector>

#include "bgp/message_framer.h"
#include "bytes/big_endian.h"
#include "tests/fuzz/bgp_checks.h"

namespace {

using vipd::bgp::MessageFramer;

struct Outcome {
  std::vector<std::vector<uint8_t>> messages;
  std::optional<vipd::bgp::DecodeError> error;
};

// Drains `framer`; returns false once it has failed.
bool drain(MessageFramer& framer, Outcome& outcome) {
  for (;;) {
    auto next = framer.next();
    if (!next) {
      vipd::fuzz::checkDecodeError(next.error());
      outcome.error = next.error();
      auto again = framer.next();
      VIPD_FUZZ_CHECK(!again && again.error().notification == next.error().notification,
                      "a failed framer stays failed with the same error");
      return false;
    }
    if (!next->has_value()) {
      VIPD_FUZZ_CHECK(framer.bufferedBytes() < vipd::bgp::kMaxMessageSize,
                      "a drained framer holds less than one message");
      return true;
    }
    const auto& message = **next;
    VIPD_FUZZ_CHECK(
        message.size() >= vipd::bgp::kHeaderSize && message.size() <= vipd::bgp::kMaxMessageSize,
        "a framed message is 19..4096 bytes");
    VIPD_FUZZ_CHECK(vipd::bytes::load16(message, 16) == message.size(),
                    "a framed message is as long as its header says");
    outcome.messages.push_back(message);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  vipd::fuzz::Chunker chunker(data, size);

  Outcome chunked;
  MessageFramer framer;
  bool failed = false;
  chunker.forEachChunk([&](std::span<const uint8_t> chunk) {
    if (failed) {
      framer.append(chunk);  // ignored by a failed framer; must not crash or revive it
      VIPD_FUZZ_CHECK(!framer.next().has_value(), "a failed framer stays failed after more bytes");
      return;
    }
    framer.append(chunk);
    failed = !drain(framer, chunked);
  });

  Outcome whole;
  MessageFramer oneShot;
  oneShot.append(chunker.stream());
  drain(oneShot, whole);

  VIPD_FUZZ_CHECK(chunked.messages == whole.messages, "messages do not depend on the chunking");
  VIPD_FUZZ_CHECK(chunked.error.has_value() == whole.error.has_value(),
                  "a framing error does not depend on the chunking");
  if (chunked.error) {
    VIPD_FUZZ_CHECK(chunked.error->notification == whole.error->notification,
                    "the framing error's NOTIFICATION does not depend on the chunking");
  }
  // The messages are the stream's first bytes, in order.
  size_t offset = 0;
  for (const auto& message : whole.messages) {
    auto slice = chunker.stream().subspan(offset, message.size());
    VIPD_FUZZ_CHECK(std::equal(slice.begin(), slice.end(), message.begin()),
                    "messages are stream slices");
    offset += message.size();
  }
  return 0;
}
