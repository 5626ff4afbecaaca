// vipctl: talks to a running vipd over its control socket.
//
//   vipctl [--socket PATH] [--deadline DUR] status [--json]
//   vipctl [--socket PATH] withdraw [--wait] [--timeout DUR] [--reason TEXT] [--transient] [--force]
//   vipctl [--socket PATH] announce
//   vipctl [--socket PATH] ready
//   vipctl --version
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command_line.h"
#include "config/duration.h"
#include "daemon/base/printable.h"
#include "daemon/base/version.h"
#include "daemon/control/request.h"

namespace {

namespace asio = boost::asio;
using json = nlohmann::json;

constexpr const char* kExitCodes =
    "exit codes:\n"
    "  0  done (withdraw --wait: withdrawn, and every Established peer acknowledged it)\n"
    "  1  withdraw --wait: withdrawn, but the peers did not acknowledge in time\n"
    "  2  usage error\n"
    "  3  vipd is not running, its socket cannot be reached or refused this user, it\n"
    "     closed the connection without an answer, or it did not answer within --deadline\n"
    "     (the outcome is unknown)\n"
    "  4  withdraw refused by the guard: this node is among the last announcers of a VIP\n"
    "     (guard.minAnnouncers); it is still announcing (--force overrides)\n"
    "  5  refused for any other reason (the message says why); a refused withdraw leaves\n"
    "     the node announcing\n"
    "  ready: 0 ready, 1 not ready (the reasons on stderr), 3 unreachable\n";

// One code per outcome a replacement script must tell apart (docs/operations.md).
constexpr int kExitNotAcknowledged = 1;
constexpr int kExitUnreachable = 3;
constexpr int kExitRefusedByGuard = 4;
constexpr int kExitRefused = 5;
constexpr int kExitNotReady = 1;  // vipctl ready

// A field of vipd's reply for the terminal. Strings may hold text from elsewhere (a withdraw
// reason from withdrawn.json, a peer's shutdown message, file contents in an error): their
// control characters are escaped, so none reaches the terminal.
std::string str(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) {
    return "-";
  }
  const auto& v = j[key];
  return v.is_string() ? vipd::daemon::printable(v.get<std::string>()) : v.dump();
}

// The families a session carries ("ipv4,ipv6"); on an Established session, one the peer did not
// negotiate is marked "(refused)": its VIPs do not reach that peer.
std::string carriedFamilies(const json& peer) {
  if (!peer.contains("carries") || !peer["carries"].is_array()) {
    return "-";
  }
  bool established = peer.value("state", std::string()) == "Established";
  const json negotiated = peer.value("families", json::array());
  std::string out;
  for (const auto& family : peer["carries"]) {
    if (!family.is_string()) {
      continue;
    }
    std::string name = family.get<std::string>();
    out += (out.empty() ? "" : ",") + name;
    bool agreed = false;
    for (const auto& n : negotiated) {
      agreed = agreed || (n.is_string() && n.get<std::string>() == name + "-unicast");
    }
    if (established && !agreed) {
      out += "(refused)";
    }
  }
  return out.empty() ? "-" : out;
}

// The config that runs and the last reload (issue 29): when it was loaded, what the last reload
// did, and each change that waits for a restart (or could not be applied).
void printConfig(const json& c) {
  fmt::print("config: loaded {}", str(c, "loadedAt"));
  if (c.contains("lastReloadAt")) {
    fmt::print("; last reload {} ({}): {}", str(c, "lastReloadAt"), str(c, "lastReloadTrigger"),
               str(c, "lastReloadResult"));
  }
  fmt::print("\n");
  if (!c.value("lastReloadSuccessful", true)) {
    fmt::print("config: LAST RELOAD FAILED: {}; running what was loaded before\n",
               str(c, "lastReloadError"));
  }
  if (c.contains("pendingRestart") && c["pendingRestart"].is_array()) {
    for (const auto& p : c["pendingRestart"]) {
      fmt::print("config: PENDING {}: running {}, the file says {} ({})\n", str(p, "key"),
                 str(p, "running"), str(p, "file"), str(p, "reason"));
    }
  }
  if (c.contains("watch") && c["watch"].contains("error")) {
    fmt::print("config: not watched for changes ({}): SIGHUP reloads\n",
               str(c["watch"], "error"));
  }
}

