// vipd: announces this node's VIPs over BGP while they are bound locally.
//
//   vipd --config FILE [--router-id ADDRESS] [--log-format text|json] [--log-level ...]
//   vipd validate --config FILE [--router-id ADDRESS]
//   vipd render ... (bootstrap/render_command.h)
//   vipd --version
#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio.hpp>

#include "bootstrap/render_command.h"
#include "cli/command_line.h"
#include "config/config_parser.h"
#include "daemon/base/logger.h"
#include "daemon/speaker.h"
#include "daemon/base/version.h"
#include "netlink/address_table.h"

namespace {

using namespace vipd;

enum class Command { Run, Validate, Render };

struct Options {
  Command command = Command::Run;
  std::vector<std::string> renderArgs;  // the words after "render"
  std::string configPath;
  config::ConfigOverrides overrides;
  daemon::LogFormat logFormat = daemon::LogFormat::Text;
  daemon::LogLevel logLevel = daemon::LogLevel::Info;
};

// --config and --router-id, which the daemon and `vipd validate` both take.
CLI::Option* addConfigOptions(CLI::App& app, Options& options) {
  CLI::Option* config = app.add_option("--config", options.configPath, "the config file")
                            ->option_text("FILE")
                            ->required()
                            ->check(cli::nonEmpty());
  app.add_option("--router-id", options.overrides.routerId,
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
      "checks a config file and exits: 0 when it is valid, 1 after naming every error in it");
  addConfigOptions(*validate, options);
  CLI::App* render = app.add_subcommand(
      "render", "writes the config and the kubelet static-pod manifest from instance metadata");
  // `vipd render` has its own command line (bootstrap/render_command.h): every word after
  // "render", --help included, is passed on to it as it is.
  render->prefix_command()->allow_extras()->set_help_flag();
  for (CLI::App* command : {validate, render}) {
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
  } else if (render->parsed()) {
    options.command = Command::Render;
    options.renderArgs = render->remaining();
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (auto exitCode = parseOptions(argc, argv, options)) {
    return *exitCode;
  }
  if (options.command == Command::Render) {
    return bootstrap::runRenderCommand(options.renderArgs,
                                       fmt::format("localhost/vipd:{}", daemon::version()));
  }
  auto config = config::loadConfigFile(options.configPath, options.overrides);
  if (!config) {
    for (const auto& error : config.error()) {
      std::fprintf(stderr, "%s\n", error.toString().c_str());
    }
    std::fprintf(stderr, "vipd: %s: %zu error(s); nothing started\n", options.configPath.c_str(),
                 config.error().size());
    return 1;
  }
  if (options.command == Command::Validate) {
    std::printf("%s: valid\n", options.configPath.c_str());
    return 0;
  }

  std::signal(SIGPIPE, SIG_IGN);
  daemon::Logger log(options.logFormat, options.logLevel);
  boost::asio::io_context io(1);
  auto table = netlink::openKernelAddressTable();
  auto monitor = netlink::openKernelMonitor();
  if (!table || !monitor) {
    log.error("vipd", "cannot start: {}",
              (!table ? table.error() : monitor.error()).toString());
    return 1;
  }
  daemon::Speaker speaker(io, std::move(*config), **table, **monitor, log);
  if (auto started = speaker.start(); !started) {
    log.error("vipd", "cannot start: {}", started.error());
    return 1;
  }
  log.info("vipd", "version {} running with config {}", daemon::version(), options.configPath);

  boost::asio::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&](const boost::system::error_code& ec, int signal) {
    if (ec) {
      return;
    }
    log.info("vipd", "received {}; draining", signal == SIGTERM ? "SIGTERM" : "SIGINT");
    speaker.shutdown([&] {
      log.info("vipd", "drained and every peer notified; exiting");
      io.stop();
    });
  });
  io.run();
  return 0;
}
