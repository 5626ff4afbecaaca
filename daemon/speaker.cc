#include "daemon/speaker.h"

#include "daemon/control/request.h"

#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "daemon/lifecycle/host_lock.h"
#include "daemon/session/config.h"
#include "daemon/session/key.h"

namespace vipd::daemon {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view kDrainCommunication = "vipd: node draining";

// A listener's address as the config spells it: 127.0.0.1:9472, [::1]:9472.
std::string hostPort(const bgp::IpAddress& address, uint16_t port) {
  return address.isV6() ? fmt::format("[{}]:{}", address.toString(), port)
                        : fmt::format("{}:{}", address.toString(), port);
}

}  // namespace

std::vector<bgp::IpAddress> Speaker::peerAddresses(const config::Config& config) {
  std::vector<bgp::IpAddress> out;
  for (const auto& peer : config.peers) {
    out.push_back(peer.address);
  }
  return out;
}

std::vector<bgp::IpAddress> Speaker::vipAddresses(const config::Config& config) {
  std::vector<bgp::IpAddress> out;
  for (const auto& vip : config.vips) {
    out.push_back(vip.prefix.address);
  }
  return out;
}

Speaker::Speaker(asio::io_context& io, config::Config config, netlink::AddressTable& table,
                 netlink::Monitor& monitor, const Logger& log)
    : io_(io),
      config_(std::move(config)),
      table_(table),
      monitor_(monitor),
      log_(log),
      peers_(io, config_, bfd_, log,
             {.announceableNow =
                  [this] {
                    // Checked again right before a session's first announcement.
                    announcer_.vips().refreshAndAnnounce("a session is about to be established");
                    return announcer_.decision().announced();
                  },
              .onFabricChange = [this] { announcer_.onFabricChange(); },
              .speaking = [this] { return handoff_.active() && !shuttingDown_; }}),
      announcer_(io, config_, peers_.sessions(), table, monitor, log, *this),
      control_(
          io, config_.control.socket, config_.control.group,
          [this](const ControlRequest& request, ControlServer::Reply reply) {
            handleControl(request, std::move(reply));
          },
          log),
      instanceControl_(
          config_.control.instanceSocket
              ? std::make_unique<ControlServer>(
                    io, *config_.control.instanceSocket, config_.control.group,
                    [this](const ControlRequest& request, ControlServer::Reply reply) {
                      handleControl(request, std::move(reply));
                    },
                    log)
              : nullptr),
      health_(io, config_.health, log, [this](bool healthy, const CallResult&) {
        onHealthChange(healthy);
      }),
      http_(io, log,
            [this](std::string_view target) {
              return handleHttp(target, config_.metrics.health ? Endpoints::Metrics
                                                               : Endpoints::All);
            }),
      reloads_(utcNow()),
      listener_(io, config_, peers_.sessions(), log),
      housekeepingTimer_(io),
      drainer_(io, config_.drain, config_.control.stateDir, log, *this),
      handoff_(io, config_, log, *this),
      returnPath_(io, config_.returnPath, peerAddresses(config_), vipAddresses(config_), log,
                  {// Not a VIP a reload removed, while it waits to be unbound.
                   .vips = [this] { return announcer_.announceableVips(); },
                   .announced =
                       [this](const bgp::Prefix& vip) { return announcer_.advertised(vip); },
                   .onChange = [this] { announcer_.announce(); },
                   .interfaceAddresses = [this] { return interfacePrefixes(table_); },
                   .fabricAnnouncers =
                       [this](const bgp::Prefix& vip) {
                         // The other nodes the fabric holds a path from: witnesses to ask.
                         std::vector<bgp::IpAddress> out;
                         const auto& view = announcer_.fabricView();
                         if (auto it = view.find(vip); it != view.end()) {
                           for (const auto& a : it->second.announcers) {
                             if (!a.self) {
                               out.push_back(a.nextHop);
                             }
                           }
                         }
                         return out;
                       }}),
      doctor_(io, log),
      bfd_(io, log, PeerSet::bfdPeersOf(config_),
           [this](const BfdStateChange& change) { peers_.onBfdChange(change); }),
      report_(config_, peers_.sessions(), announcer_, health_, bfd_, drainer_, handoff_,
              returnPath_),
      kube_(io, config_.kubernetes, drainer_, log, *this) {
  if (config_.metrics.health) {
    healthHttp_.emplace(
        io, log,
        [this](std::string_view target) { return handleHttp(target, Endpoints::Health); },
        HttpServerOptions{.name = "health", .purpose = "the health endpoints"});
  }
}

