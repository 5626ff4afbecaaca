#include "daemon/returnpath/packet.h"

#include <algorithm>
#include <cstring>

#include "bytes/big_endian.h"

namespace vipd::daemon {
namespace {

constexpr std::array<uint8_t, 6> kEchoMagic{'v', 'i', 'p', 'd', 'R', 'P'};
constexpr std::array<uint8_t, 6> kRelayMagic{'v', 'i', 'p', 'd', 'R', 'R'};
constexpr std::array<uint8_t, 6> kWitnessMagic{'v', 'i', 'p', 'd', 'R', 'W'};
constexpr uint8_t kWitnessQueryType = 1;
constexpr uint8_t kWitnessAnswerType = 2;
constexpr uint8_t kIcmpV4EchoReply = 0;
constexpr uint8_t kIcmpV4EchoRequest = 8;
constexpr uint8_t kIcmpV6EchoRequest = 128;
constexpr uint8_t kIcmpV6EchoReply = 129;
constexpr uint8_t kIpProtocolIcmp = 1;
constexpr size_t kIcmpHeaderSize = 8;

// The witness messages' common header: magic, version, type, nonce. nullopt when `datagram` is
// not of `size` bytes with this header and `type`.
std::optional<uint64_t> witnessNonce(std::span<const uint8_t> datagram, size_t size,
                                     uint8_t type) {
  if (datagram.size() != size ||
      !std::equal(kWitnessMagic.begin(), kWitnessMagic.end(), datagram.begin()) ||
      datagram[6] != kEchoVersion || datagram[7] != type) {
    return std::nullopt;
  }
  return bytes::load64(datagram, 8);
}

std::vector<uint8_t> buildEcho(uint8_t type, uint16_t id, uint16_t sequence,
                               const EchoData& data) {
  bytes::ByteWriter out;
  out.u8(type);
  out.u8(0);   // code
  out.u16(0);  // checksum, below
  out.u16(id);
  out.u16(sequence);
  out.bytes(kEchoMagic);
  out.u8(kEchoVersion);
  out.u8(static_cast<uint8_t>(data.kind));
  out.u64(data.nonce);
  out.u8(data.relayAddress.isV4() ? 4 : 6);
  out.u8(0);
  out.u16(data.relayPort);
  std::array<uint8_t, 16> address{};
  std::copy_n(data.relayAddress.bytes.begin(), data.relayAddress.size(), address.begin());
  out.bytes(address);
  return std::move(out).take();
}

// The echo reply's identifier and data, from the ICMP message (header included).
std::optional<std::pair<uint16_t, EchoData>> parseEcho(std::span<const uint8_t> icmp,
                                                        uint8_t replyType) {
  if (icmp.size() < kIcmpHeaderSize + kEchoDataSize || icmp[0] != replyType || icmp[1] != 0) {
    return std::nullopt;
  }
  auto d = icmp.subspan(kIcmpHeaderSize);
  if (!std::equal(kEchoMagic.begin(), kEchoMagic.end(), d.begin()) || d[6] != kEchoVersion) {
    return std::nullopt;
  }
  EchoData data;
  if (d[7] == static_cast<uint8_t>(EchoKind::NodeSourced)) {
    data.kind = EchoKind::NodeSourced;
  } else if (d[7] == static_cast<uint8_t>(EchoKind::VipSourced)) {
    data.kind = EchoKind::VipSourced;
  } else {
    return std::nullopt;
  }
  data.nonce = bytes::load64(d, 8);
  const uint8_t family = d[16];
  data.relayPort = bytes::load16(d, 18);
  if (family == 4) {
    // The padding after an IPv4 address is zero in every echo we send (as in a witness query):
    // anything else is garbled or forged, and would make two different echoes parse the same.
    if (std::any_of(d.begin() + 24, d.begin() + kEchoDataSize, [](uint8_t b) { return b != 0; })) {
      return std::nullopt;
    }
    data.relayAddress = bgp::IpAddress::v4({d[20], d[21], d[22], d[23]});
  } else if (family == 6) {
    std::array<uint8_t, 16> bytes{};
    std::copy_n(d.begin() + 20, 16, bytes.begin());
    data.relayAddress = bgp::IpAddress::v6(bytes);
  } else {
    return std::nullopt;
  }
  if (d[17] != 0 || data.relayPort == 0) {
    return std::nullopt;
  }
  return std::make_pair(bytes::load16(icmp, 4), data);
}

}  // namespace

uint16_t internetChecksum(std::span<const uint8_t> bytes) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < bytes.size(); i += 2) {
    sum += static_cast<uint32_t>((bytes[i] << 8) | bytes[i + 1]);
  }
  if (bytes.size() % 2 == 1) {
    sum += static_cast<uint32_t>(bytes.back() << 8);
  }
  while (sum >> 16) {
    sum = (sum & 0xFFFF) + (sum >> 16);
  }
  return static_cast<uint16_t>(~sum);
}

std::vector<uint8_t> buildEchoRequestV4(uint16_t id, uint16_t sequence, const EchoData& data) {
  auto out = buildEcho(kIcmpV4EchoRequest, id, sequence, data);
  const uint16_t sum = internetChecksum(out);
  bytes::store16(out, 2, sum);
  return out;
}

std::vector<uint8_t> buildEchoRequestV6(uint16_t id, uint16_t sequence, const EchoData& data) {
  return buildEcho(kIcmpV6EchoRequest, id, sequence, data);
}

