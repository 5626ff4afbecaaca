// vipd: announces this node's VIPs over BGP while they are bound locally.
//
//   vipd --config FILE [--node-config FILE] [--router-id ADDRESS] [--log-format text|json]
//        [--log-level ...]
//   vipd validate --config FILE [--node-config FILE] [--router-id ADDRESS]
//   vipd doctor --config FILE [--node-config FILE] [--router-id ADDRESS] [--manifests-dir DIR]
//               [--json] (daemon/doctor/command.h)
//   vipd config --show --config FILE [--node-config FILE] [--router-id ADDRESS]
//   vipd render ... (bootstrap/render_command.h)
//   vipd probe ... (daemon/probe/command.h)
//   vipd --version
#include <signal.h>
#include <sys/resource.h>
#include <string.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include "bootstrap/render_command.h"
#include "cli/command_line.h"
#include "config/layers.h"
#include "config/parser.h"
#include "daemon/base/logger.h"
#include "daemon/config_reloader.h"
#include "daemon/doctor/command.h"
#include "daemon/probe/command.h"
#include "daemon/speaker.h"
#include "kube/link.h"
#include "daemon/base/version.h"
#include "daemon/lifecycle/instance_lock.h"
#include "daemon/session/key.h"
#include "netlink/address_table.h"

