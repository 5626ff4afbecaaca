#!/usr/bin/env python3
"""e2e: `scripts/dev.sh publish` against a registry the way users pull from one (issue 42 part 1).
Debian's docker-registry (the distribution registry) on loopback, plain HTTP, its storage in the
lab's folder; the release of this build (dist/, which e2e_image makes first); the pinned cosign
and helm (`scripts/dev.sh tools`).

Asserts:
- publish pushes the amd64 + arm64 index under the build's version and prints its reference by
  digest; `cosign verify --key dist/cosign.pub` passes for it (by tag and by digest);
- `cosign verify-attestation --type cyclonedx` passes for each architecture's image, and the
  attested predicate is that architecture's SBOM from dist/;
- the chart is pulled back with `helm pull oci://.../charts/vipd`, and `helm template` of it
  names the build's image repository's chart version;
- another image pushed under the same tag (the pause image): `cosign verify` of the tag fails,
  while the signed digest still verifies.
Keyless signing is not tried: it needs Fulcio and Rekor, which this network does not reach.
"""
import base64
import json
import os
import socket
import subprocess
import tarfile

import cluster  # the pinned tools (cosign, helm); it puts bench/ on the path (pods does)
import lab
import pods


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(argv: list[str], timeout: float = 300, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {p.returncode}:\n{p.stderr[-3000:]}")
    return p


def test() -> None:
    with lab.Lab("publish") as L:
        tools = cluster.tools()
        cosign, helm = os.path.join(tools, "cosign"), os.path.join(tools, "helm")
        version = lab.run([lab.vipd_binary(), "--version"]).stdout.split()[-1]
        pods.release_archive(version)  # e2e_image made it; made here when run alone
        port = free_port()
        conf = L.path("registry.yml")
        with open(conf, "w") as f:
            f.write(f"version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: "
                    f"{L.path('registry-data')}\n  delete:\n    enabled: true\nhttp:\n  addr: "
                    f"127.0.0.1:{port}\nlog:\n  level: warn\n")
        L.start(None, "docker-registry", ["docker-registry", "serve", conf])
        lab.wait_until(lambda: run(["curl", "-sf", f"http://127.0.0.1:{port}/v2/"],
                                   check=False).returncode == 0, 30, 0.2, "the registry")
        repo = f"127.0.0.1:{port}/vipd/vipd"
        env = dict(os.environ, VIPD_TOOLS_DIR=tools)
        p = subprocess.run([pods.DEV_SH, "publish", repo, "--insecure"], capture_output=True,
                           text=True, timeout=1800, env=env)
        lab.log(f"publish -> {p.returncode}\n{p.stderr[-3000:]}")
        lab.check(p.returncode == 0, f"scripts/dev.sh publish exited 0: {p.stderr[-2000:]}")
        signed = p.stdout.strip().splitlines()[-1]
        lab.check(signed.startswith(f"{repo}@sha256:"), f"publish prints the digest: {signed}")
        pub = os.path.join(pods.SOURCE_DIR, "dist", "cosign.pub")
        insecure = ["--allow-insecure-registry", "--allow-http-registry", "--insecure-ignore-tlog"]
        for ref in (f"{repo}:{version}", signed):
            ok = run([cosign, "verify", "--key", pub, *insecure, ref], check=False)
            lab.check(ok.returncode == 0, f"cosign verify {ref}: {ok.stderr[-1500:]}")
        print(f"publish: {repo}:{version} pushed and signed; cosign verify passes")

        index = json.loads(run(["skopeo", "inspect", "--raw", "--tls-verify=false",
                                f"docker://{signed}"]).stdout)
        for m in index["manifests"]:
            arch = m["platform"]["architecture"]
            att = run([cosign, "verify-attestation", "--key", pub, "--type", "cyclonedx",
                       *insecure, f"{repo}@{m['digest']}"], check=False)
            lab.check(att.returncode == 0, f"verify-attestation linux/{arch}: "
                      f"{att.stderr[-1500:]}")
            statement = json.loads(base64.b64decode(json.loads(
                att.stdout.strip().splitlines()[0])["payload"]))
            with open(os.path.join(pods.SOURCE_DIR, "dist",
                                   f"vipd-{version}.linux-{arch}.sbom.cdx.json")) as f:
                sbom = json.load(f)
            lab.check(statement["predicate"] == sbom,
                      f"linux/{arch}: the attested SBOM is dist's for that architecture")
        print(f"publish: the CycloneDX attestation of each of {len(index['manifests'])} "
              f"images verifies and is its SBOM")

        pulled = L.path("chart")
        os.makedirs(pulled)
        run([helm, "pull", f"oci://127.0.0.1:{port}/vipd/charts/vipd", "--plain-http",
             "--destination", pulled])
        chart = [n for n in os.listdir(pulled) if n.endswith(".tgz")]
        lab.check(len(chart) == 1, f"helm pull fetched the chart: {chart}")
        with tarfile.open(os.path.join(pulled, chart[0])) as t:
            names = t.getnames()
        lab.check("vipd/files/daemonset.yaml" in names and "vipd/templates/daemonset.yaml" in names,
                  f"the chart carries its files (the links resolved): {names}")

        # Another image under the same tag: the tag no longer verifies, the digest still does.
        run(["skopeo", "copy", "--quiet", "--dest-tls-verify=false",
             f"oci-archive:{os.path.join(tools, 'pause.oci.tar')}", f"docker://{repo}:{version}"])
        bad = run([cosign, "verify", "--key", pub, *insecure, f"{repo}:{version}"], check=False)
        lab.check(bad.returncode != 0, f"cosign verify refuses another image under the tag: "
                  f"{bad.returncode} {bad.stdout[-500:]}")
        still = run([cosign, "verify", "--key", pub, *insecure, signed], check=False)
        lab.check(still.returncode == 0, f"the signed digest still verifies: {still.stderr}")
        print("publish: another image pushed under the tag is refused by cosign verify")


if __name__ == "__main__":
    lab.main(test, binaries=["docker-registry", "skopeo", "curl"], vipd=True)
