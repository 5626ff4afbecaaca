// Fuzz target: the whole bgp::SessionFsm. It is started and connected, normally brought to
// Established with a valid OPEN and KEEPALIVE from the peer, and then fed the fuzz bytes through
// onBytes() in chunks whose sizes come from the input (fuzz_support.h Chunker). Whenever the
// session has failed (Idle), the ConnectRetry timer fires and it is brought up again (at most 4
// times), so input after an error keeps reaching an Established session.
//
// Byte 0, high nibble: bit 4 iBGP instead of eBGP; bit 5 the fuzz bytes start in OpenSent (they
// carry the peer's OPEN themselves); bit 6 the peer's OPEN has no 4-octet AS capability (2-octet
// AS_PATH afterwards); bit 7 graceful restart is configured. After the stream the hold and
// keepalive timers fire. The session always advertises ADD-PATH receive and watches the two
// prefixes it announces: a peer OPEN from the fuzz bytes (bit 5) that advertises ADD-PATH send
// makes the UPDATEs after it carry path identifiers.
//
// Checks after every event: the state is one of the six; every Send holds exactly one message
// that decodes (with the negotiated options) to the type it claims; nothing is sent after a
// Disconnect in one batch; a Disconnect leaves the session Idle with nothing advertised; an
// Established session has negotiated values within RFC 4271's rules (hold time 0 or >= 3 s,
// keepalive <= hold time) and ADD-PATH only in negotiated families; the watched paths are of
// watched prefixes only, at most kMaxPathsPerWatchedPrefix each, and none outside Established;
// at most one WatchedPathsChanged per event.
#include <algorithm>
#include <chrono>
#include <set>
#include <variant>

#include "bgp/session_fsm.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using namespace vipd::bgp;

constexpr uint32_t kLocalAsn = 65001;
constexpr uint32_t kPeerAsn = 65002;
constexpr uint32_t kOurRouterId = 0xC0000205;   // 192.0.2.5
constexpr uint32_t kPeerRouterId = 0xC0000209;  // 192.0.2.9
const Prefix kVip = *Prefix::parse("203.0.113.10/32");
const Prefix kVip6 = *Prefix::parse("2001:db8:ffff::10/128");

void checkActions(const SessionFsm& fsm, const Actions& actions) {
  const auto state = fsm.state();
  VIPD_FUZZ_CHECK(state >= SessionState::Idle && state <= SessionState::Established,
                  "state is valid");
  VIPD_FUZZ_CHECK(!sessionStateName(state).empty(), "every state has a name");
  const CodecOptions options{fsm.negotiated() ? fsm.negotiated()->fourOctetAs : true};
  bool disconnected = false;
  size_t watchedChanges = 0;
  for (const auto& action : actions) {
    watchedChanges += std::holds_alternative<WatchedPathsChanged>(action);
    if (const auto* send = std::get_if<Send>(&action)) {
      VIPD_FUZZ_CHECK(!disconnected, "nothing is sent after a Disconnect");
      // A batch can negotiate and fail again (OPEN, KEEPALIVE, UPDATEs sent, then a bad header),
      // so the options the UPDATEs were encoded with may be gone: one of the two must fit.
      auto decoded = decode(send->bytes, options);
      if (!decoded || decoded->handling != UpdateHandling::Normal) {
        decoded = decode(send->bytes, CodecOptions{!options.fourOctetAs});
      }
      if (!decoded) {
        std::fprintf(stderr, "sent message does not decode: %s\n", decoded.error().reason.c_str());
      }
      VIPD_FUZZ_CHECK(decoded.has_value(), "every message the FSM sends decodes");
      for (const auto& note : decoded->notes) {
        std::fprintf(stderr, "sent message needs RFC 7606: %s\n", note.c_str());
      }
      VIPD_FUZZ_CHECK(messageTypeOf(decoded->message) == send->type,
                      "a Send is of the type it claims");
      VIPD_FUZZ_CHECK(decoded->handling == UpdateHandling::Normal,
                      "what we send needs no RFC 7606");
    } else if (std::holds_alternative<Disconnect>(action)) {
      disconnected = true;
    } else if (const auto* arm = std::get_if<Arm>(&action)) {
      VIPD_FUZZ_CHECK(arm->after.count() >= 0, "timers are armed with a non-negative delay");
    }
  }
  if (disconnected) {
    VIPD_FUZZ_CHECK(state == SessionState::Idle, "a Disconnect leaves the session Idle");
  }
  VIPD_FUZZ_CHECK(watchedChanges <= 1, "at most one WatchedPathsChanged per event");
  for (const auto& [prefix, paths] : fsm.watchedPaths()) {
    VIPD_FUZZ_CHECK(prefix == kVip || prefix == kVip6, "only watched prefixes have paths");
    VIPD_FUZZ_CHECK(!paths.empty() && paths.size() <= kMaxPathsPerWatchedPrefix,
                    "a watched prefix has 1..kMaxPathsPerWatchedPrefix paths");
  }
  if (state != SessionState::Established) {
    VIPD_FUZZ_CHECK(fsm.advertised().empty(),
                    "only an Established session has advertised prefixes");
    VIPD_FUZZ_CHECK(fsm.watchedPaths().empty(), "only an Established session has watched paths");
  } else {
    VIPD_FUZZ_CHECK(fsm.negotiated().has_value(), "an Established session has negotiated values");
    const auto& n = *fsm.negotiated();
    VIPD_FUZZ_CHECK(n.holdTime.count() == 0 || n.holdTime.count() >= 3, "hold time is 0 or >= 3 s");
    VIPD_FUZZ_CHECK(n.keepaliveTime <= n.holdTime, "keepalive time <= hold time");
    for (const auto& family : n.addPathReceive) {
      VIPD_FUZZ_CHECK(std::find(n.families.begin(), n.families.end(), family) != n.families.end(),
                      "ADD-PATH only in negotiated families");
    }
  }
}

