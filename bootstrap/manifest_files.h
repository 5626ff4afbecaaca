// The static-pod manifest directory, as `vipd render` changes it (the I/O edge). kubelet parses
// every file in that directory as a pod, so nothing here ever creates a temporary or backup file
// in it: temporary files and old versions go to the archive directory, which must be on the same
// filesystem (rename(2) and link(2) cannot cross filesystems).
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bootstrap/atomic_file.h"

namespace vipd::bootstrap {

// A file in the manifest directory that is not a static-pod manifest, and why. Pure.
// Manifests are regular files named *.yaml, *.yml or *.json that do not start with '.'.
// Everything else is stray: editor and backup leftovers (*~, *.bak, *.orig, *.tmp, .*.swp),
// dotfiles, other extensions, directories.
[[nodiscard]] std::optional<std::string> strayReason(std::string_view name, bool isRegularFile);

struct StrayFile {
  std::filesystem::path path;
  std::string reason;
};

// The stray files in `dir`, sorted by name. A missing `dir` has none.
[[nodiscard]] IoResult<std::vector<StrayFile>> findStrayFiles(const std::filesystem::path& dir);

// The archive name for an old version of `fileName` taken at `time` (UTC, whole seconds), e.g.
// "vipd-20250102T030405Z.yaml"; `attempt` > 1 adds "-<attempt>" to tell apart versions archived
// within one second. Pure.
[[nodiscard]] std::string archiveName(std::string_view fileName,
                                      std::chrono::system_clock::time_point time, int attempt);

struct ManifestChange {
  WriteOutcome outcome = WriteOutcome::Unchanged;
  std::optional<std::filesystem::path> archivedAs;  // the replaced version, when there was one
};

// Makes `manifest` hold `content`. When it holds something else, that version is first hard-linked
// into `archiveDir` (archiveName()), then the new content is written with writeFileAtomically()
// through a temporary file in `archiveDir`. When it already holds `content`, nothing is touched.
// Precondition: `archiveDir` exists, on the same filesystem as `manifest`.
[[nodiscard]] IoResult<ManifestChange> installManifest(const std::filesystem::path& manifest,
                                                       std::string_view content,
                                                       const std::filesystem::path& archiveDir,
                                                       std::chrono::system_clock::time_point now);

// Moves `manifest` into `archiveDir` (one rename; kubelet then stops the pod). Returns where it
// went, or nullopt when there was no manifest. Precondition as for installManifest().
[[nodiscard]] IoResult<std::optional<std::filesystem::path>> removeManifest(
    const std::filesystem::path& manifest, const std::filesystem::path& archiveDir,
    std::chrono::system_clock::time_point now);

}  // namespace vipd::bootstrap
