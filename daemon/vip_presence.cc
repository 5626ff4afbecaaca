#include "daemon/vip_presence.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <cstring>
#include <memory>

namespace vipd::daemon {

VipPresence checkVipPresence(const bgp::IpAddress& address, const std::string& interface) {
  VipPresence presence;
  presence.interfaceExists = if_nametoindex(interface.c_str()) != 0;
  ifaddrs* raw = nullptr;
  if (!presence.interfaceExists || getifaddrs(&raw) != 0) {
    return presence;
  }
  std::unique_ptr<ifaddrs, decltype(&freeifaddrs)> list(raw, &freeifaddrs);
  for (const ifaddrs* it = list.get(); it != nullptr; it = it->ifa_next) {
    if (it->ifa_addr == nullptr || interface != it->ifa_name) {
      continue;
    }
    if (address.isV4() && it->ifa_addr->sa_family == AF_INET) {
      const auto* sin = reinterpret_cast<const sockaddr_in*>(it->ifa_addr);
      if (std::memcmp(&sin->sin_addr, address.bytes.data(), 4) == 0) {
        presence.bound = true;
      }
    } else if (address.isV6() && it->ifa_addr->sa_family == AF_INET6) {
      const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(it->ifa_addr);
      if (std::memcmp(&sin6->sin6_addr, address.bytes.data(), 16) == 0) {
        presence.bound = true;
      }
    }
  }
  return presence;
}

}  // namespace vipd::daemon
