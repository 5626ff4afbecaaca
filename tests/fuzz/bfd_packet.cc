// Fuzz target: BFD control packets (bfd::decode) and one bfd::Session fed what decodes.
//
// The whole input is first decoded as one datagram. Then it is read as a script, from byte 0:
// each op byte's low 3 bits say what happens next: 0 a datagram of 24 + (op >> 3) bytes follows
// (decoded; passed to onPacket() if it decodes); 1 the transmit timer fires; 2 the detection
// timer fires; 3 setIntervals() with the next two bytes (50 ms + 39 ms x byte); 4 adminDown();
// 5 start(); 6/7 nothing. Intervals stay in the range the config allows (50 ms..10 s): with a
// required min RX of 0 ("send me nothing") and a peer's desired min TX of 0 the detection time
// is 0, which the config's validation rules out. The session (local discriminator 1) is started
// first.
//
// Checks: a decoded packet re-encodes to a packet that decodes to the same value; every packet
// the session transmits passes decode() (what we send, a peer must accept); timers are armed
// with positive delays; the state, the transmit interval and the detection time stay sane.
#include <chrono>
#include <span>
#include <variant>

#include "bfd/bfd.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using namespace vipd::bfd;

std::optional<ControlPacket> decodeChecked(std::span<const uint8_t> datagram) {
  auto packet = decode(datagram);
  if (!packet) {
    VIPD_FUZZ_CHECK(!packet.error().empty(), "a rejection names its reason");
    return std::nullopt;
  }
  auto wire = encode(*packet);
  VIPD_FUZZ_CHECK(wire.size() == kControlPacketSize, "encode gives the 24-byte mandatory section");
  auto again = decode(wire);
  VIPD_FUZZ_CHECK(again.has_value() && *again == *packet, "decode(encode(decode(x))) == decode(x)");
  return *packet;
}

void checkSession(const Session& session, const Actions& actions) {
  VIPD_FUZZ_CHECK(session.state() <= State::Up, "state is valid");
  VIPD_FUZZ_CHECK(!stateName(session.state()).empty(), "every state has a name");
  VIPD_FUZZ_CHECK(session.transmitInterval().count() > 0, "transmit interval > 0");
  for (const auto& action : actions) {
    if (const auto* transmit = std::get_if<Transmit>(&action)) {
      auto wire = encode(transmit->packet);
      auto back = decode(wire);
      if (!back) {
        std::fprintf(stderr, "transmitted packet rejected: %s\n", back.error().c_str());
      }
      VIPD_FUZZ_CHECK(back.has_value() && *back == transmit->packet,
                      "every transmitted packet decodes");
      VIPD_FUZZ_CHECK(transmit->packet.myDiscriminator == session.localDiscriminator(),
                      "transmitted packets carry our discriminator");
    } else if (const auto* arm = std::get_if<ArmTransmit>(&action)) {
      VIPD_FUZZ_CHECK(arm->after.count() > 0, "the transmit timer is armed with a positive delay");
    } else if (const auto* arm = std::get_if<ArmDetect>(&action)) {
      VIPD_FUZZ_CHECK(arm->after.count() > 0, "the detection timer is armed with a positive delay");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> input(data, size);
  (void)decodeChecked(input);

  Session session(SessionConfig{.desiredMinTxInterval = std::chrono::milliseconds(300),
                                .requiredMinRxInterval = std::chrono::milliseconds(300),
                                .detectMult = 3,
                                .localDiscriminator = 1,
                                .jitterSeed = 7});
  checkSession(session, session.start());
  size_t offset = 0;
  while (offset < input.size()) {
    const uint8_t op = input[offset++];
    switch (op & 0x07) {
      case 0: {
        const size_t length =
            std::min<size_t>(kControlPacketSize + (op >> 3), input.size() - offset);
        auto packet = decodeChecked(input.subspan(offset, length));
        offset += length;
        if (packet) {
          checkSession(session, session.onPacket(*packet));
        }
        break;
      }
      case 1:
        checkSession(session, session.onTransmitTimer());
        break;
      case 2:
        checkSession(session, session.onDetectTimer());
        break;
      case 3: {
        if (input.size() - offset < 2) {
          offset = input.size();
          break;
        }
        const auto tx = std::chrono::milliseconds(50 + 39 * input[offset]);
        const auto rx = std::chrono::milliseconds(50 + 39 * input[offset + 1]);
        offset += 2;
        checkSession(session, session.setIntervals(tx, rx));
        break;
      }
      case 4:
        checkSession(session, session.adminDown());
        break;
      case 5:
        checkSession(session, session.start());
        break;
      default:
        break;
    }
  }
  return 0;
}
