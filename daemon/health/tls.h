// The TLS client context of the apiserver health check, built once by HealthChecker::start()
// from health.caFile, certFile and keyFile: TLS 1.2 or later, peer verification against caFile
// alone (the system trust store is never loaded), and the client certificate when one is set.
// The per-connection part (SNI, the name the certificate must carry) is ApiserverCall's.
#pragma once

#include <memory>
#include <string>
#include <tl/expected.hpp>

#include "config/config.h"

namespace boost::asio::ssl {
class context;
}

namespace vipd::daemon {

// Reads the PEM files `health` names and builds the context. An error is one sentence naming the
// setting and the file to fix: "health.caFile /etc/k.pem: cannot open it: No such file or
// directory", "health.keyFile k.pem is not the key of health.certFile c.pem".
[[nodiscard]] tl::expected<std::shared_ptr<boost::asio::ssl::context>, std::string>
makeHealthTlsContext(const config::Health& health);

}  // namespace vipd::daemon
