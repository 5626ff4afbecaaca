#include "daemon/health/health_target.h"

#include <fmt/format.h>

#include <boost/asio/ip/address.hpp>
#include <charconv>
#include <utility>

namespace vipd::daemon {

namespace {

using Target = HealthTarget;

tl::unexpected<std::string> fail(std::string message) { return tl::unexpected(std::move(message)); }

// "host:port", "[v6]:port" or, when `defaultPort` is set, also "host" and "[v6]".
tl::expected<Target, std::string> parseAuthority(std::string_view authority,
                                                 std::string_view defaultPort) {
  Target target;
  target.authority = std::string(authority);
  std::string_view host;
  std::string_view port;
  if (authority.starts_with('[')) {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return fail("an IPv6 address must be closed with ']'");
    }
    host = authority.substr(1, close - 1);
    std::string_view rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') {
        return fail("expected ':port' after ']'");
      }
      port = rest.substr(1);
    }
  } else {
    size_t colon = authority.find(':');
    if (colon != std::string_view::npos &&
        authority.find(':', colon + 1) != std::string_view::npos) {
      return fail("write an IPv6 address in brackets, as [2001:db8::1]:6443");
    }
    host = authority.substr(0, colon);
    if (colon != std::string_view::npos) {
      port = authority.substr(colon + 1);
    }
  }
  if (host.empty()) {
    return fail("the host is empty");
  }
  if (port.empty()) {
    if (defaultPort.empty()) {
      return fail("expected host:port");
    }
    port = defaultPort;
  }
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
    return tl::unexpected(fmt::format("port '{}' is not a number from 1 to 65535", port));
  }
  target.host = std::string(host);
  target.port = std::string(port);
  return target;
}

bool isIpAddress(const std::string& host) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(host, ec);
  return !ec;
}

// health.serverName when set, else the URL's host when that is a DNS name, else the name every
// stock apiserver certificate carries.
tl::expected<std::string, std::string> serverName(const config::Health& health,
                                                  const std::string& host) {
  if (!health.serverName) {
    return isIpAddress(host) ? std::string(config::kDefaultApiserverServerName) : host;
  }
  // The config parser allows only DNS names; a Health built in code gets the same answer. An
  // empty name matters most: OpenSSL takes it as "check no name at all".
  if (isIpAddress(*health.serverName) || health.serverName->empty()) {
    return fail(
        fmt::format("health.serverName '{}': expected the DNS name the apiserver's "
                    "certificate carries, such as {}",
                    *health.serverName, config::kDefaultApiserverServerName));
  }
  return *health.serverName;
}

}  // namespace

tl::expected<Target, std::string> parseHttpsUrl(std::string_view url) {
  constexpr std::string_view kScheme = "https://";
  if (!url.starts_with(kScheme)) {
    return fail("only https:// URLs are supported");
  }
  std::string_view rest = url.substr(kScheme.size());
  rest = rest.substr(0, rest.find('#'));
  size_t slash = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, slash);
  if (authority.find('@') != std::string_view::npos) {
    return fail("user information in the URL is not supported");
  }
  auto target = parseAuthority(authority, "443");
  if (!target) {
    return target;
  }
  target->path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (target->path.starts_with('?')) {
    target->path.insert(0, "/");
  }
  return target;
}

tl::expected<HealthTarget, std::string> parseHostPort(std::string_view address) {
  return parseAuthority(address, "");
}

tl::expected<HealthTarget, std::string> healthTarget(const config::Health& health) {
  switch (health.type) {
    case config::Health::Type::None:
      return HealthTarget{};
    case config::Health::Type::Tcp: {
      auto target = parseHostPort(health.address);
      if (!target) {
        return fail(fmt::format("health.address '{}': {}", health.address, target.error()));
      }
      return target;
    }
    case config::Health::Type::Apiserver:
      break;
  }
  auto target = parseHttpsUrl(health.url);
  if (!target) {
    return fail(fmt::format("health.url '{}': {}", health.url, target.error()));
  }
  auto name = serverName(health, target->host);
  if (!name) {
    return tl::unexpected(name.error());
  }
  target->serverName = std::move(*name);
  return target;
}

}  // namespace vipd::daemon
