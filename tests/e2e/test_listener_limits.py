#!/usr/bin/env python3
"""e2e: idle clients, floods and descriptor exhaustion do not take vipd down (issue 17, items 2
and 3). BIRD fabric (AS 65000), vipd on node 1 (AS 65001), started under
`prlimit --nofile=256:4096`.

Asserts:
- start: vipd raised its soft open-file limit to the hard one (4096 in /proc/PID/limits) and
  said so in its log;
- idle clients (client_flood.py idle-probe): an HTTP client and a control-socket client that send
  nothing are closed within 10 s; while 64 idle HTTP and 64 idle control-socket connections are
  held open, 70 fresh `GET /readyz` all answer 200 within 1 s each and a control-socket status
  request answers; each listener logged that it hit its cap (one line, not one per client) and
  counts it (status listeners.*.limitHits, vipd_listener_closed_total{reason="limit"}), and the
  idle timeouts are counted too;
- descriptor exhaustion: with vipd's limit lowered at run time (prlimit --pid) to 3 more than it
  has open, 500 control-socket and 500 TCP clients flood it for 6 s: vipd uses less than 1 s of
  CPU in those 6 s (the accept loops back off instead of spinning), writes fewer than 40 log
  lines, reports the accept failures (one line per 10 s with a count) and BIRD's session and
  both routes stay up throughout. With the limit restored, vipctl status and /readyz answer
  again within 5 s.
"""
import json
import os
import subprocess
import sys
import time

import lab

FLOOD = os.path.join(lab.E2E_DIR, "client_flood.py")
# The soak's flood: idle connections held open, non-blocking, so a full backlog never blocks.
SOAK_TOOLS = os.path.join(os.path.dirname(lab.E2E_DIR), "soak", "soak_tools.py")
HARD_LIMIT = 4096


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def soft_nofile(pid: int) -> int:
    with open(f"/proc/{pid}/limits") as f:
        for line in f:
            if line.startswith("Max open files"):
                return int(line.split()[3])
    raise AssertionError("no 'Max open files' in /proc/PID/limits")


def main_test() -> None:
    with lab.Lab("listener-limits") as L:
        s = lab.build_single_vipd(L)
        bird, vipd, node = s.bird, s.vipd, s.node
        # Restart under a low soft and a higher hard limit (the wrapper execs vipd: same PID).
        vipd.proc.stop()
        vipd.wrapper = ["prlimit", f"--nofile=256:{HARD_LIMIT}", "--"]
        vipd.proc = vipd._start()
        pid = vipd.proc.pid
        lab.wait_established(bird, [node.v4], 30)
        lab.wait_until(lambda: bird.has_route(lab.VIP4) and bird.has_route(lab.VIP6), 15, 0.1,
                       "both VIPs in BIRD")
        lab.check(soft_nofile(pid) == HARD_LIMIT,
                  f"vipd's soft open-file limit is {soft_nofile(pid)}, expected it raised to "
                  f"the hard limit {HARD_LIMIT}")
        lab.check(vipd.log_lines(rf"open-file limit raised from 256 to the hard limit "
                                 rf"{HARD_LIMIT}"), "vipd should log that it raised the limit")

        idle_clients(vipd, bird, node)
        exhaustion(L, vipd, bird, node, pid)


def routes_up(bird: lab.Bird, node: lab.Node, when: str) -> None:
    state = bird.neighbor_state(node.v4)
    lab.check(state == "Established", f"{when}: BIRD's session with node 1 is {state}")
    for prefix in (lab.VIP4, lab.VIP6):
        lab.check(bird.route(prefix) is not None, f"{when}: {prefix} left BIRD")


