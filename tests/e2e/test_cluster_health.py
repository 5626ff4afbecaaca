#!/usr/bin/env python3
"""e2e, real cluster (issue 39, scenario 5): the health gate against real apiservers. The
three-node cluster of tests/e2e/cluster.py at day 0 (static pods), the fabric's kernel route
watched with `ip monitor`.

Asserts:
- node 1's etcd member killed (SIGKILL): its apiserver's /readyz fails on its etcd check, and
  node 1's path leaves the fabric within fall x interval plus one check and the timeout
  (the rendered config's defaults: 3 x 1 s, 1 s) after /readyz first fails, while nodes 2 and 3
  keep theirs and `kubectl` through the VIP keeps answering (etcd keeps its quorum);
- the member restarted on its data: /readyz ok again and node 1's path back.
Prints the time from the kill to /readyz failing and from there to the path leaving.
"""
import time

import cluster  # first: it puts bench/ on the path (pods does)
import lab
import pods

FALL, INTERVAL_S, TIMEOUT_S = 3, 1.0, 1.0  # vipd render's health defaults (config/example.yaml)


def test() -> None:
    with lab.Lab("cluster-health") as L:
        C, client, monitor = cluster.up(L)
        C.day0(monitor)
        n1 = C.nodes[0]
        others = {cn.node.v4 for cn in C.nodes[1:]}

        t0 = time.time()
        n1.procs["etcd"].signal(9)
        unready = lab.timed_wait(lambda: C.readyz(n1) != "ok", 60, 0.1,
                                 "node 1's apiserver /readyz to fail without its etcd member")
        t_unready = time.time()
        detail = C.readyz(n1, verbose=True)
        lab.log(f"node 1 /readyz?verbose without etcd: {detail[-400:]}")
        lab.check("etcd" in detail, f"/readyz names etcd as the failing check: {detail!r}")
        gone = monitor.wait(lambda h: n1.node.v4 not in h and others <= h, t0, 60,
                            "node 1's path to leave")
        left = gone - t_unready
        bound = FALL * INTERVAL_S + INTERVAL_S + TIMEOUT_S
        # The test sees /readyz fail by polling it with kubectl, later than vipd's own checks may:
        # the bound is on the path leaving after that, and may well be negative.
        print(f"health gate, real apiserver: node 1's etcd member killed; node 1's path left the "
              f"fabric {gone - t0:.1f} s later; the test's own poll saw /readyz fail at "
              f"{unready:.1f} s (bound on the path leaving after that: {bound:.0f} s, fall "
              f"{FALL} x {INTERVAL_S:.0f} s, one more check, its timeout)")
        lab.check(left <= bound, f"node 1 left within {bound} s of /readyz failing: {left:.2f} s")
        lab.check(C.kubectl("get", "nodes", ns=client, check=False).returncode == 0,
                  "kubectl through the VIP answers while node 1 is out")

        t1 = time.time()
        n1.start_etcd({cn.name: cn.node.v4 for cn in C.nodes}, state="existing")
        back = monitor.wait(lambda h: n1.node.v4 in h, t1, 120, "node 1's path back") - t1
        print(f"health gate, real apiserver: node 1's path back {back:.1f} s after its etcd "
              f"member restarted")
        lab.check(C.readyz(n1) == "ok", "node 1's apiserver is ready again")


if __name__ == "__main__":
    lab.main(test, binaries=pods.BINARIES + ["bird", "birdc", "openssl", "ctr"], vipd=True)
