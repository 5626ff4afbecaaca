// ConfigReader's readers for the optional top-level sections (reader.h): listen, control,
// drain, health, metrics, mode, handoff and kubernetes. Each is a mapping of its own whose keys
// are checked independently of the rest of the document.
#include <algorithm>

#include <fmt/format.h>
#include <tl/expected.hpp>

#include "config/reader.h"
#include "config/health_target.h"
#include "config/value_rules.h"

namespace vipd::config::internal {
namespace {

// sockaddr_un::sun_path is 108 bytes on Linux, including the terminating NUL.
constexpr size_t kMaxSocketPathLength = 107;
// Longer than a minute is a mistake, not a drain: kubelet would kill the pod first.
constexpr milliseconds kMaxDrainStep{60000};

}  // namespace

void ConfigReader::readListen(const Field& f, Listen& listen) {
  auto m = readMapping(f.value, f.path, {"enabled", "address", "port"});
  if (!m) {
    return;
  }
  if (const Field* e = m->find("enabled")) {
    if (auto enabled = readBool(*e)) {
      listen.enabled = *enabled;
    }
  }
  if (const Field* a = m->find("address")) {
    if (auto address = readAddress(*a)) {
      if (isMulticast(*address) || isBroadcast(*address) || address->isLinkLocalV6()) {
        error(*a, fmt::format("cannot listen on {}; use a local unicast address, 0.0.0.0 or ::",
                              address->toString()));
      } else {
        listen.address = *address;
      }
    }
  }
  if (const Field* p = m->find("port")) {
    if (auto port = readUnsigned(*p, 1, 65535)) {
      listen.port = static_cast<uint16_t>(*port);
    }
  }
}

void ConfigReader::readControl(const Field& f, Control& control) {
  auto m = readMapping(f.value, f.path, {"socket", "instanceSocket", "stateDir", "group"});
  if (!m) {
    return;
  }
  auto readSocket = [this](const Field& s) -> std::optional<std::string> {
    auto socket = readString(s);
    if (!socket) {
      return std::nullopt;
    }
    if (socket->empty() || (*socket)[0] != '/') {
      error(s, fmt::format("the control socket must be an absolute path, got '{}'", *socket));
    } else if (socket->size() > kMaxSocketPathLength) {
      error(s, fmt::format("the control socket path is {} bytes; a Unix socket path holds at "
                           "most {}",
                           socket->size(), kMaxSocketPathLength));
    } else if (socket->find('\0') != std::string::npos) {
      error(s, "the control socket path contains a NUL byte");
    } else {
      return socket;
    }
    return std::nullopt;
  };
  if (const Field* s = m->find("socket")) {
    if (auto socket = readSocket(*s)) {
      control.socket = *socket;
    }
  }
  if (const Field* s = m->find("instanceSocket")) {
    if (auto socket = readSocket(*s)) {
      if (*socket == control.socket) {
        error(*s, fmt::format("control.instanceSocket is control.socket ({}); give this "
                              "instance's own socket another path (in the pod's own volume)",
                              *socket));
      } else {
        control.instanceSocket = *socket;
      }
    }
  }
  if (const Field* d = m->find("stateDir")) {
    if (auto dir = readAbsolutePath(*d, "state directory")) {
      control.stateDir = *dir;
    }
  }
  if (const Field* g = m->find("group")) {
    if (auto group = readString(*g)) {
      if (group->empty()) {
        error(*g, "the control group name is empty");
      } else {
        control.group = *group;
      }
    }
  }
}

void ConfigReader::readDrain(const Field& f, Drain& drain) {
  auto m = readMapping(f.value, f.path, {"gracefulShutdownTime", "timeout", "unbindDelay"});
  if (!m) {
    return;
  }
  if (const Field* d = m->find("gracefulShutdownTime")) {
    if (auto t = readBoundedDuration(*d, milliseconds{0}, kMaxDrainStep)) {
      drain.gracefulShutdownTime = *t;
    }
  }
  if (const Field* d = m->find("timeout")) {
    if (auto t = readBoundedDuration(*d, milliseconds{100}, kMaxDrainStep)) {
      drain.timeout = *t;
    }
  }
  if (const Field* d = m->find("unbindDelay")) {
    if (auto t = readBoundedDuration(*d, milliseconds{0}, kMaxDrainStep)) {
      drain.unbindDelay = *t;
    }
  }
}

void ConfigReader::readGuard(const Field& f, Guard& guard) {
  auto m = readMapping(f.value, f.path,
                       {"minAnnouncers", "expectedAnnouncers", "nodesShareAsn", "confirmTime"});
  if (!m) {
    return;
  }
  if (const Field* n = m->find("minAnnouncers")) {
    if (auto v = readUnsigned(*n, 0, 64)) {
      guard.minAnnouncers = static_cast<uint32_t>(*v);
    }
  }
  if (const Field* n = m->find("expectedAnnouncers")) {
    if (auto v = readUnsigned(*n, 0, 64)) {
      guard.expectedAnnouncers = static_cast<uint32_t>(*v);
    }
  }
  if (const Field* n = m->find("nodesShareAsn")) {
    if (auto v = readBool(*n)) {
      guard.nodesShareAsn = *v;
    }
  }
  if (const Field* t = m->find("confirmTime")) {
    if (auto d = readBoundedDuration(*t, milliseconds{50}, milliseconds{10000})) {
      guard.confirmTime = *d;
    }
  }
  if (guard.expectedAnnouncers != 0 && guard.minAnnouncers >= guard.expectedAnnouncers) {
    error(*m->find(m->find("minAnnouncers") ? "minAnnouncers" : "expectedAnnouncers"),
          fmt::format("minAnnouncers {} leaves no node of {} (expectedAnnouncers) free to be "
                      "withdrawn; use at most {}",
                      guard.minAnnouncers, guard.expectedAnnouncers,
                      guard.expectedAnnouncers - 1));
  }
}

void ConfigReader::readHealth(const Field& f, Health& health) {
  auto m = readMapping(f.value, f.path,
                       {"type", "url", "serverName", "caFile", "certFile", "keyFile", "address",
                        "interval", "timeout", "rise", "fall", "hardFall", "onFailure", "degrade",
                        "unbindWhenUnhealthy"});
  if (!m) {
    return;
  }
  readHealthType(*m, health);
  readHealthFailure(*m, health);
  readApiserverSettings(*m, health);
  if (const Field* a = m->find("address")) {
    if (auto address = readString(*a)) {
      if (!parseAddressPort(*address)) {
        error(*a, fmt::format("'{}' is not an address:port such as 127.0.0.1:6443 or "
                              "[::1]:6443",
                              *address));
      } else {
        health.address = *address;
      }
    }
  }
  readHealthTiming(*m, health);
}

void ConfigReader::readHealthType(const Mapping& m, Health& health) {
  if (const Field* t = require(m, "type")) {
    auto type = readString(*t);
    if (type == "apiserver") {
      health.type = Health::Type::Apiserver;
    } else if (type == "tcp") {
      health.type = Health::Type::Tcp;
    } else if (type == "none") {
      health.type = Health::Type::None;
    } else if (type) {
      error(*t, fmt::format("'{}' is not a health check type; use apiserver, tcp or none (none "
                            "announces without any check)",
                            *type));
    }
  }
}

// url, serverName, caFile, certFile and keyFile: read after the type, which decides whether
// caFile is required.
void ConfigReader::readApiserverSettings(const Mapping& m, Health& health) {
  if (const Field* u = m.find("url")) {
    if (auto url = readString(*u)) {
      if (!url->starts_with("https://") || url->size() <= 8) {
        error(*u, fmt::format("'{}' is not an https:// URL; the apiserver check always verifies "
                              "TLS",
                              *url));
      } else if (auto target = parseHttpsUrl(*url); !target) {
        // The health check parses it the same way (health_target.h): validate refuses what start
        // would.
        error(*u, fmt::format("'{}' is not a URL the apiserver check can use: {}", *url,
                              target.error()));
      } else {
        health.url = *url;
      }
    }
  }
  // Like the other apiserver-only keys it is checked whatever the type (a later switch to
  // apiserver then finds it valid) and used only by the apiserver check.
  if (const Field* n = m.find("serverName")) {
    if (auto name = readString(*n)) {
      if (bgp::IpAddress::parse(*name)) {
        error(*n, fmt::format("'{}' is an IP address; serverName is the DNS name the apiserver's "
                              "certificate must carry, such as {}",
                              *name, kDefaultApiserverServerName));
      } else if (auto problem = dnsNameProblem(*name)) {
        error(*n, fmt::format("{} is not a DNS name: {}", describe(n->value), *problem));
      } else {
        health.serverName = *name;
      }
    }
  }
  const Field* ca = m.find("caFile");
  if (ca) {
    if (auto path = readAbsolutePath(*ca, "CA file")) {
      health.caFile = *path;
    }
  } else if (health.type == Health::Type::Apiserver) {
    require(m, "caFile");  // reports it missing: an unverified apiserver answer proves nothing
  }
  const Field* cert = m.find("certFile");
  const Field* key = m.find("keyFile");
  if (cert) {
    health.certFile = readAbsolutePath(*cert, "client certificate");
  }
  if (key) {
    health.keyFile = readAbsolutePath(*key, "client key");
  }
  if ((cert == nullptr) != (key == nullptr)) {
    error(cert ? *cert : *key, "certFile and keyFile go together: set both or neither");
  }
}

// onFailure, degrade and unbindWhenUnhealthy. A key that the chosen onFailure ignores is an
// error, not a silent no-op.
void ConfigReader::readHealthFailure(const Mapping& m, Health& health) {
  const Field* onFailure = m.find("onFailure");
  if (onFailure) {
    auto text = readString(*onFailure);
    if (text == "withdraw") {
      health.onFailure = Health::OnFailure::Withdraw;
    } else if (text == "degrade") {
      health.onFailure = Health::OnFailure::Degrade;
    } else if (text) {
      error(*onFailure, fmt::format("'{}' is not a failure action; use withdraw (the node's path "
                                    "leaves the fabric) or degrade (it stays, made worse)",
                                    *text));
      return;
    }
  }
  const bool degrade = health.onFailure == Health::OnFailure::Degrade;
  if (const Field* d = m.find("degrade")) {
    if (!degrade) {
      error(*d, "degrade applies only with onFailure: degrade");
    } else if (auto dm = readMapping(d->value, d->path, {"prepend", "localPref", "communities"})) {
      if (const Field* p = dm->find("prepend")) {
        if (auto n = readUnsigned(*p, 1, 10)) {
          health.degrade.prepend = static_cast<uint32_t>(*n);
        }
      }
      if (const Field* l = dm->find("localPref")) {
        if (auto n = readUnsigned(*l, 0, 99)) {
          health.degrade.localPref = static_cast<uint32_t>(*n);
        }
      }
      if (const Field* c = dm->find("communities")) {
        readCommunities(*c, health.degrade.communities, kMaxDegradeCommunities);
        // Well-known communities (RFC 1997, 7999, 8326) change what routers do with the path:
        // BLACKHOLE drops the VIP's traffic, NO_ADVERTISE/NO_EXPORT hide the path, and
        // GRACEFUL_SHUTDOWN is the drain's. A degraded path must stay a usable path.
        for (size_t i = 0; i < health.degrade.communities.size(); ++i) {
          const Community& community = health.degrade.communities[i];
          if (community.asn == 0xFFFF) {
            error(*c, fmt::format("{}:{} is a well-known community ({}); a degraded path must "
                                  "stay usable: choose one from your own AS",
                                  community.asn, community.value,
                                  community.value == 666     ? "BLACKHOLE, RFC 7999: routers "
                                                               "would drop the VIP's traffic"
                                  : community.value == 0     ? "GRACEFUL_SHUTDOWN, the drain's"
                                  : community.value >= 65281 ? "NO_EXPORT/NO_ADVERTISE: the path "
                                                               "would not spread"
                                                             : "reserved, RFC 1997"));
          }
        }
      }
    }
  }
  if (const Field* u = m.find("unbindWhenUnhealthy")) {
    if (degrade) {
      error(*u, "unbindWhenUnhealthy applies only with onFailure: withdraw (a degraded node "
                "keeps announcing, so it keeps its VIPs)");
    } else if (auto unbind = readBool(*u)) {
      health.unbindWhenUnhealthy = *unbind;
    }
  }
}

// interval, timeout (which must not be longer than the interval), rise and fall.
void ConfigReader::readHealthTiming(const Mapping& m, Health& health) {
  // Comparing with a value already reported as wrong (and left at its default) would only add a
  // misleading second error.
  bool timingValid = true;
  if (const Field* i = m.find("interval")) {
    if (auto d = readBoundedDuration(*i, milliseconds{100}, milliseconds{60000})) {
      health.interval = *d;
    } else {
      timingValid = false;
    }
  }
  if (const Field* t = m.find("timeout")) {
    if (auto d = readBoundedDuration(*t, milliseconds{10}, milliseconds{60000})) {
      health.timeout = *d;
    } else {
      timingValid = false;
    }
  }
  if (timingValid && health.timeout > health.interval) {
    error(*m.find(m.find("timeout") ? "timeout" : "interval"),
          fmt::format("timeout {} is longer than interval {}; checks would overlap",
                      formatDuration(health.timeout), formatDuration(health.interval)));
  }
  if (const Field* r = m.find("rise")) {
    if (auto n = readUnsigned(*r, 1, 100)) {
      health.rise = static_cast<uint32_t>(*n);
    }
  }
  if (const Field* fl = m.find("fall")) {
    if (auto n = readUnsigned(*fl, 1, 100)) {
      health.fall = static_cast<uint32_t>(*n);
    }
  }
  // Above fall it would never act before fall does: refused rather than silently ignored.
  health.hardFall = std::min<uint32_t>(2, health.fall);
  if (const Field* h = m.find("hardFall")) {
    if (auto n = readUnsigned(*h, 0, 100)) {
      if (*n > health.fall) {
        error(*h, fmt::format("hardFall {} is more than fall {}: hard failures would never "
                              "withdraw sooner than any failure does; use 0 to {}",
                              *n, health.fall, health.fall));
      } else {
        health.hardFall = static_cast<uint32_t>(*n);
      }
    }
  }
}

namespace {

// A metrics listener's address:port, or why it cannot be one. Wildcards (0.0.0.0, ::) are fine;
// a multicast, broadcast or link-local address (which needs a zone) cannot be bound.
tl::expected<ListenAddress, std::string> listenAddress(std::string_view text) {
  auto addressPort = parseAddressPort(text);
  if (!addressPort) {
    return tl::unexpected(
        fmt::format("'{}' is not an address:port such as 127.0.0.1:9472 or [::1]:9472", text));
  }
  const bgp::IpAddress& address = addressPort->first;
  if (isMulticast(address) || isBroadcast(address) || address.isLinkLocalV6()) {
    return tl::unexpected(fmt::format(
        "cannot listen on {}; use a local unicast address (the node's), 127.0.0.1, 0.0.0.0 or ::",
        address.toString()));
  }
  return ListenAddress{address, addressPort->second};
}

// Whether two listeners would ask for the same socket: the same port on the same address, or on
// a wildcard of the same family (IPv6 listeners are v6-only, so :: and 0.0.0.0 do not overlap).
bool overlaps(const ListenAddress& a, const ListenAddress& b) {
  return a.port == b.port && a.address.isV4() == b.address.isV4() &&
         (a.address == b.address || a.address.isZero() || b.address.isZero());
}

std::string spell(const ListenAddress& l) {
  return l.address.isV6() ? fmt::format("[{}]:{}", l.address.toString(), l.port)
                          : fmt::format("{}:{}", l.address.toString(), l.port);
}

}  // namespace

void ConfigReader::readMetrics(const Field& f, Metrics& metrics) {
  auto m = readMapping(f.value, f.path, {"listen", "healthListen"});
  if (!m) {
    return;
  }
  bool listenValid = true;
  if (const Field* l = m->find("listen")) {
    listenValid = false;
    if (auto text = readString(*l)) {
      if (auto listen = listenAddress(*text)) {
        metrics.address = listen->address;
        metrics.port = listen->port;
        listenValid = true;
      } else {
        error(*l, listen.error());
      }
    }
  }
  if (const Field* h = m->find("healthListen")) {
    auto text = readString(*h);
    if (!text) {
      return;
    }
    auto health = listenAddress(*text);
    if (!health) {
      error(*h, health.error());
      return;
    }
    const ListenAddress metricsListen{metrics.address, metrics.port};
    if (listenValid && overlaps(*health, metricsListen)) {
      error(*h, fmt::format("{} overlaps metrics.listen ({}): the two listeners need different "
                            "ports, or different specific addresses",
                            spell(*health), spell(metricsListen)));
      return;
    }
    metrics.health = *health;
  }
}

void ConfigReader::readMode(const Field& f, Config& config) {
  auto text = readString(f);
  if (!text) {
    return;
  }
  if (*text == "standalone") {
    config.mode = Mode::Standalone;
  } else if (*text == "static-pod") {
    config.mode = Mode::StaticPod;
  } else if (*text == "daemonset") {
    config.mode = Mode::DaemonSet;
  } else {
    error(f, fmt::format("unknown mode '{}'; expected standalone, static-pod or daemonset",
                         *text));
  }
}

void ConfigReader::readHandoff(const Field& f, Handoff& handoff) {
  auto m = readMapping(f.value, f.path, {"dir", "restartTime"});
  if (!m) {
    return;
  }
  if (const Field* d = m->find("dir")) {
    if (auto dir = readAbsolutePath(*d, "handoff directory")) {
      handoff.dir = *dir;
    }
  }
  if (const Field* r = m->find("restartTime")) {
    // RFC 4724 carries whole seconds in 12 bits; more than a minute is not "short".
    if (auto t = readBoundedDuration(*r, milliseconds{1000}, milliseconds{60000})) {
      if (t->count() % 1000 != 0) {
        error(*r, fmt::format("the restart time is sent in whole seconds; {} is not",
                              formatDuration(*t)));
      } else {
        handoff.restartTime = *t;
      }
    }
  }
}

}  // namespace vipd::config::internal

