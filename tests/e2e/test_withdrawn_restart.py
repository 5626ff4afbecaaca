#!/usr/bin/env python3
"""e2e: vipd SIGKILLed in the middle of `vipctl withdraw` comes back withdrawn and removes the VIP
it had left bound, and only that one (issue 17, item 6). One vipd node (AS 65001) against a BIRD
fabric (AS 65000); drain.gracefulShutdownTime 30s, so the withdraw is still in its first step
(persisted, nothing unbound yet) when vipd is killed.

Before vipd starts, the "operator" adds 198.51.100.5/32 (not a VIP) and the VIP 203.0.113.30/32
to lo with plain `ip addr add`. vipd binds its own VIP 203.0.113.10/32 (deprecated, permanent:
its marking).
Asserts:
- both VIPs in BIRD; `vipctl withdraw` persists withdrawn.json; SIGKILL: 203.0.113.10/32 is still
  on lo (the drain never reached its unbind step);
- the restarted vipd: status withdrawn.active with the reason given; 203.0.113.10/32 leaves lo
  within 5 s; 198.51.100.5/32 and the operator's 203.0.113.30/32 stay; the session comes up and
  BIRD gets no route from the node;
- `vipctl announce`: 203.0.113.10/32 is bound again and both VIPs are back in BIRD.
"""
import os
import signal

import lab

OPERATOR_ADDR = "198.51.100.5/32"  # the operator's, not a VIP
OPERATOR_VIP = "203.0.113.30/32"  # a VIP the operator bound before vipd started
VIPS = (lab.VIP4, OPERATOR_VIP)


def copies(ns: lab.Namespace, cidr: str) -> int:
    return len(ns.address_entries("lo", cidr))


def test() -> None:
    with lab.Lab("withdrawn-restart") as L:
        def edit(c: dict, _topo: lab.Topology) -> None:
            c["vips"] = [{"address": v, "interface": "lo"} for v in VIPS]
            c["drain"]["gracefulShutdownTime"] = "30s"

        s = lab.build_single_vipd(L, edit, bind=[OPERATOR_ADDR, OPERATOR_VIP])
        bird, vipd, node = s.bird, s.vipd, s.node
        ns = node.ns
        state_file = os.path.join(L.path("vipd-n1-state"), "withdrawn.json")
        lab.wait_established(bird, [node.v4], 30)
        for prefix in VIPS:
            lab.wait_until(lambda p=prefix: bird.has_route(p), 15, 0.05, f"{prefix} in BIRD")

        r = vipd.vipctl_run("withdraw", "--reason", "replace node")
        lab.log(f"vipctl withdraw: exit {r.returncode}: {r.stdout.strip()} {r.stderr.strip()}")
        lab.check(r.returncode == 0, f"vipctl withdraw should succeed: {r.stdout}{r.stderr}")
        lab.check(os.path.exists(state_file), f"{state_file} should be written before the drain")

        # Killed while the drain is still in its GRACEFUL_SHUTDOWN step: nothing unbound yet.
        vipd.proc.signal(signal.SIGKILL)
        vipd.wait_exit(5)
        lab.check(copies(ns, lab.VIP4) == 1,
                  f"{lab.VIP4} should still be bound after the SIGKILL:\n{ns.addr_show('lo')}")
        lab.log("after SIGKILL mid-withdraw:\n  " + "\n  ".join(
            e for c in (OPERATOR_ADDR, OPERATOR_VIP, lab.VIP4) for e in ns.address_entries("lo", c)))

        vipd.restart()
        lab.wait_until(lambda: vipd.status(), 10, 0.1, "the restarted vipd to answer")
        st = vipd.status()["withdrawn"]
        lab.log(f"restarted vipd: withdrawn {st}")
        lab.check(st.get("active") is True and st.get("reason") == "replace node",
                  f"the restarted vipd should be withdrawn with the reason given: {st}")
        took = lab.timed_wait(lambda: copies(ns, lab.VIP4) == 0, 5, 0.05,
                              lambda: f"{lab.VIP4} to leave lo:\n{ns.addr_show('lo')}")
        lab.log(f"{lab.VIP4} removed {took:.2f}s after the restart")
        for line in vipd.log_lines(r"withdrawn|removed|vip 203\.0\.113\.30"):
            print(f"  vipd log (restart): {line}")
        for cidr in (OPERATOR_ADDR, OPERATOR_VIP):
            lab.check(copies(ns, cidr) == 1,
                      f"the operator's {cidr} must stay on lo:\n{ns.addr_show('lo')}")
        own = vipd.vip_status(lab.VIP4)
        lab.check(not own["bound"], f"{lab.VIP4} should not be bound: {own}")
        lab.wait_established(bird, [node.v4], 30)
        lab.wait_never(lambda: any(bird.has_route(p) for p in VIPS), 2, 0.1,
                       "a route from the withdrawn node in BIRD")

        r = vipd.vipctl_run("announce")
        lab.log(f"vipctl announce: exit {r.returncode}: {r.stdout.strip()} {r.stderr.strip()}")
        lab.check(r.returncode == 0, f"vipctl announce should succeed: {r.stdout}{r.stderr}")
        for prefix in VIPS:
            lab.wait_until(lambda p=prefix: bird.has_route(p), 15, 0.05,
                           f"{prefix} in BIRD after vipctl announce")
        lab.check(copies(ns, lab.VIP4) == 1, f"{lab.VIP4} bound again:\n{ns.addr_show('lo')}")
        lab.check(not os.path.exists(state_file), f"{state_file} cleared by vipctl announce")
        # The 30 s drain SIGTERM would run outlasts the lab's cleanup; the namespace goes anyway.
        vipd.proc.signal(signal.SIGKILL)
        vipd.wait_exit(5)


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries, vipd=True)
