// Fuzz target: an OPEN body (version, AS, hold time, identifier, optional parameters and
// capabilities, RFC 4271 4.2 / RFC 5492); the target adds the header, so every input reaches
// the OPEN decoder. Checks as bgp_message.
#include "tests/fuzz/bgp_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto wire =
      vipd::fuzz::withHeader(vipd::bgp::MessageType::Open, std::span<const uint8_t>(data, size));
  vipd::fuzz::checkMessage(wire);
  return 0;
}
