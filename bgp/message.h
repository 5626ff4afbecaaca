// BGP-4 messages as values (RFC 4271 section 4), with the capabilities and path attributes vipd
// understands. The codec (codec.h) turns these into wire bytes and back; nothing here does I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "bgp/ip_address.h"

namespace vipd::bgp {

inline constexpr size_t kHeaderSize = 19;
inline constexpr size_t kMaxMessageSize = 4096;  // no extended messages (RFC 8654) negotiated
inline constexpr uint16_t kAsTrans = 23456;      // RFC 6793 section 9
inline constexpr uint8_t kBgpVersion = 4;

enum class MessageType : uint8_t {
  Open = 1,
  Update = 2,
  Notification = 3,
  Keepalive = 4,
  RouteRefresh = 5,  // RFC 2918
};

// ---- Capabilities (RFC 5492) ----

enum class CapabilityCode : uint8_t {
  Multiprotocol = 1,     // RFC 4760
  RouteRefresh = 2,      // RFC 2918
  GracefulRestart = 64,  // RFC 4724
  FourOctetAs = 65,      // RFC 6793
  AddPath = 69,          // RFC 7911
};

struct GracefulRestartCapability {
  struct Family {
    AfiSafi family;
    bool forwardingStatePreserved = false;  // F bit
    auto operator<=>(const Family&) const = default;
  };
  bool restartState = false;  // R bit
  bool notification = false;  // N bit (RFC 8538); parsed, not acted on
  uint16_t restartTimeSeconds = 0;  // 12 bits on the wire
  std::vector<Family> families;
  auto operator<=>(const GracefulRestartCapability&) const = default;
};

// RFC 7911 section 4: the Send/Receive field of one ADD-PATH tuple, from the sender's view.
enum class AddPathMode : uint8_t {
  Receive = 1,  // the sender is willing to receive path identifiers for the family
  Send = 2,     // the sender would like to send them
  Both = 3,
};

struct AddPathFamily {
  AfiSafi family;
  AddPathMode mode = AddPathMode::Receive;
  auto operator<=>(const AddPathFamily&) const = default;
};

// A capability vipd does not implement: kept only so logs can name it. It is ignored (RFC 5492).
struct UnknownCapability {
  uint8_t code = 0;
  std::vector<uint8_t> value;
  auto operator<=>(const UnknownCapability&) const = default;
};

struct Capabilities {
  std::vector<AfiSafi> multiprotocol;  // in the order received / to send
  std::optional<uint32_t> fourOctetAs;
  bool routeRefresh = false;
  std::optional<GracefulRestartCapability> gracefulRestart;
  // ADD-PATH (RFC 7911 section 4): the tuples of every ADD-PATH capability, in the order received
  // / to send, encoded as one capability; empty = none. Families vipd does not speak are kept as
  // sent, as in `multiprotocol`; the session decides what applies. A capability with a
  // Send/Receive value outside 1..3 is "not understood and ignored": it lands in `unknown`, whole.
  // One whose length is not a multiple of 4 fails the OPEN with 2/0, like any malformed one.
  std::vector<AddPathFamily> addPath;
  std::vector<UnknownCapability> unknown;  // decode only; never encoded
  auto operator<=>(const Capabilities&) const = default;
};

struct OpenMessage {
  uint8_t version = kBgpVersion;
  uint16_t myAs = 0;  // AS_TRANS when the real ASN needs 4 octets
  uint16_t holdTimeSeconds = 0;
  uint32_t bgpIdentifier = 0;  // host order
  Capabilities capabilities;
  auto operator<=>(const OpenMessage&) const = default;
};

// ---- Path attributes (RFC 4271 section 5, RFC 1997, RFC 8092, RFC 4760, RFC 6793) ----

enum class AttributeType : uint8_t {
  Origin = 1,
  AsPath = 2,
  NextHop = 3,
  MultiExitDisc = 4,
  LocalPref = 5,
  AtomicAggregate = 6,
  Aggregator = 7,
  Communities = 8,
  OriginatorId = 9,
  ClusterList = 10,
  MpReachNlri = 14,
  MpUnreachNlri = 15,
  As4Path = 17,
  As4Aggregator = 18,
  LargeCommunities = 32,
};

namespace attr_flags {
inline constexpr uint8_t kOptional = 0x80;
inline constexpr uint8_t kTransitive = 0x40;
inline constexpr uint8_t kPartial = 0x20;
inline constexpr uint8_t kExtendedLength = 0x10;
}  // namespace attr_flags

enum class Origin : uint8_t { Igp = 0, Egp = 1, Incomplete = 2 };

struct AsPathSegment {
  enum class Type : uint8_t { AsSet = 1, AsSequence = 2, ConfedSequence = 3, ConfedSet = 4 };
  Type type = Type::AsSequence;
  std::vector<uint32_t> asns;
  auto operator<=>(const AsPathSegment&) const = default;
};
using AsPath = std::vector<AsPathSegment>;

struct LargeCommunity {
  uint32_t globalAdministrator = 0;
  uint32_t localData1 = 0;
  uint32_t localData2 = 0;
  auto operator<=>(const LargeCommunity&) const = default;
};

inline constexpr uint32_t kGracefulShutdownCommunity = 0xFFFF0000;  // 65535:0, RFC 8326

// RFC 7911 path identifiers travel beside the prefixes they belong to, in a parallel vector
// (`pathIds` here, `nlriPathIds`/`withdrawnPathIds` in UpdateMessage): empty when the family
// carries no path identifiers on the session (CodecOptions::addPath), otherwise one per prefix in
// the same order. Prefix stays the plain key it is everywhere else (what we announce, config, the
// builder), and every value without ADD-PATH is exactly what it was before RFC 7911.

struct MpReachNlri {
  AfiSafi family;
  // 4 bytes (IPv4), 16 (IPv6 global) or 32 (IPv6 global followed by link-local, RFC 2545).
  std::vector<uint8_t> nextHop;
  std::vector<Prefix> nlri;
  std::vector<uint32_t> pathIds;  // parallel to `nlri`, see above
  auto operator<=>(const MpReachNlri&) const = default;
};

struct MpUnreachNlri {
  AfiSafi family;
  std::vector<Prefix> withdrawn;
  std::vector<uint32_t> pathIds;  // parallel to `withdrawn`, see above
  auto operator<=>(const MpUnreachNlri&) const = default;
};

// An attribute the codec passes through untouched (unknown optional ones, AGGREGATOR, ...).
struct RawAttribute {
  uint8_t flags = 0;
  uint8_t type = 0;
  std::vector<uint8_t> value;
  auto operator<=>(const RawAttribute&) const = default;
};

struct PathAttributes {
  std::optional<Origin> origin;
  std::optional<AsPath> asPath;  // ASNs are always held as 32-bit values
  std::optional<IpAddress> nextHop;  // IPv4 NEXT_HOP attribute
  std::optional<uint32_t> med;
  std::optional<uint32_t> localPref;
  bool atomicAggregate = false;
  std::optional<std::vector<uint32_t>> communities;
  std::optional<std::vector<LargeCommunity>> largeCommunities;
  // RFC 4456 route reflection: the BGP Identifier (host order) of the path's originator inside
  // the AS, and the reflectors' cluster IDs, nearest first. Never empty when decoded.
  std::optional<uint32_t> originatorId;
  std::optional<std::vector<uint32_t>> clusterList;
  std::optional<AsPath> as4Path;
  std::optional<MpReachNlri> mpReach;
  std::optional<MpUnreachNlri> mpUnreach;
  std::vector<RawAttribute> other;
  auto operator<=>(const PathAttributes&) const = default;
};

struct UpdateMessage {
  std::vector<Prefix> withdrawn;  // IPv4 only
  PathAttributes attributes;
  std::vector<Prefix> nlri;  // IPv4 only
  // RFC 7911 path identifiers of the two IPv4 fields, parallel to `withdrawn` and `nlri` (see
  // MpReachNlri): empty unless IPv4 unicast carries path identifiers on the session.
  std::vector<uint32_t> withdrawnPathIds;
  std::vector<uint32_t> nlriPathIds;

