#include "bgp/codec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "bgp/codec_internal.h"
#include "bytes/big_endian.h"

namespace vipd::bgp {

namespace internal {

namespace {

constexpr size_t kMarkerSize = 16;
constexpr size_t kLengthOffset = 16;
constexpr size_t kTypeOffset = 18;
constexpr size_t kMinOpenLength = 29;          // RFC 4271 section 4.2
constexpr size_t kMinUpdateLength = 23;        // RFC 4271 section 4.3
constexpr size_t kMinNotificationLength = 21;  // RFC 4271 section 4.5
constexpr size_t kRouteRefreshLength = 23;     // RFC 2918 section 3

// The minimum (or, for KEEPALIVE, exact) length RFC 4271 section 6.1 requires of each type.
// ROUTE-REFRESH is not here: RFC 7313 gives it its own error, checked in checkWholeMessage.
bool lengthFitsType(MessageType type, size_t length) {
  switch (type) {
    case MessageType::Open:
      return length >= kMinOpenLength;
    case MessageType::Update:
      return length >= kMinUpdateLength;
    case MessageType::Notification:
      return length >= kMinNotificationLength;
    case MessageType::Keepalive:
      return length == kHeaderSize;
    case MessageType::RouteRefresh:
      return true;
  }
  return false;
}

}  // namespace

Result<MessageHeader> checkHeader(std::span<const uint8_t> header) {
  if (!std::all_of(header.begin(), header.begin() + kMarkerSize,
                   [](uint8_t b) { return b == 0xFF; })) {
    return decodeError(ErrorCode::MessageHeader, subcode::kConnectionNotSynchronized, {},
                       "message header marker is not all ones; the stream is out of sync");
  }
  const std::vector<uint8_t> lengthField{header[kLengthOffset], header[kLengthOffset + 1]};
  const uint16_t length = bytes::load16(header, kLengthOffset);
  if (length < kHeaderSize || length > kMaxMessageSize) {
    return decodeError(
        ErrorCode::MessageHeader, subcode::kBadMessageLength, lengthField,
        fmt::format("message length {} is outside {}..{}", length, kHeaderSize, kMaxMessageSize));
  }
  const uint8_t typeByte = header[kTypeOffset];
  if (typeByte < static_cast<uint8_t>(MessageType::Open) ||
      typeByte > static_cast<uint8_t>(MessageType::RouteRefresh)) {
    return decodeError(ErrorCode::MessageHeader, subcode::kBadMessageType, {typeByte},
                       fmt::format("message type {} is not one vipd knows (1..5)", typeByte));
  }
  const auto type = static_cast<MessageType>(typeByte);
  if (!lengthFitsType(type, length)) {
    return decodeError(ErrorCode::MessageHeader, subcode::kBadMessageLength, lengthField,
                       fmt::format("{} message length {} is too short or too long for its type",
                                   messageTypeName(type), length));
  }
  return MessageHeader{length, type};
}

Result<void> checkWholeMessage(const MessageHeader& header, std::span<const uint8_t> message) {
  if (header.type == MessageType::RouteRefresh && header.length != kRouteRefreshLength) {
    // The data is the complete message, but a NOTIFICATION has room for only 4096 - 21 bytes of
    // it: a longer ROUTE-REFRESH is cut to fit rather than making the encoder abort.
    const size_t kept = std::min(message.size(), kMaxMessageSize - kMinNotificationLength);
    return decodeError(ErrorCode::RouteRefreshMessage, subcode::kInvalidMessageLength,
                       std::vector<uint8_t>(message.begin(), message.begin() + kept),
                       fmt::format("ROUTE-REFRESH message length {} is not {}", header.length,
                                   kRouteRefreshLength));
  }
  return {};
}

void encodeInvariantFailed(const std::string& what) {
  std::fprintf(stderr, "vipd bgp codec: cannot encode: %s\n", what.c_str());
  std::abort();
}

}  // namespace internal

bool CodecOptions::carriesPathIds(AfiSafi family) const {
  return std::find(addPath.begin(), addPath.end(), family) != addPath.end();
}

namespace {

using internal::decodeError;

void encodeNotificationBody(bytes::ByteWriter& out, const NotificationMessage& n) {
  out.u8(n.code);
  out.u8(n.subcode);
  out.bytes(n.data);
}

void encodeRouteRefreshBody(bytes::ByteWriter& out, const RouteRefreshMessage& r) {
  out.u16(static_cast<uint16_t>(r.family.afi));
  out.u8(r.reserved);
  out.u8(static_cast<uint8_t>(r.family.safi));
}

void encodeBody(bytes::ByteWriter& out, const Message& message, const CodecOptions& options) {
  std::visit(
      [&](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, OpenMessage>) {
          internal::encodeOpenBody(out, m);
        } else if constexpr (std::is_same_v<T, UpdateMessage>) {
          internal::encodeUpdateBody(out, m, options);
        } else if constexpr (std::is_same_v<T, NotificationMessage>) {
          encodeNotificationBody(out, m);
        } else if constexpr (std::is_same_v<T, RouteRefreshMessage>) {
          encodeRouteRefreshBody(out, m);
        }
        // KEEPALIVE has no body.
      },
      message);
}

// The framer guarantees at least 2 body bytes (length >= 21).
Result<DecodedMessage> decodeNotificationBody(std::span<const uint8_t> body) {
  bytes::ByteReader reader(body);
  NotificationMessage n;
  n.code = reader.u8().value_or(0);
  n.subcode = reader.u8().value_or(0);
  auto data = reader.rest();
  n.data.assign(data.begin(), data.end());
  return DecodedMessage{n};
}

// Unknown AFI/SAFI values are kept: RFC 2918 section 4 says to ignore a refresh for a family we
// did not advertise, which is the session's decision, not a decode error.
Result<DecodedMessage> decodeRouteRefreshBody(std::span<const uint8_t> body) {
  bytes::ByteReader reader(body);
  RouteRefreshMessage r;
  r.family.afi = static_cast<Afi>(reader.u16().value_or(0));
  r.reserved = reader.u8().value_or(0);
  r.family.safi = static_cast<Safi>(reader.u8().value_or(0));
  return DecodedMessage{r};
}

Result<DecodedMessage> decodeBody(MessageType type, std::span<const uint8_t> body,
                                  const CodecOptions& options) {
  switch (type) {
    case MessageType::Open: {
      auto open = internal::decodeOpenBody(body);
      if (!open) {
        return tl::unexpected(open.error());
      }
      return DecodedMessage{*std::move(open)};
    }
    case MessageType::Update:
      return internal::decodeUpdateBody(body, options);
    case MessageType::Notification:
      return decodeNotificationBody(body);
    case MessageType::Keepalive:
      return DecodedMessage{KeepaliveMessage{}};
    case MessageType::RouteRefresh:
      return decodeRouteRefreshBody(body);
  }
  return decodeError(ErrorCode::MessageHeader, subcode::kBadMessageType,
                     {static_cast<uint8_t>(type)}, "message type is not one vipd knows");
}

}  // namespace

