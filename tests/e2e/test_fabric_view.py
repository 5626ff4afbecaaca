#!/usr/bin/env python3
"""e2e: the fabric's view, the withdraw guard and the never-zero rule against BIRD (issue 28).

Three vipd nodes (AS 65001-65003) behind a BIRD fabric (AS 65000) that sends every node every
path it holds for the VIPs (`add paths tx`); each node's health gate checks a TCP listener on its
loopback (so the test can fail a node's apiserver by stopping it).

1. Every node counts 3 announcers for each VIP (itself and the other two, by next hop, each via
   the fabric, whose AS path holds the node's AS), `vipctl status` lists them, and
   vipd_fabric_announcers{vip} says 3. vipd advertised ADD-PATH receive; BIRD shows it.
2. Node 3 stops (SIGTERM): nodes 1 and 2 count 2.
3. The guard (guard.minAnnouncers 1): node 2's `vipctl withdraw --wait` exits 0; node 1's (the
   last announcer) exits 4, names the announcers that would remain, and node 1 stays in the
   fabric's route; `--force` withdraws it (exit 0, the route is empty); both announce again.
4. Exit codes: a state directory vipd cannot write refuses the withdraw with exit 5 and the node
   stays in the route; peers that do not acknowledge within --timeout (the fabric drops the
   session's packets for a moment) give exit 1 and the node is withdrawn.
5. Never zero: node 1's apiserver stops (its health gate closes) while node 2 serves: node 1
   withdraws. Node 2 is withdrawn by its operator (--force, it is the last healthy one): node 1,
   the only node left, is kept announced, degraded (its AS prepended in BIRD's path), its status,
   /readyz?verbose and vipd_fabric_held_by_never_zero say why. `vipctl announce` on node 2:
   node 1 withdraws again. The VIP had a route at every sample of this phase.
"""
import os
import signal
import sys
import time

import lab

HEALTH_PORT = 7443
LISTENER = """
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(64)
print("listening", flush=True)
while True:
    c, _ = s.accept(); c.close()
"""


def fabric(v: lab.Vipd, vip: str = lab.VIP4) -> dict:
    return v.status().get("fabric", {}).get("vips", {}).get(vip, {})


def count(v: lab.Vipd, vip: str = lab.VIP4) -> int:
    return int(fabric(v, vip).get("count", -1))


def announce(v: lab.Vipd) -> None:
    """vipctl announce, once the drain a `withdraw --wait` left running (its unbind delay) is
    over."""
    def done():
        r = v.vipctl_run("announce")
        lab.check(r.returncode in (0, 5) and ("drain is in progress" in r.stderr
                                              or r.returncode == 0),
                  f"vipctl announce: {r.returncode} {r.stderr}")
        return r.returncode == 0
    lab.wait_until(done, 10, 0.1, f"vipctl announce on {v.name}")


