#!/usr/bin/env python3
"""e2e: day 0 to day 2 under a real container runtime. On node 1 of pods.PodLab the static pod
(rendered by `vipd render` from the image, as at first boot) speaks; then the DaemonSet's pod,
from `kubectl kustomize` of an overlay of manifests/ as a user writes one (its own vipd.yaml in
the ConfigMap, the image pinned to this build with `images:`), starts beside it, takes BGP over
through the host's /run/vipd, and the static pod goes away the way `bootstrap.enabled: false`
says: render moves its manifest out of the static-pod directory and the test, as the kubelet,
stops and removes the pod. The manifests are changed only as pods.for_podman documents (the
DaemonSet becomes its pod template, $(NODE_IP) is expanded, no ports, probes run by the test).

Asserts:
- the DaemonSet's pod runs with exactly its manifest's capabilities, no new privileges, seccomp,
  a read-only root filesystem and its mounts as written, and its probes pass;
- it takes over (role active; the static pod's vipd on standby) with graceful restart, and node
  1's path never leaves the fabric: the fabric's kernel route polled every 10 ms and its own route
  events (`ip monitor`) show no gap from the DaemonSet pod's start until after the static pod is
  gone; the longest gap and the takeover time are printed;
- render with bootstrap disabled moves the manifest into the archive; stopping the standby
  static pod withdraws nothing;
- `vipctl status` on the host then reaches the DaemonSet's vipd (speaker.json follows the lock).
"""
import json
import os
import time

import lab
import pods

STATIC_POD, STATIC = "vipd-bootstrap", "vipd-bootstrap-vipd"
DS_POD, DS = "vipd", "vipd-vipd"


def pod_status(P: pods.PodLab, container: str) -> dict:
    return json.loads(P.podman.run("exec", container, "vipctl", "status", "--json").stdout)


def daemonset_docs(P: pods.PodLab) -> list[dict]:
    """`kubectl kustomize` of an overlay of manifests/: the site's vipd.yaml (the shipped one, as
    it is: this node's AS and fabric peer come from the node file `vipd render` wrote for the
    static pod) and the image pinned to this build."""
    yaml = pods.yaml_module()
    overlay = P.L.path("overlay")
    os.makedirs(overlay)
    with open(os.path.join(pods.SOURCE_DIR, "manifests", "daemonset", "vipd.yaml")) as f:
        config = yaml.safe_load(f)
    with open(os.path.join(overlay, "vipd.yaml"), "w") as f:
        yaml.safe_dump(config, f, sort_keys=False)
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "bases": [os.path.relpath(os.path.join(pods.SOURCE_DIR, "manifests"), overlay)],
        "images": [{"name": "localhost/vipd", "newTag": P.version}],
        "configMapGenerator": [{"name": "vipd-config", "namespace": "kube-system",
                                "behavior": "replace", "files": ["vipd.yaml"]}],
    }
    with open(os.path.join(overlay, "kustomization.yaml"), "w") as f:
        yaml.safe_dump(kustomization, f, sort_keys=False)
    built = lab.run(["kubectl", "kustomize", overlay], timeout=60).stdout
    docs = list(yaml.safe_load_all(built))
    lab.check(sorted(d["kind"] for d in docs) == ["ConfigMap", "DaemonSet"],
              f"the overlay builds the ConfigMap and the DaemonSet: {[d['kind'] for d in docs]}")
    return docs


def test() -> None:
    with lab.Lab("pod-takeover") as L:
        P = pods.PodLab(L)
        try:
            P.wait_hops([P.n2.v4], 30, "node 2 announces")
            P.render()
            P.play("static-pod", [P.static_manifest()])
            P.wait_hops([P.n1.v4, P.n2.v4], 30, "node 1's path from the static pod")
            lab.check(pod_status(P, STATIC)["role"] == "active", "the static pod speaks first")

            docs = daemonset_docs(P)
            poller = lab.FabricPoller(P.fabric, P.n1.v4)
            since = time.time()
            t0 = time.monotonic()
            pod, probes = P.play("daemonset", docs)
            pods.check_container(P.podman, DS, pod["spec"])
            lab.wait_until(lambda: pod_status(P, DS)["role"] == "active", 30, 0.05,
                           lambda: f"the DaemonSet's vipd takes over: {pod_status(P, DS)['handoff']}")
            took = time.monotonic() - t0
            lab.wait_until(lambda: pod_status(P, STATIC)["role"] == "standby", 5, 0.05,
                           "the static pod's vipd on standby")
            lab.wait_until(lambda: P.bird.neighbor_state(P.n1.v4) == "Established", 15, 0.02,
                           "BIRD's session with node 1 Established again")
            lab.check(pod_status(P, DS)["handoff"]["gracefulRestart"],
                      "the DaemonSet's vipd reopened the sessions as a graceful restart")
            P.probes_pass(probes, 15)

            p = P.render(bootstrap=False)
            lab.check("removed /etc/kubernetes/manifests/vipd.yaml (bootstrap.enabled is false)"
                      in p.stdout, f"render moves the static pod's manifest out: {p.stdout}")
            lab.check(not os.path.exists(P.host.path("/etc/kubernetes/manifests/vipd.yaml")),
                      "the static-pod directory no longer holds vipd.yaml")
            # The kubelet stops a static pod whose manifest is gone.
            P.podman.pod_stop(STATIC_POD)
            state = P.podman.inspect(STATIC)["State"]
            lab.check(state["ExitCode"] == 0, f"the standby exits 0: {state}")
            P.podman.run("pod", "rm", STATIC_POD)
            time.sleep(2.0)  # past BIRD's stale-path handling: a late flush shows as a gap
            poller.stop()

            gaps = poller.gaps()
            events = [(round(t - since, 3), sorted(h)) for t, h in P.monitor.events if t >= since]
            kernel_gaps = [e for e in events if P.n1.v4 not in e[1]]
            longest = max((g for _, g in gaps), default=0.0)
            print(f"DaemonSet takeover: active {took:.2f} s after `podman kube play`; node 1's "
                  f"path missing from the fabric {len(gaps)} time(s), longest gap "
                  f"{longest * 1000:.0f} ms ({poller.summary()}); kernel route events "
                  f"{events}")
            # The poller is the sampled view (a fork of `ip` per sample: ~10 ms under a loaded
            # sanitizer build in CI); `ip monitor` above sees every change however short.
            lab.check(poller.mean_spacing() <= 0.020,
                      f"the fabric was polled at least every 20 ms: {poller.summary()}")
            lab.check(not gaps, f"node 1's path left the fabric during the takeover: {gaps}")
            lab.check(not kernel_gaps, f"the fabric kernel dropped node 1's path: {events}")
            lab.check(P.hops() == sorted([P.n1.v4, P.n2.v4]), f"both paths remain: {P.hops()}")

            status = P.vipctl_on_host("status", "--json")
            lab.check(status.returncode == 0, f"vipctl status on the host: {status.stderr}")
            s = json.loads(status.stdout)
            lab.check((s["mode"], s["role"]) == ("daemonset", "active"),
                      f"the host's vipctl now reaches the DaemonSet's vipd: {s['mode']} {s['role']}")
        except BaseException:
            for c in (STATIC, DS):
                print(f"----- podman logs {c} -----\n{P.podman.logs(c)[-5000:]}")
            raise


if __name__ == "__main__":
    pods.main(test, ["bird", "birdc", "openssl"])
