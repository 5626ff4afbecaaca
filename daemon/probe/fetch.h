// The watcher's one HTTP client call: GET a probe instance's /probe.json over plain HTTP (the
// probe's listener, on the pod or node network), bounded by a timeout. Runs its own io_context
// and blocks: `vipd probe --watch` is a terminal tool, not part of the daemon's event loop.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <tl/expected.hpp>

namespace vipd::daemon {

struct FetchTarget {
  std::string host;  // without brackets
  std::string port;
  std::string path;  // "/probe.json" unless the URL names one
};

// "192.0.2.1:9474", "http://192.0.2.1:9474", "http://[2001:db8::1]:9474/probe.json",
// "probe.example:9474". The error says what is wrong with `text`.
[[nodiscard]] tl::expected<FetchTarget, std::string> parseFetchUrl(std::string_view text);

// The body of a 200 answer (at most 4 MiB); any other outcome is one phrase: "connect to
// 192.0.2.1:9474 failed: Connection refused", "timed out after 2s", "HTTP 404".
[[nodiscard]] tl::expected<std::string, std::string> fetchProbeDocument(
    const FetchTarget& target, std::chrono::milliseconds timeout);

}  // namespace vipd::daemon
