#include "daemon/returnpath/checker.h"

#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address_v4.hpp>
#include <boost/asio/ip/address_v6.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/duration.h"
#include "daemon/base/asio_address.h"
#include "daemon/base/port_bind_error.h"
#include "daemon/returnpath/raw_socket.h"

namespace vipd::daemon {
namespace {

using raw_socket::fromIn6;
using raw_socket::toSockaddr;

// Witnesses asked per VIP in a round: the nodes that relayed its answers and the fabric's
// announcers are a handful; a bound keeps a forged fabric view from turning into a flood.
constexpr size_t kMaxWitnesses = 8;

// A nonce from the kernel's random source (getrandom): 64 bits an off-path host cannot predict.
uint64_t randomNonce() {
  uint64_t out = 0;
  if (::getrandom(&out, sizeof(out), 0) == static_cast<ssize_t>(sizeof(out))) {
    return out;
  }
  std::random_device entropy;  // also the kernel's source on Linux; getrandom never fails there
  return (uint64_t{entropy()} << 32) | entropy();
}

// The network `address` lies in (the host bits cleared), for status and the relay policy.
bgp::Prefix networkOf(const bgp::Prefix& address) {
  bgp::Prefix out = address;
  for (size_t bit = address.length; bit < size_t{address.maxLength()}; ++bit) {
    out.address.bytes[bit / 8] &= static_cast<uint8_t>(~(0x80u >> (bit % 8)));
  }
  return out;
}

// The address the kernel would send from to reach `target`: this node's own address on the way
// there (a UDP connect sends nothing). nullopt when there is no route.
std::optional<bgp::IpAddress> kernelSourceFor(const bgp::IpAddress& target) {
  const int fd = ::socket(target.isV4() ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return std::nullopt;
  }
  socklen_t length = 0;
  auto to = toSockaddr(target, 9, length);
  std::optional<bgp::IpAddress> out;
  sockaddr_storage local{};
  socklen_t localLength = sizeof(local);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&to), length) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &localLength) == 0) {
    if (local.ss_family == AF_INET) {
      const auto* sin = reinterpret_cast<const sockaddr_in*>(&local);
      out = bgp::IpAddress::v4(ntohl(sin->sin_addr.s_addr));
    } else if (local.ss_family == AF_INET6) {
      out = fromIn6(reinterpret_cast<const sockaddr_in6*>(&local)->sin6_addr);
    }
  }
  ::close(fd);
  return out;
}

}  // namespace

ReturnPathChecker::ReturnPathChecker(asio::io_context& io, const config::ReturnPath& settings,
                                     std::vector<bgp::IpAddress> peers,
                                     std::vector<bgp::IpAddress> vips, const Logger& log,
                                     Hooks hooks)
    : io_(io),
      settings_(settings),
      peers_(std::move(peers)),
      vipAddresses_(std::move(vips)),
      log_(log),
      hooks_(std::move(hooks)),
      relaySocket_(io),
      relayRetry_(io),
      roundTimer_(io),
      answerTimer_(io),
      witnessTimer_(io),
      relayPolicy_(settings.relayPort) {}

ReturnPathChecker::~ReturnPathChecker() = default;

