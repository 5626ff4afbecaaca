#!/usr/bin/env python3
"""e2e: the return-path check (issue 19 part 1). Three vipd nodes (AS 65001-65003) behind a BIRD
fabric (AS 65000) that installs a 3-way ECMP kernel route for the VIP; each vipd probes the
fabric router (its BGP peer, the default target) with ICMP echoes from its node address and
from the VIP, on the documented defaults (interval 2s, 4 flows, fall 3, rise 2).

Phase 1, 12 s: the fabric hashes on addresses only (net.ipv4.fib_multipath_hash_policy=0, the
kernel default), so the answers to all three nodes' VIP-sourced echoes land on one node. Asserts
no node leaves the fabric route at any 0.2 s sample, every node reports its IPv4 VIP passing,
and answers were relayed (vipd_return_path_relays_total{result="sent"} grew on some node and
vipd_return_path_answers_total{source="vip",via="relay"} on two): without the relay, two of the
three nodes would see no answers.

Phase 2: an nftables rule on the fabric's bridge port for node 1 drops every IPv4 packet with
the VIP as source coming from node 1 (an anti-spoof filter): node 1's path must leave the
fabric's route within 20 s, its status must say why ("VIP-sourced packets get no answer"), its
/readyz fail, vipd_return_path_state{state="broken"} be 1; nodes 2 and 3 stay in the route at
every sample, and node 1's IPv6 VIP (not filtered, and not checked: the fabric has no IPv6
peer address) stays announced.

Phase 3: the rule removed: node 1 back in the route within 30 s.

Clients (phases 2 and 3): from the calm phase's end the fabric hashes on ports too (policy 1),
so that a client namespace behind the fabric spreads its new connections (20 a second, 1 s
timeout each, to an HTTP responder on the VIP on every node) over the three nodes. While node 1
is filtered and still announced, the connections hashed to it fail (its answers are dropped);
the test asserts none fails that started after node 1's path left the fabric (plus the client
timeout) or after the rule was removed, and prints how many failed before. One exception, a
property of the fabric and not of vipd: when node 1's path comes back, the kernel's
hash-threshold ECMP maps some flows to another next hop, so a connection in flight at that
instant can be reset by the node it moves to. Connections in flight then (started up to the
client timeout before node 1's return, 0.3 s either side for the polling) may fail only with a
reset, and at most a third of them; each one is printed.
"""
import json
import os
import sys
import time

import lab

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(lab.E2E_DIR)), "bench"))
import benchlab  # noqa: E402  (add_client: the client namespace and the VIP responders)

CLIENT_RATE = 20
CLIENT_TIMEOUT_S = 1.0
CLIENT_DURATION_S = 30  # the filter, the withdrawal, the hold and the return take about 20 s

VIP4_ADDR = lab.VIP4.split("/")[0]
CALM_S = 12  # six rounds (2 s each) with no filter
LEAVE_BOUND_S = 20
RETURN_BOUND_S = 30


def rp_vip(v: lab.Vipd) -> dict:
    return v.status().get("returnPath", {}).get("vips", {}).get(lab.VIP4, {})


def metric(v: lab.Vipd, name: str, **labels: str) -> float:
    return v.metric(name, **labels) or 0.0


