#!/usr/bin/env python3
"""e2e: one vipd node against ExaBGP 4.2 on the fabric, over eBGP (65001 -> 65000) and iBGP (65000).

Asserts, in ExaBGP 4.2's own view: session Established; 203.0.113.10/32 via the node's IPv4 and
2001:db8:ffff::10/128 via its global IPv6 (nextHopIpv6); communities 65000:100 and large
communities 65000:1:2; for iBGP LOCAL_PREF 100 and an empty AS_PATH. See lab.peer_scenario.
"""
import lab


def test() -> None:
    for ibgp in (False, True):
        kind = "iBGP" if ibgp else "eBGP"
        with lab.Lab(f"peer-exabgp-{kind.lower()}") as L:
            t = lab.peer_scenario(L, "exabgp", "vipd", ibgp)
            lab.log(f"exabgp {kind}: Established after {t['established']:.2f}s, "
                    f"both VIPs checked after {t['routes']:.2f}s")


if __name__ == "__main__":
    lab.main(test, binaries=lab.Exabgp.binaries, vipd=True)
