#include "daemon/doctor/fact_gatherer.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "bootstrap/distro.h"
#include "bootstrap/manifest_files.h"
#include "daemon/base/tcp_table.h"
#include "daemon/doctor/apiserver_certificate.h"
#include "daemon/session/key.h"
#include "doctor/checks.h"
#include "doctor/fact_parsing.h"
#include "doctor/identity_flags.h"
#include "netlink/address_table.h"
#include "netlink/route_lookup.h"

namespace vipd::daemon {
namespace {

namespace fs = std::filesystem;

// A manifest, a /proc or sysctl file: small. More is not read (a manifest that large is judged
// on its first megabyte).
constexpr size_t kMaxFileBytes = 1024 * 1024;

// The content of a regular file, at most kMaxFileBytes; nullopt when it cannot be opened or is
// not a regular file. Opened non-blocking and checked after opening, so a FIFO put in place of
// a file is refused at once, never waited on.
std::optional<std::string> readSmallFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    return std::nullopt;
  }
  struct stat st {};
  std::optional<std::string> out;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    std::string text;
    char buffer[8192];
    for (;;) {
      const ssize_t n = ::read(fd, buffer, std::min(sizeof buffer, kMaxFileBytes - text.size()));
      if (n <= 0) {
        break;
      }
      text.append(buffer, static_cast<size_t>(n));
      if (text.size() >= kMaxFileBytes) {
        break;
      }
    }
    out = std::move(text);
  }
  ::close(fd);
  return out;
}

bgp::IpAddress toAddress(const netlink::InterfaceAddress& a) {
  if (a.family == AF_INET) {
    return bgp::IpAddress::v4({a.bytes[0], a.bytes[1], a.bytes[2], a.bytes[3]});
  }
  return bgp::IpAddress::v6(a.bytes);
}

netlink::InterfaceAddress toInterfaceAddress(const bgp::IpAddress& a) {
  netlink::InterfaceAddress out;
  out.family = a.isV4() ? AF_INET : AF_INET6;
  out.bytes = a.bytes;
  out.prefixLength = static_cast<uint8_t>(a.isV4() ? 32 : 128);
  return out;
}

