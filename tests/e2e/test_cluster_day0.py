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
- a stray `vipd.yaml.bak` left in node 1's manifest folder: `vipd doctor` on the node names it.
Prints the time from the kubelets' start to the three paths, and to the first `kubectl`
answer through the VIP.
"""
import json
import time

import cluster  # first: it puts bench/ on the path (pods does)
import lab
import pods


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

        # A stray copy in the manifest folder: the kubelet reads every file there.
        n1 = C.nodes[0]
        with open(n1.host.path("/etc/kubernetes/manifests/vipd.yaml")) as src, \
                open(n1.host.path("/etc/kubernetes/manifests/vipd.yaml.bak"), "w") as dst:
            dst.write(src.read())
        # On the node's host, where the kubelet's manifest folder is (the pod mounts only the CA
        # file of /etc/kubernetes).
        p = n1.host.run([lab.vipd_binary(), "doctor", "--config", "/etc/vipd/vipd.yaml"],
                        check=False, timeout=60)
        lab.log(f"vipd doctor on node 1 -> {p.returncode}\n{p.stdout}{p.stderr}")
        lab.check(p.returncode == 1 and "vipd.yaml.bak" in p.stdout,
                  f"vipd doctor names the stray vipd.yaml.bak: {p.returncode} {p.stdout}")
        status = json.loads(n1.host.run([lab.vipd_binary("vipctl"), "status", "--json"]).stdout)
        lab.check(status["mode"] == "static-pod" and status["role"] == "active",
                  f"node 1's vipctl reaches the static pod's vipd: {status['mode']} "
                  f"{status['role']}")


if __name__ == "__main__":
    lab.main(test, binaries=pods.BINARIES + ["bird", "birdc", "openssl", "ctr"], vipd=True)
