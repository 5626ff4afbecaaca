#!/usr/bin/env python3
"""e2e: vipd binds its VIPs itself and follows the kernel. One vipd node (AS 65001) against a
BIRD fabric (AS 65000); VIPs 203.0.113.10/32 and 2001:db8:ffff::10/128 on lo,
203.0.113.20/32 on vip0 (createInterface: true), 203.0.113.40/32 on vip9 (no createInterface).

Asserts:
- at start vipd has added each VIP exactly once, deprecated (IPv6 also nodad), created vip0 as
  a dummy and brought it up, and BIRD has the three routes;
- `ip addr del 203.0.113.10/32 dev lo`: the route leaves BIRD (delay measured by a 10 ms birdc
  poll and on the wire: the first UPDATE withdrawing it on the node's eth0; vipd's own logged
  microseconds printed), comes back after vipd binds it again (~1 s), status lostCount 1;
- `ip link set vip0 down`: 203.0.113.20/32 leaves BIRD and stays out while the link is down,
  comes back after `ip link set vip0 up`;
- the VIP on vip9 is never announced, status "interface missing", and no vip9 is created.

This kernel may lack dummy interfaces (CONFIG_DUMMY unset): then vip0 is made by the test (an
IFB device standing in for the operator's interface) and a VIP on vip1 with createInterface
checks that vipd reports the kernel's refusal and does not announce it.
"""
import re
import time

import lab

IF_VIP = "203.0.113.20/32"  # on vip0, createInterface: true
MISSING_VIP = "203.0.113.40/32"  # on vip9, which nobody creates
REFUSED_VIP = "203.0.113.21/32"  # on vip1, createInterface on a kernel without dummy links
WITHDRAW_BOUND_S = 2.0
REBIND_MIN_S = 0.8  # vipd waits 1 s before binding a lost VIP again
REBIND_BOUND_S = 5.0
DOWN_WATCH_S = 2.0
POLL_S = 0.01


def check_vipd_address(ns: lab.Namespace, ifname: str, cidr: str) -> str:
    """Exactly one copy of cidr on ifname, added by vipd: deprecated with a permanent (forever)
    valid lifetime; IPv6 also nodad and preferred_lft 0sec. (For IPv4 the kernel reports a
    permanent address's preferred lifetime as forever; the deprecated flag is what shows.)"""
    entries = ns.address_entries(ifname, cidr)
    lab.check(len(entries) == 1, f"{cidr} should be on {ifname} exactly once: {entries}\n"
              f"{ns.addr_show(ifname)}")
    e = entries[0]
    lab.check("deprecated" in e and "valid_lft forever" in e,
              f"{cidr} on {ifname} should be deprecated, valid forever: {e!r}")
    if ":" in cidr:
        lab.check("nodad" in e and "preferred_lft 0sec" in e,
                  f"{cidr} on {ifname} should be nodad with preferred_lft 0sec: {e!r}")
    else:
        lab.check("preferred_lft 0sec" in e or "preferred_lft forever" in e, e)
    return e


def announcement_log_lines(vipd: lab.Vipd, skip: int) -> list[str]:
    return vipd.log_lines(r"announcements updated \d+us")[skip:]


def logged_us(lines: list[str]) -> list[int]:
    return [int(m.group(1)) for line in lines
            for m in [re.search(r"announcements updated (\d+)us", line)] if m]


