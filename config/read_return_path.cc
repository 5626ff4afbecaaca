// ConfigReader's reader for the `returnPath` section (reader.h, config.h ReturnPath).
#include <fmt/format.h>

#include <algorithm>

#include "config/reader.h"
#include "config/duration.h"
#include "config/value_rules.h"

namespace vipd::config::internal {
namespace {

// The BFD ports (RFC 5881, 5883): vipd binds them itself when a peer runs BFD.
constexpr uint16_t kBfdSingleHopPort = 3784;
constexpr uint16_t kBfdMultihopPort = 4784;

}  // namespace

void ConfigReader::readReturnPath(const Field& f, const std::vector<Vip>& vips,
                                  ReturnPath& returnPath) {
  auto m = readMapping(f.value, f.path,
                       {"mode", "interval", "timeout", "flows", "fall", "rise", "relayPort",
                        "targets", "relayNetworks"});
  if (!m) {
    return;
  }
  if (const Field* mode = m->find("mode")) {
    auto text = readString(*mode);
    if (text == "enforce") {
      returnPath.mode = ReturnPath::Mode::Enforce;
    } else if (text == "warn") {
      returnPath.mode = ReturnPath::Mode::Warn;
    } else if (text == "off") {
      returnPath.mode = ReturnPath::Mode::Off;
    } else if (text) {
      error(*mode, fmt::format("'{}' is not a return-path mode; use enforce (withdraw a VIP whose "
                               "packets get no answer), warn (only report it) or off",
                               *text));
    }
  }
  bool timingValid = true;
  if (const Field* i = m->find("interval")) {
    if (auto d = readBoundedDuration(*i, milliseconds{500}, milliseconds{60000})) {
      returnPath.interval = *d;
    } else {
      timingValid = false;
    }
  }
  if (const Field* t = m->find("timeout")) {
    if (auto d = readBoundedDuration(*t, milliseconds{100}, milliseconds{30000})) {
      returnPath.timeout = *d;
    } else {
      timingValid = false;
    }
  }
  if (timingValid && returnPath.timeout >= returnPath.interval) {
    error(*m->find(m->find("timeout") ? "timeout" : "interval"),
          fmt::format("timeout {} is not shorter than interval {}; rounds would overlap",
                      formatDuration(returnPath.timeout), formatDuration(returnPath.interval)));
  }
  if (const Field* n = m->find("flows")) {
    if (auto v = readUnsigned(*n, 1, 16)) {
      returnPath.flows = static_cast<uint32_t>(*v);
    }
  }
  if (const Field* n = m->find("fall")) {
    if (auto v = readUnsigned(*n, 1, 100)) {
      returnPath.fall = static_cast<uint32_t>(*v);
    }
  }
  if (const Field* n = m->find("rise")) {
    if (auto v = readUnsigned(*n, 1, 100)) {
      returnPath.rise = static_cast<uint32_t>(*v);
    }
  }
  if (const Field* p = m->find("relayPort")) {
    if (auto port = readUnsigned(*p, 1, 65535)) {
      if (*port == kBfdSingleHopPort || *port == kBfdMultihopPort) {
        error(*p, fmt::format("port {} is BFD's; choose another relay port", *port));
      } else {
        returnPath.relayPort = static_cast<uint16_t>(*port);
      }
    }
  }
  if (const Field* t = m->find("targets")) {
    if (!readReturnPathTargets(*t, vips, returnPath)) {
      return;
    }
  }
  if (const Field* n = m->find("relayNetworks")) {
    readRelayNetworks(*n, returnPath);
  }
}

bool ConfigReader::readReturnPathTargets(const Field& t, const std::vector<Vip>& vips,
                                         ReturnPath& returnPath) {
  auto list = readList(t);
  if (!list) {
    return false;
  }
  for (size_t i = 0; i < list->size(); ++i) {
    Field item{YAML::Node(), (*list)[i], indexPath(t.path, i)};
    auto address = readAddress(item);
    if (!address) {
      continue;
    }
    const bool isVip = std::any_of(vips.begin(), vips.end(), [&](const Vip& v) {
      return v.prefix.address == *address;
    });
    if (isMulticast(*address) || isBroadcast(*address) || isLoopback(*address) ||
        address->isLinkLocalV6() || address->isZero()) {
      error(item, fmt::format("{} cannot be a return-path target; use a router's unicast "
                              "address that routes the VIP back to the nodes",
                              address->toString()));
    } else if (isVip) {
      error(item, fmt::format("{} is a VIP; a return-path target is a router the VIP's "
                              "answers come back through",
                              address->toString()));
    } else if (std::find(returnPath.targets.begin(), returnPath.targets.end(), *address) !=
               returnPath.targets.end()) {
      error(item, fmt::format("{} is listed twice", address->toString()));
    } else {
      returnPath.targets.push_back(*address);
    }
  }
  return true;
}

void ConfigReader::readRelayNetworks(const Field& n, ReturnPath& returnPath) {
  auto list = readList(n);
  if (!list) {
    return;
  }
  for (size_t i = 0; i < list->size(); ++i) {
    Field item{YAML::Node(), (*list)[i], indexPath(n.path, i)};
    if (!item.value.IsScalar()) {
      error(item, fmt::format("expected a network such as 192.0.2.0/24, got {}",
                              describe(item.value)));
      continue;
    }
    auto prefix = bgp::Prefix::parse(item.value.Scalar());
    if (!prefix) {
      error(item, fmt::format("'{}' is not a network such as 192.0.2.0/24 or 2001:db8::/64",
                              item.value.Scalar()));
      continue;
    }
    auto network = *prefix;
    for (size_t bit = network.length; bit < size_t{network.maxLength()}; ++bit) {
      network.address.bytes[bit / 8] &= static_cast<uint8_t>(~(0x80u >> (bit % 8)));
    }
    if (network != *prefix) {
      error(item, fmt::format("{} has host bits set; write the network, {}",
                              prefix->toString(), network.toString()));
    } else if (isMulticast(network.address) || isLoopback(network.address) ||
               (network.length == 0)) {
      error(item, fmt::format("{} is not a node network; relays go only to the nodes' "
                              "unicast addresses",
                              network.toString()));
    } else {
      returnPath.relayNetworks.push_back(network);
    }
  }
}

}  // namespace vipd::config::internal