// vipd doctor's checks as the daemon last ran them (issue 30): the counts, then each check that
// warns or fails with what to do. `vipd doctor` runs them by hand.
void printDoctor(const json& d) {
  if (!d.contains("counts") || !d["counts"].is_object()) {
    fmt::print("doctor: {}\n", d.value("running", false) ? "checks running" : "not run yet");
    return;
  }
  const auto& c = d["counts"];
  fmt::print("doctor: {} ok, {} warn, {} fail (at {}, {})\n", str(c, "ok"), str(c, "warn"),
             str(c, "fail"), str(d, "trigger"), str(d, "ranAt"));
  if (!d.contains("checks") || !d["checks"].is_array()) {
    return;
  }
  for (const auto& check : d["checks"]) {
    const std::string result = check.is_object() ? check.value("result", std::string()) : "";
    if (result != "warn" && result != "fail") {
      continue;
    }
    fmt::print("doctor: {} {}: {}{}\n", result == "fail" ? "FAIL" : "WARN", str(check, "name"),
               str(check, "detail"),
               check.contains("fix") ? fmt::format("; fix: {}", str(check, "fix")) : "");
  }
}

// What the fabric view left out (issue 40): the nodes some sessions hold and others do not, and
// the sessions not used for the VIP with the reason. The JSON lists what each session said.
void printFabricDisagreement(const json& view) {
  if (view.contains("notCounted") && view["notCounted"].is_array()) {
    for (const auto& n : view["notCounted"]) {
      fmt::print("  not counted: {}\n",
                 n.is_string() ? vipd::daemon::printable(n.get<std::string>()) : n.dump());
    }
  }
  if (view.contains("sessions") && view["sessions"].is_array()) {
    for (const auto& session : view["sessions"]) {
      if (session.is_object() && !session.value("used", true)) {
        fmt::print("  session {} not used: {}\n", str(session, "peer"), str(session, "reason"));
      }
    }
  }
}

// Status `fabric`: each VIP's announcers as the fabric holds them, and duplicate router IDs.
void printFabric(const json& fabric) {
  if (!fabric.contains("vips") || !fabric["vips"].is_object()) {
    return;
  }
  for (const auto& [vip, view] : fabric["vips"].items()) {
    if (!view.is_object()) {
      continue;
    }
    if (!view.value("available", false)) {
      fmt::print("fabric: {} {}\n", vip, str(view, "reason"));
      continue;
    }
    std::string list;
    if (view.contains("announcers") && view["announcers"].is_array()) {
      for (const auto& a : view["announcers"]) {
        if (!a.is_object()) {
          continue;
        }
        list += list.empty() ? "" : "; ";
        list += str(a, "node");
        if (a.value("self", false)) {
          continue;
        }
        list += " via " + (a.contains("via") ? a["via"].dump() : std::string("-"));
        if (a.value("draining", false)) {
          list += " (draining)";
        } else if (a.value("degraded", false)) {
          list += " (degraded)";
        }
      }
    }
    fmt::print("fabric: {} {} announcer(s): {}{}\n", vip, str(view, "count"),
               list.empty() ? "none" : list,
               view.value("heldByNeverZero", false)
                   ? "  HELD ANNOUNCED (degraded) by the never-zero rule"
                   : "");
    printFabricDisagreement(view);
  }
  if (fabric.contains("duplicateRouterId") && fabric["duplicateRouterId"].is_array()) {
    for (const auto& line : fabric["duplicateRouterId"]) {
      fmt::print("DUPLICATE ROUTER ID: {}\n",
                 line.is_string() ? vipd::daemon::printable(line.get<std::string>()) : "");
    }
  }
}

