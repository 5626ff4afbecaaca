// ConfigReader's readers for what this node announces and as whom (reader.h): the VIPs,
// the router ID (never one of the VIPs), and the communities attached to every announcement.
#include <fmt/format.h>

#include <algorithm>

#include "config/reader.h"
#include "config/value_rules.h"

namespace vipd::config::internal {
namespace {

// Linux IFNAMSIZ is 16 including the terminating NUL.
constexpr size_t kMaxInterfaceNameLength = 15;

}  // namespace

void ConfigReader::readVips(const Field& f, std::vector<Vip>& vips) {
  auto list = readList(f);
  if (!list) {
    return;
  }
  if (list->size() == 0) {
    error(f, "at least one VIP is required");
    return;
  }
  for (size_t i = 0; i < list->size(); ++i) {
    std::string path = indexPath(f.path, i);
    auto m = readMapping((*list)[i], path, {"address", "interface", "createInterface", "rebind"});
    if (!m) {
      continue;
    }
    auto vip = readVip(*m);
    if (!vip) {
      continue;
    }
    auto same = std::find_if(vips.begin(), vips.end(),
                             [&](const Vip& v) { return v.prefix == vip->prefix; });
    if (same != vips.end()) {
      error(*m->find("address"), fmt::format("duplicate VIP {}", vip->prefix.toString()));
      continue;
    }
    vips.push_back(std::move(*vip));
  }
}

std::optional<Vip> ConfigReader::readVip(const Mapping& m) {
  Vip vip;
  bool valid = false;
  if (const Field* a = require(m, "address")) {
    if (auto prefix = readVipAddress(*a)) {
      valid = true;
      vip.prefix = *prefix;
    }
  }
  bool interfaceValid = true;  // a wrong name is reported once, not again as "on lo"
  if (const Field* n = m.find("interface")) {
    auto name = readInterfaceName(*n);
    interfaceValid = name.has_value();
    if (name) {
      vip.interface = *name;
    }
  }
  if (const Field* c = m.find("createInterface")) {
    if (auto create = readBool(*c)) {
      vip.createInterface = *create;
      if (*create && interfaceValid && vip.interface == "lo") {
        error(*c, "createInterface makes a dummy interface, but this VIP is on lo; set "
                  "interface to a dummy name such as vip0, or drop createInterface");
      }
    }
  }
  if (const Field* r = m.find("rebind")) {
    if (auto rebind = readBool(*r)) {
      vip.rebind = *rebind;
    }
  }
  if (!valid) {
    return std::nullopt;
  }
  return vip;
}

// A host route (/32 or /128) to a routable unicast address.
std::optional<bgp::Prefix> ConfigReader::readVipAddress(const Field& f) {
  if (!f.value.IsScalar()) {
    error(f, fmt::format("expected an address such as 203.0.113.10/32, got {}", describe(f.value)));
    return std::nullopt;
  }
  const std::string& text = f.value.Scalar();
  if (auto prefix = bgp::Prefix::parse(text)) {
    const bgp::IpAddress& addr = prefix->address;
    if (!prefix->isHost()) {
      error(f, fmt::format("a VIP is a single address (/{}), but {} is a covering prefix; "
                           "vipd announces host routes only",
                           prefix->maxLength(), text));
      return std::nullopt;
    }
    if (addr.isZero() || isBroadcast(addr) || isMulticast(addr) || isLoopback(addr) ||
        addr.isLinkLocalV6()) {
      error(f, fmt::format("{} is not a routable unicast address", addr.toString()));
      return std::nullopt;
    }
    if (isV4MappedV6(addr)) {
      // The kernel and the peers treat it as an IPv6 address no IPv4 client ever reaches.
      error(f, fmt::format("{} is an IPv4-mapped IPv6 address; write the IPv4 VIP as "
                           "{}.{}.{}.{}/32",
                           addr.toString(), addr.bytes[12], addr.bytes[13], addr.bytes[14],
                           addr.bytes[15]));
      return std::nullopt;
    }
    return prefix;
  }
  if (auto bare = bgp::IpAddress::parse(text)) {
    error(f, fmt::format("'{}' needs a prefix length: write {}/{}", text, bare->toString(),
                         bare->isV4() ? 32 : 128));
  } else {
    error(f,
          fmt::format("'{}' is not an address such as 203.0.113.10/32 or 2001:db8::10/128", text));
  }
  return std::nullopt;
}

// A name the kernel accepts for an interface (the rules of its dev_valid_name()).
std::optional<std::string> ConfigReader::readInterfaceName(const Field& f) {
  auto name = readString(f);
  if (!name) {
    return std::nullopt;
  }
  bool bad = name->empty() || name->size() > kMaxInterfaceNameLength || *name == "." ||
             *name == ".." || std::any_of(name->begin(), name->end(), [](char c) {
               return c == '/' || c == ':' || c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
                      c == '\v' || c == '\f' || c == '\0';
             });
  if (bad) {
    error(f, fmt::format("'{}' is not a valid Linux interface name (1 to {} characters, "
                         "no '/', ':' or whitespace)",
                         *name, kMaxInterfaceNameLength));
    return std::nullopt;
  }
  return name;
}

void ConfigReader::readRouterId(const Field& f, const std::vector<Vip>& vips, Config& config) {
  auto id = readAddress(f);
  if (!id) {
    return;
  }
  if (!id->isV4()) {
    error(f, fmt::format("the router ID is a 32-bit BGP identifier written as an IPv4 address; "
                         "{} is IPv6",
                         id->toString()));
    return;
  }
  if (id->isZero() || isBroadcast(*id)) {
    error(f, fmt::format("{} is not a valid BGP identifier (RFC 6286)", id->toString()));
    return;
  }
  if (isLoopback(*id)) {
    // Every node has it, so every node would present the same identifier to the peers.
    error(f, fmt::format("router ID {} is a loopback address, the same on every node; use this "
                         "node's own address",
                         id->toString()));
    return;
  }
  for (const Vip& vip : vips) {
    if (vip.prefix.address == *id) {
      // Every node that can hold the VIP would then share one router ID, and peers reject a
      // second session with the same identifier.
      error(f, fmt::format("router ID {} equals VIP {}; use this node's own address",
                           id->toString(), vip.prefix.toString()));
      return;
    }
  }
  config.routerId = *id;
}

// Both community lists: colon-separated numbers, each list without duplicates.
template <typename Value, typename Make>
void ConfigReader::readColonList(const Field& f, size_t fields, uint64_t maxField,
                                 std::string_view expected, std::string_view name, Make make,
                                 std::vector<Value>& out) {
  auto list = readList(f);
  if (!list) {
    return;
  }
  for (size_t i = 0; i < list->size(); ++i) {
    Field item{YAML::Node(), (*list)[i], indexPath(f.path, i)};
    auto text = readString(item);
    if (!text) {
      continue;
    }
    auto parts = parseColonFields(*text, fields, maxField);
    if (!parts) {
      error(item, fmt::format("'{}' is not a {}: write {}", *text, name, expected));
      continue;
    }
    Value value = make(*parts);
    if (std::find(out.begin(), out.end(), value) != out.end()) {
      error(item, fmt::format("duplicate {} {}", name, *text));
      continue;
    }
    out.push_back(value);
  }
}

void ConfigReader::readCommunities(const Field& f, std::vector<Community>& out,
                                   size_t maxCount) {
  readColonList(f, 2, 65535, "ASN:VALUE, each 0 to 65535", "community",
                [](const auto& p) {
                  return Community{static_cast<uint16_t>(p[0]), static_cast<uint16_t>(p[1])};
                },
                out);
  if (out.size() > maxCount) {
    // The UPDATE builder sizes its messages for at most this many (bgp/update_builder.cc).
    error(f, fmt::format("{} communities; at most {}", out.size(), maxCount));
  }
}

void ConfigReader::readLargeCommunities(const Field& f, std::vector<bgp::LargeCommunity>& out) {
  readColonList(f, 3, kMaxAsn, "ASN:DATA1:DATA2, each 0 to 4294967295 (RFC 8092)",
                "large community",
                [](const auto& p) {
                  return bgp::LargeCommunity{static_cast<uint32_t>(p[0]),
                                             static_cast<uint32_t>(p[1]),
                                             static_cast<uint32_t>(p[2])};
                },
                out);
  if (out.size() > kMaxLargeCommunities) {
    error(f, fmt::format("{} large communities; at most {}", out.size(), kMaxLargeCommunities));
  }
}

}  // namespace vipd::config::internal
