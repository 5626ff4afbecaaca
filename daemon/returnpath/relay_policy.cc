#include "daemon/returnpath/relay_policy.h"

#include <algorithm>

namespace vipd::daemon {

std::string_view relayDropName(RelayDrop drop) {
  switch (drop) {
    case RelayDrop::None:
      return "none";
    case RelayDrop::Source:
      return "source";
    case RelayDrop::Destination:
      return "destination";
    case RelayDrop::RelayAddress:
      return "relay_address";
    case RelayDrop::RelayPort:
      return "relay_port";
    case RelayDrop::Duplicate:
      return "duplicate";
    case RelayDrop::Budget:
      return "budget";
  }
  return "unknown";
}

bool unicastNodeAddress(const bgp::IpAddress& a) {
  if (a.isZero()) {
    return false;
  }
  if (a.isV4()) {
    const uint8_t first = a.bytes[0];
    const bool loopback = first == 127;
    const bool thisNetwork = first == 0;
    const bool linkLocal = first == 169 && a.bytes[1] == 254;
    const bool multicastOrReserved = first >= 224;  // 224/4 multicast, 240/4 and 255.255.255.255
    return !loopback && !thisNetwork && !linkLocal && !multicastOrReserved;
  }
  const bool multicast = a.bytes[0] == 0xff;
  const bool loopback =
      std::all_of(a.bytes.begin(), a.bytes.begin() + 15, [](uint8_t b) { return b == 0; }) &&
      a.bytes[15] == 1;
  const bool v4Mapped =
      std::all_of(a.bytes.begin(), a.bytes.begin() + 10, [](uint8_t b) { return b == 0; }) &&
      a.bytes[10] == 0xff && a.bytes[11] == 0xff;
  return !multicast && !loopback && !v4Mapped && !a.isLinkLocalV6();
}

RelayPolicy::RelayPolicy(uint16_t relayPort, Limits limits)
    : relayPort_(relayPort), limits_(limits) {}

bool RelayPolicy::relayDestination(const bgp::IpAddress& address) const {
  if (!unicastNodeAddress(address) || node_.vips.count(address) != 0 ||
      node_.own.count(address) != 0) {
    return false;
  }
  return std::any_of(node_.networks.begin(), node_.networks.end(), [&](const bgp::Prefix& n) {
    if (!n.contains(address)) {
      return false;
    }
    // The directed broadcast of an IPv4 network (all host bits set) is no node's address.
    if (address.isV4() && n.length < 31) {
      const uint32_t host = address.v4Value() & (n.length == 0 ? ~0u : (~0u >> n.length));
      return host != (n.length == 0 ? ~0u : (~0u >> n.length)) && host != 0;
    }
    return true;
  });
}

void RelayPolicy::note(std::map<bgp::IpAddress, std::deque<Clock::time_point>>& ledger,
                       const bgp::IpAddress& key, Clock::time_point now, size_t cap) {
  auto& times = ledger[key];
  times.push_back(now);
  while (times.size() > cap) {
    times.pop_front();
  }
}

uint32_t RelayPolicy::countSince(
    const std::map<bgp::IpAddress, std::deque<Clock::time_point>>& ledger,
    const bgp::IpAddress& key, Clock::time_point since) {
  auto it = ledger.find(key);
  if (it == ledger.end()) {
    return 0;
  }
  return static_cast<uint32_t>(std::count_if(it->second.begin(), it->second.end(),
                                             [&](Clock::time_point t) { return t >= since; }));
}

bool RelayPolicy::spend(std::map<bgp::IpAddress, Bucket>& buckets, const bgp::IpAddress& key,
                        double perSecond, double burst, Clock::time_point now) {
  auto it = buckets.find(key);
  if (it == buckets.end()) {
    if (buckets.size() >= limits_.maxSenders) {
      // Forget the fullest bucket (the longest idle): it costs its owner nothing, since a
      // new bucket starts full.
      auto idlest = std::min_element(buckets.begin(), buckets.end(), [](auto& a, auto& b) {
        return a.second.refilled < b.second.refilled;
      });
      buckets.erase(idlest);
    }
    it = buckets.emplace(key, Bucket{burst, now}).first;
  }
  auto& b = it->second;
  const double elapsed = std::chrono::duration<double>(now - b.refilled).count();
  b.tokens = std::min(burst, b.tokens + std::max(0.0, elapsed) * perSecond);
  b.refilled = now;
  if (b.tokens < 1.0) {
    return false;
  }
  b.tokens -= 1.0;
  return true;
}

void RelayPolicy::expire(Clock::time_point now) {
  const auto horizon = now - limits_.ledgerWindow;
  for (auto* ledger : {&answersFrom_, &othersFrom_, &droppedFor_}) {
    for (auto it = ledger->begin(); it != ledger->end();) {
      auto& times = it->second;
      while (!times.empty() && times.front() < horizon) {
        times.pop_front();
      }
      it = times.empty() ? ledger->erase(it) : std::next(it);
    }
  }
}

RelayDrop RelayPolicy::judge(const EchoReply& reply, Clock::time_point now) {
  expire(now);
  if (node_.sources.count(reply.from) == 0) {
    return RelayDrop::Source;
  }
  if (node_.vips.count(reply.to) == 0) {
    return RelayDrop::Destination;
  }
  if (node_.own.count(reply.data.relayAddress) != 0) {
    // This node's own echo, answered after its round ended: no evidence of anything.
    return RelayDrop::RelayAddress;
  }
  // A target answered a VIP-sourced echo and the fabric delivered the answer here: true
  // whatever becomes of the relay.
  note(answersFrom_, reply.from, now, limits_.ledgerPerKey);
  note(othersFrom_, reply.from, now, limits_.ledgerPerKey);
  if (!relayDestination(reply.data.relayAddress)) {
    return RelayDrop::RelayAddress;
  }
  if (reply.data.relayPort != relayPort_) {
    return RelayDrop::RelayPort;
  }
  if (relayed_.count(reply.data.nonce) != 0) {
    return RelayDrop::Duplicate;
  }
  if (!spend(budgets_, reply.data.relayAddress, limits_.perSecond, limits_.burst, now)) {
    note(droppedFor_, reply.data.relayAddress, now, limits_.ledgerPerKey);
    return RelayDrop::Budget;
  }
  relayed_.insert(reply.data.nonce);
  relayedOrder_.push_back(reply.data.nonce);
  while (relayedOrder_.size() > limits_.recentNonces) {
    relayed_.erase(relayedOrder_.front());
    relayedOrder_.pop_front();
  }
  return RelayDrop::None;
}

void RelayPolicy::noteOwnAnswer(const bgp::IpAddress& target, Clock::time_point now) {
  expire(now);
  note(answersFrom_, target, now, limits_.ledgerPerKey);
}

bool RelayPolicy::mayAnswerWitness(const bgp::IpAddress& querier, Clock::time_point now) {
  if (!relayDestination(querier)) {
    return false;
  }
  const double rate = limits_.witnessAnswersPerSecond;
  return spend(witnessBudgets_, querier, rate, rate, now);
}

WitnessAnswer RelayPolicy::witness(const WitnessQuery& query, const bgp::IpAddress& querier,
                                   Clock::time_point now) const {
  const auto window = std::min<std::chrono::milliseconds>(std::chrono::milliseconds(query.windowMs),
                                                          limits_.ledgerWindow);
  const auto since = now - window;
  return WitnessAnswer{query.nonce, countSince(answersFrom_, query.target, since),
                       countSince(droppedFor_, querier, since)};
}

uint32_t RelayPolicy::othersAnswersSince(const bgp::IpAddress& target,
                                         Clock::time_point since) const {
  return countSince(othersFrom_, target, since);
}

}  // namespace vipd::daemon
