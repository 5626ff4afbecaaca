#!/usr/bin/env python3
"""e2e, real cluster (issue 39, scenario 6): replacing control-plane nodes with the project's
replacement script, contrib/vipd-replace-node, the way users walk it. The three-node cluster of
tests/e2e/cluster.py at day 0 (static pods) and two spare machines on the fabric, each
provisioned (containerd, the kubelet, vipd's static pod rendered from its metadata) but not
joined: their vipd waits for an apiserver of their own, so they do not announce.

1. A surge: `vipd-replace-node surge node1 node4=...`: node 4's etcd member added, its control
   plane started (--join, what `kubeadm join --control-plane` starts), node 4 announces once its
   apiserver is ready; then node 1 withdrawn (`vipctl withdraw --wait`, exit code checked), its
   member removed, and only then the machine stopped (--stop: every process of the node killed).
   etcd 3 -> 4 -> 3.
2. An ordinary replacement with the same script: `vipd-replace-node replace node2 node5=...`:
   node 2 retired first, then node 5 joins. etcd 3 -> 2 -> 3.
3. A third run that would add a node that is already a member is refused before anything
   changes (exit 3).

Asserts, from the fabric's kernel route (`ip monitor`) and `kubectl` through the VIP from the
client network (one call every half second throughout): no request fails but one in flight at
the instant the fabric's route changed (the lab's Linux fabric hashes ECMP flows by hash-threshold,
so a change of next hops moves some open connections to a node that resets them; no speaker can
prevent that, a fabric with resilient hashing does); every retired node's
path has left the fabric before its machine stops; in the surge node 4's path arrives before node
1's leaves; the member count goes 3 4 3 2 3, one member in flight at a time; the fabric ends with
nodes 3, 4 and 5. Prints each step's time.
"""
import os
import subprocess
import sys
import threading
import time

import cluster  # first: it puts bench/ on the path (pods does)
import lab
import pods

SCRIPT = os.path.join(cluster.SOURCE_DIR, "contrib", "vipd-replace-node")
STEP_TIMEOUT_S = 300
# A call in flight when the route changes may be rehashed to a node that resets it (see the
# docstring): at most this many such resets, and none at any other time.
MAX_IN_FLIGHT = 2


