#!/usr/bin/env python3
"""e2e: `vipd render`, the real binary with the template built into it, in a temporary directory
laid out like a node (etc/vipd, etc/kubernetes/manifests). No root, no namespaces: never skips.

Asserts:
- a dual-stack JSON metadata document with a password file renders: exit 0, one output line per
  file written, the config passes `vipd validate --config` (with the key file in place, 0600),
  the manifest is the real template filled (image, config path and directory, no placeholder
  left), modes 0644/0600;
- rendering again changes nothing ("unchanged", same inode and mtime);
- a new image archives the old manifest outside the manifest directory and writes the new one;
- a stray backup file is named in a warning; with --strict render exits 1 and changes nothing;
- broken metadata exits 1, lists every error as file:line:col: path: message, writes nothing;
- a FIFO as the metadata, or where the config goes, exits 1 at once (not a regular file) and
  writes nothing; so does an alias bomb as the metadata (one error at its position);
- the image given twice exits 1; a usage error exits 2;
- the command line: `--flag=value` renders as `--flag value` does; `vipd render --help` exits 0
  with the usage on stdout; a flag given twice (`--metadata A --metadata B`) exits 2 naming it
  and writes nothing;
- bootstrap.enabled false moves the manifest into the archive and keeps the config;
- the manifest directory never holds anything but manifests (listed after every step);
- the manifest reads as a manifest: the template's notes (lines starting with #%) are gone;
- without an image in the metadata or --image, the manifest pins this vipd's own release,
  localhost/vipd:VERSION with VERSION as `vipd --version` prints it (never :latest).
"""
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile

import lab

METADATA = {
    "apiVersion": "vipd.io/v1alpha1",
    "kind": "InstanceMetadata",
    "node": {"addresses": ["192.0.2.11", "2001:db8::11"]},
    "localAsn": 4200000001,
    "vips": ["203.0.113.10/32", "2001:db8:ffff::10/128"],
    "peers": [
        {"address": "192.0.2.1", "asn": 4200000000},
        {"address": "192.0.2.2", "asn": 4200000000},
    ],
    "bootstrap": {"enabled": True},
    "image": "registry.example/vipd:0.1.0",
}

BROKEN = """\
apiVersion: vipd.io/v1alpha1
kind: InstanceMetadata
node:
  addresses: ["2001:db8::11"]
localAsn: "65001"
vips: [203.0.113.10]
peers:
  - {address: 192.0.2.1, asn: 65000, passwordFile: /root/bgp-password}
colour: blue
image: registry.example/vipd:0.1.0
"""


def cmd(argv: list[str]):
    p = lab.run(argv, check=False, timeout=20)
    lab.log(f"$ {' '.join(argv)}  -> exit {p.returncode}")
    for line in (p.stdout + p.stderr).rstrip().splitlines():
        print(f"  {line}")
    return p


def read(path: str) -> str:
    with open(path) as f:
        return f.read()


