#include "daemon/probe/fetch.h"

#include <fmt/format.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <optional>

#include "daemon/base/version.h"

namespace vipd::daemon {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr size_t kMaxDocumentBytes = 4 * 1024 * 1024;

tl::expected<FetchTarget, std::string> parseFetchUrl(std::string_view text) {
  std::string_view rest = text;
  if (rest.starts_with("https://")) {
    return tl::unexpected(fmt::format("'{}': the probe's listener speaks plain http://", text));
  }
  if (rest.starts_with("http://")) {
    rest.remove_prefix(7);
  }
  FetchTarget out;
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  out.path = slash == std::string_view::npos ? "/probe.json" : std::string(rest.substr(slash));
  if (out.path == "/") {
    out.path = "/probe.json";
  }
  size_t colon = authority.rfind(':');
  if (authority.starts_with('[')) {
    size_t close = authority.find(']');
    if (close == std::string_view::npos || close + 1 != colon) {
      return tl::unexpected(fmt::format("'{}' is not host:port or [v6]:port", text));
    }
    out.host = std::string(authority.substr(1, close - 1));
  } else {
    if (colon == std::string_view::npos) {
      return tl::unexpected(fmt::format("'{}' names no port (the probe listens on 9474 by default)",
                                        text));
    }
    out.host = std::string(authority.substr(0, colon));
  }
  out.port = std::string(authority.substr(colon + 1));
  if (out.host.empty() || out.port.empty() ||
      out.port.find_first_not_of("0123456789") != std::string::npos || out.port.size() > 5 ||
      std::stoul(out.port) == 0 || std::stoul(out.port) > 65535) {
    return tl::unexpected(fmt::format("'{}' is not host:port with a port from 1 to 65535", text));
  }
  return out;
}

tl::expected<std::string, std::string> fetchProbeDocument(const FetchTarget& target,
                                                          std::chrono::milliseconds timeout) {
  asio::io_context io;
  tcp::resolver resolver(io);
  beast::tcp_stream stream(io);
  beast::flat_buffer buffer;
  http::request<http::empty_body> request{http::verb::get, target.path, 11};
  std::string authority = target.host.find(':') != std::string::npos
                              ? fmt::format("[{}]:{}", target.host, target.port)
                              : fmt::format("{}:{}", target.host, target.port);
  request.set(http::field::host, authority);
  request.set(http::field::user_agent, fmt::format("vipd/{}", version()));
  request.set(http::field::connection, "close");
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxDocumentBytes);
  std::optional<tl::expected<std::string, std::string>> outcome;
  auto fail = [&outcome](std::string message) { outcome = tl::unexpected(std::move(message)); };

  // Every stage is bounded by the same deadline (beast::tcp_stream's expiry covers connect,
  // write and read; the resolver is cancelled by io.run_for below).
  stream.expires_after(timeout);
  resolver.async_resolve(target.host, target.port, [&](const boost::system::error_code& ec,
                                                       const tcp::resolver::results_type& results) {
    if (ec) {
      return fail(fmt::format("cannot resolve {}: {}", target.host, ec.message()));
    }
    stream.async_connect(results, [&](const boost::system::error_code& ec, const tcp::endpoint&) {
      if (ec) {
        return fail(fmt::format("connect to {} failed: {}", authority, ec.message()));
      }
      http::async_write(stream, request, [&](const boost::system::error_code& ec, size_t) {
        if (ec) {
          return fail(fmt::format("sending to {} failed: {}", authority, ec.message()));
        }
        http::async_read(stream, buffer, parser, [&](const boost::system::error_code& ec, size_t) {
          if (ec) {
            return fail(fmt::format("reading from {} failed: {}", authority, ec.message()));
          }
          if (parser.get().result_int() != 200) {
            return fail(fmt::format("{}{}: HTTP {}", authority, target.path,
                                    parser.get().result_int()));
          }
          outcome = parser.get().body();
        });
      });
    });
  });
  io.run_for(timeout + std::chrono::milliseconds(100));
  if (!outcome) {
    return tl::unexpected(fmt::format("{}: no answer within {}ms", authority, timeout.count()));
  }
  return *outcome;
}

}  // namespace vipd::daemon
