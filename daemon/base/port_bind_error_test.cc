// portBindError(): which advice follows the kernel's reason, for each errno that has one. The
// real EACCES from a missing CAP_NET_BIND_SERVICE is covered end to end by
// tests/e2e/test_capabilities.py.
#include "daemon/base/port_bind_error.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace vipd::daemon {
namespace {

constexpr PortBindHints kBgp{
    .inUse = "another BGP daemon may own the port; set listen.enabled: false to dial out only",
    .unprivilegedPort = "set listen.port above 1023"};
constexpr PortBindHints kBfd{.inUse = "another BFD speaker holds it"};

TEST(PortBindError, PrivilegedPortNamesTheCapabilityAndTheWayAround) {
  EXPECT_EQ(portBindError("cannot listen for BGP on 0.0.0.0 port 179", 179, EACCES,
                          "Permission denied", kBgp),
            "cannot listen for BGP on 0.0.0.0 port 179: Permission denied: binding a port below "
            "1024 needs CAP_NET_BIND_SERVICE (the manifests grant it; a custom securityContext or "
            "systemd unit must too), or set listen.port above 1023");
}

TEST(PortBindError, EpermIsTreatedAsEacces) {
  EXPECT_EQ(portBindError("cannot listen for BGP on :: port 179", 179, EPERM,
                          "Operation not permitted", kBgp),
            "cannot listen for BGP on :: port 179: Operation not permitted: binding a port below "
            "1024 needs CAP_NET_BIND_SERVICE (the manifests grant it; a custom securityContext or "
            "systemd unit must too), or set listen.port above 1023");
}

TEST(PortBindError, FixedPortGetsNoPortAdvice) {
  EXPECT_EQ(portBindError("cannot receive BFD on UDP port 3784 (IPv4)", 3784, EACCES,
                          "Permission denied", kBfd),
            "cannot receive BFD on UDP port 3784 (IPv4): Permission denied: "
            "net.ipv4.ip_unprivileged_port_start is above 3784 here, so binding it needs "
            "CAP_NET_BIND_SERVICE (the manifests grant it; a custom securityContext or systemd "
            "unit must too)");
  EXPECT_EQ(portBindError("cannot receive BFD on UDP port 999 (IPv6)", 999, EACCES,
                          "Permission denied", kBfd),
            "cannot receive BFD on UDP port 999 (IPv6): Permission denied: binding a port below "
            "1024 needs CAP_NET_BIND_SERVICE (the manifests grant it; a custom securityContext or "
            "systemd unit must too)");
}

TEST(PortBindError, UnprivilegedPortRefusedNamesTheSysctl) {
  const auto text = portBindError("cannot listen for BGP on 0.0.0.0 port 1179", 1179, EACCES,
                                  "Permission denied", kBgp);
  EXPECT_NE(text.find("net.ipv4.ip_unprivileged_port_start is above 1179"), std::string::npos)
      << text;
  EXPECT_NE(text.find("CAP_NET_BIND_SERVICE"), std::string::npos) << text;
  EXPECT_EQ(text.find("listen.port"), std::string::npos) << text;  // the port is already high
}

TEST(PortBindError, AddressInUseKeepsTheOtherDaemonHint) {
  EXPECT_EQ(portBindError("cannot listen for BGP on 0.0.0.0 port 179", 179, EADDRINUSE,
                          "Address already in use", kBgp),
            "cannot listen for BGP on 0.0.0.0 port 179: Address already in use: another BGP "
            "daemon may own the port; set listen.enabled: false to dial out only");
  EXPECT_EQ(portBindError("cannot receive BFD on UDP port 3784 (IPv4)", 3784, EADDRINUSE,
                          "Address already in use", kBfd),
            "cannot receive BFD on UDP port 3784 (IPv4): Address already in use: another BFD "
            "speaker holds it");
}

TEST(PortBindError, OtherErrorsGetNoGuess) {
  EXPECT_EQ(portBindError("cannot listen for BGP on 192.0.2.11 port 179", 179, EADDRNOTAVAIL,
                          "Cannot assign requested address", kBgp),
            "cannot listen for BGP on 192.0.2.11 port 179: Cannot assign requested address");
  EXPECT_EQ(portBindError("cannot receive BFD on UDP port 3784 (IPv4)", 3784, EADDRINUSE,
                          "Address already in use", {}),
            "cannot receive BFD on UDP port 3784 (IPv4): Address already in use");
}

}  // namespace
}  // namespace vipd::daemon