// Status `kubernetes` (issue 41): the link's state in one line, the Node's request and why it
// is refused, and the last error while the API fails.
void printKubernetes(const json& k) {
  if (!k.value("enabled", false)) {
    return;
  }
  if (k.contains("error")) {
    fmt::print("kubernetes: OFF: {}\n", str(k, "error"));
    return;
  }
  fmt::print("kubernetes: Node {} at {}: {}  status writes {} ok, {} failed (last {})  events {} "
             "sent\n",
             str(k, "node"), str(k, "server"),
             k.value("connected", false) ? "connected" : "NOT CONNECTED", str(k, "statusWrites"),
             str(k, "statusFailures"), k.contains("lastWrite") ? str(k, "lastWrite") : "never",
             str(k, "eventsSent"));
  if (k.contains("intent") && k["intent"].value("withdraw", false)) {
    fmt::print("kubernetes: the Node asks for a withdrawal: {}\n", str(k["intent"], "reason"));
  }
  if (k.contains("withdrawRefused")) {
    fmt::print("kubernetes: REFUSED (asked again every second): {}\n",
               str(k, "withdrawRefused"));
  }
  if (!k.value("connected", false) && k.contains("lastError")) {
    fmt::print("kubernetes: last error: {}\n", str(k, "lastError"));
  }
}

// The BFD table, when any peer runs BFD.
void printBfdPeers(const json& peers) {
  bool anyBfd = false;
  for (const auto& p : peers) {
    anyBfd = anyBfd || (p.contains("bfd") && p["bfd"].value("enabled", false));
  }
  if (anyBfd) {
    fmt::print("\n{:<28} {:<10} {:<10} {:>8} {:>8} {:>8}  {}\n", "BFD PEER", "STATE", "REMOTE",
               "TX-MS", "DETECT", "DOWNS", "DIAGNOSTIC / LAST CHANGE");
    for (const auto& p : peers) {
      if (!p.contains("bfd") || !p["bfd"].value("enabled", false)) {
        continue;
      }
      const auto& b = p["bfd"];
      fmt::print("{:<28} {:<10} {:<10} {:>8} {:>8} {:>8}  {} / {}\n", str(p, "address"),
                 str(b, "state"), str(b, "remoteState"), str(b, "txIntervalMs"),
                 str(b, "detectionTimeMs"), str(b, "downTransitions"), str(b, "diagnostic"),
                 str(b, "lastReason"));
    }
  }
}

