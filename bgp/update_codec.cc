// UPDATE message body (RFC 4271 section 4.3) with the error handling of RFC 7606: which
// malformations reset the session, which make the UPDATE's routes withdrawn, and which only drop
// one attribute. NLRI carry RFC 7911 path identifiers in the families CodecOptions::addPath names.
#include <fmt/format.h>

#include <algorithm>
#include <bitset>

#include "bgp/codec_internal.h"
#include "bytes/big_endian.h"

namespace vipd::bgp::internal {

namespace {

using namespace attr_flags;

constexpr uint8_t kWellKnown = kTransitive;  // well-known attributes are always transitive
constexpr uint8_t kOptionalTransitive = kOptional | kTransitive;
constexpr uint8_t kCategoryBits = kOptional | kTransitive;  // the bits RFC 7606 3(c) checks

std::string_view attributeName(uint8_t type) {
  switch (static_cast<AttributeType>(type)) {
    case AttributeType::Origin:
      return "ORIGIN";
    case AttributeType::AsPath:
      return "AS_PATH";
    case AttributeType::NextHop:
      return "NEXT_HOP";
    case AttributeType::MultiExitDisc:
      return "MULTI_EXIT_DISC";
    case AttributeType::LocalPref:
      return "LOCAL_PREF";
    case AttributeType::AtomicAggregate:
      return "ATOMIC_AGGREGATE";
    case AttributeType::Aggregator:
      return "AGGREGATOR";
    case AttributeType::Communities:
      return "COMMUNITIES";
    case AttributeType::OriginatorId:
      return "ORIGINATOR_ID";
    case AttributeType::ClusterList:
      return "CLUSTER_LIST";
    case AttributeType::MpReachNlri:
      return "MP_REACH_NLRI";
    case AttributeType::MpUnreachNlri:
      return "MP_UNREACH_NLRI";
    case AttributeType::As4Path:
      return "AS4_PATH";
    case AttributeType::As4Aggregator:
      return "AS4_AGGREGATOR";
    case AttributeType::LargeCommunities:
      return "LARGE_COMMUNITIES";
  }
  return {};
}

std::string describeAttribute(uint8_t type) {
  auto name = attributeName(type);
  return name.empty() ? fmt::format("attribute type {}", type) : fmt::format("{}", name);
}

tl::unexpected<DecodeError> updateError(uint8_t sub, std::vector<uint8_t> data,
                                        std::string reason) {
  return decodeError(ErrorCode::UpdateMessage, sub, std::move(data),
                     "UPDATE: " + std::move(reason));
}

// ---- prefixes (RFC 4271 section 4.3, RFC 4760 section 5) ----

size_t prefixBytes(uint8_t length) { return (length + 7) / 8; }

// The prefixes of one NLRI field, and their path identifiers when the family has ADD-PATH.
struct ParsedNlri {
  std::vector<Prefix> prefixes;
  std::vector<uint32_t> pathIds;  // empty without ADD-PATH, else one per prefix
};

// RFC 7911 section 3: with ADD-PATH each prefix is preceded by its 4-octet Path Identifier.
tl::expected<ParsedNlri, std::string> parsePrefixes(std::span<const uint8_t> data, Afi afi,
                                                    bool withPathIds) {
  bytes::ByteReader r(data);
  ParsedNlri parsed;
  const uint8_t maxLength = afi == Afi::Ipv4 ? 32 : 128;
  while (!r.atEnd()) {
    if (withPathIds) {
      auto pathId = r.u32();
      if (!pathId) {
        return tl::unexpected(
            fmt::format("path identifier cut off: {} bytes remain of the 4 it needs (ADD-PATH)",
                        r.remaining()));
      }
      parsed.pathIds.push_back(*pathId);
    }
    auto length = r.u8();
    if (!length) {
      return tl::unexpected(fmt::format("path identifier {} is not followed by a prefix (ADD-PATH)",
                                        parsed.pathIds.back()));
    }
    if (*length > maxLength) {
      return tl::unexpected(fmt::format("prefix length {} exceeds {}", *length, maxLength));
    }
    auto bytes = r.bytes(prefixBytes(*length));
    if (!bytes) {
      return tl::unexpected(fmt::format("a /{} prefix needs {} bytes but only {} remain", *length,
                                        prefixBytes(*length), r.remaining()));
    }
    Prefix p;
    p.address.family = afi;
    p.length = *length;
    std::copy(bytes->begin(), bytes->end(), p.address.bytes.begin());
    // Peers may leave junk past the prefix length; Prefix promises those bits are zero.
    if (*length % 8 != 0) {
      p.address.bytes[bytes->size() - 1] &= static_cast<uint8_t>(0xFF << (8 - *length % 8));
    }
    parsed.prefixes.push_back(p);
  }
  return parsed;
}

// `pathIds` must match the options: one per prefix when `family` carries path identifiers,
// none otherwise.
void writePrefixes(bytes::ByteWriter& out, const std::vector<Prefix>& prefixes,
                   const std::vector<uint32_t>& pathIds, AfiSafi family,
                   const CodecOptions& options) {
  const bool withPathIds = options.carriesPathIds(family);
  if (withPathIds ? pathIds.size() != prefixes.size() : !pathIds.empty()) {
    encodeInvariantFailed(
        fmt::format("{} path identifiers for {} prefixes of AFI {} SAFI {}, which {} ADD-PATH",
                    pathIds.size(), prefixes.size(), static_cast<int>(family.afi),
                    static_cast<int>(family.safi), withPathIds ? "has" : "does not have"));
  }
  for (size_t i = 0; i < prefixes.size(); ++i) {
    const Prefix& p = prefixes[i];
    if (p.address.family != family.afi || p.length > p.maxLength()) {
      encodeInvariantFailed(fmt::format("prefix {} does not belong in this field", p.toString()));
    }
    if (withPathIds) {
      out.u32(pathIds[i]);
    }
    out.u8(p.length);
    out.bytes(std::span(p.address.bytes).first(prefixBytes(p.length)));
  }
}

std::optional<AfiSafi> supportedFamily(uint16_t afi, uint8_t safi) {
  for (auto family : {kIpv4Unicast, kIpv6Unicast}) {
    if (static_cast<uint16_t>(family.afi) == afi && static_cast<uint8_t>(family.safi) == safi) {
      return family;
    }
  }
  return std::nullopt;
}

// ---- AS_PATH / AS4_PATH (RFC 4271 section 4.3, RFC 6793) ----

tl::expected<AsPath, std::string> parseAsPath(std::span<const uint8_t> value, size_t asnSize,
                                              std::string_view name) {
  bytes::ByteReader r(value);
  AsPath path;
  while (!r.atEnd()) {
    const uint8_t type = *r.u8();
    auto count = r.u8();
    if (!count) {
      return tl::unexpected(fmt::format("{} segment header is cut off", name));
    }
    if (type < static_cast<uint8_t>(AsPathSegment::Type::AsSet) ||
        type > static_cast<uint8_t>(AsPathSegment::Type::ConfedSet)) {
      return tl::unexpected(fmt::format("{} segment type {} is not 1..4", name, type));
    }
    if (*count == 0) {
      return tl::unexpected(fmt::format("{} has a segment with no ASNs", name));
    }
    if (r.remaining() < *count * asnSize) {
      return tl::unexpected(fmt::format("{} segment of {} {}-byte ASNs runs past the attribute",
                                        name, *count, asnSize));
    }
    AsPathSegment segment{static_cast<AsPathSegment::Type>(type), {}};
    for (uint8_t i = 0; i < *count; ++i) {
      segment.asns.push_back(asnSize == 4 ? *r.u32() : *r.u16());
    }
    path.push_back(std::move(segment));
  }
  return path;
}

bool needsFourOctets(const AsPath& path) {
  return std::any_of(path.begin(), path.end(), [](const AsPathSegment& s) {
    return std::any_of(s.asns.begin(), s.asns.end(), [](uint32_t asn) { return asn > 0xFFFF; });
  });
}

bool isConfed(const AsPathSegment& s) {
  return s.type == AsPathSegment::Type::ConfedSequence || s.type == AsPathSegment::Type::ConfedSet;
}

// In 2-byte mode ASNs above 65535 become AS_TRANS (RFC 6793 section 4.2.2).
std::vector<uint8_t> asPathValue(const AsPath& path, bool fourOctet) {
  bytes::ByteWriter v;
  for (const auto& s : path) {
    if (s.asns.empty() || s.asns.size() > 255) {
      encodeInvariantFailed(fmt::format("AS_PATH segment with {} ASNs", s.asns.size()));
    }
    v.u8(static_cast<uint8_t>(s.type));
    v.u8(static_cast<uint8_t>(s.asns.size()));
    for (uint32_t asn : s.asns) {
      if (fourOctet) {
        v.u32(asn);
      } else {
        v.u16(asn > 0xFFFF ? kAsTrans : static_cast<uint16_t>(asn));
      }
    }
  }
  return std::move(v).take();
}

// ---- decoding ----

enum class Action { TreatAsWithdraw, AttributeDiscard, SessionReset };

class UpdateDecoder {
 public:
  explicit UpdateDecoder(const CodecOptions& options) : options_(options) {}

