// kube_probe: a test driver for kube/, never installed. Runs the real Client (and NodeWatcher,
// StatusWriter) against the server of a kubeconfig and prints one JSON line per outcome, then
// {"op":"done", "maxRssKiB": ..., "ms": ...}, so tests/e2e/test_hostile_api.py can judge the
// client's answers, timing and memory against a hostile server. Exit 0 whatever the server did
// (the test reads the lines); 2 for a usage or config error.
#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "kube/client.h"
#include "kube/event.h"
#include "kube/node_watcher.h"
#include "kube/status_writer.h"

namespace {

using namespace vipd::kube;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

const auto kStart = steady_clock::now();

long sinceStartMs() {
  return std::chrono::duration_cast<milliseconds>(steady_clock::now() - kStart).count();
}

// The peak resident set of this program: VmHWM, not getrusage's ru_maxrss, which Linux keeps
// across execve (a probe started by a 24 MiB Python would report at least that).
long maxRssKiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      return std::stol(line.substr(6));
    }
  }
  return -1;
}

void print(nlohmann::json line) {
  line["t"] = sinceStartMs();
  std::cout << line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
}

nlohmann::json describe(const Error& e) {
  return {{"kind", std::string(errorKindName(e.kind))},
          {"status", e.httpStatus},
          {"retryAfter", e.retryAfter ? e.retryAfter->count() : -1},
          {"message", e.message}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kube_probe: runs vipd's Kubernetes client against a server (tests only)"};
  app.require_subcommand(1);
  std::string kubeconfig;
  Limits limits;
  long connectMs = limits.connectTimeout.count(), requestMs = limits.requestTimeout.count(),
       idleMs = limits.watchIdleTimeout.count(), maxDurationMs = limits.watchMaxDuration.count();
  Backoff::Settings backoff;
  long backoffInitialMs = backoff.initial.count(), backoffMaxMs = backoff.max.count(),
       maxRetryAfterMs = backoff.maxRetryAfter.count();
  long durationMs = 5000;
  app.add_option("--kubeconfig", kubeconfig, "the kubeconfig to use")->required();
  app.add_option("--connect-timeout-ms", connectMs);
  app.add_option("--request-timeout-ms", requestMs);
  app.add_option("--idle-timeout-ms", idleMs);
  app.add_option("--max-duration-ms", maxDurationMs);
  app.add_option("--max-body", limits.maxBodyBytes);
  app.add_option("--max-event", limits.maxEventBytes);
  app.add_option("--backoff-initial-ms", backoffInitialMs);
  app.add_option("--backoff-max-ms", backoffMaxMs);
  app.add_option("--max-retry-after-ms", maxRetryAfterMs);
  app.add_option("--duration-ms", durationMs, "how long watch-node and status-writer run");

  std::string path;
  auto* get = app.add_subcommand("get", "one GET");
  get->add_option("path", path)->required();
  std::string node;
  auto* watchNode = app.add_subcommand("watch-node", "NodeWatcher for --duration-ms");
  watchNode->add_option("node", node)->required();
  auto* statusWriter = app.add_subcommand("status-writer", "StatusWriter for --duration-ms");
  statusWriter->add_option("node", node)->required();
  auto* event = app.add_subcommand("event", "POST one Event about a Node");
  event->add_option("node", node)->required();
  CLI11_PARSE(app, argc, argv);

  limits.connectTimeout = milliseconds{connectMs};
  limits.requestTimeout = milliseconds{requestMs};
  limits.watchIdleTimeout = milliseconds{idleMs};
  limits.watchMaxDuration = milliseconds{maxDurationMs};
  backoff.initial = milliseconds{backoffInitialMs};
  backoff.max = milliseconds{backoffMaxMs};
  backoff.maxRetryAfter = milliseconds{maxRetryAfterMs};

  ReadFile readFile = localFileReader();
  auto text = readFile(kubeconfig);
  if (!text) {
    std::cerr << "kube_probe: " << kubeconfig << ": " << text.error() << "\n";
    return 2;
  }
  auto credentials = parseKubeconfig(*text, kubeconfig, readFile);
  if (!credentials) {
    std::cerr << "kube_probe: " << credentials.error().message << "\n";
    return 2;
  }
  boost::asio::io_context io;
  auto client = Client::create(io, *credentials, limits, readFile);
  if (!client) {
    std::cerr << "kube_probe: " << client.error().message << "\n";
    return 2;
  }
  boost::asio::steady_timer stopAt(io);
  bool stopped = false;
  std::unique_ptr<NodeWatcher> watcher;
  std::unique_ptr<StatusWriter> writer;
  std::unique_ptr<boost::asio::steady_timer> ticker;

  if (get->parsed() || event->parsed()) {
    Request request{Method::Get, path, {}, {}};
    if (event->parsed()) {
      request = Request{Method::Post, eventsPath(),
                        nodeEvent(node, EventReason::VipAnnounced, "192.0.2.10 announced",
                                  std::chrono::system_clock::now(), 1),
                        "application/json"};
    }
    // Done when the request is (its own deadline bounds it): the stop timer is cancelled.
    (*client)->request(std::move(request), [&stopAt](Result<Response> result) {
      stopAt.cancel();
      if (result) {
        print({{"op", "request"}, {"ok", true}, {"status", result->status},
               {"bytes", result->body.size()}});
      } else {
        nlohmann::json line = describe(result.error());
        line["op"] = "request";
        line["ok"] = false;
        print(line);
      }
    });
  } else if (watchNode->parsed()) {
    watcher = std::make_unique<NodeWatcher>(
        io, *client, node, backoff,
        NodeWatcher::Hooks{
            [](const NodeIntent& intent) {
              print({{"op", "intent"}, {"withdraw", intent.withdraw()},
                     {"reason", intent.describe()}});
            },
            [](const Error& e, milliseconds retryIn) {
              nlohmann::json line = describe(e);
              line["op"] = "error";
              line["retryMs"] = retryIn.count();
              print(line);
            }});
    watcher->start();
  } else if (statusWriter->parsed()) {
    writer = std::make_unique<StatusWriter>(
        io, *client, node, StatusSchedule::Settings{}, backoff,
        [](const std::optional<Error>& e, milliseconds retryIn) {
          nlohmann::json line = e ? describe(*e) : nlohmann::json::object();
          line["op"] = "write";
          line["ok"] = !e;
          line["retryMs"] = retryIn.count();
          print(line);
        });
    // A status that changes every 100 ms: the writer must still write about once a second.
    ticker = std::make_unique<boost::asio::steady_timer>(io);
    auto tick = std::make_shared<std::function<void(int)>>();
    // A tick may already be queued when the stop timer cancels the ticker: it must not re-arm.
    // The function holds itself only weakly (a strong copy would be a cycle LeakSanitizer
    // reports): the pending wait's handler keeps it alive, and the chain ends with the ticker.
    *tick = [&, self = std::weak_ptr<std::function<void(int)>>(tick)](int n) {
      if (stopped) {
        return;
      }
      VipdNodeStatus status;
      status.version = "kube_probe";
      status.updatedAt = rfc3339(std::chrono::system_clock::now());
      status.vips.push_back(VipStatus{"192.0.2.10", true, VipState::Normal, "",
                                      static_cast<uint32_t>(n % 3 + 1)});
      writer->update(status);
      ticker->expires_after(milliseconds{100});
      ticker->async_wait([next = self.lock(), n](const boost::system::error_code& ec) {
        if (!ec && next) {
          (*next)(n + 1);
        }
      });
    };
    (*tick)(0);
  }
  stopAt.expires_after(milliseconds{durationMs});
  stopAt.async_wait([&](const boost::system::error_code&) {
    stopped = true;
    if (watcher) {
      const auto& s = watcher->stats();
      print({{"op", "stats"}, {"lists", s.lists}, {"watches", s.watches}, {"events", s.events},
             {"errors", s.errors}, {"relists", s.relists}, {"bookmarks", s.bookmarks}});
      watcher->stop();
    }
    if (writer) {
      const auto& s = writer->stats();
      print({{"op", "stats"}, {"writes", s.writes}, {"failures", s.failures},
             {"creates", s.creates}});
      writer->stop();
      ticker->cancel();
    }
  });
  io.run();
  print({{"op", "done"}, {"maxRssKiB", maxRssKiB()}, {"ms", sinceStartMs()}});
  return 0;
}
