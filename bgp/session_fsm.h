// The BGP session state machine of RFC 4271 section 8, for one configured peer.
//
// Pure: the FSM owns no socket and no timer and reads no clock. The daemon feeds it events
// (start/stop, TCP outcomes, received bytes, timer expiries) and carries out the Actions it
// returns, in order. Time exists only as Arm/Cancel actions and onTimer events, so tests drive it
// deterministically.
//
// It also owns what this session has advertised: the daemon says which prefixes should be
// announced (setAnnouncements) and the FSM sends the difference once Established, followed by
// End-of-RIB after the initial announcement, and resends everything on ROUTE-REFRESH.
//
// What the peer sends is validated and counted, and stored only for the watched prefixes (the
// VIPs, SessionConfig::watchedPrefixes): the paths the fabric holds for them, so the daemon can
// see which nodes announce a VIP. vipd advertises ADD-PATH receive (RFC 7911) so that a route
// reflector or ToR configured to send all its paths (BIRD `add paths tx`, FRR
// `addpath-tx-all-paths`) sends each with its own path identifier; those paths are kept, never
// installed or used for anything else. vipd never sends path identifiers.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "bgp/codec.h"
#include "bgp/message.h"
#include "bgp/message_framer.h"
#include "bgp/update_builder.h"

namespace vipd::bgp {

using std::chrono::milliseconds;

enum class SessionState { Idle, Connect, Active, OpenSent, OpenConfirm, Established };
std::string_view sessionStateName(SessionState state);

enum class TimerKind { ConnectRetry, Hold, Keepalive };
std::string_view timerName(TimerKind timer);

// ---- Actions: what the daemon must do, in order ----

// Open a TCP connection to the peer (any previous one is already closed).
struct Connect {};
// Write these bytes (one whole message) to the current connection.
struct Send {
  MessageType type;
  std::vector<uint8_t> bytes;
};
// (Re)start a timer; a timer already running with this kind is replaced.
struct Arm {
  TimerKind timer;
  milliseconds after;
};
struct Cancel {
  TimerKind timer;
};
// Close the current connection once everything queued by earlier Sends has been written.
struct Disconnect {
  std::string reason;
};
// Collision handling (RFC 4271 section 6.8), only with listening enabled. The incoming connection
// the daemon is holding becomes the current connection (the old one was closed by a Disconnect
// just before).
struct AdoptIncoming {};
// Write `bytes` (a NOTIFICATION, possibly empty) on the held incoming connection and close it.
struct RejectIncoming {
  std::vector<uint8_t> bytes;
  std::string reason;
};
// Keep the incoming connection open and pass its first message to onIncomingMessage.
struct HoldIncoming {};
// The session changed state; for logs, metrics and status. `reason` is one sentence.
struct StateChanged {
  SessionState from;
  SessionState to;
  std::string reason;
};

// Something the operator should see that is not a state change, e.g. an RFC 7606
// treat-as-withdraw on a received UPDATE.
struct Notice {
  std::string text;
};

// SessionFsm::watchedPaths() changed during this call: read it again. At most one per call, after
// the changes it reports; absent when nothing changed the map. (It may have changed back within
// the call, e.g. a path added and the session lost in one batch of bytes.)
struct WatchedPathsChanged {};

using Action = std::variant<Connect, Send, Arm, Cancel, Disconnect, AdoptIncoming, RejectIncoming,
                            HoldIncoming, StateChanged, Notice, WatchedPathsChanged>;
using Actions = std::vector<Action>;

// ---- Configuration and counters ----

struct SessionConfig {
  uint32_t localAsn = 0;
  uint32_t peerAsn = 0;
  uint32_t routerId = 0;  // host order; never zero (config validation)
  std::chrono::seconds holdTime{9};  // proposed; 0 disables keepalives
  std::chrono::seconds keepaliveTime{3};
  milliseconds connectRetryTime{1000};  // first retry interval
  milliseconds maxConnectRetryTime{30000};
  // Hold time while waiting for the peer's OPEN (RFC 4271 section 8.2.2 suggests 4 minutes).
  milliseconds openHoldTime{240000};
  std::vector<AfiSafi> families;  // advertised in the multiprotocol capability
  // Route attributes; nextHopV4/V6 are filled from the connection when not configured.
  OutboundAttributes outbound;
  uint64_t jitterSeed = 0;
  // Advertise the graceful-restart capability (RFC 4724) with this restart time. Only for a
  // planned handoff between two vipd instances and for upgrades: set, a dropped TCP session makes
  // the peer keep our path for this long, so it stays short. Never the N bit (RFC 8538): every
  // NOTIFICATION vipd sends (drain, errors) must flush the path at once.
  std::optional<std::chrono::seconds> gracefulRestartTime;
  // Advertise the ADD-PATH capability (RFC 7911 section 4) with Send/Receive = 1 (receive) for
  // these families; those not in `families` are left out. Empty: no ADD-PATH capability, and the
  // OPEN is byte for byte what it is without this field.
  std::vector<AfiSafi> addPathReceive;
  // The prefixes whose received paths are kept (watchedPaths()): the VIPs. Matched exactly.
  std::set<Prefix> watchedPrefixes;
};

// At most this many paths (path identifiers) are kept per watched prefix and session; further
// announcements are counted in watchedPathsDropped and not stored until one of the kept paths is
// withdrawn and the peer announces them again. With every stored attribute bounded by the 4096
// byte message it came in, a peer cannot make the FSM hold more than
// kMaxPathsPerWatchedPrefix * watchedPrefixes.size() paths.
inline constexpr size_t kMaxPathsPerWatchedPrefix = 64;

// One path the peer holds for a watched prefix, as it sent it (RFC 4271 section 4.3, RFC 4456,
// RFC 7911). Nothing here is validated beyond what the codec checks: it is the fabric's view,
// never installed.
struct ReceivedPath {
  // NEXT_HOP for the IPv4 NLRI field; for MP_REACH_NLRI its first address (the global one of an
  // IPv6 global + link-local pair, RFC 2545).
  IpAddress nextHop;
  // RFC 4456 ORIGINATOR_ID (a BGP Identifier, host order) and CLUSTER_LIST (empty when absent).
  // Only from an internal peer: from an external one RFC 7606 sections 7.9 and 7.10 discard them.
  // A path whose ORIGINATOR_ID is our own router ID is ours reflected back (RFC 4456 section 8
  // says to ignore it for routing; it is kept here, so the daemon can tell it apart).
  std::optional<uint32_t> originatorId;
  std::vector<uint32_t> clusterList;
  AsPath asPath;  // as received (from a 2-octet AS peer it may hold AS_TRANS)
  std::optional<uint32_t> localPref;
  std::vector<uint32_t> communities;
  auto operator<=>(const ReceivedPath&) const = default;
};

// The paths received for the watched prefixes, by prefix, then by path identifier (0 in a family
// without ADD-PATH, where a new announcement replaces the one path). A prefix with no path has
// no entry.
using WatchedPaths = std::map<Prefix, std::map<uint32_t, ReceivedPath>>;

// Counters for status and metrics. Received UPDATEs are validated and counted; only the paths of
// watched prefixes are stored (watchedPaths()).
struct SessionCounters {
  uint64_t messagesSent[6] = {};      // indexed by MessageType
  uint64_t messagesReceived[6] = {};  // indexed by MessageType
  uint64_t prefixesReceived = 0;      // NLRI announced to us (counted, not kept)
  uint64_t withdrawalsReceived = 0;
  uint64_t treatAsWithdraw = 0;  // RFC 7606 outcomes
  uint64_t attributeDiscard = 0;
  uint64_t endOfRibReceived = 0;
  // Paths for watched prefixes, one per (prefix, path identifier) in an UPDATE's fields:
  uint64_t watchedPathsReceived = 0;   // announced (stored, replaced, or dropped below)
  uint64_t watchedPathsWithdrawn = 0;  // withdrawn, or announced in a treat-as-withdraw UPDATE
  uint64_t watchedPathsDropped = 0;    // announced beyond kMaxPathsPerWatchedPrefix; not stored
  uint64_t routeRefreshReceived = 0;
  uint64_t establishedTransitions = 0;
  std::optional<NotificationMessage> lastNotificationSent;
  std::optional<NotificationMessage> lastNotificationReceived;
  // NOTIFICATIONs by (code, subcode), for metrics.
  std::map<std::pair<uint8_t, uint8_t>, uint64_t> notificationsSentByCode;
  std::map<std::pair<uint8_t, uint8_t>, uint64_t> notificationsReceivedByCode;
};

// What the OPEN exchange settled.
struct Negotiated {
  uint32_t peerAsn = 0;
  uint32_t peerRouterId = 0;
  std::chrono::seconds holdTime{0};
  std::chrono::seconds keepaliveTime{0};
  bool fourOctetAs = false;
  bool routeRefresh = false;
  std::vector<AfiSafi> families;  // both sides advertised
  std::optional<GracefulRestartCapability> peerGracefulRestart;
  // ADD-PATH (RFC 7911 section 4): the families of `families` in which the peer sends us path
  // identifiers: we advertised receive (SessionConfig::addPathReceive) and the peer advertised
  // send or both (when it lists a family twice its last tuple counts, as in BIRD and FRR).
  // Received UPDATEs are decoded with these; what we send never carries path identifiers.
  std::vector<AfiSafi> addPathReceive;
};

class SessionFsm {
 public:
  explicit SessionFsm(SessionConfig config);

