// What every fallible call of kube/ returns: a value or an Error that says what failed, in what
// kind of way (so the caller can choose: relist on 410, back off on 429 and 5xx, refuse a config)
// and one sentence for the operator. Nothing in kube/ throws past its own functions.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <tl/expected.hpp>

namespace vipd::kube {

enum class ErrorKind {
  Config,     // credentials or settings are wrong: nothing to retry until someone fixes them
  Resolve,    // the server's name did not resolve
  Connect,    // TCP connect refused or failed
  Timeout,    // a deadline passed (connect, request, a silent watch)
  Tls,        // the handshake failed: certificate, name, protocol
  Transport,  // the connection failed or closed mid-exchange
  TooLarge,   // a header, a body or a watch event beyond its limit
  Http,       // the server answered with a status other than 2xx (httpStatus says which)
  Protocol,   // the answer is not what the Kubernetes API sends (invalid JSON, wrong shape)
  Local,      // this process could not run the call (memory, descriptors)
  Cancelled,  // the caller cancelled it
};

[[nodiscard]] std::string_view errorKindName(ErrorKind kind);

struct Error {
  ErrorKind kind = ErrorKind::Protocol;
  std::string message;
  unsigned httpStatus = 0;                       // kind Http: the status code
  std::optional<std::chrono::seconds> retryAfter;  // kind Http: the Retry-After header, if any
};

template <class T>
using Result = tl::expected<T, Error>;

[[nodiscard]] inline tl::unexpected<Error> fail(ErrorKind kind, std::string message) {
  return tl::unexpected(Error{kind, std::move(message), 0, std::nullopt});
}

}  // namespace vipd::kube
