#!/usr/bin/env python3
"""vipd against GoBGP, ExaBGP, FRR and BIRD as the VIP speaker, on one lab, in one run.

For each speaker (all three nodes run it) this builds the lab of benchlab.py and measures:
  idle        RSS of one node's speaker processes and their CPU time per hour, sessions up
  start       process start until the fabric's kernel route has this node's next hop
  withdraw    the speaker's withdraw command issued until the fabric drops the next hop
  drain       failed requests while one node is drained under a steady load of new connections
  freeze      SIGSTOP of every speaker process on a node until the fabric drops its next hop
  cut         the node's switch port set down (carrier lost) until the fabric drops its next hop
              (freeze and cut: hold timer only, and with BFD 300ms x 3 and 50ms x 3 where the
              speaker has BFD; the fabric runs the same timers)
  table       RSS while a peer sends a full table (1,000,000 IPv4 /24s), and after
  apiserver-kill     SIGKILL of one node's apiserver until the fabric drops its next hop, under
              200 new HTTPS connections a second through the VIP, and the requests that failed
  apiserver-unready  the apiserver's /readyz turns to 500 ("[-]etcd failed") until the fabric
              drops the node's next hop
Every time is taken from the fabric's kernel route changes (`ip monitor`, see RouteMonitor).
--speakers vipd-norp adds vipd with returnPath.mode off (not run by default): next to vipd's own
idle figures it shows what the return-path check (probes every 2 s, answers relayed for the other
nodes), a feature no other speaker here has, costs.

The apiserver scenarios run on a lab of their own (vipd, ExaBGP and BIRD; GoBGP and FRR have no
gated set-up here). On each node a stand-in kube-apiserver (bench_apiserver.py: TLS with a
kubeadm-shaped certificate from a cluster CA, /readyz "ok", HTTP keep-alive like Go's net/http)
listens on 0.0.0.0:6443, as kube-apiserver does. It is both what the node's health gate checks
(https://127.0.0.1:6443/readyz) and the service behind the VIP: the client namespace makes
HTTPS requests to VIP:6443 (a new connection each, verified against the cluster CA), so when a
node's apiserver dies its clients see what they would in production: the node's kernel refuses
the connection (or resets one in flight) until the fabric stops sending them there. Failed
requests are counted by error; "Connection refused" can only come from the killed node (the
others' apiservers listen), so that count is the requests the killed node turned away. The
apiserver is killed with SIGKILL by PID and started again after the path is gone. The gates:
  vipd    health.type apiserver with url and caFile; interval, timeout, rise, fall and the rest
          at vipd's documented defaults (whatever the build under test does with them)
  ExaBGP  `python3 -m exabgp healthcheck` (speakers.HEALTHCHECK_SETTINGS), curl as the check
  BIRD    bird_check.sh: curl every speakers.BIRD_CHECK_INTERVAL_S, birdc disable/enable of the
          static protocols holding the VIPs
The curl check passes only on HTTP 200 with the body "ok" (speakers.Health.curl).

--scenarios runs only some scenarios; their figures are merged into the previous results.json
in --out (the other figures stay, and the report names the date and versions of each separate
run next to the rows it measured).

A figure is a measurement: nothing here fails because a speaker is slow. The run fails when a
scenario cannot be carried out (the lab does not come up, a route never comes back, vipd crashes
or drops a request it should not have had to): that is a broken benchmark or a vipd bug.

Usage (root): bench.py [--quick] [--speakers vipd,gobgp,...] [--scenarios idle,start,...]
                       [--out DIR] [--build-dir DIR]
"""
from __future__ import annotations

import argparse
import collections
import copy
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
import traceback
from typing import Optional

import benchlab
import speakers
from speakers import lab

