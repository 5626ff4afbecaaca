#!/usr/bin/env python3
"""The vipd lab demo: a BIRD fabric and three vipd nodes announcing the Kubernetes VIP.

Waits for the 3-way ECMP route in the fabric's kernel, prints it (IPv4 and IPv6), BIRD's view
(`show route ... all`) and each node's `vipctl status`, then tears everything down. BIRD sends
every node the VIPs' paths back (ADD-PATH), as docs/config.md asks of a fabric, so each status
shows the fabric's view: three announcers, not "fabric view unavailable".
Run as root: VIPD_BUILD_DIR=build python3 tests/e2e/demo.py [--hold SECONDS]
"""
import sys
import time

import lab


def banner(title: str) -> None:
    print(f"\n=== {title} " + "=" * max(0, 70 - len(title)), flush=True)


def demo() -> None:
    hold = float(sys.argv[sys.argv.index("--hold") + 1]) if "--hold" in sys.argv else 0
    with lab.Lab("demo") as L:
        e = lab.build_ecmp(L, ["vipd", "vipd", "vipd"], add_paths=True)
        f = e.topo.fabric
        for speaker in e.speakers:
            lab.wait_until(lambda s=speaker: f"fabric: {lab.VIP4} 3 announcer(s)" in
                           s.vipctl("status"), 30, 0.2,
                           lambda s=speaker: f"{s.name}: the fabric's view of three announcers:\n"
                           f"{s.vipctl('status')}")
        banner(f"fabric kernel: ip route show {lab.VIP4} (ECMP after {e.times['ecmp']:.1f}s)")
        print(f.ip("route", "show", lab.VIP4).stdout.rstrip())
        banner(f"fabric kernel: ip -6 route show {lab.VIP6}")
        print(f.ip("-6", "route", "show", lab.VIP6).stdout.rstrip())
        for prefix in (lab.VIP4, lab.VIP6):
            banner(f"birdc show route for {prefix} all")
            print(e.bird.route_all(prefix).rstrip())
        for node, speaker in zip(e.topo.nodes, e.speakers):
            banner(f"node {node.index} ({node.v4}): vipctl status")
            print(speaker.vipctl("status").rstrip())
        if hold:
            lab.log(f"holding the lab for {hold:.0f}s (namespaces prefix {L.prefix})")
            time.sleep(hold)


if __name__ == "__main__":
    lab.main(demo, binaries=lab.Bird.binaries, vipd=True)