namespace vipd::config {

std::optional<std::string> nodeNameProblem(std::string_view name) {
  if (name.empty() || name.size() > kMaxNodeNameLength) {
    return fmt::format("a Node's name is 1 to {} characters", kMaxNodeNameLength);
  }
  size_t label = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (c == '.') {
      if (label == 0 || name[i - 1] == '-') {
        return std::string("a label of a Node's name is empty or ends in '-'");
      }
      label = 0;
      continue;
    }
    if (!alnum && c != '-') {
      return std::string("a Node's name holds only lowercase letters, digits, '-' and '.'");
    }
    if (label == 0 && c == '-') {
      return std::string("a label of a Node's name starts with a letter or digit");
    }
    ++label;
  }
  if (label == 0 || name.back() == '-') {
    return std::string("a Node's name ends with a letter or digit");
  }
  return std::nullopt;
}

}  // namespace vipd::config

namespace vipd::config::internal {

void ConfigReader::readKubernetes(const Mapping& top, Config& config) {
  Kubernetes& k = config.kubernetes;
  const Field* f = top.find("kubernetes");
  std::optional<bool> enabled;
  // Where an error about the section as a whole goes: `enabled` when written, else the section.
  // Copies: the Mapping they come from ends with the block below.
  std::optional<Field> at;
  if (f != nullptr) {
    at = *f;
    auto m = readMapping(f->value, f->path, {"enabled", "kubeconfig", "nodeName"});
    if (!m) {
      return;
    }
    if (const Field* e = m->find("enabled")) {
      at = *e;
      enabled = readBool(*e);
      if (!enabled) {
        return;
      }
    }
    if (const Field* c = m->find("kubeconfig")) {
      if (auto path = readAbsolutePath(*c, "kubeconfig")) {
        k.kubeconfig = *path;
      }
    }
    if (const Field* n = m->find("nodeName")) {
      if (auto name = readString(*n)) {
        if (auto problem = nodeNameProblem(*name)) {
          error(*n, fmt::format("'{}' is not a Node's name: {}", shortKey(*name), *problem));
        } else {
          k.nodeName = *name;
        }
      }
    }
    if (!ok()) {
      return;
    }
  }
  bool daemonSet = config.mode == Mode::DaemonSet;
  k.enabled = enabled.value_or(daemonSet || k.kubeconfig.has_value());
  if (!k.enabled || daemonSet) {
    return;  // a DaemonSet's pod has its service account and NODE_NAME
  }
  if (!k.kubeconfig) {
    error(*at, fmt::format("outside mode daemonset vipd has no service account: set "
                          "kubernetes.kubeconfig (an admin kubeconfig on a static-pod or systemd "
                          "host), or kubernetes.enabled: false; mode is {}",
                          modeName(config.mode)));
  } else if (!k.nodeName) {
    error(*at, fmt::format("kubernetes.nodeName is required outside mode daemonset (only the "
                          "DaemonSet's pod gets it from NODE_NAME); mode is {}",
                          modeName(config.mode)));
  }
}

}  // namespace vipd::config::internal
