#include "bgp/message_framer.h"

#include "bgp/codec_internal.h"

namespace vipd::bgp {

void MessageFramer::append(std::span<const uint8_t> bytes) {
  if (failed_) {
    return;  // the session is being torn down; do not keep buffering a broken stream
  }
  // Drop what next() has handed out before growing, so the buffer holds at most the unread tail
  // (less than one message once the caller has drained next()) plus this chunk.
  if (consumed_ > 0) {
    buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<ptrdiff_t>(consumed_));
    consumed_ = 0;
  }
  buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
}

Result<std::optional<std::vector<uint8_t>>> MessageFramer::next() {
  if (failed_) {
    return tl::unexpected(*failed_);
  }
  if (bufferedBytes() < kHeaderSize) {
    return std::nullopt;
  }
  std::span<const uint8_t> pending(buffer_.data() + consumed_, bufferedBytes());
  auto header = internal::checkHeader(pending.first(kHeaderSize));
  if (!header) {
    failed_ = header.error();
    return tl::unexpected(*failed_);
  }
  if (pending.size() < header->length) {
    return std::nullopt;
  }
  auto message = pending.first(header->length);
  auto whole = internal::checkWholeMessage(*header, message);
  if (!whole) {
    failed_ = whole.error();
    return tl::unexpected(*failed_);
  }
  consumed_ += header->length;
  return std::vector<uint8_t>(message.begin(), message.end());
}

}  // namespace vipd::bgp
