#!/usr/bin/env python3
"""e2e: the ghost-VIP guard. One vipd node (AS 65001) against a BIRD fabric (AS 65000).

vipd announces a VIP only while the address is on its configured interface (getifaddrs, polled
every second and checked before each announcement). Asserts, in BIRD's view and vipd's status:
- 203.0.113.10/32 configured but not on lo: the session is Established and carries the bound
  IPv6 VIP (control), yet the /32 never reaches BIRD and status says "not bound";
- `ip addr add` it on lo: the route appears (delay printed);
- `ip addr del` it: the route leaves BIRD and the fabric kernel (delay printed; ~1 s polling);
- a VIP on an interface that does not exist (vip0) is never announced, and status says why.
"""
import lab

GHOST_IF_VIP = "203.0.113.20/32"  # configured on vip0, which no one creates
ABSENT_CHECK_S = 4  # how long "never appears" is watched
APPEAR_BOUND_S = 10
WITHDRAW_BOUND_S = 3  # 1 s poll + UPDATE + BIRD/kernel


def test() -> None:
    with lab.Lab("ghost-vip") as L:
        def edit(c: dict, _topo: lab.Topology) -> None:
            c["vips"] = [{"address": lab.VIP4, "interface": "lo"},
                         {"address": lab.VIP6, "interface": "lo"},
                         {"address": GHOST_IF_VIP, "interface": "vip0"}]

        s = lab.build_single_vipd(L, edit, bind=[lab.VIP6])
        bird, vipd, node, fabric = s.bird, s.vipd, s.node, s.topo.fabric
        lab.wait_established(bird, [node.v4], 30)
        lab.wait_until(lambda: bird.route(lab.VIP6), 15, 0.1, f"control route {lab.VIP6} in BIRD")
        lab.log(f"Established; bound {lab.VIP6} is in BIRD; watching {lab.VIP4} and "
                f"{GHOST_IF_VIP} stay out for {ABSENT_CHECK_S}s")
        lab.wait_never(lambda: bird.route(lab.VIP4) or bird.route(GHOST_IF_VIP), ABSENT_CHECK_S,
                       0.2, "an unbound VIP reaching BIRD")

        v = vipd.vip_status(lab.VIP4)
        lab.log(f"status of unbound {lab.VIP4}: {v}")
        lab.check(not v["bound"] and not v["announced"] and "not bound" in v["reason"],
                  f"{lab.VIP4} should be unbound, unannounced, reason 'address not bound': {v}")
        g = vipd.vip_status(GHOST_IF_VIP)
        lab.log(f"status of {GHOST_IF_VIP} on vip0: {g}")
        lab.check(not g["bound"] and not g["announced"]
                  and "interface vip0 does not exist" in g["reason"],
                  f"{GHOST_IF_VIP} should be unannounced, reason 'interface vip0 does not exist': {g}")
        # No silent failure: both unannounced VIPs are also named in the log at startup.
        lines = vipd.log_lines(r"vip0|203\.0\.113\.(10|20)")
        lab.log("vipd log about the unannounced VIPs:" + "\n  ".join([""] + lines))
        lab.check(any("interface vip0 does not exist" in line for line in lines),
                  "vipd should log that the interface vip0 does not exist")
        lab.check(any(f"vip {lab.VIP4}" in line and "not bound" in line for line in lines),
                  f"vipd should log that {lab.VIP4} is not bound")
        print(vipd.vipctl("status"), flush=True)

        node.ns.add_address("lo", lab.VIP4)
        dt_add = lab.timed_wait(lambda: bird.route(lab.VIP4), APPEAR_BOUND_S, 0.05,
                                f"{lab.VIP4} in BIRD after ip addr add")
        lab.wait_until(lambda: fabric.kernel_nexthops(lab.VIP4) == [node.v4], 5, 0.05,
                       f"fabric kernel route {lab.VIP4} via {node.v4}")
        lab.log(f"ip addr add {lab.VIP4} dev lo -> route in BIRD after {dt_add:.2f}s")
        v = lab.wait_until(lambda: (lambda v: v if v["bound"] and v["announced"] else None)(
            vipd.vip_status(lab.VIP4)), 5, 0.2, f"status of {lab.VIP4}: bound and announced")
        lab.log(f"status of bound {lab.VIP4}: {v}")

        node.ns.del_address("lo", lab.VIP4)
        dt_del = lab.timed_wait(lambda: bird.route(lab.VIP4) is None
                                and not fabric.kernel_nexthops(lab.VIP4), WITHDRAW_BOUND_S, 0.05,
                                lambda: f"{lab.VIP4} to leave BIRD and the fabric kernel after "
                                f"ip addr del (BIRD: {bird.route_all(lab.VIP4).strip()!r})")
        lab.log(f"ip addr del {lab.VIP4} dev lo -> route left the fabric after {dt_del:.2f}s "
                f"(bound {WITHDRAW_BOUND_S}s)")
        lab.check(bird.neighbor_state(node.v4) == "Established",
                  "the session should stay Established when a VIP is withdrawn")
        lab.check(bird.route(lab.VIP6) is not None, f"{lab.VIP6} should still be announced")
        v = vipd.vip_status(lab.VIP4)
        lab.check(not v["bound"] and not v["announced"], f"after ip addr del: {v}")
        lab.check(bird.route(GHOST_IF_VIP) is None, f"{GHOST_IF_VIP} must never be announced")
        for line in vipd.log_lines(r"^\S+ \w+ +vip 203\.0\.113\.10/32"):
            print(f"  vipd log: {line}")


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries, vipd=True)
