#!/usr/bin/env python3
"""e2e, real cluster (issue 39, scenario 1): day 0. Three control-plane nodes as kubeadm lays
them out (tests/e2e/cluster.py: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
containerd and a kubelet each, from the pinned tools), a BIRD fabric and a client network.

Asserts:
- `vipd render` writes the static pod into each kubelet's manifest folder; the kubelet runs it
  from the image imported from the release archive; each node's path reaches the fabric only once
  its own apiserver's /readyz is ok (the fabric's kernel route, watched with `ip monitor`, gains
  three next hops, none before the vipd container runs);
- the real `kubectl` in the client network, through the VIP, lists the three nodes, which
  registered through the VIP themselves (the kubelet's kubeconfig names controlPlaneEndpoint);
- the mirror pods of the static pods are Running and Ready in kube-system;
- a stray `vipd.yaml.bak` left in node 1's manifest folder: `vipd doctor` on the node names it;
- node 1's vipd container runs as its pod spec says (capabilities, no_new_privs, seccomp,
  read-only root, each hostPath this node's folder); `kubectl exec ... vipctl status` through the
  VIP reaches it;
- node 1's static pod taken away (its manifest moved out) under 20 requests a second through the
  VIP: its path leaves the fabric before vipd exits (the preStop drain), the VIP is unbound, and
  only requests in flight at the route change fail (at most 3).
Prints the time from the kubelets' start to the three paths, and to the first `kubectl`
answer through the VIP.
"""
import json
import os
import time

import cluster  # first: it puts bench/ on the path (pods does)
import lab
import pods
from pods import benchlab

LOAD_RATE, LOAD_TIMEOUT_S = 20, 2.0
# The one loss no speaker can prevent: a connection open to node 1 at the instant the fabric's
# ECMP route drops it is rehashed to another node, which resets it.
MAX_IN_FLIGHT = 3


def test() -> None:
    with lab.Lab("cluster-day0") as L:
        C, client, monitor = cluster.up(L)
        for cn in C.nodes:
            lab.check(not cn.node.ns.address_entries("lo", lab.VIP4),
                      f"{cn.name}: no VIP bound before vipd runs")

        t0 = time.time()
        all_in = C.day0(monitor)
        before = [(t, sorted(h)) for t, h in monitor.events if t < t0 and h]
        lab.check(not before, f"no path to the VIP before `vipd render`: {before}")
        print(f"day 0: the fabric's route has all three nodes {all_in:.1f} s after `vipd "
              f"render` (the kubelet's pickup, the container's start and the health check's "
              f"rise included)")

        t1 = time.monotonic()
        nodes = lab.wait_until(lambda: C.ready_nodes(ns=client) == {cn.name for cn in C.nodes},
                               180, 1.0, lambda: f"kubectl through the VIP lists three Ready "
                               f"nodes: {C.ready_nodes(ns=client)}")
        print(f"day 0: `kubectl get nodes` through the VIP lists the three nodes Ready "
              f"{time.monotonic() - t1:.1f} s later")
        del nodes
        mirror = lab.wait_until(lambda: C.pods_ready("kube-system", "vipd-bootstrap", 3, client),
                                120, 1.0, lambda: "three vipd-bootstrap mirror pods Ready: "
                                f"{C.pod_phases('kube-system', client)}")
        lab.log(f"mirror pods: {mirror}")
        # What an operator sees (and `scripts/dev.sh demo --cluster` shows).
        print(f"$ ip route show {lab.VIP4}   (the fabric)\n{C.fabric.route_show(lab.VIP4)}")
        for what in (["get", "nodes", "-o", "wide"],
                     ["get", "pods", "-n", "kube-system", "-o", "wide"]):
            print(f"$ kubectl {' '.join(what)}   (from the client network, through the VIP)\n"
                  f"{C.kubectl(*what, ns=client).stdout}")

        n1 = C.nodes[0]
        status = json.loads(n1.host.run([lab.vipd_binary("vipctl"), "status", "--json"]).stdout)
        # A developer's VIPD_IMAGE_ARCHIVE may hold another build, tagged as this one.
        version = status["version"] if os.environ.get("VIPD_IMAGE_ARCHIVE") else C.version
        lab.check((status["mode"], status["role"], status["version"]) ==
                  ("static-pod", "active", version),
                  f"node 1's vipctl reaches the static pod's vipd of this build: {status['mode']} "
                  f"{status['role']} {status['version']}")
        pod = n1.pod("vipd-bootstrap", exclude="")
        pid = n1.check_container(pod)
        inside = n1.exec_in_pod("vipd-bootstrap", ["vipctl", "status"])
        lab.check(inside.returncode == 0 and "static-pod" in inside.stdout,
                  f"`kubectl exec ... vipctl status` through the VIP reaches the pod's vipd: "
                  f"{inside.stdout[-500:]} {inside.stderr[-500:]}")
        # The doctor in the image, against the kubeadm-shaped certificate with the VIP in it.
        conf = pod["spec"]["containers"][0]["command"]
        conf = conf[conf.index("--config") + 1]
        doctor = n1.exec_in_pod("vipd-bootstrap", ["vipd", "doctor", "--config", conf])
        lab.log(f"vipd doctor in the pod -> {doctor.returncode}\n{doctor.stdout}{doctor.stderr}")
        lab.check(any(ln.split()[:2] == ["ok", "apiserver-certificate"]
                      for ln in doctor.stdout.splitlines()),
                  f"vipd doctor in the pod passes apiserver-certificate: {doctor.stdout}")
        stop_under_load(C, client, monitor, pid)
        # A stray copy in the manifest folder: the kubelet reads every file there.
        # Last: the kubelet reads it as a pod of its own (the very reason doctor names it).
        with open(n1.host.path("/etc/kubernetes/vipd.yaml.off")) as src, \
                open(n1.host.path("/etc/kubernetes/manifests/vipd.yaml.bak"), "w") as dst:
            dst.write(src.read())
        # On the node's host, where the kubelet's manifest folder is (the pod mounts only the CA
        # file of /etc/kubernetes).
        p = n1.host.run([lab.vipd_binary(), "doctor", "--config", "/etc/vipd/vipd.yaml"],
                        check=False, timeout=60)
        lab.log(f"vipd doctor on node 1 -> {p.returncode}\n{p.stdout}{p.stderr}")
        lab.check(p.returncode == 1 and "vipd.yaml.bak" in p.stdout,
                  f"vipd doctor names the stray vipd.yaml.bak: {p.returncode} {p.stdout}")


