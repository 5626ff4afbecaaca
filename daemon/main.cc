// vipd: announces this node's VIPs over BGP while they are bound locally.
//
//   vipd --config FILE [--router-id ADDRESS] [--log-format text|json] [--log-level ...]
//   vipd validate --config FILE [--router-id ADDRESS]
//   vipd --version
#include <csignal>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio.hpp>

#include "bootstrap/render_command.h"
#include "config/config_parser.h"
#include "daemon/base/logger.h"
#include "daemon/speaker.h"
#include "daemon/base/version.h"
#include "netlink/address_table.h"

namespace {

using namespace vipd;

constexpr std::string_view kUsage =
    "usage: vipd --config FILE [--router-id ADDRESS] [--log-format text|json]\n"
    "            [--log-level debug|info|warn|error]\n"
    "       vipd validate --config FILE [--router-id ADDRESS]\n"
    "       vipd render --metadata FILE --config-out PATH --manifest-dir DIR [...]\n"
    "       vipd --version\n"
    "\n"
    "  --router-id ADDRESS  the BGP identifier, when the config file has none (the DaemonSet\n"
    "                       passes the node's status.hostIP); given in both places it is an error\n";

struct Options {
  bool validateOnly = false;
  std::string configPath;
  config::ConfigOverrides overrides;
  daemon::LogFormat logFormat = daemon::LogFormat::Text;
  daemon::LogLevel logLevel = daemon::LogLevel::Info;
};

int usageError(std::string_view message) {
  std::fprintf(stderr, "vipd: %.*s\n%.*s", static_cast<int>(message.size()), message.data(),
               static_cast<int>(kUsage.size()), kUsage.data());
  return 2;
}

// Returns an exit code when parsing ends the program (help, version, error).
std::optional<int> parseOptions(int argc, char** argv, Options& options) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  size_t i = 0;
  if (!args.empty() && args[0] == "validate") {
    options.validateOnly = true;
    i = 1;
  }
  for (; i < args.size(); ++i) {
    auto arg = args[i];
    auto value = [&]() -> std::optional<std::string_view> {
      if (i + 1 >= args.size()) {
        return std::nullopt;
      }
      return args[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::fwrite(kUsage.data(), 1, kUsage.size(), stdout);
      return 0;
    }
    if (arg == "--version") {
      std::printf("vipd %.*s\n", static_cast<int>(daemon::version().size()),
                  daemon::version().data());
      return 0;
    }
    if (arg == "--config") {
      auto v = value();
      if (!v) {
        return usageError("--config needs a file");
      }
      options.configPath = *v;
    } else if (arg == "--router-id") {
      auto v = value();
      if (!v) {
        return usageError("--router-id needs an address");
      }
      options.overrides.routerId = std::string(*v);
    } else if (arg == "--log-format") {
      auto v = value();
      if (v == "text") {
        options.logFormat = daemon::LogFormat::Text;
      } else if (v == "json") {
        options.logFormat = daemon::LogFormat::Json;
      } else {
        return usageError("--log-format must be text or json");
      }
    } else if (arg == "--log-level") {
      auto v = value();
      if (v == "debug") {
        options.logLevel = daemon::LogLevel::Debug;
      } else if (v == "info") {
        options.logLevel = daemon::LogLevel::Info;
      } else if (v == "warn") {
        options.logLevel = daemon::LogLevel::Warn;
      } else if (v == "error") {
        options.logLevel = daemon::LogLevel::Error;
      } else {
        return usageError("--log-level must be debug, info, warn or error");
      }
    } else {
      return usageError(fmt::format("unknown argument '{}'", arg));
    }
  }
  if (options.configPath.empty()) {
    return usageError("--config FILE is required");
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "render") {
    return bootstrap::runRenderCommand(std::vector<std::string>(argv + 2, argv + argc),
                                       fmt::format("localhost/vipd:{}", daemon::version()));
  }
  Options options;
  if (auto exitCode = parseOptions(argc, argv, options)) {
    return *exitCode;
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
  if (options.validateOnly) {
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