  // ManualStart (event 1): leave Idle and dial the peer.
  [[nodiscard]] Actions start();
  // ManualStop (event 2): send Cease with `shutdownCommunication` (RFC 9003) if a session is
  // open, close, and stay Idle until start() is called again. The subcode is Administrative
  // Shutdown (6/2) unless given: Peer De-configured (6/3, RFC 4486) for a peer removed from the
  // config.
  [[nodiscard]] Actions stop(std::string_view shutdownCommunication,
                             uint8_t ceaseSubcode = subcode::kAdministrativeShutdown);

  // ---- Live reconfiguration (issue 29): each touches this session only ----

  // Settings the peer must see in a new OPEN (ASN, timers, families) or that need a new socket
  // (TCP-MD5 key, TTL, source address) changed: with a session open, send Cease / Other
  // Configuration Change (6/6, RFC 4486) carrying `why` as a shutdown communication, close, and
  // connect again after the new ConnectRetry time with `next`. A session never started or
  // stop()ped only takes `next`. Counters, lastError's history and what the speaker wants
  // announced are kept; the peer drops our paths with the session (the reconnection announces
  // them again).
  [[nodiscard]] Actions reconfigure(SessionConfig next, std::string_view why);
  // New route attributes: communities, large communities and the degraded path's prepend,
  // LOCAL_PREF and communities (the matching fields of `attributes`; next hops, ASNs and the
  // drain marking are the session's own). An Established session sends every advertised prefix
  // again with them: an implicit replace (RFC 4271 section 3.1), never a withdrawal. Nothing is
  // sent when they are unchanged.
  [[nodiscard]] Actions setRouteAttributes(const OutboundAttributes& attributes);
  // The prefixes whose received paths are kept (SessionConfig::watchedPrefixes: the VIPs). The
  // paths of a prefix no longer watched are dropped (WatchedPathsChanged). A newly watched prefix
  // starts with none, though the peer may hold paths it sent before; so an Established session
  // whose peer supports route refresh asks it to send everything again (ROUTE-REFRESH, RFC 2918),
  // once per negotiated family that gained a prefix.
  [[nodiscard]] Actions setWatchedPrefixes(std::set<Prefix> prefixes);

