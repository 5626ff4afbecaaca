#include "config/yaml_documents.h"

#include <yaml-cpp/eventhandler.h>

#include <fmt/format.h>

#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace vipd::config {
namespace {

// Records where each document starts and counts the nodes the text describes, each alias as
// the size of what it names; throws YamlTooLarge once the count passes kMaxYamlNodes, so a
// bomb is refused after a budget's worth of events, not after its expansion.
class DocumentScan : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override { start = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { leaf(mark, anchor); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    auto it = anchorSizes_.find(anchor);
    add(mark, it == anchorSizes_.end() ? 1 : it->second);  // unknown: yaml-cpp refuses it
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string&) override {
    leaf(mark, anchor);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(mark, anchor);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(mark, anchor);
  }
  void OnMapEnd() override { close(); }

  YAML::Mark start = YAML::Mark::null_mark();

 private:
  void add(const YAML::Mark& mark, size_t nodes) {
    nodes_ += nodes;
    if (nodes_ > kMaxYamlNodes) {
      throw YamlTooLarge(
          mark, fmt::format("the YAML describes more than {} nodes once its aliases (*name) are "
                            "expanded; a vipd config holds a few hundred. Refused unread: is "
                            "this the right file, or an alias bomb?",
                            kMaxYamlNodes));
    }
  }
  void leaf(const YAML::Mark& mark, YAML::anchor_t anchor) {
    add(mark, 1);
    if (anchor != YAML::NullAnchor) {
      anchorSizes_[anchor] = 1;
    }
  }
  void open(const YAML::Mark& mark, YAML::anchor_t anchor) {
    open_.emplace_back(anchor, nodes_);
    add(mark, 1);
  }
  void close() {
    if (open_.empty()) {
      return;
    }
    auto [anchor, before] = open_.back();
    open_.pop_back();
    if (anchor != YAML::NullAnchor) {
      anchorSizes_[anchor] = nodes_ - before;
    }
  }

  size_t nodes_ = 0;
  std::map<YAML::anchor_t, size_t> anchorSizes_;
  std::vector<std::pair<YAML::anchor_t, size_t>> open_;  // collections open: anchor, count then
};

}  // namespace

std::vector<YAML::Node> loadAllDocuments(std::string_view text) {
  const std::string input(text);
  {
    std::istringstream stream(input);
    YAML::Parser parser(stream);
    DocumentScan scan;
    int previous = -1;
    while (parser.HandleNextDocument(scan)) {
      if (scan.start.pos == previous) {
        throw YAML::ParserException(scan.start,
                                    "unexpected token here (a ',' outside [...] or {...}?)");
      }
      previous = scan.start.pos;
    }
  }
  return YAML::LoadAll(input);
}

}  // namespace vipd::config
