// vipctl: talks to a running vipd over its control socket.
//
//   vipctl [--socket PATH] status [--json]
//
// Exit codes: 0 success; 1 vipd answered with an error; 2 usage error; 3 vipd is not running
// (or the socket cannot be reached).
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace {

namespace asio = boost::asio;
using json = nlohmann::json;

constexpr std::string_view kUsage =
    "usage: vipctl [--socket PATH] status [--json]\n"
    "\n"
    "  status   sessions, VIPs and why each VIP is or is not announced\n"
    "\n"
    "exit codes: 0 ok, 1 vipd reported an error, 2 usage error, 3 vipd not reachable\n";

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitUnreachable = 3;

std::string str(const json& j, const char* key) {
  if (!j.contains(key)) {
    return "-";
  }
  const auto& v = j[key];
  return v.is_string() ? v.get<std::string>() : v.dump();
}

void printStatus(const json& s) {
  fmt::print("vipd {}  router-id {}  AS{}\n\n", str(s, "version"), str(s, "routerId"),
             str(s, "localAsn"));
  fmt::print("{:<28} {:<8} {:<5} {:<12} {:>8} {:>6} {:>8}  {}\n", "PEER", "ASN", "TYPE", "STATE",
             "FOR", "SENT", "UPD-RX", "LAST ERROR");
  for (const auto& p : s["peers"]) {
    fmt::print("{:<28} {:<8} {:<5} {:<12} {:>8} {:>6} {:>8}  {}\n", str(p, "address"),
               str(p, "asn"), str(p, "type"), str(p, "state"), str(p, "stateFor"),
               str(p, "prefixesAdvertised"), str(p, "updatesReceived"),
               p.value("lastError", std::string()).empty() ? "-" : str(p, "lastError"));
  }
  fmt::print("\n{:<28} {:<10} {:<6} {:<10}  {}\n", "VIP", "INTERFACE", "BOUND", "ANNOUNCED",
             "REASON");
  for (const auto& v : s["vips"]) {
    fmt::print("{:<28} {:<10} {:<6} {:<10}  {}\n", str(v, "address"), str(v, "interface"),
               v.value("bound", false) ? "yes" : "no",
               v.value("announced", false) ? fmt::format("{} peer(s)", str(v, "announcedToPeers"))
                                           : "no",
               v.value("reason", std::string()).empty() ? "-" : str(v, "reason"));
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string socketPath = "/run/vipd/vipd.sock";
  std::string command;
  bool asJson = false;
  std::vector<std::string_view> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--socket" && i + 1 < args.size()) {
      socketPath = args[++i];
    } else if (args[i] == "--json") {
      asJson = true;
    } else if (args[i] == "--help" || args[i] == "-h") {
      std::fwrite(kUsage.data(), 1, kUsage.size(), stdout);
      return 0;
    } else if (command.empty() && !args[i].starts_with("-")) {
      command = args[i];
    } else {
      std::fprintf(stderr, "vipctl: unexpected argument '%.*s'\n%.*s",
                   static_cast<int>(args[i].size()), args[i].data(),
                   static_cast<int>(kUsage.size()), kUsage.data());
      return kExitUsage;
    }
  }
  if (command != "status") {
    std::fprintf(stderr, "vipctl: %s\n%.*s",
                 command.empty() ? "a command is required" : "unknown command",
                 static_cast<int>(kUsage.size()), kUsage.data());
    return kExitUsage;
  }

  asio::io_context io;
  asio::local::stream_protocol::socket socket(io);
  boost::system::error_code ec;
  socket.connect(asio::local::stream_protocol::endpoint(socketPath), ec);
  if (ec) {
    std::fprintf(stderr, "vipctl: vipd is not running or not reachable at %s: %s\n",
                 socketPath.c_str(), ec.message().c_str());
    return kExitUnreachable;
  }
  std::string request = json{{"command", command}}.dump() + "\n";
  asio::write(socket, asio::buffer(request), ec);
  std::string reply;
  asio::read(socket, asio::dynamic_buffer(reply, 1 << 20), ec);
  if (ec && ec != asio::error::eof) {
    std::fprintf(stderr, "vipctl: reading vipd's reply failed: %s\n", ec.message().c_str());
    return kExitUnreachable;
  }
  auto response = json::parse(reply, nullptr, false);
  if (response.is_discarded()) {
    std::fprintf(stderr, "vipctl: vipd sent a reply that is not JSON\n");
    return kExitError;
  }
  if (response.contains("error")) {
    std::fprintf(stderr, "vipctl: vipd: %s\n", str(response, "error").c_str());
    return kExitError;
  }
  if (asJson) {
    std::printf("%s\n", response.dump(2).c_str());
  } else {
    printStatus(response);
  }
  return 0;
}
