#!/usr/bin/env python3
"""e2e: a second vipd on the node refuses to start and touches nothing (issue 17, item 5). BIRD
fabric (AS 65000), vipd on node 1 (AS 65001), both VIPs announced.

Asserts, for a second vipd started in node 1's network namespace
- with the very same config file (same stateDir, socket, VIPs), and
- with its own stateDir, control socket and metrics port but the same VIPs:
it exits non-zero within 3 s, its error names the first instance's PID (and the state directory,
or the VIP, it collided on), and afterwards the first vipd still runs with both VIPs bound and
announced, BIRD's session never flapped, and `vipctl status` answers. A third start after the
first one exits is accepted (the locks died with their holder).
The static-pod/DaemonSet overlap, the one that is allowed, is e2e_takeover's and e2e_cluster_day2's.
"""
import copy
import time

import lab

EXIT_BOUND_S = 3.0


def main_test() -> None:
    with lab.Lab("second-instance") as L:
        held: dict = {}

        def edit(c: dict, topo: lab.Topology) -> None:
            held["config"] = c

        s = lab.build_single_vipd(L, edit)
        bird, first, node = s.bird, s.vipd, s.node
        lab.wait_established(bird, [node.v4], 30)
        lab.wait_until(lambda: bird.has_route(lab.VIP4) and bird.has_route(lab.VIP6), 15, 0.1,
                       "both VIPs in BIRD")
        pid = first.proc.pid
        config = held["config"]

        other = copy.deepcopy(config)
        other["control"] = {"socket": L.path("second.sock"), "stateDir": L.path("second-state")}
        other["metrics"] = {"listen": "127.0.0.1:9473"}
        cases = [("the same config", config, rf"state directory {config['control']['stateDir']}"),
                 ("its own stateDir, socket and metrics port, the same VIPs", other,
                  rf"VIP {lab.VIP4}")]
        for i, (what, c, collided) in enumerate(cases):
            t0 = time.monotonic()
            second = lab.Vipd(L, node.ns, c, name=f"vipd-second{i + 1}")
            code = second.wait_exit(EXIT_BOUND_S)
            took = time.monotonic() - t0
            log = second.proc.log_text()
            for line in log.splitlines()[-3:]:
                print(f"  second vipd ({what}): {line[:300]}", flush=True)
            lab.check(code != 0, f"second vipd with {what}: exit {code}, expected non-zero")
            lab.check(f"pid {pid}" in log,
                      f"second vipd with {what}: its error should name the first's pid {pid}")
            lab.check(collided in log,
                      f"second vipd with {what}: its error should name {collided!r}")
            lab.log(f"second vipd with {what}: exit {code} after {took:.2f} s, named pid {pid}")
            healthy(first, bird, node, pid, f"the second vipd with {what}")
        lab.check(bird.neighbor_state(node.v4) == "Established",
                  f"BIRD's session with node 1: {bird.neighbor_state(node.v4)}")

        first.stop()
        first.wait_exit(15)
        third = lab.Vipd(L, node.ns, config, name="vipd-third")
        lab.wait_until(lambda: bird.has_route(lab.VIP4), 30, 0.1,
                       "a vipd started after the first exited to announce")
        lab.check(third.proc.alive(), "the third vipd should run")


def healthy(first: lab.Vipd, bird: lab.Bird, node: lab.Node, pid: int, after: str) -> None:
    lab.check(first.proc.alive() and first.proc.pid == pid, f"after {after}: the first vipd "
              f"(pid {pid}) should still run")
    bound = node.ns.run(["ip", "-o", "addr", "show", "dev", "lo"]).stdout
    for prefix in (lab.VIP4, lab.VIP6):
        address = prefix.split("/")[0]
        lab.check(f" {address}/" in bound, f"after {after}: {prefix} should still be bound on lo; "
                  f"lo has: {bound}")
        lab.check(bird.route(prefix) is not None, f"after {after}: {prefix} left BIRD")
    status = first.status()
    lab.check(all(p["state"] == "Established" for p in status["peers"]),
              f"after {after}: the first vipd's session should be Established: {status['peers']}")
    lab.check(all(p.get("establishedTransitions", 1) == 1 for p in status["peers"]),
              f"after {after}: the first vipd's session should not have flapped: "
              f"{status['peers']}")


if __name__ == "__main__":
    lab.main(main_test, binaries=["bird"], vipd=True)