void printStatus(const json& s) {
  fmt::print("vipd {}  router-id {}  AS{}  mode {}  ready {}\n", str(s, "version"),
             str(s, "routerId"), str(s, "localAsn"), str(s, "mode"), str(s, "ready"));
  if (s.contains("config") && s["config"].is_object()) {
    printConfig(s["config"]);
  }
  if (s.contains("doctor") && s["doctor"].is_object()) {
    printDoctor(s["doctor"]);
  }
  if (s.contains("health")) {
    const auto& h = s["health"];
    fmt::print("health: {} {}{}  last: {}\n", str(h, "type"),
               h.value("healthy", false) ? "healthy" : "UNHEALTHY",
               h.value("degraded", false)      ? "  DEGRADED: announcing a worse path"
               : h.value("vipsUnbound", false) ? "  withdrawn, VIPs unbound"
                                               : "",
               str(h, "lastDetail"));
  }
  if (s.contains("returnPath") && s["returnPath"].value("mode", "off") != "off") {
    const auto& r = s["returnPath"];
    if (!r.value("available", true)) {
      fmt::print("return path: {}  UNAVAILABLE: {}\n", str(r, "mode"),
                 str(r, "unavailableReason"));
    }
    if (r.contains("vips") && r["vips"].is_object()) {
      for (const auto& [vip, check] : r["vips"].items()) {
        fmt::print("return path: {} {} {}: {}\n", str(r, "mode"), vip, str(check, "state"),
                   str(check, "reason"));
      }
    }
  }
  if (s.contains("fabric") && s["fabric"].is_object()) {
    printFabric(s["fabric"]);
  }
  if (s.contains("kubernetes") && s["kubernetes"].is_object()) {
    printKubernetes(s["kubernetes"]);
  }
  if (s.contains("withdrawn") && s["withdrawn"].value("active", false)) {
    const auto& w = s["withdrawn"];
    const bool byNode = w.contains("kubernetes") && w["kubernetes"].is_object();
    if (w.contains("sources") && w["sources"].is_array() && w["sources"].size() == 1 && byNode) {
      fmt::print("WITHDRAWN since {} by the Node: {}  (remove the annotation or taint to undo)\n",
                 str(w, "since"), str(w["kubernetes"], "reason"));
    } else {
      fmt::print("WITHDRAWN since {}: {}  (vipctl announce to undo)\n", str(w, "since"),
                 str(w, "reason"));
      if (byNode) {
        fmt::print("WITHDRAWN by the Node too: {}\n", str(w["kubernetes"], "reason"));
      }
    }
  }
  fmt::print("\n{:<28} {:<8} {:<5} {:<10} {:<12} {:>8} {:>6} {:>8}  {}\n", "PEER", "ASN",
             "TYPE", "FAMILIES", "STATE", "FOR", "SENT", "UPD-RX", "LAST ERROR");
  for (const auto& p : s["peers"]) {
    fmt::print("{:<28} {:<8} {:<5} {:<10} {:<12} {:>8} {:>6} {:>8}  {}\n", str(p, "address"),
               str(p, "asn"), str(p, "type"), carriedFamilies(p), str(p, "state"),
               str(p, "stateFor"), str(p, "prefixesAdvertised"), str(p, "updatesReceived"),
               p.value("lastError", std::string()).empty() ? "-" : str(p, "lastError"));
  }
  printBfdPeers(s["peers"]);
  fmt::print("\n{:<28} {:<10} {:<18} {:<10}  {}\n", "VIP", "INTERFACE", "BINDING", "ANNOUNCED",
             "REASON");
  for (const auto& v : s["vips"]) {
    fmt::print("{:<28} {:<10} {:<18} {:<10}  {}\n", str(v, "address"), str(v, "interface"),
               str(v, "state"),
               v.value("announced", false) ? fmt::format("{} peer(s)", str(v, "announcedToPeers"))
                                           : "no",
               v.value("reason", std::string()).empty() ? "-" : str(v, "reason"));
  }
  if (!s.value("ready", true) && s.contains("readyReasons")) {
    fmt::print("\nnot ready:\n");
    for (const auto& r : s["readyReasons"]) {
      fmt::print("  - {}\n",
                 r.is_string() ? vipd::daemon::printable(r.get<std::string>()) : r.dump());
    }
  }
}

constexpr const char* kDefaultSocket = "/run/vipd/vipd.sock";
// Written by the instance holding the speaker lock in the default handoff.dir (static-pod and
// daemonset modes; daemon/lifecycle/host_lock.h).
constexpr const char* kSpeakerRecord = "/run/vipd/speaker.json";

// The control sockets to try, in order, when --socket is not given (see kUsage). The speaker
// record is only a hint: it outlives its writer (/run survives a pod), so the default path is
// tried after it, and anything unreadable in it is skipped.
std::vector<std::string> defaultSockets() {
  if (const char* env = std::getenv("VIPD_CONTROL_SOCKET"); env != nullptr && *env != '\0') {
    return {env};
  }
  std::vector<std::string> paths;
  std::ifstream in(kSpeakerRecord);
  if (in) {
    auto record = json::parse(in, nullptr, false);
    if (record.is_object() && record.contains("controlSocket") &&
        record["controlSocket"].is_string()) {
      auto path = record["controlSocket"].get<std::string>();
      if (!path.empty() && path != kDefaultSocket) {
        paths.push_back(path);
      }
    }
  }
  paths.emplace_back(kDefaultSocket);
  return paths;
}

