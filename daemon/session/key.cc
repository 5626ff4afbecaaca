#include "daemon/session/key.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace vipd::daemon {
namespace {

// TCP_MD5SIG_MAXKEYLEN in netinet/tcp.h.
constexpr size_t kMaxMd5KeyLength = 80;

}  // namespace

tl::expected<SessionKey, std::string> readSessionKey(const std::string& path) {
  // O_NONBLOCK: opening a FIFO for reading would wait for a writer, so the regular-file check
  // below could never refuse it. A regular file ignores the flag.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    const int error = errno;
    // The key must be mode 0600 or stricter (below), so only its owner can read it: a root
    // vipd without CAP_DAC_OVERRIDE (as the manifests run it) cannot read a key someone else
    // owns.
    return tl::unexpected(fmt::format(
        "cannot read the password file {}: {}{}", path, std::strerror(error),
        error == EACCES ? fmt::format("; vipd reads it without CAP_DAC_OVERRIDE, so the file must "
                                      "belong to vipd's own user (chown root {} when vipd runs "
                                      "as root) and its directories must be searchable",
                                      path)
                        : std::string()));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return tl::unexpected(fmt::format("the password file {} is not a regular file", path));
  }
  if ((st.st_mode & 077) != 0) {
    ::close(fd);
    return tl::unexpected(fmt::format(
        "the password file {} has mode {:04o}, so group or others can read or change the BGP "
        "key; run chmod 600 {}",
        path, st.st_mode & 07777, path));
  }
  char buffer[kMaxMd5KeyLength + 2];
  ssize_t n = ::read(fd, buffer, sizeof buffer);
  int savedErrno = errno;
  ::close(fd);
  if (n < 0) {
    return tl::unexpected(fmt::format("cannot read the password file {}: {}", path,
                                      std::strerror(savedErrno)));
  }
  std::string secret(buffer, static_cast<size_t>(n));
  if (!secret.empty() && secret.back() == '\n') {
    secret.pop_back();
  }
  if (secret.empty()) {
    return tl::unexpected(fmt::format("the password file {} is empty", path));
  }
  if (secret.size() > kMaxMd5KeyLength || static_cast<size_t>(st.st_size) > kMaxMd5KeyLength + 1) {
    return tl::unexpected(fmt::format("the password file {} holds more than the {} bytes a "
                                      "TCP-MD5 key may have",
                                      path, kMaxMd5KeyLength));
  }
  return SessionKey{SessionKey::Kind::TcpMd5, std::move(secret)};
}

config::Result<std::vector<std::optional<SessionKey>>> readSessionKeys(
    const std::vector<config::Peer>& peers) {
  std::vector<std::optional<SessionKey>> keys(peers.size());
  std::vector<config::ConfigError> errors;
  for (size_t i = 0; i < peers.size(); ++i) {
    if (!peers[i].passwordFile) {
      continue;
    }
    auto key = readSessionKey(*peers[i].passwordFile);
    if (!key) {
      errors.push_back({"", 0, 0, fmt::format("peers[{}].passwordFile", i), key.error()});
      continue;
    }
    keys[i] = std::move(*key);
  }
  if (!errors.empty()) {
    return tl::unexpected(std::move(errors));
  }
  return keys;
}

namespace {

// TCP_MD5SIG for `peer` with `secret`; an empty secret deletes the key (tcpm_keylen 0).
tl::expected<void, std::string> setMd5Signature(int fd, const bgp::IpAddress& peer,
                                                std::string_view secret) {
  tcp_md5sig sig{};
  sockaddr_storage own{};
  socklen_t ownLength = sizeof own;
  bool v6Socket = ::getsockname(fd, reinterpret_cast<sockaddr*>(&own), &ownLength) == 0 &&
                  own.ss_family == AF_INET6;
  if (peer.isV4() && v6Socket) {
    // A dual-stack listener sees an IPv4 peer as ::ffff:a.b.c.d; the key must name it so.
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&sig.tcpm_addr);
    sin6->sin6_family = AF_INET6;
    sin6->sin6_addr.s6_addr[10] = 0xff;
    sin6->sin6_addr.s6_addr[11] = 0xff;
    std::memcpy(&sin6->sin6_addr.s6_addr[12], peer.bytes.data(), 4);
  } else if (peer.isV4()) {
    auto* sin = reinterpret_cast<sockaddr_in*>(&sig.tcpm_addr);
    sin->sin_family = AF_INET;
    sin->sin_addr.s_addr = htonl(peer.v4Value());
  } else {
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&sig.tcpm_addr);
    sin6->sin6_family = AF_INET6;
    std::memcpy(&sin6->sin6_addr, peer.bytes.data(), 16);
  }
  sig.tcpm_keylen = static_cast<uint16_t>(secret.size());
  std::memcpy(sig.tcpm_key, secret.data(), secret.size());
  if (::setsockopt(fd, IPPROTO_TCP, TCP_MD5SIG, &sig, sizeof sig) != 0) {
    return tl::unexpected(fmt::format("cannot {} the TCP-MD5 key for {}: {}",
                                      secret.empty() ? "remove" : "set", peer.toString(),
                                      std::strerror(errno)));
  }
  return {};
}

}  // namespace

tl::expected<void, std::string> applySessionKey(int fd, const bgp::IpAddress& peer,
                                                const SessionKey& key) {
  return setMd5Signature(fd, peer, key.secret);
}

tl::expected<void, std::string> removeSessionKey(int fd, const bgp::IpAddress& peer) {
  return setMd5Signature(fd, peer, {});
}

}  // namespace vipd::daemon
