#include "config/yaml_documents.h"

#include <yaml-cpp/eventhandler.h>

#include <sstream>
#include <string>

namespace vipd::config {
namespace {

// Records where each document starts; ignores everything else.
class DocumentStarts : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override { start = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

  YAML::Mark start = YAML::Mark::null_mark();
};

}  // namespace

std::vector<YAML::Node> loadAllDocuments(std::string_view text) {
  const std::string input(text);
  {
    std::istringstream stream(input);
    YAML::Parser parser(stream);
    DocumentStarts starts;
    int previous = -1;
    while (parser.HandleNextDocument(starts)) {
      if (starts.start.pos == previous) {
        throw YAML::ParserException(starts.start,
                                    "unexpected token here (a ',' outside [...] or {...}?)");
      }
      previous = starts.start.pos;
    }
  }
  return YAML::LoadAll(input);
}

}  // namespace vipd::config
