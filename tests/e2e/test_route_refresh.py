#!/usr/bin/env python3
"""e2e: ROUTE-REFRESH (RFC 2918). One vipd node (AS 65001) against a BIRD fabric (AS 65000).

vipd advertises the route-refresh capability, so `birdc reload in node1` makes BIRD send it a
ROUTE-REFRESH (one per channel: ipv4 and ipv6). Asserts:
- before: both VIPs in BIRD, vipd's status shows routeRefreshReceived 0;
- after: routeRefreshReceived >= 1, updatesSent grew (vipd re-sent its Adj-RIB-Out), the session
  never left Established (establishedTransitions still 1, BIRD still Established), and both VIPs
  are in BIRD with exactly the attributes they had before (next hop, AS path, communities...).
"""
import re

import lab

REFRESH_BOUND_S = 10


def bgp_attributes(bird: lab.Bird, prefix: str) -> list[str]:
    """The `via` and `BGP.*` lines of BIRD's route for prefix (no timestamps)."""
    text = bird.route_all(prefix)
    return [line.strip() for line in text.splitlines()
            if re.match(r"\s*(via |BGP\.)", line)]


def test() -> None:
    with lab.Lab("route-refresh") as L:
        s = lab.build_single_vipd(L)
        bird, vipd, node = s.bird, s.vipd, s.node
        lab.wait_established(bird, [node.v4], 30)
        for prefix, nh in ((lab.VIP4, node.v4), (lab.VIP6, node.v6)):
            lab.wait_until(lambda p=prefix, nh=nh: nh in ((bird.route(p) or {}).get("nexthops", [])),
                           15, 0.1, f"{prefix} via {nh} in BIRD")
        caps = bird.protocol_all(node.v4)
        neighbor_caps = caps.split("Neighbor capabilities", 1)[-1].split("Session:", 1)[0]
        lab.check("Route refresh" in neighbor_caps,
                  f"BIRD should see vipd's route-refresh capability:\n{caps}")

        # Settled: the initial UPDATEs and End-of-RIBs are out and counted.
        before = lab.wait_until(lambda: (lambda p: p if p["endOfRibReceived"] >= 2
                                         and p["prefixesAdvertised"] == 2 else None)(
            vipd.peer_status(lab.FABRIC_V4)), 10, 0.2, "vipd's initial exchange to settle")
        attrs_before = {p: bgp_attributes(bird, p) for p in (lab.VIP4, lab.VIP6)}
        lab.log(f"before refresh: state={before['state']} routeRefreshReceived="
                f"{before['routeRefreshReceived']} updatesSent={before['updatesSent']} "
                f"establishedTransitions={before['establishedTransitions']}")
        for p, a in attrs_before.items():
            lab.log(f"  BIRD {p}: {a}")
        lab.check(before["state"] == "Established", f"vipd's view: {before}")
        lab.check(before["routeRefreshReceived"] == 0,
                  f"no ROUTE-REFRESH yet, but routeRefreshReceived={before['routeRefreshReceived']}")
        lab.check(before["establishedTransitions"] == 1, f"one session so far: {before}")

        out = bird.reload_in(node.v4)
        lab.log(f"birdc reload in node1: {out.strip()!r}")
        after = lab.wait_until(lambda: (lambda p: p if p["routeRefreshReceived"] >= 1
                                        and p["updatesSent"] > before["updatesSent"] else None)(
            vipd.peer_status(lab.FABRIC_V4)), REFRESH_BOUND_S, 0.1,
            lambda: f"vipd to count a ROUTE-REFRESH and re-send (status: "
                    f"{vipd.peer_status(lab.FABRIC_V4)})")
        # Let the re-sent UPDATEs land in BIRD before comparing.
        lab.wait_until(lambda: all(bgp_attributes(bird, p) for p in attrs_before), 5, 0.1,
                       "both VIPs in BIRD after the refresh")
        lab.log(f"after refresh: state={after['state']} routeRefreshReceived="
                f"{after['routeRefreshReceived']} updatesSent={after['updatesSent']} "
                f"establishedTransitions={after['establishedTransitions']}")
        for line in vipd.log_lines(r"peer .*refresh"):
            print(f"  vipd log: {line}")

        # The session survives the refresh.
        lab.wait_never(lambda: bird.neighbor_state(node.v4) != "Established"
                       or vipd.peer_status(lab.FABRIC_V4)["establishedTransitions"] != 1,
                       2, 0.2, "the session flapping after ROUTE-REFRESH")
        final = vipd.peer_status(lab.FABRIC_V4)
        lab.check(final["state"] == "Established", f"vipd's view after refresh: {final}")
        lab.check(final["establishedTransitions"] == 1,
                  f"establishedTransitions should stay 1: {final['establishedTransitions']}")
        lab.check(final["lastError"] == "" and final["notificationsSent"] == 0
                  and final["notificationsReceived"] == 0, f"no errors expected: {final}")
        lab.check(final["prefixesAdvertised"] == 2, f"still 2 prefixes advertised: {final}")
        for p, a in attrs_before.items():
            now = bgp_attributes(bird, p)
            lab.check(now == a, f"{p} changed across the refresh:\n before {a}\n after  {now}")
        lab.check(s.topo.fabric.kernel_nexthops(lab.VIP4) == [node.v4],
                  f"fabric kernel route for {lab.VIP4}: {s.topo.fabric.route_show(lab.VIP4)!r}")
        lab.log(f"refresh OK: routeRefreshReceived {before['routeRefreshReceived']} -> "
                f"{final['routeRefreshReceived']}, updatesSent {before['updatesSent']} -> "
                f"{final['updatesSent']}, attributes unchanged")


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries, vipd=True)
