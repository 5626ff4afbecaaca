// The return-path check (issue 19): while a VIP is announced, packets sourced from it must get
// answers. A VIP whose route is perfect while the network drops everything it sends (an
// anti-spoof filter on the node's port, "pings from the node address, never answers from the
// VIP") is invisible to BGP; this sees it and, in enforce mode, withdraws that VIP.
//
// Each round (returnPath.interval), to each target (returnPath.targets, else every peer's
// address) of the VIP's family: one ICMP echo from the node's own address (the address the
// kernel picks for that target) and returnPath.flows echoes from the VIP, each with its own ICMP
// identifier (fabrics that hash on it spread them). The answers are judged after
// returnPath.timeout, or as soon as every probe of the round is answered (the verdict can no
// longer change), by ReturnPathJudge (return_path_judge.h): node answered and VIP not, while
// announced, is "unanswered"; nothing answered is "inconclusive" and never withdraws.
//
// Why a relay: the answer to a VIP-sourced echo is addressed to the VIP, so the fabric routes
// it to any node announcing the VIP (ECMP), not necessarily the one that asked; with Linux's
// default address-only hashing (fib_multipath_hash_policy=0) every node's answers land on the
// same node. So every vipd reads all ICMP echo replies (a raw socket, filtered to echo replies
// carrying vipd's probe data) and sends an answer to someone else's probe back to the prober:
// the probe data names the prober's node address and relay port (return_path_packet.h), and
// the relay is one UDP datagram over the node network, which the VIP's filter does not touch.
// A prober matches answers, direct or relayed, by a random 64-bit nonce per probe.
//
// Trust: a target that does not route the VIP at all (a route reflector that installs no routes)
// answers the node and never the VIP, exactly like a filter. So a peer counts as evidence only
// once some VIP-sourced echo to it was answered (here or relayed); configured targets are
// trusted from the start. A target never trusted leaves the check inconclusive, reported in the
// status, never a withdraw.
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
#include <string>
#include <unordered_map>
#include <vector>

#include <boost/asio.hpp>
#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

#include "bgp/message.h"
#include "config/config.h"
#include "daemon/base/logger.h"
#include "daemon/base/throttled_count.h"
#include "daemon/returnpath/return_path_judge.h"
#include "daemon/returnpath/return_path_packet.h"

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
  };

  // `peers` are the BGP peers' addresses, the default targets. `log` must outlive the checker.
  ReturnPathChecker(asio::io_context& io, const config::ReturnPath& settings,
                    std::vector<bgp::IpAddress> peers, const Logger& log, Hooks hooks);
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

  // Whether `vip` must not be announced now: enforce mode and its judge says broken.
  bool blocks(const bgp::Prefix& vip) const;
  // The readiness failure, if any: a broken VIP (enforce or warn), or the check unavailable.
  std::optional<std::string> readinessFailure() const;
  nlohmann::json status() const;

 private:
  struct Pending {
    bgp::Prefix vip;  // for VIP-sourced probes
    bgp::IpAddress target;
    returnpath::ProbeKind kind;
    bool answered = false;
  };
  struct VipCheck {
    returnpath::ReturnPathJudge judge;
    bool announcedAtStart = false;
    std::string detail;  // what the last round saw, for status and logs
  };
  class RawSocket;

  void startRound();
  void finishRound();
  // Ends the round at once when every probe sent in it has been answered.
  void finishIfAllAnswered();
  void sendProbes(const std::set<bgp::Prefix>& vips);
  void onEchoReply(const returnpath::EchoReply& reply);
  void onRelay(uint64_t nonce);
  void relay(const returnpath::EchoReply& reply);
  void receiveRelays();
  std::vector<bgp::IpAddress> targets() const;
  bool trusted(const bgp::IpAddress& target) const;
  std::string reasonFor(const bgp::Prefix& vip, const VipCheck& check) const;
  VipCheck& checkFor(const bgp::Prefix& vip);

  asio::io_context& io_;
  const config::ReturnPath& settings_;
  std::vector<bgp::IpAddress> peers_;
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
  bool running_ = false;
  bool roundOpen_ = false;  // probes sent, verdicts not yet recorded
  std::optional<std::string> unavailable_;
  std::unordered_map<uint64_t, Pending> pending_;
  std::map<bgp::Prefix, VipCheck> checks_;
  std::set<bgp::IpAddress> trusted_;  // peers that answered a VIP-sourced echo
  uint16_t sequence_ = 0;
  uint16_t idBase_ = 0;
  // Relays sent per second, capped: a forged echo reply must not turn vipd into a reflector.
  std::chrono::steady_clock::time_point relayWindow_{};
  uint32_t relaysInWindow_ = 0;
  ThrottledCount sendErrors_;
  struct Counters {
    uint64_t rounds = 0;
    uint64_t nodeProbes = 0;
    uint64_t nodeAnswered = 0;
    uint64_t vipProbes = 0;
    uint64_t vipAnswered = 0;         // direct or relayed
    uint64_t vipAnsweredRelayed = 0;  // of which relayed by another node
    uint64_t relaysSent = 0;          // answers to other nodes' probes sent back to them
    uint64_t relaysDropped = 0;       // over the rate cap
    uint64_t sendErrors = 0;
    uint64_t relayErrors = 0;         // receive errors on the relay port
  } counters_;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace vipd::daemon
