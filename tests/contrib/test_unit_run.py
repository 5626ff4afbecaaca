#!/usr/bin/env python3
"""contrib: contrib/vipd.service.in run the way systemd runs it (unit_runner.Service: each Exec
line in a lab node's network namespace, with the unit's capabilities, no_new_privs,
ProtectSystem=strict, StateDirectory/RuntimeDirectory, PrivateTmp, ProtectHome and LimitNOFILE),
against a BIRD fabric (AS 65000; the node is AS 65001). The config is the node's
/etc/vipd/vipd.yaml, with the default control socket (/run/vipd/vipd.sock), state directory
(/var/lib/vipd) and drain timings (2s + 10s + 1s).

Asserts:
1. a config vipd refuses: the start fails in ExecStartPre with the validator's message
   (/etc/vipd/vipd.yaml:LINE:COLUMN: key.path: ...), and ExecStart never runs;
2. start: the main process is vipd with exactly the unit's capability set in every set, uid 0,
   no_new_privs, a read-only / and the unit's open-file limit; both VIPs reach BIRD via the
   node; `vipctl status` on the node finds it through the default socket;
3. reload (ExecReload, as the unit's user and capabilities): vipd logs the re-read, and for
   RELOAD_WATCH_S the session and both routes stay up in BIRD (no flap);
4. stop (KillSignal, then TimeoutStopSec): BIRD sees GRACEFUL_SHUTDOWN, then the VIP leaves
   BIRD while vipd still runs, vipd exits 0 within TimeoutStopSec without being killed, and
   the VIP addresses are gone from the node;
5. what the runner cannot apply, the seccomp settings: ExecStart again in the same sandbox, under
   strace, through start, reload and stop: every system call vipd makes is in the unit's
   SystemCallFilter= (its groups expanded by `systemd-analyze syscall-filter`) and every socket
   it opens is of a family in RestrictAddressFamilies=.
BIRD and vipd run BFD (single hop) and vipd listens on port 179 as well as dialling, so those
sockets and the BFD thread are part of every step.
"""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from unit_runner import Service, Unit, lab, render

UP_S = 30
RELOAD_WATCH_S = 3
GS_S = 2  # drain.gracefulShutdownTime's default
TIMERS = lab.BfdTimers(300, 300, 3)


def config(node: lab.Node, L: lab.Lab) -> dict:
    c = lab.vipd_config(L, node, node.asn, lab.FABRIC_V4, lab.FABRIC_ASN, "unit")
    # The defaults the unit is built around: /run/vipd/vipd.sock, /var/lib/vipd, 2s+10s+1s.
    del c["control"], c["drain"]
    c["peers"][0]["bfd"] = TIMERS.vipd()
    c["listen"] = {"enabled": True, "port": 179}
    return c


def syscall_set(spec: list[str]) -> set[str]:
    """SystemCallFilter= (an allow list of names and @groups) as system call names."""
    out = subprocess.run(["systemd-analyze", "syscall-filter"], capture_output=True, text=True,
                         check=True, timeout=30).stdout
    groups, current = {}, None
    for line in out.splitlines():
        if line.startswith("@"):
            current = groups.setdefault(line.split()[0], [])
        elif current is not None and line.strip() and not line.strip().startswith("#"):
            current.append(line.strip())

    def expand(name: str) -> set[str]:
        if not name.startswith("@"):
            return {name}
        lab.check(name in groups, f"unknown system call group {name}")
        return set().union(*(expand(x) for x in groups[name]))
    return set().union(*(expand(x) for x in spec))


def write_config(svc: Service, text: str) -> None:
    with open(svc.path("/etc/vipd/vipd.yaml"), "w") as f:
        f.write(text)


class Watch:
    """Polls BIRD every 20 ms in a thread: (monotonic time, BIRD's VIP4 route or None, session
    state)."""

    def __init__(self, bird: lab.Bird, addr: str):
        self.bird, self.addr, self.samples, self.stop_ = bird, addr, [], threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop_.is_set():
            try:
                self.samples.append((time.monotonic(), self.bird.route(lab.VIP4),
                                     self.bird.neighbor_state(self.addr)))
            except Exception:  # noqa: BLE001 - birdc busy: no sample
                pass
            time.sleep(0.02)

    def done(self) -> list:
        self.stop_.set()
        self.thread.join(10)
        return self.samples


def installed_bindir() -> str:
    """vipd and vipctl copied to a directory under /run, as `meson install` puts them in a bindir:
    the build directory may be under /tmp or a home directory, which PrivateTmp= and
    ProtectHome= hide from the service (the clone's location must not matter)."""
    bindir = tempfile.mkdtemp(prefix="vipd-unit-bin-", dir="/run")
    os.chmod(bindir, 0o755)
    for name in ("vipd", "vipctl"):
        shutil.copy2(os.path.join(lab.BUILD_DIR, "daemon", name), os.path.join(bindir, name))
    return bindir


def test() -> None:
    bindir = installed_bindir()
    try:
        run_unit(bindir)
    finally:
        shutil.rmtree(bindir, ignore_errors=True)


