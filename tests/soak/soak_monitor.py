"""The chaos soak's invariant checks: a Monitor thread that samples the fabric, the nodes and the
processes every TICK_S, per-instance resource figures, and the client log's verdict.

Constants, and why these values:
- GRACE_S 1.0: a path may point at a node whose VIP is not bound for at most this long. After a
  hand-made `ip addr del` vipd hears the kernel's notification, withdraws (one UPDATE), BIRD
  drops the path and rewrites the kernel route: ~10-100 ms here; plus one TICK_S of sampling and
  a loaded 2-core machine. A withdraw that waits for a timer would take seconds and still fail.
- WITHDRAW_GRACE_S 0.5: `vipctl withdraw --wait` returns once BIRD's TCP acknowledged the
  withdraw; BIRD reads and applies it a moment later. 0.5 s covers that and one sample.
- RSS: growth beyond max(RSS_TOL_KIB, RSS_TOL_FRACTION x baseline) fails. Generous on purpose:
  glibc keeps freed arenas after a flood, and the baseline is one early sample; a real leak
  under 3 minutes of faults shows as far more, or as fds/threads.
  Under AddressSanitizer (CI's build) RSS is reported, not judged: its quarantine keeps up to
  256 MiB of freed memory by design, so RSS grows with every flood without any leak
  (LeakSanitizer judges leaks at exit instead, in the lab's sanitizer check).
- S (flood faults): vipctl status must answer during a control-socket flood, GET /healthz
  during a metrics flood (listeners cap their clients and evict the longest idle), and vipd
  must use under SPIN_CPU of a core while accept() fails with EMFILE (it backs off).
- FD_TOL 3: a health check, a vipctl and a metrics scrape in flight at the final sample.
- THREADS_TOL 0: vipd's thread count is fixed by its configuration.
- V (issue 28): while some node is healthy (soak.healthy_nodes()), the fabric's kernel route for
  each VIP must not be empty for more than GRACE_S, and every second must see a client request
  answered (served_verdict). A healthy node's vipd keeps announcing whatever happens to the
  others; a fault on the whole fabric (BIRD restart) leaves no node healthy.
"""
from __future__ import annotations

import os
import re
import statistics
import threading
import time
from typing import Optional

import lab

TICK_S = 0.2
GRACE_S = 1.0
WITHDRAW_GRACE_S = 0.5
RESOURCE_EVERY_S = 1.0
WARMUP_S = 8.0
FINAL_WINDOW_S = 5.0
FD_TOL = 3
THREADS_TOL = 0
RSS_TOL_KIB = 4096
RSS_TOL_FRACTION = 0.5
SPIN_CPU = 0.5

INVARIANTS = {
    "1": f"path via a node whose VIP is not bound (> {GRACE_S} s)",
    "2": "path from a node its operator withdrew",
    "3": "process death not injected",
    "4": "fd/thread/RSS growth after the quiet tail",
    "5": "client failure outside every fault window",
    "V": "no route or no client answer while a node could serve",
    "G": "the last announcer's withdraw not refused by the guard",
    "R": "node not recovered within the bound",
    "S": "vipd unresponsive or spinning under a flood",
}


class Violations:
    def __init__(self, clock):
        self.clock = clock  # seconds since the soak started, for the log
        self.count = {k: 0 for k in INVARIANTS}
        self.lines: list[str] = []
        self._lock = threading.Lock()

    def add(self, inv: str, msg: str) -> None:
        with self._lock:
            self.count[inv] += 1
            line = f"VIOLATION {inv} ({INVARIANTS[inv]}): {msg}"
            self.lines.append(f"{self.clock():8.1f}s {line}")
        lab.log(line)

    def total(self) -> int:
        return sum(self.count.values())


def lo_vips(ns: lab.Namespace) -> set[str]:
    """The lab's VIPs bound on ns's lo (any flags)."""
    out = lab.run(["ip", "-n", ns.name, "-o", "addr", "show", "dev", "lo"], check=False,
                  timeout=5).stdout
    have = set(re.findall(r"\binet6? (\S+)", out))
    return {v for v in (lab.VIP4, lab.VIP6) if v in have}


def bird_paths(bird: lab.Bird) -> Optional[set[tuple[str, str]]]:
    """(prefix, protocol) of every path in BIRD (`show route`); None while BIRD is not answering."""
    p = lab.run(["birdc", "-s", bird.sock, "show", "route"], check=False, timeout=5)
    if p.returncode != 0 or "unicast" not in p.stdout and "Table" not in p.stdout:
        return None
    out, prefix = set(), None
    for line in p.stdout.splitlines():
        m = re.match(r"^(\S+/\d+)\s", line)
        if m:
            prefix = m.group(1)
        m = re.search(r"unicast \[(\S+)", line)
        if m and prefix:
            out.add((prefix, m.group(1)))
    return out


