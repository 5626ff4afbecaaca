// Whether a VIP is bound on its interface right now, read from the kernel with getifaddrs(3).
// The ghost-VIP guard until the netlink binding layer (issue 3) replaces it: vipd never announces
// an address the kernel does not report on the configured interface.
#pragma once

#include <string>

#include "bgp/ip_address.h"

namespace vipd::daemon {

struct VipPresence {
  bool interfaceExists = false;
  bool bound = false;  // the address is on that interface
};

VipPresence checkVipPresence(const bgp::IpAddress& address, const std::string& interface);

}  // namespace vipd::daemon
