// Fuzz target: one whole BGP message (any type, header included) through bgp::decode(), with
// and without 4-octet AS, with and without ADD-PATH path identifiers. Checks: errors are sendable
// NOTIFICATIONs; a decoded message re-encodes to the same value; the framer accepts what decode()
// accepts. Seeds: every message type, from the unit test vectors and the peer captures in
// tests/data/captures.
#include "tests/fuzz/bgp_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  vipd::fuzz::checkMessage(std::span<const uint8_t>(data, size));
  return 0;
}
