#include "daemon/probe/runner.h"

#include <fmt/format.h>

#include <boost/asio/ssl/context.hpp>

#include "daemon/base/version.h"
#include "daemon/health/tls.h"
#include "daemon/http/metrics.h"
#include "daemon/probe/answer.h"

namespace vipd::daemon {

namespace {

std::vector<std::string> targetNames(const config::ProbeConfig& config) {
  std::vector<std::string> names;
  for (const auto& t : config.targets) {
    names.push_back(t.name);
  }
  return names;
}

// The health gate's settings for one target, so the probe reuses its URL rules, server-name
// default and TLS context (health_target.h, health/tls.h) rather than a copy of them.
config::Health asHealth(const config::ProbeTarget& target) {
  config::Health health;
  health.type = config::Health::Type::Apiserver;
  health.url = target.url;
  health.caFile = target.caFile;
  health.serverName = target.serverName;
  return health;
}

}  // namespace

ProbeRunner::ProbeRunner(asio::io_context& io, config::ProbeConfig config, const Logger& log)
    : io_(io),
      config_(std::move(config)),
      log_(log),
      metrics_(config_.site, targetNames(config_), config_.interval) {}

ProbeRunner::~ProbeRunner() { stop(); }

tl::expected<void, std::string> ProbeRunner::start() {
  for (const auto& t : config_.targets) {
    auto health = asHealth(t);
    auto where = config::healthTarget(health);
    if (!where) {
      return tl::unexpected(fmt::format("target {}: {}", t.name, where.error()));
    }
    auto tls = makeHealthTlsContext(health);
    if (!tls) {
      return tl::unexpected(fmt::format("target {}: {}", t.name, tls.error()));
    }
    auto target = std::make_unique<Target>();
    target->config = t;
    target->where = std::move(*where);
    target->tls = std::move(*tls);
    target->timer = std::make_unique<asio::steady_timer>(io_);
    targets_.push_back(std::move(target));
  }
  http_ = std::make_unique<HttpServer>(
      io_, log_, [this](std::string_view target) { return serve(target); },
      HttpServerOptions{.name = "probe", .purpose = "the probe's metrics"});
  if (auto listening = http_->listen(config_.listen.address.toString(), config_.listen.port);
      !listening) {
    return tl::unexpected(listening.error());
  }
  // Staggered: target i first probes i/n of an interval after start.
  auto now = std::chrono::steady_clock::now();
  for (size_t i = 0; i < targets_.size(); ++i) {
    targets_[i]->next = now + config_.interval * i / targets_.size();
    schedule(*targets_[i]);
  }
  log_.info("probe", "site {}: probing {} target(s) every {}; /metrics and /probe.json on {}:{}",
            config_.site, targets_.size(), config::formatDuration(config_.interval),
            config_.listen.address.toString(), http_->port());
  return {};
}

void ProbeRunner::stop() {
  stopped_ = true;
  for (auto& target : targets_) {
    if (target->inFlight) {
      target->inFlight->abandon();
      target->inFlight.reset();
    }
    target->timer->cancel();
  }
  http_.reset();
}

uint16_t ProbeRunner::port() const { return http_ ? http_->port() : 0; }

void ProbeRunner::schedule(Target& target) {
  target.timer->expires_at(target.next);
  target.timer->async_wait([this, &target](const boost::system::error_code& ec) {
    if (ec || stopped_) {
      return;
    }
    probe(target);
  });
}

void ProbeRunner::probe(Target& target) {
  // The timeout is shorter than the interval (the config makes sure), so the previous probe has
  // always ended here; the next one is due an interval after this one was, not after it ended.
  target.next += config_.interval;
  auto now = std::chrono::steady_clock::now();
  if (target.next < now) {
    target.next = now + config_.interval;  // the loop was stalled: skip, do not burst
  }
  target.inFlight = ApiserverCall::start(
      io_, target.where, target.tls, config_.timeout, judgeFor(target.config.expect),
      std::string(acceptFor(target.config.expect)),
      [this, &target](const CallResult& result) { onResult(target, result); });
  schedule(target);
}

void ProbeRunner::onResult(Target& target, const CallResult& result) {
  target.inFlight.reset();
  metrics_.record(target.config.name, result);
  target.history.record({std::chrono::system_clock::now(), result.ok, result.latency,
                         result.failure},
                        result.detail);
  if (target.lastOk != result.ok) {
    if (result.ok) {
      log_.info("probe", "site {} target {} ({}): answering: {} in {}us", config_.site,
                target.config.name, target.config.url, result.detail, result.latency.count());
    } else {
      log_.warn("probe", "site {} target {} ({}): failing ({}): {}; probing again every {}",
                config_.site, target.config.name, target.config.url,
                probeFailureReason(result.failure), result.detail,
                config::formatDuration(config_.interval));
    }
    target.lastOk = result.ok;
  }
}

nlohmann::json ProbeRunner::document() const {
  auto now = std::chrono::system_clock::now();
  nlohmann::json targets = nlohmann::json::array();
  for (const auto& target : targets_) {
    nlohmann::json entry = target->history.toJson(now, kProbeSummaryWindow, kProbeRecentListed);
    entry["name"] = target->config.name;
    entry["url"] = target->config.url;
    entry["expect"] = config::probeExpectName(target->config.expect);
    targets.push_back(std::move(entry));
  }
  return {{"site", config_.site},
          {"version", version()},
          {"intervalSeconds", std::chrono::duration<double>(config_.interval).count()},
          {"windowSeconds", kProbeSummaryWindow.count()},
          {"targets", std::move(targets)}};
}

HttpResponse ProbeRunner::serve(std::string_view requestTarget) const {
  auto [path, query] = splitTarget(requestTarget);
  if (path == "/metrics") {
    return {200, std::string(kPrometheusContentType), metrics_.serialize()};
  }
  if (path == "/probe.json") {
    return {200, "application/json", document().dump() + "\n"};
  }
  if (path == "/healthz") {
    return {200, "text/plain; charset=utf-8", "ok\n"};
  }
  return {404, "text/plain; charset=utf-8", "not found: try /metrics or /probe.json\n"};
}

}  // namespace vipd::daemon