def test() -> None:
    with lab.Lab("vip-binding") as L:
        state: dict = {}

        def edit(c: dict, topo: lab.Topology) -> None:
            ns = topo.nodes[0].ns
            state["dummy"] = ns.link_kind_supported("dummy")
            c["vips"] = [{"address": lab.VIP4, "interface": "lo"},
                         {"address": lab.VIP6, "interface": "lo"},
                         {"address": IF_VIP, "interface": "vip0", "createInterface": True},
                         {"address": MISSING_VIP, "interface": "vip9"}]
            if not state["dummy"]:
                lab.log("NOTE: this kernel cannot create dummy interfaces (CONFIG_DUMMY unset); "
                        "vip0 is pre-created as an IFB device, and a VIP on vip1 with "
                        "createInterface checks how vipd reports the kernel's refusal")
                ns.ip("link", "add", "vip0", "type", "ifb")
                ns.ip("link", "set", "vip0", "up")
                c["vips"].append({"address": REFUSED_VIP, "interface": "vip1",
                                  "createInterface": True})
            # The wire: the node's fabric interface, from before the session.
            state["cap"] = lab.TcpCapture(L, ns, "eth0")

        s = lab.build_single_vipd(L, edit)
        bird, vipd, node, fabric = s.bird, s.vipd, s.node, s.topo.fabric
        cap, ns = state["cap"], node.ns
        lab.wait_established(bird, [node.v4], 30)
        for prefix in (lab.VIP4, lab.VIP6, IF_VIP):
            lab.wait_until(lambda p=prefix: bird.has_route(p), 15, 0.05, f"{prefix} in BIRD")
        lab.log("Established; the three bound VIPs are in BIRD")

        # --- what vipd bound --------------------------------------------------------------
        print(ns.addr_show("lo").rstrip(), flush=True)
        for ifname, cidr in (("lo", lab.VIP4), ("lo", lab.VIP6), ("vip0", IF_VIP)):
            e = check_vipd_address(ns, ifname, cidr)
            lab.log(f"{cidr} on {ifname}: {e}")
            v = vipd.vip_status(cidr)
            lab.check(v["state"] == "bound" and v["bound"] and v["ownedByVipd"]
                      and v["announced"] and v["lostCount"] == 0,
                      f"status of {cidr}: bound, owned by vipd, announced, lostCount 0: {v}")
        link = ns.link("vip0")
        lab.log(f"vip0: kind={link.get('linkinfo', {}).get('info_kind')} flags={link['flags']}")
        lab.check("UP" in link["flags"], f"vip0 should be up: {link['flags']}")
        if state["dummy"]:
            lab.check(link.get("linkinfo", {}).get("info_kind") == "dummy",
                      f"vipd should have created vip0 as a dummy: {link}")
            lab.check(vipd.log_lines(r"created dummy interface vip0"),
                      "vipd should log that it created vip0")
        else:
            r = vipd.vip_status(REFUSED_VIP)
            lines = vipd.log_lines(re.escape(REFUSED_VIP))
            lab.log(f"status of {REFUSED_VIP} (vip1, kernel without dummy links): {r}")
            for line in lines[:4]:
                print(f"  vipd log: {line}")
            lab.check(not r["bound"] and not r["announced"] and r["state"] != "bound",
                      f"{REFUSED_VIP}: vip1 cannot be created here, so not bound/announced: {r}")
            lab.check(any("error" in line.lower() or "not announcing" in line for line in lines),
                      f"vipd should log why {REFUSED_VIP} is not announced")
            lab.check(not bird.has_route(REFUSED_VIP), f"{REFUSED_VIP} must not reach BIRD")

        # --- the VIP on an interface that does not exist --------------------------------
        m = vipd.vip_status(MISSING_VIP)
        lab.log(f"status of {MISSING_VIP} on vip9: {m}")
        lab.check(m["state"] == "interface missing" and not m["bound"] and not m["announced"]
                  and "interface vip9 does not exist" in m["reason"],
                  f"{MISSING_VIP}: 'interface missing', reason 'interface vip9 does not exist': {m}")
        lab.check(ns.link("vip9") is None, "vipd must not create vip9 (no createInterface)")
        lab.check(any("interface vip9 does not exist" in line
                      for line in vipd.log_lines(re.escape(MISSING_VIP))),
                  "vipd should log that interface vip9 does not exist")
        lab.check(not bird.has_route(MISSING_VIP), f"{MISSING_VIP} must never reach BIRD")

        # --- ip addr del on lo: withdrawn at once, bound again after ~1 s ------------------
        seen_logs = len(announcement_log_lines(vipd, 0))
        wall0, t0 = time.time(), time.monotonic()
        ns.del_address("lo", lab.VIP4)
        lab.wait_until(lambda: not bird.has_route(lab.VIP4), WITHDRAW_BOUND_S, POLL_S,
                       f"{lab.VIP4} to leave BIRD after ip addr del")
        dt_poll = time.monotonic() - t0
        ts_wire = lab.wait_until(lambda: lab.first_withdrawal(cap, node.v4, lab.FABRIC_V4,
                                                              lab.VIP4, wall0), 3, 0.05,
                                 f"an UPDATE withdrawing {lab.VIP4} in the capture on eth0")
        dt_wire = ts_wire - wall0
        lab.check(bird.has_route(lab.VIP6) and bird.has_route(IF_VIP),
                  "the other VIPs should stay announced")
        lab.check(bird.neighbor_state(node.v4) == "Established",
                  "the session should stay Established when a VIP is withdrawn")
        lab.wait_until(lambda: bird.has_route(lab.VIP4), REBIND_BOUND_S, POLL_S,
                       f"{lab.VIP4} back in BIRD after vipd binds it again")
        dt_back = time.monotonic() - t0
        us = logged_us(announcement_log_lines(vipd, seen_logs))
        lab.log(f"ip addr del {lab.VIP4}: left BIRD after {dt_poll * 1000:.1f} ms (10 ms birdc "
                f"poll); withdrawal UPDATE on the wire after {dt_wire * 1000:.1f} ms; vipd's log: "
                f"announcements updated {us[0] if us else '?'} us after the notification")
        lab.log(f"{lab.VIP4} back in BIRD {dt_back:.2f}s after the ip addr del "
                f"({dt_back - dt_poll:.2f}s after it left)")
        for line in vipd.log_lines(re.escape(lab.VIP4) + r"|announcements updated")[-6:]:
            print(f"  vipd log: {line}")
        lab.check(us, "vipd should log 'announcements updated Nus after the kernel's "
                      "notification' for the withdrawal")
        lab.check(dt_back >= REBIND_MIN_S,
                  f"vipd should wait ~1 s before binding again; the route was back after "
                  f"{dt_back:.2f}s")
        check_vipd_address(ns, "lo", lab.VIP4)
        v = vipd.wait_vip(lab.VIP4, lambda v: v["bound"] and v["announced"], 5,
                          f"{lab.VIP4} bound and announced again")
        lab.log(f"status of {lab.VIP4} after the rebind: {v}")
        lab.check(v["lostCount"] == 1 and v["ownedByVipd"] and v["state"] == "bound",
                  f"{lab.VIP4}: lostCount 1, owned by vipd, bound: {v}")

        # --- ip link set vip0 down / up ------------------------------------------------------
        t0 = time.monotonic()
        ns.ip("link", "set", "vip0", "down")
        lab.wait_until(lambda: not bird.has_route(IF_VIP), WITHDRAW_BOUND_S, POLL_S,
                       f"{IF_VIP} to leave BIRD after ip link set vip0 down")
        dt_down = time.monotonic() - t0
        lab.log(f"ip link set vip0 down: {IF_VIP} left BIRD after {dt_down * 1000:.1f} ms")
        lab.wait_never(lambda: bird.has_route(IF_VIP), DOWN_WATCH_S, 0.05,
                       f"{IF_VIP} coming back while vip0 is down")
        d = vipd.vip_status(IF_VIP)
        lab.log(f"status of {IF_VIP} while vip0 is down: {d}")
        lab.check(d["state"] == "interface down" and not d["announced"]
                  and "vip0 is down" in d["reason"], f"{IF_VIP} while vip0 is down: {d}")
        lab.check(len(ns.address_entries("vip0", IF_VIP)) == 1,
                  f"{IF_VIP} should still be on vip0 exactly once: {ns.addr_show('vip0')}")
        lab.check(bird.has_route(lab.VIP4) and bird.has_route(lab.VIP6),
                  "the lo VIPs should stay announced while vip0 is down")
        t0 = time.monotonic()
        ns.ip("link", "set", "vip0", "up")
        lab.wait_until(lambda: bird.has_route(IF_VIP), REBIND_BOUND_S, POLL_S,
                       f"{IF_VIP} back in BIRD after ip link set vip0 up")
        lab.log(f"ip link set vip0 up: {IF_VIP} back in BIRD after "
                f"{(time.monotonic() - t0) * 1000:.1f} ms")
        d = vipd.wait_vip(IF_VIP, lambda v: v["bound"] and v["announced"], 5,
                          f"{IF_VIP} bound and announced again")
        lab.check(d["lostCount"] == 1, f"{IF_VIP}: lostCount 1 after one link down: {d}")
        check_vipd_address(ns, "vip0", IF_VIP)

        lab.check(not bird.has_route(MISSING_VIP) and ns.link("vip9") is None,
                  f"{MISSING_VIP} never announced, vip9 never created")
        lab.check(vipd.proc.alive(), "vipd should still be running")
        print(vipd.vipctl("status"), flush=True)


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries + lab.TcpCapture.binaries, vipd=True)
