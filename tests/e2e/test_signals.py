#!/usr/bin/env python3
"""e2e: no signal a user can send ends vipd without a drain (issue 17, item 1). BIRD fabric
(AS 65000), vipd on node 1 (AS 65001).

Asserts, with vipd the same process throughout, BIRD's session never flapping and both VIPs in
BIRD after each step:
- SIGHUP with the file unchanged: logged as re-read, valid and unchanged;
- SIGHUP after changing drain.gracefulShutdownTime (300ms -> 2s) and localAsn (65001 -> 65009):
  the first logged as applied, the second as needing a restart (test_live_reload covers every
  change applied live);
- SIGHUP with an invalid file (holdTime 2s): the error logged at error level with the file's
  name, and the reload ignored;
- SIGUSR1 and SIGUSR2: the status document logged (the BIRD session Established in it);
- SIGQUIT drains like SIGTERM (test_shutdown): GRACEFUL_SHUTDOWN first, for the 2 s applied by
  the SIGHUP above (so "applied" was true), then the withdraw while vipd still runs, Cease 6/2
  "vipd: node draining" in BIRD, exit 0;
- a second vipd, SIGALRM: drains the same way and exits 0.
"""
import json
import re
import signal
import time

import lab

SHUTDOWN_TEXT = "vipd: node draining"
EXIT_BOUND_S = 8
GS_LIVE_S = 2.0  # drain.gracefulShutdownTime after the SIGHUP
GS_LAB_S = 0.3  # lab.vipd_config's drain.gracefulShutdownTime


def main_test() -> None:
    with lab.Lab("signals") as L:
        held: dict = {}

        def edit(c: dict, topo: lab.Topology) -> None:
            held["config"] = c

        s = lab.build_single_vipd(L, edit)
        bird, vipd, node = s.bird, s.vipd, s.node
        config = held["config"]
        peer = s.topo.fabric_v4
        lab.wait_established(bird, [node.v4], 30)
        lab.wait_until(lambda: bird.has_route(lab.VIP4) and bird.has_route(lab.VIP6), 15, 0.1,
                       "both VIPs in BIRD")
        pid = vipd.proc.pid
        since = bird.protocol_row("node1")[4]

        def write_config(c: dict) -> None:
            with open(vipd.conf, "w") as f:
                f.write(lab.to_yaml(c) + "\n")

        def send(sig: int, pattern: str) -> list[str]:
            """Sends sig; waits for a new log line matching pattern; returns the new lines."""
            before = len(vipd.proc.log_text().splitlines())
            vipd.proc.signal(sig)
            lab.wait_until(lambda: not vipd.proc.alive() or any(
                re.search(pattern, line, re.IGNORECASE)
                for line in vipd.proc.log_text().splitlines()[before:]), 10, 0.05,
                f"a log line matching {pattern!r} after {sig.name}")
            healthy(sig.name)
            new = vipd.proc.log_text().splitlines()[before:]
            for line in new:
                print(f"  vipd log: {line[:300]}", flush=True)
            return new

        def healthy(after: str) -> None:
            lab.check(vipd.proc.alive(), f"after {after}: vipd (pid {pid}) exited with "
                      f"{vipd.proc.popen.returncode}")
            lab.check(vipd.proc.pid == pid, f"after {after}: vipd's pid changed")
            # Long enough for a reset session to show as down or as a later "since".
            time.sleep(0.5)
            parts = bird.protocol_row("node1")
            lab.check(parts[-1] == "Established" and lab.bird_since_delta(parts[4], since) < 1.0,
                      f"after {after}: BIRD's session flapped or is down: {' '.join(parts)} "
                      f"(Established since {since} at the start)")
            for prefix in (lab.VIP4, lab.VIP6):
                lab.check(bird.route(prefix) is not None, f"after {after}: {prefix} left BIRD")

        # SIGHUP, the same file.
        new = send(signal.SIGHUP, r"unchanged")
        lab.check(any(re.search(r"is valid and unchanged", line) for line in new),
                  f"SIGHUP with the same file should log it valid and unchanged: {new}")

        # SIGHUP, one field applied live and one that needs a restart.
        changed = json.loads(json.dumps(config))
        changed["drain"]["gracefulShutdownTime"] = "2s"
        changed["localAsn"] = 65009
        write_config(changed)
        new = send(signal.SIGHUP, r"is valid: \d+ change")
        text = "\n".join(new)
        lab.check(re.search(r"drain\.gracefulShutdownTime changed from 300ms to 2s: applied",
                            text), f"SIGHUP should log the drain time as applied: {new}")
        lab.check(re.search(r"localAsn changed from 65001 to 65009: needs a restart; still running "
                            r"with 65001", text),
                  f"SIGHUP should log the local AS as needing a restart: {new}")
        lab.check(re.search(r"2 change\(s\): 1 applied, 1 needing a restart", text),
                  f"SIGHUP should sum up 2 changes, 1 applied: {new}")

        # SIGHUP, an invalid file: errors at error level, nothing changes.
        invalid = json.loads(json.dumps(changed))
        invalid["peers"][0]["holdTime"] = "2s"
        write_config(invalid)
        new = send(signal.SIGHUP, r"ignored")
        errors = [line for line in new if re.search(r"\berror\b", line)]
        lab.check(any(vipd.conf in line and "holdTime" in line for line in errors),
                  f"SIGHUP with an invalid file should log the error naming the file and key at "
                  f"error level: {new}")
        lab.check(any(re.search(r"error\(s\); ignored", line) for line in errors),
                  f"SIGHUP with an invalid file should say it is ignored: {new}")

        # SIGUSR1, SIGUSR2: the status document in the log.
        for sig in (signal.SIGUSR1, signal.SIGUSR2):
            new = send(sig, rf"received {sig.name}; status: ")
            line = next(line for line in new if f"received {sig.name}; status: " in line)
            doc = json.loads(line.split("; status: ", 1)[1])
            states = {p["address"]: p["state"] for p in doc["peers"]}
            lab.check(states.get(peer) == "Established",
                      f"{sig.name}: the logged status should show {peer} Established: {states}")

        # SIGQUIT drains like SIGTERM, with the drain time the SIGHUP applied.
        drain(vipd, bird, node, signal.SIGQUIT, GS_LIVE_S)

        # A second vipd (a valid file again), stopped by SIGALRM.
        write_config(config)
        vipd.restart()
        lab.wait_established(bird, [node.v4], 30)
        lab.wait_until(lambda: bird.has_route(lab.VIP4) and bird.has_route(lab.VIP6), 15, 0.1,
                       "both VIPs in BIRD again")
        drain(vipd, bird, node, signal.SIGALRM, GS_LAB_S)


