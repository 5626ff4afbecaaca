// node_intent.h: what withdraws the node, what does not, and what is refused.
#include "kube/node_intent.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace vipd::kube {
namespace {

using nlohmann::json;

json node(json annotations = json::object(), json taints = json::array(),
          json labels = json::object()) {
  return {{"kind", "Node"},
          {"apiVersion", "v1"},
          {"metadata",
           {{"name", "cp-1"}, {"annotations", annotations}, {"labels", labels}}},
          {"spec", {{"taints", taints}}},
          // The API's own judgement of the node: never read.
          {"status", {{"conditions", {{{"type", "Ready"}, {"status", "False"}}}}}}};
}

NodeIntent intentOf(const json& n) {
  auto i = readNodeIntent(n, "cp-1");
  EXPECT_TRUE(i) << i.error().message;
  return i.value_or(NodeIntent{});
}

TEST(NodeIntent, NothingAsked) {
  NodeIntent i = intentOf(node());
  EXPECT_FALSE(i.withdraw()) << "a NotReady node is not an operator's request";
  EXPECT_EQ(i.describe(), "");
  json bare = {{"metadata", {{"name", "cp-1"}}}};
  EXPECT_FALSE(intentOf(bare).withdraw()) << "no annotations, no spec";
}

TEST(NodeIntent, TheWithdrawAnnotation) {
  NodeIntent i = intentOf(node({{"vipd.io/withdraw", "replace disk"}}));
  EXPECT_TRUE(i.withdraw());
  EXPECT_EQ(i.withdrawReason, "replace disk");
  EXPECT_EQ(i.describe(), "annotation vipd.io/withdraw: replace disk");
  i = intentOf(node({{"vipd.io/withdraw", ""}}));
  EXPECT_TRUE(i.withdraw()) << "any value withdraws, the empty one too";
  EXPECT_EQ(i.describe(), "annotation vipd.io/withdraw: (no reason given)");
}

TEST(NodeIntent, TheOutOfServiceTaint) {
  NodeIntent i = intentOf(node(json::object(),
                               {{{"key", "node.kubernetes.io/out-of-service"},
                                 {"value", "nodeshutdown"},
                                 {"effect", "NoExecute"}}}));
  EXPECT_TRUE(i.withdraw());
  EXPECT_TRUE(i.outOfService);
  EXPECT_EQ(i.describe(), "taint node.kubernetes.io/out-of-service");
  i = intentOf(node({{"vipd.io/withdraw", "x"}},
                    {{{"key", "node.kubernetes.io/out-of-service"}, {"effect", "NoSchedule"}}}));
  EXPECT_EQ(i.describe(),
            "annotation vipd.io/withdraw: x; taint node.kubernetes.io/out-of-service");
}

TEST(NodeIntent, ExcludeFromExternalLoadBalancersIsIgnored) {
  const std::string exclude = "node.kubernetes.io/exclude-from-external-load-balancers";
  NodeIntent i = intentOf(node({{exclude, "true"}}, {{{"key", exclude}, {"effect", "NoSchedule"}}},
                               {{exclude, ""}}));
  EXPECT_FALSE(i.withdraw()) << "as label, annotation and taint";
  i = intentOf(node(json::object(), {{{"key", "node-role.kubernetes.io/control-plane"},
                                      {"effect", "NoSchedule"}}}));
  EXPECT_FALSE(i.withdraw()) << "other taints";
}

TEST(NodeIntent, ReasonsArePrintableAndBounded) {
  NodeIntent i = intentOf(node({{"vipd.io/withdraw", "line1\nline2\x1b[2J caf\xc3\xa9"}}));
  EXPECT_EQ(i.withdrawReason, "line1?line2?[2J caf??");
  i = intentOf(node({{"vipd.io/withdraw", std::string(1000, 'r')}}));
  EXPECT_EQ(i.withdrawReason, std::string(kMaxWithdrawReasonBytes, 'r') + "...");
}

TEST(NodeIntent, Refused) {
  auto error = [](const json& n) {
    auto i = readNodeIntent(n, "cp-1");
    EXPECT_FALSE(i);
    if (i) {
      return std::string();
    }
    EXPECT_EQ(i.error().kind, ErrorKind::Protocol);
    return i.error().message;
  };
  json other = node({{"vipd.io/withdraw", "x"}});
  other["metadata"]["name"] = "cp-2";
  EXPECT_EQ(error(other), "expected Node cp-1, got \"cp-2\"")
      << "another node's object never withdraws this one";
  EXPECT_EQ(error(json::array()), "the Node is not a JSON object");
  EXPECT_EQ(error({{"kind", "Pod"}, {"metadata", {{"name", "cp-1"}}}}),
            "expected a Node, got kind \"Pod\"");
  EXPECT_EQ(error({{"kind", "Node"}}), "the Node has no metadata");
  EXPECT_EQ(error(node(json::array())), "the Node's metadata.annotations is not an object");
  EXPECT_EQ(error(node({{"vipd.io/withdraw", 1}})), "annotation vipd.io/withdraw is not a string");
  EXPECT_EQ(error(node(json::object(), json::object())), "the Node's spec.taints is not a list");
  EXPECT_EQ(error(node(json::object(), {{{"effect", "NoSchedule"}}})),
            "a taint of the Node has no key");
  EXPECT_EQ(error(node(json::object(), {"string"})), "a taint of the Node has no key");
}

}  // namespace
}  // namespace vipd::kube