struct Options {
  std::string socketPath;  // empty: defaultSockets()
  std::string command;     // status, withdraw or announce
  bool asJson = false;
  bool wait = false;
  bool transient = false;
  bool force = false;
  std::optional<std::chrono::milliseconds> timeout;
  std::optional<std::chrono::milliseconds> deadline;
  std::optional<std::string> reason;
};

CLI::Validator positiveDuration() {
  return CLI::Validator(
      [](const std::string& text) {
        auto duration = vipd::config::parseDuration(text);
        return duration && duration->count() > 0
                   ? std::string()
                   : fmt::format("takes a duration such as 30s, not '{}'", text);
      },
      "");
}

// Returns an exit code when parsing ends the program (help, version, usage error).
std::optional<int> parseOptions(int argc, char** argv, Options& options) {
  CLI::App app("Talks to a running vipd over its control socket.", "vipctl");
  vipd::cli::configure(app, vipd::daemon::version());
  app.require_subcommand(1);
  // Inherited by the commands: --socket after the command too (`vipctl status --socket PATH`),
  // and the exit codes at the end of each command's help.
  app.fallthrough();
  app.footer(kExitCodes);
  app.add_option("--socket", options.socketPath,
                 "vipd's control socket. Default: $VIPD_CONTROL_SOCKET (set in vipd's pods to "
                 "the pod's own instance); else the instance that speaks BGP on this node, as "
                 "/run/vipd/speaker.json names it (the static pod or the DaemonSet pod, "
                 "whichever holds the node); else /run/vipd/vipd.sock")
      ->option_text("PATH")
      ->check(vipd::cli::nonEmpty());
  app.add_option_function<std::string>(
         "--deadline",
         [&options](const std::string& text) {
           options.deadline = vipd::config::parseDuration(text);
         },
         "how long to wait for vipd, connecting and answering, before giving up with exit 3 "
         "(the outcome unknown; vipd then does not carry the request out). Default 10s; "
         "withdraw --wait: --timeout plus 15s, or 2m without --timeout")
      ->option_text("DUR")
      ->check(positiveDuration());
  app.add_subcommand("status",
                     "sessions, VIPs, health gate and why each VIP is or is not announced")
      ->add_flag("--json", options.asJson, "vipd's reply as it is, in JSON");
  CLI::App* withdraw = app.add_subcommand(
      "withdraw",
      "drain this node: GRACEFUL_SHUTDOWN, withdraw, wait for the peers, unbind.\n"
      "The node stays withdrawn across restarts until `vipctl announce`.");
  withdraw->add_flag("--wait", options.wait,
                     "return only once every Established peer has acknowledged the withdraw "
                     "(bounded by --timeout)");
  withdraw
      ->add_option_function<std::string>(
          "--timeout",
          [&options](const std::string& text) {
            options.timeout = vipd::config::parseDuration(text);
          },
          "how long the drain waits for the peers to acknowledge the withdraw (default the "
          "config's drain.timeout)")
      ->option_text("DUR")
      ->check(positiveDuration());
  withdraw
      ->add_option("--reason", options.reason,
                   "why, for `vipctl status` and vipd's log: one line of printable text")
      ->option_text("TEXT")
      ->check(CLI::Validator(
          [](const std::string& text) {
            // vipd refuses it too; checked here so that nothing is sent.
            return vipd::daemon::reasonProblem(text).value_or(std::string());
          },
          ""));
  withdraw->add_flag("--transient", options.transient,
                     "drain this running instance only; nothing is persisted, so the next start "
                     "announces again (a pod's preStop hook: a persisted withdraw there would "
                     "leave every replaced pod withdrawn)");
  withdraw->add_flag("--force", options.force,
                     "withdraw even when this node is among the last guard.minAnnouncers nodes "
                     "announcing a VIP (the guard refuses that otherwise, exit 4)");
  app.add_subcommand("announce", "clear the withdrawn state and announce again (once healthy)");
  app.add_subcommand("alive",
                     "exit 0 when this vipd answers on its socket (one short line), 3 when it does "
                     "not: an exec liveness probe (the kubelet keeps at most 10 KiB of a probe's "
                     "output, which `status --json` outgrows)");
  app.add_subcommand("ready",
                     "exit 0 when this vipd is ready (as /readyz), else print why and exit 1: "
                     "an exec readiness probe that reaches the pod's own instance through "
                     "control.instanceSocket, where two pods of a DaemonSet rollout share the "
                     "node's ports");
  if (auto exitCode = vipd::cli::parse(app, std::vector<std::string>(argv + 1, argv + argc),
                                       std::cout, std::cerr)) {
    return exitCode;
  }
  options.command = app.get_subcommands().front()->get_name();
  return std::nullopt;
}


