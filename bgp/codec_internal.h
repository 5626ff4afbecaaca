// Pieces shared by the codec's translation units (codec.cc, open_codec.cc, update_codec.cc,
// message_framer.cc). Not part of the public API: include codec.h or message_framer.h instead.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "bgp/codec.h"
#include "bytes/big_endian.h"

namespace vipd::bgp::internal {

// Builds the error value every decoder returns: the NOTIFICATION to send and the operator's
// sentence.
inline tl::unexpected<DecodeError> decodeError(ErrorCode code, uint8_t subcode,
                                               std::vector<uint8_t> data, std::string reason) {
  return tl::unexpected(
      DecodeError{NotificationMessage{static_cast<uint8_t>(code), subcode, std::move(data)},
                  std::move(reason)});
}

struct MessageHeader {
  uint16_t length = 0;
  MessageType type = MessageType::Keepalive;
};

// Checks the first kHeaderSize bytes of a message (RFC 4271 section 6.1): marker, length range,
// type, and the per-type length rules that can be judged from the header alone.
// Precondition: header.size() >= kHeaderSize.
[[nodiscard]] Result<MessageHeader> checkHeader(std::span<const uint8_t> header);

// Checks that need the whole message: a ROUTE-REFRESH of the wrong length is answered with 7/1
// carrying the complete message (RFC 7313 section 5), so it can only be judged once it is all in.
[[nodiscard]] Result<void> checkWholeMessage(const MessageHeader& header,
                                             std::span<const uint8_t> message);

// Message bodies (everything after the 19-byte header).
void encodeOpenBody(bytes::ByteWriter& out, const OpenMessage& open);
[[nodiscard]] Result<OpenMessage> decodeOpenBody(std::span<const uint8_t> body);

void encodeUpdateBody(bytes::ByteWriter& out, const UpdateMessage& update,
                      const CodecOptions& options);
[[nodiscard]] Result<DecodedMessage> decodeUpdateBody(std::span<const uint8_t> body,
                                                      const CodecOptions& options);

// Aborts with a message: for broken invariants in what we were asked to encode (our own bug).
[[noreturn]] void encodeInvariantFailed(const std::string& what);

}  // namespace vipd::bgp::internal