tl::expected<void, std::string> ReturnPathChecker::start() {
  if (settings_.mode == config::ReturnPath::Mode::Off || running_) {
    return {};
  }
  // The relay port: dual-stack where the kernel has IPv6, so one socket takes both families.
  boost::system::error_code ec;
  relaySocket_.open(asio::ip::udp::v6(), ec);
  relayV6_ = !ec;
  if (!ec) {
    relaySocket_.set_option(asio::ip::v6_only(false), ec);
    relaySocket_.bind({asio::ip::address_v6::any(), settings_.relayPort}, ec);
  } else {
    ec.clear();
    relaySocket_.open(asio::ip::udp::v4(), ec);
    if (!ec) {
      relaySocket_.bind({asio::ip::address_v4::any(), settings_.relayPort}, ec);
    }
  }
  if (ec) {
    relaySocket_.close();
    return tl::unexpected(portBindError(
        fmt::format("cannot receive return-path relays on UDP port {} (returnPath.relayPort)",
                    settings_.relayPort),
        settings_.relayPort, ec.value(), ec.message(),
        {.inUse = "another vipd (or another program) has it; choose another "
                  "returnPath.relayPort, the same on every node",
         .unprivilegedPort = "set returnPath.relayPort above 1023"}));
  }
  std::vector<std::string> problems;
  bool wantV4 = false;
  bool wantV6 = false;
  for (const auto& t : targets()) {
    (t.isV4() ? wantV4 : wantV6) = true;
  }
  auto openRaw = [&](bool v6) -> std::unique_ptr<RawSocket> {
    auto raw = RawSocket::open(io_, v6);
    if (!raw) {
      problems.push_back(fmt::format("cannot open a raw {} socket: {}{}", v6 ? "ICMPv6" : "ICMP",
                                     std::strerror(raw.error()),
                                     raw.error() == EPERM || raw.error() == EACCES
                                         ? " (vipd needs CAP_NET_RAW for the return-path check)"
                                         : ""));
      return nullptr;
    }
    return std::move(*raw);
  };
  // Opened even for a family without targets: this node may receive (and relay) answers to
  // other nodes' echoes of that family.
  icmp4_ = openRaw(false);
  icmp6_ = openRaw(true);
  if ((wantV4 && !icmp4_) || (wantV6 && !icmp6_) || (!icmp4_ && !icmp6_)) {
    unavailable_ = fmt::format("{}", fmt::join(problems, "; "));
    log_.error("return-path", "the return-path check cannot run: {}; nothing is withdrawn for "
               "it, and /readyz fails until it can", *unavailable_);
  } else {
    unavailable_.reset();
  }
  running_ = true;
  idBase_ = static_cast<uint16_t>(randomNonce());
  receiveRelays();
  for (RawSocket* raw : {icmp4_.get(), icmp6_.get()}) {
    if (raw == nullptr) {
      continue;
    }
    auto wait = std::make_shared<std::function<void()>>();
    std::weak_ptr<int> alive = alive_;
    *wait = [this, raw, alive, weakWait = std::weak_ptr(wait)] {
      if (alive.expired() || !running_) {
        return;
      }
      raw->readAvailable([this](const EchoReply& reply) { onEchoReply(reply); },
                         counters_.malformedReplies);
      if (auto again = weakWait.lock()) {
        raw->waitReadable(*again);
      }
    };
    waits_.push_back(wait);
    raw->waitReadable(*wait);
  }
  if (!unavailable_) {
    log_.info("return-path", "checking that VIP-sourced packets get answers: every {} to {} "
              "(mode {}; relays on UDP port {})",
              config::formatDuration(settings_.interval),
              settings_.targets.empty() ? std::string("each peer") : describe(std::set(
                  settings_.targets.begin(), settings_.targets.end())),
              config::returnPathModeName(settings_.mode), settings_.relayPort);
  }
  startRound();
  return {};
}

void ReturnPathChecker::stop() {
  if (!running_) {
    return;
  }
  running_ = false;
  roundOpen_ = false;
  roundTimer_.cancel();
  answerTimer_.cancel();
  witnessTimer_.cancel();
  judging_.reset();
  relayRetry_.cancel();
  boost::system::error_code ignored;
  relaySocket_.close(ignored);
  icmp4_.reset();
  icmp6_.reset();
  waits_.clear();
  pending_.clear();
  checks_.clear();
  trusted_.clear();
}

tl::expected<void, std::string> ReturnPathChecker::restart(bool wasRunning) {
  stop();
  relayPolicy_ = RelayPolicy(settings_.relayPort);
  if (!wasRunning) {
    return {};
  }
  return start();
}

void ReturnPathChecker::setAddresses(std::vector<bgp::IpAddress> peers,
                                     std::vector<bgp::IpAddress> vips) {
  peers_ = std::move(peers);
  vipAddresses_ = std::move(vips);
  for (auto it = checks_.begin(); it != checks_.end();) {
    const bool configured = std::find(vipAddresses_.begin(), vipAddresses_.end(),
                                      it->first.address) != vipAddresses_.end();
    it = configured ? std::next(it) : checks_.erase(it);
  }
}

std::vector<bgp::IpAddress> ReturnPathChecker::targets() const {
  return settings_.targets.empty() ? peers_ : settings_.targets;
}

bool ReturnPathChecker::trusted(const bgp::IpAddress& target) const {
  return !settings_.targets.empty() || trusted_.count(target) != 0;
}

