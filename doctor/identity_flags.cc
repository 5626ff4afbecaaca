#include "doctor/identity_flags.h"

#include <algorithm>
#include <array>
#include <optional>

namespace vipd::doctor {
namespace {

struct FlagSpec {
  std::string_view program;
  std::string_view flag;
  bool urls;  // the value is a list of URLs, not of addresses
};

constexpr std::array kFlags{
    FlagSpec{"kubelet", "--node-ip", false},
    FlagSpec{"kube-apiserver", "--advertise-address", false},
    FlagSpec{"etcd", "--advertise-client-urls", true},
    FlagSpec{"etcd", "--initial-advertise-peer-urls", true},
};

// "https://192.0.2.11:2379" -> "192.0.2.11"; "https://[2001:db8::1]:2380" -> "2001:db8::1".
std::string_view urlHost(std::string_view url) {
  if (auto scheme = url.find("://"); scheme != std::string_view::npos) {
    url.remove_prefix(scheme + 3);
  }
  url = url.substr(0, url.find('/'));
  if (url.starts_with('[')) {
    return url.substr(1, url.find(']') - 1);
  }
  return url.substr(0, url.rfind(':'));
}

std::vector<bgp::IpAddress> addressesOf(std::string_view value, bool urls) {
  std::vector<bgp::IpAddress> out;
  while (!value.empty()) {
    auto comma = value.find(',');
    std::string_view item = value.substr(0, comma);
    if (auto address = bgp::IpAddress::parse(urls ? urlHost(item) : item)) {
      out.push_back(*address);
    }
    value = comma == std::string_view::npos ? std::string_view{} : value.substr(comma + 1);
  }
  return out;
}

void add(std::vector<IdentityFlag>& out, const FlagSpec& spec, std::string_view value,
         std::string_view source) {
  auto addresses = addressesOf(value, spec.urls);
  if (!addresses.empty()) {
    out.push_back({std::string(spec.program), std::string(spec.flag), std::string(source),
                   std::move(addresses)});
  }
}

bool tokenEnd(char c) {
  return c == '"' || c == '\'' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ']' ||
         c == '}';
}

}  // namespace

bool isIdentityProgram(std::string_view name) {
  return name == "kubelet" || name == "kube-apiserver" || name == "etcd";
}

bool isRoutingDaemon(std::string_view name) {
  static constexpr std::array kNames{"bird", "bird6", "zebra", "bgpd", "gobgpd", "calico-node",
                                     "cilium-agent", "kube-router"};
  return std::find(kNames.begin(), kNames.end(), name) != kNames.end();
}

std::vector<std::string> splitCmdline(std::string_view cmdline) {
  std::vector<std::string> out;
  while (!cmdline.empty()) {
    auto end = cmdline.find('\0');
    out.emplace_back(cmdline.substr(0, end));
    cmdline = end == std::string_view::npos ? std::string_view{} : cmdline.substr(end + 1);
  }
  return out;
}

std::vector<IdentityFlag> identityFlags(std::string_view program,
                                        const std::vector<std::string>& arguments,
                                        std::string_view source) {
  std::vector<IdentityFlag> out;
  for (const auto& spec : kFlags) {
    if (spec.program != program) {
      continue;
    }
    for (size_t i = 0; i < arguments.size(); ++i) {
      std::string_view arg = arguments[i];
      if (arg.starts_with(spec.flag) && arg.size() > spec.flag.size() &&
          arg[spec.flag.size()] == '=') {
        add(out, spec, arg.substr(spec.flag.size() + 1), source);
      } else if (arg == spec.flag && i + 1 < arguments.size()) {
        add(out, spec, arguments[i + 1], source);
      }
    }
  }
  return out;
}

std::vector<IdentityFlag> identityFlagsInText(std::string_view text, std::string_view source) {
  std::vector<IdentityFlag> out;
  for (const auto& spec : kFlags) {
    const std::string token = std::string(spec.flag) + "=";
    for (size_t at = text.find(token); at != std::string_view::npos;
         at = text.find(token, at + token.size())) {
      // A flag of its own, not the tail of a longer token.
      if (at > 0 && !tokenEnd(text[at - 1])) {
        continue;
      }
      size_t end = at + token.size();
      while (end < text.size() && !tokenEnd(text[end])) {
        ++end;
      }
      add(out, spec, text.substr(at + token.size(), end - at - token.size()), source);
    }
  }
  return out;
}

}  // namespace vipd::doctor
