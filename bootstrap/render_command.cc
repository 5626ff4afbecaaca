#include "bootstrap/render_command.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>
#include <iostream>

#include "bootstrap/atomic_file.h"
#include "bootstrap/distro.h"
#include "bootstrap/manifest_files.h"
#include "bootstrap/renderer.h"
#include "bootstrap/static_pod_template.h"
#include "cli/command_line.h"

namespace vipd::bootstrap {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDescription =
    "Renders the vipd config, the node file and the kubelet static-pod manifest from an "
    "instance-metadata "
    "document (JSON or YAML; see docs/metadata.md). Nothing is written unless the metadata "
    "renders and validates and, with --strict, the manifest directory holds no stray files.";

// Config: no secrets in it (keys stay in their password files); vipctl may read it.
constexpr mode_t kConfigMode = 0644;
constexpr mode_t kDirectoryMode = 0755;
// Holds old manifests and temporary files; nobody else needs to look.
constexpr mode_t kArchiveMode = 0700;
// Largest metadata read; anything bigger is the wrong file.
constexpr size_t kMaxMetadataSize = size_t{1} << 20;

struct Options {
  std::string metadata;
  std::string configOut;
  std::optional<std::string> nodeOut;  // default: node.yaml beside configOut
  const Distro* distro = &defaultDistro();
  std::optional<std::string> manifestDir;  // default: the distribution's static-pod directory
  std::optional<std::string> archiveDir;
  std::optional<std::string> image;
  bool strict = false;
};

struct Output {
  const RenderEnvironment& env;

  void line(std::string_view text) const { *env.out << text << '\n'; }
  void warning(std::string_view text) const {
    *env.err << "vipd render: warning: " << text << '\n';
  }
  int fail(std::string_view text) const {
    *env.err << "vipd render: " << text << '\n';
    return 1;
  }
};

// The command line, into `options`.
void addOptions(CLI::App& app, Options& options) {
  app.add_option("--metadata", options.metadata, "the instance metadata")
      ->option_text("FILE")
      ->required()
      ->check(cli::nonEmpty());
  app.add_option("--config-out", options.configOut,
                 "where the config goes (absolute); the static pod mounts its directory")
      ->option_text("PATH")
      ->required()
      ->check(cli::nonEmpty());
  app.add_option("--node-out", options.nodeOut,
                 "where this node's facts go for the DaemonSet's --node-config (absolute; "
                 "default: node.yaml in --config-out's directory)")
      ->option_text("PATH")
      ->check(cli::nonEmpty());
  std::vector<std::pair<std::string, const Distro*>> choices;
  for (const Distro& d : distros()) {
    choices.emplace_back(std::string(d.name), &d);
  }
  cli::addChoice(app, "--distro", options.distro, choices,
                 "the Kubernetes distribution: its static-pod directory, apiserver CA and port "
                 "(default kubeadm)");
  app.add_option("--manifest-dir", options.manifestDir,
                 "kubelet's static-pod directory; vipd's manifest is DIR/vipd.yaml (default: the "
                 "distribution's, /etc/kubernetes/manifests for kubeadm)")
      ->option_text("DIR")
      ->check(cli::nonEmpty());
  app.add_option("--image", options.image,
                 "the static pod's image, when the metadata has none (default: this vipd's "
                 "release, localhost/vipd:VERSION as its image archive loads)")
      ->option_text("IMAGE")
      ->check(cli::nonEmpty());
  app.add_flag("--strict", options.strict,
               "refuse to write when DIR holds files that are not manifests");
  app.add_option("--archive-dir", options.archiveDir,
                 "where replaced and removed manifests go, and temporary files (default: "
                 "DIR/../vipd-manifest-archive; same filesystem as DIR)")
      ->option_text("DIR")
      ->check(cli::nonEmpty());
  app.footer("Exit codes: 0 done, 1 metadata, validation or write error, 2 usage error.");
}

// Absolute, normal, without a trailing '/': "manifests/" and "./manifests" name one directory.
fs::path directoryPath(std::string_view text) {
  fs::path p = fs::absolute(fs::path(std::string(text))).lexically_normal();
  if (!p.has_filename() && p != p.root_path()) {
    p = p.parent_path();
  }
  return p;
}

// `inner` is `outer` or inside it, after resolving symbolic links of the parts that exist.
bool isWithin(const fs::path& inner, const fs::path& outer) {
  std::error_code ec1;
  std::error_code ec2;
  fs::path a = fs::weakly_canonical(inner, ec1);
  fs::path b = fs::weakly_canonical(outer, ec2);
  if (ec1 || ec2) {
    a = inner;
    b = outer;
  }
  fs::path relative = a.lexically_relative(b);
  return !relative.empty() && *relative.begin() != "..";
}

}  // namespace

