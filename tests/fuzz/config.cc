// Fuzz target: config::parseConfig() on arbitrary text (YAML through yaml-cpp, then vipd's
// validation), the same text as either layer of a two-file config (config/layers.h) beside a
// valid other layer, and config::parseDuration() on the same text.
//
// Checks: every error is reported as a value with a message and a position ordered as the header
// promises; nothing escapes as an exception (an escaping yaml-cpp exception would abort here);
// a duration that parses formats back to text that parses to the same value.
#include <string_view>
#include <utility>

#include "config/layers.h"
#include "config/parser.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  auto config = vipd::config::parseConfig(text, "fuzz.yaml");
  if (!config) {
    VIPD_FUZZ_CHECK(!config.error().empty(), "a rejected config names at least one error");
    int line = 0;
    int column = 0;
    for (const auto& error : config.error()) {
      VIPD_FUZZ_CHECK(!error.message.empty(), "every config error has a message");
      VIPD_FUZZ_CHECK(error.file == "fuzz.yaml", "every config error names the file");
      VIPD_FUZZ_CHECK(!error.toString().empty(), "every config error prints");
      VIPD_FUZZ_CHECK(error.line >= 0 && error.column >= 0, "positions are not negative");
      VIPD_FUZZ_CHECK(
          error.line > line || (error.line == line && error.column >= column) || error.line == 0,
          "errors are ordered by position");
      if (error.line != 0) {
        line = error.line;
        column = error.column;
      }
    }
  }

  // The text as the node file under a cluster file, then as the cluster file over a node file:
  // every error names one of the two files, and a config comes back only without errors.
  constexpr std::string_view kCluster =
      "apiVersion: vipd.io/v1alpha1\nkind: SpeakerConfiguration\n"
      "vips: [{address: 203.0.113.10/32}]\nhealth: {type: none}\n";
  constexpr std::string_view kNode =
      "apiVersion: vipd.io/v1alpha1\nkind: NodeConfiguration\nrouterId: 192.0.2.11\n"
      "localAsn: 64513\npeers: [{address: 192.0.2.1, asn: 64512}]\n";
  for (const auto& [cluster, node] : {std::pair{kCluster, text}, std::pair{text, kNode}}) {
    auto layered = vipd::config::parseConfigLayers({cluster, "cluster.yaml"},
                                                   vipd::config::ConfigFile{node, "node.yaml"});
    if (!layered) {
      VIPD_FUZZ_CHECK(!layered.error().empty(), "a rejected pair of files names an error");
      for (const auto& error : layered.error()) {
        VIPD_FUZZ_CHECK(error.file == "cluster.yaml" || error.file == "node.yaml",
                        "every layered error names one of the two files");
        VIPD_FUZZ_CHECK(!error.message.empty(), "every layered error has a message");
      }
    } else {
      (void)vipd::config::showConfig(*layered);
    }
  }

  if (auto duration = vipd::config::parseDuration(text)) {
    VIPD_FUZZ_CHECK(duration->count() >= 0, "a parsed duration is not negative");
    auto again = vipd::config::parseDuration(vipd::config::formatDuration(*duration));
    VIPD_FUZZ_CHECK(again == duration, "parseDuration(formatDuration(d)) == d");
  }
  return 0;
}
