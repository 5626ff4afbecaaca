#!/usr/bin/env python3
"""e2e: connection collision (RFC 4271 section 6.8). vipd on node 1 (AS 65001, router id
192.0.2.11) listens on its node address and dials; BIRD (AS 65000, router id 192.0.2.1) is not
passive and dials too, with short timers.

Two rounds:
- "race": BIRD then vipd start normally and both dial whenever their timers say;
- "forced": BIRD is frozen (SIGSTOP) right after it starts, so vipd's connection waits in BIRD's
  accept queue with vipd in OpenSent; then vipd is frozen and BIRD resumed once its 1 s connect
  delay is overdue: BIRD dials vipd (its connection waits in vipd's accept queue) and answers
  vipd's, so BIRD holds two connections and resolves the collision (vipd's router id is higher,
  so vipd's connection wins); then vipd resumes with an OPEN on its connection and BIRD's
  connection (or its Cease 6/7) pending.
Each round asserts the session ends up Established exactly once, in BIRD's view and vipd's
(establishedTransitions == 1, and it stays up), with the VIPs announced; it prints vipd's
collision/connection log lines, i.e. what happened.
"""
import re
import signal
import time

import lab

CONVERGE_S = 20
STABLE_S = 4  # > BIRD's error wait (1-2 s) and vipd's retry (1 s): a flap would show
BIRD_HOLD_S = 6
BIRD_CONNECT_DELAY_S = 1  # lab.Bird: connect delay time 1


def listen_edit(c: dict, topo: lab.Topology) -> None:
    c["listen"] = {"enabled": True, "address": topo.nodes[0].v4, "port": 179}


def freeze(L: lab.Lab):
    """after_bird hook: SIGSTOP BIRD (SIGCONT armed for cleanup; the round sends it)."""
    def hook(bird: lab.Bird) -> None:
        bird.proc.signal(signal.SIGSTOP)
        L.on_cleanup(lambda: bird.proc.signal(signal.SIGCONT))
        lab.log("BIRD frozen (SIGSTOP) before vipd starts")
    return hook


def round_(name: str, forced: bool) -> str:
    with lab.Lab(f"collision-{name}") as L:
        s = lab.build_single_vipd(L, listen_edit, bird_dials=True, bird_hold_time=BIRD_HOLD_S,
                                  after_bird=freeze(L) if forced else None)
        bird, vipd, node = s.bird, s.vipd, s.node
        if forced:
            fabric = s.topo.fabric_v4
            lab.wait_until(lambda: vipd.peer_status(fabric)["state"] == "OpenSent", 10, 0.05,
                           "vipd in OpenSent towards the frozen BIRD")
            vipd.proc.signal(signal.SIGSTOP)
            L.on_cleanup(lambda: vipd.proc.signal(signal.SIGCONT))
            time.sleep(BIRD_CONNECT_DELAY_S + 0.5)  # let BIRD's connect delay become overdue
            bird.proc.signal(signal.SIGCONT)
            lab.log("vipd in OpenSent and frozen; BIRD resumed with its connect delay overdue")
            time.sleep(1)  # BIRD dials vipd, answers vipd's connection, resolves its collision
            vipd.proc.signal(signal.SIGCONT)
            lab.log("vipd resumed (SIGCONT)")
        dt = lab.wait_established(bird, [node.v4], CONVERGE_S)
        lab.wait_until(lambda: vipd.peer_status(s.topo.fabric_v4)["state"] == "Established",
                       CONVERGE_S, 0.1, "vipd's status: peer Established")
        lab.wait_until(lambda: bird.route(lab.VIP4) and bird.route(lab.VIP6), 10, 0.1,
                       "both VIPs in BIRD")
        lab.log(f"{name}: Established and both VIPs in BIRD after {dt:.2f}s")
        since = bird.birdc("show", "protocols", "node1")
        lab.wait_never(lambda: bird.neighbor_state(node.v4) != "Established"
                       or vipd.peer_status(s.topo.fabric_v4)["state"] != "Established",
                       STABLE_S, 0.2, "the session leaving Established")
        after = bird.birdc("show", "protocols", "node1")
        lab.check(protocol_since(after) is not None and protocol_since(since) is not None
                  and lab.bird_since_delta(protocol_since(after), protocol_since(since)) < 1.0,
                  f"BIRD's session restarted: {since!r} -> {after!r}")
        p = vipd.peer_status(s.topo.fabric_v4)
        lab.check(p["establishedTransitions"] == 1,
                  f"vipd should reach Established exactly once: establishedTransitions="
                  f"{p['establishedTransitions']}")
        v = vipd.vip_status(lab.VIP4)
        lab.check(v["announced"], f"{lab.VIP4} should be announced: {v}")
        lines = vipd.log_lines(r"collision|connection the peer opened|incoming|listener|"
                               r"peer 192\.0\.2\.1: \w+ -> \w+")
        print(f"--- {name}: what happened (vipd log) ---")
        for line in lines:
            print(f"  {line}")
        print(f"--- {name}: BIRD ---\n{bird.protocol_all(node.v4).rstrip()}", flush=True)
        lab.log(f"{name}: vipd establishedTransitions={p['establishedTransitions']} "
                f"notificationsSent={p.get('notificationsSent')} "
                f"lastNotificationSent={p.get('lastNotificationSent')!r}")
        second = [re.sub(r"^\S+ \w+ +", "", line) for line in lines
                  if re.search(r"\scollision\s|connection the peer opened|incoming connection", line)]
        return "; ".join(second) or "one connection only (no collision)"


def protocol_since(text: str):
    """The Since column of BIRD's `show protocols node1` line, or None."""
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "node1" and len(parts) > 4:
            return parts[4]
    return None


def test() -> None:
    results = {name: round_(name, forced) for name, forced in (("race", False), ("forced", True))}
    for name, what in results.items():
        lab.log(f"summary {name}: {what}")


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries, vipd=True)