  // The outbound connection is up (event 16/17). `local` is the connection's local address.
  [[nodiscard]] Actions onConnected(const IpAddress& local);
  // The outbound connection attempt failed (event 18).
  [[nodiscard]] Actions onConnectFailed(std::string_view why);
  // The current connection closed or failed (event 18 after establishment).
  [[nodiscard]] Actions onClosed(std::string_view why);
  // Bytes arrived on the current connection.
  [[nodiscard]] Actions onBytes(std::span<const uint8_t> bytes);
  // A timer armed earlier expired. Expiries the FSM no longer expects are ignored.
  [[nodiscard]] Actions onTimer(TimerKind timer);

  // The peer connected to us (listening enabled). Returns AdoptIncoming (it becomes the session),
  // HoldIncoming (collision: wait for its OPEN) or RejectIncoming.
  [[nodiscard]] Actions onIncomingConnection(const IpAddress& local);
  // Bytes arrived on a held incoming connection: once its OPEN is complete the collision is
  // resolved by BGP Identifier (RFC 4271 section 6.8).
  [[nodiscard]] Actions onIncomingBytes(std::span<const uint8_t> bytes);
  // The held incoming connection closed before its OPEN resolved the collision.
  void onIncomingClosed();

  // The set of prefixes this session should announce, and which of them with the degraded path
  // (OutboundAttributes::degraded: health.onFailure degrade, or a VIP the never-zero rule keeps
  // announced). Sends the difference when Established: new prefixes, withdrawals, and prefixes
  // whose marking changed again (an implicit replace, never a withdrawal).
  [[nodiscard]] Actions setAnnouncements(std::set<Prefix> prefixes,
                                         std::set<Prefix> degraded = {});
  // Switch the drain marking (GRACEFUL_SHUTDOWN, RFC 8326) and re-announce if it changed.
  [[nodiscard]] Actions setGracefulShutdown(bool on);
  // Prefixes announced (or to be announced) with the degraded path.
  const std::set<Prefix>& degraded() const { return desiredDegraded_; }

