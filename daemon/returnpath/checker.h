// The return-path check (issue 19): while a VIP is announced, packets sourced from it must get
// answers. A VIP whose route is perfect while the network drops everything it sends (an
// anti-spoof filter on the node's port, "pings from the node address, never answers from the
// VIP") is invisible to BGP; this sees it and, in enforce mode, withdraws that VIP.
//
// Each round (returnPath.interval), to each target (returnPath.targets, else every peer's
// address) of the VIP's family: one ICMP echo from the node's own address (the address the
// kernel picks for that target) and returnPath.flows echoes from the VIP, each with its own ICMP
// identifier (fabrics that hash on it spread them). The answers are judged after
// returnPath.timeout, or as soon as every echo of the round is answered (the verdict can no
// longer change), by ReturnPathJudge (judge.h): node answered and VIP not, while
// announced, is "unanswered"; nothing answered is "inconclusive" and never withdraws.
//
// Why a relay: the answer to a VIP-sourced echo is addressed to the VIP, so the fabric routes
// it to any node announcing the VIP (ECMP), not necessarily the one that asked; with Linux's
// default address-only hashing (fib_multipath_hash_policy=0) every node's answers land on the
// same node. So every vipd reads all ICMP echo replies (a raw socket, filtered to echo replies
// carrying vipd's echo data) and sends an answer to someone else's echo back to the sender:
// the echo data names the sender's node address and relay port (packet.h), and
// the relay is one UDP datagram over the node network, which the VIP's filter does not touch.
// A sender matches answers, direct or relayed, by a random 64-bit nonce per echo.
//
// Trust (issue 28): a target that does not route the VIP at all (a route reflector that installs
// no routes) answers the node and never the VIP, exactly like a filter. So a peer counts as
// evidence only once one of this node's own VIP-sourced echoes to it was answered (directly, or
// relayed with this node's nonce); never because of who sent an unmatched packet. Configured
// targets are trusted from the start. A target never trusted leaves the check inconclusive,
// reported in the status, never a withdraw.
//
// Whose silence (issue 28): with address-only ECMP hashing every node's answers land on one node,
// which relays them. When that node freezes or dies, every other node's answers stop at once,
// which looks exactly like each of them being filtered. So silence counts against this node only
// with evidence that it is this node's alone: answers from the same target to other nodes' echoes
// reached this node during the round, or a node that relayed this node's answers before (or that
// the fabric's view names as an announcer) answers a witness query (packet.h) saying
// answers from the target still reach it and it dropped none of this node's. No evidence, or a
// witness that dropped this node's answers for its relay budget (a flood), is inconclusive.
//
// Relays (relay_policy.h): only answers from configured peers and targets, addressed to a VIP,
// to a unicast address on a node network and the relay port, each nonce once, within a budget
// per sender; the rest are dropped and counted by reason.
//
// Needs CAP_NET_RAW for the raw sockets. Without it the check cannot run: status, /readyz (in
// enforce and warn modes) and vipd_return_path_available say so, and nothing is withdrawn.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

#include "bgp/message.h"
#include "config/config.h"
#include "daemon/base/logger.h"
#include "daemon/base/throttled_count.h"
#include "daemon/returnpath/judge.h"
#include "daemon/returnpath/relay_policy.h"
#include "daemon/returnpath/packet.h"

namespace vipd::daemon {

namespace asio = boost::asio;

class ReturnPathChecker {
 public:
  struct Hooks {
    // The VIPs to check now: those bound on their interface (a VIP that is not bound cannot be
    // a source address).
    std::function<std::set<bgp::Prefix>()> vips;
    // Whether `vip` is announced now (advertised to at least one Established peer).
    std::function<bool(const bgp::Prefix& vip)> announced;
    // Called when blocks() changed for some VIP; the owner re-computes its announcements.
    std::function<void()> onChange;
    // This node's interface addresses with their prefix lengths (VIPs included or not): the
    // node networks and this node's own addresses, for the relay policy. Read once a round.
    std::function<std::vector<bgp::Prefix>()> interfaceAddresses;
    // Node addresses of the other nodes the fabric holds a path from for `vip` (the fabric's
    // view), asked as witnesses besides the nodes that relayed this node's answers. May be unset.
    std::function<std::vector<bgp::IpAddress>(const bgp::Prefix& vip)> fabricAnnouncers;
  };

