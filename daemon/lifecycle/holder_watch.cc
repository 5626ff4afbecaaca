#include "daemon/lifecycle/holder_watch.h"

namespace vipd::daemon {

bool anyBgpSessionEstablished(const std::vector<TcpEntry>& table,
                              const std::vector<BgpPeerEndpoint>& peers) {
  constexpr uint16_t kBgpPort = 179;
  for (const auto& e : table) {
    if (e.state != kTcpEstablished) {
      continue;
    }
    for (const auto& p : peers) {
      if (e.remote == p.address && (e.remotePort == p.port || e.localPort == kBgpPort)) {
        return true;
      }
    }
  }
  return false;
}

bool HolderSilence::sample(bool established, Clock::time_point now) {
  const bool before = silent_;
  if (established || !since_) {
    // The first look counts as "seen now": a watcher that starts cannot know for how long.
    since_ = now;
  }
  silent_ = !established && now - *since_ > after_;
  return silent_ != before;
}

}  // namespace vipd::daemon
