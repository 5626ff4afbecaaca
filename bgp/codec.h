// Wire codec for BGP-4 messages (RFC 4271 section 4) and the extensions in message.h.
// Pure and bounds-checked: every read is checked against the message length, and every malformed
// input becomes a DecodeError carrying the NOTIFICATION RFC 4271 section 6 / RFC 7606 require.
#pragma once

#include <span>
#include <string>
#include <vector>

#include <tl/expected.hpp>

#include "bgp/message.h"

namespace vipd::bgp {

template <typename T>
using Result = tl::expected<T, DecodeError>;

// Per-session encoding context: what the OPEN exchange negotiated.
struct CodecOptions {
  // Both sides advertised the 4-octet AS capability: AS_PATH carries 4-byte ASNs and AS4_PATH is
  // not used. When false, AS_PATH carries 2-byte ASNs with AS_TRANS standing in for large ones and
  // the encoder adds AS4_PATH when needed (RFC 6793 section 4.2.2).
  bool fourOctetAs = true;
  // ADD-PATH (RFC 7911 section 3): the families whose NLRI carry a 4-octet Path Identifier before
  // each prefix, in the withdrawn routes and NLRI fields (IPv4 unicast) and in MP_REACH_NLRI /
  // MP_UNREACH_NLRI (the family they name). It is negotiated per direction: a session decodes what
  // it receives with the families the peer sends path identifiers in (Negotiated::addPathReceive)
  // and encodes what it sends with none, since vipd never sends them. The message values carry
  // the identifiers in their `...PathIds` vectors (message.h); encoding a value whose vectors do
  // not match these options (empty for a family without, one per prefix for a family with)
  // aborts as our own bug.
  std::vector<AfiSafi> addPath;

  bool carriesPathIds(AfiSafi family) const;
};

// How a received UPDATE is to be handled (RFC 7606 section 2). A session reset is not a
// handling: it is a DecodeError.
enum class UpdateHandling {
  Normal,
  AttributeDiscard,  // one or more malformed optional attributes were dropped; the rest stands
  TreatAsWithdraw,   // every NLRI in the UPDATE (including MP_REACH) is to be treated as withdrawn
};

struct DecodedMessage {
  Message message;
  UpdateHandling handling = UpdateHandling::Normal;  // always Normal for non-UPDATE messages
  // One sentence per RFC 7606 action taken, for the log: "MED length 3 != 4; treat-as-withdraw".
  std::vector<std::string> notes;
};

// Encodes a whole message, header included. Precondition: the message fits in kMaxMessageSize
// (the UPDATE builder keeps to that); violating it aborts, since it is our own bug.
std::vector<uint8_t> encode(const Message& message, const CodecOptions& options = {});

// Decodes one whole message (header included) that MessageFramer has already delimited and whose
// header it has checked. On error returns the NOTIFICATION to send and the reason.
[[nodiscard]] Result<DecodedMessage> decode(std::span<const uint8_t> wire,
                                            const CodecOptions& options = {});

MessageType messageTypeOf(const Message& message);
std::string_view messageTypeName(MessageType type);

}  // namespace vipd::bgp
