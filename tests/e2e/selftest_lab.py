#!/usr/bin/env python3
"""Self-test of the e2e harness without vipd: real peers stand in for vipd.

1. ECMP: BIRD fabric + three nodes announcing the VIPs (GoBGP, GoBGP, ExaBGP); the fabric
   kernel gets 3-way ECMP routes for the /32 and /128; stopping one node removes its next hop.
2. Peer views: an ExaBGP "node" against each fabric peer (BIRD, FRR, GoBGP, ExaBGP) over eBGP
   and iBGP, asserting through the same helpers the vipd tests use.

Run as root: python3 tests/e2e/selftest_lab.py [ecmp|peers|PEER...]
"""
import sys
import time

import lab


def ecmp() -> None:
    with lab.Lab("selftest-ecmp") as L:
        e = lab.build_ecmp(L, ["gobgp", "gobgp", "exabgp"])
        lab.log(f"3-way ECMP: {e.times}")
        print(e.topo.fabric.route_show(lab.VIP4), e.topo.fabric.route_show(lab.VIP6))
        r = e.bird.route(lab.VIP4)
        lab.check(r and r["communities"] == lab.COMMUNITIES, f"BIRD route parse: {r}")
        dt = lab.ecmp_withdraw_on_stop(e, index=2)
        lab.log(f"withdraw after SIGTERM of node 3 (ExaBGP): {dt:.2f}s")


def peers(kinds) -> None:
    for kind in kinds:
        for ibgp in (False, True):
            with lab.Lab(f"selftest-{kind}-{'ibgp' if ibgp else 'ebgp'}") as L:
                t = lab.peer_scenario(L, kind, "exabgp", ibgp)
                lab.log(f"{kind} {'iBGP' if ibgp else 'eBGP'} with ExaBGP speaker: {t}")


def selftest() -> None:
    args = sys.argv[1:] or ["ecmp", "peers"]
    if "ecmp" in args:
        ecmp()
    kinds = [a for a in args if a in lab.PEER_CLASSES]
    if "peers" in args:
        kinds = list(lab.PEER_CLASSES)
    peers(kinds)


if __name__ == "__main__":
    needed = lab.Bird.binaries + lab.Frr.binaries + lab.Gobgp.binaries + lab.Exabgp.binaries
    lab.main(selftest, binaries=needed)