  // `peers` are the BGP peers' addresses, the default targets; `vips` every configured VIP.
  // `log` must outlive the checker.
  ReturnPathChecker(asio::io_context& io, const config::ReturnPath& settings,
                    std::vector<bgp::IpAddress> peers, std::vector<bgp::IpAddress> vips,
                    const Logger& log, Hooks hooks);
  ~ReturnPathChecker();
  ReturnPathChecker(const ReturnPathChecker&) = delete;
  ReturnPathChecker& operator=(const ReturnPathChecker&) = delete;

  // Opens the relay port and the raw sockets and starts the rounds. The relay port in use is an
  // error (one sentence naming returnPath.relayPort); missing CAP_NET_RAW is not: the check is
  // then unavailable (see above). Nothing in mode off. May be called again after stop().
  [[nodiscard]] tl::expected<void, std::string> start();
  // Closes the sockets, stops the rounds and forgets every verdict (the next start() judges
  // afresh: another instance may have run meanwhile).
  void stop();
  // A reload changed the settings this checker reads (by reference: the owner changes them
  // between stop() and this call) (issue 29): starts again with them if it was running, the
  // relay port's policy included. Verdicts start afresh, as after stop().
  [[nodiscard]] tl::expected<void, std::string> restart(bool wasRunning);
  // A reload changed the peers (the default targets) or the VIPs (issue 29). A VIP no longer
  // configured loses its verdict; every other VIP keeps its own; the next round uses the new
  // addresses.
  void setAddresses(std::vector<bgp::IpAddress> peers, std::vector<bgp::IpAddress> vips);
  bool running() const { return running_; }

  // Whether `vip` must not be announced now: enforce mode and its judge says broken.
  bool blocks(const bgp::Prefix& vip) const;
  // The readiness failure, if any: a broken VIP (enforce or warn), or the check unavailable.
  std::optional<std::string> readinessFailure() const;
  nlohmann::json status() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Pending {
    bgp::Prefix vip;  // for VIP-sourced echoes
    bgp::IpAddress target;
    EchoKind kind;
    bool answered = false;
    std::optional<bgp::IpAddress> relayedBy;  // the node whose relay brought the answer
  };
  struct VipCheck {
    ReturnPathJudge judge;
    bool announcedAtStart = false;
    std::string detail;  // what the last round saw, for status and logs
    // How this node's answers came back last: "direct", or relayed by these nodes.
    bool lastDirect = false;
    std::set<bgp::IpAddress> lastRelayers;
  };
  // A round whose verdict waits for witness answers (at most witnessWait()).
  struct Judging {
    struct Candidate {
      RoundOutcome outcome;
      std::set<bgp::IpAddress> targets;  // trusted targets that answered the node, not the VIP
      std::string detail;
    };
    std::map<bgp::Prefix, Candidate> candidates;
    std::map<bgp::Prefix, std::pair<RoundOutcome, std::string>> settled;
    struct Query {
      bgp::IpAddress witness;
      bgp::IpAddress target;
      bool answered = false;
      WitnessAnswer answer;
    };
    std::unordered_map<uint64_t, Query> queries;
  };
  class RawSocket;

