// Where a health check goes: health.url (type apiserver) or health.address (type tcp), parsed with
// Boost.URL (RFC 3986), and the server name the apiserver's certificate must carry. Pure: no
// sockets, no files. Every error is one sentence naming the setting, the value as written and
// what is wrong with it.
#pragma once

#include <string>
#include <string_view>
#include <tl/expected.hpp>

#include "config/config.h"

namespace vipd::config {

struct HealthTarget {
  std::string host;       // without brackets
  std::string port;       // decimal, as written (443 when an https URL names none)
  std::string authority;  // as written: the Host header and the name in messages
  std::string path;       // request target, "/" at least (apiserver only)
  // apiserver only: the DNS name the certificate must carry, sent as SNI; never an IP address.
  std::string serverName;
};

// An https URL: scheme https, a host, an optional port (443 when absent) from 1 to 65535, no user
// information. The path and query, as written, are the request target; a fragment is dropped.
// The error says what is wrong ("only https:// URLs are supported", "the host is empty", ...)
// without repeating the URL. serverName is left empty.
[[nodiscard]] tl::expected<HealthTarget, std::string> parseHttpsUrl(std::string_view url);

// "host:port" or "[v6]:port"; the port is required. The error is as parseHttpsUrl's.
[[nodiscard]] tl::expected<HealthTarget, std::string> parseHostPort(std::string_view address);

// The target of `health` (type apiserver or tcp), serverName included for type apiserver: it is
// health.serverName when set (which must be a DNS name), else the URL's host when that is a DNS
// name, else kDefaultApiserverServerName. The error starts with the setting and its value:
// "health.url 'http://...': only https:// URLs are supported".
[[nodiscard]] tl::expected<HealthTarget, std::string> healthTarget(const Health& health);

}  // namespace vipd::config
