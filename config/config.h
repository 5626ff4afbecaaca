// vipd's configuration as validated values (apiVersion vipd.io/v1alpha1, kind
// SpeakerConfiguration). Parsing and validation are pure (parser.h); the daemon and the
// bootstrap renderer share them, so there is exactly one schema.
#pragma once

#include <algorithm>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bgp/ip_address.h"
#include "bgp/message.h"

namespace vipd::config {

using std::chrono::milliseconds;

struct Community {
  uint16_t asn = 0;
  uint16_t value = 0;
  uint32_t wire() const { return (uint32_t{asn} << 16) | value; }
  auto operator<=>(const Community&) const = default;
};

// What the UPDATE builder sizes its messages for (bgp/update_builder.cc): communities, large
// communities, and the communities a degraded path adds (health.degrade.communities).
inline constexpr size_t kMaxCommunities = 32;
inline constexpr size_t kMaxLargeCommunities = 16;
inline constexpr size_t kMaxDegradeCommunities = 8;

struct Vip {
  bgp::Prefix prefix;             // /32 or /128, host bits exact
  std::string interface = "lo";  // where vipd binds the address
  // Create `interface` as a dummy interface (and bring it up) when it is missing. Without it a
  // missing interface is an error for this VIP: never announced, reported in status and logs.
  bool createInterface = false;
  // Bind the address again when it disappears (and re-announce once bound and healthy).
  bool rebind = true;
  auto operator<=>(const Vip&) const = default;
};

// BFD (RFC 5880, asynchronous mode) protecting one BGP session: RFC 5881 single hop (UDP 3784,
// TTL 255 checked on receive) or RFC 5883 multihop (UDP 4784). While enabled, the session's
// routes are announced only while BFD is Up, and BFD Down tears the BGP session down at once.
struct Bfd {
  bool enabled = false;
  milliseconds minTx{300};  // bfd.DesiredMinTxInterval
  milliseconds minRx{300};  // bfd.RequiredMinRxInterval
  uint8_t multiplier = 3;   // bfd.DetectMult
  bool multihop = false;
  auto operator<=>(const Bfd&) const = default;
};

inline constexpr milliseconds kMinBfdInterval{50};
inline constexpr milliseconds kMaxBfdInterval{10000};

struct Peer {
  bgp::IpAddress address;
  uint32_t asn = 0;
  uint16_t port = 179;
  std::optional<bgp::IpAddress> sourceAddress;  // bind() before connect; also the IPv4 next hop
  milliseconds holdTime{9000};                  // 0, or >= 3s; whole seconds
  milliseconds keepaliveTime{3000};             // default holdTime / 3
  milliseconds connectRetryTime{1000};          // first retry; backs off to kMaxConnectRetry
  // How long to wait for the peer's OPEN once TCP is up (RFC 4271 section 8.2.2: "a large
  // value", 4 minutes suggested); then Hold Timer Expired (4/0) and a retry.
  milliseconds openHoldTime{240000};
  uint8_t ebgpMultihop = 0;                     // 0 = directly connected (TTL 1 on eBGP)
  std::optional<bgp::IpAddress> nextHopIpv6;    // IPv6 next hop for /128 VIPs
  // The address families this session carries (unicast; IPv4 before IPv6, each at most once):
  // the VIPs it announces, the multiprotocol capabilities it advertises (RFC 4760) and the
  // End-of-RIB markers it sends. Always set by the parser: `families` as written, or by default
  // the session's own family plus IPv6 on an IPv4 session with nextHopIpv6, each only where a
  // VIP of that family exists (defaultFamilies()).
  std::vector<bgp::Afi> families;
  // TCP-MD5 (RFC 2385) key, read from this file at start; never inline in the config.
  std::optional<std::string> passwordFile;
  // GTSM (RFC 5082): send with TTL 255 and have the kernel drop every segment of the session
  // that arrives with a lower one, so only a router on the link can reach the session.
  bool ttlSecurity = false;
  Bfd bfd;
  auto operator<=>(const Peer&) const = default;
};

// What a peer carries when its `families` key is left out: the VIPs of its own address family,
// and IPv6 VIPs on an IPv4 session that has an IPv6 next hop (nextHopIpv6). Empty when no VIP
// qualifies. `nextHopIpv6Given` is whether the key is present, valid or not.
std::vector<bgp::Afi> defaultFamilies(const bgp::IpAddress& peerAddress, bool nextHopIpv6Given,
                                      const std::vector<Vip>& vips);

// "ipv4" or "ipv6", as `families` spells them (also status and `config --show`).
std::string_view familyKeyword(bgp::Afi family);

inline constexpr milliseconds kMaxConnectRetry{30000};
inline constexpr milliseconds kMinOpenHoldTime{3000};
inline constexpr milliseconds kMaxOpenHoldTime{3600000};  // no reason to wait longer

struct Control {
  // The node's control socket: served by the instance that speaks BGP for the node (vipctl's
  // default, the handoff between instances). A daemonset instance replacing another one serves it
  // once it has taken over (issue 29).
  std::string socket = "/run/vipd/vipd.sock";
  // This instance's own socket, served always, in a path no other instance shares (a pod's own
  // volume): the pod's preStop hook, its exec probes and `kubectl exec ... vipctl` reach this
  // instance and no other, whichever of two pods of a DaemonSet rollout speaks. Unset: none.
  std::optional<std::string> instanceSocket;
  // Where `vipctl withdraw` persists the withdrawn state, so it survives restarts and reboots.
  std::string stateDir = "/var/lib/vipd";
  // Members of this group may use the socket too (mode 0660); unset = root only (mode 0600).
  std::optional<std::string> group;
  auto operator<=>(const Control&) const = default;
};

// The name every kubeadm, k3s and RKE2 apiserver certificate carries (the `kubernetes` Service's
// short name), whatever addresses it names: what the apiserver check verifies when the URL's host
// is an IP address and health.serverName is unset.
inline constexpr std::string_view kDefaultApiserverServerName = "kubernetes";

// The local apiserver check that gates announcements (issue 4). There is no default type:
// `none` must be written explicitly.
struct Health {
  enum class Type { Apiserver, Tcp, None };
  Type type = Type::None;
  std::string url = "https://127.0.0.1:6443/readyz";  // apiserver: https only
  std::string caFile;                                  // apiserver: required
  std::optional<std::string> certFile;                 // apiserver: client certificate
  std::optional<std::string> keyFile;                  // with certFile
  // apiserver: the DNS name the server certificate must carry, also sent as TLS SNI. Unset: the
  // URL's host when that is a DNS name, kDefaultApiserverServerName when it is an IP address
  // (stock apiserver certificates name no loopback address, but all of them name `kubernetes`).
  std::optional<std::string> serverName;
  std::string address = "127.0.0.1:6443";              // tcp: host:port to connect to
  milliseconds interval{1000};
  milliseconds timeout{1000};
  uint32_t rise = 2;  // consecutive successes before announcing
  uint32_t fall = 3;  // consecutive failures before withdrawing
  // Consecutive hard failures (refused, reset, TLS failure, a non-apiserver answer) before
  // withdrawing (issue 20): they say the apiserver is gone, where a timeout may only be a slow
  // moment. At most fall; 0 counts them like any failure. Unset: min(2, fall).
  uint32_t hardFall = 2;
  // What a failing check does (issue 19). withdraw: the node's path leaves the fabric (and, with
  // unbindWhenUnhealthy, its VIPs leave the node, so node-local clients such as the kubelet
  // reach a healthy node through the fabric). degrade: the node keeps announcing a worse path,
  // so the fabric prefers healthy nodes, and when every node fails (an etcd hiccup) every node
  // is degraded alike and the VIP still answers (fail-open).
  enum class OnFailure { Withdraw, Degrade };
  OnFailure onFailure = OnFailure::Withdraw;
  struct Degrade {
    // eBGP: the local AS prepended this many more times (eBGP fabrics compare AS-path length
    // first). iBGP: prepending our own AS would make the peer drop the path as a loop, so the
    // path carries LOCAL_PREF localPref instead (below the healthy 100).
    uint32_t prepend = 3;
    uint32_t localPref = 50;
    std::vector<Community> communities;  // added to a degraded path, e.g. for the fabric's policy
    auto operator<=>(const Degrade&) const = default;
  } degrade;
  // onFailure withdraw: remove the VIPs vipd added while the check fails (after
  // drain.unbindDelay), and bind them again before announcing once it passes.
  bool unbindWhenUnhealthy = true;
  auto operator<=>(const Health&) const = default;
};

// An address and port a listener binds (`127.0.0.1:9473`, `[::1]:9473` in the file).
struct ListenAddress {
  bgp::IpAddress address;
  uint16_t port = 0;
  auto operator<=>(const ListenAddress&) const = default;
};

struct Metrics {
  // metrics.listen: host:port of the Prometheus listener (/metrics), which also answers /healthz
  // and /readyz unless health is set. Any local unicast address or a wildcard: the node's
  // address lets Prometheus scrape a hostNetwork pod.
  bgp::IpAddress address = bgp::IpAddress::v4(0x7F000001u);  // 127.0.0.1
  uint16_t port = 9472;
  // metrics.healthListen: a second listener that serves only /healthz and /readyz (metrics.listen
  // then serves only /metrics), e.g. 127.0.0.1:9473 for the kubelet's probes while /metrics is on
  // the node's address. It may not share a port with metrics.listen on an overlapping address.
  std::optional<ListenAddress> health;
  auto operator<=>(const Metrics&) const = default;
};

// Accepting BGP connections is off by default: vipd dials out, so it never competes with a CNI's
// BGP daemon for port 179. When on, an incoming connection from a configured peer is accepted and
// collisions are resolved as RFC 4271 section 6.8 says.
struct Listen {
  bool enabled = false;
  bgp::IpAddress address = bgp::IpAddress::v4(0u);  // 0.0.0.0 = every local address
  uint16_t port = 179;
  auto operator<=>(const Listen&) const = default;
};

struct Drain {
  // Announce with GRACEFUL_SHUTDOWN (RFC 8326) this long before withdrawing; 0 skips the step.
  milliseconds gracefulShutdownTime{2000};
  // Upper bound on waiting for every Established peer to acknowledge the withdraw.
  milliseconds timeout{10000};
  // After withdrawing, wait this long before removing the addresses vipd added, so connections
  // already on their way to this node can finish.
  milliseconds unbindDelay{1000};
  auto operator<=>(const Drain&) const = default;
};

// Which of vipd's two lives this instance is (issue 5). standalone: the only vipd on the node.
// static-pod / daemonset: two instances may run on the node during the day-0 to day-2
// transition; a host lock under handoff.dir decides which one speaks BGP, and a daemonset
// instance takes over from a static-pod one with graceful restart (RFC 4724).
enum class Mode { Standalone, StaticPod, DaemonSet };
std::string_view modeName(Mode mode);

struct Handoff {
  // A host directory both instances mount (hostPath): the speaker lock lives here.
  std::string dir = "/run/vipd";
  // The graceful-restart time (RFC 4724) advertised to peers: how long a peer keeps this node's
  // path after the session drops without a NOTIFICATION. Short, because after a crash the peer
  // keeps the path this long.
  milliseconds restartTime{3000};
  auto operator<=>(const Handoff&) const = default;
};

// The return-path check (issue 19; daemon/returnpath/checker.h): while a VIP is
// announced, ICMP echoes sourced from it must get answers. Each round sends, to each target, one
// echo from the node's own address and `flows` echoes from the VIP; the node-sourced answer tells
// "the target answers" from "the VIP's packets are dropped".
struct ReturnPath {
  // enforce: a VIP whose echoes fail `fall` rounds is withdrawn until they pass `rise` rounds.
  // warn: the same judgement, reported (status, /readyz, metrics, log) but never withdrawn.
  // off: no echoes.
  enum class Mode { Enforce, Warn, Off };
  Mode mode = Mode::Enforce;
  milliseconds interval{2000};  // one round per interval
  milliseconds timeout{1000};   // how long a round waits for answers; less than the interval
  uint32_t flows = 4;           // VIP-sourced echoes per target per round, each its own ICMP id
  uint32_t fall = 3;            // failing rounds, announced throughout, before withdrawing
  uint32_t rise = 2;            // passing rounds before announcing again
  // UDP port on which vipd takes relayed answers: the reply to a VIP-sourced echo goes to
  // whichever node the fabric picks (ECMP), whose vipd sends it back to the sender here.
  uint16_t relayPort = 9475;
  // Whom to send echoes to: these addresses, which are trusted to route the VIP back (a router, a
  // gateway). Empty: every peer's address, each trusted only once it has answered a
  // VIP-sourced echo (a route reflector that does not route the VIP never is).
  std::vector<bgp::IpAddress> targets;
  // Where this node relays answers to other nodes' echoes (issue 28): the networks the other
  // nodes' addresses are on. Empty: the connected prefixes the peers (and targets) are reached
  // over. Set it when nodes sit in different subnets (racks behind their own ToRs).
  std::vector<bgp::Prefix> relayNetworks;
  auto operator<=>(const ReturnPath&) const = default;
};
std::string_view returnPathModeName(ReturnPath::Mode mode);

// The fabric's view and the withdraw guard (issue 28). Cluster-wide settings: written in the
// cluster file.
struct Guard {
  // vipctl withdraw refuses to leave fewer than this many other nodes announcing a VIP this node
  // announces (unless --force); 0 turns the guard off. Applied only where the fabric's view is
  // available (the peers send every path back: ADD-PATH).
  uint32_t minAnnouncers = 1;
  // How many nodes should announce each VIP (the control-plane size): exported as
  // vipd_fabric_expected_announcers, so an alert fires when fewer do. 0: not set.
  uint32_t expectedAnnouncers = 0;
  // The control-plane nodes share this node's localAsn on eBGP (one AS for all of them, behind
  // ToRs of their own AS). Then an origin AS names no node, and the fabric view tells nodes apart
  // only by next hop or ORIGINATOR_ID (a ToR that rewrites the next hop leaves the view
  // unavailable). false: each node has an AS of its own, and a path whose origin AS is this
  // node's is this node's own path (issue 40). iBGP paths carry no AS either way.
  bool nodesShareAsn = false;
  // Never zero at the same instant (issue 40): an automatic withdrawal waits this long, plus a
  // jitter of up to as much again, announced degraded, before it weighs the fabric's view again
  // (policy/withdraw_confirmation.h). It must exceed the time the fabric takes to pass a path on
  // (its update delay: an eBGP MRAI, a route reflector's), else nodes failing together can still
  // all leave; it adds to how late a single failing node leaves. 300ms suits a fabric that
  // forwards at once (BIRD, FRR, GoBGP by default).
  std::chrono::milliseconds confirmTime{300};
  auto operator<=>(const Guard&) const = default;
};

// The link to the Kubernetes API (issue 41; kube/, docs/kubernetes.md): vipd reports its state
// to Kubernetes (a VipdNode per node, Events) and takes an operator's requests from the Node
// object, but what it announces never waits on the API. Off or unreachable, nothing else changes.
struct Kubernetes {
  // Resolved by the parser: the value written, or by default on in mode daemonset (the pod's
  // service account) and wherever `kubeconfig` is set, off otherwise.
  bool enabled = false;
  // A kubeconfig file (an admin kubeconfig on a static-pod or systemd host). Unset: in-cluster,
  // the pod's service account (KUBERNETES_SERVICE_HOST/PORT and its token and CA files).
  std::optional<std::string> kubeconfig;
  // The Node this vipd runs on. Unset: the NODE_NAME environment variable (the DaemonSet's
  // downward API), read at start; required outside mode daemonset.
  std::optional<std::string> nodeName;
  auto operator<=>(const Kubernetes&) const = default;
};

// The longest name a Node may have (a DNS subdomain, RFC 1123).
inline constexpr size_t kMaxNodeNameLength = 253;

struct Config {
  std::string apiVersion;  // "vipd.io/v1alpha1"
  std::string kind;        // "SpeakerConfiguration"
  bgp::IpAddress routerId;
  uint32_t localAsn = 0;
  std::vector<Vip> vips;
  std::vector<Community> communities;
  std::vector<bgp::LargeCommunity> largeCommunities;
  std::vector<Peer> peers;
  // The router ID must be one of this node's own addresses unless this is set: a router ID
  // rendered wrong at boot is caught at start-up instead of colliding in the fabric.
  bool allowNonLocalRouterId = false;
  Listen listen;
  Control control;
  Drain drain;
  Health health;
  Metrics metrics;
  Mode mode = Mode::Standalone;
  Handoff handoff;  // used only when mode is not standalone
  ReturnPath returnPath;
  Guard guard;
  Kubernetes kubernetes;
  auto operator<=>(const Config&) const = default;
};

// The peer of `peers` at `address`, or nullptr: the one lookup a reload and the PeerSet share.
inline const Peer* findPeer(const std::vector<Peer>& peers, const bgp::IpAddress& address) {
  auto it = std::find_if(peers.begin(), peers.end(),
                         [&](const Peer& p) { return p.address == address; });
  return it == peers.end() ? nullptr : &*it;
}

}  // namespace vipd::config
