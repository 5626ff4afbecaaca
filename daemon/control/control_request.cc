#include "daemon/control/control_request.h"

#include <fmt/format.h>

namespace vipd::daemon {

tl::expected<nlohmann::json, std::string> parseControlRequest(std::string_view line) {
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
  return request;
}

}  // namespace vipd::daemon