  void startRound();
  void finishRound();
  // Ends the round at once when every echo sent in it has been answered.
  void finishIfAllAnswered();
  void sendEchoes(const std::set<bgp::Prefix>& vips);
  void onEchoReply(const EchoReply& reply);
  void onRelay(uint64_t nonce, const bgp::IpAddress& from);
  void onWitnessQuery(const WitnessQuery& query, const asio::ip::udp::endpoint& from);
  void onWitnessAnswer(const WitnessAnswer& answer, const bgp::IpAddress& from);
  void relay(const EchoReply& reply);
  void receiveRelays();
  void sendDatagram(std::span<const uint8_t> bytes, const bgp::IpAddress& to);
  void refreshRelayPolicy();
  // Sends witness queries for the round's candidates; records the round now if there are none.
  void askWitnesses();
  // Records every VIP's verdict of the round being judged (witness answers in, or time up).
  void recordRound();
  std::chrono::milliseconds witnessWait() const;
  std::vector<bgp::IpAddress> targets() const;
  bool trusted(const bgp::IpAddress& target) const;
  std::string reasonFor(const bgp::Prefix& vip, const VipCheck& check) const;
  VipCheck& checkFor(const bgp::Prefix& vip);
  void countDrop(RelayDrop drop, const EchoReply& reply);
  // "192.0.2.1, 192.0.2.2", for logs and status.
  static std::string describe(const std::set<bgp::IpAddress>& addresses);

  asio::io_context& io_;
  const config::ReturnPath& settings_;
  std::vector<bgp::IpAddress> peers_;
  std::vector<bgp::IpAddress> vipAddresses_;
  const Logger& log_;
  Hooks hooks_;
  std::unique_ptr<RawSocket> icmp4_;
  std::unique_ptr<RawSocket> icmp6_;
  // The raw sockets' read loops (each re-arms itself through a weak reference to its entry).
  std::vector<std::shared_ptr<std::function<void()>>> waits_;
  asio::ip::udp::socket relaySocket_;
  bool relayV6_ = false;  // the relay socket is IPv6 (dual-stack): IPv4 peers as v4-mapped
  std::array<uint8_t, 64> relayBuffer_{};
  asio::ip::udp::endpoint relaySender_;
  asio::steady_timer relayRetry_;
  ThrottledCount relayErrors_;
  asio::steady_timer roundTimer_;
  asio::steady_timer answerTimer_;
  asio::steady_timer witnessTimer_;
  bool running_ = false;
  bool roundOpen_ = false;  // echoes sent, verdicts not yet recorded
  Clock::time_point roundStart_{};
  std::optional<Judging> judging_;
  std::optional<std::string> unavailable_;
  std::unordered_map<uint64_t, Pending> pending_;
  std::map<bgp::Prefix, VipCheck> checks_;
  std::set<bgp::IpAddress> trusted_;  // targets that answered one of this node's VIP echoes
  uint16_t sequence_ = 0;
  uint16_t idBase_ = 0;
  RelayPolicy relayPolicy_;
  ThrottledCount dropLog_;
  std::map<RelayDrop, uint64_t> dropsSinceLog_;
  ThrottledCount sendErrors_;
  struct Counters {
    uint64_t rounds = 0;
    uint64_t nodeEchoes = 0;
    uint64_t nodeAnswered = 0;
    uint64_t vipEchoes = 0;
    uint64_t vipAnswered = 0;         // direct or relayed
    uint64_t vipAnsweredRelayed = 0;  // of which relayed by another node
    uint64_t relaysSent = 0;          // answers to other nodes' echoes sent back to them
    std::map<RelayDrop, uint64_t> relaysDropped;  // by reason
    uint64_t sendErrors = 0;
    uint64_t relayErrors = 0;         // receive errors on the relay port
    uint64_t witnessQueriesSent = 0;
    uint64_t witnessAnswersReceived = 0;
    uint64_t witnessQueriesAnswered = 0;  // other nodes' queries this node answered
    uint64_t witnessQueriesRefused = 0;   // not from a node network, or over the rate
    uint64_t silencesExplained = 0;   // silent rounds judged inconclusive for want of evidence
    uint64_t malformedReplies = 0;    // vipd's echo magic, but truncated or garbled
  } counters_;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace vipd::daemon
