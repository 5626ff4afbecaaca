// Fuzz target: an UPDATE body (withdrawn routes, path attributes including MP_REACH_NLRI and
// MP_UNREACH_NLRI, NLRI; RFC 4271 4.3, RFC 4760, RFC 7606 handling), decoded without and with
// RFC 7911 path identifiers; the target adds the header, so every input reaches the UPDATE
// decoder. Checks as bgp_message, and the path identifiers match the prefixes.
#include "tests/fuzz/bgp_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto wire =
      vipd::fuzz::withHeader(vipd::bgp::MessageType::Update, std::span<const uint8_t>(data, size));
  vipd::fuzz::checkMessage(wire);
  return 0;
}
