// The certificate the apiserver serves at health.url, for `vipd doctor`'s check that every VIP
// is among its subjectAltNames (doctor/checks.h). One TLS handshake with the health check's own
// context (daemon/health/tls.h: health.caFile alone as the trust anchor, the client
// certificate when set), without SNI, as a client dialling the VIP's address sends none; then
// the connection is closed. Nothing is requested over it.
#pragma once

#include <chrono>

#include "config/config.h"
#include "doctor/node_facts.h"

namespace vipd::daemon {

// Reads the served certificate, its names and whether its chain verifies against caFile, within
// `timeout` (resolve, connect and handshake together). Blocks the calling thread: it runs its own
// io_context, never the daemon's. Never throws; what went wrong is in the result's fetchError
// (nothing read) or verifyError (read, not trusted; or the CA file could not be used).
[[nodiscard]] doctor::ApiserverCertificate fetchApiserverCertificate(
    const config::Health& health, std::chrono::milliseconds timeout);

}  // namespace vipd::daemon