namespace {

using namespace vipd;

enum class Command { Run, Validate, Show, Render, Probe, Doctor };

struct Options {
  Command command = Command::Run;
  std::vector<std::string> commandArgs;  // the words after "render" or "probe"
  config::ConfigSources sources;  // --config, --node-config, --router-id
  bool showFields = false;        // `vipd config --show`
  std::optional<std::string> manifestsDir;  // `vipd doctor --manifests-dir`
  bool json = false;                        // `vipd doctor --json`
  daemon::LogFormat logFormat = daemon::LogFormat::Text;
  daemon::LogLevel logLevel = daemon::LogLevel::Info;
};

// --config, --node-config and --router-id, which the daemon, `vipd validate` and `vipd config`
// take.
CLI::Option* addConfigOptions(CLI::App& app, Options& options) {
  CLI::Option* config = app.add_option("--config", options.sources.configPath, "the config file")
                            ->option_text("FILE")
                            ->required()
                            ->check(cli::nonEmpty());
  app.add_option("--node-config", options.sources.nodeConfigPath,
                 fmt::format("this node's own facts (kind NodeConfiguration, written by `vipd "
                             "render`; the DaemonSet mounts {}), merged with --config; a key set "
                             "in both is an error",
                             config::kDefaultNodeConfigPath))
      ->option_text("FILE")
      ->check(cli::nonEmpty());
  app.add_option("--router-id", options.sources.overrides.routerId,
                 "the BGP identifier, when the config file has none (the DaemonSet passes the "
                 "node's status.hostIP); given in both places it is an error")
      ->option_text("ADDRESS")
      ->check(cli::nonEmpty());
  return config;
}

// Returns an exit code when parsing ends the program (help, version, usage error).
std::optional<int> parseOptions(int argc, char** argv, Options& options) {
  CLI::App app("Announces this node's VIPs over BGP while they are bound locally.", "vipd");
  cli::configure(app, daemon::version());
  CLI::Option* config = addConfigOptions(app, options);
  cli::addChoice(app, "--log-format", options.logFormat,
                 {{"text", daemon::LogFormat::Text}, {"json", daemon::LogFormat::Json}},
                 "the log's format (default text)");
  cli::addChoice(app, "--log-level", options.logLevel,
                 {{"debug", daemon::LogLevel::Debug},
                  {"info", daemon::LogLevel::Info},
                  {"warn", daemon::LogLevel::Warn},
                  {"error", daemon::LogLevel::Error}},
                 "the least severe events logged (default info)");
  CLI::App* validate = app.add_subcommand(
      "validate",
      "checks a config file and the password files it names, and exits: 0 when all is valid, 1 "
      "after naming every error");
  addConfigOptions(*validate, options);
  CLI::App* show = app.add_subcommand(
      "config", "prints the effective config, each field with the file it came from");
  addConfigOptions(*show, options);
  show->add_flag("--show", options.showFields, "print every field of the effective config")
      ->required();
  CLI::App* doctor = app.add_subcommand(
      "doctor",
      "checks this node before vipd announces, and at any time after: one line per check (ok, "
      "warn or fail, and what to do); exits 0 when nothing fails, 1 when something does, 2 when "
      "a config file cannot be read");
  addConfigOptions(*doctor, options);
  doctor
      ->add_option("--manifests-dir", options.manifestsDir,
                   "kubelet's static-pod directory, checked for stray files and a second vipd "
                   "(default: the first of kubeadm's, k3s's and RKE2's that exists)")
      ->option_text("DIR")
      ->check(cli::nonEmpty());
  doctor->add_flag("--json", options.json, "print the checks as one JSON document");
  CLI::App* render = app.add_subcommand(
      "render", "writes the config and the kubelet static-pod manifest from instance metadata");
  // `vipd render` has its own command line (bootstrap/render_command.h): every word after
  // "render", --help included, is passed on to it as it is.
  render->prefix_command()->allow_extras()->set_help_flag();
  CLI::App* probe = app.add_subcommand(
      "probe", "probes API front-ends from this site, or shows the matrix of sites and targets");
  // Like render: its own command line (daemon/probe/command.h).
  probe->prefix_command()->allow_extras()->set_help_flag();
  for (CLI::App* command : {validate, show, doctor, render, probe}) {
    // The daemon's --config is not required of a command, which comes first and has its own.
    command->preparse_callback([config](std::size_t) { config->required(false); });
  }
  if (auto exitCode =
          cli::parse(app, std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr)) {
    return exitCode;
  }
  for (CLI::App* command : app.get_subcommands()) {
    for (const CLI::Option* option : app.get_options()) {
      if (option->count() > 0) {
        return cli::usageError(app,
                               fmt::format("{} is given before '{}': the command comes first",
                                           option->get_name(), command->get_name()),
                               std::cerr);
      }
    }
  }
  if (validate->parsed()) {
    options.command = Command::Validate;
  } else if (show->parsed()) {
    options.command = Command::Show;
  } else if (doctor->parsed()) {
    options.command = Command::Doctor;
  } else if (render->parsed()) {
    options.command = Command::Render;
    options.commandArgs = render->remaining();
  } else if (probe->parsed()) {
    options.command = Command::Probe;
    options.commandArgs = probe->remaining();
  }
  return std::nullopt;
}

// "vipd.yaml", or "vipd.yaml + node.yaml" with a node file: how messages name the config.
std::string configNames(const Options& options) {
  const config::ConfigSources& s = options.sources;
  return s.nodeConfigPath ? fmt::format("{} + {}", s.configPath, *s.nodeConfigPath)
                          : s.configPath;
}

// What `vipd validate` reads beyond the config, as the start reads it, so that the systemd unit's
// ExecStartPre (validate) fails wherever the start would: the password files (one function with
// Speaker::start()) and the kubeconfig (issue 41: a file vipd cannot use turns the link off at
// start, which vipd survives; validate says so first. In-cluster credentials exist only in the
// pod). The errors, each at its key; none when all can be used.
std::vector<config::ConfigError> filesStartReads(const Options& options,
                                                 const config::LoadedConfig& loaded) {
  if (auto keys = daemon::readSessionKeys(loaded.config.peers); !keys) {
    auto errors = keys.error();
    for (auto& error : errors) {
      error.file = loaded.origins.blame(error.path, options.sources.configPath);
    }
    return errors;
  }
  if (const auto& k = loaded.config.kubernetes; k.enabled && k.kubeconfig) {
    auto target = kube::resolveLinkTarget(
        k,
        [](std::string_view name) {
          const char* value = std::getenv(std::string(name).c_str());
          return value == nullptr ? std::nullopt : std::optional<std::string>(value);
        },
        kube::localFileReader());
    if (!target) {
      config::ConfigError error;
      error.file = loaded.origins.blame("kubernetes.kubeconfig", options.sources.configPath);
      error.path = "kubernetes.kubeconfig";
      error.message = target.error().message;
      return {error};
    }
  }
  return {};
}

// ---- signals ----
//
// Every catchable signal whose default action ends the process is either handled here or
// ignored, so no signal a user or a tool can send takes vipd down without a drain:
//   SIGHUP            re-reads the config (ConfigReloader::reload(), the one reload path, which a
//                     change to the files also takes: daemon/config_reloader.h).
//   SIGUSR1, SIGUSR2  log the status document (as `vipctl status --json`) at info.
//   SIGTERM, SIGINT, SIGQUIT, SIGALRM, SIGVTALRM, SIGPROF, SIGIO (SIGPOLL), SIGPWR, SIGSTKFLT,
//   SIGXCPU and the real-time signals SIGRTMIN..SIGRTMAX
//                     drain (GRACEFUL_SHUTDOWN, withdraw, unbind), Cease 6/2 to every peer, exit 0.
//   SIGPIPE, SIGXFSZ  ignored: both report a write of our own that failed (a closed socket, the
//                     file size limit), and that write already returns the error (EPIPE, EFBIG).
// Left at their defaults: SIGKILL and SIGSTOP (cannot be caught), and the fault signals SIGSEGV,
// SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS and SIGABRT: they mean vipd itself is broken (abort()
// on a broken invariant), and running a drain on corrupt state would do more harm than the core.
enum class SignalAction { Reload, LogStatus, Drain };

std::vector<std::pair<int, SignalAction>> handledSignals() {
  std::vector<std::pair<int, SignalAction>> out = {
      {SIGHUP, SignalAction::Reload},     {SIGUSR1, SignalAction::LogStatus},
      {SIGUSR2, SignalAction::LogStatus}, {SIGTERM, SignalAction::Drain},
      {SIGINT, SignalAction::Drain},      {SIGQUIT, SignalAction::Drain},
      {SIGALRM, SignalAction::Drain},     {SIGVTALRM, SignalAction::Drain},
      {SIGPROF, SignalAction::Drain},     {SIGIO, SignalAction::Drain},
      {SIGPWR, SignalAction::Drain},      {SIGSTKFLT, SignalAction::Drain},
      {SIGXCPU, SignalAction::Drain},
  };
  for (int rt = SIGRTMIN; rt <= SIGRTMAX; ++rt) {
    out.emplace_back(rt, SignalAction::Drain);
  }
  return out;
}

std::string signalName(int signal) {
  if (signal >= SIGRTMIN && signal <= SIGRTMAX) {
    return signal == SIGRTMIN ? "SIGRTMIN" : fmt::format("SIGRTMIN+{}", signal - SIGRTMIN);
  }
  if (const char* abbrev = sigabbrev_np(signal)) {
    return fmt::format("SIG{}", abbrev);
  }
  return fmt::format("signal {}", signal);
}

// What the signal handlers act on; lives as long as io.run().
struct Running {
  boost::asio::io_context& io;
  daemon::Speaker& speaker;
  daemon::ConfigReloader& reloader;
  const daemon::Logger& log;
  bool draining = false;
};

void onSignal(Running& r, int signal, SignalAction action) {
  switch (action) {
    case SignalAction::Reload:
      r.reloader.reload("SIGHUP");
      return;
    case SignalAction::LogStatus:
      r.log.info("vipd", "received {}; status: {}", signalName(signal), r.speaker.status().dump());
      return;
    case SignalAction::Drain:
      if (r.draining) {
        r.log.info("vipd", "received {} while draining; the drain goes on", signalName(signal));
        return;
      }
      r.draining = true;
      r.reloader.stop();
      r.log.info("vipd", "received {}; draining", signalName(signal));
      r.speaker.shutdown([&r] {
        r.log.info("vipd", "drained and every peer notified; exiting");
        r.io.stop();
      });
      return;
  }
}

void waitForSignals(boost::asio::signal_set& signals, Running& r) {
  signals.async_wait([&signals, &r](const boost::system::error_code& ec, int signal) {
    if (ec) {
      return;
    }
    for (const auto& [number, action] : handledSignals()) {
      if (number == signal) {
        onSignal(r, signal, action);
      }
    }
    waitForSignals(signals, r);
  });
}

// Every listener caps its clients well below the soft descriptor limit, but the default soft
// limit (1024) leaves little room; the hard limit is what the administrator allows. Raised at
// start, logged once.
void raiseDescriptorLimit(const daemon::Logger& log) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) {
    return;
  }
  const rlim_t previous = limit.rlim_cur;
  limit.rlim_cur = limit.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    log.warn("vipd", "cannot raise the open-file limit from {} to the hard limit {}: {}",
             previous, limit.rlim_max, strerror(errno));
    return;
  }
  log.info("vipd", "open-file limit raised from {} to the hard limit {}", previous,
           limit.rlim_max);
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (auto exitCode = parseOptions(argc, argv, options)) {
    return *exitCode;
  }
  if (options.command == Command::Render) {
    return bootstrap::runRenderCommand(options.commandArgs,
                                       fmt::format("localhost/vipd:{}", daemon::version()));
  }
  if (options.command == Command::Probe) {
    return daemon::runProbeCommand(options.commandArgs);
  }
  if (options.command == Command::Doctor) {
    return daemon::runDoctorCommand({options.sources, options.manifestsDir, options.json});
  }
  auto refuse = [&options](const std::vector<config::ConfigError>& errors) {
    for (const auto& error : errors) {
      std::fprintf(stderr, "%s\n", error.toString().c_str());
    }
    std::fprintf(stderr, "vipd: %s: %zu error(s); nothing started\n", configNames(options).c_str(),
                 errors.size());
    return 1;
  };
  auto loaded = config::loadConfig(options.sources);
  if (!loaded) {
    return refuse(loaded.error());
  }
  if (options.command == Command::Validate) {
    if (auto errors = filesStartReads(options, *loaded); !errors.empty()) {
      return refuse(errors);
    }
    std::printf("%s: valid\n", configNames(options).c_str());
    return 0;
  }
  if (options.command == Command::Show) {
    fmt::print("# vipd {}: the effective config of {}\n{}", daemon::version(), configNames(options),
               config::showConfig(*loaded));
    return 0;
  }
  auto config = std::move(loaded->config);

  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGXFSZ, SIG_IGN);
  daemon::Logger log(options.logFormat, options.logLevel);
  boost::asio::io_context io(1);
  raiseDescriptorLimit(log);
  // Before anything is read from the kernel or touched: a second instance changes nothing.
  std::vector<std::string> lockWarnings;
  auto instanceLock = daemon::InstanceLock::acquire(config, lockWarnings);
  for (const auto& warning : lockWarnings) {
    log.warn("vipd", "{}", warning);
  }
  if (!instanceLock) {
    log.error("vipd", "cannot start: {}", instanceLock.error());
    return 1;
  }
  instanceLock->serve(io, log);
  auto table = netlink::openKernelAddressTable();
  auto monitor = netlink::openKernelMonitor();
  if (!table || !monitor) {
    log.error("vipd", "cannot start: {}",
              (!table ? table.error() : monitor.error()).toString());
    return 1;
  }
  daemon::Speaker speaker(io, std::move(config), **table, **monitor, log);
  speaker.useInstanceLock(*instanceLock);
  speaker.setConfigNames(configNames(options));
  daemon::ConfigReloader reloader(io, options.sources, speaker, log);
  // Before start(): a signal that arrives while it runs is handled once the loop runs.
  Running running{io, speaker, reloader, log};
  boost::asio::signal_set signals(io);
  for (const auto& [number, action] : handledSignals()) {
    boost::system::error_code ec;
    signals.add(number, ec);
    if (ec) {
      log.warn("vipd", "cannot handle {}: {}; it keeps its default action", signalName(number),
               ec.message());
    }
  }
  waitForSignals(signals, running);
  if (auto started = speaker.start(); !started) {
    log.error("vipd", "cannot start: {}", started.error());
    return 1;
  }
  reloader.start();
  log.info("vipd", "version {} running with config {}; a change to it is applied without a signal "
           "(or on SIGHUP)", daemon::version(), configNames(options));
  io.run();
  return 0;
}