  // Graceful restart, restarting side (RFC 4724 section 4.1). The next OPEN carries the Restart
  // State bit and Forwarding State bits: the peer keeps the routes it retained from our previous
  // session until our End-of-RIB. Cleared once that session is Established or fails; a later
  // OPEN has both bits clear, which makes the peer drop any stale path at once. Ignored without
  // gracefulRestartTime.
  void setRestarting(bool restarting) { restarting_ = restarting; }
  bool restarting() const { return restarting_; }
  // Hand the session over to another speaker: close the connection WITHOUT a NOTIFICATION, so a
  // peer that negotiated graceful restart keeps our path for the restart time, and stay Idle
  // until start(). Returns whether the peer negotiated graceful restart (else it drops the path
  // when the connection closes).
  [[nodiscard]] Actions yieldForRestart(bool& peerKeepsRoutes);

  // The BFD session that protects this BGP session went down (RFC 5882 section 4.3, RFC 9384):
  // send Cease / BFD Down (6/10) if a session is open, close at once, and try again after the
  // ConnectRetry time like any other failure. The peer's own BFD tears its side down as well.
  [[nodiscard]] Actions onBfdDown(std::string_view why);

  SessionState state() const { return state_; }
  const SessionCounters& counters() const { return counters_; }
  const std::optional<Negotiated>& negotiated() const { return negotiated_; }
  const std::string& lastError() const { return lastError_; }
  // Prefixes the peer currently has from us.
  const std::set<Prefix>& advertised() const { return advertised_; }
  // The paths the peer currently holds for the watched prefixes (see WatchedPaths), kept while
  // Established: an announcement adds or replaces the path of its (prefix, path identifier), a
  // withdrawal removes it, an RFC 7606 treat-as-withdraw UPDATE removes every (prefix, path
  // identifier) it names, and leaving Established for any reason clears them all. Only families
  // negotiated on this session count; within one UPDATE withdrawals are applied before
  // announcements (RFC 4271 section 4.3: a prefix in both fields stands announced). Each change
  // comes with a WatchedPathsChanged action.
  const WatchedPaths& watchedPaths() const { return watchedPaths_; }
  // The interval the next ConnectRetry will use (backoff state), for status.
  milliseconds currentRetryInterval() const { return retryInterval_; }