HERE = os.path.dirname(os.path.abspath(__file__))
ALL_KINDS = ["vipd", "gobgp", "exabgp", "frr", "bird"]
BFD_SETS = {"bfd300": lab.BfdTimers(300, 300, 3), "bfd50": lab.BfdTimers(50, 50, 3)}
HOLD_S = 3  # every speaker's hold time (the RFC 4271 minimum): the hold-only failover figure
DRAIN_RATE, DRAIN_TIMEOUT_S, DRAIN_LEAD_S, DRAIN_TAIL_S = 200.0, 1.0, 1.5, 2.0
# apiserver-kill: load from LEAD before the kill to WINDOW + TAIL after it (the path must be gone
# within WINDOW for every failed request to be counted; a longer time is flagged).
APISERVER_LEAD_S, APISERVER_WINDOW_S, APISERVER_TAIL_S = 1.5, 6.0, 1.5
SCENARIOS = ["idle", "start", "withdraw", "drain", "hold", "bfd", "table", "apiserver-kill",
             "apiserver-unready"]
MAIN_LAB = ("idle", "start", "withdraw", "drain", "hold")
APISERVER = ("apiserver-kill", "apiserver-unready")


def utc_now() -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


def summary(samples: list[float], digits: int = 4) -> dict:
    s = sorted(samples)
    return {"median": round(statistics.median(s), digits), "min": round(s[0], digits),
            "max": round(s[-1], digits), "n": len(s), "samples": [round(x, digits) for x in s]}


