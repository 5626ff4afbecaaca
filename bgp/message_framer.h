// Splits a TCP byte stream into BGP messages and checks each header (RFC 4271 section 6.1):
// marker, length (including the per-type minimum/exact lengths) and type. Holds at most one
// partial message, so memory is bounded by kMaxMessageSize whatever the peer sends.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "bgp/codec.h"

namespace vipd::bgp {

class MessageFramer {
 public:
  // Appends bytes received from the peer. Bytes may end mid-header or mid-message.
  void append(std::span<const uint8_t> bytes);

  // The next complete message (header included); nullopt when more bytes are needed; a
  // DecodeError (code 1, or 7/1 for a ROUTE-REFRESH of the wrong length) when the header is bad.
  // After an error the framer stays failed: the session must be torn down.
  [[nodiscard]] Result<std::optional<std::vector<uint8_t>>> next();

  size_t bufferedBytes() const { return buffer_.size() - consumed_; }

 private:
  std::vector<uint8_t> buffer_;
  size_t consumed_ = 0;
  std::optional<DecodeError> failed_;
};

}  // namespace vipd::bgp
