#include "bgp/session_fsm.h"

#include <algorithm>
#include <fmt/format.h>

namespace vipd::bgp {
namespace {

using std::chrono::seconds;

// RFC 4271 section 8.2.2: in Connect, a TCP attempt that has not completed when ConnectRetry
// fires is dropped. A floor keeps a short retry interval from cutting off SYN retransmissions.
constexpr milliseconds kMinConnectTimeout{3000};

size_t typeIndex(MessageType type) { return static_cast<size_t>(type); }

std::string familyName(AfiSafi family) {
  if (family == kIpv4Unicast) {
    return "IPv4 unicast";
  }
  if (family == kIpv6Unicast) {
    return "IPv6 unicast";
  }
  return fmt::format("AFI {} SAFI {}", static_cast<int>(family.afi),
                     static_cast<int>(family.safi));
}

std::string describeReceived(const NotificationMessage& n) {
  std::string text = describeNotification(n.code, n.subcode);
  if (n.code == static_cast<uint8_t>(ErrorCode::Cease) &&
      (n.subcode == subcode::kAdministrativeShutdown ||
       n.subcode == subcode::kAdministrativeReset) &&
      !n.data.empty()) {
    if (auto message = decodeShutdownCommunication(n.data)) {
      text += fmt::format(" \"{}\"", *message);
    }
  }
  return text;
}

}  // namespace

std::string_view sessionStateName(SessionState state) {
  switch (state) {
    case SessionState::Idle:
      return "Idle";
    case SessionState::Connect:
      return "Connect";
    case SessionState::Active:
      return "Active";
    case SessionState::OpenSent:
      return "OpenSent";
    case SessionState::OpenConfirm:
      return "OpenConfirm";
    case SessionState::Established:
      return "Established";
  }
  return "Unknown";
}

std::string_view timerName(TimerKind timer) {
  switch (timer) {
    case TimerKind::ConnectRetry:
      return "ConnectRetry";
    case TimerKind::Hold:
      return "Hold";
    case TimerKind::Keepalive:
      return "Keepalive";
  }
  return "Unknown";
}

SessionFsm::SessionFsm(SessionConfig config)
    : config_(std::move(config)),
      retryInterval_(config_.connectRetryTime),
      rng_(config_.jitterSeed),
      outbound_(config_.outbound) {}

// ---- Start, stop, connection events ----

Actions SessionFsm::start() {
  Actions out;
  if (!stopped_) {
    return out;  // already running; ManualStart is ignored outside Idle (RFC 4271 8.2.2)
  }
  stopped_ = false;
  retryInterval_ = config_.connectRetryTime;
  cancelAll(out);
  beginConnect(out, "started");
  return out;
}

Actions SessionFsm::stop(std::string_view shutdownCommunication, uint8_t ceaseSubcode) {
  Actions out;
  stopped_ = true;
  if (incomingFramer_) {
    rejectIncoming(out, std::nullopt, "session stopped");
  }
  if (state_ == SessionState::Idle) {
    cancelAll(out);
    return out;
  }
  std::string reason = fmt::format("stopped: {}", shutdownCommunication);
  if (hasSession()) {
    sendNotification(out, {static_cast<uint8_t>(ErrorCode::Cease), ceaseSubcode,
                           encodeShutdownCommunication(shutdownCommunication)});
  }
  cancelAll(out);
  out.push_back(Disconnect{reason});
  advertised_.clear();
  advertisedDegraded_.clear();
  negotiated_.reset();
  transition(out, SessionState::Idle, reason);
  return out;
}

Actions SessionFsm::reconfigure(SessionConfig next, std::string_view why) {
  Actions out;
  // The rng keeps its state: the new seed is only for a new session's first jitter.
  config_ = std::move(next);
  retryInterval_ = config_.connectRetryTime;
  if (incomingFramer_) {
    rejectIncoming(out, std::nullopt, "session reconfigured");
  }
  if (stopped_) {
    return out;  // Idle and not started: the next start() uses the new settings
  }
  if (hasSession()) {
    sendNotification(out, {static_cast<uint8_t>(ErrorCode::Cease),
                           subcode::kOtherConfigurationChange, encodeShutdownCommunication(why)});
  }
  // Down like any failure (waiting for its retry already: only the retry is re-armed), and back
  // after the new ConnectRetry time.
  failSession(out, fmt::format("reset for a config change: {}", why));
  return out;
}

Actions SessionFsm::setRouteAttributes(const OutboundAttributes& attributes) {
  Actions out;
  auto sameAs = [&attributes](const OutboundAttributes& a) {
    return a.communities == attributes.communities &&
           a.largeCommunities == attributes.largeCommunities &&
           a.degradePrepend == attributes.degradePrepend &&
           a.degradeLocalPref == attributes.degradeLocalPref &&
           a.degradeCommunities == attributes.degradeCommunities;
  };
  if (sameAs(config_.outbound)) {
    return out;
  }
  for (OutboundAttributes* a : {&config_.outbound, &outbound_}) {
    a->communities = attributes.communities;
    a->largeCommunities = attributes.largeCommunities;
    a->degradePrepend = attributes.degradePrepend;
    a->degradeLocalPref = attributes.degradeLocalPref;
    a->degradeCommunities = attributes.degradeCommunities;
  }
  if (state_ == SessionState::Established) {
    announceAll(out);  // same prefixes, new attributes: an implicit replace (RFC 4271 3.1)
  }
  return out;
}

Actions SessionFsm::onBfdDown(std::string_view why) {
  Actions out;
  if (incomingFramer_) {
    rejectIncoming(out, std::nullopt, "BFD session down");
  }
  // Without an OPEN exchanged there is nothing to tear down; a connection being dialled goes on,
  // and the announcement gate keeps routes back until BFD is Up again.
  if (!hasSession()) {
    return out;
  }
  sendNotification(out, {static_cast<uint8_t>(ErrorCode::Cease), subcode::kBfdDown, {}});
  failSession(out, fmt::format("BFD session down: {}", why));
  return out;
}

void SessionFsm::beginConnect(Actions& out, std::string reason) {
  transition(out, SessionState::Connect, std::move(reason));
  out.push_back(Connect{});
  out.push_back(Arm{TimerKind::ConnectRetry, std::max(retryInterval_, kMinConnectTimeout)});
}

Actions SessionFsm::onConnected(const IpAddress& local) {
  Actions out;
  if (state_ != SessionState::Connect) {
    // A connect that completed after we gave up on it; the daemon closes it.
    out.push_back(Disconnect{"stale connection attempt completed after the FSM moved on"});
    return out;
  }
  out.push_back(Cancel{TimerKind::ConnectRetry});
  openConnection(out, local);
  return out;
}

void SessionFsm::openConnection(Actions& out, const IpAddress& local) {
  resetConnectionState();
  localAddress_ = local;
  outbound_ = config_.outbound;
  if (!outbound_.nextHopV4 && local.isV4()) {
    outbound_.nextHopV4 = local;
  }
  if (!outbound_.nextHopV6 && local.isV6() && !local.isLinkLocalV6()) {
    outbound_.nextHopV6 = local;
  }
  outbound_.gracefulShutdown = gracefulShutdown_;
  send(out, buildOpen());
  out.push_back(Arm{TimerKind::Hold, config_.openHoldTime});
  transition(out, SessionState::OpenSent, "TCP connection established; OPEN sent");
}

Actions SessionFsm::onConnectFailed(std::string_view why) {
  Actions out;
  if (state_ != SessionState::Connect) {
    return out;
  }
  lastError_ = fmt::format("TCP connection failed: {}", why);
  out.push_back(Cancel{TimerKind::ConnectRetry});
  transition(out, SessionState::Active, lastError_);
  armConnectRetry(out);
  return out;
}

Actions SessionFsm::onClosed(std::string_view why) {
  Actions out;
  switch (state_) {
    case SessionState::Idle:
    case SessionState::Active:
      return out;
    case SessionState::Connect:
      return onConnectFailed(why);
    case SessionState::OpenSent:
    case SessionState::OpenConfirm:
    case SessionState::Established:
      failSession(out, fmt::format("connection closed in {}: {}", sessionStateName(state_), why));
      return out;
  }
  return out;
}

// ---- Timers ----

Actions SessionFsm::onTimer(TimerKind timer) {
  Actions out;
  switch (timer) {
    case TimerKind::ConnectRetry:
      if (state_ == SessionState::Connect) {
        lastError_ = "TCP connection attempt timed out";
        out.push_back(Disconnect{lastError_});
        transition(out, SessionState::Active, lastError_);
        armConnectRetry(out);
      } else if (state_ == SessionState::Active ||
                 (state_ == SessionState::Idle && !stopped_)) {
        beginConnect(out, "ConnectRetry timer expired; reconnecting");
      }
      break;
    case TimerKind::Hold:
      if (hasSession()) {
        auto held = state_ == SessionState::OpenSent ? config_.openHoldTime
                                                     : milliseconds(negotiated_->holdTime);
        sendNotification(out, {static_cast<uint8_t>(ErrorCode::HoldTimerExpired), 0, {}});
        failSession(out, fmt::format("hold timer expired after {}s in {}",
                                     std::chrono::duration_cast<seconds>(held).count(),
                                     sessionStateName(state_)));
      }
      break;
    case TimerKind::Keepalive:
      if (state_ == SessionState::OpenConfirm || state_ == SessionState::Established) {
        send(out, KeepaliveMessage{});
        armKeepalive(out);
      }
      break;
  }
  return out;
}

void SessionFsm::armConnectRetry(Actions& out) {
  // Exponential backoff with RFC 4271 section 10 jitter; reset once Established.
  out.push_back(Arm{TimerKind::ConnectRetry, jittered(retryInterval_)});
  retryInterval_ = std::min(retryInterval_ * 2, config_.maxConnectRetryTime);
}

void SessionFsm::armKeepalive(Actions& out) {
  if (negotiated_ && negotiated_->keepaliveTime.count() > 0) {
    out.push_back(Arm{TimerKind::Keepalive, jittered(negotiated_->keepaliveTime)});
  }
}

void SessionFsm::restartHoldTimer(Actions& out) {
  if (negotiated_ && negotiated_->holdTime.count() > 0) {
    out.push_back(Arm{TimerKind::Hold, negotiated_->holdTime});
  }
}

void SessionFsm::cancelAll(Actions& out) {
  out.push_back(Cancel{TimerKind::ConnectRetry});
  out.push_back(Cancel{TimerKind::Hold});
  out.push_back(Cancel{TimerKind::Keepalive});
}

milliseconds SessionFsm::jittered(milliseconds base) {
  // RFC 4271 section 10: multiply by a random factor between 0.75 and 1.0.
  std::uniform_int_distribution<int64_t> factor(750, 1000);
  return milliseconds(base.count() * factor(rng_) / 1000);
}

// ---- Receiving ----

Actions SessionFsm::onBytes(std::span<const uint8_t> bytes) {
  Actions out;
  if (!hasSession()) {
    return out;
  }
  framer_.append(bytes);
  while (hasSession()) {
    auto next = framer_.next();
    if (!next) {
      sendNotification(out, next.error().notification);
      failSession(out, next.error().reason);
      break;
    }
    if (!next->has_value()) {
      break;
    }
    handleMessage(out, **next);
  }
  if (watchedPathsChanged_) {
    // One report for the whole batch: the daemon reads the map once, as it is now.
    watchedPathsChanged_ = false;
    out.push_back(WatchedPathsChanged{});
  }
  return out;
}

void SessionFsm::handleMessage(Actions& out, std::span<const uint8_t> wire) {
  auto decoded = decode(wire, receiveOptions());
  if (!decoded) {
    sendNotification(out, decoded.error().notification);
    failSession(out, decoded.error().reason);
    return;
  }
  const Message& message = decoded->message;
  MessageType type = messageTypeOf(message);
  counters_.messagesReceived[typeIndex(type)]++;

  if (const auto* notification = std::get_if<NotificationMessage>(&message)) {
    handleReceivedNotification(out, *notification);
    return;
  }
  switch (state_) {
    case SessionState::OpenSent:
      if (const auto* open = std::get_if<OpenMessage>(&message)) {
        handleOpen(out, *open);
      } else {
        fsmError(out, subcode::kUnexpectedInOpenSent, type);
      }
      return;
    case SessionState::OpenConfirm:
      if (type == MessageType::Keepalive) {
        restartHoldTimer(out);
        enterEstablished(out);
      } else {
        fsmError(out, subcode::kUnexpectedInOpenConfirm, type);
      }
      return;
    case SessionState::Established:
      if (type == MessageType::Keepalive) {
        restartHoldTimer(out);
      } else if (type == MessageType::Update) {
        restartHoldTimer(out);
        handleUpdate(out, *decoded);
      } else if (const auto* refresh = std::get_if<RouteRefreshMessage>(&message)) {
        handleRouteRefresh(out, *refresh);
      } else {
        fsmError(out, subcode::kUnexpectedInEstablished, type);
      }
      return;
    default:
      return;
  }
}

void SessionFsm::fsmError(Actions& out, uint8_t subcode, MessageType received) {
  // RFC 6608: the subcode names the state in which the unexpected message arrived.
  sendNotification(out, {static_cast<uint8_t>(ErrorCode::FsmError), subcode, {}});
  failSession(out, fmt::format("unexpected {} in {}", messageTypeName(received),
                               sessionStateName(state_)));
}

void SessionFsm::handleReceivedNotification(Actions& out,
                                            const NotificationMessage& notification) {
  counters_.lastNotificationReceived = notification;
  counters_.notificationsReceivedByCode[{notification.code, notification.subcode}]++;
  failSession(out, fmt::format("peer sent NOTIFICATION {}", describeReceived(notification)));
}

void SessionFsm::handleOpen(Actions& out, const OpenMessage& open) {
  if (auto error = acceptOpen(open)) {
    sendNotification(out, error->notification);
    failSession(out, error->reason);
    return;
  }
  send(out, KeepaliveMessage{});
  if (negotiated_->holdTime.count() > 0) {
    out.push_back(Arm{TimerKind::Hold, negotiated_->holdTime});
    armKeepalive(out);
  } else {
    out.push_back(Cancel{TimerKind::Hold});
    out.push_back(Cancel{TimerKind::Keepalive});
  }
  transition(out, SessionState::OpenConfirm,
             fmt::format("OPEN received from AS{} (hold time {}s); KEEPALIVE sent",
                         negotiated_->peerAsn, negotiated_->holdTime.count()));
}

std::optional<DecodeError> SessionFsm::acceptOpen(const OpenMessage& open) {
  auto openError = [](uint8_t sub, std::vector<uint8_t> data, std::string reason) {
    return DecodeError{{static_cast<uint8_t>(ErrorCode::OpenMessage), sub, std::move(data)},
                       std::move(reason)};
  };
  uint32_t peerAsn = open.capabilities.fourOctetAs.value_or(open.myAs);
  if (peerAsn != config_.peerAsn) {
    return openError(subcode::kBadPeerAs,
                     {static_cast<uint8_t>(open.myAs >> 8), static_cast<uint8_t>(open.myAs)},
                     fmt::format("OPEN: peer says it is AS{}, but the config expects AS{}",
                                 peerAsn, config_.peerAsn));
  }
  if (open.holdTimeSeconds == 1 || open.holdTimeSeconds == 2) {
    return openError(subcode::kUnacceptableHoldTime, {},
                     fmt::format("OPEN: hold time {}s is not allowed (RFC 4271: 0 or at least 3s)",
                                 open.holdTimeSeconds));
  }
  bool ibgp = config_.peerAsn == config_.localAsn;
  if (ibgp && open.bgpIdentifier == config_.routerId) {
    // RFC 6286 section 2.2: an internal peer with our own BGP Identifier is an error.
    return openError(subcode::kBadBgpIdentifier, {},
                     fmt::format("OPEN: iBGP peer uses our own router ID {}",
                                 IpAddress::v4(open.bgpIdentifier).toString()));
  }

  Negotiated n;
  n.peerAsn = peerAsn;
  n.peerRouterId = open.bgpIdentifier;
  n.holdTime = std::min(config_.holdTime, seconds(open.holdTimeSeconds));
  if (n.holdTime.count() > 0) {
    // Keepalive at the configured interval, but never more than a third of the agreed hold.
    n.keepaliveTime = std::max(seconds(1), std::min(config_.keepaliveTime, n.holdTime / 3));
  }
  n.fourOctetAs = open.capabilities.fourOctetAs.has_value();
  n.routeRefresh = open.capabilities.routeRefresh;
  n.peerGracefulRestart = open.capabilities.gracefulRestart;
  // RFC 4760 section 7: a peer that sends no multiprotocol capability speaks IPv4 unicast only.
  std::vector<AfiSafi> peerFamilies = open.capabilities.multiprotocol;
  if (peerFamilies.empty()) {
    peerFamilies.push_back(kIpv4Unicast);
  }
  for (const auto& family : config_.families) {
    if (std::find(peerFamilies.begin(), peerFamilies.end(), family) != peerFamilies.end()) {
      n.families.push_back(family);
    }
  }
  // RFC 7911 section 4: path identifiers come our way in a family when we advertised receive and
  // the peer send. A family listed twice: the last tuple counts, as in BIRD and FRR.
  for (const auto& family : n.families) {
    const auto& ours = config_.addPathReceive;
    if (std::find(ours.begin(), ours.end(), family) == ours.end()) {
      continue;
    }
    std::optional<AddPathMode> peerMode;
    for (const auto& tuple : open.capabilities.addPath) {
      if (tuple.family == family) {
        peerMode = tuple.mode;
      }
    }
    if (peerMode == AddPathMode::Send || peerMode == AddPathMode::Both) {
      n.addPathReceive.push_back(family);
    }
  }
  negotiated_ = std::move(n);
  return std::nullopt;
}

void SessionFsm::handleUpdate(Actions& out, const DecodedMessage& decoded) {
  const auto& update = std::get<UpdateMessage>(decoded.message);
  if (auto eor = update.endOfRibFamily()) {
    counters_.endOfRibReceived++;
    return;
  }
  uint64_t announced = update.nlri.size();
  uint64_t withdrawn = update.withdrawn.size();
  if (update.attributes.mpReach) {
    announced += update.attributes.mpReach->nlri.size();
  }
  if (update.attributes.mpUnreach) {
    withdrawn += update.attributes.mpUnreach->withdrawn.size();
  }
  switch (decoded.handling) {
    case UpdateHandling::Normal:
      break;
    case UpdateHandling::AttributeDiscard:
      counters_.attributeDiscard++;
      break;
    case UpdateHandling::TreatAsWithdraw:
      counters_.treatAsWithdraw++;
      withdrawn += announced;
      announced = 0;
      break;
  }
  counters_.prefixesReceived += announced;
  counters_.withdrawalsReceived += withdrawn;
  for (const auto& note : decoded.notes) {
    out.push_back(Notice{fmt::format("received UPDATE: {}", note)});
  }
  if (!config_.watchedPrefixes.empty()) {
    trackWatchedPaths(out, update, decoded.handling);
  }
}

bool SessionFsm::isNegotiated(AfiSafi family) const {
  const auto& families = negotiated_->families;
  return std::find(families.begin(), families.end(), family) != families.end();
}

void SessionFsm::handleRouteRefresh(Actions& out, const RouteRefreshMessage& refresh) {
  counters_.routeRefreshReceived++;
  const auto& families = negotiated_->families;
  if (std::find(families.begin(), families.end(), refresh.family) == families.end()) {
    // RFC 2918 section 4: a refresh for a family not negotiated is ignored.
    out.push_back(Notice{fmt::format("ignored ROUTE-REFRESH for {}, which was not negotiated",
                                     familyName(refresh.family))});
    return;
  }
  std::set<Prefix> ofFamily;
  for (const auto& p : advertised_) {
    if (p.address.family == refresh.family.afi) {
      ofFamily.insert(p);
    }
  }
  sendAnnouncements(out, ofFamily);
  send(out, buildEndOfRib(refresh.family));
}

// ---- Sending and announcing ----

OpenMessage SessionFsm::buildOpen() const {
  OpenMessage open;
  open.myAs = config_.localAsn > 0xFFFF ? kAsTrans : static_cast<uint16_t>(config_.localAsn);
  open.holdTimeSeconds = static_cast<uint16_t>(config_.holdTime.count());
  open.bgpIdentifier = config_.routerId;
  open.capabilities.multiprotocol = config_.families;
  open.capabilities.routeRefresh = true;
  open.capabilities.fourOctetAs = config_.localAsn;
  for (const AfiSafi& family : config_.addPathReceive) {
    const auto& families = config_.families;
    if (std::find(families.begin(), families.end(), family) != families.end()) {
      open.capabilities.addPath.push_back({family, AddPathMode::Receive});
    }
  }
  if (config_.gracefulRestartTime) {
    GracefulRestartCapability gr;
    gr.restartState = restarting_;
    gr.restartTimeSeconds =
        static_cast<uint16_t>(std::min<int64_t>(config_.gracefulRestartTime->count(), 4095));
    for (const AfiSafi& family : config_.families) {
      // F bit: the VIP's forwarding (the bound address) survived the handoff. Clear on any other
      // start, so a peer holding a stale path from a crashed instance drops it at once.
      gr.families.push_back({family, restarting_});
    }
    open.capabilities.gracefulRestart = gr;
  }
  return open;
}

Actions SessionFsm::yieldForRestart(bool& peerKeepsRoutes) {
  Actions out;
  peerKeepsRoutes = negotiated_ && negotiated_->peerGracefulRestart.has_value() &&
                    config_.gracefulRestartTime.has_value() &&
                    state_ == SessionState::Established;
  stopped_ = true;
  if (incomingFramer_) {
    rejectIncoming(out, std::nullopt, "session handed over");
  }
  if (state_ == SessionState::Idle) {
    cancelAll(out);
    return out;
  }
  std::string reason = peerKeepsRoutes
                           ? "handed over to another vipd instance (graceful restart: the peer "
                             "keeps our path until the new session's End-of-RIB)"
                           : "handed over to another vipd instance (no graceful restart with "
                             "this peer: it drops our path until the new session announces it)";
  cancelAll(out);
  out.push_back(Disconnect{reason});
  advertised_.clear();
  advertisedDegraded_.clear();
  negotiated_.reset();
  transition(out, SessionState::Idle, reason);
  return out;
}

CodecOptions SessionFsm::sendOptions() const {
  return CodecOptions{negotiated_ ? negotiated_->fourOctetAs : false};
}

CodecOptions SessionFsm::receiveOptions() const {
  CodecOptions options = sendOptions();
  if (negotiated_) {
    options.addPath = negotiated_->addPathReceive;
  }
  return options;
}

void SessionFsm::send(Actions& out, const Message& message) {
  MessageType type = messageTypeOf(message);
  counters_.messagesSent[typeIndex(type)]++;
  out.push_back(Send{type, encode(message, sendOptions())});
}

void SessionFsm::sendNotification(Actions& out, NotificationMessage notification) {
  counters_.lastNotificationSent = notification;
  counters_.notificationsSentByCode[{notification.code, notification.subcode}]++;
  send(out, std::move(notification));
}

void SessionFsm::failSession(Actions& out, std::string reason) {
  lastError_ = reason;
  // The restarted session never came up: the next OPEN says nothing was preserved, so a peer
  // still holding our stale path drops it.
  restarting_ = false;
  cancelAll(out);
  out.push_back(Disconnect{reason});
  advertised_.clear();
  advertisedDegraded_.clear();
  negotiated_.reset();
  transition(out, SessionState::Idle, std::move(reason));
  if (!stopped_) {
    armConnectRetry(out);
  }
}

void SessionFsm::transition(Actions& out, SessionState to, std::string reason) {
  if (to == state_) {
    return;
  }
  out.push_back(StateChanged{state_, to, std::move(reason)});
  const bool leftEstablished = state_ == SessionState::Established;
  state_ = to;
  if (leftEstablished) {
    // The paths were the peer's view during this session only. Reported here, where every way
    // out of Established passes, which also covers what this call's UPDATEs changed before.
    watchedPathsCapped_.clear();
    if (!watchedPaths_.empty() || watchedPathsChanged_) {
      watchedPaths_.clear();
      watchedPathsChanged_ = false;
      out.push_back(WatchedPathsChanged{});
    }
  }
}

void SessionFsm::resetConnectionState() {
  framer_ = MessageFramer{};
  negotiated_.reset();
  advertised_.clear();
  advertisedDegraded_.clear();
}

bool SessionFsm::hasSession() const {
  return state_ == SessionState::OpenSent || state_ == SessionState::OpenConfirm ||
         state_ == SessionState::Established;
}

void SessionFsm::enterEstablished(Actions& out) {
  counters_.establishedTransitions++;
  retryInterval_ = config_.connectRetryTime;
  lastError_.clear();
  transition(out, SessionState::Established,
             fmt::format("KEEPALIVE received; session up with AS{}", negotiated_->peerAsn));
  announceDifference(out);
  // End-of-RIB after the initial announcement (RFC 4724 section 2), one per family.
  for (const auto& family : negotiated_->families) {
    send(out, buildEndOfRib(family));
  }
  // The restart is complete: the peer replaces its stale path with what we just sent.
  restarting_ = false;
}

std::set<Prefix> SessionFsm::sendable(const std::set<Prefix>& prefixes) const {
  std::set<Prefix> result;
  if (!negotiated_) {
    return result;
  }
  const auto& families = negotiated_->families;
  for (const auto& p : prefixes) {
    AfiSafi family{p.address.family, Safi::Unicast};
    bool negotiatedFamily =
        std::find(families.begin(), families.end(), family) != families.end();
    bool hasNextHop = p.address.isV4() ? outbound_.nextHopV4.has_value()
                                       : outbound_.nextHopV6.has_value();
    if (negotiatedFamily && hasNextHop) {
      result.insert(p);
    }
  }
  return result;
}

void SessionFsm::sendAnnouncements(Actions& out, const std::set<Prefix>& prefixes) {
  // One batch per marking: the builder puts prefixes with the same attributes together.
  std::vector<Prefix> normal;
  std::vector<Prefix> degraded;
  for (const auto& p : prefixes) {
    (advertisedDegraded_.count(p) != 0 ? degraded : normal).push_back(p);
  }
  for (const auto* list : {&normal, &degraded}) {
    if (list->empty()) {
      continue;
    }
    OutboundAttributes attributes = outbound_;
    attributes.degraded = list == &degraded;
    for (auto& update : buildAnnouncements(*list, attributes)) {
      send(out, std::move(update));
    }
  }
}

void SessionFsm::announceDifference(Actions& out) {
  std::set<Prefix> target = sendable(desired_);
  std::set<Prefix> targetDegraded;
  std::set_intersection(desiredDegraded_.begin(), desiredDegraded_.end(), target.begin(),
                        target.end(), std::inserter(targetDegraded, targetDegraded.end()));
  std::vector<Prefix> withdraw;
  std::set<Prefix> announce;
  std::set_difference(advertised_.begin(), advertised_.end(), target.begin(), target.end(),
                      std::back_inserter(withdraw));
  std::set_difference(target.begin(), target.end(), advertised_.begin(), advertised_.end(),
                      std::inserter(announce, announce.end()));
  // A prefix whose marking changed goes out again: same prefix, new attributes, an implicit
  // replace (RFC 4271 section 3.1), never a withdrawal.
  for (const auto& p : target) {
    if (advertised_.count(p) != 0 &&
        (targetDegraded.count(p) != 0) != (advertisedDegraded_.count(p) != 0)) {
      announce.insert(p);
    }
  }
  // Withdraw first: a withdrawal must never wait behind a batch of announcements.
  for (auto& update : buildWithdrawals(withdraw)) {
    send(out, std::move(update));
  }
  advertised_ = std::move(target);
  advertisedDegraded_ = std::move(targetDegraded);
  sendAnnouncements(out, announce);
}

void SessionFsm::announceAll(Actions& out) {
  sendAnnouncements(out, advertised_);
}

Actions SessionFsm::setAnnouncements(std::set<Prefix> prefixes, std::set<Prefix> degraded) {
  Actions out;
  desired_ = std::move(prefixes);
  desiredDegraded_.clear();
  std::set_intersection(degraded.begin(), degraded.end(), desired_.begin(), desired_.end(),
                        std::inserter(desiredDegraded_, desiredDegraded_.end()));
  if (state_ == SessionState::Established) {
    announceDifference(out);
  }
  return out;
}

Actions SessionFsm::setGracefulShutdown(bool on) {
  return setMarking(gracefulShutdown_, outbound_.gracefulShutdown, on);
}

Actions SessionFsm::setMarking(bool& kept, bool& outbound, bool on) {
  Actions out;
  if (on == kept) {
    return out;
  }
  kept = on;
  outbound = on;
  if (state_ == SessionState::Established) {
    announceAll(out);  // same prefixes, new attributes: an implicit replace (RFC 4271 3.1)
  }
  return out;
}

}  // namespace vipd::bgp
