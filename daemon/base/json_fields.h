// Reading fields of a status document (nlohmann::json) that may be missing or of another type:
// each reader gives nullopt (or nullptr) then, never throws. Shared by the metrics, which map
// vipd's status onto Prometheus, and the probe matrix, which draws other instances' /probe.json.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace vipd::daemon::json_fields {

inline const nlohmann::json* member(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) {
    return nullptr;
  }
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

inline std::optional<double> number(const nlohmann::json& object, const char* key) {
  const nlohmann::json* value = member(object, key);
  return value != nullptr && value->is_number() ? std::optional(value->get<double>())
                                                : std::nullopt;
}

inline std::optional<bool> boolean(const nlohmann::json& object, const char* key) {
  const nlohmann::json* value = member(object, key);
  return value != nullptr && value->is_boolean() ? std::optional(value->get<bool>())
                                                 : std::nullopt;
}

inline std::optional<std::string> string(const nlohmann::json& object, const char* key) {
  const nlohmann::json* value = member(object, key);
  return value != nullptr && value->is_string() ? std::optional(value->get<std::string>())
                                                : std::nullopt;
}

}  // namespace vipd::daemon::json_fields
