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
  its soname, the loader included), vipd's LICENSE, the Debian copyright file and dpkg record
  (/var/lib/dpkg/status.d) of each library's package, /etc/os-release and /etc/debian_version,
  and the /lib and /lib64 links of merged /usr: nothing else (no passwd, no apt sources);
- containerd (a private instance) imports the archive with `ctr -n k8s.io images import` under
  the same name, where a kubelet (and crictl) finds it;
- its size is at most 20 MB (the goal); the slim variant (`scripts/dev.sh image slim`, the same
  binaries on a debian:12-slim base) runs too, and both sizes are printed.
Release (issue 30), from the same `scripts/dev.sh release`:
- the archive is one OCI image index with a linux/amd64 and a linux/arm64 image, each at most
  20 MB; the arm64 one holds aarch64 vipd and vipctl, the aarch64 loader and libraries;
- each image's SBOM (vipd-VERSION.linux-ARCH.sbom.cdx.json, CycloneDX) lists exactly the
  Debian packages whose records the image holds (/var/lib/dpkg/status.d), at their versions and
  architecture, each with its licences, and their source packages; those are exactly the
  packages whose copyright files the image holds;
- the release leaves no gpg-agent running;
- `scripts/dev.sh verify` passes on the archive with the release key named (--key) or pinned
  (--fingerprint); it refuses to run with neither (exit 2: the key beside an archive proves
  nothing), a copy with one byte of a layer changed, a copy whose image manifests lost their
  signatures, the archive checked against another key, a key file holding the release key and
  another (skopeo would accept either), a pinned fingerprint the key beside it does not have, and
  the signed archive renamed to another version.
"""
import gzip
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
import urllib.parse

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
    expected = {"usr/local/bin/vipd", "usr/local/bin/vipctl", "usr/share/doc/vipd/LICENSE",
                "etc/os-release", "etc/debian_version"}
    for soname, path in libs.items():
        loader = soname.startswith("ld-linux")
        expected.add(f"usr/lib64/{soname}" if loader else f"usr/lib/x86_64-linux-gnu/{soname}")
        expected.add(f"usr/share/doc/{package_of(path)}/copyright")
        expected.add(f"var/lib/dpkg/status.d/{package_of(path)}")
    files = {name for name, e in entries.items() if e.isfile()}
    links = {name: e.linkname for name, e in entries.items() if e.issym()}
    others = [name for name, e in entries.items() if not (e.isfile() or e.issym() or e.isdir())]
    lab.log(f"image files: {sorted(files)}")
    lab.check(files == expected, f"the image holds exactly vipd, vipctl, their libraries and "
              f"licences: missing {sorted(expected - files)}, extra {sorted(files - expected)}")
    lab.check(links == {"lib": "usr/lib", "lib64": "usr/lib64"},
              f"the only links are merged /usr's: {links}")
    lab.check(not others, f"no device, pipe or other entry: {others}")
    lab.check({n for n in entries if n == "etc" or n.startswith("etc/")} <= {
              "etc", "etc/os-release", "etc/debian_version"},
              "nothing in /etc but the distribution's name (no passwd, no apt sources)")
    # Files and links only: /var/lib/dpkg holds the package records, not dpkg.
    lab.check(not any(re.search(r"(^|/)(sh|bash|dash|busybox|apt|apt-get|dpkg)$", n)
                      for n, e in entries.items() if not e.isdir()),
              "no shell, no package manager")


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


def archive_images(archive: str) -> dict[str, dict[str, bytes]]:
    """arch -> {path: content} of each image's files in an OCI archive (layers applied in order;
    the runtime image's one layer)."""
    with tarfile.open(archive) as t:
        def blob(digest: str) -> bytes:
            return t.extractfile(f"blobs/sha256/{digest.split(':')[1]}").read()
        index = json.loads(t.extractfile("index.json").read())
        lists = [json.loads(blob(m["digest"])) for m in index["manifests"]]
        lab.check(len(lists) == 1 and lists[0]["mediaType"].endswith("image.index.v1+json"),
                  f"the archive holds one image index: {index}")
        images = {}
        for m in lists[0]["manifests"]:
            files = {}
            for layer in json.loads(blob(m["digest"]))["layers"]:
                data = blob(layer["digest"])
                if data[:2] == b"\x1f\x8b":
                    data = gzip.decompress(data)
                with tarfile.open(fileobj=io.BytesIO(data)) as lt:
                    for e in lt.getmembers():
                        if e.isfile():
                            files[e.name.lstrip("./")] = lt.extractfile(e).read()
            images[m["platform"]["architecture"]] = files
    return images


def elf_machine(data: bytes) -> int:
    return int.from_bytes(data[18:20], "little") if data[:4] == b"\x7fELF" else -1


def dpkg_records(files: dict[str, bytes]) -> dict[str, dict[str, str]]:
    records = {}
    for path, data in files.items():
        if path.startswith("var/lib/dpkg/status.d/"):
            fields = dict(line.split(": ", 1) for line in data.decode().splitlines()
                          if ": " in line)
            records[fields["Package"]] = fields
    return records


