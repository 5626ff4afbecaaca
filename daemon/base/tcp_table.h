// The kernel's TCP table of this network namespace (/proc/net/tcp and /proc/net/tcp6): a pure
// parser and a reader. The handoff's watch on a silent lock holder (lifecycle/holder_watch.h)
// looks for Established BGP sessions in it; `vipd doctor` (doctor/) for another process's BGP
// listener or sessions, whose owner it finds by the socket's inode.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "bgp/ip_address.h"

namespace vipd::daemon {

// The states /proc/net/tcp spells in hex (include/net/tcp_states.h).
inline constexpr uint8_t kTcpEstablished = 0x01;
inline constexpr uint8_t kTcpListen = 0x0A;

// One row of /proc/net/tcp or /proc/net/tcp6.
struct TcpEntry {
  bgp::IpAddress local;
  uint16_t localPort = 0;
  bgp::IpAddress remote;
  uint16_t remotePort = 0;
  uint8_t state = 0;   // kTcpEstablished, kTcpListen, ...
  uint64_t inode = 0;  // the socket's inode: /proc/PID/fd/N links to "socket:[inode]"
};

// The rows of /proc/net/tcp (v6 false) or /proc/net/tcp6; malformed rows are skipped. Addresses
// are as the kernel wrote them (an IPv4 peer of an IPv6 socket is ::ffff:a.b.c.d). Pure.
std::vector<TcpEntry> parseProcNetTcp(std::string_view text, bool v6);

// Reads the kernel's TCP tables (this network namespace). Empty on error.
std::vector<TcpEntry> readKernelTcpTable();

}  // namespace vipd::daemon