ReturnPathChecker::VipCheck& ReturnPathChecker::checkFor(const bgp::Prefix& vip) {
  auto it = checks_.find(vip);
  if (it == checks_.end()) {
    it = checks_.emplace(vip, VipCheck{ReturnPathJudge(settings_.fall, settings_.rise),
                                       false, {}})
             .first;
  }
  return it->second;
}

void ReturnPathChecker::startRound() {
  if (!running_) {
    return;
  }
  roundTimer_.expires_after(settings_.interval);
  roundTimer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) {
      startRound();
    }
  });
  if (judging_) {
    recordRound();  // witnesses late beyond witnessWait(): judge without them
  }
  refreshRelayPolicy();
  if (unavailable_) {
    return;
  }
  auto vips = hooks_.vips();
  // A VIP no longer bound is no longer judged (and no longer held back by a verdict).
  bool dropped = false;
  for (auto it = checks_.begin(); it != checks_.end();) {
    if (vips.count(it->first) == 0) {
      dropped = dropped || it->second.judge.blocks();
      it = checks_.erase(it);
    } else {
      ++it;
    }
  }
  if (dropped) {
    hooks_.onChange();
  }
  if (vips.empty()) {
    return;
  }
  ++counters_.rounds;
  ++sequence_;
  pending_.clear();
  roundStart_ = Clock::now();
  for (const auto& vip : vips) {
    checkFor(vip).announcedAtStart = hooks_.announced(vip);
  }
  sendEchoes(vips);
  roundOpen_ = true;
  answerTimer_.expires_after(settings_.timeout);
  answerTimer_.async_wait([this, round = sequence_](const boost::system::error_code& ec) {
    // Not when the round already ended early (finishIfAllAnswered) and this expiry was queued
    // before the cancel reached it.
    if (!ec && roundOpen_ && round == sequence_) {
      finishRound();
    }
  });
}

void ReturnPathChecker::sendEchoes(const std::set<bgp::Prefix>& vips) {
  auto send = [&](RawSocket* raw, const bgp::IpAddress& source, const bgp::IpAddress& target,
                  uint16_t id, const EchoData& data) {
    if (raw == nullptr) {
      return false;
    }
    auto message = target.isV4() ? buildEchoRequestV4(id, sequence_, data)
                                 : buildEchoRequestV6(id, sequence_, data);
    if (int error = raw->send(message, source, target); error != 0) {
      ++counters_.sendErrors;
      if (auto n = sendErrors_.add(std::chrono::steady_clock::now())) {
        log_.warn("return-path", "cannot send an echo from {} to {}: {} ({} such error(s) in "
                  "the last 10s)", source.toString(), target.toString(), std::strerror(error), *n);
      }
      return false;
    }
    return true;
  };
  for (const auto& target : targets()) {
    RawSocket* raw = target.isV4() ? icmp4_.get() : icmp6_.get();
    auto source = kernelSourceFor(target);
    if (!source || std::any_of(vips.begin(), vips.end(), [&](const bgp::Prefix& v) {
          return v.address == *source;
        })) {
      continue;  // no route, or the kernel would send from a VIP: nothing to compare against
    }
    bool anyVip = false;
    for (const auto& vip : vips) {
      if (vip.address.family != target.family) {
        continue;
      }
      anyVip = true;
      for (uint32_t flow = 0; flow < settings_.flows; ++flow) {
        EchoData data{EchoKind::VipSourced, randomNonce(), *source, settings_.relayPort};
        if (send(raw, vip.address, target, static_cast<uint16_t>(idBase_ + 1 + flow), data)) {
          ++counters_.vipEchoes;
          pending_[data.nonce] = {vip, target, EchoKind::VipSourced};
        }
      }
    }
    if (anyVip) {
      EchoData data{EchoKind::NodeSourced, randomNonce(), *source, settings_.relayPort};
      if (send(raw, *source, target, idBase_, data)) {
        ++counters_.nodeEchoes;
        pending_[data.nonce] = {bgp::Prefix{}, target, EchoKind::NodeSourced};
      }
    }
  }
}

