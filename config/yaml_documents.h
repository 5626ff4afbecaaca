// YAML::LoadAll() made safe for untrusted text, shared by the config parser and the bootstrap
// metadata parser. Internal to the YAML adapters (config/, bootstrap/): it throws yaml-cpp's
// exceptions, which those adapters turn into errors.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string_view>
#include <vector>

namespace vipd::config {

// Every document in `text`, as YAML::LoadAll() returns them. yaml-cpp 0.7's LoadAll() never
// returns on some malformed text, e.g. "," or "--- ," (a ',' outside a flow collection): its
// parser reports an empty document without consuming the token, again and again, and LoadAll
// keeps appending them until memory runs out (found by tests/fuzz, target config). The text is
// first walked with YAML::Parser; a document that starts where the previous one started is that
// loop, and is thrown as a YAML::ParserException at its position, like any syntax error.
std::vector<YAML::Node> loadAllDocuments(std::string_view text);

}  // namespace vipd::config
