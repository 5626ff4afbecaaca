// Fuzz target: the instance metadata `vipd render` reads (bootstrap::parseMetadata, JSON or YAML
// through yaml-cpp), and on to the whole pure renderer (bootstrap::render: metadata -> config,
// checked with config::parseConfig, -> static-pod manifest from a small stand-in template).
//
// Checks: errors are values with messages; rendering is deterministic (the same input twice gives
// byte-identical output, as bootstrap/renderer.h promises); a rendered config is one
// config::parseConfig() accepts; configOutProblem() and imageProblem() take any text.
#include <string_view>

#include "bootstrap/instance_metadata.h"
#include "bootstrap/renderer.h"
#include "config/parser.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

constexpr std::string_view kTemplate = R"(apiVersion: v1
kind: Pod
metadata:
  name: vipd-bootstrap
spec:
  containers:
    - name: vipd
      image: "{{IMAGE}}"
      command: ["vipd", "--config", "{{CONFIG_PATH}}"]
      ports:
        - containerPort: {{METRICS_PORT}}
      args: ["{{CONTROL_SOCKET}}", "{{CONFIG_DIR}}"]
)";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace bootstrap = vipd::bootstrap;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  (void)bootstrap::configOutProblem(text);
  (void)bootstrap::imageProblem(text);

  auto metadata = bootstrap::parseMetadata(
      text, "metadata.yaml", bootstrap::MetadataContext{"/etc/vipd/vipd.yaml", std::nullopt});
  if (!metadata) {
    VIPD_FUZZ_CHECK(!metadata.error().empty(), "rejected metadata names at least one error");
    for (const auto& error : metadata.error()) {
      VIPD_FUZZ_CHECK(!error.message.empty(), "every metadata error has a message");
    }
    return 0;
  }

  const bootstrap::RenderInput input{text,         "metadata.yaml", "/etc/vipd/vipd.yaml",
                                     std::nullopt, kTemplate,       "template.yaml"};
  auto first = bootstrap::render(input);
  auto second = bootstrap::render(input);
  VIPD_FUZZ_CHECK(first.has_value() == second.has_value(), "rendering is deterministic (outcome)");
  if (!first) {
    VIPD_FUZZ_CHECK(!first.error().empty(), "a failed render names at least one error");
    return 0;
  }
  VIPD_FUZZ_CHECK(first->config == second->config && first->manifest == second->manifest,
                  "rendering is deterministic (bytes)");
  auto parsed = vipd::config::parseConfig(first->config, "rendered.yaml");
  VIPD_FUZZ_CHECK(parsed.has_value(), "a rendered config is a valid config");
  return 0;
}
