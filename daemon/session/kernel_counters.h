// The kernel's TCP counters for vipd's network namespace (TcpExt in /proc/net/netstat, IPv4 and
// IPv6 together): the only trace of segments the kernel drops before any socket sees them, which
// is what a session protected by GTSM or TCP-MD5 sees of a misconfigured peer.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace vipd::daemon {

// The TcpExt counters of a /proc/net/netstat text ("TcpExt: Name1 Name2 ..." followed by
// "TcpExt: 1 2 ..."), by name. Empty when there is no TcpExt pair. Pure.
std::map<std::string, uint64_t> parseTcpExt(std::string_view netstat);

// parseTcpExt() of this namespace's /proc/net/netstat (empty when it cannot be read).
std::map<std::string, uint64_t> kernelTcpExt();

// TCP-MD5 (RFC 2385) segments the kernel dropped, whole namespace: TCPMD5NotFound (unsigned, to
// a socket with a key for that peer), TCPMD5Unexpected (signed, to a socket without one) and
// TCPMD5Failure (a signature that does not verify: the keys differ). nullopt when the kernel does
// not report them.
struct Md5Drops {
  uint64_t notFound = 0;
  uint64_t unexpected = 0;
  uint64_t failure = 0;
  uint64_t total() const { return notFound + unexpected + failure; }
};
std::optional<Md5Drops> md5Drops(const std::map<std::string, uint64_t>& tcpExt);

}  // namespace vipd::daemon