OpenMessage peerOpen(uint32_t asn, bool fourOctetAs) {
  OpenMessage open;
  open.myAs = static_cast<uint16_t>(asn);
  open.holdTimeSeconds = 90;
  open.bgpIdentifier = kPeerRouterId;
  open.capabilities.multiprotocol = {kIpv4Unicast, kIpv6Unicast};
  if (fourOctetAs) {
    open.capabilities.fourOctetAs = asn;
  }
  open.capabilities.routeRefresh = true;
  return open;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const uint8_t mode = size > 0 ? static_cast<uint8_t>(data[0] >> 4) : 0;
  const bool ibgp = (mode & 0x1) != 0;
  const bool fuzzOpen = (mode & 0x2) != 0;
  const bool peerFourOctetAs = (mode & 0x4) == 0;
  const bool gracefulRestart = (mode & 0x8) != 0;

  SessionConfig config;
  config.localAsn = kLocalAsn;
  config.peerAsn = ibgp ? kLocalAsn : kPeerAsn;
  config.routerId = kOurRouterId;
  config.families = {kIpv4Unicast, kIpv6Unicast};
  config.outbound.ebgp = !ibgp;
  config.outbound.localAsn = kLocalAsn;
  config.outbound.nextHopV6 = IpAddress::parse("2001:db8::5");
  config.outbound.communities = {(65001u << 16) | 42};
  config.outbound.largeCommunities = {LargeCommunity{65001, 1, 2}};
  config.jitterSeed = 7;
  config.addPathReceive = {kIpv4Unicast, kIpv6Unicast};
  config.watchedPrefixes = {kVip, kVip6};
  if (gracefulRestart) {
    config.gracefulRestartTime = std::chrono::seconds(3);
  }
  SessionFsm fsm(config);
  const auto local = *IpAddress::parse("198.51.100.5");
  std::vector<uint8_t> peerHello = encode(peerOpen(config.peerAsn, peerFourOctetAs));
  auto keepalive = encode(KeepaliveMessage{});
  peerHello.insert(peerHello.end(), keepalive.begin(), keepalive.end());

  auto run = [&](const Actions& actions) { checkActions(fsm, actions); };
  run(fsm.setAnnouncements({kVip, kVip6}));
  run(fsm.start());
  run(fsm.onConnected(local));
  VIPD_FUZZ_CHECK(fsm.state() == SessionState::OpenSent, "connected: OpenSent");
  if (!fuzzOpen) {
    run(fsm.onBytes(peerHello));
    VIPD_FUZZ_CHECK(fsm.state() == SessionState::Established,
                    "a valid OPEN and KEEPALIVE establish");
  }

  int reconnects = 0;
  vipd::fuzz::Chunker chunker(data, size);
  chunker.forEachChunk([&](std::span<const uint8_t> chunk) {
    if (fsm.state() == SessionState::Idle && reconnects < 4) {
      ++reconnects;
      run(fsm.onTimer(TimerKind::ConnectRetry));
      run(fsm.onConnected(local));
      run(fsm.onBytes(peerHello));
    }
    run(fsm.onBytes(chunk));
  });
  run(fsm.onTimer(TimerKind::Keepalive));
  run(fsm.onTimer(TimerKind::Hold));
  run(fsm.onClosed("fuzz input ended"));
  return 0;
}