tl::expected<void, std::string> Speaker::start() {
  if (!config_.allowNonLocalRouterId) {
    auto addresses = table_.addresses();
    if (!addresses) {
      return tl::unexpected(addresses.error().toString());
    }
    if (auto problem = checkRouterIdIsLocal(config_.routerId, *addresses)) {
      return tl::unexpected(*problem);
    }
  }
  // The same reading `vipd validate` does (main.cc), so it refuses every file this refuses.
  auto keys = readSessionKeys(config_.peers);
  if (!keys) {
    std::string problems;
    for (const auto& error : keys.error()) {
      problems += fmt::format("{}{}: {}", problems.empty() ? "" : "; ", error.path, error.message);
    }
    return tl::unexpected(problems);
  }
  for (size_t i = 0; i < peers_.sessions().size(); ++i) {
    if ((*keys)[i]) {
      peers_.sessions()[i]->setSessionKey(std::move(*(*keys)[i]));
    }
  }
  fitClientLimits();
  if (instanceControl_) {
    if (auto opened = instanceControl_->open(); !opened) {
      return opened;
    }
  }
  // A daemonset instance started beside the one it replaces (a rollout with maxSurge) finds the
  // node's control socket and the listeners held by it: it takes them over once that one has
  // yielded (openListeners() in startSpeaking()). Anything else in the way is an error now.
  if (auto opened = openListeners(/*mayWait=*/config_.mode == config::Mode::DaemonSet);
      !opened) {
    return opened;
  }
  // Only read the kernel here: binding is the Active instance's job (startSpeaking()).
  announcer_.vips().start();
  scheduleHousekeeping(StatusReport::kHousekeepingInterval);
  if (auto checking = health_.start(); !checking) {
    return checking;
  }
  if (auto role = handoff_.start(); !role) {
    return role;
  }
  // After the role is taken, so this instance's own listener and sessions are its own in the
  // checks' view of port 179.
  doctor_.run(config_, "start");
  if (config_.kubernetes.enabled) {
    kube_.start();  // never fatal: the API is not in the announce path
  }
  return {};
}

tl::expected<void, std::string> Speaker::openListeners(bool mayWait) {
  auto inUse = [&](bool listenerInUse, std::string_view what) {
    if (mayWait && listenerInUse) {
      log_.info("speaker", "{} is held by another daemonset instance (the pod this one replaces, "
                "or a conflict): taking it over once this instance speaks",
                what);
      return true;
    }
    return false;
  };
  if (!control_.bound()) {
    if (!(mayWait && ControlServer::answering(io_, control_.path()))) {
      if (auto opened = control_.open(); !opened) {
        return opened;
      }
    } else {
      inUse(true, fmt::format("the node's control socket {}", control_.path()));
    }
  }
  if (!http_.listening()) {
    if (auto listening = http_.listen(config_.metrics.address.toString(), config_.metrics.port);
        !listening && !inUse(http_.lastListenInUse(), "the metrics port")) {
      return listening;
    }
  }
  if (healthHttp_ && !healthHttp_->listening()) {
    if (auto listening = healthHttp_->listen(config_.metrics.health->address.toString(),
                                             config_.metrics.health->port);
        !listening && !inUse(healthHttp_->lastListenInUse(), "the health endpoints' port")) {
      return listening;
    }
  }
  return {};
}

