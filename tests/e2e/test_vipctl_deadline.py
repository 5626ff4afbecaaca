#!/usr/bin/env python3
"""e2e: vipctl against a frozen vipd (issue 43, "vipctl has no deadline"). BIRD fabric (AS 65000),
one vipd node (AS 65001); both hold times 60 s, so that the session outlives the freeze and
anything the fabric loses is vipd's doing.

vipd is frozen (SIGSTOP). Asserts:
- `vipctl withdraw --wait --timeout 2s` returns by itself, exit 3 ("outcome unknown"), after its
  deadline (--timeout plus 15 s) and not long after; before issue 43 it never returned;
- `timeout 2 vipctl withdraw` (a script's own limit) is killed by `timeout` (exit 124);
- vipd woken (SIGCONT) carries out neither abandoned withdraw: it logs each as not carried out
  (naming the caller's uid and pid), is not withdrawn, persisted nothing (no withdrawn.json), and
  BIRD keeps both VIPs; before issue 43 it withdrew the node and persisted it;
- vipd still works afterwards: a withdraw from a client that waits is carried out and logged with
  its caller, and `vipctl announce` undoes it.
"""
import os
import signal
import subprocess
import time

import lab

DRAIN_TIMEOUT_S = 2
DEADLINE_S = DRAIN_TIMEOUT_S + 15  # vipctl's default for withdraw --wait --timeout 2s


def test() -> None:
    with lab.Lab("vipctl-deadline") as L:
        def edit(c: dict, topo: lab.Topology) -> None:
            c["peers"][0]["holdTime"] = "60s"

        s = lab.build_single_vipd(L, edit, bird_hold_time=60)
        bird, vipd, node = s.bird, s.vipd, s.node
        lab.wait_established(bird, [node.v4], 30)
        lab.wait_until(lambda: bird.has_route(lab.VIP4) and bird.has_route(lab.VIP6), 15, 0.1,
                       "both VIPs in BIRD")
        state_file = os.path.join(L.path("vipd-n1-state"), "withdrawn.json")

        vipd.proc.signal(signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            try:
                r = vipd.vipctl_run("withdraw", "--wait", "--timeout", f"{DRAIN_TIMEOUT_S}s",
                                    "--reason", "frozen", timeout=DEADLINE_S + 40)
            except subprocess.TimeoutExpired:
                lab.check(False, f"vipctl withdraw --wait --timeout {DRAIN_TIMEOUT_S}s against a "
                                 f"frozen vipd did not return within {DEADLINE_S + 40}s")
            took = time.monotonic() - t0
            print(f"vipctl withdraw --wait --timeout {DRAIN_TIMEOUT_S}s against a frozen vipd: "
                  f"exit {r.returncode} after {took:.1f}s; stderr {r.stderr.strip()!r}")
            lab.check(r.returncode == 3, f"expected exit 3 (outcome unknown), got {r.returncode}")
            lab.check("no answer" in r.stderr and "outcome is unknown" in r.stderr,
                      f"vipctl should say it got no answer and the outcome is unknown: {r.stderr!r}")
            # Its own deadline, not a neighbour's: not before it, and not much after it (vipctl
            # does nothing after the deadline but print; 20 s of slack for a loaded machine).
            lab.check(DEADLINE_S - 0.5 <= took < DEADLINE_S + 20,
                      f"vipctl gave up after {took:.1f}s; its deadline is {DEADLINE_S}s")

            # A script's own limit: `timeout` kills vipctl (exit 124) before vipctl's deadline.
            r = node.ns.run(["timeout", "2", lab.vipd_binary("vipctl"), "--socket", vipd.socket,
                             "withdraw", "--reason", "abandoned"], check=False, timeout=30)
            lab.check(r.returncode == 124, f"timeout 2 vipctl withdraw: exit {r.returncode}")
        finally:
            vipd.proc.signal(signal.SIGCONT)

        skipped = lab.wait_until(lambda: (lambda lines: lines if len(lines) >= 2 else None)(
            vipd.log_lines(r"not carrying out withdraw from uid 0 \(pid \d+\)")), 15, 0.1,
            "vipd to log both abandoned withdraws as not carried out")
        for line in skipped:
            print(f"  vipd log: {line}")
        time.sleep(3)  # a drain, had one started, would have withdrawn by now (300 ms steps)
        st = vipd.status()
        lab.check(st["withdrawn"]["active"] is False,
                  f"vipd carried out an abandoned withdraw: {st['withdrawn']}")
        lab.check(not os.path.exists(state_file), f"{state_file} was written: persisted")
        lab.check(bird.neighbor_state(node.v4) == "Established", "the session stays up")
        lab.check(bird.has_route(lab.VIP4) and bird.has_route(lab.VIP6),
                  "both VIPs stay announced after vipd woke")
        lab.check(not vipd.log_lines(r"withdraw requested by"),
                  "no abandoned withdraw reached the drain")

        # vipd is still usable: a client that waits gets its withdraw, logged with its caller.
        r = vipd.vipctl_run("withdraw", "--wait", "--timeout", "5s", "--reason", "after the freeze")
        lab.check(r.returncode in (0, 1), f"withdraw after the freeze: {r.returncode} {r.stderr}")
        lab.check(vipd.log_lines(r"withdraw requested by uid 0 \(pid \d+\)"),
                  "the withdraw is logged with its caller's uid and pid")
        # Refused (exit 5) while the drain still waits to unbind.
        lab.wait_until(lambda: vipd.vipctl_run("announce").returncode == 0, 15, 0.2,
                       "vipctl announce to succeed once the drain is over")
        lab.check(vipd.log_lines(r"announce requested by uid 0 \(pid \d+\)"),
                  "the announce is logged with its caller's uid and pid")
        lab.wait_until(lambda: bird.has_route(lab.VIP4), 30, 0.2, "VIP4 announced again")


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries + ["timeout"], vipd=True)