def run_unit(bindir: str) -> None:
    unit = Unit(render(bindir))
    caps = unit.capabilities()
    with lab.Lab("unit-run") as L:
        topo = L.fabric_with_nodes(1)
        node = topo.nodes[0]
        bird = lab.Bird(L, topo.fabric, topo.fabric_v4, lab.FABRIC_ASN,
                        [lab.Neighbor(node.v4, node.asn, passive=True, name="node1")],
                        interfaces=[topo.fabric_if], bfd=TIMERS)
        svc = Service(L, node, unit)

        # 1. A config vipd refuses fails the start in ExecStartPre, with the validator's words.
        bad = lab.to_yaml(dict(config(node, L), localAsn="sixty-five")) + "\n"
        write_config(svc, bad)
        results = svc.start()
        pre = results[-1]
        print(f"bad config: ExecStartPre exit {pre.returncode}:\n{pre.output.rstrip()}", flush=True)
        lab.check(pre.returncode == 1, f"ExecStartPre should exit 1, not {pre.returncode}")
        lab.check(any(line.startswith("/etc/vipd/vipd.yaml:") and "localAsn" in line
                      for line in pre.output.splitlines()),
                  f"the validator names the file, line, column and key: {pre.output}")
        lab.check(svc.proc is None, "ExecStart must not run after a failed ExecStartPre")

        # 2. Start.
        write_config(svc, lab.to_yaml(config(node, L)) + "\n")
        t0 = time.monotonic()
        results = svc.start()
        lab.check(all(r.returncode == 0 for r in results) and svc.proc is not None,
                  f"start: {[(r.argv, r.returncode, r.output) for r in results]}")
        pid = svc.main_pid
        st = lab.wait_until(lambda: (lambda s: s if s["Name"] == "vipd" else None)(
            lab.proc_status(pid)), 5, 0.02, f"main pid {pid} to be vipd")
        want = f"{lab.capability_mask(caps):016x}"
        sets = {k: st[k] for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")}
        lab.log(f"main pid {pid}: Uid {st['Uid']}, NoNewPrivs {st['NoNewPrivs']}, {sets}")
        lab.check(st["Uid"].split()[:2] == ["0", "0"], f"vipd runs as uid 0: {st['Uid']}")
        lab.check(st["NoNewPrivs"] == "1", "NoNewPrivileges=yes")
        lab.check(all(v == want for v in sets.values()),
                  f"every capability set is {want} ({sorted(caps)}): {sets}")
        with open(f"/proc/{pid}/limits") as f:
            nofile = [line.split()[3:5] for line in f if line.startswith("Max open files")][0]
        limit = unit.value("Service", "LimitNOFILE")
        lab.check(nofile == [limit, limit], f"LimitNOFILE={limit}: {nofile}")
        with open(f"/proc/{pid}/mountinfo") as f:
            mounts = {m[4]: m[5].split(",") for m in (line.split() for line in f)}
        lab.check("ro" in mounts["/"] and "rw" in mounts["/var/lib/vipd"]
                  and "rw" in mounts["/run/vipd"] and "ro" in mounts["/etc/vipd"],
                  f"ProtectSystem=strict with the state and runtime directories writable: "
                  f"/ {mounts['/']}, /var/lib/vipd {mounts.get('/var/lib/vipd')}, "
                  f"/run/vipd {mounts.get('/run/vipd')}, /etc/vipd {mounts.get('/etc/vipd')}")
        lab.wait_established(bird, [node.v4], UP_S)
        for prefix, hop in ((lab.VIP4, node.v4), (lab.VIP6, node.v6)):
            r = lab.wait_until(lambda p=prefix: bird.route(p), UP_S, 0.1, f"{prefix} in BIRD")
            lab.check(hop in r["nexthops"], f"{prefix} via {hop} in BIRD: {r['nexthops']}")
        lab.log(f"started: both VIPs in BIRD {time.monotonic() - t0:.2f}s after the start")
        vipctl = os.path.join(bindir, "vipctl")
        status = svc.run([vipctl, "status"], sandbox=False)
        print(status.output.rstrip(), flush=True)
        lab.check(status.returncode == 0, "vipctl status (default socket) answers")
        lab.check(os.path.exists(svc.path("/run/vipd/vipd.sock")),
                  "the control socket is /run/vipd/vipd.sock")

        # 3. Reload: SIGHUP through ExecReload, as the service; nothing flaps.
        since = bird.protocol_all(node.v4)
        watch = Watch(bird, node.v4)
        svc.reload()
        lab.wait_until(lambda: svc.proc.log_text().count("received SIGHUP") == 1, 5, 0.05,
                       "vipd to log the SIGHUP")
        time.sleep(RELOAD_WATCH_S)
        samples = watch.done()
        lab.check(len(samples) > RELOAD_WATCH_S * 10, f"too few BIRD samples: {len(samples)}")
        bad_samples = [s for s in samples if not s[1] or s[2] != "Established"]
        lab.check(not bad_samples, f"the route or the session flapped on reload: {bad_samples[:5]}")
        lab.check(svc.proc.alive() and svc.main_pid == pid, "vipd still runs, same PID")
        lab.check(bird.protocol_all(node.v4).split("\n")[0] == since.split("\n")[0],
                  "BIRD's session did not restart")
        for line in [ln for ln in svc.proc.log_text().splitlines() if "SIGHUP" in ln
                     or "re-read" in ln][:3]:
            print(f"  vipd log: {line}")
        lab.log(f"reload: {len(samples)} BIRD samples over {RELOAD_WATCH_S}s, all Established "
                f"with {lab.VIP4}")

        # 4. Stop: the drain, then exit, within TimeoutStopSec.
        watch = Watch(bird, node.v4)
        t0 = time.monotonic()  # the unit has no ExecStop: the signal goes at once
        rc, took, killed = svc.stop()
        exited = t0 + took
        samples = watch.done()
        gone = [t for t, has, _ in samples if not has]
        lab.log(f"stop: exit {rc} after {took:.2f}s (TimeoutStopSec {unit.timeout_stop():g}s), "
                f"killed {killed}; {lab.VIP4} left BIRD "
                f"{(gone[0] - t0) if gone else float('nan'):.2f}s after the signal")
        lab.check(not killed and rc == 0, f"vipd exits 0 within TimeoutStopSec: rc {rc}, "
                  f"killed {killed}")
        lab.check(gone and gone[0] < exited, f"{lab.VIP4} leaves BIRD before vipd exits")
        lab.check(gone[0] - t0 >= GS_S - 0.1, f"withdrawn {gone[0] - t0:.2f}s after the "
                  f"signal: before the {GS_S}s of GRACEFUL_SHUTDOWN")
        gs = [t for t, r, _ in samples if r and lab.GRACEFUL_SHUTDOWN in r["communities"]]
        lab.check(gs and gs[0] < gone[0], "BIRD sees the VIP with GRACEFUL_SHUTDOWN before the "
                  "withdrawal")
        for prefix in (lab.VIP4, lab.VIP6):
            lab.check(not node.ns.address_entries("lo", prefix), f"{prefix} unbound after stop: "
                      f"{node.ns.addr_show('lo')}")
            lab.check(not bird.has_route(prefix), f"{prefix} not in BIRD after stop")
        for line in [ln for ln in svc.proc.log_text().splitlines()
                     if "drain" in ln.lower() or "NOTIFICATION" in ln][:8]:
            print(f"  vipd log: {line}")

        # 5. The seccomp settings, checked against what vipd does in the same steps.
        lab.check(unit.value("Service", "SystemCallArchitectures") == "native",
                  "SystemCallArchitectures=native")
        allowed = syscall_set(unit.words("Service", "SystemCallFilter"))
        families = set(unit.words("Service", "RestrictAddressFamilies"))
        (start,) = unit.exec_lines("ExecStart")
        trace = "/run/vipd/strace.out"  # the runtime directory: writable in the sandbox
        svc.runs += 1
        # LeakSanitizer cannot run under ptrace: with the sanitizer build (CI) it would end a
        # clean exit with "LeakSanitizer has encountered a fatal error". Leaks are checked in the
        # runs above; this one is about system calls.
        asan = os.environ.get("ASAN_OPTIONS", "")
        st = L.start(None, f"{svc.name}-strace",
                     svc.argv(["/usr/bin/strace", "-f", "-qq", "-o", trace] + start.argv),
                     env={"ASAN_OPTIONS": f"{asan}:detect_leaks=0" if asan else "detect_leaks=0"})
        lab.wait_until(lambda: bird.has_route(lab.VIP4) and bird.bfd_state(node.v4) == "Up",
                       UP_S, 0.1, "under strace: the VIP in BIRD and BFD Up")
        with open(f"/proc/{st.pid}/task/{st.pid}/children") as f:
            traced = int(f.read().split()[0])
        os.kill(traced, signal.SIGHUP)
        lab.wait_until(lambda: "received SIGHUP" in st.log_text(), 5, 0.05, "the SIGHUP")
        os.kill(traced, signal.SIGTERM)
        lab.check(st.popen.wait(unit.timeout_stop()) == 0, "under strace: vipd exits 0")
        with open(svc.path(trace)) as f:
            text = f.read()
        used = set(re.findall(r"^\d+\s+([a-z0-9_]+)\(", text, re.M))
        opened = set(re.findall(r"\bsocket\((AF_[A-Z0-9]+)", text))
        lab.log(f"under strace: {len(used)} system calls, socket families {sorted(opened)}")
        lab.check(len(used) > 20 and "bind" in used and "socket" in used,
                  f"strace saw too little: {sorted(used)}")
        lab.check(not used - allowed, f"system calls outside SystemCallFilter="
                  f"{unit.words('Service', 'SystemCallFilter')}: {sorted(used - allowed)}")
        lab.check(opened and opened <= families, f"socket families outside "
                  f"RestrictAddressFamilies={sorted(families)}: {sorted(opened - families)}")
        print(f"seccomp: the {len(used)} system calls vipd made are all in "
              f"{' '.join(unit.words('Service', 'SystemCallFilter'))}; sockets {sorted(opened)}")


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries + ["setpriv", "unshare", "prlimit", "strace",
                                               "systemd-analyze"], vipd=True)
