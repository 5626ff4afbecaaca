#!/usr/bin/env python3
"""The Containerfile's stages name what the binaries need, and nothing else. No container engine
is needed: the check reads the Containerfile and the built binaries (tests/e2e/
test_image.py builds the image and checks what is in it).

Asserts:
- every shared library of $VIPD_BUILD_DIR/daemon/vipd and vipctl (`ldd`) resolves, and maps to a
  Debian package (`dpkg -S`);
- three stages, their bases build arguments defaulting to debian:12 (build), debian:12-slim
  (slim) and scratch (runtime, the last one, what `podman build` makes by default);
- the slim stage installs exactly those packages, less the ones debian:12-slim already has
  (BASE_PACKAGES below): none missing, nothing else (no -dev package, no compiler);
- the build stage runs on the build machine's architecture (it cross-compiles for another) and
  installs only packages that scripts/dev.sh installs too (the target architecture's, for a
  cross build; the compiler is a variable), so the two lists cannot drift apart, and none of
  the test-only ones; it builds with -Dtests=false, stripped,
  with the version passed in, and assembles the runtime filesystem with scripts/image-rootfs.sh
  from where meson installs the binaries;
- every file the slim stage copies out of the build stage is where `meson install --destdir
  /out` puts it (`meson introspect --installed` of the build directory); the runtime stage copies
  only the assembled filesystem; both run vipd as their entrypoint, as root.
The build host is Debian 12 like the stages, so its library packages are the image's.
Needs ldd and dpkg (missing: skip outside CI, fail with CI=true) and the built binaries.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil

from checks import BUILD_DIR, SOURCE_DIR, Checks, main, missing, run

CONTAINERFILE = os.path.join(SOURCE_DIR, "Containerfile")
DEV_SH = os.path.join(SOURCE_DIR, "scripts", "dev.sh")
BINARIES = ["vipd", "vipctl"]
DESTDIR = "/out"  # the build stage's `meson install --destdir`

# Packages debian:12-slim ships (priority required, or apt's own dependencies), so the runtime
# stage must not install them again: the C library (and its loader), and GCC's C++ runtime.
BASE_PACKAGES = {"libc6", "libgcc-s1", "libstdc++6"}

# scripts/dev.sh packages that only the tests use: never in the image's build stage.
TEST_ONLY = {"libgtest-dev", "libgmock-dev", "openssl", "util-linux", "iproute2", "procps",
             "tcpdump", "bird2", "frr", "gobgpd", "exabgp", "python3-yaml", "kubernetes-client"}

COMPILERS = {"g++", "gcc", "clang", "cpp", "meson", "ninja-build", "pkg-config", "make"}


def libraries(binary: str) -> tuple[list[str], list[str]]:
    """The resolved shared-library paths of binary, and the names ldd could not resolve."""
    p = run(["ldd", binary])
    paths, unresolved = [], []
    for line in p.stdout.splitlines():
        line = line.strip()
        if "=> not found" in line:
            unresolved.append(line.split()[0])
        elif "=>" in line:
            target = line.split("=>", 1)[1].split("(")[0].strip()
            if target:  # linux-vdso has none: it is the kernel's
                paths.append(target)
        elif line.startswith("/"):  # the dynamic loader
            paths.append(line.split()[0])
    return paths, unresolved


def package_of(path: str) -> str | None:
    """The Debian package that owns path, trying the spellings merged /usr allows."""
    candidates = []
    for p in (path, os.path.realpath(path)):
        candidates += [p, p[4:] if p.startswith("/usr/") else "/usr" + p]
    for candidate in dict.fromkeys(candidates):
        p = run(["dpkg", "-S", candidate])
        for line in p.stdout.splitlines():
            if p.returncode == 0 and not line.startswith("diversion"):
                return line.split(":", 1)[0]
    return None


def stages(text: str) -> tuple[list[str], list[list[str]]]:
    """The Containerfile's instructions before the first FROM (global ARGs), and per stage;
    continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", "\n".join(l for l in text.splitlines()
                                            if not l.lstrip().startswith("#")))
    head: list[str] = []
    out: list[list[str]] = []
    for line in joined.splitlines():
        line = " ".join(line.split())
        if not line:
            continue
        if line.upper().startswith("FROM "):
            out.append([])
        (out[-1] if out else head).append(line)
    return head, out


def apt_installs(stage: list[str]) -> list[str]:
    """Package names given to `apt-get install` in the stage's RUN instructions."""
    packages = []
    for line in stage:
        if not line.upper().startswith("RUN "):
            continue
        words = shlex.split(line[4:])
        for i in range(len(words) - 1):
            if words[i] == "apt-get" and "install" in words[i + 1:i + 4]:
                for word in words[words.index("install", i) + 1:]:
                    last = word.endswith(";")
                    word = word.rstrip(";")
                    if word in ("&&", "||", "|"):
                        break
                    # name:$arch is the target architecture's package; a bare variable is the
                    # compiler for it (g++, or a cross g++), which only the build stage needs.
                    if word and not word.startswith(("-", "$")):
                        packages.append(word.split(":")[0])
                    if last:
                        break
    return packages


def dev_sh_packages() -> set[str]:
    with open(DEV_SH) as f:
        body = re.search(r"^packages=\((.*?)^\)", f.read(), re.S | re.M)
    assert body, f"{DEV_SH}: no packages=( ... ) list"
    words = " ".join(l.split("#", 1)[0] for l in body.group(1).splitlines()).split()
    return {w for w in words if re.fullmatch(r"[a-z0-9][a-z0-9.+-]+", w)}