void ReturnPathChecker::onEchoReply(const EchoReply& reply) {
  auto it = pending_.find(reply.data.nonce);
  if (it != pending_.end() && it->second.kind == reply.data.kind &&
      it->second.target == reply.from) {
    if (!it->second.answered) {
      it->second.answered = true;
      if (reply.data.kind == EchoKind::VipSourced) {
        ++counters_.vipAnswered;
        trusted_.insert(reply.from);
        relayPolicy_.noteOwnAnswer(reply.from, Clock::now());
      } else {
        ++counters_.nodeAnswered;
      }
      finishIfAllAnswered();
    }
    return;
  }
  if (reply.data.kind != EchoKind::VipSourced) {
    return;  // another node's node-sourced answer never comes here; nothing to relay
  }
  // An answer to another node's VIP-sourced echo, or a forgery: the relay policy decides. Its
  // source says nothing about trust (issue 28): only this node's own nonces do.
  relay(reply);
}

void ReturnPathChecker::relay(const EchoReply& reply) {
  if (auto drop = relayPolicy_.judge(reply, Clock::now()); drop != RelayDrop::None) {
    countDrop(drop, reply);
    return;
  }
  sendDatagram(buildRelay(reply.data.nonce), reply.data.relayAddress);
  ++counters_.relaysSent;
}

void ReturnPathChecker::countDrop(RelayDrop drop, const EchoReply& reply) {
  ++counters_.relaysDropped[drop];
  ++dropsSinceLog_[drop];
  if (auto n = dropLog_.add(Clock::now())) {
    std::vector<std::string> reasons;
    for (const auto& [reason, count] : dropsSinceLog_) {
      reasons.push_back(fmt::format("{} {}", relayDropName(reason), count));
    }
    dropsSinceLog_.clear();
    log_.warn("return-path", "not relaying {} echo repl{} in the last 10s ({}); the last from {} "
              "to {} naming {} port {}: vipd relays only answers from its peers and targets, "
              "addressed to a VIP, to a node address on its node networks, within a budget per "
              "node",
              *n, *n == 1 ? "y" : "ies", fmt::join(reasons, ", "), reply.from.toString(),
              reply.to.toString(), reply.data.relayAddress.toString(), reply.data.relayPort);
  }
}

void ReturnPathChecker::sendDatagram(std::span<const uint8_t> bytes, const bgp::IpAddress& to) {
  if (!relaySocket_.is_open()) {
    return;
  }
  auto address = toAsio(to);
  if (relayV6_ && address.is_v4()) {
    address = asio::ip::make_address_v6(asio::ip::v4_mapped, address.to_v4());
  } else if (!relayV6_ && address.is_v6()) {
    return;  // an IPv4-only relay socket cannot reach an IPv6 node
  }
  boost::system::error_code ec;
  relaySocket_.send_to(asio::buffer(bytes.data(), bytes.size()), {address, settings_.relayPort},
                       0, ec);
}

void ReturnPathChecker::refreshRelayPolicy() {
  RelayPolicy::Node node;
  for (const auto& a : peers_) {
    node.sources.insert(a);
  }
  for (const auto& a : settings_.targets) {
    node.sources.insert(a);
  }
  node.vips.insert(vipAddresses_.begin(), vipAddresses_.end());
  auto interfaces = hooks_.interfaceAddresses ? hooks_.interfaceAddresses()
                                              : std::vector<bgp::Prefix>{};
  for (const auto& a : interfaces) {
    if (node.vips.count(a.address) == 0) {
      node.own.insert(a.address);
    }
  }
  if (!settings_.relayNetworks.empty()) {
    node.networks = settings_.relayNetworks;
  } else {
    // The connected prefixes the peers (and targets) are reached over.
    for (const auto& t : node.sources) {
      auto source = kernelSourceFor(t);
      if (!source) {
        continue;
      }
      for (const auto& a : interfaces) {
        if (a.address == *source && !a.isHost()) {
          auto network = networkOf(a);
          if (std::find(node.networks.begin(), node.networks.end(), network) ==
              node.networks.end()) {
            node.networks.push_back(network);
          }
        }
      }
    }
  }
  relayPolicy_.setNode(std::move(node));
}