std::vector<uint8_t> encode(const Message& message, const CodecOptions& options) {
  bytes::ByteWriter out;
  for (size_t i = 0; i < 16; ++i) {
    out.u8(0xFF);
  }
  const size_t lengthOffset = out.size();
  out.u16(0);  // patched below
  out.u8(static_cast<uint8_t>(messageTypeOf(message)));
  encodeBody(out, message, options);
  if (out.size() > kMaxMessageSize) {
    internal::encodeInvariantFailed(fmt::format("{} message is {} bytes, over the {} limit",
                                                messageTypeName(messageTypeOf(message)), out.size(),
                                                kMaxMessageSize));
  }
  out.patchU16(lengthOffset, static_cast<uint16_t>(out.size()));
  return std::move(out).take();
}

Result<DecodedMessage> decode(std::span<const uint8_t> wire, const CodecOptions& options) {
  // The framer has checked the header already; checking again costs little and keeps decode()
  // safe to call on its own (fuzzers, tests).
  if (wire.size() < kHeaderSize) {
    return decodeError(ErrorCode::MessageHeader, subcode::kBadMessageLength, {},
                       fmt::format("message of {} bytes is shorter than the {}-byte header",
                                   wire.size(), kHeaderSize));
  }
  auto header = internal::checkHeader(wire.first(kHeaderSize));
  if (!header) {
    return tl::unexpected(header.error());
  }
  if (header->length != wire.size()) {
    return decodeError(ErrorCode::MessageHeader, subcode::kBadMessageLength, {wire[16], wire[17]},
                       fmt::format("message length field {} does not match the {} bytes given",
                                   header->length, wire.size()));
  }
  auto whole = internal::checkWholeMessage(*header, wire);
  if (!whole) {
    return tl::unexpected(whole.error());
  }
  return decodeBody(header->type, wire.subspan(kHeaderSize), options);
}

MessageType messageTypeOf(const Message& message) {
  return std::visit(
      [](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, OpenMessage>) {
          return MessageType::Open;
        } else if constexpr (std::is_same_v<T, UpdateMessage>) {
          return MessageType::Update;
        } else if constexpr (std::is_same_v<T, NotificationMessage>) {
          return MessageType::Notification;
        } else if constexpr (std::is_same_v<T, KeepaliveMessage>) {
          return MessageType::Keepalive;
        } else {
          return MessageType::RouteRefresh;
        }
      },
      message);
}

std::string_view messageTypeName(MessageType type) {
  switch (type) {
    case MessageType::Open:
      return "OPEN";
    case MessageType::Update:
      return "UPDATE";
    case MessageType::Notification:
      return "NOTIFICATION";
    case MessageType::Keepalive:
      return "KEEPALIVE";
    case MessageType::RouteRefresh:
      return "ROUTE-REFRESH";
  }
  return "UNKNOWN";
}

}  // namespace vipd::bgp