int runRenderCommand(const std::vector<std::string>& args, std::string defaultImage) {
  RenderEnvironment env{generated::kStaticPodTemplate,
                        fmt::format("{} (built into vipd)", generated::kStaticPodTemplateSource),
                        &std::cout,
                        &std::cerr,
                        [] { return std::chrono::system_clock::now(); },
                        std::move(defaultImage)};
  return runRenderCommand(args, env);
}

namespace {

// Where `vipd render` writes, from its options.
struct RenderPaths {
  fs::path config;
  fs::path configDir;
  fs::path node;
  fs::path nodeDir;
  fs::path manifestDir;
  fs::path manifest;
  fs::path archiveDir;
};

RenderPaths renderPaths(const Options& options) {
  RenderPaths p;
  p.config = fs::path(options.configOut);
  p.configDir = p.config.parent_path();
  p.node = fs::path(options.nodeOut.value_or(defaultNodeConfigPath(options.configOut)));
  p.nodeDir = p.node.parent_path();
  p.manifestDir = directoryPath(options.manifestDir.value_or(std::string(options.distro->staticPodDir)));
  p.manifest = p.manifestDir / kManifestFileName;
  p.archiveDir = options.archiveDir ? directoryPath(*options.archiveDir)
                                    : p.manifestDir.parent_path() / "vipd-manifest-archive";
  return p;
}

// A usage problem with where the files would go, before anything is read.
std::optional<std::string> pathProblem(const RenderPaths& p) {
  if (isWithin(p.configDir, p.manifestDir)) {
    return fmt::format("--config-out {} is in the manifest directory {}; kubelet would "
                       "read the config as a pod: put it elsewhere, such as "
                       "/etc/vipd/vipd.yaml",
                       p.config.string(), p.manifestDir.string());
  }
  if (isWithin(p.nodeDir, p.manifestDir)) {
    return fmt::format("--node-out {} is in the manifest directory {}; kubelet would read it as a "
                       "pod: put it elsewhere, such as /etc/vipd/node.yaml",
                       p.node.string(), p.manifestDir.string());
  }
  if (p.node == p.config) {
    return fmt::format("--node-out and --config-out are both {}; the node file is a file of its "
                       "own", p.config.string());
  }
  if (isWithin(p.archiveDir, p.manifestDir)) {
    return fmt::format("the archive directory {} is in the manifest directory {}, where "
                       "kubelet would read old manifests as pods; pass --archive-dir "
                       "outside it",
                       p.archiveDir.string(), p.manifestDir.string());
  }
  return std::nullopt;
}

// The metadata file's text, or the message saying why there is none ("nothing written").
tl::expected<std::string, std::string> readMetadata(const std::string& path) {
  auto text = readFileIfExists(path);
  if (!text) {
    return tl::unexpected(
        fmt::format("cannot read the metadata: {}; nothing written", text.error()));
  }
  if (!*text) {
    return tl::unexpected(
        fmt::format("cannot read the metadata {}: no such file; nothing written", path));
  }
  if ((*text)->size() > kMaxMetadataSize) {
    return tl::unexpected(fmt::format(
        "the metadata {} is larger than {} KiB; is this the right file? Nothing written", path,
        kMaxMetadataSize >> 10));
  }
  return std::move(**text);
}

// Warns about each file in the manifest directory that is not a manifest; with --strict any of
// them is an error.
std::optional<std::string> strayFileProblem(const Options& options, const RenderPaths& p,
                                            Output& o) {
  auto strays = findStrayFiles(p.manifestDir);
  if (!strays) {
    return fmt::format("{}; nothing written", strays.error());
  }
  for (const auto& stray : *strays) {
    o.warning(fmt::format("{}: {}", stray.path.string(), stray.reason));
  }
  if (options.strict && !strays->empty()) {
    return fmt::format("--strict: {} holds {} file(s) that are not manifests (named "
                       "above); move them out and render again; nothing written",
                       p.manifestDir.string(), strays->size());
  }
  return std::nullopt;
}

// Old manifests are hard-linked into the archive and new ones renamed into place: both
// directories must be on one filesystem.
std::optional<std::string> filesystemProblem(const RenderPaths& p) {
  auto archiveFs = filesystemOf(p.archiveDir);
  auto manifestFs = filesystemOf(p.manifestDir);
  if (!archiveFs || !manifestFs) {
    return fmt::format("{}; nothing written",
                       !archiveFs ? archiveFs.error() : manifestFs.error());
  }
  if (*archiveFs != *manifestFs) {
    return fmt::format(
        "the archive directory {} is not on the filesystem of the manifest directory {}; old "
        "manifests are hard-linked and new ones renamed into place, which cannot cross "
        "filesystems: pass --archive-dir on the same filesystem; nothing written",
        p.archiveDir.string(), p.manifestDir.string());
  }
  return std::nullopt;
}

std::optional<std::string> createDirectories(
    const std::vector<std::pair<fs::path, mode_t>>& directories, Output& o) {
  for (const auto& [dir, mode] : directories) {
    auto created = ensureDirectory(dir, mode);
    if (!created) {
      return created.error();
    }
    if (*created) {
      o.line(fmt::format("created directory {}", dir.string()));
    }
  }
  return std::nullopt;
}

// Installs the manifest (bootstrap.enabled) or moves it out into the archive.
int writeOrRemoveManifest(const std::optional<std::string>& manifest, const RenderPaths& p,
                          std::chrono::system_clock::time_point now, Output& o) {
  if (manifest) {
    auto change = installManifest(p.manifest, *manifest, p.archiveDir, now);
    if (!change) {
      return o.fail(fmt::format("{} (the config is written; the manifest is not)", change.error()));
    }
    if (change->archivedAs) {
      o.line(fmt::format("archived {} as {}", p.manifest.string(), change->archivedAs->string()));
    }
    o.line(fmt::format("{} {}", change->outcome == WriteOutcome::Written ? "wrote" : "unchanged",
                       p.manifest.string()));
    return 0;
  }
  auto removed = removeManifest(p.manifest, p.archiveDir, now);
  if (!removed) {
    return o.fail(
        fmt::format("{} (the config is written; the manifest is still in place)", removed.error()));
  }
  if (*removed) {
    o.line(fmt::format("removed {} (bootstrap.enabled is false); archived as {}",
                       p.manifest.string(), (*removed)->string()));
  } else {
    o.line(fmt::format("no {} to remove (bootstrap.enabled is false)", p.manifest.string()));
  }
  return 0;
}

}  // namespace

