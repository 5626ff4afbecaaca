#!/usr/bin/env python3
"""e2e: the container image, built and run the way a user does (root; podman with runc; no
registry: without one, scripts/dev.sh makes its Debian base with mmdebstrap).

Asserts:
- `scripts/dev.sh release` builds localhost/vipd:VERSION, VERSION being what the tree's own
  `vipd --version` prints, and writes dist/vipd-VERSION.oci.tar with SHA256SUMS that
  `sha256sum -c` accepts;
- a second `scripts/dev.sh image` with nothing changed takes every step from the cache and gives
  the same image (its time is printed);
- the archive loads with `podman load` into an empty store under that name; in it
  `podman run --rm IMAGE --version` prints `vipd VERSION`, vipctl is there and prints the same
  version, and there is no shell (`podman run --entrypoint /bin/sh` fails);
- the image holds exactly vipd, vipctl, the shared libraries `ldd` names for that vipd (each by
  its soname, the loader included), vipd's LICENSE and the Debian copyright file of each
  library's package, and the /lib and /lib64 links of merged /usr: nothing else, no /etc;
- containerd (a private instance) imports the archive with `ctr -n k8s.io images import` under
  the same name, where a kubelet (and crictl) finds it;
- its size is at most 20 MB (the goal); the slim variant (`scripts/dev.sh image slim`, the same
  binaries on a debian:12-slim base) runs too, and both sizes are printed.
"""
import os
import re
import subprocess
import tarfile

import lab
import pods

SIZE_GOAL_BYTES = 20_000_000


def mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def image_files(store: pods.Podman, ref: str, into: str) -> dict[str, tarfile.TarInfo]:
    """Every entry of ref's filesystem (`podman export` of a created container), unpacked into
    `into` as well."""
    os.makedirs(into, exist_ok=True)
    cid = store.run("create", ref).stdout.strip()
    tar = os.path.join(into, "image.tar")
    store.run("export", "-o", tar, cid)
    store.run("rm", cid)
    with tarfile.open(tar) as t:
        entries = {m.name.lstrip("./").rstrip("/"): m for m in t.getmembers()}
        t.extractall(os.path.join(into, "root"))
    return {k: v for k, v in entries.items() if k}


def needed_libraries(binary: str) -> dict[str, str]:
    """soname -> the host's path, for every library ldd says binary loads (loader included)."""
    out = lab.run(["ldd", binary]).stdout
    libs = {}
    for line in out.splitlines():
        words = line.split()
        if "=>" in words and len(words) > 2 and words[2].startswith("/"):
            libs[words[0]] = words[2]
        elif words and words[0].startswith("/"):
            libs[os.path.basename(words[0])] = words[0]
    lab.check("not found" not in out, f"ldd of the image's vipd resolves everything:\n{out}")
    return libs


def package_of(path: str) -> str:
    for candidate in (path, os.path.realpath(path)):
        p = lab.run(["dpkg", "-S", candidate], check=False)
        if p.returncode == 0:
            return p.stdout.split(":", 1)[0]
    raise AssertionError(f"no Debian package owns {path}")


def check_contents(entries: dict[str, tarfile.TarInfo], root: str) -> None:
    libs = needed_libraries(os.path.join(root, "usr/local/bin/vipd"))
    expected = {"usr/local/bin/vipd", "usr/local/bin/vipctl", "usr/share/doc/vipd/LICENSE"}
    for soname, path in libs.items():
        loader = soname.startswith("ld-linux")
        expected.add(f"usr/lib64/{soname}" if loader else f"usr/lib/x86_64-linux-gnu/{soname}")
        expected.add(f"usr/share/doc/{package_of(path)}/copyright")
    files = {name for name, e in entries.items() if e.isfile()}
    links = {name: e.linkname for name, e in entries.items() if e.issym()}
    others = [name for name, e in entries.items() if not (e.isfile() or e.issym() or e.isdir())]
    lab.log(f"image files: {sorted(files)}")
    lab.check(files == expected, f"the image holds exactly vipd, vipctl, their libraries and "
              f"licences: missing {sorted(expected - files)}, extra {sorted(files - expected)}")
    lab.check(links == {"lib": "usr/lib", "lib64": "usr/lib64"},
              f"the only links are merged /usr's: {links}")
    lab.check(not others, f"no device, pipe or other entry: {others}")
    lab.check(not any(n == "etc" or n.startswith("etc/") for n in entries),
              "nothing in /etc (no passwd, no apt sources)")
    lab.check(not any(re.search(r"(^|/)(sh|bash|dash|busybox|apt|apt-get|dpkg)$", n)
                      for n in entries), "no shell, no package manager")


