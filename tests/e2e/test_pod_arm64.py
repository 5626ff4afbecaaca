#!/usr/bin/env python3
"""e2e: the release's arm64 image, run as a lab node's static pod through qemu-user (issue 30).
The lab is test_pod_static's (pods.PodLab: BIRD fabric, node 1 the pod's host, node 2 a plain
vipd); node 1's podman takes the arm64 image out of dist/vipd-VERSION.oci.tar the way it would
from a registry's multi-arch tag (`podman pull --arch arm64`). Every binary of the pod (vipd,
vipctl, their libraries and loader) is aarch64 code that qemu-user runs.

Asserts:
- the image node 1 runs is the archive's arm64 one, and `vipd --version` in it prints this
  build's version;
- `vipd render` from that image writes the static pod; played, it announces: BIRD installs the
  VIP's path via node 1 beside node 2's;
- `vipctl status` inside the pod (arm64 vipctl) answers: static-pod, active, this version;
- `podman pod stop` (SIGTERM) drains: node 1's path leaves the fabric before the container
  exits, vipd exits 0 and the VIP is no longer bound on node 1; node 2 carries it alone.
"""
import json
import time

import lab
import pods

POD, CONTAINER = "vipd-bootstrap", "vipd-bootstrap-vipd"


def test() -> None:
    with lab.Lab("pod-arm64") as L:
        pods.enable_qemu_user()
        P = pods.PodLab(L, arch="arm64")
        try:
            out = P.podman.run("run", "--rm", "--arch", "arm64", P.ref, "--version",
                               timeout=120).stdout.strip()
            lab.check(out == f"vipd {P.version}", f"the arm64 vipd runs: {out!r}")
            P.wait_hops([P.n2.v4], 30, "node 2 announces")
            p = P.render()
            lab.check("wrote /etc/kubernetes/manifests/vipd.yaml" in p.stdout,
                      f"render (arm64) wrote the manifest: {p.stdout} {p.stderr}")
            manifest = P.static_manifest()
            t0 = time.monotonic()
            P.play("static-pod", [manifest])
            P.wait_hops([P.n1.v4, P.n2.v4], 60, "node 1's path from the arm64 pod")
            announced = time.monotonic() - t0
            inside = P.podman.run("exec", CONTAINER, "vipctl", "status", "--json")
            s = json.loads(inside.stdout)
            lab.check((s["mode"], s["role"], s["version"]) == ("static-pod", "active", P.version),
                      f"vipctl (arm64) in the pod: {s['mode']} {s['role']} {s['version']}")

            t0 = time.time()
            P.podman.pod_stop(POD)
            info = P.podman.inspect(CONTAINER)
            exited = pods.wall_time(info["State"]["FinishedAt"]) - t0
            gone = P.monitor.wait(lambda h: P.n1.v4 not in h, t0, 30, "node 1's path gone") - t0
            print(f"arm64 static pod under qemu-user: node 1's path in the fabric "
                  f"{announced:.2f} s after `podman kube play`; after SIGTERM it left the fabric "
                  f"at {gone * 1000:.0f} ms, the container exited at {exited:.2f} s")
            lab.check(gone < exited, f"the path left the fabric ({gone:.3f} s) before the "
                      f"container exited ({exited:.3f} s)")
            lab.check(info["State"]["ExitCode"] == 0, f"vipd exited 0: {info['State']}")
            lab.check(not P.n1.ns.address_entries("lo", lab.VIP4), "the VIP is unbound on node 1")
            lab.check(P.hops() == [P.n2.v4], f"node 2 carries the VIP alone: {P.hops()}")
        except BaseException:
            print(P.podman.logs(CONTAINER)[-6000:])
            raise


if __name__ == "__main__":
    pods.main(test, ["bird", "birdc", "openssl", "update-binfmts"])
