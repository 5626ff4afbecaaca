#!/usr/bin/env python3
"""e2e: never zero at the same instant, for the return-path check and for mixed causes (issue 40
part 3). Three vipd nodes (AS 65001-65003) behind a BIRD fabric that sends every path back (`add
paths tx`); the return-path check enforcing at a quick pace (interval 500ms, timeout 300ms, fall
2, rise 1), each node's health gate on a TCP listener of its own. `ip monitor route` on the
fabric throughout.

1. shared: ROUNDS times, an anti-spoof rule on the fabric's bridge drops every VIP-sourced IPv4
   packet from every node at once (a shared cause: a fabric-wide filter, a uRPF change). The
   fabric never deletes the VIP's route and a node stays announced. What holds it is the return
   path's own evidence rule (docs/return-path.md): once the witnesses say answers no longer
   reach the other nodes either, a node does not count the loss against itself
   ("inconclusive"); a node that saw its own loss before the others' may withdraw first (the
   others still served when its confirmation time ended), never the last.
2. mixed: ROUNDS times, node 1's health listener killed and nodes 2 and 3 filtered, at once:
   two causes, one rule: the route is never deleted, and a node stays held by never-zero (in
   practice all three, degraded alike, so the fabric keeps ECMP over them).
3. single: node 1 alone filtered: it leaves within fall x interval plus the timeout and the
   confirmation time (with a margin for a loaded machine), nodes 2 and 3 stay.
"""
import os
import sys
import time

import lab

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(lab.E2E_DIR)), "bench"))
import benchlab  # noqa: E402  (RouteMonitor: `ip monitor route` on the fabric)

ROUNDS = 10
INTERVAL_S, TIMEOUT_S, FALL = 0.5, 0.3, 2
CONFIRM_MAX_S = 0.6  # policy/withdraw_confirmation.h: 300 ms + up to 300 ms of jitter
SINGLE_BOUND_S = (FALL + 1) * INTERVAL_S + TIMEOUT_S + CONFIRM_MAX_S + 1.5
HEALTH_PORT = 7443
VIP4_ADDR = lab.VIP4.split("/")[0]
LISTENER = ("import socket, sys, time\n"
            "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
            "s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen(64)\n"
            "while True:\n    c, _ = s.accept(); c.close()\n")


def fabric_vip(v: lab.Vipd) -> dict:
    return v.status().get("fabric", {}).get("vips", {}).get(lab.VIP4, {})


def rp_vip(v: lab.Vipd) -> dict:
    return v.status().get("returnPath", {}).get("vips", {}).get(lab.VIP4, {})


def announced(v: lab.Vipd) -> bool:
    return any(x.get("address") == lab.VIP4 and x.get("announced")
               for x in v.status().get("vips", []))


def deletions(monitor, since: float) -> list:
    return [round(t - since, 3) for t, hops in monitor.events if t >= since and not hops]


def changes(monitor, since: float) -> list:
    return [(round(t - since, 3), len(h)) for t, h in monitor.events if t >= since]