def check_sbom(sbom_path: str, arch: str, files: dict[str, bytes]) -> None:
    """The SBOM against the image's own files: its Debian packages are the image's dpkg
    records, which are the packages whose copyright files (and so libraries) the image holds."""
    records = dpkg_records(files)
    licensed = {p.split("/")[3] for p in files
                if p.startswith("usr/share/doc/") and p.endswith("/copyright")}
    lab.check(set(records) == licensed, f"linux/{arch}: a dpkg record for each package whose "
              f"copyright file is in the image: {sorted(set(records) ^ licensed)}")
    lab.check(all(r["Architecture"] in (arch, "all") for r in records.values()),
              f"linux/{arch}: the records are {arch}'s: "
              f"{sorted((r['Package'], r['Architecture']) for r in records.values())}")
    with open(sbom_path) as f:
        bom = json.load(f)
    lab.check(bom.get("bomFormat") == "CycloneDX", f"{sbom_path} is CycloneDX")
    binaries, sources, unlicensed = {}, {}, []
    for c in bom.get("components", []):
        m = re.match(r"pkg:deb/[^/]+/([^@]+)@([^?#]+)(?:\?(.*))?", c.get("purl", ""))
        if not m:
            continue
        qualifiers = dict(q.split("=", 1) for q in (m.group(3) or "").split("&") if "=" in q)
        name = urllib.parse.unquote(m.group(1))
        # cdxgen lists each binary package's source package too, tagged "source" (what
        # vulnerability databases track).
        if "source" in c.get("tags", []):
            sources[name] = c.get("version")
        else:
            binaries[name] = (c.get("version"), qualifiers.get("arch"))
            if not c.get("licenses"):
                unlicensed.append(name)
    want = {name: (r["Version"], r["Architecture"]) for name, r in records.items()}
    lab.check(binaries == want, f"linux/{arch}: the SBOM lists the image's Debian packages at "
              f"their versions and architecture:\n  SBOM {sorted(binaries.items())}\n  image "
              f"{sorted(want.items())}")
    # dpkg's Source field: empty (the package's own name and version), "name", or
    # "name (version)" when the source version differs from the binary's.
    want_sources = {}
    for name, r in records.items():
        m = re.fullmatch(r"(\S+)(?: \((.+)\))?", r.get("Source", "").strip() or name)
        want_sources[m.group(1)] = m.group(2) or r["Version"]
    lab.check(set(sources) <= set(want_sources) and
              all(sources[n] == want_sources[n] for n in sources),
              f"linux/{arch}: the SBOM's source packages are the image's packages' sources: "
              f"{sorted(sources.items())} vs {sorted(want_sources.items())}")
    lab.check(not unlicensed, f"linux/{arch}: every Debian package has its licences in the "
              f"SBOM (from its copyright file): missing for {unlicensed}")
    lab.log(f"SBOM linux/{arch}: {len(binaries)} Debian packages with their licences, as the "
            f"image's records say; {len(sources)} source packages")


