#include "daemon/session/kernel_counters.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace vipd::daemon {

std::map<std::string, uint64_t> parseTcpExt(std::string_view netstat) {
  std::map<std::string, uint64_t> out;
  std::istringstream in{std::string(netstat)};
  std::string names;
  std::string values;
  while (std::getline(in, names) && std::getline(in, values)) {
    if (!names.starts_with("TcpExt:") || !values.starts_with("TcpExt:")) {
      continue;
    }
    std::istringstream n(names.substr(7));
    std::istringstream v(values.substr(7));
    std::string name;
    std::string value;
    while (n >> name && v >> value) {
      out[name] = std::strtoull(value.c_str(), nullptr, 10);
    }
  }
  return out;
}

std::map<std::string, uint64_t> kernelTcpExt() {
  std::ifstream in("/proc/net/netstat");
  std::stringstream text;
  text << in.rdbuf();
  return parseTcpExt(text.str());
}

std::optional<Md5Drops> md5Drops(const std::map<std::string, uint64_t>& tcpExt) {
  auto notFound = tcpExt.find("TCPMD5NotFound");
  auto unexpected = tcpExt.find("TCPMD5Unexpected");
  auto failure = tcpExt.find("TCPMD5Failure");
  if (notFound == tcpExt.end() || unexpected == tcpExt.end()) {
    return std::nullopt;
  }
  // TCPMD5Failure appeared in Linux 4.13; older kernels count only the other two.
  return Md5Drops{notFound->second, unexpected->second,
                  failure == tcpExt.end() ? 0 : failure->second};
}

}  // namespace vipd::daemon
