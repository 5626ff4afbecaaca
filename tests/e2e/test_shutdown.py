#!/usr/bin/env python3
"""e2e: vipd's graceful shutdown, and a peer with no BGP daemon. BIRD fabric (AS 65000), vipd on
node 1 (AS 65001) peering with BIRD and with node 2 (192.0.2.12), where nothing listens on 179.

Asserts:
- the dead peer: vipd's status shows it in Active/Connect/Idle with a lastError (connection
  refused) while the BIRD session is Established with both VIPs, and vipd stays up;
- SIGTERM drains first (lab config: gracefulShutdownTime 300ms, unbindDelay 200ms): BIRD shows
  the path with GRACEFUL_SHUTDOWN (65535,0) and local_pref 0, then both VIPs leave BIRD and the
  fabric kernel before vipd exits, not sooner than the GRACEFUL_SHUTDOWN time; vipd exits 0
  after at least gracefulShutdownTime + unbindDelay and within a bound; BIRD's
  `show protocols all` shows the received Cease / administrative shutdown with the RFC 8203
  text "vipd: node draining", and the session does not come back.
"""
import re
import signal
import time

import lab

SHUTDOWN_TEXT = "vipd: node draining"
EXIT_BOUND_S = 5
GS_S, UNBIND_S = 0.3, 0.2  # lab.vipd_config: drain.gracefulShutdownTime, drain.unbindDelay
STAYS_DOWN_S = 5  # longer than BIRD's error wait (1-2 s) and vipd's connect retry (1 s)
DEAD_PEER_WATCH_S = 4


def test() -> None:
    with lab.Lab("shutdown") as L:
        def edit(c: dict, topo: lab.Topology) -> None:
            dead = dict(c["peers"][0], address=topo.nodes[1].v4)
            c["peers"].append(dead)

        s = lab.build_single_vipd(L, edit, idle_nodes=1)
        bird, vipd, node, fabric = s.bird, s.vipd, s.node, s.topo.fabric
        dead = s.topo.nodes[1].v4
        lab.wait_established(bird, [node.v4], 30)
        for prefix, nh in ((lab.VIP4, node.v4), (lab.VIP6, node.v6)):
            lab.wait_until(lambda p=prefix, nh=nh: fabric.kernel_nexthops(p) == [nh], 15, 0.1,
                           f"fabric kernel route {prefix} via {nh}")

        # The dead peer: retried, reported, harmless.
        p = lab.wait_until(lambda: (lambda p: p if p.get("lastError") else None)(
            vipd.peer_status(dead)), 10, 0.2, f"a lastError for {dead} in vipd's status")
        lab.log(f"dead peer {dead} in vipd's status: state={p['state']!r} "
                f"lastError={p['lastError']!r}")
        lab.check(p["state"] in ("Active", "Connect", "Idle"),
                  f"peer {dead} should be Active/Connect/Idle, not {p['state']!r}")
        lab.check("refused" in p["lastError"].lower(),
                  f"peer {dead}: lastError should say connection refused: {p['lastError']!r}")
        lab.wait_never(lambda: not vipd.proc.alive() or bird.neighbor_state(node.v4) != "Established",
                       DEAD_PEER_WATCH_S, 0.2, "vipd exiting or the BIRD session dropping "
                       "while a peer refuses connections")
        lab.check(vipd.peer_status(dead)["state"] != "Established", f"{dead} cannot be Established")
        print(vipd.vipctl("status"), flush=True)
        for line in vipd.log_lines(re.escape(dead))[:4]:
            print(f"  vipd log: {line}")

        # SIGTERM: the drain (GRACEFUL_SHUTDOWN, withdraw, acks, unbind), then Cease and exit.
        t0 = time.monotonic()
        vipd.proc.signal(signal.SIGTERM)
        gs = lab.wait_until(lambda: (lambda r: r if r and lab.GRACEFUL_SHUTDOWN in r["communities"]
                                     else None)(bird.route(lab.VIP4)), GS_S + 1, 0.01,
                            "BIRD to show the VIP with GRACEFUL_SHUTDOWN after SIGTERM")
        dt_gs = time.monotonic() - t0
        lab.log(f"GRACEFUL_SHUTDOWN in BIRD {dt_gs:.3f}s after SIGTERM: communities "
                f"{gs['communities']} local_pref {gs['localPref']}")
        lab.check(gs["localPref"] == 0, f"BIRD's filter should set local_pref 0: {gs}")
        lab.wait_until(lambda: not bird.has_route(lab.VIP4), GS_S + 2, 0.01,
                       f"{lab.VIP4} to leave BIRD")
        dt_gone = time.monotonic() - t0
        lab.check(vipd.proc.alive(), "the withdraw should reach BIRD while vipd still runs "
                  "(unbindDelay after the acknowledgement), not by the session closing")
        lab.wait_until(lambda: not vipd.proc.alive(), EXIT_BOUND_S, 0.02,
                       f"vipd to exit within {EXIT_BOUND_S}s of SIGTERM")
        dt_exit = time.monotonic() - t0
        rc = vipd.proc.popen.returncode
        lab.log(f"{lab.VIP4} left BIRD {dt_gone:.3f}s after SIGTERM; vipd exited with {rc} "
                f"{dt_exit:.3f}s after SIGTERM (gracefulShutdownTime {GS_S}s + unbindDelay "
                f"{UNBIND_S}s)")
        lab.check(rc == 0, f"vipd should exit 0 on SIGTERM, got {rc}")
        lab.check(dt_gone >= GS_S - 0.05, f"withdrawn {dt_gone:.3f}s after SIGTERM: before the "
                  f"{GS_S}s of GRACEFUL_SHUTDOWN were over")
        lab.check(dt_exit >= GS_S + UNBIND_S - 0.05 and dt_exit > dt_gone,
                  f"exited {dt_exit:.3f}s after SIGTERM: the drain takes at least "
                  f"{GS_S + UNBIND_S}s and the withdraw comes first")
        for prefix in (lab.VIP4, lab.VIP6):
            lab.wait_until(lambda p=prefix: bird.route(p) is None and not fabric.kernel_nexthops(p),
                           5, 0.02, f"{prefix} to leave BIRD and the fabric kernel")
        lab.log(f"both VIPs gone from BIRD and the fabric kernel "
                f"{time.monotonic() - t0:.2f}s after SIGTERM")
        for line in vipd.log_lines(r"drain|withdraw|NOTIFICATION|shutting|exiting"):
            print(f"  vipd log: {line}")

        detail = lab.wait_until(lambda: (lambda t: t if SHUTDOWN_TEXT in t else None)(
            bird.protocol_all(node.v4)), 5, 0.1,
            lambda: f"BIRD to show {SHUTDOWN_TEXT!r}: {bird.protocol_all(node.v4)}")
        print(detail.rstrip(), flush=True)
        lab.check(re.search(r"Message:\s*" + re.escape(SHUTDOWN_TEXT), detail),
                  f"BIRD should show the shutdown communication as `Message: {SHUTDOWN_TEXT}`")
        lab.check(re.search(r"Received:.*[Aa]dministrative shutdown", detail),
                  "BIRD should show a received Cease / Administrative shutdown (6/2)")

        lab.wait_never(lambda: bird.neighbor_state(node.v4) == "Established", STAYS_DOWN_S, 0.2,
                       "the session coming back after vipd exited")
        lab.log(f"session stayed down for {STAYS_DOWN_S}s: {bird.neighbor_state(node.v4)}")


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries, vipd=True)
