#!/usr/bin/env python3
"""e2e, real cluster (issue 42 part 2): the Helm chart's life on the cluster of
tests/e2e/cluster.py, the static pods of day 0 running throughout (bootstrap on), the fabric's
kernel route watched with `ip monitor`.

1. `helm install` of charts/vipd (the image pinned to this build with image.tag): the
   DaemonSet's pods take BGP over from the static pods: 0 route changes.
2. `helm upgrade` to a new image tag: the rollout surges node by node: 0 route changes, 0 failed
   requests through the VIP (HTTPS to the apiservers' /readyz, 20 a second).
3. `helm uninstall`: every DaemonSet pod stops at once; each hands its node back to the static
   pod on standby (its preStop hook: a yield with graceful restart, not a drain), so every node
   is active on its static pod again and the fabric's route to the VIP never changes. (Before
   the hand-back each pod drained, and the route was empty for 0.9 s.)
Prints each step's time and the route changes.
"""
import os
import time

import cluster  # first: it puts bench/ on the path (pods does)
import lab
import pods
from pods import benchlab

CHART = os.path.join(cluster.SOURCE_DIR, "charts", "vipd")
LOAD_RATE, LOAD_TIMEOUT_S = 20, 2.0


def helm(C: cluster.Cluster, *args: str, timeout: float = 120) -> str:
    """The pinned helm with the admin kubeconfig, from node 1 (through the VIP)."""
    argv = [os.path.join(C.tools, "helm"), f"--kubeconfig={C.admin_conf}", *args]
    p = lab.run(C.nodes[0].node.ns.argv(argv), timeout=timeout, check=False)
    lab.check(p.returncode == 0, f"helm {' '.join(args)}: {p.returncode} {p.stderr[-2000:]}")
    return p.stdout


def changes(monitor, since: float) -> list:
    return [(round(t - since, 3), sorted(h)) for t, h in monitor.events if t >= since]


def roles(C: cluster.Cluster) -> dict:
    return {cn.name: (cn.vipctl_status().get("mode"), cn.vipctl_status().get("role"))
            for cn in C.nodes}


def test() -> None:
    with lab.Lab("cluster-helm") as L:
        C, client, monitor = cluster.up(L)
        C.day0(monitor)
        lab.wait_until(lambda: C.ready_nodes() == {cn.name for cn in C.nodes}, 180, 1.0,
                       lambda: f"three Ready nodes: {C.ready_nodes()}")
        C.mark_control_plane()
        n = len(C.nodes)

        # --- 1. install ---
        t0 = time.time()
        helm(C, "install", "vipd", CHART, "--namespace", "kube-system", "--set",
             f"image.tag={C.version}")
        lab.wait_until(lambda: C.pods_ready("kube-system", "vipd-", n * 2), 240, 1.0,
                       lambda: f"a chart pod Ready beside each static pod: "
                       f"{C.pod_phases('kube-system')}")
        lab.wait_until(lambda: all(r == ("daemonset", "active") for r in roles(C).values()), 60,
                       0.5, lambda: f"the chart's vipd active on every node: {roles(C)}")
        installed = changes(monitor, t0)
        print(f"helm install: the chart's pods took over on {n} nodes in {time.time() - t0:.1f} "
              f"s; route changes {len(installed)}")
        lab.check(not installed, f"no route change from helm install: {installed}")

        # --- 2. upgrade to a new image ---
        next_tag = f"{C.version}-next"
        for cn in C.nodes:
            cn.ctr("images", "tag", f"localhost/vipd:{C.version}", f"localhost/vipd:{next_tag}")
        out = L.path("upgrade-load.json")
        load = benchlab.run_load(L, client, LOAD_RATE, 600, LOAD_TIMEOUT_S, out,
                                 port=cluster.APISERVER_PORT, ca_file=C.ca_file, path="/readyz")
        time.sleep(2)
        t1 = time.time()
        helm(C, "upgrade", "vipd", CHART, "--namespace", "kube-system", "--set",
             f"image.tag={next_tag}")

        def rolled() -> bool:
            ds = C.get("daemonset", "vipd", "-n", "kube-system")
            st = ds.get("status", {})
            images = {c["image"] for c in ds.get("spec", {}).get("template", {}).get(
                "spec", {}).get("containers", [])}
            return (images == {f"localhost/vipd:{next_tag}"} and
                    st.get("observedGeneration") == ds["metadata"]["generation"] and
                    st.get("updatedNumberScheduled") == n and st.get("numberAvailable") == n)
        lab.wait_until(rolled, 300, 1.0, lambda: f"the upgrade rolled out: "
                       f"{C.get('daemonset', 'vipd', '-n', 'kube-system').get('status')}")
        took = time.time() - t1
        time.sleep(2)
        load.signal(15)
        reqs = C.requests(load, out)
        failed = [r for r in reqs if "error" in r]
        upgraded = changes(monitor, t1)
        print(f"helm upgrade: {n} nodes rolled to {next_tag} in {took:.1f} s; route changes "
              f"{len(upgraded)}; {len(failed)} of {len(reqs)} requests through the VIP failed")
        lab.check(not upgraded, f"no route change from helm upgrade: {upgraded}")
        lab.check(reqs and not failed, f"no request through the VIP failed: {failed[:5]}")

        # --- 3. uninstall: the static pods keep the VIP ---
        t2 = time.time()
        helm(C, "uninstall", "vipd", "--namespace", "kube-system", "--wait", "--timeout", "120s",
             timeout=180)
        lab.wait_until(lambda: all(r == ("static-pod", "active") for r in roles(C).values()),
                       120, 0.5, lambda: f"every static pod active again: {roles(C)}")
        time.sleep(3)  # past the peers' graceful-restart handling: a late flush would show here
        removed = changes(monitor, t2)
        print(f"helm uninstall: every node handed back to its static pod in "
              f"{time.time() - t2 - 3:.1f} s; route changes {len(removed)}")
        lab.check(not removed, f"no route change from helm uninstall: {removed}")
        lab.check(not C.get("daemonset", "vipd", "-n", "kube-system").get("metadata"),
                  "the DaemonSet is gone")


if __name__ == "__main__":
    lab.main(test, binaries=pods.BINARIES + ["bird", "birdc", "openssl", "ctr"], vipd=True)