 private:
  void openConnection(Actions& out, const IpAddress& local);
  void beginConnect(Actions& out, std::string reason);
  void handleReceivedNotification(Actions& out, const NotificationMessage& notification);
  void handleRouteRefresh(Actions& out, const RouteRefreshMessage& refresh);
  void fsmError(Actions& out, uint8_t subcode, MessageType received);
  // A NOTIFICATION written on a rejected incoming connection (not through send()).
  void countRejectNotification(const NotificationMessage& notification);
  void rejectIncoming(Actions& out, std::optional<NotificationMessage> notification,
                      std::string reason);
  void handleMessage(Actions& out, std::span<const uint8_t> wire);
  void handleOpen(Actions& out, const OpenMessage& open);
  void handleUpdate(Actions& out, const DecodedMessage& decoded);
  void trackWatchedPaths(Actions& out, const UpdateMessage& update, UpdateHandling handling);
  void withdrawWatched(AfiSafi family, const std::vector<Prefix>& prefixes,
                       const std::vector<uint32_t>& pathIds);
  void announceWatched(Actions& out, AfiSafi family, const std::vector<Prefix>& prefixes,
                       const std::vector<uint32_t>& pathIds, const ReceivedPath& path);
  bool isNegotiated(AfiSafi family) const;
  // Validates a received OPEN against the config; fills negotiated_ or returns the error.
  std::optional<DecodeError> acceptOpen(const OpenMessage& open);
  OpenMessage buildOpen() const;

  void send(Actions& out, const Message& message);
  void sendNotification(Actions& out, NotificationMessage notification);
  // Tear down after an error: NOTIFICATION (if any) is already queued; close, go Idle and arm
  // the automatic restart with backoff.
  void failSession(Actions& out, std::string reason);
  void transition(Actions& out, SessionState to, std::string reason);
  void enterEstablished(Actions& out);
  void armConnectRetry(Actions& out);
  void armKeepalive(Actions& out);
  void restartHoldTimer(Actions& out);
  void cancelAll(Actions& out);
  void resetConnectionState();
  void announceDifference(Actions& out);
  void announceAll(Actions& out);
  void sendAnnouncements(Actions& out, const std::set<Prefix>& prefixes);
  std::set<Prefix> sendable(const std::set<Prefix>& prefixes) const;
  bool hasSession() const;
  milliseconds jittered(milliseconds base);
  // What we send: never with path identifiers. What we receive: with the negotiated ADD-PATH
  // families.
  CodecOptions sendOptions() const;
  CodecOptions receiveOptions() const;

  SessionConfig config_;
  SessionState state_ = SessionState::Idle;
  bool stopped_ = true;  // ManualStop: no automatic restart
  milliseconds retryInterval_;
  std::mt19937_64 rng_;

  MessageFramer framer_;
  std::optional<MessageFramer> incomingFramer_;
  std::optional<IpAddress> incomingLocal_;
  std::optional<IpAddress> localAddress_;
  std::optional<Negotiated> negotiated_;
  OutboundAttributes outbound_;  // config_.outbound with next hops resolved for this connection

  std::set<Prefix> desired_;
  std::set<Prefix> advertised_;
  std::set<Prefix> desiredDegraded_;     // of desired_, those with the degraded path
  std::set<Prefix> advertisedDegraded_;  // of advertised_, those sent with it
  WatchedPaths watchedPaths_;
  // watchedPaths_ changed while handling this call's bytes; reported once when onBytes returns.
  bool watchedPathsChanged_ = false;
  // Watched prefixes that reached kMaxPathsPerWatchedPrefix in this session: noticed once each.
  std::set<Prefix> watchedPathsCapped_;
  // setGracefulShutdown: `kept` survives reconnections, `outbound` is this connection's copy; an
  // Established session re-announces everything with the new marking.
  Actions setMarking(bool& kept, bool& outbound, bool on);
  bool gracefulShutdown_ = false;
  bool restarting_ = false;

  SessionCounters counters_;
  std::string lastError_;
};

}  // namespace vipd::bgp
