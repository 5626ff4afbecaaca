// OPEN message body (RFC 4271 section 4.2) with capabilities (RFC 5492) and the extended
// optional parameters length (RFC 9072, decode only).
//
// A capability whose length does not fit its format (multiprotocol not 4, graceful restart not
// 2 + 4n, ADD-PATH not 4n, ...) is an OPEN error 2/0 with no data: no subcode names a malformed
// capability, and guessing at what the peer meant could mis-negotiate the session.
#include <fmt/format.h>

#include "bgp/codec_internal.h"
#include "bytes/big_endian.h"

namespace vipd::bgp::internal {

namespace {

constexpr uint8_t kParamCapabilities = 2;         // RFC 5492 section 4
constexpr uint8_t kParamExtendedLength = 255;     // RFC 9072 section 2
constexpr uint8_t kCiscoRouteRefresh = 128;       // pre-RFC 2918 code, still sent by some peers
constexpr uint8_t kGrRestartState = 0x80;         // R bit, top of the 4-bit flags nibble
constexpr uint8_t kGrNotification = 0x40;         // N bit (RFC 8538)
constexpr uint8_t kGrForwardingPreserved = 0x80;  // F bit in per-family flags
constexpr uint16_t kGrTimeMask = 0x0FFF;
constexpr size_t kAddPathTupleSize = 4;  // AFI, SAFI, Send/Receive (RFC 7911)

tl::unexpected<DecodeError> openError(uint8_t sub, std::vector<uint8_t> data, std::string reason) {
  return decodeError(ErrorCode::OpenMessage, sub, std::move(data), "OPEN: " + std::move(reason));
}

tl::unexpected<DecodeError> malformed(std::string reason) {
  return openError(0, {}, std::move(reason));
}

// ---- encode ----

void writeCapability(bytes::ByteWriter& out, CapabilityCode code, std::span<const uint8_t> value) {
  out.u8(static_cast<uint8_t>(code));
  out.u8(static_cast<uint8_t>(value.size()));
  out.bytes(value);
}

std::vector<uint8_t> gracefulRestartValue(const GracefulRestartCapability& gr) {
  bytes::ByteWriter v;
  uint16_t head = gr.restartTimeSeconds & kGrTimeMask;
  if (gr.restartState) {
    head |= uint16_t{kGrRestartState} << 8;
  }
  if (gr.notification) {
    head |= uint16_t{kGrNotification} << 8;
  }
  v.u16(head);
  for (const auto& f : gr.families) {
    v.u16(static_cast<uint16_t>(f.family.afi));
    v.u8(static_cast<uint8_t>(f.family.safi));
    v.u8(f.forwardingStatePreserved ? kGrForwardingPreserved : 0);
  }
  return std::move(v).take();
}

// All capabilities go in one optional parameter, as BIRD does; every peer accepts that layout.
std::vector<uint8_t> capabilitiesValue(const Capabilities& caps) {
  bytes::ByteWriter out;
  for (const auto& family : caps.multiprotocol) {
    bytes::ByteWriter v;
    v.u16(static_cast<uint16_t>(family.afi));
    v.u8(0);  // reserved
    v.u8(static_cast<uint8_t>(family.safi));
    writeCapability(out, CapabilityCode::Multiprotocol, v.data());
  }
  if (caps.routeRefresh) {
    writeCapability(out, CapabilityCode::RouteRefresh, {});
  }
  if (caps.gracefulRestart) {
    auto value = gracefulRestartValue(*caps.gracefulRestart);
    if (value.size() > 255) {
      encodeInvariantFailed("graceful restart capability lists too many families");
    }
    writeCapability(out, CapabilityCode::GracefulRestart, value);
  }
  if (caps.fourOctetAs) {
    bytes::ByteWriter v;
    v.u32(*caps.fourOctetAs);
    writeCapability(out, CapabilityCode::FourOctetAs, v.data());
  }
  if (!caps.addPath.empty()) {
    bytes::ByteWriter v;
    for (const auto& tuple : caps.addPath) {
      v.u16(static_cast<uint16_t>(tuple.family.afi));
      v.u8(static_cast<uint8_t>(tuple.family.safi));
      v.u8(static_cast<uint8_t>(tuple.mode));
    }
    if (v.size() > 255) {
      encodeInvariantFailed("ADD-PATH capability lists too many families");
    }
    writeCapability(out, CapabilityCode::AddPath, v.data());
  }
  return std::move(out).take();
}

// ---- decode ----

Result<void> decodeMultiprotocol(std::span<const uint8_t> value, Capabilities& caps) {
  bytes::ByteReader r(value);
  if (value.size() != 4) {
    return malformed(fmt::format("multiprotocol capability length {} is not 4", value.size()));
  }
  // Families vipd does not speak are kept as sent: the session intersects them with its own, and
  // must still see that the peer sent a multiprotocol capability at all (RFC 4760 section 8).
  const auto afi = static_cast<Afi>(*r.u16());
  r.u8();  // reserved
  const auto safi = static_cast<Safi>(*r.u8());
  caps.multiprotocol.push_back(AfiSafi{afi, safi});
  return {};
}

Result<void> decodeGracefulRestart(std::span<const uint8_t> value, Capabilities& caps) {
  if (value.size() < 2 || (value.size() - 2) % 4 != 0) {
    return malformed(fmt::format(
        "graceful restart capability length {} is not 2 plus a multiple of 4", value.size()));
  }
  bytes::ByteReader r(value);
  const uint16_t head = *r.u16();
  GracefulRestartCapability gr;
  gr.restartState = (head >> 8) & kGrRestartState;
  gr.notification = (head >> 8) & kGrNotification;
  gr.restartTimeSeconds = head & kGrTimeMask;
  while (!r.atEnd()) {
    GracefulRestartCapability::Family f;
    f.family.afi = static_cast<Afi>(*r.u16());
    f.family.safi = static_cast<Safi>(*r.u8());
    f.forwardingStatePreserved = *r.u8() & kGrForwardingPreserved;
    gr.families.push_back(f);
  }
  caps.gracefulRestart = std::move(gr);
  return {};
}

// RFC 7911 section 4. A zero-length value is accepted as advertising no family, which is what it
// says. Tuples are appended to what earlier ADD-PATH capabilities gave, as multiprotocol ones are.
Result<void> decodeAddPath(uint8_t code, std::span<const uint8_t> value, Capabilities& caps) {
  if (value.size() % kAddPathTupleSize != 0) {
    return malformed(
        fmt::format("ADD-PATH capability length {} is not a multiple of 4", value.size()));
  }
  std::vector<AddPathFamily> tuples;
  bytes::ByteReader r(value);
  while (!r.atEnd()) {
    AddPathFamily tuple;
    tuple.family.afi = static_cast<Afi>(*r.u16());
    tuple.family.safi = static_cast<Safi>(*r.u8());
    const uint8_t mode = *r.u8();
    if (mode < static_cast<uint8_t>(AddPathMode::Receive) ||
        mode > static_cast<uint8_t>(AddPathMode::Both)) {
      // "the capability SHOULD be treated as not understood and ignored": all of it, so the
      // session negotiates no ADD-PATH from it; kept whole among the unknown ones for the log.
      caps.unknown.push_back(UnknownCapability{code, {value.begin(), value.end()}});
      return {};
    }
    tuple.mode = static_cast<AddPathMode>(mode);
    tuples.push_back(tuple);
  }
  caps.addPath.insert(caps.addPath.end(), tuples.begin(), tuples.end());
  return {};
}

Result<void> decodeCapability(uint8_t code, std::span<const uint8_t> value, Capabilities& caps) {
  switch (code) {
    case static_cast<uint8_t>(CapabilityCode::Multiprotocol):
      return decodeMultiprotocol(value, caps);
    case static_cast<uint8_t>(CapabilityCode::RouteRefresh):
      if (!value.empty()) {
        return malformed(fmt::format("route refresh capability length {} is not 0", value.size()));
      }
      caps.routeRefresh = true;
      return {};
    case kCiscoRouteRefresh:
      return {};  // always sent alongside code 2, which is the one we act on
    case static_cast<uint8_t>(CapabilityCode::GracefulRestart):
      return decodeGracefulRestart(value, caps);
    case static_cast<uint8_t>(CapabilityCode::FourOctetAs): {
      if (value.size() != 4) {
        return malformed(fmt::format("4-octet AS capability length {} is not 4", value.size()));
      }
      bytes::ByteReader r(value);
      caps.fourOctetAs = *r.u32();
      return {};
    }
    case static_cast<uint8_t>(CapabilityCode::AddPath):
      return decodeAddPath(code, value, caps);
    default:
      // RFC 5492 section 5: an unrecognized capability is ignored, not an error.
      caps.unknown.push_back(UnknownCapability{code, {value.begin(), value.end()}});
      return {};
  }
}

// One capabilities parameter may hold any number of capabilities (BIRD puts all in one; FRR,
// ExaBGP and GoBGP send one parameter each), so both layouts go through here.
Result<void> decodeCapabilities(std::span<const uint8_t> param, Capabilities& caps) {
  bytes::ByteReader r(param);
  while (!r.atEnd()) {
    const uint8_t code = *r.u8();
    auto length = r.u8();
    if (!length) {
      return malformed(fmt::format("capability {} is cut off before its length", code));
    }
    auto value = r.bytes(*length);
    if (!value) {
      return malformed(
          fmt::format("capability {} length {} runs past its optional parameter ({} bytes left)",
                      code, *length, r.remaining()));
    }
    if (auto ok = decodeCapability(code, *value, caps); !ok) {
      return ok;
    }
  }
  return {};
}

// Splits the optional parameters into (type, value) pairs; `wideLengths` selects the RFC 9072
// layout with 2-byte parameter lengths.
Result<void> decodeParameters(std::span<const uint8_t> params, bool wideLengths,
                              Capabilities& caps) {
  bytes::ByteReader r(params);
  while (!r.atEnd()) {
    const uint8_t type = *r.u8();
    std::optional<uint16_t> length;
    if (wideLengths) {
      length = r.u16();
    } else if (auto narrow = r.u8()) {
      length = *narrow;
    }
    if (!length) {
      return malformed(fmt::format("optional parameter {} is cut off before its length", type));
    }
    auto value = r.bytes(*length);
    if (!value) {
      return malformed(
          fmt::format("optional parameter {} length {} runs past the parameters ({} bytes left)",
                      type, *length, r.remaining()));
    }
    if (type != kParamCapabilities) {
      return openError(subcode::kUnsupportedOptionalParameter, {},
                       fmt::format("optional parameter type {} is not supported (only "
                                   "capabilities, type 2)",
                                   type));
    }
    if (auto ok = decodeCapabilities(*value, caps); !ok) {
      return ok;
    }
  }
  return {};
}

// Returns the optional parameters and whether they use RFC 9072 wide lengths.
Result<std::pair<std::span<const uint8_t>, bool>> optionalParameters(bytes::ByteReader& r) {
  const uint8_t length = *r.u8();
  std::span<const uint8_t> rest = r.rest();
  bool wide = false;
  size_t paramsLength = length;
  size_t start = 0;
  if (length == 255 && !rest.empty() && rest[0] == kParamExtendedLength) {
    // RFC 9072: the real length follows the 255/255 escape as 2 bytes.
    if (rest.size() < 3) {
      return malformed("extended optional parameters length is cut off");
    }
    paramsLength = bytes::load16(rest, 1);
    start = 3;
    wide = true;
  }
  if (rest.size() - start != paramsLength) {
    return malformed(
        fmt::format("optional parameters length {} does not match the {} bytes that follow",
                    paramsLength, rest.size() - start));
  }
  return std::pair{rest.subspan(start), wide};
}

}  // namespace

void encodeOpenBody(bytes::ByteWriter& out, const OpenMessage& open) {
  out.u8(open.version);
  out.u16(open.myAs);
  out.u16(open.holdTimeSeconds);
  out.u32(open.bgpIdentifier);
  const auto caps = capabilitiesValue(open.capabilities);
  if (caps.empty()) {
    out.u8(0);
    return;
  }
  // One parameter of type 2: 2 header bytes plus the capabilities must fit the 1-byte length.
  if (caps.size() + 2 > 255) {
    encodeInvariantFailed(fmt::format("{} bytes of capabilities need RFC 9072", caps.size()));
  }
  out.u8(static_cast<uint8_t>(caps.size() + 2));
  out.u8(kParamCapabilities);
  out.u8(static_cast<uint8_t>(caps.size()));
  out.bytes(caps);
}

// Only what the codec can judge alone is checked here; hold time and peer AS need the config
// and are the session's job (RFC 4271 section 6.2).
Result<OpenMessage> decodeOpenBody(std::span<const uint8_t> body) {
  bytes::ByteReader r(body);
  OpenMessage open;
  auto version = r.u8();
  auto myAs = r.u16();
  auto hold = r.u16();
  auto id = r.u32();
  if (!version || !myAs || !hold || !id || r.atEnd()) {
    return malformed(
        fmt::format("body of {} bytes is shorter than the 10 fixed bytes", body.size()));
  }
  if (*version != kBgpVersion) {
    // Data: the largest version we support, as a 2-byte value (RFC 4271 section 6.2).
    return openError(subcode::kUnsupportedVersionNumber, {0x00, kBgpVersion},
                     fmt::format("peer speaks BGP version {}; vipd supports only 4", *version));
  }
  if (*id == 0) {
    return openError(subcode::kBadBgpIdentifier, {}, "BGP identifier is 0.0.0.0");
  }
  open.version = *version;
  open.myAs = *myAs;
  open.holdTimeSeconds = *hold;
  open.bgpIdentifier = *id;
  auto params = optionalParameters(r);
  if (!params) {
    return tl::unexpected(params.error());
  }
  if (auto ok = decodeParameters(params->first, params->second, open.capabilities); !ok) {
    return tl::unexpected(ok.error());
  }
  return open;
}

}  // namespace vipd::bgp::internal
