#include "daemon/control/request.h"

#include <fmt/format.h>

#include "daemon/base/printable.h"

namespace vipd::daemon {

namespace {
constexpr std::pair<ControlCommand, std::string_view> kCommands[] = {
    {ControlCommand::Status, "status"},
    {ControlCommand::Withdraw, "withdraw"},
    {ControlCommand::Announce, "announce"},
    {ControlCommand::HandoffCheck, "handoff-check"},
    {ControlCommand::HandoffYield, "handoff-yield"},
};
}  // namespace

std::string_view commandName(ControlCommand command) {
  for (const auto& [c, name] : kCommands) {
    if (c == command) {
      return name;
    }
  }
  return "?";  // unreachable: every enumerator is in kCommands (request_test)
}

std::optional<ControlCommand> commandNamed(std::string_view name) {
  for (const auto& [c, n] : kCommands) {
    if (n == name) {
      return c;
    }
  }
  return std::nullopt;
}

std::string knownCommands() {
  std::string out;
  for (const auto& [c, name] : kCommands) {
    out += out.empty() ? "" : ", ";
    out += name;
  }
  return out;
}

bool changesState(ControlCommand command) {
  using enum ControlCommand;
  return command == Withdraw || command == Announce || command == HandoffYield;
}

bool betweenInstances(ControlCommand command) {
  using enum ControlCommand;
  return command == HandoffCheck || command == HandoffYield;
}

std::optional<std::string> reasonProblem(std::string_view reason) {
  if (auto bad = unprintableIn(reason)) {
    return fmt::format("must be one line of printable text; it holds {}", *bad);
  }
  return std::nullopt;
}

tl::expected<ControlRequest, std::string> parseControlRequest(std::string_view line) {
  auto request = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (request.is_discarded() || !request.is_object() || !request.contains("command") ||
      !request["command"].is_string()) {
    return tl::unexpected(std::string("malformed request: expected {\"command\": \"...\"}"));
  }
  struct Field {
    const char* name;
    bool (nlohmann::json::*isType)() const noexcept;
    const char* type;
  };
  static constexpr Field kFields[] = {
      {"persist", &nlohmann::json::is_boolean, "a boolean"},
      {"wait", &nlohmann::json::is_boolean, "a boolean"},
      {"force", &nlohmann::json::is_boolean, "a boolean"},
      {"reason", &nlohmann::json::is_string, "a string"},
      {"timeoutMs", &nlohmann::json::is_number_unsigned, "an unsigned integer"},
      {"identity", &nlohmann::json::is_object, "an object"},
  };
  for (const auto& field : kFields) {
    auto it = request.find(field.name);
    if (it != request.end() && !((*it).*field.isType)()) {
      return tl::unexpected(fmt::format("malformed request: \"{}\" must be {}, not {}", field.name,
                                        field.type, it->type_name()));
    }
  }
  // Refused rather than escaped: the reason is shown as given in `vipctl status`, the log and
  // withdrawn.json, so the operator learns now that it cannot hold what it holds, instead of
  // finding it rewritten later.
  if (auto it = request.find("reason"); it != request.end()) {
    if (auto bad = reasonProblem(it->get_ref<const std::string&>())) {
      return tl::unexpected(fmt::format("malformed request: \"reason\" {}", *bad));
    }
  }
  ControlRequest out;
  out.name = request["command"].get<std::string>();
  out.command = commandNamed(out.name);
  out.persist = request.value("persist", true);
  out.wait = request.value("wait", false);
  out.force = request.value("force", false);
  if (auto it = request.find("reason"); it != request.end()) {
    out.reason = it->get<std::string>();
  }
  if (auto it = request.find("timeoutMs"); it != request.end()) {
    out.timeoutMs = it->get<uint64_t>();
  }
  if (auto it = request.find("identity"); it != request.end()) {
    out.identity = std::move(*it);
  }
  return out;
}

}  // namespace vipd::daemon