def idle_clients(vipd: lab.Vipd, bird: lab.Bird, node: lab.Node) -> None:
    p = vipd.ns.run([sys.executable, FLOOD, "idle-probe", "--tcp", vipd.metrics_listen,
                     "--unix", vipd.socket, "--idle", "64", "--probes", "70"], timeout=90)
    r = json.loads(p.stdout)
    lab.log(f"idle clients: {json.dumps(r)}")
    lab.check(0 <= r["idle_tcp_closed_s"] <= 10,
              f"an idle HTTP client was closed after {r['idle_tcp_closed_s']:.1f} s (-1: not "
              f"within 15 s); expected within 10 s")
    lab.check(0 <= r["idle_unix_closed_s"] <= 10,
              f"an idle control-socket client was closed after {r['idle_unix_closed_s']:.1f} s "
              f"(-1: not within 15 s); expected within 10 s")
    lab.check(r["held"] >= 128, f"only {r['held']} of 128 idle connections were opened")
    lab.check(r["answered"] == r["probes"] and r["slowest_s"] <= 1.0,
              f"with 64+64 idle clients held, {r['answered']} of {r['probes']} fresh /readyz "
              f"answered (slowest {r['slowest_s']:.2f} s; failures {r['failures']}); expected "
              f"all within 1 s")
    lab.check(r["status_ok"], f"vipctl-style status request while flooded: no answer "
              f"({r['status_s']:.2f} s)")
    for listener in ("metrics listener", "control"):
        lines = vipd.log_lines(rf"{listener}.*the limit")
        lab.check(1 <= len(lines) <= 3, f"{listener}: {len(lines)} cap warnings; expected one "
                  f"(throttled): {lines[:3]}")
        print(f"  vipd log: {lines[0][:300]}", flush=True)
    listeners = vipd.status()["listeners"]
    lab.log(f"listeners after the idle flood: {json.dumps(listeners)}")
    for name in ("metrics", "control"):
        # 64 idle clients against a cap of 32: each one past the cap made room.
        lab.check(listeners[name]["limitHits"] >= 64 - listeners[name]["limit"],
                  f"{name}: limitHits {listeners[name]['limitHits']}, expected at least "
                  f"{64 - listeners[name]['limit']}")
        lab.check(listeners[name]["idleTimeouts"] >= 1, f"{name}: idle timeouts not counted")
    limited = vipd.metric("vipd_listener_closed_total", listener="metrics", reason="limit")
    lab.check(limited is not None and limited > 0,
              f"vipd_listener_closed_total{{listener=metrics,reason=limit}} is {limited}")
    routes_up(bird, node, "after the idle clients")


def exhaustion(L: lab.Lab, vipd: lab.Vipd, bird: lab.Bird, node: lab.Node, pid: int) -> None:
    lines_before = len(vipd.proc.log_text().splitlines())
    limit = open_fds(pid) + 3
    subprocess.run(["prlimit", "--pid", str(pid), f"--nofile={limit}:{HARD_LIMIT}"], check=True)
    flood = L.start(vipd.ns, "flood", [sys.executable, SOAK_TOOLS, "flood", "--tcp",
                                       vipd.metrics_listen, "--unix", vipd.socket,
                                       "--count", "500", "--hold", "6"])
    time.sleep(0.5)  # the flood is connecting
    cpu0, t0 = lab.cpu_seconds(pid), time.monotonic()
    while flood.alive() and time.monotonic() - t0 < 5:
        routes_up(bird, node, "during the descriptor exhaustion")
        time.sleep(0.5)
    cpu = lab.cpu_seconds(pid) - cpu0
    spent = time.monotonic() - t0
    lab.wait_until(lambda: not flood.alive(), 15, 0.1, "the flood to end")
    new_lines = vipd.proc.log_text().splitlines()[lines_before:]
    lab.log(f"descriptor exhaustion (limit {limit}): vipd used {cpu:.2f} s CPU in {spent:.1f} s, "
            f"{len(new_lines)} log lines; flood: {flood.log_text().strip()}")
    for line in new_lines[:6]:
        print(f"  vipd log: {line[:300]}", flush=True)
    lab.check(vipd.proc.alive(), "vipd died during the descriptor exhaustion")
    lab.check(cpu < 1.0, f"vipd used {cpu:.2f} s of CPU in {spent:.1f} s out of descriptors: "
              f"an accept loop spins")
    lab.check(len(new_lines) < 40, f"{len(new_lines)} log lines in {spent:.1f} s out of "
              f"descriptors (expected one per listener per 10 s)")
    lab.check(any("accept failed" in line and "out of file descriptors" in line
                  for line in new_lines), "vipd should report the accept failures")
    routes_up(bird, node, "after the descriptor exhaustion")

    subprocess.run(["prlimit", "--pid", str(pid), f"--nofile={HARD_LIMIT}:{HARD_LIMIT}"],
                   check=True)
    status = lab.wait_until(lambda: try_status(vipd), 5, 0.2,
                            "vipctl status to answer once descriptors are free again")
    lab.log(f"listeners after the exhaustion: {json.dumps(status['listeners'])}")
    lab.check(status["listeners"]["control"]["acceptFailures"] > 0,
              "the control socket's accept failures should be counted")
    code, _ = lab.wait_until(lambda: (lambda r: r if r[0] == 200 else None)(try_readyz(vipd)),
                             5, 0.2, "/readyz to answer 200 again")
    routes_up(bird, node, "at the end")


def try_status(vipd: lab.Vipd):
    try:
        return vipd.status()
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, ValueError):
        return None


def try_readyz(vipd: lab.Vipd) -> tuple[int, str]:
    try:
        return vipd.http("/readyz", timeout=2)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, ValueError):
        return (0, "")


if __name__ == "__main__":
    lab.main(main_test, binaries=["bird", "prlimit"], vipd=True)