void ReturnPathChecker::receiveRelays() {
  std::weak_ptr<int> alive = alive_;
  relaySocket_.async_receive_from(
      asio::buffer(relayBuffer_), relaySender_,
      [this, alive](const boost::system::error_code& ec, size_t n) {
        if (alive.expired() || !running_ || ec == asio::error::operation_aborted) {
          return;
        }
        if (!ec) {
          std::span<const uint8_t> datagram(relayBuffer_.data(), n);
          const auto from = fromAsio(relaySender_.address());
          if (auto nonce = parseRelay(datagram)) {
            onRelay(*nonce, from);
          } else if (auto query = parseWitnessQuery(datagram)) {
            onWitnessQuery(*query, relaySender_);
          } else if (auto answer = parseWitnessAnswer(datagram)) {
            onWitnessAnswer(*answer, from);
          }
          receiveRelays();
          return;
        }
        // A receive error that repeats (out of memory, say) must not spin the io_context:
        // count it, log it throttled and read again a little later.
        ++counters_.relayErrors;
        if (auto count = relayErrors_.add(std::chrono::steady_clock::now())) {
          log_.warn("return-path", "receiving relays on UDP port {}: {} ({} error(s) in the last "
                    "10s); reading again in 100ms",
                    settings_.relayPort, ec.message(), *count);
        }
        relayRetry_.expires_after(std::chrono::milliseconds(100));
        relayRetry_.async_wait([this, alive](const boost::system::error_code& waited) {
          if (!waited && !alive.expired() && running_) {
            receiveRelays();
          }
        });
      });
}

void ReturnPathChecker::onRelay(uint64_t nonce, const bgp::IpAddress& from) {
  auto it = pending_.find(nonce);
  if (it == pending_.end() || it->second.kind != EchoKind::VipSourced || it->second.answered) {
    return;  // late, forged or a duplicate
  }
  it->second.answered = true;
  it->second.relayedBy = from;
  ++counters_.vipAnswered;
  ++counters_.vipAnsweredRelayed;
  trusted_.insert(it->second.target);
  finishIfAllAnswered();
}

void ReturnPathChecker::onWitnessQuery(const WitnessQuery& query,
                                       const asio::ip::udp::endpoint& from) {
  const auto querier = fromAsio(from.address());
  const auto now = Clock::now();
  // Answered only to a vipd (the relay port) on a node network, at a bounded rate: the answer
  // is no larger than the query, and goes nowhere a forged source could aim it.
  if (from.port() != settings_.relayPort || !relayPolicy_.mayAnswerWitness(querier, now)) {
    ++counters_.witnessQueriesRefused;
    return;
  }
  sendDatagram(buildWitnessAnswer(relayPolicy_.witness(query, querier, now)),
               querier);
  ++counters_.witnessQueriesAnswered;
}

void ReturnPathChecker::onWitnessAnswer(const WitnessAnswer& answer,
                                        const bgp::IpAddress& from) {
  if (!judging_) {
    return;
  }
  auto it = judging_->queries.find(answer.nonce);
  if (it == judging_->queries.end() || it->second.witness != from || it->second.answered) {
    return;  // late, forged or a duplicate
  }
  it->second.answered = true;
  it->second.answer = answer;
  ++counters_.witnessAnswersReceived;
  if (std::all_of(judging_->queries.begin(), judging_->queries.end(),
                  [](const auto& q) { return q.second.answered; })) {
    witnessTimer_.cancel();
    recordRound();
  }
}

void ReturnPathChecker::finishIfAllAnswered() {
  // Once every echo is answered the round's verdicts cannot change (an answered VIP-sourced
  // echo is a passing round whatever else happens), so waiting out returnPath.timeout only
  // costs a wake-up per round. A round with a silent echo still waits for it until the timeout,
  // so failures are judged exactly as before.
  if (!roundOpen_ || pending_.empty() ||
      std::any_of(pending_.begin(), pending_.end(),
                  [](const auto& entry) { return !entry.second.answered; })) {
    return;
  }
  answerTimer_.cancel();
  finishRound();
}

std::chrono::milliseconds ReturnPathChecker::witnessWait() const {
  // Witnesses are other vipd nodes on the node network: milliseconds away. The wait ends well
  // before the next round.
  return std::min(std::chrono::milliseconds(500), (settings_.interval - settings_.timeout) / 2);
}

