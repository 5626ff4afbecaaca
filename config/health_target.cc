#include "config/health_target.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <boost/url/authority_view.hpp>
#include <boost/url/grammar/ci_string.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>
#include <cctype>
#include <charconv>
#include <utility>

namespace vipd::config {

namespace {

namespace urls = boost::urls;

tl::unexpected<std::string> fail(std::string message) { return tl::unexpected(std::move(message)); }

// RFC 3986 section 2: the characters a URI may hold anywhere (unreserved, reserved and the '%' of
// a percent-encoding). An authority holds them all but the three that end it.
bool allowedInUri(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("-._~:/?#[]@!$&'()*+,;=%").find(c) != std::string_view::npos;
}
bool allowedInAuthority(char c) { return allowedInUri(c) && c != '/' && c != '?' && c != '#'; }

// In the path and query: neither '[' nor ']' (only an IPv6 host has them).
bool allowedInPath(char c) { return allowedInUri(c) && c != '[' && c != ']'; }

// The first character of `text` that fails `allowed` and its offset (plus `base`) in what the
// user wrote, as "a space (at offset 9)"; empty if none.
template <typename Allowed>
std::string firstDisallowed(std::string_view text, Allowed allowed, size_t base = 0) {
  auto bad = std::find_if_not(text.begin(), text.end(), allowed);
  if (bad == text.end()) {
    return {};
  }
  auto byte = static_cast<unsigned char>(*bad);
  std::string what = byte == ' '                  ? std::string("a space")
                     : byte > 0x20 && byte < 0x7f ? fmt::format("'{}'", *bad)
                                                  : fmt::format("byte 0x{:02x}", byte);
  return fmt::format("{} (at offset {})", what, base + (bad - text.begin()));
}

// The first '%' in `text` that two hex digits do not follow, described; empty if none.
std::string badPercentEncoding(std::string_view text) {
  for (size_t i = text.find('%'); i != std::string_view::npos; i = text.find('%', i + 1)) {
    if (i + 2 >= text.size() || !std::isxdigit(static_cast<unsigned char>(text[i + 1])) ||
        !std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      return fmt::format("'%' (at offset {}) does not start a percent-encoding such as %20", i);
    }
  }
  return {};
}

// The authority as written: after "://", up to the path, query or fragment. Only for messages
// about a URL that Boost.URL did not split as the user meant.
std::string_view writtenAuthority(std::string_view url) {
  size_t start = url.find("://");
  if (start == std::string_view::npos) {
    return {};
  }
  std::string_view rest = url.substr(start + 3);
  return rest.substr(0, rest.find_first_of("/?#"));
}

// Why `authority`, which Boost.URL does not take as [userinfo@]host[:port], is not host:port:
// the mistakes people make, else the text itself.
std::string authorityProblem(std::string_view authority) {
  if (std::string bad = firstDisallowed(authority, allowedInAuthority); !bad.empty()) {
    return bad + " is not allowed in host:port";
  }
  if (authority.starts_with('[')) {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return "an IPv6 address must be closed with ']'";
    }
    if (close + 1 < authority.size() && authority[close + 1] != ':') {
      return "expected ':port' after ']'";
    }
  }
  if (!authority.starts_with('[') && std::count(authority.begin(), authority.end(), ':') > 1) {
    return "write an IPv6 address in brackets, as [2001:db8::1]:6443";
  }
  size_t colon = authority.rfind(':');
  if (colon != std::string_view::npos && authority.find(']', colon) == std::string_view::npos &&
      authority.find_first_not_of("0123456789", colon + 1) != std::string_view::npos) {
    return fmt::format("port '{}' is not a number from 1 to 65535", authority.substr(colon + 1));
  }
  if (authority.starts_with('[') && authority.find('%') != std::string_view::npos) {
    return "an IPv6 zone ID ('%25' and an interface) is not supported";
  }
  return fmt::format("'{}' is not host:port", authority);
}

// Why Boost.URL rejected `url` as a URI, as precisely as the text allows.
std::string whyNotAUrl(std::string_view url, const boost::system::error_code& ec) {
  size_t schemeEnd = url.find("://");
  if (schemeEnd == std::string_view::npos ||
      !urls::grammar::ci_is_equal(url.substr(0, schemeEnd), std::string_view("https"))) {
    return "only https:// URLs are supported";
  }
  if (std::string bad = firstDisallowed(url, allowedInUri); !bad.empty()) {
    return bad + " is not allowed in a URL; percent-encode it";
  }
  std::string_view authority = writtenAuthority(url);
  if (!urls::parse_authority(authority)) {
    return authorityProblem(authority);
  }
  size_t path = schemeEnd + 3 + authority.size();
  std::string_view pathAndQuery = url.substr(path, url.find('#', path) - path);
  if (std::string bad = firstDisallowed(pathAndQuery, allowedInPath, path); !bad.empty()) {
    return bad + " is not allowed in the path or query; percent-encode it";
  }
  if (std::string bad = badPercentEncoding(url); !bad.empty()) {
    return bad;
  }
  return fmt::format("not a URL as RFC 3986 defines it ({})", ec.message());
}

// The host and port of an authority Boost.URL has parsed; `defaultPort` empty: a port is required.
tl::expected<HealthTarget, std::string> fromAuthority(const urls::authority_view& authority,
                                                      std::string_view defaultPort) {
  if (authority.has_userinfo()) {
    return fail("user information (before '@') is not supported");
  }
  if (authority.host_type() == urls::host_type::ipvfuture) {
    return fail(fmt::format("'{}' is not an IPv6 address", authority.encoded_host()));
  }
  HealthTarget target;
  target.authority = std::string(authority.buffer());
  target.host = std::string(authority.encoded_host_address());
  if (target.host.empty()) {
    return fail("the host is empty");
  }
  std::string_view port = authority.port();
  if (port.empty()) {
    if (defaultPort.empty()) {
      return fail("expected host:port");
    }
    port = defaultPort;
  }
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
    return fail(fmt::format("port '{}' is not a number from 1 to 65535", port));
  }
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
tl::expected<std::string, std::string> serverName(const Health& health,
                                                  const std::string& host) {
  if (!health.serverName) {
    return isIpAddress(host) ? std::string(kDefaultApiserverServerName) : host;
  }
  // The config parser allows only DNS names; a Health built in code gets the same answer. An
  // empty name matters most: OpenSSL takes it as "check no name at all".
  if (isIpAddress(*health.serverName) || health.serverName->empty()) {
    return fail(
        fmt::format("health.serverName '{}': expected the DNS name the apiserver's "
                    "certificate carries, such as {}",
                    *health.serverName, kDefaultApiserverServerName));
  }
  return *health.serverName;
}

}  // namespace