def test() -> None:
    with lab.Lab("return-path") as L:
        e = lab.build_ecmp(L, ["vipd", "vipd", "vipd"])
        topo, nodes, vipds = e.topo, e.topo.nodes, e.speakers
        topo.fabric.sysctl("net.ipv4.fib_multipath_hash_policy", "0")
        client = benchlab.add_client(L, topo)
        all4 = sorted(n.v4 for n in nodes)

        # ---- phase 1: address-only hashing, no filter: nobody leaves ----
        t0 = time.monotonic()
        lab.wait_until(lambda: all(rp_vip(v).get("state") == "passing" for v in vipds), 30, 0.2,
                       lambda: "every node's return path to pass: "
                       + "; ".join(f"node {n.index}: {rp_vip(v)}" for n, v in zip(nodes, vipds)))
        lab.log(f"all three return paths verified {time.monotonic() - t0:.1f}s after ECMP")
        t_calm = time.monotonic()
        samples = 0
        while time.monotonic() - t_calm < CALM_S:
            hops = topo.fabric.kernel_nexthops(lab.VIP4)
            lab.check(hops == all4, f"a node left the fabric route with no filter in place "
                      f"({time.monotonic() - t_calm:.1f}s into the calm phase): {hops}")
            samples += 1
            time.sleep(0.2)
        states = [rp_vip(v).get("state") for v in vipds]
        lab.check(states == ["passing"] * 3, f"return-path states after the calm phase: {states}")
        relayed_sent = [metric(v, "vipd_return_path_relays_total", result="sent") for v in vipds]
        via_relay = [metric(v, "vipd_return_path_answers_total", source="vip", via="relay")
                     for v in vipds]
        direct = [metric(v, "vipd_return_path_answers_total", source="vip", via="direct")
                  for v in vipds]
        lab.log(f"calm phase: {samples} samples, 3/3 paths throughout; relays sent per node "
                f"{relayed_sent}, VIP answers received direct {direct}, via relay {via_relay}")
        lab.check(sum(relayed_sent) > 0 and sum(1 for r in via_relay if r > 0) >= 2,
                  "with address-only hashing two nodes' answers must come back relayed")
        vip6_status = vipds[0].status()["returnPath"]["vips"].get(lab.VIP6, {})
        lab.check("no IPv6 target" in vip6_status.get("reason", ""),
                  f"the IPv6 VIP has no IPv6 target and must say so: {vip6_status}")

        # ---- phase 2: node 1's VIP-sourced packets dropped at the fabric ----
        topo.fabric.sysctl("net.ipv4.fib_multipath_hash_policy", "1")
        load_out = L.path("load.json")
        load = benchlab.run_load(L, client, CLIENT_RATE, CLIENT_DURATION_S, CLIENT_TIMEOUT_S,
                                 load_out)
        time.sleep(2)  # the clients' baseline: every node answers
        rules = L.path("antispoof.nft")
        with open(rules, "w") as f:
            f.write("table bridge antispoof {\n"
                    "  chain pre {\n"
                    "    type filter hook prerouting priority -300;\n"
                    f"    iifname \"n1\" ip saddr {VIP4_ADDR} counter drop\n"
                    "  }\n"
                    "}\n")
        lab.run(topo.fabric.argv(["nft", "-f", rules]))
        t_filter = time.monotonic()
        rest = sorted(n.v4 for n in nodes[1:])
        while nodes[0].v4 in topo.fabric.kernel_nexthops(lab.VIP4):
            hops = topo.fabric.kernel_nexthops(lab.VIP4)
            lab.check(all(h in hops for h in rest),
                      f"node 2 or 3 left the route while only node 1 was filtered: {hops}")
            lab.check(time.monotonic() - t_filter < LEAVE_BOUND_S,
                      f"node 1 still in the fabric route {LEAVE_BOUND_S}s after the filter: "
                      f"{rp_vip(vipds[0])}")
            time.sleep(0.1)
        leave_s = time.monotonic() - t_filter
        t_gone = time.time()
        lab.log(f"node 1's path left the fabric {leave_s:.1f}s after the anti-spoof rule")
        lab.check(topo.fabric.kernel_nexthops(lab.VIP4) == rest,
                  f"nodes 2 and 3 must stay: {topo.fabric.route_show(lab.VIP4)}")
        rp = rp_vip(vipds[0])
        lab.check(rp.get("state") == "broken" and "VIP-sourced packets get no answer"
                  in rp.get("reason", ""), f"node 1's status must say why: {rp}")
        code, body = vipds[0].http("/readyz")
        lab.check(code == 503 and "VIP-sourced packets get no answer" in body,
                  f"node 1's /readyz must fail with the reason: {code} {body!r}")
        lab.check(metric(vipds[0], "vipd_return_path_state", vip=lab.VIP4, state="broken") == 1,
                  "vipd_return_path_state{state=broken} must be 1 on node 1")
        lab.check(nodes[0].v6 in topo.fabric.kernel_nexthops(lab.VIP6),
                  "node 1's IPv6 VIP is not filtered and must stay announced")
        print(vipds[0].vipctl("status"), flush=True)
        lab.check(bool(vipds[0].log_lines("VIP-sourced packets get no answer")),
                  "node 1 must log the withdrawal and its reason")
        # Some seconds withdrawn: nodes 2 and 3 hold, node 1 stays out.
        t_hold = time.monotonic()
        while time.monotonic() - t_hold < 6:
            lab.check(topo.fabric.kernel_nexthops(lab.VIP4) == rest,
                      f"while node 1 is filtered the route must stay on nodes 2 and 3: "
                      f"{topo.fabric.route_show(lab.VIP4)}")
            time.sleep(0.2)

        # ---- phase 3: the filter removed ----
        t_removed = time.time()
        lab.run(topo.fabric.argv(["nft", "delete", "table", "bridge", "antispoof"]))
        t_clear = time.monotonic()
        lab.wait_until(lambda: topo.fabric.kernel_nexthops(lab.VIP4) == all4, RETURN_BOUND_S,
                       0.1, lambda: f"node 1 back in the fabric route within {RETURN_BOUND_S}s "
                       f"of removing the rule: {rp_vip(vipds[0])}")
        back_s = time.monotonic() - t_clear
        lab.log(f"node 1's path back {back_s:.1f}s after the rule was removed "
                f"(state {rp_vip(vipds[0]).get('state')})")
        code, _ = vipds[0].http("/readyz")
        lab.wait_until(lambda: vipds[0].http("/readyz")[0] == 200, 10, 0.2,
                       "node 1 ready again")
        # ---- what the clients saw ----
        lab.wait_until(lambda: not load.alive(), CLIENT_DURATION_S + 30, 0.5,
                       "the client load to finish")
        with open(load_out) as f:
            requests = json.load(f)["requests"]
        t_rule = t_gone - leave_s
        # A request still in flight when the rule went in (started up to the client timeout
        # before it) may be caught by it: it counts with the filtered ones, not the calm.
        before = [r for r in requests if r["t"] + CLIENT_TIMEOUT_S < t_rule]
        filtered = [r for r in requests if t_rule - CLIENT_TIMEOUT_S <= r["t"] < t_gone]
        after = [r for r in requests if r["t"] >= t_gone + CLIENT_TIMEOUT_S]
        failed = lambda rs: [r for r in rs if "error" in r]  # noqa: E731
        by_node = lambda rs: {n: sum(1 for r in rs if r.get("node") == n)  # noqa: E731
                              for n in ("node1", "node2", "node3")}
        lab.log(f"clients: before the rule {len(failed(before))} of {len(before)} failed "
                f"({by_node(before)}); filtered and still announced {len(failed(filtered))} of "
                f"{len(filtered)} failed; after node 1 left (+{CLIENT_TIMEOUT_S:.0f}s) "
                f"{len(failed(after))} of {len(after)} failed ({by_node(after)})")
        lab.check(not failed(before), f"no client failure before the filter: {failed(before)}")
        lab.check(by_node(before)["node1"] > 0, "node 1 answered clients before the filter")
        # Flows in flight when node 1's path returns may be rehashed to it (see the docstring).
        rejoin = t_removed + back_s
        moved = [r for r in after if rejoin - CLIENT_TIMEOUT_S - 0.3 <= r["t"] <= rejoin + 0.3]
        steady = [r for r in after if r not in moved]
        lab.log(f"clients in flight when node 1 came back: {len(failed(moved))} of {len(moved)} "
                f"failed {failed(moved)}")
        lab.check(not failed(steady), f"no client failure once node 1's path is gone: "
                  f"{failed(steady)[:5]}")
        lab.check(all("reset" in r["error"] for r in failed(moved))
                  and len(failed(moved)) <= max(1, len(moved) // 3),
                  f"connections in flight when node 1's path came back may only be reset by "
                  f"the ECMP rehash, and only a few: {failed(moved)}")
        lab.check(any(r.get("node") == "node1" for r in requests if r["t"] > t_removed + back_s),
                  "node 1 answers clients again once it is back")
        print(f"FIGURES return_path leave_s={leave_s:.2f} back_s={back_s:.2f} "
              f"relays_sent={sum(relayed_sent):.0f} client_failed_while_filtered="
              f"{len(failed(filtered))}/{len(filtered)} client_failed_after={len(failed(after))}/"
              f"{len(after)}", flush=True)


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries + ["nft"], vipd=True)
