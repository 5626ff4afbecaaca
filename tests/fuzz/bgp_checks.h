// The checks every BGP decoder target applies to one complete message (header included), shared
// by fuzz targets bgp_message, bgp_open and bgp_update.
#pragma once

#include <span>
#include <utility>
#include <variant>
#include <vector>

#include "bgp/codec.h"
#include "bgp/message_framer.h"
#include "bytes/big_endian.h"
#include "tests/fuzz/fuzz_support.h"

namespace vipd::fuzz {

// A decode error is the NOTIFICATION the session will send: it must fit in one message and
// come back unchanged through the codec.
inline void checkDecodeError(const bgp::DecodeError& error) {
  VIPD_FUZZ_CHECK(!error.reason.empty(), "a decode error names its reason");
  const auto& n = error.notification;
  VIPD_FUZZ_CHECK(n.code >= 1 && n.code <= 7, "a decode error carries a NOTIFICATION code 1..7");
  VIPD_FUZZ_CHECK(n.data.size() <= bgp::kMaxMessageSize - 21,
                  "the error's NOTIFICATION fits in a message");
  auto wire = bgp::encode(bgp::Message{n});
  auto back = bgp::decode(wire);
  VIPD_FUZZ_CHECK(back.has_value(), "the error's NOTIFICATION decodes");
  VIPD_FUZZ_CHECK(back->message == bgp::Message{n}, "the error's NOTIFICATION round-trips");
  VIPD_FUZZ_CHECK(!bgp::describeNotification(n.code, n.subcode).empty(),
                  "every NOTIFICATION has a name");
}

// A decoded message, less what the encoder does not promise to keep: unknown capabilities are
// kept for logs only and never encoded, and attributes passed through untouched come out in type
// order, not in the order received (RFC 4271 does not make the order significant).
inline bgp::Message comparable(bgp::Message message) {
  if (auto* open = std::get_if<bgp::OpenMessage>(&message)) {
    open->capabilities.unknown.clear();
  }
  if (auto* update = std::get_if<bgp::UpdateMessage>(&message)) {
    auto& other = update->attributes.other;
    std::stable_sort(other.begin(), other.end(),
                     [](const auto& a, const auto& b) { return a.type < b.type; });
  }
  return message;
}

// What decoding a message we decoded before must give: the same value.
inline void checkRoundTrip(const bgp::DecodedMessage& decoded, const bgp::CodecOptions& options) {
  if (decoded.handling != bgp::UpdateHandling::Normal) {
    // RFC 7606 dropped or ignored part of it: the value is not the whole message any more.
    return;
  }
  const bgp::Message expected = comparable(decoded.message);
  auto wire = bgp::encode(expected, options);
  auto again = bgp::decode(wire, options);
  if (!again) {
    std::fprintf(stderr, "re-encoded message does not decode: %s\n", again.error().reason.c_str());
  }
  VIPD_FUZZ_CHECK(again.has_value(), "a decoded message re-encodes to something that decodes");
  const bgp::Message got = comparable(again->message);
  VIPD_FUZZ_CHECK(got == expected, "decode(encode(decode(x))) == decode(x)");
  VIPD_FUZZ_CHECK(again->handling == bgp::UpdateHandling::Normal,
                  "a re-encoded message needs no RFC 7606");
}

// Every message is decoded as each kind of session would: 4-octet AS or not, and with or without
// ADD-PATH (RFC 7911 path identifiers in the NLRI of both families).
inline std::vector<bgp::CodecOptions> allDecodeOptions() {
  std::vector<bgp::CodecOptions> all;
  for (bool fourOctetAs : {true, false}) {
    for (bool addPath : {false, true}) {
      bgp::CodecOptions options{fourOctetAs};
      if (addPath) {
        options.addPath = {bgp::kIpv4Unicast, bgp::kIpv6Unicast};
      }
      all.push_back(options);
    }
  }
  return all;
}

inline void checkMessage(std::span<const uint8_t> wire) {
  static const std::vector<bgp::CodecOptions> kOptions = allDecodeOptions();
  for (const auto& options : kOptions) {
    auto decoded = bgp::decode(wire, options);
    if (!decoded) {
      checkDecodeError(decoded.error());
      continue;
    }
    VIPD_FUZZ_CHECK(bgp::messageTypeOf(decoded->message) == static_cast<bgp::MessageType>(wire[18]),
                    "the decoded message has the header's type");
    if (const auto* update = std::get_if<bgp::UpdateMessage>(&decoded->message)) {
      (void)update->endOfRibFamily();
      // Path identifiers: one per prefix in a field whose family has ADD-PATH, none otherwise.
      const bool v4 = options.carriesPathIds(bgp::kIpv4Unicast);
      VIPD_FUZZ_CHECK(update->nlriPathIds.size() == (v4 ? update->nlri.size() : 0) &&
                          update->withdrawnPathIds.size() == (v4 ? update->withdrawn.size() : 0),
                      "IPv4 path identifiers match the prefixes");
      if (const auto& mp = update->attributes.mpReach) {
        VIPD_FUZZ_CHECK(
            mp->pathIds.size() == (options.carriesPathIds(mp->family) ? mp->nlri.size() : 0),
            "MP_REACH_NLRI path identifiers match the prefixes");
      }
      if (const auto& mp = update->attributes.mpUnreach) {
        VIPD_FUZZ_CHECK(
            mp->pathIds.size() == (options.carriesPathIds(mp->family) ? mp->withdrawn.size() : 0),
            "MP_UNREACH_NLRI path identifiers match the prefixes");
      }
    }
    if (const auto* n = std::get_if<bgp::NotificationMessage>(&decoded->message)) {
      VIPD_FUZZ_CHECK(!bgp::describeNotification(n->code, n->subcode).empty(), "NOTIFICATION name");
      if (auto text = bgp::decodeShutdownCommunication(n->data)) {
        VIPD_FUZZ_CHECK(text->size() <= 255, "a shutdown communication is at most 255 octets");
        auto reencoded = bgp::encodeShutdownCommunication(*text);
        VIPD_FUZZ_CHECK(bgp::decodeShutdownCommunication(reencoded) == text,
                        "a shutdown communication round-trips");
      }
    }
    checkRoundTrip(*decoded, options);

    // What decode() accepts, the framer delivers whole and unchanged.
    bgp::MessageFramer framer;
    framer.append(wire);
    auto framed = framer.next();
    VIPD_FUZZ_CHECK(framed.has_value() && framed->has_value() &&
                        **framed == std::vector<uint8_t>(wire.begin(), wire.end()),
                    "the framer delivers a message decode() accepts");
  }
}

// A whole message of `type` around `body` (cut to the largest size a header can announce).
inline std::vector<uint8_t> withHeader(bgp::MessageType type, std::span<const uint8_t> body) {
  body = body.first(std::min(body.size(), bgp::kMaxMessageSize - bgp::kHeaderSize));
  const size_t length = bgp::kHeaderSize + body.size();
  bytes::ByteWriter wire;
  wire.bytes(std::vector<uint8_t>(16, 0xFF));  // marker
  wire.u16(static_cast<uint16_t>(length));
  wire.u8(static_cast<uint8_t>(type));
  wire.bytes(body);
  return std::move(wire).take();
}

}  // namespace vipd::fuzz
