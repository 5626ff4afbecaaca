// Fuzz target: what the return path's raw ICMP sockets read (daemon/returnpath/packet.h):
// parseEchoReplyV4() (the IPv4 header, then the ICMP message), parseEchoReplyV6() (the ICMPv6
// message alone) and carriesEchoMagic(), which counts what neither accepts but looks like vipd's.
// Any host on the path can send these, spoofed or not: they are untrusted.
//
// Input: byte 0 is a fix-up mask, the rest is the packet. A random input almost never has a
// valid IPv4 total length and ICMP checksum, so bit 0 sets the total length to the packet's size
// and bit 1 writes the checksum the ICMP message needs (after bit 0), letting the fuzzer reach
// the echo data; with neither bit the bytes go in as they are. The same bytes (without fix-ups)
// go to the IPv6 parser.
//
// Checks: whatever a parser accepts carries the echo magic (so nothing we answer to goes
// uncounted as malformed), carries back the fields it was read from (addresses, identifier), and
// is the echo vipd would have sent: rebuilt with buildEchoRequest{V4,V6}() from the parsed
// values, it is byte for byte the message read, bar type and checksum, up to the end of vipd's
// data (an echo data field may legally be longer).
#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "bytes/big_endian.h"
#include "daemon/returnpath/packet.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using namespace vipd::daemon;
using vipd::bgp::IpAddress;

constexpr size_t kIcmpHeaderSize = 8;
constexpr uint8_t kFixTotalLength = 0x01;
constexpr uint8_t kFixChecksum = 0x02;

// `message` (an ICMP echo reply with vipd data that a parser accepted) is what `rebuilt` (vipd's
// echo request for the values parsed from it) would be, ignoring the type and the checksum.
void checkRebuilds(std::span<const uint8_t> message, const std::vector<uint8_t>& rebuilt) {
  VIPD_FUZZ_CHECK(rebuilt.size() == kIcmpHeaderSize + kEchoDataSize, "an echo is 44 bytes");
  VIPD_FUZZ_CHECK(message.size() >= rebuilt.size(), "an accepted echo holds vipd's data whole");
  VIPD_FUZZ_CHECK(message[1] == rebuilt[1], "code");
  VIPD_FUZZ_CHECK(std::equal(rebuilt.begin() + 4, rebuilt.end(), message.begin() + 4),
                  "an accepted echo is the echo vipd sends for the values parsed from it");
}

void checkV4(std::span<const uint8_t> packet) {
  auto reply = parseEchoReplyV4(packet);
  if (!reply) {
    return;
  }
  VIPD_FUZZ_CHECK(carriesEchoMagic(packet, true), "an accepted IPv4 reply carries the magic");
  VIPD_FUZZ_CHECK(reply->from.isV4() && reply->to.isV4(), "IPv4 addresses");
  VIPD_FUZZ_CHECK(std::equal(packet.begin() + 12, packet.begin() + 16, reply->from.bytes.begin()),
                  "from is the IPv4 source");
  VIPD_FUZZ_CHECK(std::equal(packet.begin() + 16, packet.begin() + 20, reply->to.bytes.begin()),
                  "to is the IPv4 destination");
  const size_t headerSize = size_t{packet[0] & 0x0Fu} * 4;
  auto icmp = packet.subspan(headerSize, vipd::bytes::load16(packet, 2) - headerSize);
  VIPD_FUZZ_CHECK(internetChecksum(icmp) == 0, "an accepted reply's checksum holds");
  VIPD_FUZZ_CHECK(reply->id == vipd::bytes::load16(icmp, 4), "the identifier is read");
  checkRebuilds(icmp, buildEchoRequestV4(reply->id, vipd::bytes::load16(icmp, 6), reply->data));
}

void checkV6(std::span<const uint8_t> message) {
  const auto from = IpAddress::v6({0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1});
  const auto to = IpAddress::v6({0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2});
  auto reply = parseEchoReplyV6(message, from, to);
  if (!reply) {
    return;
  }
  VIPD_FUZZ_CHECK(carriesEchoMagic(message, false), "an accepted IPv6 reply carries the magic");
  VIPD_FUZZ_CHECK(reply->from == from && reply->to == to, "the addresses are recvmsg()'s");
  VIPD_FUZZ_CHECK(reply->id == vipd::bytes::load16(message, 4), "the identifier is read");
  checkRebuilds(message,
                buildEchoRequestV6(reply->id, vipd::bytes::load16(message, 6), reply->data));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  const uint8_t fixes = data[0];
  std::vector<uint8_t> packet(data + 1, data + size);

  // Untouched bytes first: the classifier and the IPv6 parser must take anything.
  (void)carriesEchoMagic(packet, true);
  (void)carriesEchoMagic(packet, false);
  checkV6(packet);

  if ((fixes & kFixTotalLength) && packet.size() >= 4 && packet.size() <= 0xFFFF) {
    vipd::bytes::store16(packet, 2, static_cast<uint16_t>(packet.size()));
  }
  if ((fixes & kFixChecksum) && !packet.empty()) {
    const size_t headerSize = size_t{packet[0] & 0x0Fu} * 4;
    const size_t total = packet.size() >= 4 ? vipd::bytes::load16(packet, 2) : 0;
    if (headerSize + kIcmpHeaderSize <= total && total <= packet.size()) {
      std::span<uint8_t> icmp(packet.data() + headerSize, total - headerSize);
      vipd::bytes::store16(icmp, 2, 0);
      vipd::bytes::store16(icmp, 2, internetChecksum(icmp));
    }
  }
  checkV4(packet);
  return 0;
}
