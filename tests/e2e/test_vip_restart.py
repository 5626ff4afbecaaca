#!/usr/bin/env python3
"""e2e: vipd's addresses across a crash and a restart, and whose addresses it removes. One vipd
node (AS 65001) against a BIRD fabric (AS 65000).

Before vipd starts, the "operator" adds 198.51.100.5/32 (not a VIP) and the VIP 203.0.113.30/32
to lo with plain `ip addr add` (preferred forever). vipd binds its own VIP 203.0.113.10/32.
Asserts:
- status: 203.0.113.10/32 ownedByVipd true, 203.0.113.30/32 ownedByVipd false; both in BIRD;
- SIGKILL (a crash): every address stays; a new vipd finds them, adds no second copy, logs no
  error, and both routes come back in BIRD; 203.0.113.10/32 is still recognised as vipd's own;
- SIGTERM: vipd exits 0, withdraws, and removes 203.0.113.10/32 only after the withdrawal and
  drain.unbindDelay (200 ms); 198.51.100.5/32 and 203.0.113.30/32 stay on lo.
"""
import signal
import time

import lab

OPERATOR_ADDR = "198.51.100.5/32"  # the operator's, not a VIP
OPERATOR_VIP = "203.0.113.30/32"  # a VIP the operator bound before vipd started
VIPS = (lab.VIP4, OPERATOR_VIP)
UNBIND_DELAY_S = 0.2  # lab.UNBIND_DELAY
EXIT_BOUND_S = 5


def copies(ns: lab.Namespace, cidr: str) -> int:
    return len(ns.address_entries("lo", cidr))


def check_one_copy_each(ns: lab.Namespace, when: str) -> None:
    for cidr in (OPERATOR_ADDR,) + VIPS:
        lab.check(copies(ns, cidr) == 1,
                  f"{when}: {cidr} should be on lo exactly once:\n{ns.addr_show('lo')}")


def check_ownership(vipd: lab.Vipd, when: str) -> None:
    own, op = vipd.vip_status(lab.VIP4), vipd.vip_status(OPERATOR_VIP)
    lab.log(f"{when}: status {lab.VIP4}: {own}")
    lab.log(f"{when}: status {OPERATOR_VIP}: {op}")
    lab.check(own["bound"] and own["ownedByVipd"], f"{when}: {lab.VIP4} is vipd's own: {own}")
    lab.check(op["bound"] and not op["ownedByVipd"],
              f"{when}: {OPERATOR_VIP} was added by the operator, not vipd: {op}")


def wait_routes(bird: lab.Bird, node: lab.Node, what: str) -> float:
    t0 = time.monotonic()
    lab.wait_established(bird, [node.v4], 30)
    for prefix in VIPS:
        lab.wait_until(lambda p=prefix: bird.has_route(p), 15, 0.05, f"{prefix} in BIRD {what}")
    return time.monotonic() - t0


def test() -> None:
    with lab.Lab("vip-restart") as L:
        def edit(c: dict, _topo: lab.Topology) -> None:
            c["vips"] = [{"address": v, "interface": "lo"} for v in VIPS]

        s = lab.build_single_vipd(L, edit, bind=[OPERATOR_ADDR, OPERATOR_VIP])
        bird, vipd, node = s.bird, s.vipd, s.node
        ns = node.ns
        wait_routes(bird, node, "after the first start")
        check_one_copy_each(ns, "first start")
        check_ownership(vipd, "first start")
        lab.log("lo after the first start:\n" + "\n".join(
            e for c in (OPERATOR_ADDR,) + VIPS for e in ns.address_entries("lo", c)))

        # A crash: nothing is cleaned up.
        vipd.proc.signal(signal.SIGKILL)
        vipd.wait_exit(5)
        check_one_copy_each(ns, "after SIGKILL")
        lab.log("vipd SIGKILLed; every address is still on lo")

        vipd.restart()
        dt = wait_routes(bird, node, "after the restart")
        lab.log(f"restarted vipd: session and both routes back in BIRD after {dt:.2f}s")
        check_one_copy_each(ns, "after the restart")
        check_ownership(vipd, "after the restart")
        # The doctor's lines are about the node, not the restart (with health.type none it
        # warns that the apiserver certificate went unchecked).
        errors = [ln for ln in vipd.log_lines(r"^\S+ (error|warn)\b") if " doctor: " not in ln]
        for line in vipd.log_lines(r"vip 203\.0\.113\.(10|30)/32"):
            print(f"  vipd log (restart): {line}")
        lab.check(not errors, "the restarted vipd should log no error or warning:\n  "
                  + "\n  ".join(errors))

        # SIGTERM: withdraw, Cease, unbindDelay, then remove only vipd's own address.
        t0 = time.monotonic()
        vipd.proc.signal(signal.SIGTERM)
        t_withdrawn = t_unbound = None
        present_at_withdrawal = None
        deadline = t0 + EXIT_BOUND_S
        while time.monotonic() < deadline and (t_withdrawn is None or t_unbound is None):
            now = time.monotonic()
            if t_unbound is None and copies(ns, lab.VIP4) == 0:
                t_unbound = now - t0
            if t_withdrawn is None and not bird.has_route(lab.VIP4):
                t_withdrawn = now - t0
                present_at_withdrawal = copies(ns, lab.VIP4)
            time.sleep(0.01)
        rc = vipd.wait_exit(EXIT_BOUND_S)
        ms = lambda t: "never" if t is None else f"{t * 1000:.0f} ms"  # noqa: E731
        lab.log(f"SIGTERM: {lab.VIP4} left BIRD after {ms(t_withdrawn)}, left lo after "
                f"{ms(t_unbound)}; vipd exited {rc}")
        for line in vipd.log_lines(r"SIGTERM|shutting|removed|exiting|vip 203\.0\.113\.30"):
            print(f"  vipd log (shutdown): {line}")
        lab.check(rc == 0, f"vipd should exit 0 on SIGTERM, got {rc}")
        lab.check(t_withdrawn is not None and t_unbound is not None,
                  f"{lab.VIP4} should leave BIRD and lo within {EXIT_BOUND_S}s of SIGTERM")
        lab.check(present_at_withdrawal == 1,
                  f"{lab.VIP4} should still be on lo when the route left BIRD (withdraw first)")
        lab.check(t_unbound >= UNBIND_DELAY_S * 0.9,
                  f"{lab.VIP4} removed {t_unbound:.3f}s after SIGTERM, before unbindDelay "
                  f"{UNBIND_DELAY_S}s")
        lab.check(not bird.has_route(OPERATOR_VIP), f"{OPERATOR_VIP} withdrawn on shutdown")
        for cidr in (OPERATOR_ADDR, OPERATOR_VIP):
            lab.check(copies(ns, cidr) == 1,
                      f"the operator's {cidr} must stay on lo:\n{ns.addr_show('lo')}")
        lab.log(f"after exit: {OPERATOR_ADDR} and {OPERATOR_VIP} still on lo, {lab.VIP4} gone")


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries, vipd=True)
