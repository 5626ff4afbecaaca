// Fuzz target: what the return path's relay port reads (daemon/returnpath/packet.h), dispatched
// as ReturnPathChecker::receiveRelays() does: parseRelay(), then parseWitnessQuery(), then
// parseWitnessAnswer(). Any host that reaches the port can send these: they are untrusted.
//
// Input: the datagram, as it is.
//
// Checks: at most one of the three accepts a datagram (the checker tries them in order, so an
// overlap would hide one kind behind another), and each format has no slack: what a parser
// accepts is byte for byte what build{Relay,WitnessQuery,WitnessAnswer}() makes of the parsed
// value, so nothing in an accepted datagram goes unread.
#include <algorithm>
#include <cstdint>
#include <span>

#include "daemon/returnpath/packet.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

template <typename Wire>
bool same(const Wire& wire, std::span<const uint8_t> datagram) {
  return wire.size() == datagram.size() && std::equal(wire.begin(), wire.end(), datagram.begin());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace vipd::daemon;
  std::span<const uint8_t> datagram(data, size);
  const auto relay = parseRelay(datagram);
  const auto query = parseWitnessQuery(datagram);
  const auto answer = parseWitnessAnswer(datagram);
  VIPD_FUZZ_CHECK(int{relay.has_value()} + int{query.has_value()} + int{answer.has_value()} <= 1,
                  "a datagram is one kind of message at most");
  if (relay) {
    VIPD_FUZZ_CHECK(same(buildRelay(*relay), datagram), "an accepted relay rebuilds exactly");
  }
  if (query) {
    VIPD_FUZZ_CHECK(query->target.isV4() || query->target.isV6(), "the target has a family");
    VIPD_FUZZ_CHECK(same(buildWitnessQuery(*query), datagram),
                    "an accepted witness query rebuilds exactly");
  }
  if (answer) {
    VIPD_FUZZ_CHECK(same(buildWitnessAnswer(*answer), datagram),
                    "an accepted witness answer rebuilds exactly");
  }
  return 0;
}