int runRenderCommand(const std::vector<std::string>& args, const RenderEnvironment& env) {
  Output o{env};
  CLI::App app(kDescription, "vipd render");
  cli::configure(app);
  Options options;
  addOptions(app, options);
  if (auto exitCode = cli::parse(app, args, *env.out, *env.err)) {
    return *exitCode;
  }
  auto usage = [&](std::string_view problem) { return cli::usageError(app, problem, *env.err); };
  if (auto problem = configOutProblem(options.configOut)) {
    return usage(*problem);
  }
  if (options.nodeOut) {
    if (auto problem = configOutProblem(*options.nodeOut)) {
      return usage(fmt::format("--node-out: {}", *problem));
    }
  }
  const RenderPaths paths = renderPaths(options);
  if (auto problem = pathProblem(paths)) {
    return usage(*problem);
  }
  auto metadataText = readMetadata(options.metadata);
  if (!metadataText) {
    return o.fail(metadataText.error());
  }
  auto rendered = render({*metadataText, options.metadata, options.configOut, options.image,
                          env.manifestTemplate, env.templateName, env.defaultImage, options.distro,
                          paths.node.string()});
  if (!rendered) {
    for (const auto& error : rendered.error()) {
      *env.err << error.toString() << '\n';
    }
    return o.fail(
        fmt::format("{}: {} error(s); nothing written", options.metadata, rendered.error().size()));
  }
  if (auto problem = strayFileProblem(options, paths, o)) {
    return o.fail(*problem);
  }
  bool enabled = rendered->manifest.has_value();
  std::error_code ec;
  bool touchManifestDir = enabled || fs::exists(fs::symlink_status(paths.manifest, ec));
  if (touchManifestDir) {
    if (auto problem = filesystemProblem(paths)) {
      return o.fail(*problem);
    }
  }
  std::vector<std::pair<fs::path, mode_t>> directories = {{paths.configDir, kDirectoryMode},
                                                          {paths.nodeDir, kDirectoryMode}};
  if (touchManifestDir) {
    directories.emplace_back(paths.archiveDir, kArchiveMode);
  }
  if (enabled) {
    directories.emplace_back(paths.manifestDir, kDirectoryMode);
  }
  if (auto problem = createDirectories(directories, o)) {
    return o.fail(*problem);
  }
  // The config first: the manifest refers to it, and a pod started from a new manifest must find
  // the new config.
  auto config = writeFileAtomically(paths.config, rendered->config, paths.configDir, kConfigMode);
  if (!config) {
    return o.fail(fmt::format("{}; the manifest was not changed", config.error()));
  }
  o.line(fmt::format("{} {}", *config == WriteOutcome::Written ? "wrote" : "unchanged",
                     paths.config.string()));
  // The node file before the manifest too; the DaemonSet reads it, the static pod does not.
  auto node = writeFileAtomically(paths.node, rendered->nodeConfig, paths.nodeDir, kConfigMode);
  if (!node) {
    return o.fail(fmt::format("{}; the config is written, the manifest was not changed",
                              node.error()));
  }
  o.line(fmt::format("{} {}", *node == WriteOutcome::Written ? "wrote" : "unchanged",
                     paths.node.string()));
  return writeOrRemoveManifest(rendered->manifest, paths, env.now(), o);
}

}  // namespace vipd::bootstrap
