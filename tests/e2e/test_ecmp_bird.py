#!/usr/bin/env python3
"""e2e: three vipd nodes (AS 65001-65003) + a BIRD fabric (AS 65000).

Asserts the fabric's kernel gets a 3-way ECMP route for 203.0.113.10/32 and 2001:db8:ffff::10/128,
then SIGTERMs one vipd and asserts its next hop leaves both routes within a bound. Each node has
its own ASN: BIRD merges eBGP paths from different neighbour ASNs (equal local-pref, AS-path
length, origin, MED), which is also how vipd is deployed (see lab.build_ecmp).
"""
import lab

WITHDRAW_BOUND_S = 10  # SIGTERM -> NOTIFICATION/close -> BIRD withdraws -> kernel update


def test() -> None:
    with lab.Lab("ecmp-bird") as L:
        e = lab.build_ecmp(L, ["vipd", "vipd", "vipd"])
        lab.log(f"3-way ECMP reached: setup {e.times['setup']:.2f}s, all Established after "
                f"{e.times['established']:.2f}s, ECMP in the fabric kernel after {e.times['ecmp']:.2f}s")
        print(e.topo.fabric.route_show(lab.VIP4) + e.topo.fabric.route_show(lab.VIP6), flush=True)
        dt = lab.ecmp_withdraw_on_stop(e, index=0, bound=WITHDRAW_BOUND_S)
        lab.log(f"node 1's next hop left both fabric routes {dt:.2f}s after SIGTERM "
                f"(bound {WITHDRAW_BOUND_S}s)")
        print(e.topo.fabric.route_show(lab.VIP4) + e.topo.fabric.route_show(lab.VIP6), flush=True)


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries, vipd=True)
