#include "daemon/base/tcp_table.h"

#include <array>
#include <charconv>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

namespace vipd::daemon {
namespace {

std::optional<uint32_t> hex32(std::string_view text) {
  uint32_t v = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), v, 16);
  if (error != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return v;
}

// "0100007F:1F90" (IPv4: one 32-bit word in host byte order, little-endian here) or 32 hex
// digits (IPv6: four such words) and the port in hex.
std::optional<std::pair<bgp::IpAddress, uint16_t>> parseEndpoint(std::string_view text, bool v6) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) {
    return std::nullopt;
  }
  auto address = text.substr(0, colon);
  auto port = hex32(text.substr(colon + 1));
  if (!port || *port > 0xFFFF || address.size() != (v6 ? 32u : 8u)) {
    return std::nullopt;
  }
  std::array<uint8_t, 16> bytes{};
  for (size_t word = 0; word < address.size() / 8; ++word) {
    auto w = hex32(address.substr(word * 8, 8));
    if (!w) {
      return std::nullopt;
    }
    for (size_t b = 0; b < 4; ++b) {
      bytes[word * 4 + b] = static_cast<uint8_t>(*w >> (8 * b));  // little-endian word
    }
  }
  bgp::IpAddress ip = v6 ? bgp::IpAddress::v6(bytes)
                         : bgp::IpAddress::v4({bytes[0], bytes[1], bytes[2], bytes[3]});
  return std::make_pair(ip, static_cast<uint16_t>(*port));
}

}  // namespace

std::vector<TcpEntry> parseProcNetTcp(std::string_view text, bool v6) {
  std::vector<TcpEntry> out;
  std::istringstream in{std::string(text)};
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::istringstream row(line);
    std::string slot, local, remote, state;
    if (!(row >> slot >> local >> remote >> state)) {
      continue;
    }
    auto l = parseEndpoint(local, v6);
    auto r = parseEndpoint(remote, v6);
    auto st = hex32(state);
    if (!l || !r || !st || *st > 0xFF) {
      continue;
    }
    TcpEntry entry{l->first, l->second, r->first, r->second, static_cast<uint8_t>(*st)};
    // After the state: tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode.
    std::string queues, timer, retransmits, uid, timeout, inode;
    if (row >> queues >> timer >> retransmits >> uid >> timeout >> inode) {
      uint64_t value = 0;
      auto [end, error] = std::from_chars(inode.data(), inode.data() + inode.size(), value);
      if (error == std::errc() && end == inode.data() + inode.size()) {
        entry.inode = value;
      }
    }
    out.push_back(entry);
  }
  return out;
}

std::vector<TcpEntry> readKernelTcpTable() {
  std::vector<TcpEntry> out;
  for (auto [path, v6] : {std::pair{"/proc/net/tcp", false}, std::pair{"/proc/net/tcp6", true}}) {
    std::ifstream in(path);
    if (!in) {
      continue;
    }
    std::stringstream text;
    text << in.rdbuf();
    auto rows = parseProcNetTcp(text.str(), v6);
    out.insert(out.end(), rows.begin(), rows.end());
  }
  return out;
}

}  // namespace vipd::daemon