def stop_under_load(C: cluster.Cluster, client, monitor, pid: int) -> None:
    """Node 1's static pod taken away as an operator does it (its manifest moved out of the
    kubelet's folder) under LOAD_RATE requests a second through the VIP: the kubelet runs the
    preStop hook and stops the container; node 1's path leaves the fabric before vipd exits, the
    VIP is unbound, and no request fails but one in flight to node 1 at the instant the fabric's
    route dropped it (at most MAX_IN_FLIGHT)."""
    n1 = C.nodes[0]
    out = C.L.path("stop-load.json")
    load = benchlab.run_load(C.L, client, LOAD_RATE, 600, LOAD_TIMEOUT_S, out,
                             port=cluster.APISERVER_PORT, ca_file=C.ca_file, path="/readyz")
    time.sleep(2)
    t0 = time.time()
    os.rename(n1.host.path("/etc/kubernetes/manifests/vipd.yaml"),
              n1.host.path("/etc/kubernetes/vipd.yaml.off"))
    lab.wait_until(lambda: not os.path.exists(f"/proc/{pid}"), 90, 0.01,
                   "the static pod's vipd to exit")
    exited = time.time() - t0
    time.sleep(2)
    load.signal(15)
    reqs = C.requests(load, out)
    failed = [r for r in reqs if "error" in r]
    left_at = [t for t, hops in monitor.events if t >= t0 and n1.node.v4 not in hops]
    gone = (left_at[0] - t0) if left_at else float("inf")
    rehashed = [r for r in failed if any(r["t"] <= t <= r["t"] + r.get("latency", 0) + 0.05
                                         for t in left_at)]
    print(f"static pod removed: node 1's path left the fabric {gone:.2f} s after its manifest "
          f"was moved out, vipd exited at {exited:.2f} s (the kubelet's pickup, the preStop "
          f"drain); {len(failed)} of {len(reqs)} requests through the VIP failed "
          f"({LOAD_RATE}/s), {len(rehashed)} in flight when the route changed")
    lab.check(gone < exited, f"the path left the fabric ({gone:.2f} s) before vipd exited "
              f"({exited:.2f} s)")
    lab.check(len(rehashed) == len(failed) and len(failed) <= MAX_IN_FLIGHT,
              f"only requests in flight at the route change failed (at most {MAX_IN_FLIGHT}): "
              f"{failed[:10]}")
    lab.check(not n1.node.ns.address_entries("lo", lab.VIP4), "the VIP is unbound on node 1")


if __name__ == "__main__":
    lab.main(test, binaries=pods.BINARIES + ["bird", "birdc", "openssl", "ctr"], vipd=True)