  Result<DecodedMessage> decode(std::span<const uint8_t> body);

 private:
  struct Attribute {
    uint8_t flags = 0;
    uint8_t type = 0;
    std::span<const uint8_t> value;
    std::span<const uint8_t> wire;  // flags through value, for 3/2 data
  };
  // A parser returns why the attribute is malformed, or nothing when it was stored.
  using Problem = std::optional<std::string>;
  using Parser = Problem (UpdateDecoder::*)(const Attribute&);
  // RFC 7606 section 7: the flags each recognized attribute must carry and what to do when it
  // is malformed in any way (flags, length or value).
  struct Rule {
    AttributeType type;
    uint8_t flags;
    Action onMalformed;
    Parser parse;
  };
  static const Rule* ruleFor(uint8_t type);

  Result<void> decodeAttributes(std::span<const uint8_t> list);
  Result<void> onAttribute(const Attribute& a);
  Result<void> apply(Action action, uint8_t type, const std::string& why);
  void checkMandatory();
  UpdateHandling handling() const;
  size_t asnSize() const { return options_.fourOctetAs ? 4 : 2; }
  void discard(std::string note);

  Problem parseOrigin(const Attribute& a);
  Problem parseAsPathAttr(const Attribute& a);
  Problem parseNextHop(const Attribute& a);
  Problem parseMed(const Attribute& a);
  Problem parseLocalPref(const Attribute& a);
  Problem parseAtomicAggregate(const Attribute& a);
  Problem parseAggregator(const Attribute& a);
  Problem parseCommunities(const Attribute& a);
  Problem parseOriginatorId(const Attribute& a);
  Problem parseClusterList(const Attribute& a);
  Problem parseMpReach(const Attribute& a);
  Problem parseMpUnreach(const Attribute& a);
  Problem parseAs4Path(const Attribute& a);
  Problem parseAs4Aggregator(const Attribute& a);
  Problem parseLargeCommunities(const Attribute& a);

