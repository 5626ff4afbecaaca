// Whole-file writes that a reader never sees half done (the I/O edge of `vipd render`).
//
// Errors are one line naming the operation, the path and the OS's reason, fit to print as is.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <tl/expected.hpp>

namespace vipd::bootstrap {

template <class T>
using IoResult = tl::expected<T, std::string>;

enum class WriteOutcome { Written, Unchanged };

// Makes `target` hold exactly `content`:
//   - when it already does, nothing is touched (not even its mtime): Unchanged;
//   - otherwise the content goes to a new temporary file in `tempDir`, is fsynced, given `mode`,
//     renamed over `target`, and both directories are fsynced: Written.
// A reader of `target` sees the old content or the new, never a mix, and `target`'s directory
// never holds any other name, not even briefly: kubelet parses every file in its static-pod
// directory, so the temporary file must live elsewhere.
// Precondition: `tempDir` exists and is on the same filesystem as `target` (rename(2) cannot cross
// filesystems; that is reported as an error, not worked around with a copy).
// On error `target` is untouched and the temporary file is removed.
[[nodiscard]] IoResult<WriteOutcome> writeFileAtomically(const std::filesystem::path& target,
                                                         std::string_view content,
                                                         const std::filesystem::path& tempDir,
                                                         mode_t mode);

// The file's whole content, or nullopt when it does not exist. Refuses, without waiting on it,
// anything that is not a regular file (a FIFO, a device, a directory), and files over 16 MiB (no
// manifest or config is that large; it is the wrong file).
[[nodiscard]] IoResult<std::optional<std::string>> readFileIfExists(
    const std::filesystem::path& path);

// fsync(2) on a directory, so a rename or unlink in it survives a power cut.
[[nodiscard]] IoResult<void> syncDirectory(const std::filesystem::path& dir);

// Creates `dir` with exactly `mode` (not filtered by the umask), and any missing parents with mode
// 0755. An existing `dir` is left as it is. Returns true when it created `dir`.
[[nodiscard]] IoResult<bool> ensureDirectory(const std::filesystem::path& dir, mode_t mode);

// The filesystem (st_dev) that `path` is on, or would be on once created: that of its nearest
// existing ancestor. Lets callers check "same filesystem" before creating anything.
[[nodiscard]] IoResult<dev_t> filesystemOf(const std::filesystem::path& path);

}  // namespace vipd::bootstrap
