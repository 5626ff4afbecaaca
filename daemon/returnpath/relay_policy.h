// Which answers to other nodes' echoes this node relays, and what it tells a sender that asks
// whether answers still reach it (issue 28): pure, no sockets; time comes in as arguments.
//
// An echo reply carrying vipd's echo layout is a packet anyone on the node network can forge,
// and the relay is a UDP datagram this node sends from its own address to where the packet says.
// So a VIP-sourced answer that matches no echo of ours is relayed only when:
//   - it comes from a configured peer or return-path target (who else would a sender ask?);
//   - it is addressed to one of this node's VIPs (the answer to a VIP-sourced echo is);
//   - the relay address is a unicast address on a node network (the connected prefixes the
//     peers are reached over, or returnPath.relayNetworks), and none of this node's own
//     addresses or VIPs; never multicast, broadcast, loopback, link-local or unspecified;
//   - the relay port is returnPath.relayPort (the same on every node);
//   - its nonce was not relayed already;
//   - the sender it names has budget left: a token bucket per sender (relay address), so one
//     flood spends only the budget of the sender it names, never everyone's.
// Everything else is dropped and counted by reason.
//
// The ledger half: every answer that passed the source and destination checks (a target did
// answer a VIP-sourced echo and the fabric delivered it here) is noted per target, and every
// answer dropped for a sender's budget per sender, so that a witness query ("do answers from T
// still reach you?") gets a truthful answer over the window it names.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "bgp/ip_address.h"
#include "daemon/returnpath/packet.h"

namespace vipd::daemon {

enum class RelayDrop {
  None,          // relay it
  Source,        // the answer does not come from a configured peer or target
  Destination,   // the answer is not addressed to one of this node's VIPs
  RelayAddress,  // the relay address is not a unicast address on a node network
  RelayPort,     // the relay port is not returnPath.relayPort
  Duplicate,     // this nonce was relayed already
  Budget,        // the sender it names has spent its relay budget
};
// "source", "destination", "relay_address", "relay_port", "duplicate", "budget" (metric labels).
std::string_view relayDropName(RelayDrop drop);
inline constexpr RelayDrop kRelayDrops[] = {RelayDrop::Source,    RelayDrop::Destination,
                                            RelayDrop::RelayAddress, RelayDrop::RelayPort,
                                            RelayDrop::Duplicate, RelayDrop::Budget};

// Whether `address` could be a node's unicast address at all: not multicast, limited broadcast,
// loopback, link-local, unspecified or IPv4-mapped.
bool unicastNodeAddress(const bgp::IpAddress& address);

class RelayPolicy {
 public:
  using Clock = std::chrono::steady_clock;
  struct Limits {
    uint32_t burst = 64;        // answers a sender may have relayed at once
    uint32_t perSecond = 32;    // refill: ~16 per round at the default 4 flows x 2 s is plenty
    size_t maxSenders = 256;    // buckets kept; idle ones are forgotten first
    size_t recentNonces = 4096;
    std::chrono::seconds ledgerWindow{30};  // the longest window a witness query may ask about
    size_t ledgerPerKey = 256;
    uint32_t witnessAnswersPerSecond = 20;  // per querier
  };

  explicit RelayPolicy(uint16_t relayPort) : RelayPolicy(relayPort, Limits{}) {}
  RelayPolicy(uint16_t relayPort, Limits limits);

  // What this node is (re-read every round by the checker; forgetting nothing else).
  struct Node {
    std::set<bgp::IpAddress> sources;      // configured peers and return-path targets
    std::set<bgp::IpAddress> vips;         // this node's VIP addresses
    std::set<bgp::IpAddress> own;          // this node's other addresses
    std::vector<bgp::Prefix> networks;     // node networks: where relays may go
  };
  void setNode(Node node) { node_ = std::move(node); }
  const Node& node() const { return node_; }

  // An answer to someone else's VIP-sourced echo arrived: relay it (RelayDrop::None) or not.
  // Notes it in the ledger when it passed the source and destination checks.
  RelayDrop judge(const EchoReply& reply, Clock::time_point now);
  // An answer to one of this node's own VIP-sourced echoes arrived directly: noted in the ledger
  // (this node is where the fabric delivers answers from that target).
  void noteOwnAnswer(const bgp::IpAddress& target, Clock::time_point now);

  // Whether `querier` may have a witness query answered now: an address on a node network
  // (never the VIPs, never this node) within its answer rate.
  bool mayAnswerWitness(const bgp::IpAddress& querier, Clock::time_point now);
  // The truthful answer to `query` from `querier`: answers from the target noted within the
  // window (capped at ledgerWindow), and answers for `querier` dropped for its budget.
  WitnessAnswer witness(const WitnessQuery& query, const bgp::IpAddress& querier,
                        Clock::time_point now) const;
  // Answers from `target` to other nodes' echoes noted since `since` (for this node's own
  // judgement: other nodes' answers reach this node while its own do not). This node's own
  // answers are not counted: an earlier round's own answer proves nothing about this one.
  uint32_t othersAnswersSince(const bgp::IpAddress& target, Clock::time_point since) const;

  // Whether `address` is one a relay may be sent to (see above).
  bool relayDestination(const bgp::IpAddress& address) const;

 private:
  struct Bucket {
    double tokens = 0;
    Clock::time_point refilled{};
  };
  static void note(std::map<bgp::IpAddress, std::deque<Clock::time_point>>& ledger,
                   const bgp::IpAddress& key, Clock::time_point now, size_t cap);
  static uint32_t countSince(const std::map<bgp::IpAddress, std::deque<Clock::time_point>>& ledger,
                             const bgp::IpAddress& key, Clock::time_point since);
  bool spend(std::map<bgp::IpAddress, Bucket>& buckets, const bgp::IpAddress& key,
             double perSecond, double burst, Clock::time_point now);
  void expire(Clock::time_point now);

  uint16_t relayPort_;
  Limits limits_;
  Node node_;
  std::map<bgp::IpAddress, Bucket> budgets_;         // per sender
  std::map<bgp::IpAddress, Bucket> witnessBudgets_;  // per querier
  std::unordered_set<uint64_t> relayed_;
  std::deque<uint64_t> relayedOrder_;
  std::map<bgp::IpAddress, std::deque<Clock::time_point>> answersFrom_;  // per target, all
  std::map<bgp::IpAddress, std::deque<Clock::time_point>> othersFrom_;   // per target, others'
  std::map<bgp::IpAddress, std::deque<Clock::time_point>> droppedFor_;   // per sender
};

}  // namespace vipd::daemon
