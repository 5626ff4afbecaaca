#include "doctor/fact_parsing.h"

#include <charconv>
#include <cctype>

namespace vipd::doctor {
namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

// The image's name without registry, path, tag or digest: "registry:5000/x/vipd:1" -> "vipd".
std::string_view imageName(std::string_view reference) {
  if (auto at = reference.find('@'); at != std::string_view::npos) {
    reference = reference.substr(0, at);
  }
  if (auto slash = reference.rfind('/'); slash != std::string_view::npos) {
    reference = reference.substr(slash + 1);
  }
  if (auto colon = reference.find(':'); colon != std::string_view::npos) {
    reference = reference.substr(0, colon);
  }
  return reference;
}

bool isKeyCharacter(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
}

}  // namespace

std::optional<uint64_t> parseEffectiveCapabilities(std::string_view status) {
  constexpr std::string_view kKey = "CapEff:";
  size_t at = 0;
  while ((at = status.find(kKey, at)) != std::string_view::npos) {
    if (at == 0 || status[at - 1] == '\n') {
      break;
    }
    at += kKey.size();
  }
  if (at == std::string_view::npos) {
    return std::nullopt;
  }
  std::string_view rest = status.substr(at + kKey.size());
  rest = rest.substr(0, rest.find('\n'));
  rest = trim(rest);
  uint64_t value = 0;
  auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), value, 16);
  if (rest.empty() || error != std::errc() || end != rest.data() + rest.size()) {
    return std::nullopt;
  }
  return value;
}

std::optional<int> parseSysctlInteger(std::string_view text) {
  text = trim(text);
  int value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

std::string sysctlName(std::string_view interface, std::string_view key) {
  std::string name = "net.ipv4.conf.";
  for (char c : interface) {
    name += c == '.' ? '/' : c;
  }
  name += '.';
  name += key;
  return name;
}

bool manifestRunsVipd(std::string_view text) {
  constexpr std::string_view kKey = "image";
  for (size_t at = text.find(kKey); at != std::string_view::npos;
       at = text.find(kKey, at + kKey.size())) {
    // The whole key: not "imagePullPolicy", not "baseimage".
    if (at > 0 && isKeyCharacter(text[at - 1])) {
      continue;
    }
    size_t i = at + kKey.size();
    if (i < text.size() && text[i] == '"') {
      ++i;  // JSON: "image": "..."
    }
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) {
      ++i;
    }
    if (i >= text.size() || text[i] != ':') {
      continue;
    }
    ++i;
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) {
      ++i;
    }
    if (i < text.size() && (text[i] == '"' || text[i] == '\'')) {
      ++i;
    }
    size_t end = i;
    while (end < text.size() && !std::isspace(static_cast<unsigned char>(text[end])) &&
           text[end] != '"' && text[end] != '\'' && text[end] != ',' && text[end] != '}' &&
           text[end] != '#') {
      ++end;
    }
    if (imageName(text.substr(i, end - i)) == "vipd") {
      return true;
    }
  }
  return false;
}

}  // namespace vipd::doctor