def drain(vipd, bird, node, sig: int, gs_s: float) -> None:
    """sig ends vipd as SIGTERM does (test_shutdown): GRACEFUL_SHUTDOWN for gs_s, the withdraw
    while vipd runs, exit 0, Cease 6/2 with the shutdown text in vipd's log and in BIRD (after
    a restart BIRD may still show the first run's text: the log line is this run's)."""
    t0 = time.monotonic()
    vipd.proc.signal(sig)
    gs = lab.wait_until(lambda: (lambda r: r if r and lab.GRACEFUL_SHUTDOWN in r["communities"]
                                 else None)(bird.route(lab.VIP4)), gs_s + 1, 0.01,
                        f"BIRD to show the VIP with GRACEFUL_SHUTDOWN after {sig.name}")
    lab.log(f"GRACEFUL_SHUTDOWN in BIRD {time.monotonic() - t0:.3f}s after {sig.name}: "
            f"local_pref {gs['localPref']}")
    lab.wait_until(lambda: not bird.has_route(lab.VIP4), gs_s + 3, 0.01,
                   f"{lab.VIP4} to leave BIRD after {sig.name}")
    dt_gone = time.monotonic() - t0
    lab.check(vipd.proc.alive(), f"{sig.name}: the withdraw should reach BIRD while vipd still "
              "runs, not by the session closing")
    lab.check(dt_gone >= gs_s - 0.05, f"{sig.name}: withdrawn {dt_gone:.3f}s after the signal, "
              f"before the {gs_s}s of GRACEFUL_SHUTDOWN were over")
    rc = vipd.wait_exit(EXIT_BOUND_S)
    lab.log(f"{sig.name}: {lab.VIP4} left BIRD after {dt_gone:.3f}s; vipd exited with {rc} "
            f"{time.monotonic() - t0:.3f}s after the signal")
    lab.check(rc == 0, f"vipd should exit 0 on {sig.name}, got {rc}")
    lab.check(vipd.log_lines(rf"received {sig.name}; draining"),
              f"vipd should log that {sig.name} starts the drain")
    lab.check(vipd.log_lines(r'sending Cease 6/2 "' + re.escape(SHUTDOWN_TEXT)),
              f"vipd should log the Cease it sends on {sig.name}")
    for prefix in (lab.VIP4, lab.VIP6):
        lab.wait_until(lambda p=prefix: bird.route(p) is None, 5, 0.02, f"{prefix} to leave BIRD")
    lab.check(bird.neighbor_state(node.v4) != "Established",
              f"{sig.name}: BIRD's session should be down after vipd exited")
    detail = lab.wait_until(lambda: (lambda t: t if SHUTDOWN_TEXT in t else None)(
        bird.protocol_all(node.v4)), 5, 0.1,
        lambda: f"BIRD to show {SHUTDOWN_TEXT!r}: {bird.protocol_all(node.v4)}")
    lab.check(re.search(r"Message:\s*" + re.escape(SHUTDOWN_TEXT), detail),
              f"{sig.name}: BIRD should show the shutdown communication `{SHUTDOWN_TEXT}`")
    lab.check(re.search(r"Received:.*[Aa]dministrative shutdown", detail),
              f"{sig.name}: BIRD should show a received Cease / Administrative shutdown (6/2)")


if __name__ == "__main__":
    lab.main(main_test, binaries=lab.Bird.binaries, vipd=True)
