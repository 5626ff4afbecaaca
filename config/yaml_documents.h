// YAML::LoadAll() made safe for untrusted text, shared by the config parser and the bootstrap
// metadata parser. Internal to the YAML adapters (config/, bootstrap/): it throws yaml-cpp's
// exceptions, which those adapters turn into errors.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <string_view>
#include <vector>

namespace vipd::config {

// The most nodes a text may describe, aliases expanded (issue 40): a `*name` counts as every
// node under its anchor, once per use. vipd's own configs hold a few hundred; a 633-byte alias
// bomb (six levels of ten aliases) describes a million, and code that walks the tree (the
// layers' origins, the unknown-key report) would visit each one until memory runs out.
inline constexpr size_t kMaxYamlNodes = 20'000;

// A text refused before any node is built: too many nodes once aliases are expanded. A
// YAML::Exception, so every adapter already catches it; `mark` is where the budget ran out.
class YamlTooLarge : public YAML::Exception {
 public:
  using YAML::Exception::Exception;
};

// Every document in `text`, as YAML::LoadAll() returns them. The text is first walked with
// YAML::Parser's event stream, which builds no node, to refuse two kinds of text before
// LoadAll() sees them:
// - yaml-cpp 0.7's LoadAll() never returns on some malformed text, e.g. "," or "--- ," (a ','
//   outside a flow collection): its parser reports an empty document without consuming the
//   token, again and again (found by tests/fuzz, target config). A document that starts where
//   the previous one started is that loop, thrown as a YAML::ParserException at its position.
// - More than kMaxYamlNodes nodes over all documents, aliases expanded: thrown as YamlTooLarge.
std::vector<YAML::Node> loadAllDocuments(std::string_view text);

}  // namespace vipd::config
