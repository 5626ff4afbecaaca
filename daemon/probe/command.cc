#include "daemon/probe/command.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <optional>
#include <thread>

#include "cli/command_line.h"
#include "config/duration.h"
#include "config/probe_config.h"
#include "daemon/base/logger.h"
#include "daemon/base/version.h"
#include "daemon/probe/fetch.h"
#include "daemon/probe/matrix.h"
#include "daemon/probe/runner.h"

namespace vipd::daemon {

namespace {

constexpr std::chrono::milliseconds kFetchTimeout{2000};

struct Options {
  std::string configPath;
  std::optional<std::string> site;
  bool validate = false;
  std::vector<std::string> watch;
  bool once = false;
  bool json = false;
  std::string refresh = "2s";
  LogFormat logFormat = LogFormat::Text;
  LogLevel logLevel = LogLevel::Info;
};

int printErrors(const std::string& path, const std::vector<config::ConfigError>& errors) {
  for (const auto& error : errors) {
    std::fprintf(stderr, "%s\n", error.toString().c_str());
  }
  std::fprintf(stderr, "vipd probe: %s: %zu error(s); nothing started\n", path.c_str(),
               errors.size());
  return 1;
}

int runProbes(const Options& options) {
  auto loaded = config::loadProbeConfigFile(options.configPath, {options.site});
  if (!loaded) {
    return printErrors(options.configPath, loaded.error());
  }
  if (options.validate) {
    std::printf("%s: valid (site %s, %zu target(s))\n", options.configPath.c_str(),
                loaded->site.c_str(), loaded->targets.size());
    return 0;
  }
  std::signal(SIGPIPE, SIG_IGN);
  Logger log(options.logFormat, options.logLevel);
  boost::asio::io_context io(1);
  ProbeRunner runner(io, std::move(*loaded), log);
  if (auto started = runner.start(); !started) {
    log.error("probe", "cannot start: {}", started.error());
    return 1;
  }
  boost::asio::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&](const boost::system::error_code& ec, int signal) {
    if (ec) {
      return;
    }
    log.info("probe", "received signal {}; stopping", signal);
    runner.stop();
    io.stop();
  });
  log.info("probe", "vipd {} probing with config {}", version(), options.configPath);
  io.run();
  return 0;
}

std::vector<ProbeSource> fetchAll(const std::vector<FetchTarget>& targets,
                                  const std::vector<std::string>& urls) {
  std::vector<ProbeSource> sources;
  for (size_t i = 0; i < targets.size(); ++i) {
    ProbeSource source{urls[i], nullptr, ""};
    auto body = fetchProbeDocument(targets[i], kFetchTimeout);
    if (!body) {
      source.error = body.error();
    } else {
      source.document = nlohmann::json::parse(*body, nullptr, false);
      if (source.document.is_discarded()) {
        source.document = nullptr;
        source.error = "the answer is not JSON";
      }
    }
    sources.push_back(std::move(source));
  }
  return sources;
}

int watch(const Options& options, const CLI::App& app) {
  std::vector<FetchTarget> targets;
  for (const auto& url : options.watch) {
    auto target = parseFetchUrl(url);
    if (!target) {
      return cli::usageError(app, fmt::format("--watch {}", target.error()), std::cerr);
    }
    targets.push_back(std::move(*target));
  }
  auto refresh = config::parseDuration(options.refresh);
  if (!refresh || *refresh < std::chrono::milliseconds(200)) {
    return cli::usageError(app, fmt::format("--refresh '{}' is not a duration of 200ms or more",
                                            options.refresh),
                           std::cerr);
  }
  for (bool first = true;; first = false) {
    auto sources = fetchAll(targets, options.watch);
    bool allAnswered = std::all_of(sources.begin(), sources.end(),
                                   [](const ProbeSource& s) { return s.error.empty(); });
    auto matrix = probeMatrixJson(sources);
    if (options.json) {
      // A --watch URL from the command line need not be UTF-8: replaced, not thrown on.
      std::cout << matrix.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      return allAnswered ? 0 : 1;
    }
    std::string title = fmt::format("vipd probe matrix, {:%Y-%m-%d %H:%M:%S} UTC",
                                    fmt::gmtime(std::time(nullptr)));
    std::string frame = renderProbeMatrix(matrix, title);
    if (options.once) {
      std::cout << frame << std::flush;
      return allAnswered ? 0 : 1;
    }
    // Cursor home, the frame, then clear what the previous (longer) frame left below it.
    std::cout << (first ? "\x1b[2J" : "") << "\x1b[H" << frame << "\x1b[J" << std::flush;
    std::this_thread::sleep_for(*refresh);
  }
}

}  // namespace

int runProbeCommand(const std::vector<std::string>& args) {
  CLI::App app(
      "Probes API front-ends (a VIP, a load balancer, a DNS name) from this site with calls only "
      "an apiserver answers, and shows the matrix of sites and targets.",
      "vipd probe");
  cli::configure(app);
  Options options;
  app.add_option("--config", options.configPath, "the probe config (kind ProbeConfiguration)")
      ->option_text("FILE")
      ->check(cli::nonEmpty());
  app.add_option("--site", options.site,
                 "this probe's site, when the config has none (the DaemonSet passes its pod's "
                 "vipd.io/probe-site label); given in both places it is an error")
      ->option_text("SITE")
      ->check(cli::nonEmpty());
  app.add_flag("--validate", options.validate, "check the config and exit");
  app.add_option("--watch", options.watch,
                 "draw the matrix from these probe instances' /probe.json (host:port or "
                 "http://host:port), refreshed in place")
      ->option_text("URL")
      ->check(cli::nonEmpty());
  app.add_flag("--once", options.once, "with --watch: draw one frame and exit");
  app.add_flag("--json", options.json, "with --watch: print the matrix as JSON and exit");
  app.add_option("--refresh", options.refresh, "with --watch: time between frames (default 2s)")
      ->option_text("DURATION");
  cli::addChoice(app, "--log-format", options.logFormat,
                 {{"text", LogFormat::Text}, {"json", LogFormat::Json}},
                 "the log's format (default text)");
  cli::addChoice(app, "--log-level", options.logLevel,
                 {{"debug", LogLevel::Debug},
                  {"info", LogLevel::Info},
                  {"warn", LogLevel::Warn},
                  {"error", LogLevel::Error}},
                 "the least severe events logged (default info)");
  if (auto exitCode = cli::parse(app, args, std::cout, std::cerr)) {
    return *exitCode;
  }
  if (!options.watch.empty()) {
    if (!options.configPath.empty() || options.validate || options.site) {
      return cli::usageError(app, "--watch reads running probes; it takes no --config, --site "
                                  "or --validate",
                             std::cerr);
    }
    return watch(options, app);
  }
  if (options.once || options.json) {
    return cli::usageError(app, "--once and --json go with --watch", std::cerr);
  }
  if (options.configPath.empty()) {
    return cli::usageError(app, "--config FILE is required (or --watch URL)", std::cerr);
  }
  return runProbes(options);
}

}  // namespace vipd::daemon
