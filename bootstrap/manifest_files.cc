#include "bootstrap/manifest_files.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <stdio.h>  // renameat2
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

namespace vipd::bootstrap {
namespace {

namespace fs = std::filesystem;

// Enough for any burst of renders within one second; more means something loops.
constexpr int kMaxArchiveAttempts = 100;

// Puts `source` under a fresh archive name: link(2) (keep `source`) or renameat2 without replacing
// (move it). Either fails with EEXIST instead of overwriting an earlier archived version.
IoResult<fs::path> toArchive(const fs::path& source, const fs::path& archiveDir,
                             std::chrono::system_clock::time_point now, bool keepSource) {
  for (int attempt = 1; attempt <= kMaxArchiveAttempts; ++attempt) {
    fs::path archived = archiveDir / archiveName(source.filename().string(), now, attempt);
    int rc = keepSource ? ::link(source.c_str(), archived.c_str())
                        : ::renameat2(AT_FDCWD, source.c_str(), AT_FDCWD, archived.c_str(),
                                      RENAME_NOREPLACE);
    if (rc == 0) {
      if (auto synced = syncDirectory(archiveDir); !synced) {
        return tl::unexpected(synced.error());
      }
      if (!keepSource) {
        if (auto synced = syncDirectory(source.parent_path()); !synced) {
          return tl::unexpected(synced.error());
        }
      }
      return archived;
    }
    if (errno != EEXIST) {
      return tl::unexpected(fmt::format("cannot {} {} to {}: {}", keepSource ? "archive" : "move",
                                        source.string(), archived.string(), std::strerror(errno)));
    }
  }
  return tl::unexpected(
      fmt::format("cannot archive {}: {} versions already archived in {} "
                  "this second",
                  source.string(), kMaxArchiveAttempts, archiveDir.string()));
}

}  // namespace

std::optional<std::string> strayReason(std::string_view name, bool isRegularFile) {
  if (!isRegularFile) {
    return "not a regular file; kubelet does not read subdirectories or special files here";
  }
  if (name.starts_with(".")) {
    return "a hidden file (an editor's swap file or a temporary file); it does not belong in the "
           "static-pod directory";
  }
  for (std::string_view suffix : {".yaml", ".yml", ".json"}) {
    if (name.size() > suffix.size() && name.ends_with(suffix)) {
      return std::nullopt;
    }
  }
  return "not a .yaml, .yml or .json manifest (a backup or editor leftover?); kubelet still "
         "parses it as a pod, and a copy of a manifest runs or breaks a second pod";
}

IoResult<std::vector<StrayFile>> findStrayFiles(const fs::path& dir) {
  std::vector<StrayFile> strays;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec == std::errc::no_such_file_or_directory) {
    return strays;
  }
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code typeError;
    // Follows symbolic links, as kubelet does: a link to a manifest is a manifest.
    bool regular = it->is_regular_file(typeError);
    if (auto reason = strayReason(it->path().filename().string(), regular && !typeError)) {
      strays.push_back({it->path(), *reason});
    }
  }
  if (ec) {
    return tl::unexpected(
        fmt::format("cannot list the manifest directory {}: {}", dir.string(), ec.message()));
  }
  std::sort(strays.begin(), strays.end(),
            [](const StrayFile& a, const StrayFile& b) { return a.path < b.path; });
  return strays;
}

std::string archiveName(std::string_view fileName, std::chrono::system_clock::time_point time,
                        int attempt) {
  std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc);
  std::string_view stem = fileName;
  std::string_view extension;
  if (auto dot = fileName.rfind('.'); dot != std::string_view::npos && dot > 0) {
    stem = fileName.substr(0, dot);
    extension = fileName.substr(dot);
  }
  std::string suffix = attempt > 1 ? fmt::format("-{}", attempt) : "";
  return fmt::format("{}-{}{}{}", stem, stamp, suffix, extension);
}

IoResult<ManifestChange> installManifest(const fs::path& manifest, std::string_view content,
                                         const fs::path& archiveDir,
                                         std::chrono::system_clock::time_point now) {
  auto existing = readFileIfExists(manifest);
  if (!existing) {
    return tl::unexpected(existing.error());
  }
  ManifestChange change;
  if (*existing && **existing == content) {
    return change;
  }
  if (*existing) {
    // A hard link keeps the running version in place until the rename below replaces it, so
    // kubelet never sees the directory without vipd's manifest.
    auto archived = toArchive(manifest, archiveDir, now, true);
    if (!archived) {
      return tl::unexpected(archived.error());
    }
    change.archivedAs = *archived;
  }
  auto written = writeFileAtomically(manifest, content, archiveDir, 0600);
  if (!written) {
    return tl::unexpected(written.error());
  }
  change.outcome = *written;
  return change;
}

IoResult<std::optional<fs::path>> removeManifest(const fs::path& manifest,
                                                 const fs::path& archiveDir,
                                                 std::chrono::system_clock::time_point now) {
  struct stat st {};
  if (::lstat(manifest.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      return std::optional<fs::path>();
    }
    return tl::unexpected(
        fmt::format("cannot stat {}: {}", manifest.string(), std::strerror(errno)));
  }
  auto moved = toArchive(manifest, archiveDir, now, false);
  if (!moved) {
    return tl::unexpected(moved.error());
  }
  return std::optional<fs::path>(*moved);
}

}  // namespace vipd::bootstrap
