// One control-socket request line (server.h) parsed and checked, apart from the socket so
// that it can be unit-tested and fuzzed (tests/fuzz/control_request.cc). Pure: no I/O, and no
// exception leaves it.
//
// A request is parsed once, here, at the edge, into a ControlRequest: every field a handler reads
// is type-checked and typed, so the handlers (Speaker::handleControl, the Drainer's withdraw, the
// Handoff's check and yield) read struct members, never the JSON again. (They used to read it
// with nlohmann::json::value(), which throws on another type, on the io_context thread where
// nothing catches: {"command":"withdraw","persist":"no"} once ended vipd.)
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <tl/expected.hpp>

namespace vipd::daemon {

// The control socket's commands: one vocabulary for vipctl, the handoff between instances (the
// clients) and the Speaker (which dispatches on it). The wire carries commandName().
enum class ControlCommand { Status, Withdraw, Announce, HandoffCheck, HandoffYield };

// "status", "withdraw", "announce", "handoff-check", "handoff-yield".
[[nodiscard]] std::string_view commandName(ControlCommand command);
// The command a request names; nullopt for a name vipd does not know.
[[nodiscard]] std::optional<ControlCommand> commandNamed(std::string_view name);
// "status, withdraw, announce, handoff-check, handoff-yield": for an unknown command's answer.
[[nodiscard]] std::string knownCommands();

// Whether `command` changes what the node announces or which instance speaks (withdraw, announce,
// handoff-yield): the server logs who asked for each one (uid and pid), and does not carry one
// out for a client that has gone (issue 43: a `timeout`-wrapped script gave up, and a frozen
// vipd that woke later withdrew the node all the same).
[[nodiscard]] bool changesState(ControlCommand command);
// Whether `command` is one vipd instances send each other (the handoff: handoff-check,
// handoff-yield), never an operator: the server takes it only from root or vipd's own user.
// A `control.group` member could otherwise make the speaker close its sessions (issue 43).
[[nodiscard]] bool betweenInstances(ControlCommand command);

// A request as the handlers read it. Every field but the command is optional on the wire; an
// absent one has the default below.
struct ControlRequest {
  // The command as sent ("withdraw"); `command` is nullopt when vipd does not know it (the
  // Speaker answers with the known ones).
  std::string name;
  std::optional<ControlCommand> command;
  // withdraw: false for `vipctl withdraw --transient` (a pod's preStop hook): not persisted.
  bool persist = true;
  bool wait = false;   // withdraw: answer once the peers have acknowledged
  bool force = false;  // withdraw: past the withdraw guard
  std::optional<std::string> reason;     // withdraw: checked by reasonProblem()
  std::optional<uint64_t> timeoutMs;     // withdraw --wait: overrides drain.timeout
  // handoff-check, handoff-yield: the other instance's identity, an object or null when absent
  // (its contents are identityFromJson()'s to judge, daemon/lifecycle/handoff_protocol.h).
  nlohmann::json identity;
};

// Parses `line` (one JSON object; a trailing newline is allowed) and checks it: "command" is
// required and a string; "persist", "wait" and "force" are booleans, "reason" a string that
// passes reasonProblem(), "timeoutMs" an unsigned integer, and "identity" an object, each when
// present. Unknown fields are ignored. Returns the request, or the error to answer with,
// starting "malformed request: ".
[[nodiscard]] tl::expected<ControlRequest, std::string> parseControlRequest(std::string_view line);

// Why `reason` (a withdraw's, for `vipctl status`, vipd's log and withdrawn.json) cannot be one:
// it must be one line of printable text, with no control character (a newline forged a log line,
// an escape sequence reached terminals) and nothing that is not UTF-8. "must be one line of
// printable text; it holds a line feed (\n)"; nullopt when it is fine. vipctl checks --reason
// with it before sending.
[[nodiscard]] std::optional<std::string> reasonProblem(std::string_view reason);

}  // namespace vipd::daemon