def test() -> None:
    with lab.Lab("fabric-view") as L:
        listeners = {}

        def edit(c: dict, node: lab.Node) -> None:
            c["health"] = {"type": "tcp", "address": f"127.0.0.1:{HEALTH_PORT}",
                           "interval": "300ms", "timeout": "300ms", "rise": 1, "fall": 2,
                           "unbindWhenUnhealthy": True}
            c["guard"] = {"minAnnouncers": 1, "expectedAnnouncers": 3}
            c["returnPath"] = {"mode": "off"}  # this test is about the fabric's view
            listeners[node.index] = L.start(node.ns, f"listener-n{node.index}",
                                            [sys.executable, "-c", LISTENER, str(HEALTH_PORT)])

        e = lab.build_ecmp(L, ["vipd", "vipd", "vipd"], vipd_edit=edit, add_paths=True)
        topo, nodes, vipds, bird = e.topo, e.topo.nodes, e.speakers, e.bird
        all4 = sorted(n.v4 for n in nodes)

        # ---- 1. three announcers everywhere ----
        for vip in (lab.VIP4, lab.VIP6):
            for v in vipds:
                lab.wait_until(lambda v=v, vip=vip: count(v, vip) == 3, 20, 0.2,
                               lambda v=v, vip=vip: f"{v.name} to count 3 announcers of {vip}: "
                               f"{fabric(v, vip)}")
        f1 = fabric(vipds[0])
        others = sorted(a["node"] for a in f1["announcers"] if not a["self"])
        lab.log(f"node 1's view of {lab.VIP4}: {f1}")
        lab.check(others == [f"next hop {nodes[1].v4}", f"next hop {nodes[2].v4}"],
                  f"node 1's other announcers: {others}")
        lab.check(all(a["via"] == [lab.FABRIC_V4] and str(n.asn) in a["asPath"]
                      for a, n in zip([a for a in f1["announcers"] if not a["self"]], nodes[1:])),
                  f"each path via the fabric with the node's AS: {f1['announcers']}")
        text = vipds[0].vipctl("status")
        lab.check(f"fabric: {lab.VIP4} 3 announcer(s)" in text, f"vipctl status:\n{text}")
        announcers = vipds[0].metric("vipd_fabric_announcers", vip=lab.VIP4)
        lab.check(announcers == 3, f"vipd_fabric_announcers{{vip}} must be 3, not {announcers}")
        lab.check(vipds[0].metric("vipd_fabric_expected_announcers") == 3,
                  "vipd_fabric_expected_announcers must be 3")
        caps = bird.protocol_all(nodes[0].v4)
        lab.check("Add-path" in caps or "ADD-PATH" in caps.upper(),
                  f"BIRD must show ADD-PATH negotiated with node 1:\n{caps}")

        # ---- 2. node 3 stops: 2 ----
        vipds[2].stop()
        for v in vipds[:2]:
            lab.wait_until(lambda v=v: count(v) == 2, 20, 0.2,
                           lambda v=v: f"{v.name} to count 2 announcers: {fabric(v)}")
        lab.log("node 3 stopped: nodes 1 and 2 count 2 announcers")

        # ---- 3. the guard ----
        r = vipds[1].vipctl_run("withdraw", "--wait", "--reason", "guard test")
        lab.check(r.returncode == 0, f"node 2's withdraw (node 1 remains) must exit 0: "
                  f"{r.returncode} {r.stdout}{r.stderr}")
        lab.wait_until(lambda: count(vipds[0]) == 1, 20, 0.2,
                       lambda: f"node 1 to count itself alone: {fabric(vipds[0])}")
        r = vipds[0].vipctl_run("withdraw", "--wait", "--reason", "the last")
        lab.log(f"withdraw of the last announcer: exit {r.returncode}: {r.stderr.strip()}")
        lab.check(r.returncode == 4, f"withdrawing the last announcer must exit 4: "
                  f"{r.returncode} {r.stdout}{r.stderr}")
        lab.check("0 other node(s) would remain" in r.stderr and "--force" in r.stderr,
                  f"the refusal names who would remain and --force: {r.stderr}")
        lab.check(topo.fabric.kernel_nexthops(lab.VIP4) == [nodes[0].v4],
                  f"node 1 must still be in the route: {topo.fabric.route_show(lab.VIP4)}")
        lab.check(bool(vipds[0].log_lines("refused: fewer than guard.minAnnouncers")),
                  "vipd must log the refusal")
        r = vipds[0].vipctl_run("withdraw", "--wait", "--force", "--reason", "the last, forced")
        lab.check(r.returncode == 0, f"--force must withdraw: {r.returncode} {r.stderr}")
        lab.wait_until(lambda: not topo.fabric.kernel_nexthops(lab.VIP4), 10, 0.1,
                       "the route to empty after the forced withdraw")
        for v in vipds[:2]:
            announce(v)
        lab.wait_until(lambda: topo.fabric.kernel_nexthops(lab.VIP4) == all4[:2], 20, 0.1,
                       lambda: f"nodes 1 and 2 back: {topo.fabric.route_show(lab.VIP4)}")

        # ---- 4. exit codes 5 and 1 ----
        # Node 1 must see node 2 serve both VIPs (the route above shows only the IPv4 one): else
        # the guard, not the state directory, refuses the next withdraw.
        for vip in (lab.VIP4, lab.VIP6):
            lab.wait_until(lambda vip=vip: count(vipds[0], vip) == 2, 20, 0.05,
                           lambda vip=vip: f"node 1 to count 2 announcers of {vip}: "
                           f"{fabric(vipds[0], vip)}")
        state = vipds[0].status()  # noqa: F841 (vipd answers)
        state_dir = L.path("vipd-n1-state")
        os.makedirs(os.path.join(state_dir, "withdrawn.json"), exist_ok=True)
        r = vipds[0].vipctl_run("withdraw", "--wait", "--reason", "state dir broken")
        lab.log(f"withdraw with an unwritable state: exit {r.returncode}: {r.stderr.strip()}")
        lab.check(r.returncode == 5 and "still announcing" in r.stderr,
                  f"an unwritable state dir must refuse with exit 5: {r.returncode} {r.stderr}")
        lab.check(nodes[0].v4 in topo.fabric.kernel_nexthops(lab.VIP4),
                  "node 1 must stay in the route after the refusal")
        lab.check(bool(vipds[0].log_lines("refused vipctl withdraw")),
                  "vipd must log the refused withdraw")
        os.rmdir(os.path.join(state_dir, "withdrawn.json"))
        drop = L.path("drop.nft")
        with open(drop, "w") as f:
            f.write("table inet drop179 {\n chain in {\n  type filter hook input priority 0;\n"
                    f"  ip saddr {nodes[0].v4} tcp dport 179 drop\n  ip saddr {nodes[0].v4} "
                    "tcp sport 179 drop\n }\n}\n")
        lab.run(topo.fabric.argv(["nft", "-f", drop]))
        try:
            r = vipds[0].vipctl_run("withdraw", "--wait", "--timeout", "1s", "--transient",
                                    "--force", "--reason", "slow peer")
        finally:
            lab.run(topo.fabric.argv(["nft", "delete", "table", "inet", "drop179"]))
        lab.log(f"withdraw with a silent peer: exit {r.returncode}: {r.stderr.strip()}")
        lab.check(r.returncode == 1 and "withdrawn all the same" in r.stderr,
                  f"an unacknowledged withdraw must exit 1: {r.returncode} {r.stderr}")
        lab.wait_until(lambda: nodes[0].v4 not in topo.fabric.kernel_nexthops(lab.VIP4), 15, 0.1,
                       "node 1's path to leave once the fabric hears the withdraw")
        announce(vipds[0])
        lab.wait_until(lambda: topo.fabric.kernel_nexthops(lab.VIP4) == all4[:2], 30, 0.1,
                       lambda: f"nodes 1 and 2 back: {topo.fabric.route_show(lab.VIP4)}")

        # ---- 5. never zero ----
        poller = lab.FabricPoller(topo.fabric, nodes[0].v4, interval=0.05)
        listeners[1].stop()
        lab.wait_until(lambda: nodes[0].v4 not in topo.fabric.kernel_nexthops(lab.VIP4), 15, 0.1,
                       lambda: f"node 1 (apiserver down, node 2 serving) to withdraw: "
                       f"{fabric(vipds[0])}")
        t_hold = time.monotonic()
        r = vipds[1].vipctl_run("withdraw", "--wait", "--force", "--reason", "maintenance")
        lab.check(r.returncode == 0, f"node 2's forced withdraw: {r.returncode} {r.stderr}")
        lab.wait_until(lambda: topo.fabric.kernel_nexthops(lab.VIP4) == [nodes[0].v4], 15, 0.05,
                       lambda: f"node 1, the only node left, to be kept announced: "
                       f"{fabric(vipds[0])}; route {topo.fabric.route_show(lab.VIP4)}")
        held_s = time.monotonic() - t_hold
        f1 = fabric(vipds[0])
        lab.check(f1.get("heldByNeverZero") is True and f1.get("announce") == "degraded",
                  f"node 1's fabric status must say held, degraded: {f1}")
        path = bird.path_from(lab.VIP4, nodes[0].v4)
        lab.log(f"node 1 held announced {held_s:.2f}s after node 2 left; BIRD's path: "
                f"{path and path['asPath']}")
        lab.check(path is not None and path["asPath"].split().count(str(nodes[0].asn)) > 1,
                  f"the held path must be degraded (AS prepended): {path}")
        vip1 = vipds[0].vip_status(lab.VIP4)
        lab.check("never" in vip1["reason"] or "no other node serves it" in vip1["reason"],
                  f"node 1's VIP status must say why it is announced: {vip1}")
        code, body = vipds[0].http("/readyz?verbose")
        lab.check(code == 503 and "no other node serves it" in body,
                  f"/readyz?verbose must name the hold: {code} {body!r}")
        lab.check(vipds[0].metric("vipd_fabric_held_by_never_zero", vip=lab.VIP4) == 1,
                  "vipd_fabric_held_by_never_zero must be 1")
        lab.check(bool(vipds[0].log_lines("kept announced, degraded")), "node 1 must log the hold")
        announce(vipds[1])
        lab.wait_until(lambda: topo.fabric.kernel_nexthops(lab.VIP4) == [nodes[1].v4], 20, 0.05,
                       lambda: f"node 1 to withdraw once node 2 serves again: {fabric(vipds[0])}; "
                       f"route {topo.fabric.route_show(lab.VIP4)}")
        lab.check(vipds[0].metric("vipd_fabric_held_by_never_zero", vip=lab.VIP4) == 0,
                  "vipd_fabric_held_by_never_zero must be 0 again")
        poller.stop()
        samples = poller.samples
        empty = [s for s in samples if not s[2]]
        lab.check(not empty, f"the VIP had no route at {len(empty)} samples of the never-zero "
                  f"phase")
        print(f"FIGURES fabric_view held_after_s={held_s:.2f} samples={len(samples)}", flush=True)


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries + ["nft"], vipd=True)