  static Problem checkLength(const Attribute& a, size_t expected);
  static Problem checkMultiple(const Attribute& a, size_t unit);
  void keepRaw(const Attribute& a);

  CodecOptions options_;
  UpdateMessage update_;
  std::bitset<256> seen_;
  bool treatAsWithdraw_ = false;
  bool discarded_ = false;
  std::vector<std::string> notes_;
};

const UpdateDecoder::Rule* UpdateDecoder::ruleFor(uint8_t type) {
  using T = AttributeType;
  using A = Action;
  static const Rule kRules[] = {
      {T::Origin, kWellKnown, A::TreatAsWithdraw, &UpdateDecoder::parseOrigin},
      {T::AsPath, kWellKnown, A::TreatAsWithdraw, &UpdateDecoder::parseAsPathAttr},
      {T::NextHop, kWellKnown, A::TreatAsWithdraw, &UpdateDecoder::parseNextHop},
      {T::MultiExitDisc, kOptional, A::TreatAsWithdraw, &UpdateDecoder::parseMed},
      {T::LocalPref, kWellKnown, A::TreatAsWithdraw, &UpdateDecoder::parseLocalPref},
      {T::AtomicAggregate, kWellKnown, A::AttributeDiscard, &UpdateDecoder::parseAtomicAggregate},
      {T::Aggregator, kOptionalTransitive, A::AttributeDiscard, &UpdateDecoder::parseAggregator},
      {T::Communities, kOptionalTransitive, A::TreatAsWithdraw, &UpdateDecoder::parseCommunities},
      {T::OriginatorId, kOptional, A::TreatAsWithdraw, &UpdateDecoder::parseOriginatorId},
      {T::ClusterList, kOptional, A::TreatAsWithdraw, &UpdateDecoder::parseClusterList},
      // RFC 7606 section 7.11: without the NLRI we cannot withdraw them, so reset.
      {T::MpReachNlri, kOptional, A::SessionReset, &UpdateDecoder::parseMpReach},
      {T::MpUnreachNlri, kOptional, A::SessionReset, &UpdateDecoder::parseMpUnreach},
      // RFC 6793 section 6 / RFC 7606 section 7.2: AS_PATH still stands without it.
      {T::As4Path, kOptionalTransitive, A::AttributeDiscard, &UpdateDecoder::parseAs4Path},
      {T::As4Aggregator, kOptionalTransitive, A::AttributeDiscard,
       &UpdateDecoder::parseAs4Aggregator},
      // RFC 8092 section 6.
      {T::LargeCommunities, kOptionalTransitive, A::TreatAsWithdraw,
       &UpdateDecoder::parseLargeCommunities},
  };
  for (const auto& rule : kRules) {
    if (static_cast<uint8_t>(rule.type) == type) {
      return &rule;
    }
  }
  return nullptr;
}

Result<DecodedMessage> UpdateDecoder::decode(std::span<const uint8_t> body) {
  bytes::ByteReader r(body);
  // RFC 4271 section 6.3: either length field overrunning the message is 3/1.
  auto withdrawnLength = r.u16();
  if (!withdrawnLength) {
    return updateError(subcode::kMalformedAttributeList, {},
                       "message ends before the withdrawn routes length");
  }
  auto withdrawn = r.bytes(*withdrawnLength);
  auto attributesLength = r.u16();
  if (!withdrawn || !attributesLength) {
    return updateError(subcode::kMalformedAttributeList, {},
                       fmt::format("withdrawn routes length {} runs past the message body of {} "
                                   "bytes",
                                   *withdrawnLength, body.size()));
  }
  auto attributes = r.bytes(*attributesLength);
  if (!attributes) {
    return updateError(subcode::kMalformedAttributeList, {},
                       fmt::format("total path attribute length {} runs past the message ({} "
                                   "bytes left)",
                                   *attributesLength, r.remaining()));
  }
  // RFC 7606 section 5.3: a bad prefix in either NLRI field resets the session; with ADD-PATH
  // that includes a path identifier cut off, or one with no prefix after it.
  const bool ipv4PathIds = options_.carriesPathIds(kIpv4Unicast);
  auto withdrawnPrefixes = parsePrefixes(*withdrawn, Afi::Ipv4, ipv4PathIds);
  if (!withdrawnPrefixes) {
    return updateError(subcode::kInvalidNetworkField, {},
                       "withdrawn routes: " + withdrawnPrefixes.error());
  }
  update_.withdrawn = std::move(withdrawnPrefixes->prefixes);
  update_.withdrawnPathIds = std::move(withdrawnPrefixes->pathIds);
  if (auto ok = decodeAttributes(*attributes); !ok) {
    return tl::unexpected(ok.error());
  }
  auto nlri = parsePrefixes(r.rest(), Afi::Ipv4, ipv4PathIds);
  if (!nlri) {
    return updateError(subcode::kInvalidNetworkField, {}, "NLRI: " + nlri.error());
  }
  update_.nlri = std::move(nlri->prefixes);
  update_.nlriPathIds = std::move(nlri->pathIds);
  checkMandatory();
  const UpdateHandling outcome = handling();  // before update_ is moved from
  return DecodedMessage{std::move(update_), outcome, std::move(notes_)};
}

Result<void> UpdateDecoder::decodeAttributes(std::span<const uint8_t> list) {
  bytes::ByteReader r(list);
  while (!r.atEnd()) {
    const size_t start = r.position();
    auto flags = r.u8();
    auto type = r.u8();
    std::optional<uint16_t> length;
    if (type && (*flags & kExtendedLength)) {
      length = r.u16();
    } else if (type) {
      length = r.u8();
    }
    // RFC 7606 section 4: an attribute header or length that overruns the attribute list is
    // treat-as-withdraw; the Total Attribute Length still locates the NLRI. Only when the
    // overrunning attribute is MP_REACH/MP_UNREACH itself are its routes unknowable, and that
    // is a session reset (RFC 7606 section 7.11).
    if (!length) {
      treatAsWithdraw_ = true;
      notes_.push_back(fmt::format("path attribute header cut off {} bytes before the end of the "
                                   "attribute list; treat-as-withdraw",
                                   list.size() - start));
      return {};
    }
    auto value = r.bytes(*length);
    if (!value) {
      auto why = fmt::format("{} attribute length {} runs past the attribute list ({} bytes left)",
                             describeAttribute(*type), *length, r.remaining());
      if (*type == static_cast<uint8_t>(AttributeType::MpReachNlri) ||
          *type == static_cast<uint8_t>(AttributeType::MpUnreachNlri)) {
        return updateError(subcode::kMalformedAttributeList, {}, why);
      }
      treatAsWithdraw_ = true;
      notes_.push_back(why + "; treat-as-withdraw");
      return {};
    }
    Attribute a{*flags, *type, *value, list.subspan(start, r.position() - start)};
    if (auto ok = onAttribute(a); !ok) {
      return ok;
    }
  }
  return {};
}

Result<void> UpdateDecoder::onAttribute(const Attribute& a) {
  const std::string name = describeAttribute(a.type);
  if (seen_.test(a.type)) {
    // RFC 7606 section 3(g).
    if (a.type == static_cast<uint8_t>(AttributeType::MpReachNlri) ||
        a.type == static_cast<uint8_t>(AttributeType::MpUnreachNlri)) {
      return updateError(subcode::kMalformedAttributeList, {},
                         fmt::format("{} appears more than once", name));
    }
    discard(fmt::format("duplicate {} discarded, first one kept", name));
    return {};
  }
  seen_.set(a.type);
  const Rule* rule = ruleFor(a.type);
  if (rule == nullptr) {
    if (!(a.flags & kOptional)) {
      return updateError(subcode::kUnrecognizedWellKnownAttribute, {a.wire.begin(), a.wire.end()},
                         fmt::format("unrecognized well-known attribute type {}", a.type));
    }
    keepRaw(a);  // unknown optional: RFC 4271 section 5 says accept it
    return {};
  }
  if ((a.flags & kCategoryBits) != rule->flags) {
    return apply(rule->onMalformed, a.type,
                 fmt::format("{} flags 0x{:02x} should have optional/transitive bits 0x{:02x}",
                             name, a.flags, rule->flags));
  }
  if (Problem why = (this->*rule->parse)(a)) {
    return apply(rule->onMalformed, a.type, *why);
  }
  return {};
}

Result<void> UpdateDecoder::apply(Action action, uint8_t type, const std::string& why) {
  switch (action) {
    case Action::SessionReset:
      return updateError(subcode::kMalformedAttributeList, {}, why);
    case Action::TreatAsWithdraw:
      treatAsWithdraw_ = true;
      notes_.push_back(why + "; treat-as-withdraw");
      return {};
    case Action::AttributeDiscard:
      discard(fmt::format("{}; {} discarded", why, describeAttribute(type)));
      return {};
  }
  return {};
}

void UpdateDecoder::discard(std::string note) {
  discarded_ = true;
  notes_.push_back(std::move(note));
}

// RFC 7606 section 3(d): a missing well-known mandatory attribute (3/3 under RFC 4271) makes
// the routes withdrawn. NEXT_HOP is only mandatory for the IPv4 NLRI field (RFC 4760 section 3).
void UpdateDecoder::checkMandatory() {
  const bool ipv4Nlri = !update_.nlri.empty();
  const bool mpNlri = update_.attributes.mpReach && !update_.attributes.mpReach->nlri.empty();
  if (!ipv4Nlri && !mpNlri) {
    return;
  }
  std::vector<AttributeType> required{AttributeType::Origin, AttributeType::AsPath};
  if (ipv4Nlri) {
    required.push_back(AttributeType::NextHop);
  }
  for (auto type : required) {
    if (!seen_.test(static_cast<uint8_t>(type))) {
      treatAsWithdraw_ = true;
      notes_.push_back(fmt::format(
          "missing well-known attribute {} (RFC 4271 would send 3/3); treat-as-withdraw",
          attributeName(static_cast<uint8_t>(type))));
    }
  }
}

UpdateHandling UpdateDecoder::handling() const {
  const bool reachability = !update_.nlri.empty() || update_.attributes.mpReach.has_value();
  // With nothing announced there is nothing to treat as withdrawn; the notes still say why.
  if (treatAsWithdraw_ && reachability) {
    return UpdateHandling::TreatAsWithdraw;
  }
  return discarded_ ? UpdateHandling::AttributeDiscard : UpdateHandling::Normal;
}

UpdateDecoder::Problem UpdateDecoder::checkLength(const Attribute& a, size_t expected) {
  if (a.value.size() != expected) {
    return fmt::format("{} attribute length {} is not {}", describeAttribute(a.type),
                       a.value.size(), expected);
  }
  return std::nullopt;
}

// COMMUNITIES, CLUSTER_LIST and LARGE_COMMUNITIES must be a non-zero multiple of their unit
// (RFC 7606 sections 7.8 and 7.10, RFC 8092 section 6).
UpdateDecoder::Problem UpdateDecoder::checkMultiple(const Attribute& a, size_t unit) {
  if (a.value.empty() || a.value.size() % unit != 0) {
    return fmt::format("{} attribute length {} is not a non-zero multiple of {}",
                       describeAttribute(a.type), a.value.size(), unit);
  }
  return std::nullopt;
}

void UpdateDecoder::keepRaw(const Attribute& a) {
  // The extended-length bit describes the length field only; the encoder recomputes it.
  update_.attributes.other.push_back(RawAttribute{
      static_cast<uint8_t>(a.flags & ~kExtendedLength), a.type, {a.value.begin(), a.value.end()}});
}

UpdateDecoder::Problem UpdateDecoder::parseOrigin(const Attribute& a) {
  if (auto p = checkLength(a, 1)) {
    return p;
  }
  if (a.value[0] > static_cast<uint8_t>(Origin::Incomplete)) {
    return fmt::format("ORIGIN value {} is not IGP, EGP or INCOMPLETE", a.value[0]);
  }
  update_.attributes.origin = static_cast<Origin>(a.value[0]);
  return std::nullopt;
}

UpdateDecoder::Problem UpdateDecoder::parseAsPathAttr(const Attribute& a) {
  auto path = parseAsPath(a.value, asnSize(), "AS_PATH");
  if (!path) {
    return fmt::format("{} (decoded with {}-byte ASNs)", path.error(), asnSize());
  }
  update_.attributes.asPath = *std::move(path);
  return std::nullopt;
}

// RFC 4271 section 6.3: NEXT_HOP must be a valid host address; 0/8, multicast and class E are
// not.
UpdateDecoder::Problem UpdateDecoder::parseNextHop(const Attribute& a) {
  if (auto p = checkLength(a, 4)) {
    return p;
  }
  auto nextHop =
      IpAddress::v4(std::array<uint8_t, 4>{a.value[0], a.value[1], a.value[2], a.value[3]});
  if (a.value[0] == 0 || a.value[0] >= 224) {
    return fmt::format("NEXT_HOP {} is not a valid host address", nextHop.toString());
  }
  update_.attributes.nextHop = nextHop;
  return std::nullopt;
}

UpdateDecoder::Problem UpdateDecoder::parseMed(const Attribute& a) {
  if (auto p = checkLength(a, 4)) {
    return p;
  }
  update_.attributes.med = *bytes::ByteReader(a.value).u32();
  return std::nullopt;
}

UpdateDecoder::Problem UpdateDecoder::parseLocalPref(const Attribute& a) {
  if (auto p = checkLength(a, 4)) {
    return p;
  }
  update_.attributes.localPref = *bytes::ByteReader(a.value).u32();
  return std::nullopt;
}

UpdateDecoder::Problem UpdateDecoder::parseAtomicAggregate(const Attribute& a) {
  if (auto p = checkLength(a, 0)) {
    return p;
  }
  update_.attributes.atomicAggregate = true;
  return std::nullopt;
}

UpdateDecoder::Problem UpdateDecoder::parseAggregator(const Attribute& a) {
  if (auto p = checkLength(a, asnSize() + 4)) {
    return p;
  }
  keepRaw(a);
  return std::nullopt;
}

UpdateDecoder::Problem UpdateDecoder::parseCommunities(const Attribute& a) {
  if (auto p = checkMultiple(a, 4)) {
    return p;
  }
  bytes::ByteReader r(a.value);
  std::vector<uint32_t> communities;
  while (!r.atEnd()) {
    communities.push_back(*r.u32());
  }
  update_.attributes.communities = std::move(communities);
  return std::nullopt;
}

UpdateDecoder::Problem UpdateDecoder::parseOriginatorId(const Attribute& a) {
  if (auto p = checkLength(a, 4)) {
    return p;
  }
  update_.attributes.originatorId = *bytes::ByteReader(a.value).u32();
  return std::nullopt;
}

UpdateDecoder::Problem UpdateDecoder::parseClusterList(const Attribute& a) {
  if (auto p = checkMultiple(a, 4)) {
    return p;
  }
  bytes::ByteReader r(a.value);
  std::vector<uint32_t> clusterIds;
  while (!r.atEnd()) {
    clusterIds.push_back(*r.u32());
  }
  update_.attributes.clusterList = std::move(clusterIds);
  return std::nullopt;
}

UpdateDecoder::Problem UpdateDecoder::parseMpReach(const Attribute& a) {
  bytes::ByteReader r(a.value);
  auto afi = r.u16();
  auto safi = r.u8();
  auto nextHopLength = r.u8();
  if (!nextHopLength) {
    return fmt::format("MP_REACH_NLRI length {} is too short for AFI, SAFI and next hop length",
                       a.value.size());
  }
  auto family = supportedFamily(*afi, *safi);
  if (!family) {
    // We never advertise other families, so their routes are of no use to us; dropping the
    // attribute leaves the rest of the UPDATE usable.
    discard(fmt::format("MP_REACH_NLRI for AFI {} SAFI {}, which vipd does not speak, discarded",
                        *afi, *safi));
    return std::nullopt;
  }
  const bool v4 = family->afi == Afi::Ipv4;
  if ((v4 && *nextHopLength != 4) || (!v4 && *nextHopLength != 16 && *nextHopLength != 32)) {
    return fmt::format("MP_REACH_NLRI next hop length {} is invalid for AFI {}", *nextHopLength,
                       *afi);
  }
  auto nextHop = r.bytes(*nextHopLength);
  auto reserved = r.u8();  // RFC 4760 section 3: ignored on receipt
  if (!nextHop || !reserved) {
    return fmt::format("MP_REACH_NLRI next hop of {} bytes runs past the attribute",
                       *nextHopLength);
  }
  auto nlri = parsePrefixes(r.rest(), family->afi, options_.carriesPathIds(*family));
  if (!nlri) {
    return "MP_REACH_NLRI: " + nlri.error();
  }
  update_.attributes.mpReach = MpReachNlri{*family,
                                           {nextHop->begin(), nextHop->end()},
                                           std::move(nlri->prefixes),
                                           std::move(nlri->pathIds)};
  return std::nullopt;
}

UpdateDecoder::Problem UpdateDecoder::parseMpUnreach(const Attribute& a) {
  bytes::ByteReader r(a.value);
  auto afi = r.u16();
  auto safi = r.u8();
  if (!afi || !safi) {  // with 1 byte, the AFI read fails but the SAFI read succeeds
    return fmt::format("MP_UNREACH_NLRI length {} is too short for AFI and SAFI", a.value.size());
  }
  auto family = supportedFamily(*afi, *safi);
  if (!family) {
    discard(fmt::format("MP_UNREACH_NLRI for AFI {} SAFI {}, which vipd does not speak, discarded",
                        *afi, *safi));
    return std::nullopt;
  }
  auto withdrawn = parsePrefixes(r.rest(), family->afi, options_.carriesPathIds(*family));
  if (!withdrawn) {
    return "MP_UNREACH_NLRI: " + withdrawn.error();
  }
  update_.attributes.mpUnreach =
      MpUnreachNlri{*family, std::move(withdrawn->prefixes), std::move(withdrawn->pathIds)};
  return std::nullopt;
}

UpdateDecoder::Problem UpdateDecoder::parseAs4Path(const Attribute& a) {
  if (options_.fourOctetAs) {
    // RFC 6793 section 4.1: between two 4-octet speakers AS_PATH is authoritative.
    discard("AS4_PATH from a 4-octet AS peer discarded (RFC 6793 section 4.1)");
    return std::nullopt;
  }
  auto path = parseAsPath(a.value, 4, "AS4_PATH");
  if (!path) {
    return path.error();
  }
  // RFC 6793 section 6: confederation segments have no place in AS4_PATH.
  if (std::any_of(path->begin(), path->end(), isConfed)) {
    return std::string("AS4_PATH carries a confederation segment");
  }
  update_.attributes.as4Path = *std::move(path);
  return std::nullopt;
}

UpdateDecoder::Problem UpdateDecoder::parseAs4Aggregator(const Attribute& a) {
  if (options_.fourOctetAs) {
    discard("AS4_AGGREGATOR from a 4-octet AS peer discarded (RFC 6793 section 4.1)");
    return std::nullopt;
  }
  if (auto p = checkLength(a, 8)) {
    return p;
  }
  keepRaw(a);
  return std::nullopt;
}

UpdateDecoder::Problem UpdateDecoder::parseLargeCommunities(const Attribute& a) {
  if (auto p = checkMultiple(a, 12)) {
    return p;
  }
  bytes::ByteReader r(a.value);
  std::vector<LargeCommunity> communities;
  while (!r.atEnd()) {
    communities.push_back(LargeCommunity{*r.u32(), *r.u32(), *r.u32()});
  }
  update_.attributes.largeCommunities = std::move(communities);
  return std::nullopt;
}

// ---- encoding ----

void addAttribute(std::vector<RawAttribute>& list, uint8_t flags, AttributeType type,
                  std::vector<uint8_t> value) {
  list.push_back(RawAttribute{flags, static_cast<uint8_t>(type), std::move(value)});
}

std::vector<uint8_t> u32Value(uint32_t v) {
  bytes::ByteWriter w;
  w.u32(v);
  return std::move(w).take();
}

void addAsPaths(std::vector<RawAttribute>& list, const PathAttributes& attrs, bool fourOctet) {
  if (attrs.asPath) {
    addAttribute(list, kWellKnown, AttributeType::AsPath, asPathValue(*attrs.asPath, fourOctet));
  }
  if (fourOctet) {
    return;  // RFC 6793 section 4.1: no AS4_PATH between 4-octet speakers
  }
  if (attrs.as4Path) {
    addAttribute(list, kOptionalTransitive, AttributeType::As4Path,
                 asPathValue(*attrs.as4Path, true));
  } else if (attrs.asPath && needsFourOctets(*attrs.asPath)) {
    // RFC 6793 section 4.2.2: carry the real ASNs for the AS_TRANS stand-ins; confederation
    // segments never go into AS4_PATH.
    AsPath as4;
    std::copy_if(attrs.asPath->begin(), attrs.asPath->end(), std::back_inserter(as4),
                 [](const AsPathSegment& s) { return !isConfed(s); });
    addAttribute(list, kOptionalTransitive, AttributeType::As4Path, asPathValue(as4, true));
  }
}

std::vector<uint8_t> mpReachValue(const MpReachNlri& mp, const CodecOptions& options) {
  bytes::ByteWriter v;
  v.u16(static_cast<uint16_t>(mp.family.afi));
  v.u8(static_cast<uint8_t>(mp.family.safi));
  if (mp.nextHop.size() > 255) {
    encodeInvariantFailed("MP_REACH_NLRI next hop longer than 255 bytes");
  }
  v.u8(static_cast<uint8_t>(mp.nextHop.size()));
  v.bytes(mp.nextHop);
  v.u8(0);  // reserved
  writePrefixes(v, mp.nlri, mp.pathIds, mp.family, options);
  return std::move(v).take();
}

std::vector<uint8_t> mpUnreachValue(const MpUnreachNlri& mp, const CodecOptions& options) {
  bytes::ByteWriter v;
  v.u16(static_cast<uint16_t>(mp.family.afi));
  v.u8(static_cast<uint8_t>(mp.family.safi));
  writePrefixes(v, mp.withdrawn, mp.pathIds, mp.family, options);
  return std::move(v).take();
}

std::vector<RawAttribute> attributeList(const PathAttributes& attrs, const CodecOptions& options) {
  std::vector<RawAttribute> list;
  if (attrs.origin) {
    addAttribute(list, kWellKnown, AttributeType::Origin, {static_cast<uint8_t>(*attrs.origin)});
  }
  addAsPaths(list, attrs, options.fourOctetAs);
  if (attrs.nextHop) {
    if (!attrs.nextHop->isV4()) {
      encodeInvariantFailed("NEXT_HOP attribute holds an IPv6 address; use MP_REACH_NLRI");
    }
    addAttribute(list, kWellKnown, AttributeType::NextHop,
                 {attrs.nextHop->bytes.begin(), attrs.nextHop->bytes.begin() + 4});
  }
  if (attrs.med) {
    addAttribute(list, kOptional, AttributeType::MultiExitDisc, u32Value(*attrs.med));
  }
  if (attrs.localPref) {
    addAttribute(list, kWellKnown, AttributeType::LocalPref, u32Value(*attrs.localPref));
  }
  if (attrs.atomicAggregate) {
    addAttribute(list, kWellKnown, AttributeType::AtomicAggregate, {});
  }
  // An empty COMMUNITIES or LARGE_COMMUNITIES is malformed on receipt (RFC 7606), so omit it.
  if (attrs.communities && !attrs.communities->empty()) {
    bytes::ByteWriter v;
    for (uint32_t c : *attrs.communities) {
      v.u32(c);
    }
    addAttribute(list, kOptionalTransitive, AttributeType::Communities, std::move(v).take());
  }
  if (attrs.largeCommunities && !attrs.largeCommunities->empty()) {
    bytes::ByteWriter v;
    for (const auto& c : *attrs.largeCommunities) {
      v.u32(c.globalAdministrator);
      v.u32(c.localData1);
      v.u32(c.localData2);
    }
    addAttribute(list, kOptionalTransitive, AttributeType::LargeCommunities, std::move(v).take());
  }
  // RFC 4456 section 7: both optional non-transitive. An empty CLUSTER_LIST is malformed on
  // receipt (RFC 7606 section 7.10), so it is omitted like the empty communities above.
  if (attrs.originatorId) {
    addAttribute(list, kOptional, AttributeType::OriginatorId, u32Value(*attrs.originatorId));
  }
  if (attrs.clusterList && !attrs.clusterList->empty()) {
    bytes::ByteWriter v;
    for (uint32_t id : *attrs.clusterList) {
      v.u32(id);
    }
    addAttribute(list, kOptional, AttributeType::ClusterList, std::move(v).take());
  }
  if (attrs.mpReach) {
    addAttribute(list, kOptional, AttributeType::MpReachNlri,
                 mpReachValue(*attrs.mpReach, options));
  }
  if (attrs.mpUnreach) {
    addAttribute(list, kOptional, AttributeType::MpUnreachNlri,
                 mpUnreachValue(*attrs.mpUnreach, options));
  }
  list.insert(list.end(), attrs.other.begin(), attrs.other.end());
  std::stable_sort(list.begin(), list.end(),
                   [](const RawAttribute& a, const RawAttribute& b) { return a.type < b.type; });
  return list;
}

void writeAttribute(bytes::ByteWriter& out, const RawAttribute& a) {
  const bool extended = a.value.size() > 255;
  if (a.value.size() > 0xFFFF) {
    encodeInvariantFailed(
        fmt::format("{} value of {} bytes", describeAttribute(a.type), a.value.size()));
  }
  out.u8(static_cast<uint8_t>((a.flags & ~kExtendedLength) | (extended ? kExtendedLength : 0)));
  out.u8(a.type);
  if (extended) {
    out.u16(static_cast<uint16_t>(a.value.size()));
  } else {
    out.u8(static_cast<uint8_t>(a.value.size()));
  }
  out.bytes(a.value);
}

// Writes a 2-byte length, then whatever `body` writes, then patches the length.
template <typename Body>
void withLength16(bytes::ByteWriter& out, Body body) {
  const size_t at = out.size();
  out.u16(0);
  body();
  const size_t length = out.size() - at - 2;
  if (length > 0xFFFF) {
    encodeInvariantFailed("UPDATE field longer than 65535 bytes");
  }
  out.patchU16(at, static_cast<uint16_t>(length));
}

}  // namespace

void encodeUpdateBody(bytes::ByteWriter& out, const UpdateMessage& update,
                      const CodecOptions& options) {
  withLength16(out, [&] {
    writePrefixes(out, update.withdrawn, update.withdrawnPathIds, kIpv4Unicast, options);
  });
  withLength16(out, [&] {
    for (const auto& a : attributeList(update.attributes, options)) {
      writeAttribute(out, a);
    }
  });
  writePrefixes(out, update.nlri, update.nlriPathIds, kIpv4Unicast, options);
}

Result<DecodedMessage> decodeUpdateBody(std::span<const uint8_t> body,
                                        const CodecOptions& options) {
  return UpdateDecoder(options).decode(body);
}

}  // namespace vipd::bgp::internal
