// What `vipd doctor` observed on the node: the facts the checks (checks.h) judge. Plain values,
// gathered at the edge (daemon/doctor/fact_gatherer.h reads netlink, /proc, the sysctls, the
// files and the apiserver's certificate); a unit test writes them by hand. A fact that could not
// be observed says so (an error text, nullopt), and the check that needs it reports that instead
// of guessing.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bgp/ip_address.h"
#include "config/layers.h"
#include "config/parser.h"

namespace vipd::doctor {

// An address on one of this node's interfaces, with its prefix length: 192.0.2.11/24 on eth0 is
// the address 192.0.2.11 and the connected network 192.0.2.0/24.
struct LocalAddress {
  bgp::Prefix address;  // host bits kept
  std::string interface;
};

struct Interface {
  std::string name;
  std::string kind;  // "dummy", "veth", "bridge", ... ("" for lo and physical devices)
  bool loopback = false;
};

// What the kernel answered to "how would you reach this peer" (RTM_GETROUTE).
struct PeerRoute {
  bgp::IpAddress peer;
  std::optional<std::string> interface;  // set when the kernel has a route
  std::optional<bgp::IpAddress> gateway;  // set when the route goes through a router
  std::optional<bgp::IpAddress> source;   // the source address the kernel would pick
  bool local = false;                     // the peer's address is one of this node's
  std::string error;                      // the kernel's refusal when there is no route
};

// The IPv4 sysctls of one interface (or of "all") under /proc/sys/net/ipv4/conf/; nullopt when
// unreadable.
struct InterfaceSysctls {
  std::optional<int> rpFilter;     // 0 off, 1 strict, 2 loose
  std::optional<int> arpIgnore;    // 0 answer for any local address, 1 only the interface's own
  std::optional<int> arpAnnounce;  // 0 any local source address in ARP requests, 2 the best one
};

struct Process {
  int pid = 0;
  std::string name;  // /proc/PID/comm: "bird", "vipd"
};

// A TCP socket of the node's BGP port or with a configured peer (/proc/net/tcp{,6}).
struct TcpSocket {
  enum class State { Listen, Established };
  State state = State::Listen;
  bgp::IpAddress local;  // an IPv4 peer of an IPv6 socket is given as IPv4
  uint16_t localPort = 0;
  bgp::IpAddress remote;
  uint16_t remotePort = 0;
  // The process whose descriptors hold the socket; nullopt when no process this one can read
  // does (another PID namespace, such as another pod, or not root).
  std::optional<Process> owner;
};

// The certificate the apiserver serves at health.url, read in a TLS handshake without SNI (as a
// client that dials the VIP's address sends none).
struct ApiserverCertificate {
  std::string endpoint;  // "127.0.0.1:6443", as the URL names it
  // No certificate was read: why ("Connection refused", "timed out after 2s", a TLS error).
  std::optional<std::string> fetchError;
  // The chain does not verify against health.caFile: OpenSSL's reason ("unable to get local
  // issuer certificate"), or why the CA file cannot be used.
  std::optional<std::string> verifyError;
  std::vector<std::string> dnsNames;        // subjectAltName DNS entries, as served
  std::vector<bgp::IpAddress> ipAddresses;  // subjectAltName IP entries
};

struct StateDirectory {
  bool exists = false;
  bool directory = false;
  bool writable = false;
  std::string problem;  // the OS's reason it is not writable ("Read-only file system")
  // When it does not exist: the closest existing parent, and whether vipd could create it there.
  std::string existingParent;
  bool parentWritable = false;
};

// One peers[].passwordFile, read as vipd's start reads it (daemon/session/key.h).
struct KeyFile {
  size_t peer = 0;  // index in config.peers
  std::string path;
  std::optional<std::string> problem;  // start's refusal, word for word; nullopt: usable
};

struct StaticPodFile {
  std::string name;
  bool regular = true;
  // bootstrap::strayReason(): why this is not a static-pod manifest; nullopt for a manifest.
  std::optional<std::string> strayReason;
  bool runsVipd = false;  // a container whose image is vipd's (manifestRunsVipd())
};

struct StaticPodDirectory {
  std::string path;
  bool given = false;  // --manifests-dir; otherwise the first distribution's that exists
  bool exists = false;
  std::vector<std::string> lookedAt;  // the directories tried, when none was given
  std::optional<std::string> error;   // it could not be listed
  std::vector<StaticPodFile> files;   // sorted by name
};

// How the config was loaded: its files, and which file set each key.
struct ConfigLayers {
  std::string names;      // "vipd.yaml" or "vipd.yaml + node.yaml"
  bool nodeFile = false;  // --node-config was given
  // The origin of each field, when known (`vipd doctor`; the daemon checks a loaded config).
  std::optional<config::FieldOrigins> origins;
};

// An address a control-plane program of this node takes as its identity (issue 42): the
// kubelet's node IP, the apiserver's advertise address, etcd's advertised URLs. The VIP must
// never be one: it moves between nodes, an identity must not.
struct IdentityFlag {
  std::string program;  // "kubelet", "kube-apiserver", "etcd"
  std::string flag;     // "--node-ip", "--advertise-address", "--advertise-client-urls", ...
  std::string source;   // where it was read: "/proc/4711/cmdline", ".../etcd.yaml", ...
  std::vector<bgp::IpAddress> addresses;
};

// How this node reaches one of its VIPs (RTM_GETROUTE): bound here (local), through a route,
// or refused.
struct VipRoute {
  bgp::Prefix vip;
  bool local = false;
  std::optional<std::string> interface;
  std::string error;  // the kernel's refusal
  // No route at all (ENETUNREACH), as opposed to a route that refuses (unreachable, blackhole,
  // prohibit) or a rule that does.
  bool noRoute = false;
};

// The route a reply sent from a VIP to a peer takes (RTM_GETROUTE with the VIP as source,
// through the policy rules): it must leave where the peer's route does.
struct VipReplyRoute {
  bgp::Prefix vip;
  bgp::IpAddress peer;
  std::optional<std::string> interface;
  std::string error;  // the kernel's refusal ("Invalid argument": the VIP is not bound here)
};

struct NodeFacts {
  ConfigLayers config;
  int selfPid = 0;  // the process running the checks
  std::vector<LocalAddress> addresses;
  std::optional<std::string> addressesError;
  std::vector<Interface> interfaces;
  std::vector<PeerRoute> routes;  // one per config peer, in order
  // Under /proc/sys/net/ipv4/conf/: "all" and each interface that matters.
  std::map<std::string, InterfaceSysctls> sysctls;
  std::vector<TcpSocket> sockets;
  std::optional<std::string> socketsError;
  std::optional<ApiserverCertificate> certificate;  // health.type apiserver only
  std::optional<uint64_t> effectiveCapabilities;    // CapEff; nullopt when unreadable
  int unprivilegedPortStart = 1024;                 // net.ipv4.ip_unprivileged_port_start
  StateDirectory stateDir;
  std::vector<KeyFile> keyFiles;
  StaticPodDirectory staticPods;
  // The control-plane programs' identities, from their processes (/proc/PID/cmdline), the
  // static-pod manifests and kubeadm's kubelet flags file; kubeletSeen: a kubelet process or
  // that file was found (without either, nothing says what the node IP is).
  std::vector<IdentityFlag> identities;
  bool kubeletSeen = false;
  bool kubeletNodeIpSet = false;  // the kubelet was given --node-ip
  std::vector<VipRoute> vipRoutes;            // one per VIP, in config order
  std::vector<VipReplyRoute> vipReplyRoutes;  // per VIP and peer of its family
  // Other routing daemons running here (bird, FRR's zebra and bgpd, gobgpd, calico-node,
  // cilium-agent, kube-router): each may announce what is bound on an interface it exports.
  std::vector<Process> routingDaemons;
};

}  // namespace vipd::doctor