// How long vipctl waits for vipd, connect and answer together (--deadline). A frozen or stuck vipd
// accepts the connection (the kernel does, into the listen queue) and never answers: without a
// deadline a script would wait forever, or its own `timeout` would kill vipctl with no exit code
// of ours (issue 43). `withdraw --wait` answers after the drain's acknowledgement step: the
// GRACEFUL_SHUTDOWN time (2 s by default) plus --timeout, hence the margin.
constexpr std::chrono::seconds kDefaultDeadline{10};
constexpr std::chrono::seconds kWaitMargin{15};
constexpr std::chrono::minutes kWaitDeadline{2};  // withdraw --wait without --timeout

std::chrono::milliseconds deadlineFor(const Options& options) {
  if (options.deadline) {
    return *options.deadline;
  }
  if (options.command == "withdraw" && options.wait) {
    return options.timeout ? *options.timeout + kWaitMargin
                           : std::chrono::milliseconds(kWaitDeadline);
  }
  return kDefaultDeadline;
}

std::string seconds(std::chrono::milliseconds d) {
  return fmt::format("{:.3g}s", std::chrono::duration<double>(d).count());
}

// Sends `line` to the first of `paths` that accepts a connection and reads vipd's reply until it
// closes, all within `deadline`. Returns what failed, for stderr (exit 3); nullopt with `reply`
// set otherwise. When the deadline passes vipctl closes the connection: vipd does not carry out a
// request whose client has gone (daemon/control/server.h), so a late withdraw is not done behind
// the script's back.
std::optional<std::string> exchange(const std::vector<std::string>& paths,
                                    const std::string& line, std::chrono::milliseconds deadline,
                                    std::string& reply) {
  asio::io_context io;
  asio::local::stream_protocol::socket socket(io);
  const auto until = std::chrono::steady_clock::now() + deadline;
  // Runs one asynchronous step until it completes or the deadline passes (then: timed_out).
  auto step = [&](auto start) {
    boost::system::error_code result = asio::error::timed_out;
    bool finished = false;
    start([&](const boost::system::error_code& ec, auto&&...) {
      result = ec;
      finished = true;
    });
    io.restart();
    io.run_until(until);
    if (!finished) {
      boost::system::error_code ignored;
      socket.close(ignored);  // cancels the step; its handler runs with operation_aborted
      io.restart();
      io.run();
      return boost::system::error_code(asio::error::timed_out);
    }
    return result;
  };
  const std::string later =
      fmt::format("the outcome is unknown: check `vipctl status` (--deadline {})",
                  seconds(deadline));
  boost::system::error_code ec;
  std::string tried;
  for (const auto& path : paths) {
    socket.close(ec);
    ec = step([&](auto done) {
      socket.async_connect(asio::local::stream_protocol::endpoint(path), done);
    });
    if (!ec) {
      tried = path;
      break;
    }
    if (ec == asio::error::timed_out) {
      return fmt::format("vipd at {} did not accept the connection within {} (frozen or "
                         "overloaded?); nothing was sent",
                         path, seconds(deadline));
    }
    tried += fmt::format("{}{}: {}", tried.empty() ? "" : "; ", path, ec.message());
  }
  if (ec) {
    return fmt::format("vipd is not running or not reachable at {}", tried);
  }
  ec = step([&](auto done) { asio::async_write(socket, asio::buffer(line), done); });
  if (!ec) {
    // withdraw --wait answers only once the drain's acknowledgement step is over.
    ec = step([&](auto done) {
      asio::async_read(socket, asio::dynamic_buffer(reply, 1 << 20), done);
    });
  }
  if (ec == asio::error::timed_out) {
    // A vipd that reads the request later finds its client gone and does not carry it out;
    // one that had started it before the deadline finishes it: hence "unknown".
    return fmt::format("no answer from vipd at {} within {} (frozen or overloaded?); vipctl gave "
                       "up and closed the connection; {}",
                       tried, seconds(deadline), later);
  }
  if (ec && ec != asio::error::eof) {
    return fmt::format("talking to vipd at {} failed: {}; {}", tried, ec.message(), later);
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (auto exitCode = parseOptions(argc, argv, options)) {
    return *exitCode;
  }
  const std::string& command = options.command;
  // Each subcommand sends the control command of its name, but `ready` and `alive`, which read
  // the status.
  const auto sent = command == "ready" || command == "alive"
                        ? vipd::daemon::ControlCommand::Status
                                       : vipd::daemon::commandNamed(command).value_or(
                                             vipd::daemon::ControlCommand::Status);
  json request{{"command", vipd::daemon::commandName(sent)}};
  if (sent == vipd::daemon::ControlCommand::Withdraw) {
    request["wait"] = options.wait;
    request["persist"] = !options.transient;
    request["force"] = options.force;
    if (options.timeout) {
      request["timeoutMs"] = static_cast<uint64_t>(options.timeout->count());
    }
    if (options.reason) {
      request["reason"] = *options.reason;
    }
  }

  std::vector<std::string> candidates =
      !options.socketPath.empty() ? std::vector<std::string>{options.socketPath} : defaultSockets();
  const auto deadline = deadlineFor(options);
  std::string reply;
  if (auto failed = exchange(candidates, request.dump() + "\n", deadline, reply)) {
    std::fprintf(stderr, "vipctl: %s\n", failed->c_str());
    return kExitUnreachable;
  }
  auto response = json::parse(reply, nullptr, false);
  if (response.is_discarded() || !response.is_object()) {
    std::fprintf(stderr, "vipctl: vipd closed the connection without an answer (did it stop?); "
                 "the outcome is unknown: check `vipctl status`\n");
    return kExitUnreachable;
  }
  if (response.contains("error")) {
    std::string error = str(response, "error");
    std::fprintf(stderr, "vipctl: vipd: %s\n", error.c_str());
    if (error.starts_with("permission denied")) {
      return kExitUnreachable;
    }
    if (response.value("withdrawn", false)) {
      return kExitNotAcknowledged;
    }
    return response.value("refused", std::string()) == "guard" ? kExitRefusedByGuard
                                                                : kExitRefused;
  }
  if (command == "alive") {
    std::printf("alive: vipd %s, %s\n", str(response, "version").c_str(),
                str(response, "role").c_str());
    return 0;
  }
  if (command == "ready") {
    if (response.value("ready", false) == true) {
      std::printf("ready\n");
      return 0;
    }
    std::string reasons;
    if (response.contains("readyReasons") && response["readyReasons"].is_array()) {
      for (const auto& r : response["readyReasons"]) {
        reasons += (reasons.empty() ? "" : "; ") + (r.is_string() ? r.get<std::string>() : r.dump());
      }
    }
    std::fprintf(stderr, "not ready: %s\n", reasons.empty() ? "-" : reasons.c_str());
    return kExitNotReady;
  }
  if (options.asJson || command != "status") {
    std::printf("%s\n", response.dump(2).c_str());
  } else {
    printStatus(response);
  }
  return 0;
}