tl::expected<void, std::string> Speaker::startSpeaking(bool restarting, std::string_view why) {
  // A daemonset instance taking over from the one it replaces takes its listeners now (that one
  // closed them when it yielded); in the way now, they are an error.
  if (auto opened = openListeners(/*mayWait=*/false); !opened) {
    return opened;
  }
  // Read again on every takeover: the other instance may have been withdrawn meanwhile. A bad
  // file does not stop vipd: it leaves the node withdrawn, and says why (status, /readyz, log).
  drainer_.loadWithdrawn();
  if (config_.listen.enabled && !listener_.isOpen()) {
    if (auto listening = listener_.open(); !listening) {
      return listening;
    }
  }
  // Before binding: a BFD port conflict must stop vipd without leaving addresses behind.
  if (auto started = bfd_.start(); !started) {
    return started;
  }
  if (auto checking = returnPath_.start(); !checking) {
    return checking;
  }
  if (const auto& withdrawn = drainer_.withdrawn()) {
    // Drained for replacement: do not bind or announce until `vipctl announce`.
    log_.warn("speaker",
              "node is withdrawn since {} ({}); not binding or announcing any VIP until "
              "`vipctl announce`",
              withdrawn->since, withdrawn->reason);
    // Nor keep any bound: vipd killed during `vipctl withdraw` (persisted before the drain
    // unbinds) leaves its addresses behind. unbindOwned() removes only the addresses vipd added,
    // which it recognises after a restart by the marking it adds them with (deprecated and
    // permanent, see VipBinder): an operator's `ip addr add` of the same address stays.
    announcer_.unbindOwned();
  } else {
    announcer_.takeAddresses();
  }
  if (config_.mode != config::Mode::Standalone) {
    log_.info("speaker", "speaking BGP as the {} instance: {}{}", config::modeName(config_.mode),
              why,
              restarting ? "; sessions reopen as a graceful restart (RFC 4724), so the peers "
                           "keep this node's path"
                         : "");
  }
  peers_.start(restarting);
  pushAnnouncements();
  return {};
}

void Speaker::stopSpeaking() {
  returnPath_.stop();
  peers_.abandon();
}

void Speaker::yieldSessions(bool toSuccessor,
                            std::function<void(std::vector<nlohmann::json>)> done) {
  announcer_.vips().cancelRebind();
  listener_.close();
  returnPath_.stop();
  if (toSuccessor) {
    // The daemonset instance that replaces this one serves the node's control socket and the
    // ports from now on; this one keeps only its own socket (control.instanceSocket), which its
    // pod's preStop hook and probes use. The yield request in hand is answered all the same:
    // its caller is that instance, and the answer tells it the sessions are closed.
    control_.handOver();
    http_.close();
    if (healthHttp_) {
      healthHttp_->close();
    }
  }
  peers_.yield(std::move(done));
}

void Speaker::scheduleHousekeeping(std::chrono::steady_clock::duration after) {
  housekeepingTimer_.expires_after(after);
  housekeepingTimer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || shuttingDown_) {
      return;
    }
    // Sleeps until a session could first be stuck (3 hold times) rather than waking every
    // second: an idle vipd's wake-ups are its CPU cost.
    scheduleHousekeeping(report_.warnAboutStuckPeers(log_));
  });
}

void Speaker::setGracefulShutdown(bool on) { peers_.setGracefulShutdown(on); }

AnnounceGate Speaker::gate() const {
  return {.active = handoff_.active(),
          .shuttingDown = shuttingDown_,
          .withdrawn = drainer_.withdrawn().has_value(),
          .draining = drainer_.draining(),
          .drainWithdrawSent = drainer_.withdrawSent(),
          .healthy = health_.healthy()};
}

void Speaker::onHealthChange(bool healthy) {
  // The checker has logged the transition; make the announcements follow it at once.
  if (healthy && !doctorRanOnHealth_ && doctor_.apiserverUnchecked()) {
    // The static pod starts before the apiserver it gates: the certificate could not be read at
    // start. Now it answers.
    doctorRanOnHealth_ = true;
    doctor_.run(config_, "health gate opened");
  }
  announcer_.onHealthChange(healthy);
}