class Bench:
    def __init__(self, args):
        self.args = args
        self.results: dict = {}
        self.merged = False
        self.base: Optional[dict] = None
        self.failures: list[str] = []

    def log(self, kind: str, msg: str) -> None:
        lab.log(f"[{kind}] {msg}")

    # --- scenarios on the 3-node fabric -------------------------------------------------------

    def idle(self, f: benchlab.Fabric) -> dict:
        time.sleep(2)  # past the sessions' first exchanges
        pids = [s.pids() for s in f.speakers]
        cpu0 = [benchlab.cpu_seconds(p) for p in pids]
        t0 = time.monotonic()
        time.sleep(self.args.idle)
        window = time.monotonic() - t0
        rss = [benchlab.rss_kib(p) / 1024 for p in pids]
        anon = [benchlab.rss_kib(p, "RssAnon") / 1024 for p in pids]
        cpu = [(benchlab.cpu_seconds(p) - c) / window * 3600 for p, c in zip(pids, cpu0)]
        procs = sorted({open(f"/proc/{p}/comm").read().strip() for p in pids[0]})
        self.log(f.kind, f"idle {window:.0f} s: RSS {', '.join(f'{r:.1f}' for r in rss)} MiB; "
                 f"CPU {', '.join(f'{c:.2f}' for c in cpu)} s/hour ({'+'.join(procs)})")
        return {"window_s": round(window, 1), "processes": procs, "rss_mib": summary(rss, 2),
                "rss_anon_mib": summary(anon, 2),
                "cpu_s_per_hour": summary(cpu, 3)}

    def start(self, f: benchlab.Fabric) -> dict:
        s = f.speakers[0]
        node = s.node
        out = []
        for _ in range(self.args.reps):
            # Withdrawn first, then stopped: stopping alone may leave the path in the fabric as
            # a graceful-restart stale path; the figure is about starting.
            t_stop = time.time()
            s.withdraw()
            f.wait_gone(node, t_stop, 30, f"{s.kind}: {s.withdraw_how}")
            s.stop()
            f.bird_ready_for(node)
            time.sleep(0.3)
            t0 = time.time()
            s.start()
            out.append(f.wait_back(node, t0, 60, f"{s.name} started"))
            f.wait_all(30, "back after start")
        self.log(f.kind, f"start to announced: {out}")
        return summary(out)

    def withdraw(self, f: benchlab.Fabric) -> dict:
        s = f.speakers[0]
        node = s.node
        out, cmd = [], []
        for _ in range(self.args.reps):
            time.sleep(0.5)
            t0 = time.time()
            s.withdraw()
            cmd.append(time.time() - t0)
            out.append(f.wait_gone(node, t0, 30, f"{s.kind}: {s.withdraw_how}"))
            s.withdrawn()
            s.announce()
            f.wait_back(node, t0, 60, f"{s.kind}: announced again")
            f.wait_all(30, "back after withdraw")
        self.log(f.kind, f"planned withdraw: {out} (command returned after {cmd})")
        return {**summary(out), "command": s.withdraw_how, "command_s": summary(cmd)}

    def drain(self, f: benchlab.Fabric) -> dict:
        s = f.speakers[0]
        node = s.node
        runs = []
        for rep in range(self.args.drain_reps):
            path = f.L.path(f"load-{rep}.json")
            duration = DRAIN_LEAD_S + 4.0 + DRAIN_TAIL_S
            load = f.run_load(DRAIN_RATE, duration, DRAIN_TIMEOUT_S, path)
            time.sleep(DRAIN_LEAD_S)
            t0 = time.time()
            s.drain()
            cmd = time.time() - t0
            gone = f.wait_gone(node, t0, 30, f"{s.kind}: drained")
            lab.wait_until(lambda: not load.alive(), duration + DRAIN_TIMEOUT_S + 20, 0.1,
                           "the load client to finish")
            with open(path) as fh:
                reqs = json.load(fh)["requests"]
            failed = [r for r in reqs if "error" in r]
            before = {r.get("node") for r in reqs if r["t"] < t0 and "node" in r}
            late = [r for r in reqs if r.get("node") == f"node{node.index}"
                    and r["t"] > t0 + gone + 0.2]
            errors = dict(collections.Counter(r["error"] for r in failed))
            lat = sorted(r["latency"] for r in reqs if "node" in r)
            run = {"requests": len(reqs), "failed": len(failed), "errors": errors,
                   "failed_at_s": [round(r["t"] - t0, 3) for r in failed],
                   "drain_command_s": round(cmd, 3), "nexthop_gone_s": round(gone, 4),
                   "latency_p99_ms": round(lat[int(len(lat) * 0.99)] * 1000, 1),
                   "latency_max_ms": round(lat[-1] * 1000, 1)}
            runs.append(run)
            self.log(f.kind, f"drain {rep + 1}: {run}")
            if len(before) < 3:
                raise AssertionError(f"{s.kind} drain: before the drain only {sorted(before)} "
                                     f"answered; the L4 hash should spread over 3 nodes")
            if late:
                raise AssertionError(f"{s.kind} drain: node {node.index} still answered "
                                     f"{len(late)} requests after the fabric dropped it")
            s.undrain()
            f.wait_all(60, "back after the drain")
            time.sleep(0.5)
        return {"rate_per_s": DRAIN_RATE, "timeout_s": DRAIN_TIMEOUT_S, "runs": runs,
                "failed": summary([r["failed"] for r in runs], 0),
                "requests": sum(r["requests"] for r in runs),
                "failed_total": sum(r["failed"] for r in runs)}

    def failover(self, f: benchlab.Fabric, mode: str) -> dict:
        bound = (HOLD_S if mode == "hold" else 1) * 3 + 15
        out = {}
        for what in ("freeze", "cut"):
            i = 1 if what == "freeze" else 2
            s, node = f.speakers[i], f.nodes[i]
            port = f"n{node.index}"
            times, backs, lines = [], [], []
            for _ in range(self.args.failover_reps):
                # Every path present before the clock starts: a node that flapped on its own
                # (BFD at 50 ms under the sanitizers in CI) would otherwise be "gone" already.
                f.wait_all(60, f"all paths present before the {what}")
                time.sleep(0.5)
                t0 = time.time()
                if what == "freeze":
                    speakers.freeze(s)
                else:
                    f.fabric.ip("link", "set", port, "down")
                try:
                    dt = f.wait_gone(node, t0, bound, f"{s.kind} {mode}: {what} of node {node.index}")
                finally:
                    t1 = time.time()
                    if what == "freeze":
                        speakers.thaw(s)
                    else:
                        f.fabric.ip("link", "set", port, "up")
                times.append(dt)
                lines.append(f.monitor.timeline(t0, t0 + dt + 0.001))
                backs.append(f.wait_back(node, t1, 90, f"{s.kind} {mode}: node {node.index} back "
                                         f"after the {what}"))
                f.wait_all(60, f"all back after the {what}")
            out[what] = {**summary(times), "back_s": summary(backs, 2), "timelines": lines}
            self.log(f.kind, f"{mode} {what}: {times} (back after {[round(b, 2) for b in backs]})")
        return out

    # --- the apiserver behind the VIP -----------------------------------------------------------

    def apiserver_kill(self, f: benchlab.Fabric) -> dict:
        s, node, api = f.speakers[1], f.nodes[1], f.apiservers[1]
        runs = []
        for rep in range(self.args.failover_reps):
            path = f.L.path(f"apiserver-kill-{rep}.json")
            duration = APISERVER_LEAD_S + APISERVER_WINDOW_S + APISERVER_TAIL_S
            load = f.run_load(DRAIN_RATE, duration, DRAIN_TIMEOUT_S, path)
            time.sleep(APISERVER_LEAD_S)
            t0 = time.time()
            api.kill()
            try:
                gone = f.wait_gone(node, t0, 30, f"{s.kind}: apiserver of node {node.index} "
                                   f"killed")
            finally:
                api.reap()
            lab.wait_until(lambda: not load.alive(), duration + DRAIN_TIMEOUT_S + 20, 0.1,
                           "the load client to finish")
            api.start()
            t1 = time.time()
            back = f.wait_back(node, t1, 60, f"{s.kind}: node {node.index} back after its "
                               f"apiserver restarted")
            f.wait_all(60, "all back after the apiserver kill")
            with open(path) as fh:
                reqs = json.load(fh)["requests"]
            failed = [r for r in reqs if "error" in r]
            errors = dict(collections.Counter(r["error"] for r in failed))
            before = {r.get("node") for r in reqs if r["t"] < t0 and "node" in r}
            window = [r for r in reqs if t0 <= r["t"] <= t0 + gone]
            run = {"requests": len(reqs), "failed": len(failed), "errors": errors,
                   "refused": errors.get("Connection refused", 0),
                   "failed_before_kill": sum(1 for r in failed if r["t"] + r["latency"] < t0),
                   "failed_after_gone": sum(1 for r in failed if r["t"] > t0 + gone + 0.2),
                   "requests_kill_to_gone": len(window),
                   "failed_at_s": [round(r["t"] - t0, 3) for r in failed],
                   "nexthop_gone_s": round(gone, 4), "back_s": round(back, 2),
                   "load_covered_gone": gone < APISERVER_WINDOW_S,
                   "timeline": f.monitor.timeline(t0, t0 + gone + 0.001)}
            runs.append(run)
            self.log(f.kind, f"apiserver kill {rep + 1}: gone after {gone * 1000:.0f} ms; "
                     f"{len(failed)} of {len(reqs)} failed {errors}; back after {back:.2f} s")
            if len(before) < 3:
                raise AssertionError(f"{s.kind} apiserver kill: before the kill only "
                                     f"{sorted(before)} answered; the L4 hash should spread over "
                                     f"3 nodes")
            time.sleep(0.5)
        return {**summary([r["nexthop_gone_s"] for r in runs]), "rate_per_s": DRAIN_RATE,
                "timeout_s": DRAIN_TIMEOUT_S, "runs": runs,
                "failed": summary([r["failed"] for r in runs], 0),
                "requests": sum(r["requests"] for r in runs),
                "failed_total": sum(r["failed"] for r in runs),
                "refused_total": sum(r["refused"] for r in runs),
                "measured": utc_now()}

    def apiserver_unready(self, f: benchlab.Fabric) -> dict:
        s, node, api = f.speakers[2], f.nodes[2], f.apiservers[2]
        times, backs = [], []
        for _ in range(self.args.failover_reps):
            time.sleep(0.5)
            t0 = time.time()
            api.set_mode("unready")
            try:
                times.append(f.wait_gone(node, t0, 60, f"{s.kind}: apiserver of node "
                                         f"{node.index} unready"))
            finally:
                t1 = time.time()
                api.set_mode("ok")
            backs.append(f.wait_back(node, t1, 60, f"{s.kind}: node {node.index} back after "
                                     f"its apiserver is ready again"))
            f.wait_all(60, "all back after the apiserver was unready")
        self.log(f.kind, f"apiserver unready: {times} (back after "
                 f"{[round(b, 2) for b in backs]})")
        return {**summary(times), "back_s": summary(backs, 2), "measured": utc_now()}

    # --- full table ---------------------------------------------------------------------------

    def table(self, kind: str) -> dict:
        with lab.Lab(f"bench-{kind}-table") as L:
            topo = L.fabric_with_nodes(1)
            s = speakers.make(kind, L, topo.nodes[0], 9, None, self.args.build_dir)
            feeder = benchlab.Feeder(topo.fabric, s, dials=not s.dials)
            try:
                s.start()
                feeder.connect(60)
                time.sleep(2)
                pids = s.pids()
                before = benchlab.rss_kib(pids) / 1024
                anon_before = benchlab.rss_kib(pids, "RssAnon") / 1024
                samples: list[tuple[float, float]] = []
                stop = threading.Event()

                def sample() -> None:
                    while not stop.is_set():
                        samples.append((time.monotonic(), benchlab.rss_kib(s.pids()) / 1024))
                        time.sleep(0.1)
                th = threading.Thread(target=sample, daemon=True)
                th.start()
                t0 = time.monotonic()
                sent = feeder.feed(self.args.table)
                feeder.keepalive_forever()
                # Done: the speaker has read every byte, and its RSS has not moved by more than
                # 1% for 3 s since (bounded: 180 s).
                deadline = t0 + sent + 180
                read_at = None
                while time.monotonic() < deadline:
                    time.sleep(0.5)
                    if read_at is None:
                        if feeder.backlog() == 0:
                            read_at = time.monotonic()
                        continue
                    recent = [r for t, r in samples if t > time.monotonic() - 3]
                    if time.monotonic() > read_at + 3 and \
                            max(recent) - min(recent) <= 0.01 * max(recent):
                        break
                settled = time.monotonic() - t0
                stop.set()
                th.join(2)
                alive, up = s.alive(), feeder.up()
                peak = max(r for _, r in samples)
                after = samples[-1][1]
                anon_after = benchlab.rss_kib(s.pids(), "RssAnon") / 1024
                res = {"prefixes": self.args.table, "rss_before_mib": round(before, 2),
                       "rss_peak_mib": round(peak, 2), "rss_after_mib": round(after, 2),
                       "rss_anon_before_mib": round(anon_before, 2),
                       "rss_anon_after_mib": round(anon_after, 2),
                       "send_s": round(sent, 2),
                       "read_s": None if read_at is None else round(read_at - t0, 1),
                       "settled_s": round(settled, 1),
                       "speaker_alive": alive, "session_up": up}
                self.log(kind, f"full table: {res}")
                if kind.startswith("vipd") and not (alive and up):
                    raise AssertionError(f"vipd under a full table: alive {alive}, session up {up}")
                return res
            finally:
                feeder.close()

    # --- per speaker ------------------------------------------------------------------------

    def speaker(self, kind: str) -> None:
        """Fills self.results[kind] scenario by scenario (a failure keeps what was measured).
        Scenarios not selected keep the previous run's figures (a merged run)."""
        want = set(self.args.scenarios.split(","))
        res: dict = self.results.get(kind, {}) if self.merged else {}
        res.setdefault("failover", {})
        res.pop("partial_error", None)  # a merged run's own; the main run's "error" stays
        self.results[kind] = res
        t0 = time.monotonic()
        if want & set(MAIN_LAB):
            with lab.Lab(f"bench-{kind}") as L:
                f = benchlab.Fabric(L, kind, HOLD_S, None, self.args.build_dir)
                self.log(kind, f"lab up in {f.setup_s:.1f} s")
                for name in ("idle", "start", "withdraw", "drain"):
                    if name in want:
                        res[name] = getattr(self, name)(f)
                if "hold" in want:
                    res["failover"]["hold"] = self.failover(f, "hold")
                self.check_alive(f)
        if "bfd" in want and speakers.KINDS[kind].supports_bfd:
            for mode, timers in BFD_SETS.items():
                with lab.Lab(f"bench-{kind}-{mode}") as L:
                    f = benchlab.Fabric(L, kind, HOLD_S, timers, self.args.build_dir,
                                        responders=False)
                    res["failover"][mode] = self.failover(f, mode)
                    self.check_alive(f)
        if "table" in want:
            res["table"] = self.table(kind)
        if want & set(APISERVER) and speakers.KINDS[kind].supports_health:
            with lab.Lab(f"bench-{kind}-apiserver") as L:
                f = benchlab.Fabric(L, kind, HOLD_S, None, self.args.build_dir, apiservers=True)
                self.log(kind, f"apiserver lab up in {f.setup_s:.1f} s")
                if "apiserver-kill" in want:
                    res["apiserver_kill"] = self.apiserver_kill(f)
                if "apiserver-unready" in want:
                    res["apiserver_unready"] = self.apiserver_unready(f)
                self.check_alive(f)
        res["bench_s" if want == set(SCENARIOS) else "bench_partial_s"] = \
            round(time.monotonic() - t0, 1)

    def check_alive(self, f: benchlab.Fabric) -> None:
        dead = [s.name for s in f.speakers if not s.alive()]
        if dead:
            raise AssertionError(f"speaker processes exited during the benchmark: {dead}")

    def run(self) -> int:
        kinds = self.args.speakers.split(",")
        for kind in kinds:
            if kind not in speakers.KINDS:
                raise SystemExit(f"unknown speaker {kind!r}; known: {', '.join(speakers.KINDS)}")
        for sc in self.args.scenarios.split(","):
            if sc not in SCENARIOS:
                raise SystemExit(f"unknown scenario {sc!r}; known: {', '.join(SCENARIOS)}")
        self.merged = set(self.args.scenarios.split(",")) != set(SCENARIOS)
        self.base: Optional[dict] = None
        prev = os.path.join(self.args.out, "results.json")
        if self.merged and os.path.exists(prev):
            with open(prev) as fh:
                self.base = json.load(fh)
            self.results = copy.deepcopy(self.base.get("speakers", {}))
        self.started = utc_now()
        # Before the first write: results.json is tracked, so once written `git describe
        # --dirty` would call every tree that produced it dirty.
        self.versions = versions(self.args.build_dir)
        lab.require([b for k in kinds for b in speakers.BINARIES[k]] + lab.Bird.binaries
                    + ["gnuplot"])
        for binary in ("vipd", "vipctl"):
            if any(k.startswith("vipd") for k in kinds) and not os.access(lab.vipd_binary(binary, self.args.build_dir), os.X_OK):
                raise SystemExit(f"{binary} is not built in {self.args.build_dir}")
        t0 = time.monotonic()
        if set(self.args.scenarios.split(",")) & set(APISERVER):
            lab.require(["curl", "openssl"])
        for kind in kinds:
            try:
                self.speaker(kind)
            except Exception as e:  # noqa: BLE001 - every speaker runs; the run fails at the end
                traceback.print_exc()
                self.failures.append(f"{kind}: {type(e).__name__}: {e}")
                self.results.setdefault(kind, {})["partial_error" if self.merged else "error"] = \
                    f"{type(e).__name__}: {e}"
            self.write(time.monotonic() - t0)  # a partial file survives an interrupted run
        doc = self.write(time.monotonic() - t0)
        import report
        update_docs = self.args.update_docs and not self.args.quick and not self.failures
        if self.args.update_docs and not update_docs:
            print("docs/benchmarks.md left alone: a quick or failed run does not replace its "
                  "table", flush=True)
        report.render(doc, self.args.out, update_docs=update_docs)
        if lab.SANITIZER_REPORTS:
            self.failures.append(f"{len(lab.SANITIZER_REPORTS)} sanitizer report(s)")
            for r in lab.SANITIZER_REPORTS:
                print(f"----- sanitizer report -----\n{r}", flush=True)
        for msg in self.failures:
            print(f"FAIL: {msg}", flush=True)
        print(f"{'FAIL' if self.failures else 'PASS'} ({time.monotonic() - t0:.0f} s); results "
              f"in {os.path.join(self.args.out, 'results.json')}", flush=True)
        return 1 if self.failures else 0

    def settings(self) -> dict:
        return {"quick": self.args.quick, "reps": self.args.reps,
                "failover_reps": self.args.failover_reps,
                "drain_reps": self.args.drain_reps, "idle_s": self.args.idle,
                "table_prefixes": self.args.table, "hold_s": HOLD_S,
                "drain_rate_per_s": DRAIN_RATE, "build_dir": self.args.build_dir,
                "sanitized": os.environ.get("VIPD_SANITIZED") == "1",
                "scenarios": self.args.scenarios.split(","),
                "apiserver_gates": {
                    "vipd": "health.type apiserver, url and caFile; the rest vipd's defaults",
                    "exabgp": "exabgp healthcheck " + " ".join(
                        f"--{k} {v}" for k, v in speakers.HEALTHCHECK_SETTINGS.items())
                    + " --withdraw-on-down, curl check, IPv4 VIP only",
                    "bird": f"bird_check.sh: curl every {speakers.BIRD_CHECK_INTERVAL_S} s, "
                            "birdc disable on the first failure, enable on the first pass"}}

    def write(self, elapsed: float) -> dict:
        if self.merged and self.base is not None:
            # The previous document stays the main run; this one is recorded next to it.
            doc = copy.deepcopy(self.base)
            scen = self.args.scenarios.split(",")
            runs = [r for r in doc.get("partial_runs", []) if r.get("scenarios") != scen]
            runs.append({"date": self.started, "scenarios": scen,
                         "speakers": self.args.speakers.split(","), "machine": machine(),
                         "versions": self.versions,
                         "settings": self.settings(), "elapsed_s": round(elapsed, 1),
                         "failures": self.failures})
            doc["partial_runs"] = runs
            doc["speakers"] = self.results
        else:
            doc = {"machine": machine(), "versions": self.versions,
                   "settings": self.settings(),
                   "elapsed_s": round(elapsed, 1), "speakers": self.results,
                   "failures": self.failures}
        os.makedirs(self.args.out, exist_ok=True)
        with open(os.path.join(self.args.out, "results.json"), "w") as fh:
            json.dump(doc, fh, indent=1)
        return doc


