// Fills the static-pod manifest template (manifests/static-pod/vipd.yaml, built into vipd; see
// embed_file.py). Pure.
//
// A placeholder is {{NAME}}, NAME in upper case letters, digits and '_'. The template and the
// renderer must agree exactly: a placeholder the renderer has no value for, a value whose
// placeholder the template never uses, or an unterminated "{{" is an error, so a template edited
// on one side only fails the render instead of producing a pod that mounts or runs the wrong
// thing.
//
// A line that starts with "#%" is a note about the template itself (what the placeholders are,
// how it is tested): it is dropped, so the manifest a node gets reads as a manifest, not as a
// template.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bootstrap/instance_metadata.h"

namespace vipd::bootstrap {

inline constexpr std::string_view kNotePrefix = "#%";

struct TemplateValue {
  std::string name;  // without braces: "IMAGE"
  std::string value;
};

// Replaces every placeholder in `templateText` with its value (each may occur more than once).
// `templateName` only labels errors, which carry the placeholder's line and column. On failure
// returns every error found. Values are inserted verbatim: callers pass values that need no YAML
// quoting (see configOutProblem() and imageProblem()).
[[nodiscard]] Result<std::string> fillTemplate(std::string_view templateText,
                                               std::string_view templateName,
                                               const std::vector<TemplateValue>& values);

}  // namespace vipd::bootstrap
