// The BGP session settings (bgp::SessionConfig, what the FSM and the UPDATE builder need) for
// one configured peer: timers, the families it carries, next hops, communities, graceful restart.
// Pure: no I/O.
#pragma once

#include <cstdint>

#include "bgp/session_fsm.h"
#include "config/config.h"

namespace vipd::daemon {

// `seed` seeds the jitter of the session's timers (RFC 4271 section 10).
bgp::SessionConfig sessionConfigFor(const config::Config& config, const config::Peer& peer,
                                    uint64_t seed);

}  // namespace vipd::daemon
