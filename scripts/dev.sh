#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine (run as root):
#   scripts/dev.sh demo   install packages, build, run the lab demo (BIRD fabric + 3 vipd nodes)
#                         (`demo --cluster`: a real control plane of three nodes, vipd their
#                         static pods, from the pinned tools and the release's image)
#   scripts/dev.sh test   install packages, build with AddressSanitizer + UndefinedBehaviorSanitizer
#                         (build-san/), run every test (unit + end to end) under them
#                         (VIPD_SANITIZE=0: the plain build/ instead)
#   scripts/dev.sh build  install packages and build only
#   scripts/dev.sh unit [TEST...] [-- MESON-TEST-ARGS]  build/ and the unit tests alone (no root:
#                         unit, fuzz-replay, manifests, monitoring rules); names pick tests
#   scripts/dev.sh image [runtime|slim] [ARCH]  build the container image localhost/vipd:VERSION
#                         with podman from the Containerfile (no registry needed); its last line
#                         is the reference (`image slim`: the slim stage, ...:VERSION-slim;
#                         `image runtime arm64`: cross-compiled for arm64, ...:VERSION-arm64)
#   scripts/dev.sh release  the images for amd64 and arm64 as one OCI archive in dist/, with their
#                         SBOMs, signatures, public key and SHA256SUMS (see release() below)
#   scripts/dev.sh verify ARCHIVE (--key PUBKEY | --fingerprint FPR)  a release archive's digests
#                                           and signatures, against a key you trust
#   scripts/dev.sh publish REPOSITORY [--insecure]  push the release to an OCI registry, signed with
#                         cosign, the SBOMs attested, the Helm chart beside it
#   scripts/dev.sh unit-arm64 [build]  the unit tests cross-compiled for arm64, run through
#                         qemu-user (build: compile only; `test` runs them as unit_arm64)
#   scripts/dev.sh qemu-user   register qemu-user for arm64 binaries (until the next reboot)
#   scripts/dev.sh tools  build the pinned tools (tools/go.mod: etcd, the Kubernetes programs, helm,
#                         cosign) once into a cache outside the clone; last line: their folder
# They share the install and build steps below, so the demo, CI and the image never drift apart.
set -euo pipefail
shopt -s inherit_errexit  # a failure inside $(...) stops the script too

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${VIPD_BUILD_DIR:-$here/build}
setup_args=()
native_arch=$(dpkg --print-architecture)

# The test suites run under ASan + UBSan (meson's b_sanitize): a leak, an out-of-bounds access or
# undefined behaviour in vipd, its unit tests or any daemon an e2e test starts fails the run
# (tests/e2e/lab/ scans every process log for sanitizer reports). One build serves every test, which
# keeps CI well under its time limit; the demo and installs use the plain build.
use_sanitizers() {
  build_dir=${VIPD_BUILD_DIR:-$here/build-san}
  # -O0 and no debug info: the Boost.Asio/Beast-heavy sources take 2-3 minutes each to compile
  # with ASan at -O2 -g on 2 cores; this keeps CI well under its time limit. Reports still name
  # the functions; rebuild with -Ddebug=true for file:line.
  # A unity build (four sources per compiler run) parses the Asio and Beast headers a quarter as
  # often. It could hide a missing include or a clash of file-local names, so only this build is
  # one: scripts/dev.sh build, and the image's build stage (which CI builds), compile every file
  # on its own.
  setup_args=(-Db_sanitize=address,undefined -Db_lundef=false -Doptimization=0 -Ddebug=false
              -Dunity=on -Dunity_size=4)
  # lld links vipd with ASan in 3 s where GNU ld takes 8 to 10 (about 60 programs are linked).
  export CXX_LD=${CXX_LD:-lld}
  # halt/abort: a report must not scroll by in a passing test. A small quarantine keeps RSS
  # figures (the hostile-peer flood) about vipd rather than about ASan.
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=1:quarantine_size_mb=16:print_summary=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1:print_summary=1}
  export VIPD_SANITIZED=1
}

# Build tools, libraries, and the real BGP peers the end-to-end tests run against.
packages=(
  meson ninja-build pkgconf g++ binutils lld python3
  libboost1.81-dev libboost-url1.81-dev libnl-3-dev libnl-route-3-dev libfmt-dev libyaml-cpp-dev
  prometheus-cpp-dev
  nlohmann-json3-dev libexpected-dev libcli11-dev libgtest-dev libgmock-dev
  libssl-dev openssl util-linux iproute2 procps tcpdump nftables bird2 frr gobgpd exabgp
  # bench/: the failover plot.
  gnuplot-nox
  # bench/ apiserver scenarios: the BIRD speaker's check script probes /readyz with curl.
  curl
  # tests/monitoring: a real Prometheus scraping lab vipd nodes, and promtool (rules, metrics).
  prometheus
  # The manifest tests: PyYAML, and kubectl for `kubectl kustomize`: Debian's kubernetes-client,
  # unless a kubectl is installed already (another package's /usr/bin/kubectl conflicts with it).
  python3-yaml $(command -v kubectl >/dev/null || echo kubernetes-client)
  # The image (scripts/dev.sh image) and the pods the tests run from it: podman with runc (crun
  # refuses these machines' hybrid cgroup layout), mmdebstrap for a base image without a registry;
  # containerd for its `ctr images import` of the release archive (a kubelet's runtime);
  # docker-registry (the distribution registry) on loopback for `scripts/dev.sh publish`'s test.
  podman runc mmdebstrap containerd docker-registry
  # The real-cluster lab (tests/e2e/cluster.py): its kubelets' runtime is Debian's containerd,
  # which reports its network ready only with a CNI configuration and its plugins there.
  containernetworking-plugins
  # contrib/vipd.service: systemd-analyze verify and security, and strace for the system calls
  # vipd makes under the unit's sandbox (tests/contrib/).
  systemd strace
  # scripts/dev.sh release and verify: skopeo and gnupg for the signatures; npm for cdxgen, the
  # SBOM tool (scripts/sbom); qemu-user to run the arm64 image (tests/e2e/test_pod_arm64.py).
  skopeo gnupg qemu-user-static binfmt-support $(command -v npm >/dev/null || echo npm)
)

