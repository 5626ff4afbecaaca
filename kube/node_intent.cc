#include "kube/node_intent.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace vipd::kube {

std::string printableReason(std::string_view text) {
  std::string out;
  for (char ch : text.substr(0, kMaxWithdrawReasonBytes)) {
    auto u = static_cast<unsigned char>(ch);
    out.push_back(u < 0x20 || u >= 0x7F ? '?' : ch);
  }
  if (text.size() > kMaxWithdrawReasonBytes) {
    out += "...";
  }
  return out;
}

std::string NodeIntent::describe() const {
  std::string out;
  if (withdrawReason) {
    out = fmt::format("annotation {}: {}", kWithdrawAnnotation,
                      withdrawReason->empty() ? "(no reason given)" : *withdrawReason);
  }
  if (outOfService) {
    out += fmt::format("{}taint {}", out.empty() ? "" : "; ", kOutOfServiceTaint);
  }
  return out;
}

Result<NodeIntent> readNodeIntent(const nlohmann::json& node, std::string_view nodeName) {
  if (!node.is_object()) {
    return fail(ErrorKind::Protocol, "the Node is not a JSON object");
  }
  if (auto kind = node.find("kind"); kind != node.end() && *kind != "Node") {
    return fail(ErrorKind::Protocol, fmt::format("expected a Node, got kind {}", kind->dump()));
  }
  auto metadata = node.find("metadata");
  if (metadata == node.end() || !metadata->is_object()) {
    return fail(ErrorKind::Protocol, "the Node has no metadata");
  }
  auto name = metadata->find("name");
  if (name == metadata->end() || !name->is_string() || *name != nodeName) {
    return fail(ErrorKind::Protocol,
                fmt::format("expected Node {}, got {}", nodeName,
                            name == metadata->end() ? std::string("no name")
                                                    : printableReason(name->dump())));
  }
  NodeIntent intent;
  if (auto annotations = metadata->find("annotations"); annotations != metadata->end()) {
    if (!annotations->is_object() && !annotations->is_null()) {
      return fail(ErrorKind::Protocol, "the Node's metadata.annotations is not an object");
    }
    if (annotations->is_object()) {
      if (auto w = annotations->find(kWithdrawAnnotation); w != annotations->end()) {
        if (!w->is_string()) {
          return fail(ErrorKind::Protocol,
                      fmt::format("annotation {} is not a string", kWithdrawAnnotation));
        }
        intent.withdrawReason = printableReason(w->get_ref<const std::string&>());
      }
    }
  }
  auto spec = node.find("spec");
  if (spec != node.end() && spec->is_object()) {
    if (auto taints = spec->find("taints"); taints != spec->end() && !taints->is_null()) {
      if (!taints->is_array()) {
        return fail(ErrorKind::Protocol, "the Node's spec.taints is not a list");
      }
      for (const auto& taint : *taints) {
        auto key = taint.is_object() ? taint.find("key") : taint.end();
        if (!taint.is_object() || key == taint.end() || !key->is_string()) {
          return fail(ErrorKind::Protocol, "a taint of the Node has no key");
        }
        if (*key == kOutOfServiceTaint) {
          intent.outOfService = true;
        }
        // kExcludeFromLoadBalancers: ignored on purpose (node_intent.h).
      }
    }
  } else if (spec != node.end() && !spec->is_null()) {
    return fail(ErrorKind::Protocol, "the Node's spec is not an object");
  }
  return intent;
}

}  // namespace vipd::kube