std::optional<EchoReply> parseEchoReplyV4(std::span<const uint8_t> packet) {
  constexpr size_t kMinIpv4Header = 20;
  if (packet.size() < kMinIpv4Header || (packet[0] >> 4) != 4) {
    return std::nullopt;
  }
  const size_t headerSize = size_t{packet[0] & 0x0Fu} * 4;
  const size_t totalSize = bytes::load16(packet, 2);
  if (headerSize < kMinIpv4Header || totalSize < headerSize || totalSize > packet.size() ||
      packet[9] != kIpProtocolIcmp) {
    return std::nullopt;
  }
  auto icmp = packet.subspan(headerSize, totalSize - headerSize);
  if (internetChecksum(icmp) != 0) {
    return std::nullopt;
  }
  auto echo = parseEcho(icmp, kIcmpV4EchoReply);
  if (!echo) {
    return std::nullopt;
  }
  return EchoReply{bgp::IpAddress::v4({packet[12], packet[13], packet[14], packet[15]}),
                   bgp::IpAddress::v4({packet[16], packet[17], packet[18], packet[19]}),
                   echo->first, echo->second};
}

std::optional<EchoReply> parseEchoReplyV6(std::span<const uint8_t> message,
                                          const bgp::IpAddress& from, const bgp::IpAddress& to) {
  auto echo = parseEcho(message, kIcmpV6EchoReply);
  if (!echo) {
    return std::nullopt;
  }
  return EchoReply{from, to, echo->first, echo->second};
}

bool carriesEchoMagic(std::span<const uint8_t> packet, bool ipv4Header) {
  size_t icmp = 0;
  if (ipv4Header) {
    if (packet.empty()) {
      return false;
    }
    icmp = size_t{packet[0] & 0x0Fu} * 4;
  }
  const size_t magic = icmp + kIcmpHeaderSize;
  return packet.size() >= magic + kEchoMagic.size() &&
         std::equal(kEchoMagic.begin(), kEchoMagic.end(), packet.begin() + magic);
}

std::array<uint8_t, kRelaySize> buildRelay(uint64_t nonce) {
  std::array<uint8_t, kRelaySize> out{};
  std::copy(kRelayMagic.begin(), kRelayMagic.end(), out.begin());
  out[6] = kEchoVersion;
  bytes::store64(out, 8, nonce);
  return out;
}

std::optional<uint64_t> parseRelay(std::span<const uint8_t> datagram) {
  if (datagram.size() != kRelaySize ||
      !std::equal(kRelayMagic.begin(), kRelayMagic.end(), datagram.begin()) ||
      datagram[6] != kEchoVersion || datagram[7] != 0) {
    return std::nullopt;
  }
  return bytes::load64(datagram, 8);
}

std::array<uint8_t, kWitnessQuerySize> buildWitnessQuery(const WitnessQuery& query) {
  std::array<uint8_t, kWitnessQuerySize> out{};
  std::copy(kWitnessMagic.begin(), kWitnessMagic.end(), out.begin());
  out[6] = kEchoVersion;
  out[7] = kWitnessQueryType;
  bytes::store64(out, 8, query.nonce);
  bytes::store32(out, 16, query.windowMs);
  out[20] = query.target.isV4() ? 4 : 6;
  std::copy_n(query.target.bytes.begin(), query.target.size(), out.begin() + 24);
  return out;
}

std::array<uint8_t, kWitnessAnswerSize> buildWitnessAnswer(const WitnessAnswer& answer) {
  std::array<uint8_t, kWitnessAnswerSize> out{};
  std::copy(kWitnessMagic.begin(), kWitnessMagic.end(), out.begin());
  out[6] = kEchoVersion;
  out[7] = kWitnessAnswerType;
  bytes::store64(out, 8, answer.nonce);
  bytes::store32(out, 16, answer.answers);
  bytes::store32(out, 20, answer.dropped);
  return out;
}

std::optional<WitnessQuery> parseWitnessQuery(std::span<const uint8_t> datagram) {
  auto nonce = witnessNonce(datagram, kWitnessQuerySize, kWitnessQueryType);
  if (!nonce || datagram[21] != 0 || datagram[22] != 0 || datagram[23] != 0) {
    return std::nullopt;
  }
  WitnessQuery out{*nonce, bytes::load32(datagram, 16), {}};
  if (datagram[20] == 4) {
    if (std::any_of(datagram.begin() + 28, datagram.end(), [](uint8_t b) { return b != 0; })) {
      return std::nullopt;
    }
    out.target = bgp::IpAddress::v4({datagram[24], datagram[25], datagram[26], datagram[27]});
  } else if (datagram[20] == 6) {
    std::array<uint8_t, 16> bytes{};
    std::copy_n(datagram.begin() + 24, 16, bytes.begin());
    out.target = bgp::IpAddress::v6(bytes);
  } else {
    return std::nullopt;
  }
  return out;
}

std::optional<WitnessAnswer> parseWitnessAnswer(std::span<const uint8_t> datagram) {
  auto nonce = witnessNonce(datagram, kWitnessAnswerSize, kWitnessAnswerType);
  if (!nonce) {
    return std::nullopt;
  }
  return WitnessAnswer{*nonce, bytes::load32(datagram, 16), bytes::load32(datagram, 20)};
}

}  // namespace vipd::daemon
