#include "kube/node_watch.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace vipd::kube {
namespace {

constexpr size_t kMaxResourceVersionBytes = 128;

// A resourceVersion goes back into a query string: opaque to clients, but what an apiserver
// sends is short and URL-safe (digits in practice). Anything else is refused, not escaped.
bool plausibleResourceVersion(const std::string& rv) {
  if (rv.empty() || rv.size() > kMaxResourceVersionBytes) {
    return false;
  }
  for (char ch : rv) {
    bool ok = (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
              ch == '-' || ch == '_' || ch == '.';
    if (!ok) {
      return false;
    }
  }
  return true;
}

Result<std::string> resourceVersionOf(const nlohmann::json& object) {
  auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) {
    return fail(ErrorKind::Protocol, "no metadata");
  }
  auto rv = metadata->find("resourceVersion");
  if (rv == metadata->end() || !rv->is_string() ||
      !plausibleResourceVersion(rv->get_ref<const std::string&>())) {
    return fail(ErrorKind::Protocol, "no usable metadata.resourceVersion");
  }
  return rv->get<std::string>();
}

}  // namespace

Result<void> LineFramer::feed(std::string_view bytes,
                              const std::function<void(std::string_view)>& onLine) {
  if (spent_) {
    return fail(ErrorKind::TooLarge, "the watch stream already broke its line limit");
  }
  while (!bytes.empty()) {
    auto newline = bytes.find('\n');
    std::string_view piece = bytes.substr(0, newline);
    if (partial_.size() + piece.size() > maxLine_) {
      spent_ = true;
      partial_.clear();
      partial_.shrink_to_fit();
      return fail(ErrorKind::TooLarge,
                  fmt::format("a watch event longer than {} KiB", maxLine_ / 1024));
    }
    if (newline == std::string_view::npos) {
      partial_.append(piece);
      return {};
    }
    std::string_view line = piece;
    if (!partial_.empty()) {
      partial_.append(piece);
      line = partial_;
    }
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    if (!line.empty()) {
      onLine(line);
    }
    partial_.clear();
    bytes.remove_prefix(newline + 1);
  }
  return {};
}

std::string NodeWatch::listTarget() const {
  return fmt::format("/api/v1/nodes?fieldSelector=metadata.name%3D{}", nodeName_);
}

std::string NodeWatch::watchTarget() const {
  return fmt::format(
      "/api/v1/nodes?fieldSelector=metadata.name%3D{}&watch=1&allowWatchBookmarks=true"
      "&resourceVersion={}&timeoutSeconds={}",
      nodeName_, resourceVersion_, kWatchTimeoutSeconds);
}

Result<NodeWatch::Update> NodeWatch::fromObject(const nlohmann::json& node) {
  auto intent = readNodeIntent(node, nodeName_);
  if (!intent) {
    return tl::unexpected(intent.error());
  }
  return Update{std::move(*intent), false};
}

Result<NodeWatch::Update> NodeWatch::onList(std::string_view body) {
  nlohmann::json list = nlohmann::json::parse(body, nullptr, false);
  if (list.is_discarded() || !list.is_object()) {
    return fail(ErrorKind::Protocol, "the node list is not a JSON object");
  }
  auto rv = resourceVersionOf(list);
  if (!rv) {
    return fail(ErrorKind::Protocol, "the node list has " + rv.error().message);
  }
  auto items = list.find("items");
  if (items != list.end() && !items->is_array() && !items->is_null()) {
    return fail(ErrorKind::Protocol, "the node list's items is not a list");
  }
  Update update;
  if (items == list.end() || items->is_null() || items->empty()) {
    update.deleted = true;
  } else if (items->size() > 1) {
    return fail(ErrorKind::Protocol,
                fmt::format("the node list holds {} nodes for one name", items->size()));
  } else {
    auto u = fromObject(items->front());
    if (!u) {
      return u;
    }
    update = std::move(*u);
  }
  if (listed_) {
    ++relists_;
  }
  listed_ = true;
  resourceVersion_ = std::move(*rv);
  return update;
}

Result<NodeWatch::Update> NodeWatch::onEvent(std::string_view line) {
  nlohmann::json event = nlohmann::json::parse(line, nullptr, false);
  if (event.is_discarded() || !event.is_object()) {
    return fail(ErrorKind::Protocol, "a watch event is not a JSON object");
  }
  auto type = event.find("type");
  auto object = event.find("object");
  if (type == event.end() || !type->is_string() || object == event.end() ||
      !object->is_object()) {
    return fail(ErrorKind::Protocol, "a watch event without type or object");
  }
  const std::string& t = type->get_ref<const std::string&>();
  if (t == "ERROR") {
    // A metav1.Status. 410 (Expired, Gone): the version was compacted away.
    auto code = object->find("code");
    unsigned status = code != object->end() && code->is_number_unsigned()
                          ? code->get<unsigned>()
                          : 0;
    std::string message;
    if (auto m = object->find("message"); m != object->end() && m->is_string()) {
      message = printableReason(m->get_ref<const std::string&>());
    }
    if (status == 410) {
      resourceVersion_.clear();
    }
    return tl::unexpected(Error{ErrorKind::Http,
                                fmt::format("the watch ended with an error {}: {}", status,
                                            message.empty() ? "(no message)" : message),
                                status, std::nullopt});
  }
  auto rv = resourceVersionOf(*object);
  if (!rv) {
    return fail(ErrorKind::Protocol, fmt::format("a {} event has {}", printableReason(t),
                                                 rv.error().message));
  }
  if (t == "BOOKMARK") {
    ++bookmarks_;
    resourceVersion_ = std::move(*rv);
    return Update{};
  }
  if (t != "ADDED" && t != "MODIFIED" && t != "DELETED") {
    return fail(ErrorKind::Protocol,
                fmt::format("a watch event of unknown type {}", printableReason(t)));
  }
  Update update;
  if (t == "DELETED") {
    update.deleted = true;
  } else {
    auto u = fromObject(*object);
    if (!u) {
      return u;
    }
    update = std::move(*u);
  }
  resourceVersion_ = std::move(*rv);
  return update;
}

}  // namespace vipd::kube