def test(c: Checks) -> None:
    for tool in ("ldd", "dpkg"):
        if not shutil.which(tool):
            missing(f"{tool} is not installed")

    needed: dict[str, set[str]] = {}  # package -> the libraries it provides to us
    for name in BINARIES:
        binary = os.path.join(BUILD_DIR, "daemon", name)
        if not c.expect(os.access(binary, os.X_OK), f"{binary} is built"):
            continue
        paths, unresolved = libraries(binary)
        c.equal(unresolved, [], f"{name}: every shared library resolves")
        for path in paths:
            package = package_of(path)
            if c.expect(package is not None, f"{name}: {path} belongs to a Debian package"):
                needed.setdefault(package, set()).add(os.path.basename(path))
    for package, libs in sorted(needed.items()):
        print(f"  {package}: {', '.join(sorted(libs))}")

    with open(CONTAINERFILE) as f:
        head, all_stages = stages(f.read())
    if not c.equal(len(all_stages), 3, "Containerfile: build, slim and runtime stages"):
        return
    build, slim, runtime = all_stages
    c.equal(head, ["ARG BUILD_IMAGE=docker.io/library/debian:12",
                   "ARG SLIM_IMAGE=docker.io/library/debian:12-slim",
                   "ARG RUNTIME_IMAGE=scratch"],
            "Containerfile: the base images are build arguments with the upstream defaults")
    c.equal(build[0], "FROM --platform=$BUILDPLATFORM ${BUILD_IMAGE} AS build",
            "build stage: from BUILD_IMAGE, on the build machine's architecture")
    c.equal(slim[0], "FROM ${SLIM_IMAGE} AS slim", "slim stage: from SLIM_IMAGE")
    c.equal(runtime[0], "FROM ${RUNTIME_IMAGE} AS runtime", "runtime stage: from RUNTIME_IMAGE")

    installed = apt_installs(slim)
    expected = set(needed) - BASE_PACKAGES
    # A sanitizer build (CI's: -Db_sanitize=address,undefined) links the sanitizer runtimes; the
    # image is built without them, so they are not part of what it needs.
    sanitizer_runtimes = {p for p in expected if p.startswith(("libasan", "libubsan", "liblsan"))}
    if sanitizer_runtimes:
        print(f"  (sanitizer build: not expecting {', '.join(sorted(sanitizer_runtimes))} in the image)")
    expected -= sanitizer_runtimes
    c.equal(sorted(expected - set(installed)), [], "slim stage: no needed package missing")
    c.equal(sorted(set(installed) - expected), [], "slim stage: no package beyond the needed")
    c.equal(len(installed), len(set(installed)), "slim stage: each package named once")
    c.expect(not any(p.endswith("-dev") or p in COMPILERS for p in installed),
             "slim stage: no -dev package, no compiler")
    c.expect(not BASE_PACKAGES & set(installed), "slim stage: nothing the base already has")

    build_packages = set(apt_installs(build))
    c.expect(bool(build_packages), "build stage: installs its build dependencies")
    c.equal(sorted(build_packages - dev_sh_packages()), [],
            "build stage: every package is also in scripts/dev.sh")
    c.equal(sorted(build_packages & TEST_ONLY), [], "build stage: no test-only package")
    setup = [l for l in build if "meson setup" in l]
    c.expect(len(setup) == 1 and all(f in setup[0] for f in
                                     ("-Dtests=false", "-Dstrip=true", "-Dvipd_version=${VERSION}")),
             "build stage: meson -Dtests=false -Dstrip=true -Dvipd_version=${VERSION}")
    c.expect("ARG VERSION=" in build, "build stage: VERSION is a build argument")

    p = run(["meson", "introspect", BUILD_DIR, "--installed"])
    installed_files = set(json.loads(p.stdout).values()) if p.returncode == 0 else set()
    c.expect(bool(installed_files), f"meson introspect {BUILD_DIR} --installed lists files")
    copies = [l.split()[2:-1] for l in slim if l.startswith("COPY --from=build ")]
    sources = [s for sources in copies for s in sources]
    c.equal(sorted(os.path.basename(s) for s in sources), sorted(BINARIES),
            "slim stage: copies vipd and vipctl from the build stage")
    bindirs = set()
    for source in sources:
        c.expect(source.startswith(DESTDIR + "/") and source[len(DESTDIR):] in installed_files,
                 f"slim stage: {source} is where meson installs it")
        bindirs.add(os.path.dirname(source))
    rootfs = [l for l in build if "scripts/image-rootfs.sh" in l]
    c.expect(len(bindirs) == 1 and len(rootfs) == 1 and
             f"/src/scripts/image-rootfs.sh {bindirs.pop() if bindirs else '?'} /rootfs" in rootfs[0],
             "build stage: image-rootfs.sh assembles /rootfs from where meson installs the binaries")
    c.equal([l for l in runtime if l.startswith(("COPY", "ADD", "RUN"))],
            ["COPY --from=build /rootfs/ /"], "runtime stage: only the assembled filesystem")
    for name, stage in (("slim", slim), ("runtime", runtime)):
        c.expect("USER 0" in stage, f"{name} stage: USER 0")
        c.equal([l for l in stage if l.startswith("ENTRYPOINT")], ['ENTRYPOINT ["vipd"]'],
                f"{name} stage: ENTRYPOINT vipd")


if __name__ == "__main__":
    main(test)
