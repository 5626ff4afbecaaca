#!/usr/bin/env python3
"""e2e: one frozen node never takes the VIP down (issue 28, "Done when" 1).

Three vipd nodes (AS 65001-65003) behind a BIRD fabric (AS 65000, hold time 9 s) that sends
nothing back (no ADD-PATH: no fabric view), every setting at its default (the return-path check
in enforce mode). The fabric's ECMP hash puts every answer to the nodes' VIP-sourced echoes on
one node, which relays the others' answers back to them.

The relaying node's vipd is frozen (SIGSTOP) for 45 s: 22 return-path rounds, seven times the
`fall` of 3 that would withdraw, and 36 s past its hold time. Before issue 28 the other two
nodes saw their answers stop, took it for an anti-spoof filter and withdrew 7 s later; the
frozen node's hold time ran out at 9 s and the fabric had no route to the VIP until the 60 s
retry.

Asserts, sampling the fabric's kernel route every 0.2 s: the VIP has a route at every sample; the
two healthy nodes are in it at every sample (before and after the frozen one's hold time); the
frozen node leaves within its hold time (+3 s); the healthy nodes' status never says broken and
counts the silent rounds it did not hold against them (their witness, the frozen node, did not
answer). Clients (20 new connections a second through the fabric, 1 s timeout): none fails that
started more than the hold time + 2 s after the freeze. SIGCONT: the node is back in the route
within 30 s.
"""
import json
import os
import signal
import sys
import time

import lab

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(lab.E2E_DIR)), "bench"))
import benchlab  # noqa: E402  (add_client: the client namespace and the VIP responders)

FREEZE_S = 45
HOLD_S = 9
CLIENT_RATE = 20
CLIENT_TIMEOUT_S = 1.0


def rp_vip(v: lab.Vipd) -> dict:
    return v.status().get("returnPath", {}).get("vips", {}).get(lab.VIP4, {})


def counter(v: lab.Vipd, key: str) -> int:
    return int(v.status().get("returnPath", {}).get("counters", {}).get(key, 0))


def test() -> None:
    with lab.Lab("freeze") as L:
        e = lab.build_ecmp(L, ["vipd", "vipd", "vipd"])
        topo, nodes, vipds = e.topo, e.topo.nodes, e.speakers
        # Ports in the hash for the clients' TCP; ICMP has none, so every answer to the VIP
        # still lands on one node.
        topo.fabric.sysctl("net.ipv4.fib_multipath_hash_policy", "1")
        client = benchlab.add_client(L, topo)
        all4 = sorted(n.v4 for n in nodes)
        lab.wait_until(lambda: all(rp_vip(v).get("state") == "passing" for v in vipds), 40, 0.2,
                       lambda: "every node's return path to pass: "
                       + "; ".join(f"node {n.index}: {rp_vip(v)}" for n, v in zip(nodes, vipds)))
        # The relaying node: the one whose relays grow while the others' answers come relayed.
        before = [counter(v, "relaysSent") for v in vipds]
        time.sleep(5)
        grown = [counter(v, "relaysSent") - b for v, b in zip(vipds, before)]
        relayer = max(range(3), key=lambda i: grown[i])
        lab.check(grown[relayer] > 0, f"no node relays answers (relays sent in 5 s: {grown})")
        healthy = [i for i in range(3) if i != relayer]
        relayed = [rp_vip(vipds[i]).get("lastDelivery", "") for i in healthy]
        lab.log(f"node {relayer + 1} relays the others' answers (relays in 5 s: {grown}); "
                f"the others' last delivery: {relayed}")
        lab.check(all(r.startswith("relayed by") for r in relayed),
                  f"the healthy nodes' answers must come relayed before the freeze: {relayed}")
        silences0 = [counter(vipds[i], "silencesUncounted") for i in healthy]

        load_out = L.path("load.json")
        load = benchlab.run_load(L, client, CLIENT_RATE, FREEZE_S + 10, CLIENT_TIMEOUT_S,
                                 load_out)
        time.sleep(2)
        frozen = vipds[relayer]
        t_freeze_wall = time.time()
        t_freeze = time.monotonic()
        frozen.proc.signal(signal.SIGSTOP)
        gone_at = None
        samples = 0
        healthy4 = sorted(nodes[i].v4 for i in healthy)
        try:
            while time.monotonic() - t_freeze < FREEZE_S:
                hops = topo.fabric.kernel_nexthops(lab.VIP4)
                t = time.monotonic() - t_freeze
                lab.check(hops, f"{t:.1f}s into the freeze the fabric has no route to the VIP")
                lab.check(all(h in hops for h in healthy4),
                          f"{t:.1f}s into the freeze a healthy node left the route: {hops}")
                if gone_at is None and nodes[relayer].v4 not in hops:
                    gone_at = t
                if t > HOLD_S + 3:
                    lab.check(gone_at is not None,
                              f"the frozen node is still in the route {t:.1f}s into the freeze")
                samples += 1
                time.sleep(0.2)
            states = [rp_vip(vipds[i]).get("state") for i in healthy]
            lab.check(all(s == "passing" for s in states),
                      f"the healthy nodes' return path after the freeze: {states}")
            silences = [counter(vipds[i], "silencesUncounted") - s0
                        for i, s0 in zip(healthy, silences0)]
            witness = [counter(vipds[i], "witnessQueriesSent") for i in healthy]
            for i in healthy:
                lab.check(not vipds[i].log_lines("VIP-sourced packets get no answer"),
                          f"node {i + 1} logged a broken return path during the freeze")
        finally:
            frozen.proc.signal(signal.SIGCONT)
        t_thaw = time.monotonic()
        lab.log(f"frozen {FREEZE_S}s: {samples} samples, the VIP routed at every one, the healthy "
                f"nodes in at every one; the frozen node left after {gone_at:.1f}s; silent rounds "
                f"not counted against the healthy nodes: {silences}; witness queries sent: "
                f"{witness}")
        lab.check(any(n > 0 for n in silences),
                  "the healthy nodes must have had silent rounds (their relayer froze), else the "
                  "test did not exercise the rule")
        lab.wait_until(lambda: topo.fabric.kernel_nexthops(lab.VIP4) == all4, 30, 0.2,
                       lambda: f"all three nodes back after SIGCONT: "
                       f"{topo.fabric.route_show(lab.VIP4)}")
        back_s = time.monotonic() - t_thaw
        lab.wait_until(lambda: not load.alive(), FREEZE_S + 40, 0.5, "the client load to finish")
        with open(load_out) as f:
            requests = json.load(f)["requests"]
        settled = t_freeze_wall + HOLD_S + 2
        during = [r for r in requests if t_freeze_wall <= r["t"] < settled]
        after = [r for r in requests if settled <= r["t"] < t_freeze_wall + FREEZE_S]
        failed = lambda rs: [r for r in rs if "error" in r]  # noqa: E731
        lab.log(f"clients: until the frozen node's path left (+2 s) {len(failed(during))} of "
                f"{len(during)} failed; after, {len(failed(after))} of {len(after)}")
        lab.check(len(after) > 100 and not failed(after),
                  f"no client failure once the frozen node's path is gone: {failed(after)[:5]}")
        print(f"FIGURES freeze frozen_s={FREEZE_S} frozen_left_s={gone_at:.2f} back_s={back_s:.2f}"
              f" route_samples={samples} client_failed_until_gone={len(failed(during))}/"
              f"{len(during)} client_failed_after={len(failed(after))}/{len(after)}", flush=True)


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries, vipd=True)
