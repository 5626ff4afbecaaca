// The BGP messages real peers sent, as tests/e2e/capture_peer_messages.py recorded them in
// tests/data/captures/<peer>.hex: read by peer_capture_test (each message checked) and
// robustness_test (mutation seeds). Test-only; needs VIPD_TEST_DATA.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bgp/codec_test_support.h"

namespace vipd::bgp::test {

// The captured peers, by file name.
inline const std::vector<std::string_view> kPeers{"bird2", "frr8", "gobgp3", "exabgp4"};

struct CapturedMessage {
  std::string label;  // the comment line naming it
  bool ibgp = false;
  int number = 0;  // "message N" within its session
  Bytes wire;
};

// "0a1b..." (lower-case hex, as the captures are written) as bytes; nullopt if it is not.
std::optional<Bytes> parseHex(std::string_view text);

// Reads <peer>.hex: each hex line is one message, named by the comment line just before it
// ("# bird2 ... ebgp (AS 65001 -> AS 65000) message 3: UPDATE ..."). A malformed line is a
// test failure (ADD_FAILURE), not an exception.
std::vector<CapturedMessage> loadCapture(std::string_view peer);

// Every captured message of every peer.
std::vector<Bytes> allCapturedMessages();

}  // namespace vipd::bgp::test
