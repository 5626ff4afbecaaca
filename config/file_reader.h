// How vipd reads the files it is given (the config file, the node file, the probe config):
// the one place config/ touches the file system (issue 40, issue 43). Each file is untrusted
// in shape as well as in content: a writer may rename a FIFO, a device or a symlink to a secret
// over it. So a file is read only when it is
// - a regular file: opened with O_NONBLOCK, which keeps open() from waiting for a FIFO's writer,
//   and checked with fstat() on the descriptor it reads, so nothing else is ever read;
// - no larger than the caller's bound: the text is refused, not cut, past `maxBytes`;
// - reached through symlinks that stay inside the file's own directory: the kubelet's ConfigMap
//   layout (`vipd.yaml -> ..data/vipd.yaml`, `..data -> ..2026_01_01_00_00_00.1`) is followed,
//   `vipd.yaml -> /etc/shadow` is refused without opening it. The directory itself may be a
//   symlink (/etc/vipd -> /srv/vipd): only what lies below it is checked.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <tl/expected.hpp>

namespace vipd::config {

// The text of `path`, or one sentence saying why it was not read and what to do about it, naming
// the file as `what` ("config file") but not its path, which the caller's error carries (a
// ConfigError's `file`). Never blocks on the file.
[[nodiscard]] tl::expected<std::string, std::string> readBoundedFile(const std::string& path,
                                                                     std::string_view what,
                                                                     size_t maxBytes);

}  // namespace vipd::config