tl::expected<HealthTarget, std::string> parseHttpsUrl(std::string_view url) {
  auto parsed = urls::parse_uri(url);
  if (!parsed) {
    return fail(whyNotAUrl(url, parsed.error()));
  }
  const urls::url_view& u = *parsed;
  if (u.scheme_id() != urls::scheme::https || !u.has_authority()) {
    return fail("only https:// URLs are supported");
  }
  if (u.has_userinfo()) {
    return fail("user information in the URL is not supported");
  }
  // Boost.URL 1.81 lets the authority end at a character that cannot continue it and takes the
  // rest for a path that does not start with '/' ("https://::1:6443/x", "https://h:x/"), which
  // RFC 3986 does not allow after an authority.
  if (!u.encoded_path().empty() && !u.encoded_path().starts_with('/')) {
    return fail(authorityProblem(writtenAuthority(url)));
  }
  auto target = fromAuthority(u.authority(), "443");
  if (!target) {
    return target;
  }
  target->path = u.encoded_path().empty() ? "/" : std::string(u.encoded_path());
  if (u.has_query()) {
    target->path += '?';
    target->path += u.encoded_query();
  }
  return target;
}

tl::expected<HealthTarget, std::string> parseHostPort(std::string_view address) {
  auto parsed = urls::parse_authority(address);
  if (!parsed) {
    return fail(authorityProblem(address));
  }
  return fromAuthority(*parsed, "");
}

tl::expected<HealthTarget, std::string> healthTarget(const Health& health) {
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

}  // namespace vipd::config