void ReturnPathChecker::finishRound() {
  roundOpen_ = false;
  Judging judging;
  const auto all = targets();
  // Answers from a target to other nodes' echoes count as evidence when they reached this node
  // within one interval: the other nodes echo on their own schedule.
  const auto evidenceSince = roundStart_ - settings_.interval;
  for (auto& [vip, check] : checks_) {
    if (std::none_of(all.begin(), all.end(), [&](const bgp::IpAddress& t) {
          return t.family == vip.address.family;
        })) {
      check.detail = fmt::format("not checked: no {} target (a peer of that family, or "
                                 "returnPath.targets)",
                                 vip.address.isV4() ? "IPv4" : "IPv6");
      continue;
    }
    RoundOutcome round;
    std::set<bgp::IpAddress> nodeAnsweredBy;
    std::set<bgp::IpAddress> vipAnsweredBy;
    std::set<bgp::IpAddress> untrusted;
    std::set<bgp::IpAddress> relayers;
    bool direct = false;
    for (const auto& [nonce, p] : pending_) {
      if (p.target.family != vip.address.family || !p.answered) {
        continue;
      }
      if (p.kind == EchoKind::VipSourced && p.vip == vip) {
        vipAnsweredBy.insert(p.target);
        if (p.relayedBy) {
          relayers.insert(*p.relayedBy);
        } else {
          direct = true;
        }
      } else if (p.kind == EchoKind::NodeSourced) {
        (trusted(p.target) ? nodeAnsweredBy : untrusted).insert(p.target);
      }
    }
    round.vipAnswered = !vipAnsweredBy.empty();
    round.nodeAnswered = !nodeAnsweredBy.empty();
    round.announcedThroughout = check.announcedAtStart && hooks_.announced(vip);
    std::string detail;
    if (round.vipAnswered) {
      check.lastDirect = direct;
      check.lastRelayers = direct ? std::set<bgp::IpAddress>{} : relayers;
      detail = fmt::format("VIP-sourced echoes answered by {}{}", describe(vipAnsweredBy),
                           direct ? "" : fmt::format(" (relayed by {})", describe(relayers)));
    } else if (round.nodeAnswered) {
      detail = fmt::format("{} answered the node's address but not the VIP",
                           describe(nodeAnsweredBy));
    } else if (!untrusted.empty()) {
      detail = fmt::format("{} answered the node's address; not yet trusted as evidence: none of "
                           "this node's VIP-sourced echoes to it has ever been answered (does it "
                           "route the VIP?)",
                           describe(untrusted));
    } else {
      detail = "no target answered the node's address either";
    }
    const bool candidate = !round.vipAnswered && round.nodeAnswered &&
                           (round.announcedThroughout ||
                            check.judge.state() == ReturnPathState::Broken);
    if (candidate) {
      std::set<bgp::IpAddress> seen;
      for (const auto& t : nodeAnsweredBy) {
        if (relayPolicy_.othersAnswersSince(t, evidenceSince) > 0) {
          seen.insert(t);
        }
      }
      if (!seen.empty()) {
        round.aloneEvidence = true;
        detail += fmt::format(", while its answers to other nodes' echoes reached this node");
      } else {
        judging.candidates[vip] = {round, nodeAnsweredBy, detail};
        continue;
      }
    }
    judging.settled[vip] = {round, detail};
  }
  pending_.clear();
  judging_ = std::move(judging);
  askWitnesses();
}

void ReturnPathChecker::askWitnesses() {
  auto& judging = *judging_;
  const auto window = std::chrono::duration_cast<std::chrono::milliseconds>(
      Clock::now() - roundStart_ + settings_.interval + witnessWait());
  const auto& own = relayPolicy_.node().own;
  std::map<std::pair<bgp::IpAddress, bgp::IpAddress>, uint64_t> asked;
  for (const auto& [vip, candidate] : judging.candidates) {
    const auto& check = checks_.at(vip);
    std::set<bgp::IpAddress> witnesses = check.lastRelayers;
    if (hooks_.fabricAnnouncers) {
      for (const auto& a : hooks_.fabricAnnouncers(vip)) {
        if (witnesses.size() < kMaxWitnesses) {
          witnesses.insert(a);
        }
      }
    }
    for (const auto& w : witnesses) {
      if (own.count(w) != 0 || !relayPolicy_.relayDestination(w)) {
        continue;
      }
      for (const auto& t : candidate.targets) {
        if (asked.count({w, t}) != 0) {
          continue;
        }
        const uint64_t nonce = randomNonce();
        asked[{w, t}] = nonce;
        judging.queries[nonce] = {w, t};
        sendDatagram(buildWitnessQuery(
                         {nonce, static_cast<uint32_t>(window.count()), t}),
                     w);
        ++counters_.witnessQueriesSent;
      }
    }
  }
  if (judging.queries.empty()) {
    recordRound();
    return;
  }
  witnessTimer_.expires_after(witnessWait());
  std::weak_ptr<int> alive = alive_;
  witnessTimer_.async_wait([this, alive](const boost::system::error_code& ec) {
    if (!ec && !alive.expired() && running_ && judging_) {
      recordRound();
    }
  });
}