def check_containerd(L: lab.Lab, archive: str, ref: str) -> None:
    """The archive into a containerd of the test's own (root, state and socket in the lab dir),
    in the namespace the CRI plugin serves a kubelet from."""
    base = L.path("containerd")
    os.makedirs(base)
    sock = os.path.join(base, "containerd.sock")
    conf = os.path.join(base, "config.toml")
    with open(conf, "w") as f:
        f.write(f'version = 2\nroot = "{base}/root"\nstate = "{base}/state"\n'
                f'[grpc]\n  address = "{sock}"\n')
    L.start(None, "containerd", ["containerd", "--config", conf])
    lab.wait_until(lambda: os.path.exists(sock), 15, 0.05, "containerd's socket")
    ctr = ["ctr", "--address", sock, "--namespace", "k8s.io"]
    out = lab.run(ctr + ["images", "import", archive], timeout=120).stdout
    lab.log(f"ctr images import: {out.strip()}")
    names = lab.run(ctr + ["images", "ls", "-q"]).stdout.split()
    lab.check(ref in names, f"containerd knows the image as {ref}: {names}")


def uncached_steps(build_log: str) -> list[str]:
    """The steps of a `podman build` log (FROM aside) that did not come from the cache: buildah
    follows each step it took from the cache with "--> Using cache ID"."""
    ran, step = [], None
    for line in build_log.splitlines():
        m = re.match(r"^(?:\[\d+/\d+\] )?STEP \d+/\d+: (.*)", line)
        if m:
            if step:
                ran.append(step)
            step = None if m.group(1).startswith("FROM ") else m.group(1)
        elif line.startswith("-->") and step:
            if not line.startswith("--> Using cache "):
                ran.append(step)
            step = None
    return ran + ([step] if step else [])


def test() -> None:
    with lab.Lab("image") as L:
        version = lab.run([lab.vipd_binary(), "--version"]).stdout.split()[-1]
        ref = f"localhost/vipd:{version}"

        archive, release_s, release_log = pods.dev_sh("release")
        built = uncached_steps(release_log)
        lab.check(archive == os.path.join(pods.SOURCE_DIR, "dist", f"vipd-{version}.oci.tar"),
                  f"release writes dist/vipd-{version}.oci.tar, said {archive!r}")
        image_id = pods.machine_podman("image", "inspect", "--format", "{{.Id}}", ref).stdout
        sums = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=os.path.dirname(archive),
                              capture_output=True, text=True, timeout=60)
        lab.check(sums.returncode == 0 and f"vipd-{version}.oci.tar: OK" in sums.stdout,
                  f"dist/SHA256SUMS verifies: {sums.stdout}{sums.stderr}")

        warm_ref, warm_s, warm_log = pods.image()
        lab.check(warm_ref == ref, f"scripts/dev.sh image prints {ref} last, not {warm_ref!r}")
        ran = uncached_steps(warm_log)
        lab.check(not ran, f"every step of the warm build came from the cache, but these ran: "
                  f"{ran}\n{warm_log}")
        again = pods.machine_podman("image", "inspect", "--format", "{{.Id}}", ref).stdout
        lab.check(again == image_id, "the warm build gives the same image")

        store = pods.Podman(L, None, "store")
        store.run("load", "--quiet", "-i", archive)
        names = store.run("images", "--format", "{{.Repository}}:{{.Tag}}").stdout.split()
        lab.check(names == [ref], f"the archive loads as {ref}: {names}")
        out = store.run("run", "--rm", ref, "--version").stdout.strip()
        lab.check(out == f"vipd {version}", f"`podman run --rm {ref} --version`: {out!r}")
        out = store.run("run", "--rm", "--entrypoint", "vipctl", ref, "--version").stdout.strip()
        lab.check(out == f"vipctl {version}", f"vipctl --version in the image: {out!r}")
        shell = store.run("run", "--rm", "--entrypoint", "/bin/sh", ref, "-c", "true",
                          check=False)
        lab.check(shell.returncode != 0, "the image has no shell")

        check_containerd(L, archive, ref)

        entries = image_files(store, ref, L.path("export"))
        check_contents(entries, L.path("export", "root"))

        size = int(store.run("image", "inspect", "--format", "{{.Size}}", ref).stdout)
        slim_ref, slim_s, _ = pods.image("slim")
        slim_size = int(pods.machine_podman("image", "inspect", "--format", "{{.Size}}",
                                            slim_ref).stdout)
        out = pods.machine_podman("run", "--rm", slim_ref, "--version").stdout.strip()
        lab.check(out == f"vipd {version}", f"the slim variant runs: {out!r}")
        print(f"image {ref}: {mb(size)} ({size} bytes); slim variant {slim_ref}: "
              f"{mb(slim_size)} ({slim_size / size:.1f}x); archive "
              f"{mb(os.path.getsize(archive))}")
        print(f"build: `scripts/dev.sh release` {release_s:.1f}s ({len(built)} steps built, "
              f"the others from the cache: {'cold' if len(built) >= 4 else 'warm'}), then "
              f"`scripts/dev.sh image` with nothing changed {warm_s:.1f}s; slim {slim_s:.1f}s")
        lab.check(size <= SIZE_GOAL_BYTES, f"the image is at most {mb(SIZE_GOAL_BYTES)}: "
                  f"{mb(size)}")


if __name__ == "__main__":
    pods.main(test, ["mmdebstrap", "sha256sum", "ldd", "dpkg", "containerd", "ctr"])