  // End-of-RIB marker (RFC 4724 section 2): empty UPDATE for IPv4 unicast, or an UPDATE whose
  // only attribute is an empty MP_UNREACH_NLRI for another family. The same with ADD-PATH: with
  // no prefixes there are no path identifiers either (RFC 7911 section 3).
  std::optional<AfiSafi> endOfRibFamily() const;
  auto operator<=>(const UpdateMessage&) const = default;
};

// ---- NOTIFICATION (RFC 4271 section 4.5) ----

enum class ErrorCode : uint8_t {
  MessageHeader = 1,
  OpenMessage = 2,
  UpdateMessage = 3,
  HoldTimerExpired = 4,
  FsmError = 5,
  Cease = 6,
  RouteRefreshMessage = 7,  // RFC 7313
};

namespace subcode {
// Message header errors (code 1).
inline constexpr uint8_t kConnectionNotSynchronized = 1;
inline constexpr uint8_t kBadMessageLength = 2;
inline constexpr uint8_t kBadMessageType = 3;
// OPEN errors (code 2).
inline constexpr uint8_t kUnsupportedVersionNumber = 1;
inline constexpr uint8_t kBadPeerAs = 2;
inline constexpr uint8_t kBadBgpIdentifier = 3;
inline constexpr uint8_t kUnsupportedOptionalParameter = 4;
inline constexpr uint8_t kUnacceptableHoldTime = 6;
inline constexpr uint8_t kUnsupportedCapability = 7;
// UPDATE errors (code 3).
inline constexpr uint8_t kMalformedAttributeList = 1;
inline constexpr uint8_t kUnrecognizedWellKnownAttribute = 2;
inline constexpr uint8_t kMissingWellKnownAttribute = 3;
inline constexpr uint8_t kAttributeFlagsError = 4;
inline constexpr uint8_t kAttributeLengthError = 5;
inline constexpr uint8_t kInvalidOriginAttribute = 6;
inline constexpr uint8_t kInvalidNextHopAttribute = 8;
inline constexpr uint8_t kOptionalAttributeError = 9;
inline constexpr uint8_t kInvalidNetworkField = 10;
inline constexpr uint8_t kMalformedAsPath = 11;
// FSM errors (code 5, RFC 6608).
inline constexpr uint8_t kUnexpectedInOpenSent = 1;
inline constexpr uint8_t kUnexpectedInOpenConfirm = 2;
inline constexpr uint8_t kUnexpectedInEstablished = 3;
// Cease (code 6, RFC 4486).
inline constexpr uint8_t kMaxPrefixes = 1;
inline constexpr uint8_t kAdministrativeShutdown = 2;
inline constexpr uint8_t kPeerDeconfigured = 3;
inline constexpr uint8_t kAdministrativeReset = 4;
inline constexpr uint8_t kConnectionRejected = 5;
inline constexpr uint8_t kOtherConfigurationChange = 6;
inline constexpr uint8_t kConnectionCollisionResolution = 7;
inline constexpr uint8_t kOutOfResources = 8;
inline constexpr uint8_t kHardReset = 9;  // RFC 8538
inline constexpr uint8_t kBfdDown = 10;   // RFC 9384
// ROUTE-REFRESH errors (code 7, RFC 7313).
inline constexpr uint8_t kInvalidMessageLength = 1;
}  // namespace subcode

struct NotificationMessage {
  uint8_t code = 0;
  uint8_t subcode = 0;
  std::vector<uint8_t> data;
  auto operator<=>(const NotificationMessage&) const = default;
};

struct KeepaliveMessage {
  auto operator<=>(const KeepaliveMessage&) const = default;
};

struct RouteRefreshMessage {
  AfiSafi family;
  uint8_t reserved = 0;  // RFC 7313 calls it the message subtype; 0 = plain refresh
  auto operator<=>(const RouteRefreshMessage&) const = default;
};

using Message = std::variant<OpenMessage, UpdateMessage, NotificationMessage, KeepaliveMessage,
                             RouteRefreshMessage>;

// A receive-side error: the NOTIFICATION to send, and one sentence for the operator that names
// what was wrong in terms a person can check against the peer's config or a capture.
struct DecodeError {
  NotificationMessage notification;
  std::string reason;
};

// RFC 8203/9003 shutdown communication: UTF-8, at most 255 octets, carried in Cease 6/2 and 6/4.
// Returns the NOTIFICATION data field (length octet + text, text truncated on a UTF-8 boundary).
std::vector<uint8_t> encodeShutdownCommunication(std::string_view text);
// Extracts the text from a Cease 6/2 or 6/4 data field; nullopt if the field is malformed.
std::optional<std::string> decodeShutdownCommunication(const std::vector<uint8_t>& data);

// "6/2 (Cease, Administrative Shutdown)" style name for logs.
std::string describeNotification(uint8_t code, uint8_t subcode);

}  // namespace vipd::bgp
