// Keys that authenticate a BGP session's TCP segments. Today TCP-MD5 (RFC 2385); the kind field
// and applySessionKey() are where TCP-AO (RFC 5925) would go: its keys are also installed per
// peer address on the socket before connect() and on the listener, so callers need not change.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <tl/expected.hpp>

#include "bgp/ip_address.h"
#include "config/config.h"
#include "config/parser.h"

namespace vipd::daemon {

struct SessionKey {
  enum class Kind { TcpMd5 };
  Kind kind = Kind::TcpMd5;
  std::string secret;  // never logged
};

// Reads a key file (peers[].passwordFile). Refused, with what to do, when it is not a regular
// file (a FIFO is refused at once, never waited on), is readable or writable by group or others,
// is empty, or is longer than the 80 bytes TCP-MD5 allows. One trailing newline (as `echo`
// writes) is not part of the key.
[[nodiscard]] tl::expected<SessionKey, std::string> readSessionKey(const std::string& path);

// Every peer's key, by the index of `peers` (nullopt: no passwordFile). vipd's start and `vipd
// validate` both read the keys through this, so validate (the systemd unit's ExecStartPre)
// refuses every key file start would. On failure, one error per refused file, in peer order,
// each with path "peers[N].passwordFile", no position, and `file` left empty for the caller to
// name (the config file that set the peers).
[[nodiscard]] config::Result<std::vector<std::optional<SessionKey>>> readSessionKeys(
    const std::vector<config::Peer>& peers);

// Installs `key` for segments to and from `peer` on socket `fd` (a socket about to connect, or a
// listener). Must run before connect()/accept() for the handshake to be signed.
[[nodiscard]] tl::expected<void, std::string> applySessionKey(int fd, const bgp::IpAddress& peer,
                                                              const SessionKey& key);
// Removes the key for `peer` from socket `fd` (a listener, when a reload removed the peer or its
// key). Removing a key that is not there is an error from the kernel (ENOENT), returned as such.
[[nodiscard]] tl::expected<void, std::string> removeSessionKey(int fd, const bgp::IpAddress& peer);

}  // namespace vipd::daemon
