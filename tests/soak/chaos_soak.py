#!/usr/bin/env python3
"""Chaos soak: three vipd nodes (AS 65001-65003, health gate against a fake apiserver on each)
behind a BIRD fabric (AS 65000, 3-way ECMP kernel route for the VIPs, L4 multipath hash), an
HTTP responder on the VIP on every node and a client namespace sending RATE new connections a
second to the VIP, for --duration seconds. Faults are drawn at random from a seeded RNG (the seed
is always printed; --seed N replays the same sequence), one episode at a time, each on one node
(BIRD restart: the whole fabric), each logged with its time and its window (injection to
recovery + SETTLE_S):

  bird_restart    BIRD stopped (SIGTERM), restarted 0.5-3 s later
  link_flap       the node's eth0 or its fabric bridge port down for 0.3-2 s
  partition       nftables drops everything in and out of the node's eth0 for 3-12 s
                  (around vipd's 9 s hold time)
  apiserver_flap  the node's apiserver answers 502 or too slowly, or is stopped, for 2-6 s
  sigkill         vipd SIGKILLed and restarted
  sigterm         vipd SIGTERMed (drain) and restarted
  sighup          vipd re-reads its unchanged config
  withdraw        `vipctl withdraw --wait`; 3-10 s later `vipctl announce`; 4 times in 7 a
                  SIGKILL, SIGTERM, SIGHUP or control-socket flood hits the node in between
  vip_del         VIP4, VIP6 or both deleted from lo by hand
  statedir_ro     control.stateDir bind-mounted read-only in vipd's mount namespace for 3-8 s,
                  with a `vipctl withdraw` or a SIGHUP meanwhile
  control_flood   300 idle unix-socket clients on the control socket for 3-8 s
  http_flood      300 idle TCP connections to the metrics listener for 3-8 s
  fd_limit        vipd's soft RLIMIT_NOFILE set to its open fds + 4 (prlimit), a flood of both
                  listeners for 3-6 s, then the limit restored
  freeze          vipd SIGSTOPped for 11-15 s, longer than the 9 s hold time (half the time the
                  node that relays the others' return-path answers), then SIGCONT
  forged_icmp     a host that is no peer sends 1000 forged echo replies a second in vipd's
                  layout (its own source, and spoofed from the peer, to the nodes and the VIP,
                  naming the nodes and addresses of every kind) for 3-8 s
  relay_flood     the same host sends 1000 datagrams a second to every node's relay port
                  (forged relays, witness queries and answers, garbage) for 3-8 s
  withdraw_last   two nodes withdrawn (`vipctl withdraw --wait`), then the third without
                  --force: refused by the guard (exit 4) and still announcing; then all announced

Invariants (soak_monitor.py, sampled every 200 ms): 1 no fabric path via a node whose VIP is
not bound (beyond a 1 s grace); 2 no path from a node after its operator's withdraw was
acknowledged, until `vipctl announce`; 3 no process exits but the injected ones; 4 after a
20 s quiet tail, no growth of fds, threads or RSS of each running vipd against its own
baseline; 5 no client failure outside every fault window; V (issue 28) the VIP has a route in
the fabric, and client requests through it succeed, at every sample while at least one node is
healthy (its apiserver up, not withdrawn by an operator, vipd running and not frozen, no fault
on it or on the fabric); G the guard refuses to withdraw the last announcer without --force; R
every node announcing again (or withdrawn, as its operator asked) within RECOVER_BOUND_S of each
fault; S during the floods vipctl status and GET /healthz answer and vipd does not spin on
EMFILE. The fabric sends every path back (BIRD `add paths tx`), so each vipd has the fabric's
view. Prints a table (fault
kinds injected/survived, violations per invariant, client requests) and exits 1 on any
violation.

Run: sudo python3 tests/soak/chaos_soak.py --duration 600 [--seed N] [--report PATH]
(VIPD_BUILD_DIR=<build dir> picks the vipd build; CI passes --duration 180.) --kinds a,b
draws only those fault kinds; --selftest injects a violation of invariants 1, 2, 3, 5 and V
each instead of faults and passes only if the monitor reports all five (proof the checks can
fail).
A fault counts as recovered once the good state (every node in the fabric's route, or out of
it while its operator has it withdrawn) has held STABLE_S (3 s; 10 s after link faults).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import time
import traceback
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
sys.path.insert(0, os.path.join(REPO, "bench"))
import lab  # noqa: E402
import benchlab  # noqa: E402  (add_client: the client namespace and the VIP responders)
import soak_monitor as mon  # noqa: E402

TOOLS = os.path.join(HERE, "soak_tools.py")
KINDS = ["bird_restart", "link_flap", "partition", "apiserver_flap", "sigkill", "sigterm",
         "sighup", "withdraw", "vip_del", "statedir_ro", "control_flood", "http_flood", "fd_limit",
         "freeze", "forged_icmp", "relay_flood", "withdraw_last"]
# Faults on the whole fabric, or on every node at once: drawn with no node.
FLEET_KINDS = {"bird_restart", "forged_icmp", "relay_flood", "withdraw_last"}
HOSTILE_V4 = "192.0.2.99"
HOSTILE_ICMP = os.path.join(REPO, "tests", "e2e", "hostile_icmp.py")
QUIET_S = 20.0  # no faults at the end; invariant 4 is measured after it
RECOVER_BOUND_S = 30.0  # hold time 9 s + BIRD's error wait 1-2 s + connect retry + health rise
# Recovered means the good state held this long: a killed session reaches BIRD a moment after
# the kill, and after a cut link the hold timer can still expire once the link is back (TCP's
# retransmission backoff delays the first keepalive), so those wait out the 9 s hold time.
STABLE_S = {"partition": 10.0, "link_flap": 10.0}
STABLE_DEFAULT_S = 3.0
SETTLE_S = 2.0  # a fault window ends this long after the recovery was seen
PRE_S = 0.3  # and starts this long before the injection (clock reads, process start-up)
CLIENT_RATE = 10
CLIENT_TIMEOUT_S = 2.0
FLOOD_COUNT = 300
# Probe timeout well above a loaded machine's TLS handshake: a spurious gate closing would be
# an unexplained client failure.
HEALTH = {"interval": "1s", "timeout": "800ms", "rise": 2, "fall": 3}
CLIENT_NET = "198.51.100.0/24"


class Soak:
    def __init__(self, L: lab.Lab, args: argparse.Namespace):
        self.L, self.args = L, args
        self.rng = random.Random(args.seed)
        self.t0 = time.monotonic()
        self.violations = mon.Violations(self.clock)
        self.procs: dict[str, lab.Proc] = {}  # what must stay alive, by role
        self.expected: set[int] = set()  # pids a fault ended
        self.dead: set[str] = set()  # roles that died uninvited (the monitor's finding)
        self.withdrawn: dict[int, float] = {}  # node -> monotonic time of the acknowledged withdraw
        self.active: dict[int, bool] = {}  # node -> a fault is on it
        self.fabric_fault = False  # a fault on the whole fabric (BIRD restart) is on
        self.frozen: set[int] = set()  # nodes whose vipd is SIGSTOPped
        self.windows: list[tuple[float, float, str]] = []  # wall-clock fault windows
        self.timeline: list[str] = []
        self.stats = {k: [0, 0] for k in KINDS}
        self.harness_errors: list[str] = []
        self.unresponsive: list[str] = []  # this fault's failed probes (invariant S)
        self.runs = 0
        self._setup()

    def clock(self) -> float:
        return time.monotonic() - self.t0

    def log(self, msg: str) -> None:
        now = time.time()
        line = (f"{time.strftime('%H:%M:%S', time.localtime(now))}.{int(now * 1000) % 1000:03d} "
                f"+{self.clock():6.1f}s {msg}")
        self.timeline.append(line)
        print(line, flush=True)

    # --- set-up -------------------------------------------------------------------------------

    def _setup(self) -> None:
        L = self.L
        self.ca = lab.make_ca(L, "cluster-ca")
        self.cert = lab.make_server_cert(L, self.ca, "apiserver-cert")
        self.apis: dict[int, lab.FakeApiserver] = {}
        self.configs: dict[int, dict] = {}

        def edit(c: dict, node: lab.Node) -> None:
            api = lab.FakeApiserver(L, node.ns, self.cert, name=f"apiserver-n{node.index}")
            self.apis[node.index] = api
            c["health"] = {"type": "apiserver", "url": api.url(), "caFile": self.ca[0], **HEALTH}
            self.configs[node.index] = c

        e = lab.build_ecmp(L, ["vipd"] * 3, vipd_edit=edit, add_paths=True)
        self.topo, self.fabric, self.nodes = e.topo, e.topo.fabric, e.topo.nodes
        self.bird, self.vipds = e.bird, e.speakers
        self.fabric.sysctl("net.ipv4.fib_multipath_hash_policy", "1")
        for n in self.nodes:  # a link flap must not take the node's IPv6 next hop with it
            n.ns.sysctl("net.ipv6.conf.all.keep_addr_on_down", "1")
            n.ns.sysctl("net.ipv6.conf.eth0.keep_addr_on_down", "1")
        self.client = benchlab.add_client(L, self.topo)
        # A host on the node network that is no peer (forged_icmp, relay_flood).
        self.evil = L.namespace("evil")
        self.evil.add_veth("eth0", self.fabric, "evil", peer_bridge="br0")
        self.evil.add_address("eth0", f"{HOSTILE_V4}/24")
        self.macs = {n.index: json.loads(n.ns.ip("-j", "link", "show", "eth0").stdout)[0]
                     ["address"] for n in self.nodes}
        self.procs["bird"] = self.bird.proc
        for n, v in zip(self.nodes, self.vipds):
            self.procs[f"vipd-n{n.index}"] = v.proc
            self.procs[f"apiserver-n{n.index}"] = self.apis[n.index].proc
            http = next(p for p in L.procs if p.name == f"http-n{n.index}")
            lab.wait_until(lambda p=http: "listening" in p.log_text(), 10, 0.05,
                           f"the responder on node {n.index}")
            self.procs[f"http-n{n.index}"] = http
        self.client_log = L.path("client.log")
        self.procs["load"] = L.start(self.client, "load", [
            sys.executable, TOOLS, "load", benchlab.VIP4_ADDR, str(benchlab.HTTP_PORT),
            str(self.args.rate), str(CLIENT_TIMEOUT_S), self.client_log])
        lab.wait_until(lambda: self._answers() >= 2, 15, 0.2, "the client's first answers")

    def _answers(self) -> int:
        try:
            with open(self.client_log) as f:
                return sum(" ok " in line for line in f)
        except OSError:
            return 0

    # --- helpers ------------------------------------------------------------------------------

    def expect(self, proc: lab.Proc) -> None:
        self.expected.add(proc.pid)

    def vipd(self, node: lab.Node) -> lab.Vipd:
        return self.vipds[node.index - 1]

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds))

    def start_bird(self) -> None:
        b = self.bird
        self.runs += 1
        b.proc = self.L.start(self.fabric, f"bird-run{self.runs}",
                              ["bird", "-f", "-c", b.conf, "-s", b.sock])
        b.procs = [b.proc]
        self.procs["bird"] = b.proc
        lab.wait_until(lambda: lab.run(["birdc", "-s", b.sock, "show", "status"], check=False,
                                       timeout=5).returncode == 0, 15, 0.1, "BIRD answering")

    def start_api(self, node: lab.Node) -> None:
        self.runs += 1
        api = lab.FakeApiserver(self.L, node.ns, self.cert,
                                name=f"apiserver-n{node.index}-run{self.runs}")
        self.apis[node.index] = api
        self.procs[f"apiserver-n{node.index}"] = api.proc

    def restart_vipd(self, node: lab.Node, sig: int) -> str:
        v = self.vipd(node)
        old = v.proc
        self.expect(old)
        t = time.monotonic()
        v.restart(sig, timeout=15)
        self.procs[f"vipd-n{node.index}"] = v.proc
        return (f"pid {old.pid} exited {old.popen.returncode} after {time.monotonic() - t:.2f} s;"
                f" new pid {v.proc.pid}")

    def revive(self) -> None:
        """Restarts what died uninvited (already counted under invariant 3), so the soak goes on."""
        for role in sorted(self.dead):
            self.dead.discard(role)
            self.log(f"reviving {role} (died uninvited)")
            if role == "bird":
                self.start_bird()
            elif role.startswith("vipd-n"):
                self.restart_vipd(self.nodes[int(role[6:]) - 1], signal.SIGKILL)
            elif role.startswith("apiserver-n"):
                self.start_api(self.nodes[int(role[11:]) - 1])
            else:
                self.runs += 1
                old = self.procs[role]
                self.procs[role] = self.L.start(None, f"{role}-run{self.runs}", old.argv)

    def status_withdrawn(self, v: lab.Vipd) -> bool:
        try:
            return v.status()["withdrawn"]["active"] is True
        except Exception:  # noqa: BLE001 - not answering: not known to be withdrawn
            return False

    def healthy_nodes(self) -> list[int]:
        """The nodes that can serve the VIP now (invariant V): vipd running and not frozen, its
        apiserver up, not withdrawn by an operator, no fault on it or on the fabric."""
        if self.fabric_fault:
            return []
        return [n.index for n in self.nodes
                if not self.active.get(n.index) and n.index not in self.withdrawn
                and n.index not in self.frozen and self.vipd(n).proc.alive()]

    def withdraw(self, node: lab.Node, reason: str, *extra: str) -> str:
        v = self.vipd(node)
        r = v.vipctl_run("withdraw", "--wait", "--timeout", "15s", "--reason", reason, *extra,
                         timeout=30)
        acked = time.monotonic()
        if r.returncode == 0 or self.status_withdrawn(v):
            self.withdrawn[node.index] = acked
        self.last_withdraw_rc = r.returncode
        return (f"vipctl withdraw exit {r.returncode} "
                f"({(r.stdout + r.stderr).strip()[:160]!r}); withdrawn: "
                f"{node.index in self.withdrawn}")

    def announce(self, node: lab.Node) -> str:
        self.withdrawn.pop(node.index, None)  # before the command: its effect is no violation
        deadline = time.monotonic() + 15  # a vipd restarted just now may not answer yet
        while True:
            r = self.vipd(node).vipctl_run("announce", timeout=30)
            if r.returncode == 0 or time.monotonic() > deadline:
                return f"vipctl announce exit {r.returncode}"
            time.sleep(0.5)

    def flood(self, node: lab.Node, hold: float, count: int = FLOOD_COUNT, tcp: bool = False,
              unix: bool = False) -> lab.Proc:
        v = self.vipd(node)
        self.runs += 1
        argv = [sys.executable, TOOLS, "flood", "--count", str(count), "--hold", f"{hold:.1f}"]
        argv += ["--tcp", v.metrics_listen] if tcp else []
        argv += ["--unix", v.socket] if unix else []
        return self.L.start(node.ns, f"flood-{self.runs}", argv)

    def flood_result(self, p: lab.Proc, hold: float) -> str:
        try:
            p.popen.wait(hold + 20)
        except Exception:  # noqa: BLE001
            p.stop(2)
        lines = p.log_text().strip().splitlines()
        return f"flood: {lines[-1] if lines else 'no result'}"

    def repair_node(self, node: lab.Node) -> None:
        """What an interface going down takes away that the lab added by hand: the route back
        to the client (first: without it the node's answers go nowhere) and the IPv6 address
        (kept by keep_addr_on_down; re-added in case)."""
        lab.wait_until(lambda: node.ns.ip("route", "replace", CLIENT_NET, "via", lab.FABRIC_V4,
                                          check=False).returncode == 0, 5, 0.1,
                       f"the client route on node {node.index}")
        node.ns.ip("-6", "addr", "replace", f"{node.v6}/64", "dev", "eth0", "nodad", check=False)

    # --- faults: each returns what it did, for the log ----------------------------------------

    def f_bird_restart(self, _node) -> str:
        self.expect(self.bird.proc)
        self.bird.proc.stop(10)
        down = self.rng.uniform(0.5, 3)
        self.sleep(down)
        self.start_bird()
        return f"BIRD down for {down:.1f} s, new pid {self.bird.proc.pid}"

    def f_link_flap(self, node: lab.Node) -> str:
        side = self.rng.choice(["node", "fabric"])
        down = self.rng.uniform(0.3, 2.0)
        ns, ifname = (node.ns, "eth0") if side == "node" else (self.fabric, f"n{node.index}")
        ns.ip("link", "set", ifname, "down")
        try:
            self.sleep(down)
        finally:
            ns.ip("link", "set", ifname, "up")
            self.repair_node(node)
        return f"{ifname} in {side} namespace down for {down:.1f} s"

    def f_partition(self, node: lab.Node) -> str:
        hold = self.rng.uniform(3, 12)
        rules = self.L.path(f"partition-n{node.index}.nft")
        with open(rules, "w") as f:
            f.write('table inet soak {\n'
                    '  chain in { type filter hook input priority 0; iifname "eth0" drop; }\n'
                    '  chain out { type filter hook output priority 0; oifname "eth0" drop; }\n'
                    '}\n')
        lab.run(node.ns.argv(["nft", "-f", rules]))
        try:
            self.sleep(hold)
        finally:
            lab.run(node.ns.argv(["nft", "delete", "table", "inet", "soak"]))
        return f"eth0 dropping all traffic for {hold:.1f} s"

    def f_apiserver_flap(self, node: lab.Node) -> str:
        hold = self.rng.uniform(2, 6)
        api = self.apis[node.index]
        how = self.rng.choice(["proxy502", "slow", "stopped"])
        if how == "stopped":
            self.expect(api.proc)
            api.stop()
            self.sleep(hold)
            self.start_api(node)
        else:
            api.set_mode(how)
            self.sleep(hold)
            api.set_mode("ok")
        return f"apiserver {how} for {hold:.1f} s"

    def f_sigkill(self, node: lab.Node) -> str:
        return self.restart_vipd(node, signal.SIGKILL)

    def f_sigterm(self, node: lab.Node) -> str:
        return self.restart_vipd(node, signal.SIGTERM)

    def f_sighup(self, node: lab.Node) -> str:
        self.vipd(node).proc.signal(signal.SIGHUP)
        self.sleep(2)
        return "SIGHUP, config unchanged"

    def f_withdraw(self, node: lab.Node) -> str:
        out = [self.withdraw(node, "chaos soak")]
        hold = self.rng.uniform(3, 10)
        nested = self.rng.choice([None, None, None, "sigkill", "sigterm", "sighup",
                                  "control_flood"])
        self.sleep(hold / 2)
        if nested:
            self.log(f"  nested fault while withdrawn: {nested} node {node.index}")
            out.append(f"{nested}: {getattr(self, 'f_' + nested)(node)}")
        self.sleep(hold / 2)
        out.append(self.announce(node))
        return f"withdrawn for {hold:.1f} s; " + "; ".join(out)

    def f_vip_del(self, node: lab.Node) -> str:
        which = self.rng.choice([[lab.VIP4], [lab.VIP6], [lab.VIP4, lab.VIP6]])
        bound = mon.lo_vips(node.ns)
        done = []
        for vip in which:
            fam = "-6" if ":" in vip else "-4"
            if vip in bound and node.ns.ip(fam, "addr", "del", vip, "dev", "lo",
                                           check=False).returncode == 0:
                done.append(vip)
        self.sleep(3)  # vipd binds again after 1 s (vips[].rebind)
        return f"deleted {done or 'nothing (not bound)'} from lo"

    def f_statedir_ro(self, node: lab.Node) -> str:
        v = self.vipd(node)
        d = self.configs[node.index]["control"]["stateDir"]
        os.makedirs(d, exist_ok=True)
        enter = ["nsenter", "-t", str(v.proc.pid), "-m", "--"]
        lab.run(enter + ["mount", "--bind", d, d])
        lab.run(enter + ["mount", "-o", "remount,bind,ro", d])
        hold, out, withdrew = self.rng.uniform(3, 8), [], False
        try:
            self.sleep(hold / 2)
            if self.rng.random() < 0.5:
                out.append(self.withdraw(node, "chaos soak, read-only state dir"))
                withdrew = True
            else:
                v.proc.signal(signal.SIGHUP)
                out.append("SIGHUP")
            self.sleep(hold / 2)
        finally:
            if v.proc.alive():
                lab.run(enter + ["umount", d], check=False)
        if withdrew:
            out.append(self.announce(node))
        return f"{d} read-only for {hold:.1f} s; " + "; ".join(out)

    def f_control_flood(self, node: lab.Node) -> str:
        hold = self.rng.uniform(3, 8)
        p = self.flood(node, hold, unix=True)
        self.sleep(1.5)
        r = self.vipd(node).vipctl_run("status", timeout=10)
        if r.returncode != 0:
            self.unresponsive.append(f"vipctl status exit {r.returncode} during the flood")
        return f"{hold:.1f} s; vipctl status meanwhile: exit {r.returncode}; {self.flood_result(p, hold)}"

    def f_http_flood(self, node: lab.Node) -> str:
        hold = self.rng.uniform(3, 8)
        p = self.flood(node, hold, tcp=True)
        self.sleep(1.5)
        try:
            probe = f"/healthz {self.vipd(node).http('/healthz', timeout=3)[0]}"
        except Exception as e:  # noqa: BLE001
            probe = f"/healthz failed ({type(e).__name__})"
        if not probe.endswith(" 200"):
            self.unresponsive.append(f"{probe} during the flood")
        return f"{hold:.1f} s; {probe} meanwhile; {self.flood_result(p, hold)}"

    def f_fd_limit(self, node: lab.Node) -> str:
        pid = self.vipd(node).proc.pid
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        with open(f"/proc/{pid}/limits") as f:
            soft = next(line.split()[3] for line in f if line.startswith("Max open files"))
        lab.run(["prlimit", "--pid", str(pid), f"--nofile={fds + 4}:"])
        hold = self.rng.uniform(3, 6)
        cpu0, t0 = lab.cpu_seconds(pid), time.monotonic()
        try:
            p = self.flood(node, hold, count=100, tcp=True, unix=True)
            self.sleep(hold)
        finally:
            cpu = (lab.cpu_seconds(pid) - cpu0) / (time.monotonic() - t0)
            lab.run(["prlimit", "--pid", str(pid), f"--nofile={soft}:"], check=False)
        if cpu >= mon.SPIN_CPU:
            self.unresponsive.append(f"vipd used {cpu * 100:.0f}% CPU while out of fds")
        return (f"soft limit {fds + 4} ({fds} open) for {hold:.1f} s, then {soft} again; vipd "
                f"CPU meanwhile {cpu * 100:.0f}%; {self.flood_result(p, hold)}")

    def relaying_node(self) -> Optional[lab.Node]:
        """The node that relays the others' return-path answers (its relay count grows)."""
        def sent(v: lab.Vipd) -> int:
            try:
                return int(v.status()["returnPath"]["counters"]["relaysSent"])
            except Exception:  # noqa: BLE001
                return 0
        before = [sent(v) for v in self.vipds]
        self.sleep(2.5)
        grown = [sent(v) - b for v, b in zip(self.vipds, before)]
        best = max(range(len(grown)), key=lambda i: grown[i])
        return self.nodes[best] if grown[best] > 0 else None

    def f_freeze(self, node: lab.Node) -> str:
        # Half the time the node that relays the others' answers (it is then the one frozen,
        # and counted as the one with a fault; the drawn node is left alone).
        relayer = self.relaying_node() if self.rng.random() < 0.5 else None
        target = relayer or node
        self.active[target.index] = True
        hold = self.rng.uniform(11, 15)
        v = self.vipd(target)
        self.frozen.add(target.index)
        v.proc.signal(signal.SIGSTOP)
        try:
            self.sleep(hold)
        finally:
            v.proc.signal(signal.SIGCONT)
            self.frozen.discard(target.index)
        # Recovery is waited for with the drawn node marked; the frozen one stays marked until
        # the fabric has it back.
        if target is not node:
            self.wait_recovered("freeze")
            self.active[target.index] = False
        return (f"vipd of node {target.index}{' (the relaying node)' if relayer else ''} frozen "
                f"for {hold:.1f} s")

    def hostile(self, spec: list[dict], seconds: float) -> str:
        self.runs += 1
        path = self.L.path(f"hostile-{self.runs}.json")
        with open(path, "w") as f:
            json.dump(spec, f)
        p = lab.run(self.evil.argv([sys.executable, HOSTILE_ICMP, "flood", "--iface", "eth0",
                                    "--spec", path, "--rate", "3000", "--seconds",
                                    f"{seconds:.1f}"]), timeout=seconds + 30)
        return p.stdout.strip()

    def f_forged_icmp(self, _node) -> str:
        hold = self.rng.uniform(3, 8)
        vip4 = lab.VIP4.split("/")[0]
        spec = []
        for n in self.nodes:
            other = self.nodes[n.index % 3]
            spec += [{"type": "echo", "src": HOSTILE_V4, "dst": dst, "dst_mac": self.macs[n.index],
                      "relay": other.v4} for dst in (n.v4, vip4)]
            spec += [{"type": "echo", "src": lab.FABRIC_V4, "dst": vip4,
                      "dst_mac": self.macs[n.index], "relay": relay}
                     for relay in (other.v4, "224.0.0.1", "192.0.2.255", "198.51.100.7", vip4,
                                   "127.0.0.1")]
        return f"{hold:.1f} s: {self.hostile(spec, hold)}"

    def f_relay_flood(self, _node) -> str:
        hold = self.rng.uniform(3, 8)
        spec = [{"type": "udp", "src": src, "dst": n.v4, "dst_mac": self.macs[n.index],
                 "sport": sport, "payload": payload}
                for n in self.nodes
                for src, sport, payload in [(HOSTILE_V4, 9475, "relay"),
                                            (HOSTILE_V4, 9475, "witness_query"),
                                            ("198.51.100.7", 9475, "witness_query"),
                                            (HOSTILE_V4, 9475, "witness_answer"),
                                            (HOSTILE_V4, 9475, "garbage")]]
        return f"{hold:.1f} s: {self.hostile(spec, hold)}"

    def f_withdraw_last(self, _node) -> str:
        order = list(self.nodes)
        self.rng.shuffle(order)
        out = []
        for node in order[:2]:
            self.active[node.index] = True
            out.append(f"node {node.index}: {self.withdraw(node, 'chaos soak: all but one')}")
        last = order[2]
        self.sleep(1)  # BIRD has sent the last node the others' withdrawals
        r = self.vipd(last).vipctl_run("withdraw", "--wait", "--reason", "chaos soak: the last",
                                       timeout=30)
        self.sleep(1)
        there = last.v4 in self.fabric.kernel_nexthops(lab.VIP4)
        out.append(f"node {last.index} (the last) without --force: exit {r.returncode} "
                   f"({(r.stdout + r.stderr).strip()[:200]!r}); still in the route: {there}")
        if r.returncode != 4 or not there:
            self.violations.add("G", f"withdrawing node {last.index}, the last announcer, "
                                f"without --force: exit {r.returncode}, in the route: {there}")
            if r.returncode in (0, 1):
                self.withdrawn[last.index] = time.monotonic()
                out.append(self.announce(last))
        for node in order[:2]:
            out.append(f"node {node.index}: {self.announce(node)}")
            self.active[node.index] = False
        return "; ".join(out)

    # --- episodes -----------------------------------------------------------------------------

    def not_recovered(self) -> list[str]:
        bad = [] if self.bird.proc.alive() else ["BIRD not running"]
        nh4 = self.fabric.kernel_nexthops(lab.VIP4)
        nh6 = self.fabric.kernel_nexthops(lab.VIP6)
        for node, v in zip(self.nodes, self.vipds):
            there = (node.v4 in nh4, node.v6 in nh6)
            if not v.proc.alive():
                bad.append(f"node {node.index}: vipd not running")
            elif node.index in self.withdrawn and any(there):
                bad.append(f"node {node.index}: withdrawn, yet in the fabric route")
            elif node.index not in self.withdrawn and not all(there):
                bad.append(f"node {node.index}: in the fabric route v4 {there[0]}, v6 {there[1]}")
        return bad

    def wait_recovered(self, kind: str) -> bool:
        deadline = time.monotonic() + RECOVER_BOUND_S
        stable = STABLE_S.get(kind, STABLE_DEFAULT_S)
        good_since = None
        while True:
            self.revive()
            bad = self.not_recovered()
            now = time.monotonic()
            good_since = None if bad else (good_since or now)
            if good_since is not None and now - good_since >= stable:
                return True
            if now > deadline:
                self.violations.add("R", f"{RECOVER_BOUND_S:.0f} s after the fault: "
                                    f"{'; '.join(bad) or f'not stable for {stable:.0f} s'}")
                return False
            time.sleep(0.2)

    def episode(self, kind: str, node) -> None:
        label = kind + (f" node {node.index}" if node else "")
        w0, m0 = time.time(), time.monotonic()
        if node:
            self.active[node.index] = True
        elif kind == "bird_restart":
            self.fabric_fault = True
        self.stats[kind][0] += 1
        self.log(f"FAULT {label}: start")
        try:
            detail = getattr(self, "f_" + kind)(node)
        except Exception as e:  # noqa: BLE001 - the soak goes on; the run fails
            detail = f"harness error {e!r}"
            self.harness_errors.append(f"{label}: {traceback.format_exc()}")
        self.log(f"FAULT {label}: {detail}")
        for what in self.unresponsive:
            self.violations.add("S", f"{label}: {what}")
        ok = self.wait_recovered(kind) and not self.unresponsive
        self.unresponsive = []
        self.stats[kind][1] += ok
        if node:
            self.active[node.index] = False
        self.fabric_fault = False
        self.windows.append((w0 - PRE_S, time.time() + SETTLE_S, label))
        self.log(f"FAULT {label}: {'recovered' if ok else 'NOT recovered'} "
                 f"{time.monotonic() - m0:.1f} s after the start")

    def run(self) -> int:
        a = self.args
        self.t0 = time.monotonic()  # the duration counts from here, not from the set-up
        self.log(f"chaos soak: seed {a.seed}, duration {a.duration} s, faults until "
                 f"{a.duration - QUIET_S:.0f} s, then a {QUIET_S:.0f} s quiet tail")
        self.monitor = mon.Monitor(self)
        faults_until = self.t0 + a.duration - QUIET_S
        deck: list[str] = []
        while time.monotonic() < faults_until:
            if not deck:  # every kind once per round, in a seeded order
                deck = list(a.kinds)
                self.rng.shuffle(deck)
            kind = deck.pop()
            self.episode(kind, None if kind in FLEET_KINDS else self.rng.choice(self.nodes))
            self.sleep(min(self.rng.uniform(1, 4), faults_until - time.monotonic()))
        self.sleep(max(QUIET_S, self.t0 + a.duration - time.monotonic()))
        self.log("quiet tail over")
        resources = self.monitor.final_resources()
        self.monitor.stop()
        load = self.procs.pop("load")
        load.signal(signal.SIGTERM)
        load.popen.wait(CLIENT_TIMEOUT_S + 10)
        client = mon.client_verdict(self.client_log, self.windows, self.violations)
        mon.served_verdict(self.client_log, self.monitor.healthy_timeline, self.violations)
        return self.report(resources, client)

    def selftest(self) -> int:
        """Proves the checks can fail: a ghost VIP (node 1's vipd frozen, its VIP deleted), a
        pretended operator withdraw of node 2, node 3's apiserver killed uninvited, the client
        failures the ghost causes outside any window, and every path gone from the fabric while
        all nodes are healthy (V). Returns the number of checks that did NOT notice (0: the
        monitor works)."""
        self.t0 = time.monotonic()
        self.monitor = mon.Monitor(self)
        n1, n2, n3 = self.nodes
        v1 = self.vipd(n1)
        v1.proc.signal(signal.SIGSTOP)
        try:
            n1.ns.ip("-4", "addr", "del", lab.VIP4, "dev", "lo")
            self.sleep(mon.GRACE_S + 2)
        finally:
            v1.proc.signal(signal.SIGCONT)
        self.withdrawn[n2.index] = time.monotonic()
        self.sleep(mon.WITHDRAW_GRACE_S + 1)
        self.withdrawn.pop(n2.index)
        self.apis[n3.index].proc.signal(signal.SIGKILL)
        self.sleep(1)
        self.wait_recovered("selftest")
        # V: the fabric drops every node's path while all three are healthy (BIRD's sessions
        # disabled by hand, no fault declared).
        for n in self.nodes:
            self.bird.birdc("disable", f"node{n.index}")
        self.sleep(mon.GRACE_S + 3)
        for n in self.nodes:
            self.bird.birdc("enable", f"node{n.index}")
        self.wait_recovered("selftest")
        self.monitor.stop()
        self.procs.pop("load").signal(signal.SIGTERM)
        self.sleep(CLIENT_TIMEOUT_S + 1)
        mon.client_verdict(self.client_log, self.windows, self.violations)
        mon.served_verdict(self.client_log, self.monitor.healthy_timeline, self.violations)
        missed = [k for k in "1235V" if self.violations.count[k] == 0]
        self.log(f"self-test: violations noticed {self.violations.count}; missed {missed}")
        return len(missed)

    def report(self, resources: list[str], client: dict) -> int:
        a, v = self.args, self.violations
        out = [f"chaos soak: seed {a.seed}, duration {a.duration} s (ran {self.clock():.0f} s), "
               f"{sum(s[0] for s in self.stats.values())} faults, monitor ticks "
               f"{self.monitor.ticks}", "",
               f"{'fault kind':<16}{'injected':>9}{'survived':>9}"]
        out += [f"{k:<16}{s[0]:>9}{s[1]:>9}" for k, s in self.stats.items()]
        out += ["", f"{'invariant':<58}{'violations':>10}"]
        out += [f"{k} {d:<56}{v.count[k]:>10}" for k, d in mon.INVARIANTS.items()]
        out += ["", f"client requests: sent {client['sent']}, failed {client['failed']} "
                f"(inside fault windows {client['failed'] - client['unexplained']}, outside "
                f"{client['unexplained']}); answers by node {client['by_node']}", ""]
        out += resources
        if v.lines or self.harness_errors:
            more = [f"... and {len(v.lines) - 30} more"] if len(v.lines) > 30 else []
            out += ["", "violations:"] + v.lines[:30] + more + [f"harness error: {h}" for h in
                                                               self.harness_errors]
        verdict = "PASS" if v.total() == 0 and not self.harness_errors else "FAIL"
        out += ["", f"{verdict}: {v.total()} violation(s), {len(self.harness_errors)} harness "
                f"error(s); replay with --seed {a.seed}"]
        text = "\n".join(out)
        print("\n" + text, flush=True)
        if a.report:
            with open(a.report, "w") as f:
                f.write(text + "\n\nfault timeline:\n" + "\n".join(self.timeline) + "\n")
        return v.total() + len(self.harness_errors)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--duration", type=float, default=600)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--report", default=None)
    p.add_argument("--rate", type=float, default=CLIENT_RATE, help="client requests a second")
    p.add_argument("--selftest", action="store_true",
                   help="inject violations instead of faults; passes when all are noticed")
    p.add_argument("--kinds", default=",".join(KINDS), help="the fault kinds to draw from")
    args = p.parse_args()
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1 << 31)
    args.kinds = args.kinds.split(",")
    if set(args.kinds) - set(KINDS):
        p.error(f"unknown fault kinds {sorted(set(args.kinds) - set(KINDS))}; known: {KINDS}")
    if args.duration < QUIET_S + 10:
        p.error(f"--duration must be at least {QUIET_S + 10:.0f} s")
    return args


def main() -> None:
    args = parse_args()
    # In the sanitizer build, UBSan must report and go on rather than abort vipd: its vptr check
    # misfires while the fd_limit fault leaves no free descriptor (lab.sanitizer_report drops
    # exactly those reports, and fails the soak on any other). AddressSanitizer still halts.
    ubsan = os.environ.get("UBSAN_OPTIONS")
    if ubsan:
        os.environ["UBSAN_OPTIONS"] = ubsan.replace("halt_on_error=1", "halt_on_error=0") \
            .replace("abort_on_error=1", "abort_on_error=0")
    print(f"chaos soak seed {args.seed} (replay: --seed {args.seed})", flush=True)

    def test() -> None:
        with lab.Lab("chaos-soak") as L:
            soak = Soak(L, args)
            failures = soak.selftest() if args.selftest else soak.run()
        lab.check(failures == 0, f"{failures} violation(s) or harness error(s); seed {args.seed}")

    lab.main(test, binaries=lab.Bird.binaries + ["openssl", "nft", "prlimit", "nsenter"],
             vipd=True)


if __name__ == "__main__":
    main()
