// The checks of what runs on the node and what vipd needs from it: the BGP port and sessions,
// the apiserver's certificate, capabilities, the state directory, the key files and the
// static-pod directory. checks.cc has judge() and the network checks.
#include <algorithm>
#include <set>
#include <utility>

#include "doctor/check_text.h"
#include "doctor/checks.h"
#include "doctor/fact_parsing.h"

namespace vipd::doctor {
namespace {

using text::from;
using text::list;

constexpr uint16_t kBgpPort = 179;

bool isVipd(const NodeFacts& facts, const Process& process) {
  return process.pid == facts.selfPid || process.name == "vipd";
}

std::string owner(const TcpSocket& socket) {
  return socket.owner ? fmt::format("{} (pid {})", socket.owner->name, socket.owner->pid)
                      : std::string("a process this one cannot see");
}

std::string endpoint(const bgp::IpAddress& address, uint16_t port) {
  return address.isV4() ? fmt::format("{}:{}", address.toString(), port)
                        : fmt::format("[{}]:{}", address.toString(), port);
}

// Whether a listener on `a` takes connections vipd's listener on `b` would (same port assumed):
// the same address, or a wildcard on either side (an IPv6 wildcard takes IPv4 too, unless
// IPV6_V6ONLY, which /proc does not show).
bool overlaps(const bgp::IpAddress& a, const bgp::IpAddress& b) {
  if (a.isZero() && (a.isV6() || b.isV4())) {
    return true;
  }
  if (b.isZero() && (b.isV6() || a.isV4())) {
    return true;
  }
  return a == b;
}

// The local address vipd's session with peer `i` uses: its sourceAddress, else the kernel's
// choice on the way there.
std::optional<bgp::IpAddress> vipdSource(const config::Config& config, const NodeFacts& facts,
                                         size_t i) {
  if (config.peers[i].sourceAddress) {
    return config.peers[i].sourceAddress;
  }
  if (i < facts.routes.size()) {
    return facts.routes[i].source;
  }
  return std::nullopt;
}

std::string capabilityName(int bit) {
  switch (bit) {
    case kCapNetBindService:
      return "CAP_NET_BIND_SERVICE";
    case kCapNetAdmin:
      return "CAP_NET_ADMIN";
    case kCapNetRaw:
      return "CAP_NET_RAW";
  }
  return fmt::format("capability {}", bit);
}

bool isHidden(const StaticPodFile& file) { return file.name.starts_with("."); }

std::string peerAddresses(const config::Config& config) {
  std::vector<std::string> addresses;
  for (const auto& p : config.peers) {
    addresses.push_back(p.address.toString());
  }
  return list(addresses);
}

}  // namespace

Check checkBgpPort(const config::Config& config, const NodeFacts& facts) {
  Check check{"bgp-port", Verdict::Ok, "", ""};
  if (facts.socketsError) {
    return unobserved(std::move(check), fmt::format("cannot read the kernel's TCP table ({}); not checked", *facts.socketsError));
  }
  std::set<uint16_t> ports{kBgpPort};
  if (config.listen.enabled) {
    ports.insert(config.listen.port);
  }
  std::vector<std::string> conflicts;  // where vipd's own listener must bind
  std::vector<std::string> others;
  std::vector<std::string> unseen;
  size_t own = 0;
  for (const auto& s : facts.sockets) {
    if (s.state != TcpSocket::State::Listen || ports.count(s.localPort) == 0) {
      continue;
    }
    if (s.owner && isVipd(facts, *s.owner)) {
      ++own;
      continue;
    }
    const std::string where =
        fmt::format("{} listens on {}", owner(s), endpoint(s.local, s.localPort));
    if (config.listen.enabled && s.localPort == config.listen.port &&
        overlaps(s.local, config.listen.address)) {
      conflicts.push_back(where);
    } else if (!s.owner) {
      unseen.push_back(where);
    } else {
      others.push_back(where);
    }
  }
  const std::string listenAt = endpoint(config.listen.address, config.listen.port);
  if (!conflicts.empty()) {
    check.verdict = Verdict::Fail;
    check.detail = fmt::format(
        "{}, where vipd's BGP listener (listen.enabled, {}) must bind: vipd cannot start, or a "
        "peer that dials this node reaches the other daemon",
        list(conflicts), listenAt);
    check.fix = "stop that daemon (a CNI's BGP speaker, a leftover BIRD or FRR), or set "
                "listen.enabled: false so vipd only dials out, or give listen another address";
    return check;
  }
  if (!others.empty() || !unseen.empty()) {
    // vipd dials out and leaves port 179 alone, so a CNI's speaker may listen there
    // (docs/config.md); what breaks is a daemon that also peers with vipd's peers, which
    // bgp-sessions fails. Warned: a router set to dial this node reaches that daemon.
    others.insert(others.end(), unseen.begin(), unseen.end());
    check.verdict = Verdict::Warn;
    check.detail = fmt::format(
        "{}: vipd dials out (listen.enabled is {}), so a peer that dials this node's port {} "
        "reaches that daemon, not vipd",
        list(others), config.listen.enabled ? "true, elsewhere" : "false", kBgpPort);
    check.fix = fmt::format(
        "make sure vipd's peers ({}) do not expect to reach vipd by dialling this node; stop "
        "the daemon if it is a leftover{}",
        peerAddresses(config),
        unseen.empty() ? "" : "; run vipd doctor as root on the host to see which process it is");
    return check;
  }
  check.detail = own > 0 ? fmt::format("only vipd listens on port {}", fmt::join(ports, " and "))
                         : fmt::format("nothing listens on port {}{}", kBgpPort,
                                       config.listen.enabled
                                           ? fmt::format(" (vipd's listener: {})", listenAt)
                                           : std::string(" (vipd dials out)"));
  return check;
}

Check checkBgpSessions(const config::Config& config, const NodeFacts& facts) {
  Check check{"bgp-sessions", Verdict::Ok, "", ""};
  if (config.peers.empty()) {
    check.detail = "no peers";
    return check;
  }
  if (facts.socketsError) {
    return unobserved(std::move(check), fmt::format("cannot read the kernel's TCP table ({}); not checked", *facts.socketsError));
  }
  const uint16_t listenPort = config.listen.enabled ? config.listen.port : kBgpPort;
  std::vector<std::string> clashes;
  std::vector<std::string> elsewhere;
  std::vector<std::string> unseen;
  size_t own = 0;
  for (const auto& s : facts.sockets) {
    if (s.state != TcpSocket::State::Established) {
      continue;
    }
    for (size_t i = 0; i < config.peers.size(); ++i) {
      const auto& peer = config.peers[i];
      if (s.remote != peer.address ||
          (s.remotePort != peer.port && s.localPort != listenPort && s.localPort != kBgpPort)) {
        continue;
      }
      if (s.owner && isVipd(facts, *s.owner)) {
        ++own;
        continue;
      }
      const std::string what =
          fmt::format("{} holds a BGP session with peer {} ({} - {})", owner(s),
                      peer.address.toString(), endpoint(s.local, s.localPort),
                      endpoint(s.remote, s.remotePort));
      auto source = vipdSource(config, facts, i);
      if (!s.owner) {
        unseen.push_back(what);
      } else if (source && *source != s.local) {
        elsewhere.push_back(what);
      } else {
        clashes.push_back(what);
      }
    }
  }
  if (!clashes.empty()) {
    check.verdict = Verdict::Fail;
    check.detail = fmt::format(
        "{}, from the address vipd uses: the peer sees two BGP speakers at one address, and "
        "one of the two sessions keeps losing (a collision, or a session stuck in Active)",
        list(clashes));
    check.fix = "stop that daemon, or have vipd peer from another address "
                "(peers[].sourceAddress) that the router is configured for";
    return check;
  }
  if (!unseen.empty() || !elsewhere.empty()) {
    check.verdict = Verdict::Warn;
    check.inconclusive = !unseen.empty();
    std::vector<std::string> all = unseen;
    all.insert(all.end(), elsewhere.begin(), elsewhere.end());
    check.detail = fmt::format(
        "{}{}", list(all),
        elsewhere.empty() ? "" : "; from another local address than vipd's, so the router can "
                                 "tell the two apart if it is configured for both");
    check.fix = unseen.empty() ? "make sure the router expects both sessions"
                               : "run vipd doctor as root on the host to see which process "
                                 "holds it (in a static-pod or DaemonSet rollout it may be the "
                                 "node's other vipd instance)";
    return check;
  }
  check.detail = own > 0 ? fmt::format("no other process holds a session with vipd's peers "
                                       "(vipd's own: {})",
                                       own)
                         : "no process holds a session with vipd's peers yet";
  return check;
}

Check checkApiserverCertificate(const config::Config& config, const NodeFacts& facts) {
  Check check{"apiserver-certificate", Verdict::Ok, "", ""};
  if (config.health.type != config::Health::Type::Apiserver || !facts.certificate) {
    check.verdict = Verdict::Warn;
    check.detail = fmt::format(
        "health.type is {}: no apiserver URL and CA to read the certificate from, so the VIPs "
        "were not checked against its names",
        config.health.type == config::Health::Type::Tcp ? "tcp" : "none");
    check.fix = "set health.type: apiserver (with url and caFile), or check by hand: openssl "
                "s_client -connect 127.0.0.1:6443 </dev/null | openssl x509 -noout -ext "
                "subjectAltName";
    return check;
  }
  const auto& cert = *facts.certificate;
  if (cert.fetchError) {
    check.verdict = Verdict::Warn;
    check.inconclusive = true;
    check.detail = fmt::format("cannot read the certificate served at {}: {}; the VIPs were not "
                               "checked against its names",
                               cert.endpoint, *cert.fetchError);
    check.fix = "run vipd doctor again once the apiserver answers (vipd itself checks again when "
                "its health gate first opens)";
    return check;
  }
  std::vector<std::string> names;
  for (const auto& d : cert.dnsNames) {
    names.push_back("DNS:" + d);
  }
  for (const auto& ip : cert.ipAddresses) {
    names.push_back("IP:" + ip.toString());
  }
  const std::string sans =
      names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "));
  std::vector<std::string> missing;
  std::vector<std::string> present;
  for (const auto& vip : config.vips) {
    const auto& a = vip.prefix.address;
    (std::find(cert.ipAddresses.begin(), cert.ipAddresses.end(), a) != cert.ipAddresses.end()
         ? present
         : missing)
        .push_back(a.toString());
  }
  std::vector<std::string> problems;
  std::vector<std::string> fixes;
  if (cert.verifyError) {
    problems.push_back(fmt::format("the certificate served at {} does not verify against "
                                   "health.caFile {}: {}",
                                   cert.endpoint, config.health.caFile, *cert.verifyError));
    fixes.push_back("point health.caFile at the CA that signs the apiserver's certificate "
                    "(kubeadm: /etc/kubernetes/pki/ca.crt)");
  }
  if (!missing.empty()) {
    problems.push_back(fmt::format(
        "the certificate served at {} lacks {} {} (its subjectAltNames: {}): clients that "
        "reach the apiserver through {} fail TLS",
        cert.endpoint, missing.size() == 1 ? "VIP" : "VIPs", list(missing), sans,
        missing.size() == 1 ? "it" : "them"));
    fixes.push_back(
        "add every VIP to the apiserver certificate's subjectAltNames (kubeadm: "
        "apiServer.certSANs, then `kubeadm init phase certs apiserver` with the old certificate "
        "moved aside; k3s and RKE2: tls-san) and restart the apiserver");
  }
  if (!problems.empty()) {
    check.verdict = Verdict::Fail;
    check.detail = fmt::format("{}", fmt::join(problems, "; "));
    check.fix = fmt::format("{}", fmt::join(fixes, "; "));
    return check;
  }
  check.detail = fmt::format(
      "the certificate served at {} verifies against {} and names every VIP ({})",
      cert.endpoint, config.health.caFile, list(present));
  return check;
}

Check checkCapabilities(const config::Config& config, const NodeFacts& facts) {
  Check check{"capabilities", Verdict::Ok, "", ""};
  if (!facts.effectiveCapabilities) {
    check.verdict = Verdict::Warn;
    check.inconclusive = true;
    check.detail = "cannot read this process's effective capabilities (/proc/self/status)";
    return check;
  }
  struct Need {
    int bit;
    std::string why;
  };
  std::vector<Need> needs{{kCapNetAdmin, "adding the VIPs to their interfaces"}};
  std::vector<std::string> lowPorts;
  if (config.listen.enabled && config.listen.port < facts.unprivilegedPortStart) {
    lowPorts.push_back(fmt::format("listen.port {}", config.listen.port));
  }
  if (config.metrics.port < facts.unprivilegedPortStart) {
    lowPorts.push_back(fmt::format("metrics.listen port {}", config.metrics.port));
  }
  if (config.metrics.health && config.metrics.health->port < facts.unprivilegedPortStart) {
    lowPorts.push_back(fmt::format("metrics.healthListen port {}", config.metrics.health->port));
  }
  if (!lowPorts.empty()) {
    needs.push_back({kCapNetBindService,
                     fmt::format("binding {} (below net.ipv4.ip_unprivileged_port_start {})",
                                 list(lowPorts), facts.unprivilegedPortStart)});
  }
  if (config.returnPath.mode != config::ReturnPath::Mode::Off) {
    needs.push_back({kCapNetRaw, "the return-path check's ICMP echoes (returnPath.mode is not "
                                 "off; without it /readyz fails)"});
  }
  std::vector<std::string> held;
  std::vector<std::string> missing;
  for (const auto& need : needs) {
    const bool has = (*facts.effectiveCapabilities >> need.bit) & 1U;
    (has ? held : missing).push_back(fmt::format("{} ({})", capabilityName(need.bit), need.why));
  }
  if (missing.empty()) {
    check.detail = fmt::format("this process holds what the config needs: {}", list(held));
    return check;
  }
  check.verdict = Verdict::Fail;
  check.detail = fmt::format("this process (pid {}) lacks {}", facts.selfPid, list(missing));
  check.fix = "run vipd with them (the pod's securityContext.capabilities.add, systemd's "
              "AmbientCapabilities=); `vipd doctor` speaks for vipd only when run as vipd runs: "
              "as root on the host, or in vipd's pod";
  return check;
}

Check checkStateDir(const config::Config& config, const NodeFacts& facts) {
  Check check{"state-dir", Verdict::Ok, "", ""};
  const auto& dir = facts.stateDir;
  const std::string path = config.control.stateDir;
  const std::string fix = fmt::format("create {} writable by the user vipd runs as, or set "
                                      "control.stateDir (in a pod: a hostPath volume)",
                                      path);
  if (!dir.exists) {
    if (dir.parentWritable) {
      check.detail = fmt::format("control.stateDir {} does not exist yet; vipd creates it "
                                 "(its parent {} is writable)",
                                 path, dir.existingParent);
      return check;
    }
    check.verdict = Verdict::Fail;
    check.detail = fmt::format("control.stateDir {} does not exist and cannot be created in {}{}",
                               path, dir.existingParent,
                               dir.problem.empty() ? "" : ": " + dir.problem);
    check.fix = fix;
    return check;
  }
  if (!dir.directory) {
    check.verdict = Verdict::Fail;
    check.detail = fmt::format("control.stateDir {} is not a directory", path);
    check.fix = fix;
    return check;
  }
  if (!dir.writable) {
    check.verdict = Verdict::Fail;
    check.detail = fmt::format(
        "control.stateDir {} is not writable{}: `vipctl withdraw` cannot persist, and vipd "
        "cannot take its instance lock",
        path, dir.problem.empty() ? "" : " (" + dir.problem + ")");
    check.fix = fix;
    return check;
  }
  check.detail = fmt::format("control.stateDir {} is a writable directory", path);
  return check;
}

Check checkKeyFiles(const config::Config& /*config*/, const NodeFacts& facts) {
  Check check{"password-files", Verdict::Ok, "", ""};
  if (facts.keyFiles.empty()) {
    check.detail = "no peer has a passwordFile";
    return check;
  }
  std::vector<std::string> problems;
  for (const auto& key : facts.keyFiles) {
    if (key.problem) {
      const std::string path = fmt::format("peers[{}].passwordFile", key.peer);
      problems.push_back(fmt::format("{}{}: {}", path, from(facts, path), *key.problem));
    }
  }
  if (problems.empty()) {
    check.detail = fmt::format("{} key file(s), each a regular file only its owner can read or "
                               "change, as vipd's start requires",
                               facts.keyFiles.size());
    return check;
  }
  check.verdict = Verdict::Fail;
  check.detail = fmt::format("{}; vipd refuses to start with {}", fmt::join(problems, "; "),
                             problems.size() == 1 ? "it" : "them");
  check.fix = "make each key file a regular file of 1 to 80 bytes with mode 0600, owned by the "
              "user vipd runs as";
  return check;
}

Check checkStaticPods(const config::Config& config, const NodeFacts& facts) {
  Check check{"static-pods", Verdict::Ok, "", ""};
  const auto& dir = facts.staticPods;
  if (!dir.exists) {
    if (dir.given) {
      check.verdict = Verdict::Warn;
      check.detail = fmt::format("--manifests-dir {} does not exist", dir.path);
      check.fix = "name kubelet's staticPodPath (kubeadm: /etc/kubernetes/manifests)";
    } else {
      check.detail = fmt::format(
          "no static-pod directory here ({} {}): not a kubelet node, or not visible to this "
          "process",
          dir.lookedAt.size() == 1 ? "looked at" : "looked at each of", list(dir.lookedAt));
      if (config.mode == config::Mode::StaticPod) {
        check.detail += "; pass --manifests-dir to check kubelet's";
      }
    }
    return check;
  }
  if (dir.error) {
    check.verdict = Verdict::Warn;
    check.inconclusive = true;
    check.detail = fmt::format("cannot list {}: {}", dir.path, *dir.error);
    return check;
  }
  std::vector<std::string> parsed;   // kubelet parses them as pods
  std::vector<std::string> ignored;  // hidden or not regular: kubelet skips them
  std::vector<std::string> vipds;
  size_t manifests = 0;
  for (const auto& f : dir.files) {
    if (f.runsVipd && f.regular && !isHidden(f)) {
      vipds.push_back(f.name);
    }
    if (!f.strayReason) {
      ++manifests;
      continue;
    }
    (f.regular && !isHidden(f) ? parsed : ignored)
        .push_back(fmt::format("{} ({})", f.name, *f.strayReason));
  }
  std::vector<std::string> problems;
  std::vector<std::string> fixes;
  bool fail = false;
  if (vipds.size() > 1) {
    fail = true;
    problems.push_back(fmt::format("{} files run vipd: {}: kubelet starts a pod for each", vipds.size(),
                                   list(vipds)));
    fixes.push_back("keep one (`vipd render` writes vipd.yaml) and move the others out of the "
                    "directory");
  }
  if (!parsed.empty()) {
    fail = true;
    problems.push_back(fmt::format("{} holds {}; kubelet reads every file there whose name does "
                                   "not start with '.'",
                                   dir.path, list(parsed)));
  }
  if (!ignored.empty()) {
    problems.push_back(fmt::format("{} holds {}", dir.path, list(ignored)));
  }
  if (!parsed.empty() || !ignored.empty()) {
    fixes.push_back(fmt::format("move the stray files out of {} (`vipd render` keeps old "
                                "manifests in its --archive-dir)",
                                dir.path));
  }
  if (!problems.empty()) {
    check.verdict = fail ? Verdict::Fail : Verdict::Warn;
    check.detail = fmt::format("{}", fmt::join(problems, "; "));
    check.fix = fmt::format("{}", fmt::join(fixes, "; "));
    return check;
  }
  check.detail = fmt::format("{} holds {} manifest(s), {}, and no stray file", dir.path, manifests,
                             vipds.empty() ? std::string("none of them vipd's")
                                           : fmt::format("{} vipd's", vipds.front()));
  return check;
}

}  // namespace vipd::doctor
