#include "bgp/message.h"

#include <fmt/format.h>

#include <algorithm>
#include <span>
#include <string_view>

namespace vipd::bgp {

namespace {

constexpr size_t kMaxShutdownCommunication = 255;  // RFC 9003 section 2

bool isUtf8Continuation(uint8_t b) { return (b & 0xC0) == 0x80; }

std::string_view errorCodeName(uint8_t code) {
  switch (static_cast<ErrorCode>(code)) {
    case ErrorCode::MessageHeader:
      return "Message Header Error";
    case ErrorCode::OpenMessage:
      return "OPEN Message Error";
    case ErrorCode::UpdateMessage:
      return "UPDATE Message Error";
    case ErrorCode::HoldTimerExpired:
      return "Hold Timer Expired";
    case ErrorCode::FsmError:
      return "Finite State Machine Error";
    case ErrorCode::Cease:
      return "Cease";
    case ErrorCode::RouteRefreshMessage:
      return "ROUTE-REFRESH Message Error";
  }
  return {};
}

// Subcode names from the IANA "BGP Error Subcodes" registries; empty when unassigned.
std::string_view subcodeName(uint8_t code, uint8_t sub) {
  static constexpr std::string_view kHeader[] = {"", "Connection Not Synchronized",
                                                 "Bad Message Length", "Bad Message Type"};
  static constexpr std::string_view kOpen[] = {"",
                                               "Unsupported Version Number",
                                               "Bad Peer AS",
                                               "Bad BGP Identifier",
                                               "Unsupported Optional Parameter",
                                               "Authentication Failure (deprecated)",
                                               "Unacceptable Hold Time",
                                               "Unsupported Capability",
                                               "",
                                               "",
                                               "",
                                               "Role Mismatch"};
  static constexpr std::string_view kUpdate[] = {"",
                                                 "Malformed Attribute List",
                                                 "Unrecognized Well-known Attribute",
                                                 "Missing Well-known Attribute",
                                                 "Attribute Flags Error",
                                                 "Attribute Length Error",
                                                 "Invalid ORIGIN Attribute",
                                                 "AS Routing Loop (deprecated)",
                                                 "Invalid NEXT_HOP Attribute",
                                                 "Optional Attribute Error",
                                                 "Invalid Network Field",
                                                 "Malformed AS_PATH"};
  static constexpr std::string_view kFsm[] = {"", "Unexpected Message in OpenSent State",
                                              "Unexpected Message in OpenConfirm State",
                                              "Unexpected Message in Established State"};
  static constexpr std::string_view kCease[] = {"",
                                                "Maximum Number of Prefixes Reached",
                                                "Administrative Shutdown",
                                                "Peer De-configured",
                                                "Administrative Reset",
                                                "Connection Rejected",
                                                "Other Configuration Change",
                                                "Connection Collision Resolution",
                                                "Out of Resources",
                                                "Hard Reset",
                                                "BFD Down"};
  static constexpr std::string_view kRefresh[] = {"", "Invalid Message Length"};

  auto pick = [sub](std::span<const std::string_view> names) {
    return sub < names.size() ? names[sub] : std::string_view{};
  };
  switch (static_cast<ErrorCode>(code)) {
    case ErrorCode::MessageHeader:
      return pick(kHeader);
    case ErrorCode::OpenMessage:
      return pick(kOpen);
    case ErrorCode::UpdateMessage:
      return pick(kUpdate);
    case ErrorCode::HoldTimerExpired:
      return {};
    case ErrorCode::FsmError:
      return pick(kFsm);
    case ErrorCode::Cease:
      return pick(kCease);
    case ErrorCode::RouteRefreshMessage:
      return pick(kRefresh);
  }
  return {};
}

}  // namespace

std::optional<AfiSafi> UpdateMessage::endOfRibFamily() const {
  if (!withdrawn.empty() || !nlri.empty()) {
    return std::nullopt;
  }
  if (attributes == PathAttributes{}) {
    return kIpv4Unicast;
  }
  if (!attributes.mpUnreach || !attributes.mpUnreach->withdrawn.empty()) {
    return std::nullopt;
  }
  PathAttributes withoutUnreach = attributes;
  withoutUnreach.mpUnreach.reset();
  if (withoutUnreach != PathAttributes{}) {
    return std::nullopt;
  }
  return attributes.mpUnreach->family;
}

std::vector<uint8_t> encodeShutdownCommunication(std::string_view text) {
  size_t length = text.size();
  if (length > kMaxShutdownCommunication) {
    // Back up to the start of the character that straddles the limit so the peer never sees a
    // truncated multi-byte sequence.
    length = kMaxShutdownCommunication;
    while (length > 0 && isUtf8Continuation(static_cast<uint8_t>(text[length]))) {
      --length;
    }
  }
  std::vector<uint8_t> data;
  data.reserve(length + 1);
  data.push_back(static_cast<uint8_t>(length));
  data.insert(data.end(), text.begin(), text.begin() + static_cast<ptrdiff_t>(length));
  return data;
}

std::optional<std::string> decodeShutdownCommunication(const std::vector<uint8_t>& data) {
  if (data.empty() || data[0] > data.size() - 1) {
    return std::nullopt;
  }
  return std::string(data.begin() + 1, data.begin() + 1 + data[0]);
}

std::string describeNotification(uint8_t code, uint8_t sub) {
  const std::string_view codeName = errorCodeName(code);
  if (codeName.empty()) {
    return fmt::format("{}/{} (unknown error code)", code, sub);
  }
  if (sub == 0) {
    return fmt::format("{}/{} ({})", code, sub, codeName);
  }
  const std::string_view subName = subcodeName(code, sub);
  if (subName.empty()) {
    return fmt::format("{}/{} ({}, unknown subcode)", code, sub, codeName);
  }
  return fmt::format("{}/{} ({}, {})", code, sub, codeName, subName);
}

}  // namespace vipd::bgp