def proc_figures(pid: int) -> Optional[tuple[int, int, int]]:
    """(open fds, threads, VmRSS KiB) of pid, None when it is gone."""
    try:
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        st = lab.proc_status(pid)
        return fds, int(st["Threads"]), int(st["VmRSS"].split()[0])
    except (OSError, KeyError, ValueError):
        return None


class Monitor:
    """Samples every TICK_S in a thread: the fabric's kernel routes, the VIPs bound per node,
    BIRD's paths, the liveness of every process in soak.procs; every RESOURCE_EVERY_S the
    figures of each running vipd. Checks invariants 1-3 as it goes; 4 in final_resources()."""

    def __init__(self, soak):
        self.soak = soak
        self.v = soak.violations
        self.samples: dict[int, list[tuple[float, int, int, int]]] = {}
        self.baseline: dict[int, tuple[float, int, int, int]] = {}
        self.started: dict[int, float] = {}
        self.unbound_since: dict[tuple[int, str], float] = {}
        self.flagged: set = set()
        self.ticks = 0
        # (wall time, healthy nodes, every VIP routed) per tick, for invariant V.
        self.healthy_timeline: list[tuple[float, int, bool]] = []
        self.unrouted_since: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(15)

    def _run(self) -> None:
        next_res = 0.0
        while not self._stop.is_set():
            t = time.monotonic()
            try:
                self._tick(t)
                if t >= next_res:
                    self._resources(t)
                    next_res = t + RESOURCE_EVERY_S
            except Exception as e:  # noqa: BLE001 - a sampling hiccup is not a verdict
                lab.log(f"monitor: sample failed: {e!r}")
            self.ticks += 1
            self._stop.wait(max(0.0, t + TICK_S - time.monotonic()))

    def _once(self, key, inv: str, msg: str) -> None:
        """One violation per continuous occurrence of key (re-armed by _clear)."""
        if key not in self.flagged:
            self.flagged.add(key)
            self.v.add(inv, msg)

    def _clear(self, key) -> None:
        self.flagged.discard(key)

    def _tick(self, t: float) -> None:
        s = self.soak
        nh = {lab.VIP4: s.fabric.kernel_nexthops(lab.VIP4),
              lab.VIP6: s.fabric.kernel_nexthops(lab.VIP6)}
        paths = bird_paths(s.bird)
        healthy = s.healthy_nodes()
        routed = all(nh[vip] for vip in nh)
        self.healthy_timeline.append((time.time(), len(healthy), routed))
        for vip in nh:
            if nh[vip] or not healthy:
                self.unrouted_since.pop(vip, None)
                self._clear(("V", vip))
                continue
            since = self.unrouted_since.setdefault(vip, t)
            if t - since > GRACE_S:
                self._once(("V", vip), "V", f"no fabric route for {vip} for {t - since:.1f} s "
                           f"while nodes {healthy} are healthy")
        for node in s.nodes:
            i = node.index
            hop = {lab.VIP4: node.v4, lab.VIP6: node.v6}
            bound = lo_vips(node.ns)
            for vip in (lab.VIP4, lab.VIP6):
                key = (i, vip)
                # One route sample a tick, taken before the addresses: a single sample can race
                # a drain's unbind, so only a state lasting GRACE_S (several ticks) counts.
                if hop[vip] in nh[vip] and vip not in bound:
                    since = self.unbound_since.setdefault(key, t)
                    if t - since > GRACE_S:
                        self._once(("1",) + key, "1", f"fabric route {vip} via node {i} "
                                   f"({hop[vip]}) for {t - since:.1f} s while {vip} is not "
                                   f"bound on node {i}")
                else:
                    self.unbound_since.pop(key, None)
                    self._clear(("1",) + key)
            w = s.withdrawn.get(i)
            if w is not None and t > w + WITHDRAW_GRACE_S:
                seen = [f"kernel {vip} via {hop[vip]}" for vip in nh if hop[vip] in nh[vip]]
                if paths is not None:
                    seen += [f"BIRD {p} from node{i}" for p in (lab.VIP4, lab.VIP6)
                             if (p, f"node{i}") in paths]
                if seen:
                    self._once(("2", i, w), "2", f"node {i} withdrawn by its operator "
                               f"{t - w:.1f} s ago, yet: {', '.join(seen)}")
        for key, proc in list(s.procs.items()):
            if not proc.alive() and proc.pid not in s.expected \
                    and ("3", proc.pid) not in self.flagged:
                self._once(("3", proc.pid), "3", f"{key} (pid {proc.pid}) exited with "
                           f"{proc.popen.returncode}; no fault killed it")
                s.dead.add(key)  # once per pid: the soak revives it

    def _resources(self, t: float) -> None:
        for i, vipd in enumerate(self.soak.vipds, 1):
            proc = vipd.proc
            if not proc.alive():
                continue
            fig = proc_figures(proc.pid)
            if fig is None:
                continue
            self.started.setdefault(proc.pid, proc.started)
            sample = (t,) + fig
            self.samples.setdefault(proc.pid, []).append(sample)
            if proc.pid not in self.baseline and t - proc.started >= WARMUP_S \
                    and not self.soak.active.get(i):
                self.baseline[proc.pid] = sample

    def final_resources(self) -> list[str]:
        """Invariant 4 for each vipd running now: the median of its last FINAL_WINDOW_S of
        samples against its baseline. Returns one table row per instance."""
        rows = []
        now = time.monotonic()
        for i, vipd in enumerate(self.soak.vipds, 1):
            pid = vipd.proc.pid
            base = self.baseline.get(pid)
            last = [x for x in self.samples.get(pid, []) if x[0] >= now - FINAL_WINDOW_S]
            if base is None or not last:
                rows.append(f"node {i} vipd pid {pid}: no baseline or no final sample "
                            f"(age {now - vipd.proc.started:.0f} s); not compared")
                continue
            fds, thr, rss = (int(statistics.median(x[k] for x in last)) for k in (1, 2, 3))
            rss_tol = max(RSS_TOL_KIB, int(base[3] * RSS_TOL_FRACTION))
            rows.append(f"node {i} vipd pid {pid}: fds {base[1]} -> {fds}, threads {base[2]} "
                        f"-> {thr}, RSS {base[3]} -> {rss} KiB (baseline at "
                        f"+{base[0] - vipd.proc.started:.0f} s of its life)")
            if fds > base[1] + FD_TOL:
                self.v.add("4", f"node {i} vipd pid {pid}: fds {base[1]} -> {fds} (tolerance "
                           f"+{FD_TOL})")
            if thr > base[2] + THREADS_TOL:
                self.v.add("4", f"node {i} vipd pid {pid}: threads {base[2]} -> {thr}")
            if asan(pid):
                rows[-1] += "; RSS not judged (AddressSanitizer build)"
            elif rss > base[3] + rss_tol:
                self.v.add("4", f"node {i} vipd pid {pid}: RSS {base[3]} -> {rss} KiB "
                           f"(tolerance +{rss_tol} KiB)")
        return rows