def check_release(L: lab.Lab, archive: str, version: str) -> None:
    dist = os.path.dirname(archive)
    images = archive_images(archive)
    lab.check(sorted(images) == ["amd64", "arm64"],
              f"the archive's index has linux/amd64 and linux/arm64: {sorted(images)}")
    aarch64 = 183  # EM_AARCH64
    arm64 = images["arm64"]
    elves = {p: elf_machine(d) for p, d in arm64.items() if d[:4] == b"\x7fELF"}
    lab.check(elves and all(m == aarch64 for m in elves.values()) and
              {"usr/local/bin/vipd", "usr/local/bin/vipctl", "usr/lib/ld-linux-aarch64.so.1"}
              <= set(elves), f"the arm64 image's binaries are all aarch64: {elves}")
    for arch, files in images.items():
        size = sum(len(d) for d in files.values())
        lab.log(f"linux/{arch}: {len(files)} files, {mb(size)}")
        lab.check(size <= SIZE_GOAL_BYTES, f"linux/{arch} image files: {mb(size)}")
        check_sbom(os.path.join(dist, f"vipd-{version}.linux-{arch}.sbom.cdx.json"), arch, files)

    release_key = os.path.join(dist, "vipd-release-key.gpg")

    def verify(path: str, *key: str) -> subprocess.CompletedProcess:
        return subprocess.run([pods.DEV_SH, "verify", path, *(key or ("--key", release_key))],
                              capture_output=True, text=True, timeout=300)
    ok = verify(archive)
    lab.check(ok.returncode == 0 and "linux/amd64 linux/arm64" in ok.stdout,
              f"scripts/dev.sh verify passes on the release: {ok.stdout}{ok.stderr}")
    lab.log(ok.stdout.strip())
    fingerprint = ok.stdout.strip().rsplit(" ", 1)[-1]
    pinned = verify(archive, "--fingerprint", fingerprint)
    lab.check(pinned.returncode == 0, f"verify with the fingerprint pinned: {pinned.stderr}")
    wrong = verify(archive, "--fingerprint", "0" * len(fingerprint))
    lab.check(wrong.returncode == 1 and "not the fingerprint you pinned" in wrong.stderr,
              f"verify refuses the key beside the archive under another pin: {wrong.stderr}")
    bare = subprocess.run([pods.DEV_SH, "verify", archive], capture_output=True, text=True,
                          timeout=60)
    lab.check(bare.returncode == 2 and "--key" in bare.stderr,
              f"verify without a key the user names is a usage error: {bare.returncode} "
              f"{bare.stderr}")

    copies = L.path("tampered")
    os.makedirs(copies)
    tampered = os.path.join(copies, os.path.basename(archive))
    shutil.copy(archive, tampered)
    for name in (f"vipd-{version}.signatures.tar", "vipd-release-key.gpg"):
        shutil.copy(os.path.join(dist, name), copies)
    with tarfile.open(tampered) as t:
        largest = max((m for m in t.getmembers() if m.isfile()), key=lambda m: m.size)
    with open(tampered, "r+b") as f:
        f.seek(largest.offset_data + largest.size // 2)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0x01]))
    bad = verify(tampered)
    lab.check(bad.returncode == 1 and "REFUSED" in bad.stderr and "digest" in bad.stderr.lower(),
              f"verify refuses the archive with one byte of {largest.name} changed: "
              f"{bad.returncode} {bad.stderr[-1500:]}")

    shutil.copy(archive, tampered)
    signatures = os.path.join(copies, f"vipd-{version}.signatures.tar")
    with tarfile.open(os.path.join(dist, f"vipd-{version}.signatures.tar")) as t:
        t.extract("signature-1", copies)
    lab.run(["tar", "-cf", signatures, "-C", copies, "signature-1"])
    bad = verify(tampered)
    lab.check(bad.returncode == 1 and "not signed" in bad.stderr,
              f"verify refuses images whose manifests carry no signature (the index's alone "
              f"kept): {bad.returncode} {bad.stderr[-1500:]}")

    gnupg = L.path("other-gnupg")
    os.makedirs(gnupg, mode=0o700)
    env = dict(os.environ, GNUPGHOME=gnupg)
    lab.run(["gpg", "--batch", "--passphrase", "", "--quick-gen-key", "someone else", "ed25519",
             "sign", "never"], env=env, timeout=60)
    L.on_cleanup(lambda: lab.run(["gpgconf", "--kill", "gpg-agent"], env=env, check=False))
    other = os.path.join(copies, "other.gpg")
    with open(other, "wb") as f:
        f.write(subprocess.run(["gpg", "--batch", "--export"], env=env, capture_output=True,
                               check=True).stdout)
    bad = verify(archive, "--key", other)
    lab.check(bad.returncode == 1 and "not signed" in bad.stderr,
              f"verify refuses the release against another key: {bad.returncode} "
              f"{bad.stderr[-1500:]}")
    both = os.path.join(copies, "both.gpg")
    with open(both, "wb") as f, open(release_key, "rb") as a, open(other, "rb") as b:
        f.write(a.read() + b.read())
    bad = verify(archive, "--key", both)
    lab.check(bad.returncode == 1 and "holds 2 keys" in bad.stderr,
              f"verify refuses a key file with a second key in it: {bad.returncode} "
              f"{bad.stderr[-1500:]}")
    renamed_dir = L.path("renamed")
    os.makedirs(renamed_dir)
    renamed = os.path.join(renamed_dir, f"vipd-{version}.1.oci.tar")
    shutil.copy(archive, renamed)
    shutil.copy(os.path.join(dist, f"vipd-{version}.signatures.tar"),
                os.path.join(renamed_dir, f"vipd-{version}.1.signatures.tar"))
    bad = verify(renamed)
    lab.check(bad.returncode == 1 and "holds localhost/vipd:" + version in bad.stderr,
              f"verify refuses a signed release under another version's name: {bad.returncode} "
              f"{bad.stderr[-1500:]}")


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
        lab.check(sums.returncode == 0 and f"vipd-{version}.oci.tar: OK" in sums.stdout and
                  f"vipd-{version}.signatures.tar: OK" in sums.stdout,
                  f"dist/SHA256SUMS verifies: {sums.stdout}{sums.stderr}")
        check_release(L, archive, version)
        agents = subprocess.run(["pgrep", "-af", "gpg-agent"], capture_output=True,
                                text=True).stdout
        lab.check(os.path.join(pods.SOURCE_DIR, "build-podman", "gnupg") not in agents,
                  f"the release left no gpg-agent of its signing key running: {agents}")

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
    pods.main(test, ["mmdebstrap", "sha256sum", "ldd", "dpkg", "containerd", "ctr", "skopeo",
                     "gpg"])