def write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def test() -> None:
    tmp = tempfile.mkdtemp(prefix="vipd-e2e-render-")
    try:
        vipd = lab.vipd_binary()
        config_dir = os.path.join(tmp, "etc", "vipd")
        config = os.path.join(config_dir, "vipd.yaml")
        node = os.path.join(config_dir, "node.yaml")
        manifests = os.path.join(tmp, "etc", "kubernetes", "manifests")
        manifest = os.path.join(manifests, "vipd.yaml")
        archive = os.path.join(tmp, "etc", "kubernetes", "vipd-manifest-archive")
        os.makedirs(manifests)
        write(os.path.join(manifests, "kube-apiserver.yaml"), "apiVersion: v1\nkind: Pod\n")
        metadata = os.path.join(tmp, "metadata.json")
        doc = json.loads(json.dumps(METADATA))
        doc["passwordFile"] = os.path.join(config_dir, "bgp-password")
        write(metadata, json.dumps(doc, indent=2))
        render = [vipd, "render", "--metadata", metadata, "--config-out", config,
                  "--manifest-dir", manifests]

        def manifest_dir_clean() -> None:
            names = sorted(os.listdir(manifests))
            lab.check(all(n.endswith(".yaml") and not n.startswith(".") for n in names),
                      f"the manifest directory holds something that is not a manifest: {names}")

        # First render.
        p = cmd(render)
        lab.check(p.returncode == 0, f"render should exit 0, not {p.returncode}")
        lab.check(p.stdout.splitlines() == [f"created directory {config_dir}",
                                            f"created directory {archive}",
                                            f"wrote {config}", f"wrote {node}",
                                            f"wrote {manifest}"],
                  f"unexpected output: {p.stdout!r}")
        lab.check(p.stderr == "", f"no warnings expected: {p.stderr!r}")
        text = read(config)
        lab.check(text.startswith(f"# Rendered by `vipd render` from {metadata}; do not edit."),
                  "the config's header names the metadata")
        for needle in ["mode: static-pod", "routerId: 192.0.2.11", "localAsn: 4200000001",
                       'nextHopIpv6: "2001:db8::11"',
                       f"passwordFile: {os.path.join(config_dir, 'bgp-password')}",
                       "socket: /run/vipd/static-pod.sock", 'listen: "127.0.0.1:9473"']:
            lab.check(needle in text, f"the config should contain {needle!r}")
        # vipd validate reads the password file as start does: the node's provisioning puts it
        # there, mode 0600.
        write(doc["passwordFile"], "bgp-key\n")
        os.chmod(doc["passwordFile"], 0o600)
        v = cmd([vipd, "validate", "--config", config])
        lab.check(v.returncode == 0 and f"{config}: valid" in v.stdout,
                  "vipd validate should accept the rendered config")
        pod = read(manifest)
        lab.check("{{" not in pod and "}}" not in pod, "no placeholder may be left")
        lab.check("#%" not in pod and "template" not in pod.lower(),
                  "the manifest should carry no note about the template it was made from")
        for needle in ['image: "registry.example/vipd:0.1.0"', f'"--config", "{config}"',
                       f'mountPath: "{config_dir}"', f'path: "{config_dir}"',
                       "containerPort: 9473", '"/run/vipd/static-pod.sock"']:
            lab.check(needle in pod, f"the manifest should contain {needle!r}")
        lab.check(stat.S_IMODE(os.stat(config).st_mode) == 0o644, "config mode 0644")
        lab.check(stat.S_IMODE(os.stat(manifest).st_mode) == 0o600, "manifest mode 0600")
        lab.check(os.listdir(archive) == [], "nothing archived, no temporary file left")
        manifest_dir_clean()

        # Same input: nothing rewritten.
        before = {f: (os.stat(f).st_ino, os.stat(f).st_mtime_ns) for f in (config, manifest)}
        p = cmd(render)
        lab.check(p.returncode == 0, f"a second render should exit 0, not {p.returncode}")
        lab.check(p.stdout.splitlines() == [f"unchanged {config}", f"unchanged {node}",
                                                  f"unchanged {manifest}"],
                  f"a second render should change nothing: {p.stdout!r}")
        after = {f: (os.stat(f).st_ino, os.stat(f).st_mtime_ns) for f in (config, manifest)}
        lab.check(before == after, "unchanged files keep their inode and mtime")

        # The command line: --flag=value, --help, a flag given twice.
        p = cmd([vipd, "render", f"--metadata={metadata}", f"--config-out={config}",
                 f"--manifest-dir={manifests}"])
        lab.check(p.returncode == 0 and p.stdout.splitlines() == [f"unchanged {config}",
                                                                  f"unchanged {node}",
                                                                  f"unchanged {manifest}"],
                  f"--flag=value should render as --flag value does: {p.stdout!r}")
        p = cmd([vipd, "render", "--help"])
        lab.check(p.returncode == 0 and p.stdout.startswith("usage: vipd render --metadata FILE")
                  and p.stderr == "", f"render --help should print the usage: exit {p.returncode}")
        p = cmd(render + ["--metadata", os.path.join(tmp, "other.json")])
        lab.check(p.returncode == 2
                  and p.stderr.startswith("vipd render: --metadata is given twice\nusage: "),
                  f"a flag given twice is a usage error (exit 2), got {p.returncode}")
        after = {f: (os.stat(f).st_ino, os.stat(f).st_mtime_ns) for f in (config, manifest)}
        lab.check(before == after, "usage errors write nothing")

        # A new image: the old manifest is archived outside the manifest directory.
        old_pod = pod
        doc["image"] = "registry.example/vipd:0.2.0"
        write(metadata, json.dumps(doc, indent=2))
        p = cmd(render)
        lab.check(p.returncode == 0, f"render with a new image should exit 0, not {p.returncode}")
        m = re.search(rf"^archived {re.escape(manifest)} as ({re.escape(archive)}/"
                      r"vipd-\d{8}T\d{6}Z(-\d+)?\.yaml)$", p.stdout, re.MULTILINE)
        lab.check(m, f"render should say where the old manifest went: {p.stdout!r}")
        lab.check(read(m.group(1)) == old_pod, "the archive holds the old manifest")
        lab.check("registry.example/vipd:0.2.0" in read(manifest), "the new manifest is in place")
        lab.check(f"unchanged {config}" in p.stdout, "the config did not change")
        manifest_dir_clean()

        # Stray files: a warning, and --strict refuses.
        stray = os.path.join(manifests, "kube-apiserver.yaml.bak")
        write(stray, "apiVersion: v1\nkind: Pod\n")
        p = cmd(render)
        lab.check(p.returncode == 0, f"a stray file alone should not fail render: {p.returncode}")
        lab.check(re.search(rf"^vipd render: warning: {re.escape(stray)}: ", p.stderr, re.MULTILINE),
                  f"the stray file should be named in a warning: {p.stderr!r}")
        doc["image"] = "registry.example/vipd:0.3.0"
        write(metadata, json.dumps(doc, indent=2))
        snapshot = (read(config), read(manifest), sorted(os.listdir(archive)))
        p = cmd(render + ["--strict"])
        lab.check(p.returncode == 1, f"--strict with a stray file should exit 1, not {p.returncode}")
        lab.check(stray in p.stderr and "nothing written" in p.stderr,
                  f"--strict should name the stray file and say nothing was written: {p.stderr!r}")
        lab.check((read(config), read(manifest), sorted(os.listdir(archive))) == snapshot,
                  "--strict refusal changed files")
        os.remove(stray)

        # Broken metadata: every error listed, nothing written.
        snapshot = (read(config), read(manifest), sorted(os.listdir(archive)))
        broken = os.path.join(tmp, "broken.yaml")
        write(broken, BROKEN)
        p = cmd([vipd, "render", "--metadata", broken, "--config-out", config,
                 "--manifest-dir", manifests])
        lab.check(p.returncode == 1, f"broken metadata should exit 1, not {p.returncode}")
        expected = [(4, 14, "node.addresses", "no IPv4 address"),
                    (5, 11, "localAsn", "expected an integer, got the string '65001'"),
                    (6, 8, "vips[0]", "needs a prefix length: write 203.0.113.10/32"),
                    (8, 52, "peers[0].passwordFile", f"/root/bgp-password is outside {config_dir}"),
                    (9, 1, "colour", "unknown key 'colour'")]
        for line, col, path, message in expected:
            pattern = rf"^{re.escape(broken)}:{line}:{col}: {re.escape(path)}: .*{re.escape(message)}"
            lab.check(re.search(pattern, p.stderr, re.MULTILINE),
                      f"render should print an error matching {pattern!r}")
        lab.check(f"{broken}: {len(expected)} error(s); nothing written" in p.stderr,
                  "render should count the errors and say nothing was written")
        lab.check((read(config), read(manifest), sorted(os.listdir(archive))) == snapshot
                  and p.stdout == "", "broken metadata wrote files")

        # A FIFO where render reads (the metadata; the config it compares before replacing):
        # refused at once as not a regular file, never waited on, and nothing written.
        fifo_metadata = os.path.join(tmp, "metadata.fifo")
        fifo_config = os.path.join(config_dir, "fifo.yaml")
        for fifo in (fifo_metadata, fifo_config):
            os.mkfifo(fifo, 0o600)
        for argv in ([vipd, "render", "--metadata", fifo_metadata, "--config-out", config,
                      "--manifest-dir", manifests],
                     [vipd, "render", "--metadata", metadata, "--config-out", fifo_config,
                      "--manifest-dir", manifests]):
            try:
                p = lab.run(argv, check=False, timeout=5)
            except subprocess.TimeoutExpired:
                lab.check(False, f"{argv[1:]} blocked on a FIFO for 5 s")
            fifo = argv[3] if argv[3] == fifo_metadata else fifo_config
            lab.log(f"$ {' '.join(argv)}  -> exit {p.returncode}: {p.stderr.strip()!r}")
            lab.check(p.returncode == 1 and f"{fifo} is not a regular file" in p.stderr,
                      f"a FIFO is refused as not a regular file: exit {p.returncode}")
            lab.check((read(config), read(manifest), sorted(os.listdir(archive))) == snapshot,
                      "a FIFO changed files")
        for fifo in (fifo_metadata, fifo_config):
            os.remove(fifo)

        # An alias bomb as the metadata (issue 40): refused before it is expanded, one error at
        # its position, nothing written (on main 5c7d414 render expanded it).
        bomb = os.path.join(tmp, "bomb.yaml")
        write(bomb, "x0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"x{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 10) + "]\n" for n in range(1, 7)))
        argv = [vipd, "render", "--metadata", bomb, "--config-out", config, "--manifest-dir",
                manifests]
        try:
            p = lab.run(argv, check=False, timeout=10)
        except subprocess.TimeoutExpired:
            lab.check(False, "render on an alias bomb ran for 10 s")
        lab.log(f"$ {' '.join(argv)}  -> exit {p.returncode}: {p.stderr.strip()!r}")
        lab.check(p.returncode == 1 and re.search(
            rf"^{re.escape(bomb)}:\d+:\d+: the YAML describes more than 20000 nodes", p.stderr,
            re.MULTILINE), f"an alias bomb is refused with its position: exit {p.returncode}")
        lab.check((read(config), read(manifest), sorted(os.listdir(archive))) == snapshot,
                  "an alias bomb changed files")

        # One source per value; usage errors.
        p = cmd(render + ["--image", "registry.example/vipd:flag"])
        lab.check(p.returncode == 1 and "image is set both here and by --image" in p.stderr,
                  "the image given twice is an error")
        p = cmd([vipd, "render", "--metadata", metadata, "--config-out", "vipd.yaml",
                 "--manifest-dir", manifests])
        lab.check(p.returncode == 2 and "--config-out must be an absolute path" in p.stderr,
                  f"a relative --config-out is a usage error (exit 2), got {p.returncode}")
        p = cmd([vipd, "render", "--metadata", metadata])
        lab.check(p.returncode == 2 and "usage: vipd render" in p.stderr,
                  f"missing flags are a usage error (exit 2), got {p.returncode}")

        # Bootstrap disabled: the manifest leaves the manifest directory, the config stays.
        doc["bootstrap"]["enabled"] = False
        write(metadata, json.dumps(doc, indent=2))
        current = read(manifest)
        p = cmd(render)
        lab.check(p.returncode == 0, f"render with bootstrap disabled should exit 0: {p.returncode}")
        m = re.search(rf"^removed {re.escape(manifest)} \(bootstrap.enabled is false\); archived "
                      rf"as ({re.escape(archive)}/\S+)$", p.stdout, re.MULTILINE)
        lab.check(m, f"render should say where the manifest went: {p.stdout!r}")
        lab.check(read(m.group(1)) == current, "the archive holds the removed manifest")
        lab.check(sorted(os.listdir(manifests)) == ["kube-apiserver.yaml"],
                  f"only the other manifests stay: {os.listdir(manifests)}")
        lab.check(os.path.exists(config), "the config stays")
        v = cmd([vipd, "validate", "--config", config])
        lab.check(v.returncode == 0, "the config is still valid")

        # No image anywhere: this vipd's own release, pinned.
        version = cmd([vipd, "--version"]).stdout.split()[-1]
        del doc["image"]
        doc["bootstrap"]["enabled"] = True
        write(metadata, json.dumps(doc, indent=2))
        p = cmd(render)
        lab.check(p.returncode == 0, f"render without an image should exit 0: {p.returncode}")
        want = f'image: "localhost/vipd:{version}"'
        lab.check(want in read(manifest) and "latest" not in read(manifest),
                  f"the manifest should pin {want!r}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    lab.main(test, vipd=True, root=False)