def asan(pid: int) -> bool:
    """Whether pid runs with AddressSanitizer (its runtime library is mapped)."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            return "libasan" in f.read()
    except OSError:
        return False


def client_verdict(path: str, windows: list[tuple[float, float, str]],
                   violations: Violations) -> dict:
    """Reads the load client's log: every failed request whose [start, end] meets no fault
    window (wall-clock) is a violation of invariant 5. Returns the counts."""
    sent = failed = unexplained = 0
    by_node: dict[str, int] = {}
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError:
        lines = []
    for line in lines:
        parts = line.split(" ", 3)
        if len(parts) < 4:
            continue
        t0, t1, verdict, what = float(parts[0]), float(parts[1]), parts[2], parts[3]
        sent += 1
        if verdict == "ok":
            by_node[what] = by_node.get(what, 0) + 1
            continue
        failed += 1
        if not any(ws <= t1 and t0 <= we for ws, we, _ in windows):
            unexplained += 1
            violations.add("5", f"request at {time.strftime('%H:%M:%S', time.localtime(t0))}"
                           f".{int(t0 * 1000) % 1000:03d} failed ({what}, {t1 - t0:.2f} s) "
                           f"outside every fault window")
    return {"sent": sent, "failed": failed, "unexplained": unexplained, "by_node": by_node}


def served_verdict(path: str, timeline: list[tuple[float, int, bool]],
                   violations: Violations) -> None:
    """Invariant V, the clients' side: every whole second during which some node was healthy at
    every sample (and until the requests started in it could finish) must have at least one
    request started in it answered."""
    if not timeline:
        return
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError:
        return
    answered: dict[int, int] = {}
    started: dict[int, int] = {}
    for line in lines:
        parts = line.split(" ", 3)
        if len(parts) < 4:
            continue
        second = int(float(parts[0]))
        started[second] = started.get(second, 0) + 1
        if parts[2] == "ok":
            answered[second] = answered.get(second, 0) + 1
    unhealthy = [t for t, n, _ in timeline if n == 0]
    first, last = int(timeline[0][0]) + 1, int(timeline[-1][0]) - 3
    for second in range(first, last):
        if any(second - 1 <= t <= second + 3 for t in unhealthy):
            continue  # no node could serve around then (a fabric fault, every node busy)
        if started.get(second, 0) and not answered.get(second, 0):
            violations.add("V", f"no request started at "
                           f"{time.strftime('%H:%M:%S', time.localtime(second))} was answered "
                           f"({started[second]} sent) while a node could serve")
