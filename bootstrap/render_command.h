// `vipd render`: the command line around the pure renderer (renderer.h) and the file writes
// (atomic_file.h, manifest_files.h). docs/metadata.md is the user's guide.
//
//   vipd render --metadata FILE --config-out PATH --manifest-dir DIR [--image IMAGE] [--strict]
//               [--archive-dir DIR]
//
// Exit codes: 0 done (every file written or already up to date), 1 metadata, validation or write
// error, 2 usage error. Nothing is written unless the metadata renders and validates and, with
// --strict, the manifest directory holds no stray files.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace vipd::bootstrap {

// What the command takes from its surroundings, so tests can supply their own.
struct RenderEnvironment {
  // The static-pod template; nullopt when this vipd was built without it.
  std::optional<std::string_view> manifestTemplate;
  std::string templateName;  // labels template errors
  std::ostream* out;         // what was written, archived or left unchanged
  std::ostream* err;         // warnings and errors
  std::function<std::chrono::system_clock::time_point()> now;  // names archived versions
  // The image when neither the metadata nor --image names one (MetadataContext::defaultImage).
  std::string defaultImage;
};

// `args` are the words after "render". Uses the template built into vipd, stdout, stderr and the
// system clock; `defaultImage` is this vipd's own image (main passes localhost/vipd:VERSION).
[[nodiscard]] int runRenderCommand(const std::vector<std::string>& args,
                                   std::string defaultImage);
[[nodiscard]] int runRenderCommand(const std::vector<std::string>& args,
                                   const RenderEnvironment& env);

}  // namespace vipd::bootstrap
