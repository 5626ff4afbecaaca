// vipd's version: the one string `vipd --version`, `vipctl --version`, the vipd_build_info metric,
// the status JSON, the health check's User-Agent, the image tag and `vipd render`'s default image
// carry. Computed at build time by scripts/version.sh (git describe; meson's project version
// where there is no git; -Dvipd_version=... overrides both, as the Containerfile does).
#pragma once

#include <string_view>

namespace vipd::daemon {

std::string_view version();

}  // namespace vipd::daemon