def test() -> None:
    with lab.Lab("never-zero-return-path") as L:
        listeners: dict = {}

        def listen(node: lab.Node, tag: str) -> None:
            listeners[node.index] = L.start(node.ns, f"health-n{node.index}-{tag}",
                                            [sys.executable, "-c", LISTENER, str(HEALTH_PORT)])

        def edit(c: dict, node: lab.Node) -> None:
            listen(node, "0")
            c["health"] = {"type": "tcp", "address": f"127.0.0.1:{HEALTH_PORT}",
                           "interval": "300ms", "timeout": "300ms", "rise": 1, "fall": 2,
                           "unbindWhenUnhealthy": False}
            c["guard"] = {"minAnnouncers": 1, "expectedAnnouncers": 3}
            c["returnPath"] = {"mode": "enforce", "interval": f"{int(INTERVAL_S * 1000)}ms",
                               "timeout": f"{int(TIMEOUT_S * 1000)}ms", "fall": FALL, "rise": 1}

        e = lab.build_ecmp(L, ["vipd", "vipd", "vipd"], vipd_edit=edit, add_paths=True)
        topo, nodes, vipds = e.topo, e.topo.nodes, e.speakers
        all4 = sorted(n.v4 for n in nodes)
        monitor = benchlab.RouteMonitor(L, topo.fabric, VIP4_ADDR)
        rules = L.path("antispoof.nft")

        def filter_nodes(indexes: list[int]) -> None:
            ports = ", ".join(f'"n{i}"' for i in indexes)
            with open(rules, "w") as f:
                f.write("table bridge antispoof {\n  chain pre {\n"
                        "    type filter hook prerouting priority -300;\n"
                        f"    iifname {{ {ports} }} ip saddr {VIP4_ADDR} counter drop\n"
                        "  }\n}\n")
            lab.run(topo.fabric.argv(["nft", "-f", rules]))

        def unfilter() -> None:
            lab.run(topo.fabric.argv(["nft", "delete", "table", "bridge", "antispoof"]))

        def settled() -> bool:
            return (topo.fabric.kernel_nexthops(lab.VIP4) == all4 and
                    all(fabric_vip(v).get("announce") == "normal" and
                        int(fabric_vip(v).get("othersServing", -1)) == 2 for v in vipds))

        def round_trip(kind: str, round_no: int, fail, restore) -> tuple[int, int]:
            lab.wait_until(settled, 30, 0.1, lambda: f"{kind} round {round_no}: every node "
                           f"normal, in the route and seeing two others: "
                           f"{[fabric_vip(v) for v in vipds]} {topo.fabric.route_show(lab.VIP4)}")
            t0 = time.time()
            fail()
            # Long enough for every node to see it (fall rounds and one more, each round's
            # timeout) and to decide (the confirmation time), with a margin; nothing may move
            # after that.
            time.sleep((FALL + 2) * INTERVAL_S + TIMEOUT_S + CONFIRM_MAX_S + 1.0)
            states = [(fabric_vip(v).get("announce"), bool(fabric_vip(v).get("heldByNeverZero")),
                       announced(v), rp_vip(v).get("lastRound")) for v in vipds]
            held = sum(1 for _, h, _, _ in states if h)
            hops = topo.fabric.kernel_nexthops(lab.VIP4)
            gone = deletions(monitor, t0)
            lab.check(not gone, f"{kind} round {round_no}: the fabric deleted the VIP's route at "
                      f"{gone} s; changes {changes(monitor, t0)}")
            lab.check(len(hops) >= 1 and any(a for _, _, a, _ in states),
                      f"{kind} round {round_no}: a node stays: {states}")
            if kind == "shared":
                lab.check(all(rp == "inconclusive" for _, _, a, rp in states if a),
                          f"shared round {round_no}: the nodes that stay do not count a loss "
                          f"every node sees against themselves: {states}")
            else:
                lab.check(held >= 1, f"mixed round {round_no}: a node held by never-zero: "
                          f"{states}")
            restore()
            lab.log(f"{kind} round {round_no}: (announce, held, announced, return path) per node "
                    f"{states}; {len(hops)} path(s) left, route never deleted; changes "
                    f"{changes(monitor, t0)}")
            return held, len(hops)

        # ---- 1. every node's VIP-sourced packets dropped at once ----
        shared = [round_trip("shared", r, lambda: filter_nodes([1, 2, 3]), unfilter)
                  for r in range(1, ROUNDS + 1)]

        # ---- 2. mixed causes: node 1's health check, nodes 2 and 3's return path ----
        def mixed_fail() -> None:
            listeners[1].stop()
            filter_nodes([2, 3])

        def mixed_restore(r: int) -> None:
            unfilter()
            listen(nodes[0], f"m{r}")

        mixed = [round_trip("mixed", r, mixed_fail, lambda r=r: mixed_restore(r))
                 for r in range(1, ROUNDS + 1)]

        # ---- 3. a single filtered node still leaves ----
        lab.wait_until(settled, 30, 0.1, "every node normal before the single round")
        t0 = time.time()
        filter_nodes([1])
        left = monitor.wait(lambda h: nodes[0].v4 not in h and len(h) == 2, t0,
                            SINGLE_BOUND_S + 10, "node 1's path to leave the fabric's route") - t0
        lab.check(left <= SINGLE_BOUND_S, f"a single node whose return path fails leaves within "
                  f"{SINGLE_BOUND_S:.1f} s, not {left:.2f} s")
        lab.check(not deletions(monitor, t0), f"single: route deleted: {changes(monitor, t0)}")
        unfilter()
        lab.wait_until(lambda: topo.fabric.kernel_nexthops(lab.VIP4) == all4, 20, 0.1,
                       "node 1 back in the route")
        print(f"never zero, return path: {ROUNDS} shared rounds (held per round "
              f"{[h for h, _ in shared]}, paths left {[p for _, p in shared]}), {ROUNDS} mixed "
              f"rounds (held {[h for h, _ in mixed]}, paths left {[p for _, p in mixed]}), the "
              f"VIP's route never deleted; a single filtered node left in {left:.2f} s (bound "
              f"{SINGLE_BOUND_S:.1f} s)", flush=True)


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries + ["nft", "ip"], vipd=True)