void ReturnPathChecker::recordRound() {
  Judging judging = std::move(*judging_);
  judging_.reset();
  // Candidates: silence this node cannot yet call its own; the witnesses decide.
  for (auto& [vip, candidate] : judging.candidates) {
    std::vector<std::string> dropped;
    std::vector<std::string> saw;
    std::vector<std::string> sawNothing;
    std::vector<std::string> silent;
    for (const auto& [nonce, q] : judging.queries) {
      if (candidate.targets.count(q.target) == 0) {
        continue;
      }
      const auto who = q.witness.toString();
      if (!q.answered) {
        silent.push_back(who);
      } else if (q.answer.dropped > 0) {
        dropped.push_back(fmt::format("{} ({} for its relay budget)", who, q.answer.dropped));
      } else if (q.answer.answers > 0) {
        saw.push_back(fmt::format("{} ({} from {})", who, q.answer.answers, q.target.toString()));
      } else {
        sawNothing.push_back(who);
      }
    }
    auto outcome = candidate.outcome;
    std::string detail = candidate.detail;
    if (dropped.empty() && !saw.empty()) {
      outcome.aloneEvidence = true;
      detail += fmt::format(", while answers to other nodes' echoes still reach {}",
                            fmt::join(saw, ", "));
    } else {
      ++counters_.silencesExplained;
      std::string why;
      if (!dropped.empty()) {
        why = fmt::format("{} dropped this node's answers (a flood?)", fmt::join(dropped, ", "));
      } else if (judging.queries.empty()) {
        why = "no node relayed its answers before and no other node's answers reached this node";
      } else {
        std::vector<std::string> parts;
        if (!silent.empty()) {
          parts.push_back(fmt::format("{} did not answer (frozen or gone?)",
                                      fmt::join(silent, ", ")));
        }
        if (!sawNothing.empty()) {
          parts.push_back(fmt::format("answers no longer reach {}", fmt::join(sawNothing, ", ")));
        }
        why = fmt::format("{}", fmt::join(parts, "; "));
      }
      detail += fmt::format("; not counted against this node: nothing says it alone loses its "
                            "answers ({})",
                            why);
    }
    judging.settled[vip] = {outcome, detail};
  }
  bool changed = false;
  for (auto& [vip, check] : checks_) {
    auto it = judging.settled.find(vip);
    if (it == judging.settled.end()) {
      continue;  // not judged this round (no target of its family, or bound since it began)
    }
    const auto& [round, detail] = it->second;
    const auto before = check.judge.state();
    const bool blockedBefore = check.judge.blocks();
    check.judge.record(round);
    check.detail = detail;
    if (check.judge.lastVerdict() == RoundVerdict::Inconclusive && round.nodeAnswered &&
        !round.vipAnswered && !round.announcedThroughout &&
        before != ReturnPathState::Broken) {
      check.detail = "no VIP-sourced answer while the VIP is not announced (an answer can only "
                     "come back through a node that announces it)";
    }
    const auto after = check.judge.state();
    if (after != before) {
      if (after == ReturnPathState::Broken) {
        log_.error("return-path", "vip {}: VIP-sourced packets get no answer (anti-spoof "
                   "filter?): {} for {} rounds; {}",
                   vip.toString(), check.detail, settings_.fall,
                   settings_.mode == config::ReturnPath::Mode::Enforce
                       ? "withdrawing it until they do"
                       : "not withdrawn (returnPath.mode warn)");
      } else if (after == ReturnPathState::Retrying) {
        log_.warn("return-path", "vip {}: broken for {} rounds; announcing it again to retry "
                  "(the answers may have nowhere to go while no node announces it)",
                  vip.toString(), check.judge.rounds());
      } else if (before == ReturnPathState::Broken || before == ReturnPathState::Retrying) {
        log_.info("return-path", "vip {}: VIP-sourced packets are answered again ({}); "
                  "announcing it", vip.toString(), check.detail);
      } else {
        log_.info("return-path", "vip {}: return path verified: {}", vip.toString(),
                  check.detail);
      }
    }
    changed = changed || blockedBefore != check.judge.blocks();
  }
  if (changed) {
    hooks_.onChange();
  }
}

}  // namespace vipd::daemon