def first_line(argv: list[str]) -> str:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        return (p.stdout or p.stderr).strip().splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "?"


def machine() -> dict:
    model = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kib = int(f.readline().split()[1])
    return {"cpu": model, "cores": os.cpu_count(), "memory_gib": round(mem_kib / 2**20, 1),
            "kernel": platform.release(), "os": first_line(["sh", "-c", ". /etc/os-release; echo $PRETTY_NAME"]),
            "date": time.strftime("%Y-%m-%d")}


def versions(build_dir: str) -> dict:
    git = first_line(["git", "-C", HERE, "describe", "--always", "--dirty"])
    return {"vipd": f"{first_line([os.path.join(build_dir, 'daemon', 'vipd'), '--version'])} ({git})",
            "bird": first_line(["bird", "--version"]),
            "frr": first_line([f"{lab.FRR_DIR}/bgpd", "--version"]),
            "gobgp": first_line(["gobgpd", "--version"]),
            "exabgp": first_line(["exabgp", "--version"])}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="one repetition of each scenario, 10 s idle window (CI's smoke run)")
    p.add_argument("--speakers", default=",".join(ALL_KINDS))
    p.add_argument("--scenarios", default=",".join(SCENARIOS),
                   help="comma-separated subset (default all): " + ",".join(SCENARIOS)
                   + "; a subset is merged into the previous results.json in --out")
    p.add_argument("--reps", type=int, default=5, help="start and withdraw repetitions")
    p.add_argument("--failover-reps", type=int, default=3)
    p.add_argument("--drain-reps", type=int, default=3)
    p.add_argument("--idle", type=float, default=None,
                   help="idle window, seconds (default 60, 10 with --quick)")
    p.add_argument("--table", type=int, default=1_000_000, help="full-table size, /24 prefixes")
    p.add_argument("--out", default=os.path.join(HERE, "results"))
    p.add_argument("--build-dir", default=os.environ.get("VIPD_BUILD_DIR",
                                                        os.path.join(HERE, "..", "build")))
    p.add_argument("--update-docs", action="store_true",
                   help="rewrite the benchmark table in docs/benchmarks.md from this run")
    args = p.parse_args()
    if args.quick:
        args.reps = args.failover_reps = args.drain_reps = 1
    if args.idle is None:
        args.idle = 10 if args.quick else 60
    args.build_dir = os.path.abspath(args.build_dir)
    args.out = os.path.abspath(args.out)
    lab.BUILD_DIR = args.build_dir
    try:
        return Bench(args).run()
    except lab.Skip as e:
        print(f"SKIP: {e}", flush=True)
        return lab.SKIP


if __name__ == "__main__":
    sys.exit(main())