// ::ffff:192.0.2.1 (an IPv4 peer of an IPv6 socket) -> 192.0.2.1.
bgp::IpAddress unmapped(const bgp::IpAddress& a) {
  static constexpr std::array<uint8_t, 12> kPrefix{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
  if (a.isV6() && std::equal(kPrefix.begin(), kPrefix.end(), a.bytes.begin())) {
    return bgp::IpAddress::v4({a.bytes[12], a.bytes[13], a.bytes[14], a.bytes[15]});
  }
  return a;
}

void gatherAddresses(doctor::NodeFacts& facts) {
  auto table = netlink::openKernelAddressTable();
  if (!table) {
    facts.addressesError = table.error().toString();
    return;
  }
  auto links = (*table)->links();
  auto addresses = (*table)->addresses();
  if (!links || !addresses) {
    facts.addressesError = (!links ? links.error() : addresses.error()).toString();
    return;
  }
  for (const auto& link : *links) {
    facts.interfaces.push_back({link.name, link.kind, link.loopback});
  }
  for (const auto& entry : *addresses) {
    facts.addresses.push_back({{toAddress(entry.address), entry.address.prefixLength},
                               entry.ifname});
  }
}

void gatherRoutes(const config::Config& config, doctor::NodeFacts& facts) {
  for (const auto& peer : config.peers) {
    doctor::PeerRoute route;
    route.peer = peer.address;
    auto found = netlink::lookupRoute(toInterfaceAddress(peer.address));
    if (!found) {
      route.error = found.error().reason;
    } else {
      route.interface = found->ifname;
      route.local = found->local;
      if (found->gateway) {
        route.gateway = toAddress(*found->gateway);
      }
      if (found->source) {
        route.source = toAddress(*found->source);
      }
    }
    facts.routes.push_back(std::move(route));
  }
}

// A name the kernel could give an interface, and so safe in a /proc/sys path.
bool isInterfaceName(const std::string& name) {
  return !name.empty() && name.size() < 16 && name != "." && name != ".." &&
         name.find('/') == std::string::npos;
}

void gatherSysctls(const config::Config& config, doctor::NodeFacts& facts) {
  std::set<std::string> names{"all"};
  for (const auto& a : facts.addresses) {
    if (a.address.address.isV4()) {
      names.insert(a.interface);
    }
  }
  for (const auto& name : doctor::ingressInterfaces(config, facts)) {
    names.insert(name);
  }
  for (const auto& vip : config.vips) {
    names.insert(vip.interface);
  }
  for (const auto& name : names) {
    if (!isInterfaceName(name)) {
      continue;
    }
    const std::string dir = "/proc/sys/net/ipv4/conf/" + name + "/";
    auto read = [&](const char* key) -> std::optional<int> {
      auto text = readSmallFile(dir + key);
      return text ? doctor::parseSysctlInteger(*text) : std::nullopt;
    };
    doctor::InterfaceSysctls values{read("rp_filter"), read("arp_ignore"), read("arp_announce")};
    if (values.rpFilter || values.arpIgnore || values.arpAnnounce) {
      facts.sysctls[name] = values;
    }
  }
  if (auto start = readSmallFile("/proc/sys/net/ipv4/ip_unprivileged_port_start")) {
    if (auto value = doctor::parseSysctlInteger(*start)) {
      facts.unprivilegedPortStart = *value;
    }
  }
}

// "socket:[12345]", what a descriptor of a socket links to, -> 12345.
std::optional<uint64_t> socketInode(std::string_view link) {
  constexpr std::string_view kPrefix = "socket:[";
  if (!link.starts_with(kPrefix) || !link.ends_with("]")) {
    return std::nullopt;
  }
  link = link.substr(kPrefix.size(), link.size() - kPrefix.size() - 1);
  uint64_t inode = 0;
  auto [end, error] = std::from_chars(link.data(), link.data() + link.size(), inode);
  if (link.empty() || error != std::errc() || end != link.data() + link.size()) {
    return std::nullopt;
  }
  return inode;
}

// The process holding each socket inode in `wanted`: the one with a descriptor that links to
// "socket:[inode]". Processes this one may not look into (another user's, without
// CAP_SYS_PTRACE) and other PID namespaces are not seen.
// closedir as a type: a function pointer's attributes (nonnull) would be dropped in a template
// argument.
struct DirCloser {
  void operator()(DIR* dir) const { ::closedir(dir); }
};
using DirHandle = std::unique_ptr<DIR, DirCloser>;

std::map<uint64_t, doctor::Process> socketOwners(const std::set<uint64_t>& wanted) {
  std::map<uint64_t, doctor::Process> owners;
  if (wanted.empty()) {
    return owners;
  }
  DirHandle proc(::opendir("/proc"));
  if (!proc) {
    return owners;
  }
  while (dirent* process = ::readdir(proc.get())) {
    int pid = 0;
    const std::string_view name = process->d_name;
    auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (error != std::errc() || end != name.data() + name.size() || pid <= 0) {
      continue;
    }
    const std::string fdDir = "/proc/" + std::string(name) + "/fd";
    DirHandle fds(::opendir(fdDir.c_str()));
    if (!fds) {
      continue;
    }
    while (dirent* fd = ::readdir(fds.get())) {
      char target[64] = {};
      const std::string link = fdDir + "/" + fd->d_name;
      const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
      auto inode = n > 0 ? socketInode(std::string_view(target, static_cast<size_t>(n)))
                         : std::nullopt;
      if (!inode || !wanted.count(*inode) || owners.count(*inode)) {
        continue;
      }
      std::string comm = readSmallFile("/proc/" + std::string(name) + "/comm").value_or("?");
      while (!comm.empty() && comm.back() == '\n') {
        comm.pop_back();
      }
      owners[*inode] = {pid, comm};
    }
    if (owners.size() == wanted.size()) {
      break;
    }
  }
  return owners;
}

void gatherSockets(const config::Config& config, doctor::NodeFacts& facts) {
  if (::access("/proc/net/tcp", R_OK) != 0) {
    facts.socketsError = fmt::format("cannot read /proc/net/tcp: {}", std::strerror(errno));
    return;
  }
  std::set<uint16_t> ports{179};
  if (config.listen.enabled) {
    ports.insert(config.listen.port);
  }
  std::set<bgp::IpAddress> peers;
  for (const auto& p : config.peers) {
    peers.insert(p.address);
  }
  std::vector<std::pair<doctor::TcpSocket, uint64_t>> kept;
  for (const auto& row : readKernelTcpTable()) {
    doctor::TcpSocket s;
    s.local = unmapped(row.local);
    s.localPort = row.localPort;
    s.remote = unmapped(row.remote);
    s.remotePort = row.remotePort;
    if (row.state == kTcpListen && ports.count(row.localPort)) {
      s.state = doctor::TcpSocket::State::Listen;
    } else if (row.state == kTcpEstablished && peers.count(s.remote)) {
      s.state = doctor::TcpSocket::State::Established;
    } else {
      continue;
    }
    kept.emplace_back(s, row.inode);
  }
  std::set<uint64_t> inodes;
  for (const auto& [s, inode] : kept) {
    if (inode != 0) {
      inodes.insert(inode);
    }
  }
  auto owners = socketOwners(inodes);
  for (auto& [s, inode] : kept) {
    if (auto it = owners.find(inode); it != owners.end()) {
      s.owner = it->second;
    }
    facts.sockets.push_back(s);
  }
}

void gatherStateDir(const config::Config& config, doctor::NodeFacts& facts) {
  auto& dir = facts.stateDir;
  const std::string& path = config.control.stateDir;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    dir.exists = true;
    dir.directory = S_ISDIR(st.st_mode);
    // AT_EACCESS: this process's effective identity, as vipd's own writes would be judged; a
    // read-only filesystem answers EROFS.
    dir.writable = dir.directory &&
                   ::faccessat(AT_FDCWD, path.c_str(), W_OK | X_OK, AT_EACCESS) == 0;
    if (dir.directory && !dir.writable) {
      dir.problem = std::strerror(errno);
    }
    return;
  }
  fs::path parent = fs::path(path).parent_path();
  while (!parent.empty() && ::stat(parent.c_str(), &st) != 0) {
    if (parent == parent.parent_path()) {
      break;
    }
    parent = parent.parent_path();
  }
  dir.existingParent = parent.string();
  dir.parentWritable = ::faccessat(AT_FDCWD, parent.c_str(), W_OK | X_OK, AT_EACCESS) == 0;
  if (!dir.parentWritable) {
    dir.problem = std::strerror(errno);
  }
}

