// The text the fact gathering reads, turned into facts: /proc/PID/status, sysctl files and
// static-pod manifests. Pure, so each is unit-tested on the kernel's (or kubelet's) own text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace vipd::doctor {

// Capability bits (include/uapi/linux/capability.h).
inline constexpr int kCapNetBindService = 10;
inline constexpr int kCapNetAdmin = 12;
inline constexpr int kCapNetRaw = 13;

// The CapEff line of /proc/PID/status ("CapEff:\t0000000000003000"); nullopt when absent or
// malformed.
[[nodiscard]] std::optional<uint64_t> parseEffectiveCapabilities(std::string_view status);

// A sysctl file's content: one decimal integer and a newline ("1\n"); nullopt otherwise.
[[nodiscard]] std::optional<int> parseSysctlInteger(std::string_view text);

// The sysctl's name as `sysctl -w` takes it: "net.ipv4.conf.eth0.rp_filter"; a '.' in the
// interface's name is written '/' (eth0.100 -> net.ipv4.conf.eth0/100.rp_filter).
[[nodiscard]] std::string sysctlName(std::string_view interface, std::string_view key);

// Whether a static-pod manifest (YAML or JSON, as kubelet reads it) runs vipd: one of its
// `image` values names an image called vipd ("localhost/vipd:0.2.0", "registry.example/x/vipd",
// "vipd@sha256:..."). A text match, not a parse: kubelet's files are trusted to be pods, and a
// file that is not one is reported as stray on its own.
[[nodiscard]] bool manifestRunsVipd(std::string_view text);

}  // namespace vipd::doctor