class KubectlLoop:
    """`kubectl get --raw /readyz` through the VIP from the client network, every half second
    until stop(): each call's time and outcome."""

    def __init__(self, C: cluster.Cluster, client: lab.Namespace):
        self.C, self.client = C, client
        self.calls: list[tuple[float, float, int, str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            t = time.time()
            p = self.C.kubectl("get", "--raw", "/readyz", ns=self.client, check=False,
                               timeout=10)
            self.calls.append((t, time.time(), p.returncode,
                               (p.stdout + p.stderr).strip()[-200:]))
            self._stop.wait(0.5)

    def stop(self) -> list[tuple[float, float, int, str]]:
        self._stop.set()
        self._thread.join(30)
        return self.calls


def replace(C: cluster.Cluster, order: str, old: cluster.ClusterNode, new: cluster.ClusterNode,
            via: cluster.ClusterNode, stamp: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, SCRIPT, order, old.name, f"{new.name}={new.node.v4}",
            "--via", via.name, "--on", C.on_node_command(), "--join", new.join_script(),
            "--stop", old.poweroff_command(stamp), "--vipctl", lab.vipd_binary("vipctl"),
            "--timeout", str(STEP_TIMEOUT_S), "--withdraw-timeout", "30"]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=4 * STEP_TIMEOUT_S)
    lab.log(f"vipd-replace-node {order} {old.name} {new.name} -> {p.returncode}:\n{p.stderr}")
    return p


def hops_now(monitor) -> set[str]:
    """The fabric's next hops to the VIP after the last change seen."""
    events = monitor.events
    return set(events[-1][1]) if events else set()


def first_time(events, since: float, pred) -> float:
    hits = [t for t, hops in events if t >= since and pred(hops)]
    return hits[0] if hits else float("inf")


def member_counts(stderr: str) -> list[int]:
    """The counts the script walked through, from its "(3 -> 4 members)" lines."""
    counts = []
    for line in stderr.splitlines():
        if " members)" in line and " -> " in line:
            a, b = line.rsplit("(", 1)[1].split(" members)")[0].split(" -> ")
            counts += [int(a), int(b)] if not counts else [int(b)]
    return counts


def walk(C, monitor, order, old, new, via) -> tuple[list[int], float]:
    """One replacement; checks the retired node's path left before its machine stopped, and
    returns the member counts and the seconds it took."""
    stamp = C.L.path(f"{old.name}-stopped-at")
    t0 = time.time()
    p = replace(C, order, old, new, via, stamp)
    took = time.time() - t0
    lab.check(p.returncode == 0, f"{order} {old.name} -> {new.name} exited 0: {p.stderr[-2000:]}")
    with open(stamp) as f:
        stopped = float(f.read())
    arrived = first_time(monitor.events, t0, lambda h: new.node.v4 in h)
    left = first_time(monitor.events, t0, lambda h: old.node.v4 not in h)
    print(f"replace ({order}): {old.name} -> {new.name} in {took:.1f} s; {new.name}'s path "
          f"arrived at {arrived - t0:.1f} s; {old.name}'s path left at {left - t0:.1f} s and its "
          f"machine stopped at {stopped - t0:.1f} s")
    lab.check(left < stopped, f"{old.name}'s path left the fabric ({left - t0:.2f} s) before "
              f"its machine stopped ({stopped - t0:.2f} s)")
    if order == "surge":
        lab.check(arrived < left, f"surge: {new.name}'s path arrived ({arrived - t0:.2f} s) "
                  f"before {old.name}'s left ({left - t0:.2f} s)")
    return member_counts(p.stderr), took


def test() -> None:
    with lab.Lab("cluster-replace") as L:
        C, client, monitor = cluster.up(L, spares=2)
        C.day0(monitor)
        n1, n2, n3 = C.nodes
        n4, n5 = C.spares
        for spare in C.spares:
            C.provision(spare)
            lab.check(spare.render().returncode == 0, f"{spare.name}: vipd render")
        lab.wait_until(lambda: all(s.vipctl_status().get("vips") for s in C.spares), 120, 1.0,
                       "the spares' vipd running (no apiserver of their own yet)")
        hops = {cn.node.v4 for cn in C.nodes}
        lab.check(hops_now(monitor) == hops, f"the spares do not announce before they join: "
                  f"{hops_now(monitor)}")

        loop = KubectlLoop(C, client)
        counts, surge_s = walk(C, monitor, "surge", n1, n4, n2)
        more, replace_s = walk(C, monitor, "replace", n2, n5, n3)
        counts += more[1:]
        refused = replace(C, "surge", n3, n4, n5, L.path("never-stopped"))
        calls = loop.stop()

        failed = [c for c in calls if c[2] != 0]
        changes = [t for t, _ in monitor.events]
        rehashed = [c for c in failed if "connection reset by peer" in c[3] and
                    any(c[0] - 0.05 <= t <= c[1] + 0.05 for t in changes)]
        print(f"replace: {len(calls)} kubectl calls through the VIP during both walks, "
              f"{len(failed)} failed ({len(rehashed)} reset in flight when the fabric's route "
              f"changed); etcd member counts {counts}")
        lab.check(refused.returncode == 3 and "already an etcd member" in refused.stderr,
                  f"adding a node that is already a member is refused (exit 3): "
                  f"{refused.returncode} {refused.stderr[-500:]}")
        lab.check(not os.path.exists(L.path("never-stopped")), "the refused run stopped nothing")
        lab.check(counts == [3, 4, 3, 2, 3], f"etcd members 3 4 3 2 3: {counts}")
        lab.check(len(calls) > (surge_s + replace_s) and len(rehashed) == len(failed) and
                  len(failed) <= MAX_IN_FLIGHT,
                  f"every kubectl call through the VIP answered but at most {MAX_IN_FLIGHT} reset "
                  f"in flight at a route change: {failed[:5]} of {len(calls)}; route changes at "
                  f"{changes}")
        final = {cn.node.v4 for cn in (n3, n4, n5)}
        lab.wait_until(lambda: hops_now(monitor) == final, 30, 0.5,
                       lambda: f"the fabric's route over nodes 3, 4 and 5: {hops_now(monitor)}")


if __name__ == "__main__":
    lab.main(test, binaries=pods.BINARIES + ["bird", "birdc", "openssl", "ctr", "curl"],
             vipd=True)