void gatherKeyFiles(const config::Config& config, doctor::NodeFacts& facts) {
  for (size_t i = 0; i < config.peers.size(); ++i) {
    if (const auto& path = config.peers[i].passwordFile) {
      doctor::KeyFile key{i, *path, std::nullopt};
      // The very reading vipd's start and `vipd validate` do: the same refusals, word for word.
      if (auto read = readSessionKey(*path); !read) {
        key.problem = read.error();
      }
      facts.keyFiles.push_back(std::move(key));
    }
  }
}

void gatherStaticPods(const GatherOptions& options, doctor::NodeFacts& facts) {
  auto& dir = facts.staticPods;
  std::error_code ec;
  if (options.manifestsDir) {
    dir.given = true;
    dir.path = *options.manifestsDir;
    dir.exists = fs::is_directory(dir.path, ec);
  } else {
    for (const auto& distro : bootstrap::distros()) {
      dir.lookedAt.emplace_back(distro.staticPodDir);
      if (!dir.exists && fs::is_directory(distro.staticPodDir, ec)) {
        dir.path = distro.staticPodDir;
        dir.exists = true;
      }
    }
  }
  if (!dir.exists) {
    return;
  }
  fs::directory_iterator it(dir.path, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    doctor::StaticPodFile file;
    file.name = it->path().filename().string();
    std::error_code typeError;
    // Follows symbolic links, as kubelet does.
    file.regular = it->is_regular_file(typeError) && !typeError;
    file.strayReason = bootstrap::strayReason(file.name, file.regular);
    if (file.regular && !file.name.starts_with(".")) {
      if (auto text = readSmallFile(it->path().string())) {
        file.runsVipd = doctor::manifestRunsVipd(*text);
      }
    }
    dir.files.push_back(std::move(file));
  }
  if (ec) {
    dir.error = ec.message();
  }
  std::sort(dir.files.begin(), dir.files.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
}

// kubeadm writes the kubelet's node-specific flags here (--node-ip among them); a systemd
// drop-in passes them to the kubelet.
constexpr const char* kKubeadmFlagsFile = "/var/lib/kubelet/kubeadm-flags.env";

bool hasFlag(const std::vector<std::string>& arguments, std::string_view flag) {
  return std::any_of(arguments.begin(), arguments.end(), [&](const std::string& a) {
    return a == flag || (a.starts_with(flag) && a.size() > flag.size() && a[flag.size()] == '=');
  });
}

// The processes on this node's network (the same network namespace as this process: in a lab
// with many nodes on one kernel, another node's kubelet is not this node's): the control-plane
// programs' identity flags and the routing daemons.
void gatherProcesses(doctor::NodeFacts& facts) {
  std::error_code ec;
  const auto ownNet = fs::read_symlink("/proc/self/ns/net", ec);
  fs::directory_iterator it("/proc", ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string pidText = it->path().filename().string();
    int pid = 0;
    if (std::from_chars(pidText.data(), pidText.data() + pidText.size(), pid).ec != std::errc{}) {
      continue;
    }
    std::error_code netError;
    if (fs::read_symlink(it->path() / "ns" / "net", netError) != ownNet || netError) {
      continue;
    }
    auto comm = readSmallFile((it->path() / "comm").string());
    if (!comm) {
      continue;
    }
    const std::string name = comm->substr(0, comm->find('\n'));
    if (doctor::isRoutingDaemon(name)) {
      facts.routingDaemons.push_back({pid, name});
    }
    if (!doctor::isIdentityProgram(name)) {
      continue;
    }
    auto cmdline = readSmallFile((it->path() / "cmdline").string());
    if (!cmdline) {
      continue;
    }
    const auto arguments = doctor::splitCmdline(*cmdline);
    auto flags = doctor::identityFlags(name, arguments, fmt::format("/proc/{}/cmdline", pid));
    facts.identities.insert(facts.identities.end(), flags.begin(), flags.end());
    if (name == "kubelet") {
      facts.kubeletSeen = true;
      facts.kubeletNodeIpSet = facts.kubeletNodeIpSet || hasFlag(arguments, "--node-ip");
    }
  }
  std::sort(facts.routingDaemons.begin(), facts.routingDaemons.end(),
            [](const auto& a, const auto& b) { return a.pid < b.pid; });
}

// kubeadm's kubelet flags file and the static-pod manifests (etcd.yaml, kube-apiserver.yaml):
// what the programs are given at their next start, which may differ from what runs.
void gatherIdentityFiles(doctor::NodeFacts& facts) {
  if (auto text = readSmallFile(kKubeadmFlagsFile)) {
    facts.kubeletSeen = true;
    auto flags = doctor::identityFlagsInText(*text, kKubeadmFlagsFile);
    facts.kubeletNodeIpSet = facts.kubeletNodeIpSet || text->find("--node-ip") != std::string::npos;
    facts.identities.insert(facts.identities.end(), flags.begin(), flags.end());
  }
  for (const auto& file : facts.staticPods.files) {
    if (!file.regular || file.strayReason || file.runsVipd) {
      continue;
    }
    const auto path = (fs::path(facts.staticPods.path) / file.name).string();
    if (auto text = readSmallFile(path)) {
      auto flags = doctor::identityFlagsInText(*text, path);
      facts.identities.insert(facts.identities.end(), flags.begin(), flags.end());
    }
  }
}

// How this node reaches each VIP, and where replies sent from a VIP to each peer of its family
// go (the route lookups of `ip route get`; nothing is sent).
void gatherVipRoutes(const config::Config& config, doctor::NodeFacts& facts) {
  for (const auto& vip : config.vips) {
    doctor::VipRoute route{vip.prefix, false, std::nullopt, ""};
    const auto address = toInterfaceAddress(vip.prefix.address);
    if (auto found = netlink::lookupRoute(address)) {
      route.local = found->local;
      route.interface = found->ifname;
    } else {
      route.error = found.error().reason;
      route.noRoute = found.error().code == ENETUNREACH;
    }
    facts.vipRoutes.push_back(std::move(route));
    for (const auto& peer : config.peers) {
      if (peer.address.isV4() != vip.prefix.address.isV4()) {
        continue;
      }
      doctor::VipReplyRoute reply{vip.prefix, peer.address, std::nullopt, ""};
      if (auto found = netlink::lookupRoute(toInterfaceAddress(peer.address), address)) {
        reply.interface = found->ifname;
      } else {
        reply.error = found.error().reason;
      }
      facts.vipReplyRoutes.push_back(std::move(reply));
    }
  }
}

}  // namespace

doctor::NodeFacts gatherFacts(const config::Config& config, const GatherOptions& options) {
  doctor::NodeFacts facts;
  facts.config = options.config;
  facts.selfPid = static_cast<int>(::getpid());
  gatherAddresses(facts);
  gatherRoutes(config, facts);
  gatherSysctls(config, facts);
  gatherSockets(config, facts);
  if (config.health.type == config::Health::Type::Apiserver) {
    facts.certificate = fetchApiserverCertificate(config.health, options.certificateTimeout);
  }
  if (auto status = readSmallFile("/proc/self/status")) {
    facts.effectiveCapabilities = doctor::parseEffectiveCapabilities(*status);
  }
  gatherStateDir(config, facts);
  gatherKeyFiles(config, facts);
  gatherStaticPods(options, facts);
  gatherProcesses(facts);
  gatherIdentityFiles(facts);
  gatherVipRoutes(config, facts);
  return facts;
}

}  // namespace vipd::daemon