install_packages() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$p")
  done
  if ((${#missing[@]} == 0)); then
    return
  fi
  echo "== installing: ${missing[*]}"
  apt-get update -q
  # The peers are started by the tests themselves; their packaged services must not run.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
}

configure() {
  if [[ ! -f $build_dir/build.ninja ]]; then
    meson setup "${setup_args[@]}" "$build_dir" "$here"
  fi
}

build() {
  configure
  ninja -C "$build_dir"
}

# `test` builds in two steps. The programs first (vipd, vipctl: about 60% of the compile): the
# suites that start them, which are most of the test time, can run as soon as they exist. The
# rest (each library's unit tests, the fuzz corpus replays) is built meanwhile at nice 19, like
# the images (prebuild_image): it takes only the CPU those suites leave idle, two compilers at a
# time (four, each holding about 500 MB, slowed the suites' own processes), and run_tests waits
# for it before it runs what it built. The log is meson-logs/rest-build.log.
build_programs() {
  configure
  meson compile -C "$build_dir" vipd vipctl
}

build_rest() {
  local log=$build_dir/meson-logs/rest-build.log
  mkdir -p "${log%/*}"
  nice -n 19 ninja -C "$build_dir" -j 2 >"$log" 2>&1 &
  rest_build_pid=$!
}

run_tests() {
  local rc=0 logs=() list
  local rest_log=$build_dir/meson-logs/rest-build.log
  list=$(mktemp -d)
  # Three runs of meson test, by what a test runs and how it runs (meson introspect). First the
  # tests that need no binary of the rest of the build and mostly wait on peers and timers
  # (parallel, priority 5 or more in tests/meson.build), three at a time: the builds beside them
  # at nice 19 get less CPU, but they are still done before the last run needs them. Then the
  # other tests that only run vipd and vipctl (the pairs, then the ones that run alone), in
  # tests/meson.build's order, two at a time. Then, once the rest is built, the unit tests and
  # corpus replays, and the container suite last.
  meson introspect --tests "$build_dir" | python3 -c '
import json, sys
lists = {"waiting": [], "programs": [], "rest": []}
tests = json.load(sys.stdin)
all_names = [t["name"] for t in tests]
twice = sorted({n for n in all_names if all_names.count(n) > 1})
if twice:
    # The passes name their tests, and a name runs every test that has it: each would run twice.
    sys.exit(f"two tests share a name: {twice}; rename one test file (a test is named after its file)")
for t in tests:
    if t["depends"] or "vipd:container" in t["suite"] or "vipd:cluster" in t["suite"]:
        lists["rest"].append(t["name"])
    elif t["is_parallel"] and t["priority"] >= 5:
        lists["waiting"].append(t["name"])
    else:
        lists["programs"].append(t["name"])
for name, names in lists.items():
    open(sys.argv[1] + "/" + name, "w").write(" ".join(names))
' "$list"
  # meson test with no names runs every test: an empty list runs nothing instead.
  local pass jobs
  for pass in waiting:3 programs:2; do
    jobs=${pass#*:} pass=${pass%:*}
    [[ -s $list/$pass ]] || continue
    meson test -C "$build_dir" --no-rebuild --print-errorlogs --num-processes "$jobs" \
      --logbase "testlog-$pass" $(<"$list/$pass") || rc=$?
    logs+=("$build_dir/meson-logs/testlog-$pass.json")
  done
  if wait "$rest_build_pid"; then
    if [[ -s $list/rest ]]; then
      meson test -C "$build_dir" --no-rebuild --print-errorlogs --num-processes 2 \
        $(<"$list/rest") || rc=$?
      logs+=("$build_dir/meson-logs/testlog.json")
    fi
  else
    tail -n 40 "$rest_log" >&2
    echo "the unit tests and corpus replays did not build (whole log: $rest_log)" >&2
    rc=1
  fi
  rm -rf "$list"
  # A closing summary line for CI, counted from meson's own logs.
  python3 - "${logs[@]}" <<'PY'
import json, sys
counts = {"OK": 0, "FAIL": 0, "SKIP": 0, "TIMEOUT": 0, "ERROR": 0, "EXPECTEDFAIL": 0,
          "UNEXPECTEDPASS": 0}
for log in sys.argv[1:]:
    for line in open(log):
        result = json.loads(line)["result"]
        counts[result] = counts.get(result, 0) + 1
failed = counts["FAIL"] + counts["TIMEOUT"] + counts["ERROR"] + counts["UNEXPECTEDPASS"]
print(f"{counts['OK']} passed, {failed} failed, {counts['SKIP']} skipped")
PY
  if [[ ${CI:-} == true ]] && grep -q '"result": "SKIP"' "${logs[@]}"; then
    echo "CI=true: a skipped test is a failure (see SKIP lines above)" >&2
    rc=1
  fi
  return $rc
}

# The images the container suite tests (runtime, slim and the release's arm64), built while the
# other suites run: at nice 19 the compiler inside the build stage only takes the CPU those
# tests leave idle (most of them wait on timers and peers), and the container suite, which runs
# last, finds every layer cached. tests/e2e/pods.py takes the same lock before each
# scripts/dev.sh image or release, so it waits for this build instead of racing it. flock -o:
# the lock stays with flock itself, never with a process podman leaves behind. The log is
# meson-logs/image-prebuild.log.
prebuild_image() {
  local log=$build_dir/meson-logs/image-prebuild.log
  mkdir -p "${log%/*}" "$here/build-podman"
  # Then the arm64 unit tests' cross build, outside the image lock (the pod tests need it), for
  # the unit_arm64 test that runs last.
  (nice -n 19 flock -o "$here/build-podman/image.lock" \
    bash -c '"$0" image && "$0" image slim && "$0" image runtime arm64' "$here/scripts/dev.sh" &&
    nice -n 19 "$here/scripts/dev.sh" unit-arm64 build) >"$log" 2>&1 &
}

# The pinned tools of the real-cluster suite (build_tools), built the same way: in the
# background at nice 19 while the other suites run, under build-podman/tools.lock, which
# tests/e2e/cluster.py takes before it asks for them. Cold (a fresh machine) they take about 17
# minutes of CPU (docs/testing.md, "The pinned tools"); warm it is a stat. The log is
# meson-logs/tools-prebuild.log.
prebuild_tools() {
  local log=$build_dir/meson-logs/tools-prebuild.log
  mkdir -p "${log%/*}" "$here/build-podman"
  (nice -n 19 flock -o "$here/build-podman/tools.lock" "$here/scripts/dev.sh" tools) \
    >"$log" 2>&1 &
}

# --- the container image ---------------------------------------------------------------------

# podman as it works here: runc, and limits a container may set (podman's default nofile of
# 1048576 is refused above the hard limit; runc is refused nproc limits above ~32768 on these
# machines, so 4096, plenty for vipd and a compiler). Containers take them from containers.conf,
# a build's RUN steps only from --ulimit. A CONTAINERS_CONF of the caller's wins.
podman_limits=("nofile=$(ulimit -Hn):$(ulimit -Hn)" "nproc=4096:4096")

podman_config() {
  [[ -z ${CONTAINERS_CONF:-} ]] || return 0
  local conf=$here/build-podman/containers.conf
  mkdir -p "${conf%/*}"
  cat >"$conf.tmp" <<EOF
# Written by scripts/dev.sh: podman settings for vipd's image build and tests on this machine.
[engine]
runtime = "runc"
[containers]
default_ulimits = [$(printf '"%s", ' "${podman_limits[@]}" | sed 's/, $//')]
EOF
  mv "$conf.tmp" "$conf"
  export CONTAINERS_CONF=$conf
}

# A Containerfile base: docker.io/library/debian:TAG (12 or 12-slim) when it is here or can be
# pulled, else the same release made from Debian's archive with mmdebstrap (once; kept as
# localhost/vipd-base/debian:TAG). 12-slim leaves out what Docker's debian:12-slim does
# (documentation but the copyright files, manual pages, locales). Prints the reference.
# VIPD_DEBIAN_MIRROR and VIPD_DEBIAN_SECURITY_MIRROR name other mirrors.
debian_base() {
  local tag=$1
  local upstream=docker.io/library/debian:$tag local_base=localhost/vipd-base/debian:$tag
  if podman image exists "$upstream" || timeout 60 podman pull -q "$upstream" >/dev/null 2>&1; then
    echo "$upstream"
    return
  fi
  if ! podman image exists "$local_base"; then
    echo "== $upstream cannot be pulled: building $local_base with mmdebstrap" >&2
    local mirror=${VIPD_DEBIAN_MIRROR:-http://deb.debian.org/debian}
    local security=${VIPD_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
    local slim=()
    if [[ $tag == *-slim ]]; then
      local p
      for p in '/usr/share/doc/*' '/usr/share/groff/*' '/usr/share/info/*' '/usr/share/linda/*' \
               '/usr/share/lintian/overrides/*' '/usr/share/locale/*' '/usr/share/man/*'; do
        slim+=(--dpkgopt="path-exclude=$p")
      done
      slim+=(--dpkgopt="path-include=/usr/share/doc/*/copyright")
    fi
    local tar
    tar=$(mktemp --tmpdir vipd-base.XXXXXX.tar)
    # As Docker's debian images are made: usr-is-merged rather than usrmerge (which pulls in
    # perl, 45 MB) and no apt indices.
    local perl="usrmerge libfile-find-rule-perl libnumber-compare-perl libtext-glob-perl perl"
    perl+=" libperl5.36 perl-modules-5.36"
    mmdebstrap --quiet --variant=minbase --include=usr-is-merged "${slim[@]}" \
      --customize-hook="chroot \"\$1\" dpkg --purge $perl" \
      --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' bookworm "$tar" \
      "deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
      "deb $security bookworm-security main" >&2
    podman import --quiet "$tar" "$local_base" >/dev/null
    rm -f "$tar"
  fi
  echo "$local_base"
}

# Builds localhost/vipd:VERSION (scripts/version.sh). The build stage is tagged
# localhost/vipd-build:cache so that its layers stay cached (a second build with nothing changed
# takes seconds) while older, untagged build stages are pruned (`podman image prune`: every
# dangling image of the store, which on a developer's machine are leftovers of earlier builds).
# An ARCH other than this machine's (arm64) is cross-compiled (the Containerfile's build stage)
# into localhost/vipd:VERSION-ARCH, an image for that architecture.
build_image() {
  local target=${1:-runtime} arch=${2:-$native_arch}
  podman_config
  local version base ref suffix=
  version=$("$here/scripts/version.sh")
  base=$(debian_base 12)
  # BUILDPLATFORM and TARGETARCH: Debian 12's podman (buildah 1.28) sets TARGETARCH only with
  # --platform and BUILDPLATFORM never, where docker buildx sets both.
  local args=(--build-arg "BUILD_IMAGE=$base" --build-arg "VERSION=$version"
              --build-arg "BUILDPLATFORM=linux/$native_arch" --build-arg "TARGETARCH=$arch"
              "${podman_limits[@]/#/--ulimit=}" -f "$here/Containerfile")
  if [[ $arch != "$native_arch" ]]; then
    args+=(--platform "linux/$arch")
    suffix=-$arch
  fi
  ref=localhost/vipd:$version
  case $target in
    runtime) ;;
    slim)
      args+=(--build-arg "SLIM_IMAGE=$(debian_base 12-slim)")
      ref=$ref-slim
      ;;
    *)
      echo "$0 image: unknown target '$target' (runtime or slim)" >&2
      exit 2
      ;;
  esac
  ref+=$suffix
  echo "== building $ref (build stage on $base)" >&2
  podman build "${args[@]}" --target build -t "localhost/vipd-build:cache$suffix" "$here" >&2
  podman build "${args[@]}" --target "$target" -t "$ref" "$here" >&2
  # Housekeeping, not the build: a dangling image some other container still uses (a buildah
  # working container an interrupted build left behind) makes prune fail, and the image just
  # built is fine, so say so and go on.
  podman image prune -f >/dev/null ||
    echo "$0 image: podman image prune failed (see above); $ref is built" >&2
  echo "$ref"
}

# --- the release -----------------------------------------------------------------------------
# dist/ gets, for VERSION (scripts/version.sh):
#   vipd-VERSION.oci.tar        one OCI image index: the runtime image for every
#                               release_arches entry, named localhost/vipd:VERSION
#   vipd-VERSION.linux-ARCH.sbom.cdx.json  each image's SBOM (CycloneDX, made by cdxgen)
#   vipd-VERSION.signatures.tar GPG simple-signing signatures of the index and each image
#                               manifest, named as skopeo's dir: transport keeps them
#   vipd-release-key.gpg        the public key they verify with
#   SHA256SUMS                  all of the above
# Why simple signing, not sigstore: Debian 12's skopeo 1.9 signs with sigstore keys but cannot
# make one (no generate-sigstore-key, no cosign in Debian), and a sigstore signature lives only
# as a registry attachment, which an archive cannot carry. Simple-signing signatures are files:
# they travel beside the archive, and a containers-policy.json signedBy rule checks them.
release_arches=(amd64 arm64)
sbom_tool=$here/scripts/sbom

release() {
  local version dist list ref arch archive tmp
  version=$("$here/scripts/version.sh")
  dist=$here/dist
  archive=$dist/vipd-$version.oci.tar
  ref=localhost/vipd:$version
  list=localhost/vipd-release:$version
  mkdir -p "$dist"
  rm -f "$dist"/vipd-* "$dist/SHA256SUMS"
  podman manifest rm "$list" >/dev/null 2>&1 || true
  podman manifest create "$list" >/dev/null
  for arch in "${release_arches[@]}"; do
    podman manifest add "$list" "containers-storage:$(build_image runtime "$arch")" >/dev/null
  done
  # The archive's image name is the reference, so `podman load`, `ctr images import` and
  # containerd (crictl) all know it as localhost/vipd:VERSION, the name `vipd render` and the
  # DaemonSet use; each picks the image of its own architecture.
  podman manifest push --quiet --all "$list" "oci-archive:$archive:$ref"
  podman manifest rm "$list" >/dev/null
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  for arch in "${release_arches[@]}"; do
    sbom "$archive" "$arch" "$dist/vipd-$version.linux-$arch.sbom.cdx.json" "$tmp" "$version"
  done
  sign "$archive" "$ref" "$dist/vipd-$version.signatures.tar" "$dist/vipd-release-key.gpg" "$tmp"
  (cd "$dist" && sha256sum -- vipd-* >SHA256SUMS)
  echo "== wrote $(cd "$dist" && echo vipd-* SHA256SUMS) in dist/" >&2
  echo "$archive"
}

# sbom ARCHIVE ARCH OUT TMP: cdxgen's CycloneDX SBOM of ARCHIVE's image for ARCH, read from the
# image's own filesystem (its layers unpacked: cdxgen's container mode drops the licences its
# scanner found). cdxgen finds the packages in the image's /var/lib/dpkg/status.d and their
# licences in its copyright files (scripts/image-rootfs.sh puts both there); the release
# refuses an SBOM without the C library in it.
sbom() {
  local archive=$1 arch=$2 out=$3 tmp=$4 version=$5 layer node_major
  # cdxgen's engines field asks for Node.js 20 or newer; Debian 12's own nodejs is 18.
  node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
  if ((node_major < 20)); then
    echo "dev.sh release: the SBOM tool (cdxgen, scripts/sbom/package.json) needs Node.js 20" \
      "or newer; this machine has $(node --version 2>/dev/null || echo none). Install Node.js" \
      "20 (Debian 12's nodejs is 18) and run the release again." >&2
    return 1
  fi
  [[ -x $sbom_tool/node_modules/.bin/cdxgen ]] ||
    npm install --prefix "$sbom_tool" --no-save --no-audit --no-fund --loglevel=error >&2
  rm -rf "$tmp/$arch" "$tmp/$arch-root"
  mkdir -p "$tmp/$arch-root"
  skopeo copy --quiet --override-arch "$arch" "oci-archive:$archive" "dir:$tmp/$arch"
  for layer in $(python3 -c '
import json, sys
print(" ".join(l["digest"].split(":")[1] for l in json.load(open(sys.argv[1]))["layers"]))' \
      "$tmp/$arch/manifest.json"); do
    tar -xf "$tmp/$arch/$layer" -C "$tmp/$arch-root"
  done
  # FETCH_LICENSE=false: the licences come from the image's copyright files, not the network.
  FETCH_LICENSE=false CDXGEN_TELEMETRY=off \
    "$sbom_tool/node_modules/.bin/cdxgen" -t rootfs --no-recurse --project-name vipd \
    --project-version "$version" -o "$out" "$tmp/$arch-root" >"$tmp/cdxgen-$arch.log" 2>&1 ||
    { cat "$tmp/cdxgen-$arch.log" >&2; return 1; }
  python3 - "$out" "$arch" <<'PY'
import json, sys
bom = json.load(open(sys.argv[1]))
debs = [c for c in bom.get("components", []) if c.get("purl", "").startswith("pkg:deb/")]
if not any(c["name"] == "libc6" and c.get("licenses") for c in debs):
    sys.exit(f"{sys.argv[1]}: cdxgen found no libc6 with its licence among the image's Debian "
             f"packages ({len(debs)} found): the SBOM would be incomplete")
print(f"== SBOM linux/{sys.argv[2]}: {len(debs)} Debian packages", file=sys.stderr)
PY
}

# sign ARCHIVE REF SIGNATURES PUBKEY TMP: a simple-signing signature, for the identity REF, of
# the index and of each image manifest (a policy checks every manifest it copies), in
# SIGNATURES; the key's public half in PUBKEY. The key: VIPD_SIGNING_KEY (a fingerprint in the
# caller's GnuPG home); without it, a development key of this machine's (build-podman/gnupg),
# made once and said so, which verifies the same way but proves only that nothing changed since.
sign() {
  local archive=$1 ref=$2 signatures=$3 pubkey=$4 tmp=$5 key=${VIPD_SIGNING_KEY:-} manifest
  if [[ -z $key ]]; then
    export GNUPGHOME=$here/build-podman/gnupg
    if [[ ! -d $GNUPGHOME ]]; then
      mkdir -p -m 0700 "$GNUPGHOME"
      gpg --batch --quiet --passphrase '' --quick-gen-key \
        "vipd development release key (not the project's) <release@vipd.invalid>" ed25519 sign never
    fi
    key=$(gpg --batch --with-colons --list-secret-keys | awk -F: '$1 == "fpr" { print $10; exit }')
    echo "== VIPD_SIGNING_KEY is not set: signing with this machine's development key $key" >&2
  fi
  rm -rf "$tmp/signed"
  skopeo copy --quiet --all "oci-archive:$archive" "dir:$tmp/signed"
  (
    cd "$tmp/signed"
    skopeo standalone-sign manifest.json "$ref" "$key" -o signature-1
    for manifest in *.manifest.json; do
      skopeo standalone-sign "$manifest" "$ref" "$key" -o "${manifest%.manifest.json}.signature-1"
    done
    tar -cf "$signatures" -- *signature-1
  )
  gpg --batch --export "$key" >"$pubkey"
  # Signing started a gpg-agent for this GnuPG home; it would outlive the release.
  gpgconf --kill gpg-agent
}

# verify ARCHIVE (--key PUBKEY | --fingerprint FPR): the release's own check, before `podman load`
# or `skopeo copy` to a registry. The key is one the user trusts, never one that merely travels
# with the archive (an attacker who replaces the archive replaces that key too): --key names a
# key file holding exactly that one key (a file with several would accept a signature by any of
# them); --fingerprint pins the key beside the archive (vipd-release-key.gpg) to the published
# fingerprint. The version is the file's: vipd-VERSION.oci.tar must hold localhost/vipd:VERSION,
# signed for that name (a signed older release renamed is refused). Unpacks ARCHIVE (skopeo
# checks every manifest and layer against its digest), adds the signatures shipped beside it
# (vipd-VERSION.signatures.tar) and copies it under a containers-policy.json that rejects
# anything not signed by that key for that name. Exit 0: verified; 1: refused, with the reason;
# 2: usage.
verify() {
  local archive="" pubkey="" fingerprint="" ref tmp signatures path version keys found
  while (($#)); do
    case $1 in
      --key) pubkey=${2:-}; shift 2 ;;
      --fingerprint) fingerprint=${2:-}; shift 2 ;;
      -*) echo "verify: unknown option $1" >&2; return 2 ;;
      *) [[ -z $archive ]] || { echo "verify: one archive at a time" >&2; return 2; }
         archive=$1; shift ;;
    esac
  done
  if [[ -z $archive || ( -z $pubkey && -z $fingerprint ) || ( -n $pubkey && -n $fingerprint ) ]]; then
    echo "usage: $0 verify ARCHIVE (--key PUBKEY | --fingerprint FINGERPRINT)" >&2
    echo "  --key: the release key you obtained from the project, not the copy beside the archive" >&2
    echo "  --fingerprint: the published fingerprint the key beside the archive must have" >&2
    return 2
  fi
  for path in skopeo gpg python3; do
    command -v "$path" >/dev/null ||
      { echo "verify needs $path: apt-get install skopeo gnupg python3" >&2; return 1; }
  done
  [[ -n $pubkey ]] || pubkey=$(dirname "$archive")/vipd-release-key.gpg
  signatures=${archive%.oci.tar}.signatures.tar
  for path in "$archive" "$signatures" "$pubkey"; do
    [[ -f $path ]] || { echo "verify: $path does not exist" >&2; return 1; }
  done
  version=$(basename "$archive")
  version=${version#vipd-}
  version=${version%.oci.tar}
  if [[ $(basename "$archive") != "vipd-$version.oci.tar" || -z $version ]]; then
    echo "verify: REFUSED $archive: not named vipd-VERSION.oci.tar, so its version is unknown" >&2
    return 1
  fi
  pubkey=$(realpath "$pubkey")
  keys=$(gpg --batch --with-colons --show-keys "$pubkey" 2>/dev/null |
         awk -F: '$1 == "pub" { n++ } $1 == "fpr" && !seen[n]++ { print $10 }')
  if [[ $(wc -w <<<"$keys") -ne 1 ]]; then
    echo "verify: REFUSED: $pubkey holds $(wc -w <<<"$keys") keys ($(echo $keys)); a key file" \
      "must hold the one key you trust (skopeo accepts a signature by any key in it)" >&2
    return 1
  fi
  found=$keys
  if [[ -n $fingerprint && ${fingerprint// /} != "$found" ]]; then
    echo "verify: REFUSED: the key beside the archive is $found, not the fingerprint you" \
      "pinned (${fingerprint// /})" >&2
    return 1
  fi
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  ref=$(tar -xOf "$archive" index.json | python3 -c '
import json, sys
names = {m.get("annotations", {}).get("org.opencontainers.image.ref.name", "")
         for m in json.load(sys.stdin)["manifests"]}
names.discard("")
print(names.pop() if len(names) == 1 else "")') || true
  if [[ -z $ref ]]; then
    echo "verify: REFUSED $archive: its index.json names no single image" >&2
    return 1
  fi
  if [[ $ref != "localhost/vipd:$version" ]]; then
    echo "verify: REFUSED $archive: it is named for $version but holds $ref (a signed release" \
      "under another name)" >&2
    return 1
  fi
  if ! skopeo copy --quiet --all "oci-archive:$archive" "dir:$tmp/image" 2>"$tmp/err"; then
    echo "verify: REFUSED $archive: its content does not match its digests:" >&2
    cat "$tmp/err" >&2
    return 1
  fi
  tar -xf "$signatures" -C "$tmp/image" --wildcards '*signature-1'
  python3 - "$pubkey" "$ref" >"$tmp/policy.json" <<'PY'
import json, sys
print(json.dumps({"default": [{"type": "reject"}], "transports": {"dir": {"": [{
    "type": "signedBy", "keyType": "GPGKeys", "keyPath": sys.argv[1],
    "signedIdentity": {"type": "exactReference", "dockerReference": sys.argv[2]}}]}}}))
PY
  if ! skopeo --policy "$tmp/policy.json" copy --quiet --all "dir:$tmp/image" "dir:$tmp/checked" \
      2>"$tmp/err"; then
    echo "verify: REFUSED $archive: not signed for $ref by the key in $pubkey:" >&2
    cat "$tmp/err" >&2
    return 1
  fi
  local platforms
  platforms=$(python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
print(" ".join(i.get("platform", {}).get("os", "?") + "/" +
               i.get("platform", {}).get("architecture", "?")
               for i in m["manifests"]) if "manifests" in m else "one image")' \
    "$tmp/image/manifest.json")
  echo "verified: $archive is $ref ($platforms); every manifest and layer is signed by $found"
}

# publish REPOSITORY [--insecure]: the release of this tree's version (dist/, made by `release`
# when missing) pushed to an OCI registry as REPOSITORY:VERSION (the amd64 + arm64 index), signed
# with cosign, each architecture's CycloneDX SBOM attached to its image as a cosign attestation,
# and the Helm chart pushed beside it (oci://REGISTRY/PATH/charts/vipd:CHART_VERSION). The key
# pair: VIPD_COSIGN_KEY (a cosign private key file; its password in COSIGN_PASSWORD); without it a
# development key pair of this machine's (build-podman/cosign/), made once and said so. The public
# key is written as dist/cosign.pub. Keyless signing (Fulcio, Rekor) needs a network this project
# does not have: the signatures are not uploaded to a transparency log (--tlog-upload=false), and
# verifying them takes --insecure-ignore-tlog (docs/operations.md). --insecure: the registry
# speaks plain HTTP (a lab's loopback registry). The last line is the signed image's reference
# by digest.
publish() {
  local repo=${1:?usage: $0 publish REPOSITORY [--insecure]} insecure=${2:-} version dist archive
  local tools key tls=() cosign_flags=() helm_flags=() digest arch arch_digest tmp
  [[ -z $insecure || $insecure == --insecure ]] || { echo "usage: $0 publish REPOSITORY [--insecure]" >&2; return 2; }
  version=$("$here/scripts/version.sh")
  dist=$here/dist
  archive=$dist/vipd-$version.oci.tar
  [[ -f $archive ]] || release >/dev/null
  tools=$(build_tools | tail -n 1)
  if [[ -n $insecure ]]; then
    tls=(--dest-tls-verify=false)
    cosign_flags=(--allow-insecure-registry --allow-http-registry)
    helm_flags=(--plain-http)
  fi
  key=${VIPD_COSIGN_KEY:-}
  if [[ -z $key ]]; then
    key=$here/build-podman/cosign/cosign.key
    if [[ ! -f $key ]]; then
      mkdir -p -m 0700 "${key%/*}"
      (cd "${key%/*}" && COSIGN_PASSWORD='' "$tools/cosign" generate-key-pair >/dev/null)
    fi
    export COSIGN_PASSWORD=''
    echo "== VIPD_COSIGN_KEY is not set: signing with this machine's development key pair" \
      "(${key%/*}); it proves only that nothing changed since" >&2
  fi
  "$tools/cosign" public-key --key "$key" >"$dist/cosign.pub"
  skopeo copy --quiet --all "${tls[@]}" "oci-archive:$archive" "docker://$repo:$version"
  digest=sha256:$(skopeo inspect --raw "${tls[@]/dest-/}" "docker://$repo:$version" | sha256sum |
                  cut -d' ' -f1)
  "$tools/cosign" sign --yes --key "$key" --tlog-upload=false "${cosign_flags[@]}" \
    "$repo@$digest" >&2
  for arch in "${release_arches[@]}"; do
    arch_digest=$(skopeo inspect --raw "${tls[@]/dest-/}" "docker://$repo@$digest" | python3 -c '
import json, sys
print(next(m["digest"] for m in json.load(sys.stdin)["manifests"]
           if m["platform"]["architecture"] == sys.argv[1]))' "$arch")
    "$tools/cosign" attest --yes --key "$key" --tlog-upload=false --type cyclonedx \
      --predicate "$dist/vipd-$version.linux-$arch.sbom.cdx.json" "${cosign_flags[@]}" \
      "$repo@$arch_digest" >&2
  done
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  "$tools/helm" package "$here/charts/vipd" --destination "$tmp" >/dev/null
  "$tools/helm" push "$tmp"/vipd-*.tgz "oci://${repo%/*}/charts" "${helm_flags[@]}" >&2
  echo "== published $repo:$version, signed; the SBOMs attested; the chart in" \
    "oci://${repo%/*}/charts/vipd" >&2
  echo "$repo@$digest"
}

# Lets this machine run arm64 binaries through qemu-user (qemu-user-static registers with
# binfmt_misc's fix-binary flag, so containers need no qemu of their own). The registration
# lasts until a reboot: a fresh machine needs it once. tests/e2e/pods.py calls it too.
enable_qemu_user() {
  [[ -e /proc/sys/fs/binfmt_misc/register ]] ||
    mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
  [[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]] || update-binfmts --enable qemu-aarch64
}

# unit-arm64: the unit tests and fuzz corpus replays cross-compiled for arm64 and run through
# qemu-user, in the image's arm64 build stage (its cross compiler and arm64 libraries) with
# GoogleTest for arm64 added. The build is kept in build-arm64/. `test` compiles it in the
# background after the images (prebuild_image) and runs it as the unit_arm64 test, last. The
# Python suites need this machine's tools and are left out.
unit_arm64() {
  local only_build=0
  [[ ${1:-} != build ]] || only_build=1
  podman_config
  mkdir -p "$here/build-podman" "$here/build-arm64"
  flock -o "$here/build-podman/image.lock" "$0" image runtime arm64 >/dev/null
  enable_qemu_user
  # needs_exe_wrapper = false: binfmt_misc runs the arm64 tests (its fix-binary flag gives the
  # container the host's qemu), so meson runs them as it would natively. One build at a time in
  # build-arm64/: `test` compiles it in the background (prebuild_image) while the unit_arm64
  # test may already want it.
  flock -o "$here/build-podman/unit-arm64.lock" \
    podman run --rm --network host -v "$here:/src:ro" -v "$here/build-arm64:/build-arm64" \
    -e ONLY_BUILD=$only_build \
    "${podman_limits[@]/#/--ulimit=}" localhost/vipd-build:cache-arm64 sh -euc '
      apt-get update -q >/dev/null
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        libgtest-dev:arm64 libgmock-dev:arm64 >/dev/null
      printf "[properties]\nneeds_exe_wrapper = false\n" >/tmp/run.ini
      [ -f /build-arm64/build.ninja ] ||
        meson setup /build-arm64 /src --cross-file /cross.ini --cross-file /tmp/run.ini \
          -Doptimization=0 -Ddebug=false -Dunity=on -Dunity_size=4 -Dsystemdsystemunitdir=no
      ninja -C /build-arm64
      [ "$ONLY_BUILD" = 0 ] || exit 0
      suites="--no-suite e2e --no-suite container --no-suite cluster --no-suite soak --no-suite bench
        --no-suite monitoring --no-suite contrib --no-suite manifests --no-suite unit"
      # ttl_test sets IP_MINTTL and IPV6_MINHOPCOUNT (GTSM), which qemu-user does not emulate
      # (setsockopt fails with ENOPROTOOPT); the arm64 kernel has them as any other.
      meson test -C /build-arm64 --print-errorlogs --num-processes 2 --timeout-multiplier 4 \
        $(meson test -C /build-arm64 --list $suites 2>/dev/null | awk "{ print \$NF }" |
          grep -vx ttl_test)'
}

# --- the pinned tools of the real-cluster lab -------------------------------------------------
# tools/go.mod pins etcd, the Kubernetes programs (one multicall binary, tools/kube), helm and
# cosign. They are built with -trimpath into VIPD_TOOLS_CACHE (default /var/cache/vipd-tools),
# in a folder named after a hash of what decides their bytes (go.mod, go.sum, the multicall
# source, the pause image's maker, the Go version, the build steps below), so a second call costs a
# stat and a clone never holds them. Debian's
# containerd (with its runc shim) and runc are linked in beside them: kubelet 1.34 supports
# containerd 1.6. The last line printed is the folder. Nothing is downloaded at run time, only
# here (the Go module proxy).
tool_names=(etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl
            kubeadm helm cosign containerd containerd-shim-runc-v2 runc ctr pause pause.oci.tar)
# The lab kubelets' sandbox image (scripts/pause_image.py): no registry can be reached here.
pause_image=localhost/vipd-lab/pause:3.10

tools_dir() {
  local key
  key=$(cat "$here/tools/go.mod" "$here/tools/go.sum" "$here/tools/kube/main.go" \
          "$here/scripts/pause_image.py" <(go version) <(declare -f build_tools) |
        sha256sum | cut -c1-16)
  echo "${VIPD_TOOLS_CACHE:-/var/cache/vipd-tools}/$key"
}

build_tools() {
  [[ -x /usr/local/go/bin/go ]] && PATH=$PATH:/usr/local/go/bin  # go.dev's Go, as these machines have it
  command -v go >/dev/null ||
    { echo "dev.sh tools: needs Go 1.25 or newer (go.dev's, or Debian's golang-1.25)" >&2; return 1; }
  local dir tmp name missing=()
  dir=$(tools_dir)
  for name in "${tool_names[@]}"; do
    [[ -e $dir/$name ]] || missing+=("$name")
  done
  if ((${#missing[@]})); then
    echo "== building the pinned tools into $dir (missing: ${missing[*]})" >&2
    mkdir -p "${dir%/*}"
    tmp=$(mktemp -d "${dir%/*}/.build.XXXXXX")
    trap 'rm -rf "$tmp"' RETURN
    local started=$SECONDS
    (
      cd "$here/tools"
      export GOFLAGS="-trimpath -mod=readonly" CGO_ENABLED=0
      # The version Kubernetes' own build stamps in (hack/lib/version.sh): without it every
      # program says v0.0.0-master, which kubeadm refuses to deploy and nodes report.
      local version pkg flags=()
      version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
      for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        flags+=("-X $pkg.gitVersion=$version" "-X $pkg.gitMajor=$(cut -d. -f1 <<<"${version#v}")"
                "-X $pkg.gitMinor=$(cut -d. -f2 <<<"$version")" "-X $pkg.gitTreeState=clean"
                "-X $pkg.buildDate=1970-01-01T00:00:00Z")
      done
      go build -ldflags "${flags[*]}" -o "$tmp/kube" ./kube
      go build -o "$tmp/etcd" go.etcd.io/etcd/server/v3
      go build -o "$tmp/helm" helm.sh/helm/v3/cmd/helm
      go build -o "$tmp/cosign" github.com/sigstore/cosign/v2/cmd/cosign
      # Kubernetes' own pause, from the pinned module's source, static as its images ship it.
      gcc -Os -static -DVERSION=vipd-lab -o "$tmp/pause" \
        "$(go list -m -f '{{.Dir}}' k8s.io/kubernetes)/build/pause/linux/pause.c"
    ) >&2
    python3 "$here/scripts/pause_image.py" "$tmp/pause" "$tmp/pause.oci.tar" "$pause_image"
    for name in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl kubeadm; do
      ln -s kube "$tmp/$name"
    done
    for name in containerd containerd-shim-runc-v2 runc ctr; do
      ln -s "/usr/bin/$name" "$tmp/$name"
    done
    rm -rf "$dir"
    mv "$tmp" "$dir"
    echo "== built the pinned tools in $((SECONDS - started)) s" >&2
  fi
  echo "$dir"
}

case ${1:-} in
  demo)
    install_packages
    build
    if [[ ${2:-} == --cluster ]]; then
      # The real-cluster lab at day 0 (tests/e2e/cluster.py): the pinned tools, this tree's
      # image (this machine's architecture only: a demo needs no release) in three kubelets,
      # vipd as their static pods, kubectl through the VIP.
      build_tools >/dev/null
      demo_image=$here/build-podman/demo-image.oci.tar
      mkdir -p "$here/build-podman"
      rm -f "$demo_image"
      podman save --format oci-archive -o "$demo_image" "$(build_image runtime)"
      CI=true VIPD_BUILD_DIR=$build_dir VIPD_IMAGE_ARCHIVE=$demo_image \
        python3 "$here/tests/e2e/test_cluster_day0.py"
    else
      VIPD_BUILD_DIR=$build_dir python3 "$here/tests/e2e/demo.py"
    fi
    ;;
  test)
    [[ ${VIPD_SANITIZE:-1} == 0 ]] || use_sanitizers
    install_packages
    build_programs
    build_rest
    prebuild_image
    prebuild_tools
    run_tests
    ;;
  build)
    install_packages
    build
    ;;
  unit)
    # No package install: a developer's loop, seconds not minutes. The suites that need root,
    # podman or minutes (e2e, container, soak, bench) are left out.
    shift
    meson compile -C "$build_dir"
    meson test -C "$build_dir" --print-errorlogs --no-suite e2e --no-suite container --no-suite cluster \
      --no-suite soak --no-suite bench "$@"
    ;;
  image)
    install_packages
    build_image "${2:-runtime}" "${3:-$native_arch}"
    ;;
  release)
    install_packages
    release
    ;;
  verify)
    shift
    verify "$@"
    ;;
  publish)
    shift
    install_packages
    publish "$@"
    ;;
  unit-arm64)
    [[ ${2:-build} == build ]] || { echo "usage: $0 unit-arm64 [build]" >&2; exit 2; }
    install_packages
    unit_arm64 "${2:-}"
    ;;
  qemu-user)
    enable_qemu_user
    ;;
  tools)
    install_packages
    build_tools
    ;;
  *)
    echo "usage: $0 demo|test|build|unit|image|release|verify|publish|unit-arm64|qemu-user|tools" >&2
    exit 2
    ;;
esac