void Speaker::handleControl(const ControlRequest& request, ControlServer::Reply reply) {
  const auto& name = request.name;
  const auto command = request.command;
  if (!command) {
    reply({{"error", fmt::format("unknown command '{}'; known: {}", name, knownCommands())}});
    return;
  }
  using enum ControlCommand;
  if (*command == Withdraw && !request.persist && !handoff_.active()) {
    // A pod's preStop hook on an instance that is not speaking: there is nothing to drain, and
    // failing the hook would only raise a FailedPreStopHook event.
    reply({{"ok", true},
           {"acknowledged", true},
           {"detail", fmt::format("this instance is {} and announces nothing; nothing to drain",
                                  handoff_.roleName())}});
    return;
  }
  if (*command == Withdraw && !request.persist && handoff_.handBack(reply)) {
    return;  // the pod's preStop with a static pod on standby: handed back, nothing drained
  }
  if ((*command == Withdraw || *command == Announce) && !handoff_.active()) {
    auto holder = handoff_.holder();
    log_.warn("control", "refused vipctl {}: this instance is {} and announces nothing",
              name, handoff_.roleName());
    reply({{"refused", "role"},
           {"error",
            fmt::format("this {} instance is {} and announces nothing; run vipctl against the "
                        "instance that speaks BGP{}",
                        config::modeName(config_.mode), handoff_.roleName(),
                        holder ? fmt::format(" ({}, --socket {})", describe(*holder),
                                             holder->controlSocket)
                               : std::string())}});
    return;
  }
  switch (*command) {
    case Status:
      reply(status());
      return;
    case HandoffCheck:
      handoff_.handleCheck(request, std::move(reply));
      return;
    case HandoffYield:
      handoff_.handleYield(request, std::move(reply));
      return;
    case Announce:
      drainer_.handleAnnounce(std::move(reply));
      return;
    case Withdraw:
      handleWithdraw(request, std::move(reply));
      return;
  }
}

void Speaker::handleWithdraw(const ControlRequest& request, ControlServer::Reply reply) {
  auto [refusal, note, shortOf, shortfall] =
      announcer_.checkWithdraw(policy::GuardMoment::Request);
  const bool force = request.force;
  if (refusal && !force) {
    log_.warn("control", "vipctl withdraw {}", *refusal);
    reply({{"error", *refusal}, {"refused", "guard"}});
    return;
  }
  if (refusal) {
    log_.warn("control", "vipctl withdraw --force: the guard would have refused ({})",
              *refusal);
  }
  if (!note.empty()) {
    log_.info("control", "vipctl withdraw: guard {}", note);
  }
  // Checked again when the withdrawal would take effect (the others' drains visible by then).
  Drainer::Guard guard;
  if (!force) {
    guard = [this] { return announcer_.checkWithdraw(policy::GuardMoment::Effect).refusal; };
  }
  drainer_.handleWithdraw(request, [reply = std::move(reply), note = note](nlohmann::json answer) {
    if (!note.empty() && answer.is_object()) {
      answer["guard"] = note;
    }
    reply(std::move(answer));
  }, std::move(guard));
}

nlohmann::json Speaker::status() const {
  auto out = report_.status(report_.intent(shuttingDown_));
  out["listeners"] = {{"control", control_.stats().toJson()},
                      {"metrics", http_.stats().toJson()},
                      {"bgp", listener_.stats().toJson()}};
  if (healthHttp_) {
    out["listeners"]["health"] = healthHttp_->stats().toJson();
  }
  if (instanceControl_) {
    out["listeners"]["instanceControl"] = instanceControl_->stats().toJson();
  }
  out["returnPath"] = returnPath_.status();
  out["fabric"] = report_.fabricStatus();
  out["health"]["onFailure"] =
      config_.health.onFailure == config::Health::OnFailure::Degrade ? "degrade" : "withdraw";
  out["health"]["degraded"] = announcer_.degradedNow() && handoff_.active();
  out["health"]["vipsUnbound"] = announcer_.heldForHealth() && handoff_.active();
  out["config"] = reloads_.status();
  out["doctor"] = doctor_.status();
  out["kubernetes"] =
      config_.kubernetes.enabled ? kube_.status() : nlohmann::json{{"enabled", false}};
  return out;
}

// Every capped listener gets its share of the descriptor limit (raised to the hard limit by
// main()), so a flood of clients on every listener at once still leaves descriptors for what
// keeps the VIP announced: sessions, BFD, netlink, the health check, state files.
void Speaker::fitClientLimits() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return;
  }
  constexpr size_t kPreferred = 32;
  const size_t reserved = 64 + 4 * config_.peers.size();
  const size_t listeners = 2 + (healthHttp_ ? 1 : 0) + (instanceControl_ ? 1 : 0);
  const size_t cap = clientLimitFor(limit.rlim_cur, listeners, reserved, kPreferred);
  control_.setMaxClients(cap);
  if (instanceControl_) {
    instanceControl_->setMaxClients(cap);
  }
  http_.setMaxConnections(cap);
  if (healthHttp_) {
    healthHttp_->setMaxConnections(cap);
  }
  if (cap < kPreferred) {
    log_.warn("speaker",
              "the open-file limit {} leaves room for {} client(s) per listener (control socket, "
              "metrics) instead of {}; raise it (ulimit -n, LimitNOFILE=)",
              static_cast<uint64_t>(limit.rlim_cur), cap, kPreferred);
  }
}

HttpResponse Speaker::handleHttp(std::string_view target, Endpoints endpoints) {
  // The query string never changes which endpoint answers (`/metrics?x=1` is /metrics); only
  // /readyz reads it: `?verbose` lists every check, as the apiserver's /readyz does.
  auto [path, query] = splitTarget(target);
  const bool health = path == "/healthz" || path == "/readyz";
  if (endpoints == Endpoints::Metrics && health) {
    const auto& h = *config_.metrics.health;
    return {404, "text/plain",
            fmt::format("not found; {} is served on {} (metrics.healthListen)\n", path,
                        hostPort(h.address, h.port))};
  }
  if (endpoints == Endpoints::Health && !health) {
    return {404, "text/plain",
            path == "/metrics"
                ? fmt::format("not found; /metrics is served on {} (metrics.listen)\n",
                              hostPort(config_.metrics.address, config_.metrics.port))
                : std::string("not found; try /healthz or /readyz\n")};
  }
  if (path == "/metrics") {
    metrics_.update(status());
    return {200, std::string(kPrometheusContentType), metrics_.serialize()};
  }
  if (path == "/healthz") {
    return {200, "text/plain", "ok\n"};
  }
  if (path == "/readyz") {
    const auto now = report_.intent(shuttingDown_);
    auto checks = report_.readinessChecks(now);
    bool ready = std::none_of(checks.begin(), checks.end(),
                              [](const ReadinessCheck& c) { return c.failure.has_value(); });
    if (hasQueryFlag(query, "verbose")) {
      return {ready ? 200u : 503u, "text/plain", verboseReadiness(checks)};
    }
    if (ready) {
      return {200, "text/plain", "ok\n"};
    }
    return {503, "text/plain",
            fmt::format("not ready: {}\n", fmt::join(report_.notReadyReasons(now), "; "))};
  }
  return {404, "text/plain",
          endpoints == Endpoints::Metrics ? "not found; try /metrics\n"
                                          : "not found; try /metrics, /healthz or /readyz\n"};
}

void Speaker::shutdown(std::function<void()> done) {
  if (shuttingDown_) {
    return;
  }
  if (!handoff_.active()) {
    // Standby or contending: the other instance speaks and owns the addresses. Nothing here is
    // announced, so nothing is withdrawn or unbound.
    shuttingDown_ = true;
    log_.info("speaker", "{} instance stopping: it announces nothing, so nothing is withdrawn "
              "and no address is touched", handoff_.roleName());
    handoff_.stop();
    done();
    return;
  }
  auto stop = [this, done = std::move(done)]() mutable {
    stopPeers(std::string(kDrainCommunication), std::move(done));
  };
  if (drainer_.draining()) {
    // SIGTERM in the middle of `vipctl withdraw`: let that drain finish, then close and exit.
    log_.info("speaker", "SIGTERM during a drain: exiting once the drain has finished");
    drainer_.thenRun(std::move(stop));
    return;
  }
  if (drainer_.withdrawn()) {
    // Already drained by vipctl withdraw: nothing is announced or bound by us; just close.
    log_.info("speaker", "SIGTERM while withdrawn: closing sessions");
    stop();
    return;
  }
  drainer_.start("SIGTERM", std::nullopt, nullptr, std::move(stop));
}

void Speaker::stopPeers(std::string shutdownCommunication, std::function<void()> done) {
  shuttingDown_ = true;
  announcer_.stop();
  housekeepingTimer_.cancel();
  health_.stop();
  returnPath_.stop();
  listener_.close();
  peers_.stop(std::move(shutdownCommunication), std::move(done));
}

}  // namespace vipd::daemon
