"""End-to-end test lab for vipd: network namespaces, daemons and real BGP peers.

Stdlib only. Every test builds its own namespaces (named vt<pid>-<name>, so runs can overlap),
starts daemons inside them with logs in a per-test temp dir, and tears everything down by PID on
any exit path (try/finally via the Lab context manager, atexit, and SIGTERM/SIGINT/SIGHUP).

Exit codes (meson): 0 pass, 1 fail, 77 skip. Skip only when not root or a peer binary is missing,
and never when CI=true (then a missing prerequisite is a failure).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import ipaddress
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional

E2E_DIR = os.path.dirname(os.path.abspath(__file__))
BUILD_DIR = os.environ.get("VIPD_BUILD_DIR", "/work/main/build")
FRR_DIR = "/usr/lib/frr"

VIP4 = "203.0.113.10/32"
VIP6 = "2001:db8:ffff::10/128"
COMMUNITIES = ["65000:100"]
LARGE_COMMUNITIES = ["65000:1:2"]
FABRIC_ASN = 65000
FABRIC_V4 = "192.0.2.1"
FABRIC_V6 = "2001:db8::1"

SKIP = 77
METRICS_LISTEN = "127.0.0.1:9472"  # vipd's default metrics.listen (in its netns)
UNBIND_DELAY = "200ms"  # vipd's drain.unbindDelay in the lab (default 1s)


class Skip(Exception):
    """Raised when a prerequisite is missing outside CI; main() turns it into exit 77."""


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def in_ci() -> bool:
    return os.environ.get("CI", "") == "true"


def require(binaries: Iterable[str] = (), vipd: bool = False, root: bool = True) -> None:
    """Checks root and peer binaries. Missing -> Skip outside CI, failure inside CI.

    A missing vipd build is never a skip: meson builds it before running tests. root=False is
    for tests that use no namespaces (they can then never skip).
    """
    problems = []
    if root and os.geteuid() != 0:
        problems.append("not running as root (network namespaces need CAP_SYS_ADMIN)")
    for b in binaries:
        if not (shutil.which(b) or os.access(b, os.X_OK)):
            problems.append(f"peer binary {b!r} not found")
    if problems:
        msg = "; ".join(problems)
        if in_ci():
            raise AssertionError(f"CI=true and a prerequisite is missing: {msg}")
        raise Skip(msg)
    if vipd:
        for path in (vipd_binary(), vipd_binary("vipctl")):
            if not os.access(path, os.X_OK):
                raise AssertionError(f"{path} not found (set VIPD_BUILD_DIR)")


def vipd_binary(name: str = "vipd", build_dir: str = BUILD_DIR) -> str:
    return os.path.join(build_dir, "daemon", name)


def run(cmd: list[str], check: bool = True, timeout: float = 15,
        input: Optional[str] = None, env: Optional[dict] = None) -> subprocess.CompletedProcess:
    """Runs a short command, bounded in time; raises with its output when check fails. env: the
    whole environment (None: this process's)."""
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, input=input, env=env)
    if check and p.returncode != 0:
        raise RuntimeError(f"command failed ({p.returncode}): {' '.join(cmd)}\n"
                           f"stdout: {p.stdout}\nstderr: {p.stderr}")
    return p


# linux/capability.h: capability number by the name Kubernetes uses.
CAPABILITIES = [
    "CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
    "SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW",
    "IPC_LOCK", "IPC_OWNER", "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT",
    "SYS_ADMIN", "SYS_BOOT", "SYS_NICE", "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD",
    "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG",
    "WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE",
]


def capability_mask(caps: Iterable[str]) -> int:
    """The bits /proc/PID/status shows (CapEff, ...) for these capabilities."""
    return sum(1 << CAPABILITIES.index(c) for c in caps)


def proc_status(pid: int) -> dict[str, str]:
    """/proc/PID/status as {field: value}."""
    with open(f"/proc/{pid}/status") as f:
        return {k: v.strip() for k, _, v in (line.partition(":") for line in f)}


def wait_never(predicate: Callable[[], Any], duration: float, interval: float = 0.2,
               what: Any = "condition") -> None:
    """Asserts predicate stays falsy for duration seconds (exceptions count as falsy)."""
    deadline = time.monotonic() + duration
    while time.monotonic() < deadline:
        try:
            val = predicate()
        except Exception:  # noqa: BLE001 - "not true"
            val = None
        if val:
            desc = what() if callable(what) else what
            raise AssertionError(f"{desc} happened (value {val!r}), but it never should")
        time.sleep(interval)


def timed_wait(predicate: Callable[[], Any], timeout: float, interval: float = 0.05,
               what: Any = "condition") -> float:
    """wait_until, returning the seconds it took."""
    t0 = time.monotonic()
    wait_until(predicate, timeout, interval, what)
    return time.monotonic() - t0


def bird_since_delta(a: str, b: str) -> float:
    """|a - b| in seconds for two BIRD "since" times (HH:MM:SS.mmm; a date: 0 if equal, else
    infinity). BIRD's "since" can move by a millisecond as a session's channels finish coming
    up, so a restart is a later time, not any change."""
    def secs(t: str) -> Optional[float]:
        try:
            h, m, rest = t.split(":")
            return int(h) * 3600 + int(m) * 60 + float(rest)
        except ValueError:
            return None
    x, y = secs(a), secs(b)
    if x is None or y is None:
        return 0.0 if a == b else float("inf")
    return abs(x - y)


def wait_until(predicate: Callable[[], Any], timeout: float, interval: float = 0.2,
               what: Any = "condition") -> Any:
    """Polls predicate until it returns a truthy value (returned) or timeout seconds pass.

    Exceptions from the predicate count as "not yet" (daemons may not be up); the last one is
    reported on timeout. what may be a callable, evaluated only on timeout (to show the state
    at that moment).
    """
    deadline = time.monotonic() + timeout
    last_exc: Optional[BaseException] = None
    last_val: Any = None
    while True:
        try:
            last_val = predicate()
            if last_val:
                return last_val
        except Exception as e:  # noqa: BLE001 - "not ready yet"
            last_exc = e
        if time.monotonic() >= deadline:
            detail = f"; last value {last_val!r}" if last_exc is None else f"; last error {last_exc!r}"
            desc = what() if callable(what) else what
            raise TimeoutError(f"timed out after {timeout}s waiting for {desc}{detail}")
        time.sleep(interval)


# --------------------------------------------------------------------------------------------
# Processes


_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    # Daemons die if the test is SIGKILLed (cleared by setuid daemons such as FRR's, which the
    # namespace sweep in Lab.cleanup catches instead).
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass
    os.setsid()


class Proc:
    """A daemon started by the lab; stdout+stderr go to log_path."""

    def __init__(self, name: str, argv: list[str], log_path: str, env: Optional[dict] = None):
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self._log = open(log_path, "ab")
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.popen = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, env=full_env,
                                      preexec_fn=_die_with_parent)
        self.pid = self.popen.pid
        self.started = time.monotonic()

    def alive(self) -> bool:
        return self.popen.poll() is None

    def signal(self, sig: int) -> None:
        if self.alive():
            os.kill(self.pid, sig)

    def stop(self, timeout: float = 5.0) -> Optional[int]:
        """SIGTERM, then SIGKILL after timeout seconds. Returns the exit code."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                log(f"{self.name} (pid {self.pid}) ignored SIGTERM for {timeout}s; SIGKILL")
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.popen.wait(5)
        with contextlib.suppress(Exception):
            self._log.close()
        return self.popen.returncode

    def log_text(self) -> str:
        try:
            with open(self.log_path, "r", errors="replace") as f:
                return f.read()
        except OSError as e:
            return f"<cannot read {self.log_path}: {e}>"

    def dump_log(self, tail: int = 80) -> None:
        lines = self.log_text().splitlines()
        print(f"----- log of {self.name} (pid {self.pid}, {self.log_path}), last {tail} lines -----")
        for line in lines[-tail:]:
            print(f"  {line}")
        print(f"----- end of {self.name} -----", flush=True)


# --------------------------------------------------------------------------------------------
# Namespaces


class Namespace:
    """A network namespace owned by a Lab. name is the full `ip netns` name."""

    def __init__(self, lab: "Lab", short: str):
        self.lab = lab
        self.short = short
        self.name = f"{lab.prefix}{short}"
        self.created = False

    def create(self) -> "Namespace":
        run(["ip", "netns", "add", self.name])
        self.created = True
        self.ip("link", "set", "lo", "up")
        # Forwarding lets a fabric actually route; harmless on nodes.
        self.sysctl("net.ipv4.ip_forward", "1")
        self.sysctl("net.ipv6.conf.all.forwarding", "1")
        self.sysctl("net.ipv6.conf.default.accept_dad", "0")
        return self

    def delete(self) -> None:
        if self.created:
            run(["ip", "netns", "del", self.name], check=False)
            self.created = False

    def pids(self) -> list[int]:
        p = run(["ip", "netns", "pids", self.name], check=False)
        return [int(x) for x in p.stdout.split()] if p.returncode == 0 else []

    def argv(self, cmd: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.name] + cmd

    def run(self, cmd: list[str], check: bool = True, timeout: float = 15) -> subprocess.CompletedProcess:
        return run(self.argv(cmd), check=check, timeout=timeout)

    def ip(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return run(["ip", "-n", self.name] + list(args), check=check)

    def sysctl(self, key: str, value: str) -> None:
        self.run(["sysctl", "-qw", f"{key}={value}"], check=False)

    def add_bridge(self, ifname: str) -> None:
        self.ip("link", "add", ifname, "type", "bridge", "forward_delay", "0", "stp_state", "0")
        self.ip("link", "set", ifname, "up")

    def add_veth(self, ifname: str, peer: "Namespace", peer_ifname: str,
                 peer_bridge: Optional[str] = None) -> None:
        """veth pair: ifname here, peer_ifname in peer (optionally enslaved to a bridge there)."""
        tmp = f"vt{os.getpid() % 100000}x{self.lab.counter()}"  # created in this ns, renamed
        self.ip("link", "add", ifname, "type", "veth", "peer", "name", tmp)
        self.ip("link", "set", tmp, "netns", peer.name)
        peer.ip("link", "set", tmp, "name", peer_ifname)
        if peer_bridge:
            peer.ip("link", "set", peer_ifname, "master", peer_bridge)
        peer.ip("link", "set", peer_ifname, "up")
        self.ip("link", "set", ifname, "up")

    def add_address(self, ifname: str, cidr: str) -> None:
        """Adds a v4 or v6 address (v6 with nodad so it is usable at once). Idempotent."""
        args = ["addr", "add", cidr, "dev", ifname]
        if ":" in cidr:
            args = ["-6"] + args + ["nodad"]
        p = self.ip(*args, check=False)
        if p.returncode != 0 and "File exists" not in p.stderr:
            raise RuntimeError(f"ip {' '.join(args)} in {self.name}: {p.stderr.strip()}")

    def del_address(self, ifname: str, cidr: str) -> None:
        fam = "-6" if ":" in cidr else "-4"
        self.ip(fam, "addr", "del", cidr, "dev", ifname)

    def addr_show(self, ifname: str) -> str:
        """`ip -d addr show dev ifname` (text, as an operator reads it)."""
        return self.ip("-d", "addr", "show", "dev", ifname).stdout

    def address_entries(self, ifname: str, cidr: str) -> list[str]:
        """Each copy of cidr on ifname as one line: the `inet`/`inet6` line of `ip -d addr show`
        joined with its `valid_lft ... preferred_lft ...` line (flags such as deprecated, nodad)."""
        want = ipaddress.ip_interface(cidr)
        lines = self.addr_show(ifname).splitlines()
        out = []
        for i, line in enumerate(lines):
            m = re.match(r"\s+inet6? (\S+)", line)
            if m and ipaddress.ip_interface(m.group(1)) == want:
                lft = lines[i + 1].strip() if i + 1 < len(lines) else ""
                out.append(f"{line.strip()} | {lft}")
        return out

    def link(self, ifname: str) -> Optional[dict]:
        """`ip -j -d link show dev ifname`, parsed (None when the interface does not exist).
        Keys used: flags (contains "UP" when admin up), linkinfo.info_kind ("dummy", ...)."""
        p = self.ip("-j", "-d", "link", "show", "dev", ifname, check=False)
        if p.returncode != 0:
            return None
        links = json.loads(p.stdout or "[]")
        return links[0] if links else None

    def link_kind_supported(self, kind: str) -> bool:
        """Whether this kernel can create a link of kind (e.g. "dummy": CONFIG_DUMMY), tried on
        a scratch interface here."""
        name = f"probe{self.lab.counter()}"
        p = self.ip("link", "add", name, "type", kind, check=False)
        if p.returncode == 0:
            self.ip("link", "del", name, check=False)
        return p.returncode == 0

    def route_show(self, prefix: str) -> str:
        fam = "-6" if ":" in prefix else "-4"
        return self.ip(fam, "route", "show", prefix).stdout

    def kernel_nexthops(self, prefix: str) -> list[str]:
        """Next-hop addresses of the kernel route for prefix: one `via` or `nexthop via` lines."""
        return parse_nexthops(self.route_show(prefix))


def parse_nexthops(route_text: str) -> list[str]:
    hops = re.findall(r"\bvia (?:inet6 |inet )?([0-9a-fA-F:.]+)", route_text)
    return sorted(set(hops), key=_addr_key)


class FabricPoller:
    """Polls the fabric's kernel route for VIP4 every 10 ms in a thread and records when
    next_hop is missing (a gap shorter than the interval can hide: pair it with `ip monitor`)."""

    interval = 0.010

    def __init__(self, fabric: Namespace, next_hop: str, interval: Optional[float] = None):
        self.fabric, self.next_hop = fabric, next_hop
        self.interval = interval or self.interval
        self.samples: list[tuple[float, bool, list[str]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        # Samples are due on a fixed grid, so one slow `ip` run (a loaded CI machine) is made
        # up by the next rather than stretching every later interval.
        due = time.monotonic()
        while not self._stop.is_set():
            t = time.monotonic()
            hops = parse_nexthops(run(["ip", "-n", self.fabric.name, "route", "show", VIP4],
                                      check=False, timeout=5).stdout)
            self.samples.append((t, self.next_hop in hops, hops))
            due = max(due + self.interval, time.monotonic())
            time.sleep(max(0.0, due - time.monotonic()))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def gaps(self) -> list[tuple[float, float]]:
        """(start, length) of every interval in which the next hop was missing."""
        out, start = [], None
        for t, present, _ in self.samples:
            if not present and start is None:
                start = t
            elif present and start is not None:
                out.append((start, t - start))
                start = None
        if start is not None:
            out.append((start, self.samples[-1][0] - start))
        return out

    def never_below(self, count: int) -> bool:
        return all(len(h) >= count for _, _, h in self.samples)

    def summary(self) -> str:
        if not self.samples:
            return "no samples"
        span = self.samples[-1][0] - self.samples[0][0]
        return (f"{len(self.samples)} samples over {span:.2f}s (every "
                f"{self.mean_spacing() * 1000:.1f}ms)")

    def mean_spacing(self) -> float:
        """Seconds between samples on average."""
        if len(self.samples) < 2:
            return float("inf")
        return (self.samples[-1][0] - self.samples[0][0]) / (len(self.samples) - 1)


def _addr_key(a: str):
    try:
        ip = ipaddress.ip_address(a)
        return (ip.version, int(ip))
    except ValueError:
        return (9, 0)


# --------------------------------------------------------------------------------------------
# Lab: owns temp dir, namespaces and processes; cleans up on every exit path.

_LABS: list["Lab"] = []
_SIGNALS_INSTALLED = False


def _on_signal(signum, frame):  # noqa: ARG001
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    log(f"got signal {signum}; cleaning up")
    _cleanup_all()
    os._exit(128 + signum)


def _cleanup_all() -> None:
    for lab in list(_LABS):
        lab.cleanup()


def _install_handlers() -> None:
    global _SIGNALS_INSTALLED
    if _SIGNALS_INSTALLED:
        return
    _SIGNALS_INSTALLED = True
    atexit.register(_cleanup_all)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _on_signal)


class Lab:
    """with Lab("name") as lab: ... -- namespaces and daemons vanish on exit, logs dumped on error."""

    def __init__(self, name: str, keep_tmp: bool = False):
        self.name = name
        self.prefix = f"vt{os.getpid()}-"
        self.tmp = tempfile.mkdtemp(prefix=f"vipd-e2e-{name}-")
        os.chmod(self.tmp, 0o755)
        self.namespaces: list[Namespace] = []
        self.procs: list[Proc] = []
        self.cleanups: list[Callable[[], None]] = []
        self.keep_tmp = keep_tmp or os.environ.get("VIPD_E2E_KEEP", "") == "1"
        self._counter = 0
        self._cleaned = False
        _install_handlers()
        _LABS.append(self)

    def counter(self) -> int:
        self._counter += 1
        return self._counter

    def __enter__(self) -> "Lab":
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None and not (exc_type is SystemExit and exc.code in (0, None)) \
                and exc_type is not Skip:
            self.dump_logs()
        self.cleanup()
        return False

    def path(self, *parts: str) -> str:
        return os.path.join(self.tmp, *parts)

    def namespace(self, short: str) -> Namespace:
        ns = Namespace(self, short)
        self.namespaces.append(ns)
        return ns.create()

    def start(self, ns: Optional[Namespace], name: str, argv: list[str],
              env: Optional[dict] = None) -> Proc:
        full = ns.argv(argv) if ns else argv
        logfile = self.path(f"{name}.log")
        proc = Proc(name, full, logfile, env)
        self.procs.append(proc)
        log(f"started {name} (pid {proc.pid}) in {ns.name if ns else 'host'}: {' '.join(argv)}")
        return proc

    def on_cleanup(self, fn: Callable[[], None]) -> None:
        self.cleanups.append(fn)

    def dump_logs(self, tail: int = 80) -> None:
        for p in self.procs:
            p.dump_log(tail)
        for fn in sorted(os.listdir(self.tmp)) if os.path.isdir(self.tmp) else []:
            if fn.endswith(".conf") or fn.endswith(".toml") or fn.endswith(".yaml"):
                print(f"----- {fn} -----")
                with open(self.path(fn), errors="replace") as f:
                    print(f.read().rstrip())
        sys.stdout.flush()

    def cleanup(self) -> None:
        if self._cleaned:
            return
        self._cleaned = True
        for fn in reversed(self.cleanups):
            with contextlib.suppress(Exception):
                fn()
        for p in reversed(self.procs):
            with contextlib.suppress(Exception):
                p.stop(timeout=5)
        # After the processes exited (LeakSanitizer reports at exit), before the logs go.
        for p in self.procs:
            report = sanitizer_report(p.log_text())
            if report:
                SANITIZER_REPORTS.append(f"{p.name} (pid {p.pid}, {' '.join(p.argv)}):\n{report}")
        # Anything else still inside our namespaces was started by us (children of our daemons,
        # e.g. ExaBGP's API process, or FRR daemons that dropped privileges): stop by PID.
        for ns in self.namespaces:
            for pid in ns.pids():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        for ns in reversed(self.namespaces):
            ns.delete()
        if not self.keep_tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)
        else:
            log(f"kept {self.tmp}")
        if self in _LABS:
            _LABS.remove(self)

    # --- topologies -------------------------------------------------------------------------

    def fabric_with_nodes(self, n: int) -> "Topology":
        """One fabric namespace with bridge br0 (192.0.2.1/24, 2001:db8::1/64) and n node
        namespaces, node i (1-based) at 192.0.2.(10+i)/24 and 2001:db8::(10+i)/64 on eth0."""
        fabric = self.namespace("fabric")
        fabric.add_bridge("br0")
        fabric.add_address("br0", f"{FABRIC_V4}/24")
        fabric.add_address("br0", f"{FABRIC_V6}/64")
        nodes = []
        for i in range(1, n + 1):
            ns = self.namespace(f"n{i}")
            ns.add_veth("eth0", fabric, f"n{i}", peer_bridge="br0")
            v4, v6 = f"192.0.2.{10 + i}", f"2001:db8::{10 + i}"
            ns.add_address("eth0", f"{v4}/24")
            ns.add_address("eth0", f"{v6}/64")
            nodes.append(Node(i, ns, v4, v6, asn=FABRIC_ASN + i))
        topo = Topology(fabric, "br0", nodes)
        wait_until(lambda: _bridge_ports_forwarding(fabric, n), 10, 0.1,
                   "fabric bridge ports to forward")
        return topo


def _bridge_ports_forwarding(ns: Namespace, n: int) -> bool:
    out = run(["bridge", "-n", ns.name, "link", "show"], check=False).stdout
    return out.count("state forwarding") >= n


@dataclass
class Node:
    index: int
    ns: Namespace
    v4: str
    v6: str
    asn: int  # a per-node ASN (65001, 65002, ...) for eBGP set-ups


@dataclass
class Topology:
    fabric: Namespace
    fabric_if: str
    nodes: list[Node]
    fabric_v4: str = FABRIC_V4
    fabric_v6: str = FABRIC_V6


# --------------------------------------------------------------------------------------------
# Peers. Every peer wrapper offers the same view for assertions:
#   neighbor_state(addr) -> "Established" | other state string
#   route(prefix) -> None | {"nexthops": [...], "communities": [...], "largeCommunities": [...],
#                             "localPref": int|None, "asPath": str}


def _community_str(v: int) -> str:
    return f"{v >> 16}:{v & 0xFFFF}"


@dataclass
class Neighbor:
    address: str
    asn: Any  # int; BIRD also takes "internal" or "external"
    passive: bool = True
    name: str = ""  # protocol name (BIRD)
    next_hop_v6: Optional[str] = None  # what we send as IPv6 next hop (route originators)
    bird_options: list[str] = field(default_factory=list)  # extra lines in BIRD's protocol block


@dataclass
class Origin:
    """A route a peer originates (captures, self-tests)."""
    prefix: str
    next_hop: Optional[str] = None  # None = self
    communities: list[str] = field(default_factory=lambda: list(COMMUNITIES))
    large: list[str] = field(default_factory=lambda: list(LARGE_COMMUNITIES))


@dataclass
class BfdTimers:
    """One side's BFD (RFC 5880 6.8.1) timers: bfd.DesiredMinTxInterval, bfd.RequiredMinRxInterval
    and bfd.DetectMult. The same object configures BIRD (`protocol bfd`), FRR (a bfdd profile)
    and vipd (peers[].bfd, via vipd())."""
    min_tx_ms: int = 300
    min_rx_ms: int = 300
    multiplier: int = 3

    def vipd(self, multihop: Optional[bool] = None) -> dict:
        """vipd's peers[].bfd block (every key spelled out, defaults included)."""
        d = {"enabled": True, "minTx": f"{self.min_tx_ms}ms", "minRx": f"{self.min_rx_ms}ms",
             "multiplier": self.multiplier}
        if multihop is not None:
            d["multihop"] = multihop
        return d

    def detection_ms(self, remote: "BfdTimers") -> int:
        """The detection time this side applies (RFC 5880 6.8.4, asynchronous mode): the remote
        multiplier times max(our RequiredMinRxInterval, the remote DesiredMinTxInterval)."""
        return remote.multiplier * max(self.min_rx_ms, remote.min_tx_ms)

    def tx_ms(self, remote: "BfdTimers") -> int:
        """The interval this side transmits at once Up (RFC 5880 6.8.7): max(our
        DesiredMinTxInterval, the remote RequiredMinRxInterval), before jitter."""
        return max(self.min_tx_ms, remote.min_rx_ms)

    def __str__(self) -> str:
        if self.min_tx_ms == self.min_rx_ms:
            return f"{self.min_tx_ms}ms x {self.multiplier}"
        return f"tx {self.min_tx_ms}ms/rx {self.min_rx_ms}ms x {self.multiplier}"


class Bird:
    binaries = ["bird", "birdc"]

    def __init__(self, lab: Lab, ns: Namespace, router_id: str, asn: int,
                 neighbors: list[Neighbor], interfaces: Iterable[str] = ("br0",),
                 origins: Iterable[Origin] = (), next_hop_v6: Optional[str] = None,
                 name: str = "bird", hold_time: int = 9, bfd: Optional[BfdTimers] = None,
                 bfd_multihop: bool = False, import_routes: bool = True):
        """bfd: run `protocol bfd` on interfaces with these timers and put `bfd on` in every
        BGP protocol (BIRD then asks for a single-hop session to each neighbour and stops the
        BGP session when it goes from Up to Down). bfd_multihop: the same timers for multihop
        sessions (RFC 5883, UDP 4784), which BIRD uses for BGP protocols with `multihop`.
        import_routes=False: `import none` on every channel (BIRD as a VIP speaker keeps
        nothing it receives)."""
        self.lab, self.ns, self.name = lab, ns, name
        self.bfd = bfd
        self.conf = lab.path(f"{name}.conf")
        self.sock = lab.path(f"{name}.ctl")
        self.neighbors = neighbors
        for i, nb in enumerate(neighbors):
            nb.name = nb.name or f"peer{i + 1}"
        origins = list(origins)
        lines = [
            "log stderr all;",
            f"router id {router_id};",
            "protocol device { scan time 10; }",
            "protocol direct { ipv4; ipv6; interface " + ", ".join(f'"{i}"' for i in interfaces) + "; }",
            # ECMP into the kernel: one multipath route per prefix from mergeable BGP paths.
            "protocol kernel kernel4 { ipv4 { import none; export where source = RTS_BGP; }; merge paths on limit 16; }",
            "protocol kernel kernel6 { ipv6 { import none; export where source = RTS_BGP; }; merge paths on limit 16; }",
        ]
        if bfd:
            lines += [
                # Millisecond log timestamps: when BIRD's BFD declared a session down.
                'timeformat log "%F %T.%3f";',
                "protocol bfd {",
                # "events" logs "Session to A expired" (detection time) apart from "changed
                # state from Up to Down" (which a received AdminDown or Down also causes).
                "  debug { states, events };",
                "  interface " + ", ".join(f'"{i}"' for i in interfaces) + " {",
                f"    min rx interval {bfd.min_rx_ms} ms;",
                f"    min tx interval {bfd.min_tx_ms} ms;",
                f"    multiplier {bfd.multiplier};",
                "  };",
                *([f"  multihop {{ min rx interval {bfd.min_rx_ms} ms; min tx interval "
                   f"{bfd.min_tx_ms} ms; multiplier {bfd.multiplier}; }};"] if bfd_multihop
                  else []),
                "}",
            ]
        lines += [
            "filter bgp_in {",
            "  if (65535, 0) ~ bgp_community then bgp_local_pref = 0;  # RFC 8326 GRACEFUL_SHUTDOWN",
            "  accept;",
            "}",
        ]
        export = "none"
        imp = "filter bgp_in" if import_routes else "none"
        if origins:
            lines.append("protocol static origin4 { ipv4; " + "".join(
                f"route {o.prefix} blackhole; " for o in origins if ":" not in o.prefix) + "}")
            lines.append("protocol static origin6 { ipv6; " + "".join(
                f"route {o.prefix} blackhole; " for o in origins if ":" in o.prefix) + "}")
            o = origins[0]
            sets = "".join(f"bgp_community.add(({c.replace(':', ',')})); " for c in o.communities)
            sets += "".join(f"bgp_large_community.add(({c.replace(':', ',')})); " for c in o.large)
            lines.append(f"filter bgp_out {{ if source = RTS_STATIC then {{ {sets}accept; }} reject; }}")
            export = "filter bgp_out"
        for nb in neighbors:
            v6_nh = nb.next_hop_v6 or next_hop_v6
            lines += [
                f"protocol bgp {nb.name} {{",
                f"  local as {asn};",
                # asn "internal"/"external": any ASN that is (not) BIRD's own.
                f"  neighbor {nb.address} " + (f"as {nb.asn};" if isinstance(nb.asn, int)
                                               else f"{nb.asn};"),
                f"  passive {'on' if nb.passive else 'off'};",
                "  error wait time 1, 2;",
                "  connect retry time 1;",
                "  connect delay time 1;",
                f"  hold time {hold_time};",
                *(["  bfd on;"] if bfd else []),
                *(f"  {o}" for o in nb.bird_options),
                f"  ipv4 {{ import {imp}; export {export}; }};",
                # IPv6 routes over an IPv4 session: BIRD needs a global IPv6 next hop on a
                # directly connected prefix for what it sends (received ones must resolve too).
                f"  ipv6 {{ import {imp}; export {export}; "
                + (f"next hop address {v6_nh}; " if v6_nh else "") + "};",
                "}",
            ]
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        run(["bird", "-p", "-c", self.conf])  # parse check: a clear error before starting
        self.proc = lab.start(ns, name, ["bird", "-f", "-c", self.conf, "-s", self.sock])
        self.procs = [self.proc]
        wait_until(lambda: os.path.exists(self.sock), 10, 0.1, f"{name} control socket")

    def birdc(self, *args: str) -> str:
        return run(["birdc", "-s", self.sock] + list(args), timeout=10).stdout

    def protocol_state(self, name: str) -> str:
        """The Info column of `show protocols` (e.g. "Established", "Active", "Connect")."""
        for line in self.birdc("show", "protocols").splitlines():
            parts = line.split()
            if parts and parts[0] == name:
                return parts[5] if len(parts) > 5 else parts[3]
        return "absent"

    def neighbor(self, addr: str) -> Neighbor:
        for nb in self.neighbors:
            if nb.address == addr:
                return nb
        raise KeyError(addr)

    def neighbor_state(self, addr: str) -> str:
        return self.protocol_state(self.neighbor(addr).name)

    def protocol_all(self, addr: str) -> str:
        """`show protocols all NAME` for the neighbour at addr: timers, capabilities, last error
        and the RFC 8203 shutdown communication as `Message:`."""
        return self.birdc("show", "protocols", "all", self.neighbor(addr).name)

    def route_all(self, prefix: str) -> str:
        """`show route for PREFIX all`; "Network not found" (birdc exits 1) is an answer."""
        p = run(["birdc", "-s", self.sock, "show", "route", "for", prefix, "all"], check=False,
                timeout=10)
        if p.returncode != 0 and "Network not found" not in p.stdout:
            raise RuntimeError(f"birdc show route for {prefix} all failed ({p.returncode}): "
                               f"{p.stdout.strip()} {p.stderr.strip()}")
        return p.stdout

    def route(self, prefix: str) -> Optional[dict]:
        """The first (best) path of `show route for PREFIX all`, parsed."""
        text = self.route_all(prefix)
        if "via" not in text and "unreachable" not in text:
            return None
        nexthops = re.findall(r"BGP\.next_hop: (.+)", text)
        comms = re.findall(r"BGP\.community: (.+)", text)
        large = re.findall(r"BGP\.large_community: (.+)", text)
        lp = re.findall(r"BGP\.local_pref: (\d+)", text)
        aspath = re.findall(r"BGP\.as_path: ?(.*)", text)
        return {
            "nexthops": nexthops[0].split() if nexthops else [],
            "communities": [c.strip("()").replace(",", ":") for c in comms[0].split()] if comms else [],
            "largeCommunities": [c.strip("()").replace(", ", ":").replace(",", ":")
                                 for c in re.findall(r"\([^)]*\)", large[0])] if large else [],
            "localPref": int(lp[0]) if lp else None,
            "asPath": aspath[0].strip() if aspath else "",
            "text": text,
        }

    def paths(self, prefix: str) -> list[dict]:
        """Every path BIRD has for prefix (`show route for PREFIX all`), each as
        {"protocol", "from", "best", "nexthops", "communities", "localPref", "asPath"}.
        Communities are "a:b" strings (GRACEFUL_SHUTDOWN is "65535:0")."""
        text = self.route_all(prefix)
        blocks = re.split(r"(?m)^(?=\S*\s+unicast \[)", text)
        out = []
        for b in blocks:
            m = re.match(r"\S*\s+unicast \[(\S+) [^\]]*?(?:from (\S+))?\]( \*)?", b)
            if not m:
                continue
            nexthops = re.findall(r"BGP\.next_hop: (.+)", b)
            comms = re.findall(r"BGP\.community: (.+)", b)
            lp = re.findall(r"BGP\.local_pref: (\d+)", b)
            aspath = re.findall(r"BGP\.as_path: ?(.*)", b)
            out.append({
                "protocol": m.group(1),
                "from": m.group(2),
                "best": bool(m.group(3)),
                "nexthops": nexthops[0].split() if nexthops else [],
                "communities": [c.strip("()").replace(",", ":")
                                for c in re.findall(r"\(\d+,\d+\)", comms[0])] if comms else [],
                "localPref": int(lp[0]) if lp else None,
                "asPath": aspath[0].strip() if aspath else "",
                "text": b,
            })
        return out

    def path_from(self, prefix: str, addr: str) -> Optional[dict]:
        """The path for prefix learnt from the neighbour at addr (None: BIRD has none)."""
        name = self.neighbor(addr).name
        return next((p for p in self.paths(prefix) if p["protocol"] == name), None)

    def has_route(self, prefix: str) -> bool:
        """Whether BIRD has any route for prefix (`show route for PREFIX`, no attributes: cheap
        enough to poll every 10 ms)."""
        p = run(["birdc", "-s", self.sock, "show", "route", "for", prefix], check=False, timeout=10)
        if "Network not found" in p.stdout:
            return False
        if p.returncode != 0:
            raise RuntimeError(f"birdc show route for {prefix} failed ({p.returncode}): "
                               f"{p.stdout.strip()} {p.stderr.strip()}")
        return str(ipaddress.ip_network(prefix)) in p.stdout

    def reload_in(self, addr: str) -> str:
        """`birdc reload in NAME`: re-import from the neighbour at addr (BIRD sends a
        ROUTE-REFRESH when the neighbour advertised the capability)."""
        return self.birdc("reload", "in", self.neighbor(addr).name)

    def kernel_nexthops(self, prefix: str) -> list[str]:
        return self.ns.kernel_nexthops(prefix)

    def bfd_sessions(self) -> dict[str, dict]:
        """`show bfd sessions`, parsed: address -> {"interface", "state", "since",
        "intervalMs" (the TX interval in use), "timeoutMs" (the detection time)}.
        BIRD 2.0.12 shows its own state only, no remote state or diagnostic: tell a received
        AdminDown from a detection-time expiry with bfd_events()."""
        out = {}
        for line in self.birdc("show", "bfd", "sessions").splitlines():
            m = re.match(r"\s*([0-9a-fA-F:.]+)\s+(\S+)\s+(AdminDown|Down|Init|Up)\s+(.*?)\s+"
                         r"(\d+)\.(\d{3})\s+(\d+)\.(\d{3})\s*$", line)
            if m:
                out[m.group(1)] = {
                    "interface": m.group(2), "state": m.group(3), "since": m.group(4),
                    "intervalMs": int(m.group(5)) * 1000 + int(m.group(6)),
                    "timeoutMs": int(m.group(7)) * 1000 + int(m.group(8)),
                }
        return out

    def bfd_state(self, addr: str) -> str:
        """BIRD's BFD state for the session to addr ("Up", "Down", ...; "absent": none)."""
        return self.bfd_sessions().get(addr, {}).get("state", "absent")

    def bfd_events(self, addr: str) -> list[tuple[float, str]]:
        """(wall-clock time, text) of each BFD event BIRD logged for the session to addr, in
        order: "added", "removed", "expired" (the detection time ran out: a failure),
        "changed state from X to Y". Needs bfd= (which turns the millisecond log on)."""
        out = []
        pat = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\.(\d{3}) .*?"
                         r"Session to " + re.escape(addr) + r" (.*)$")
        for line in self.proc.log_text().splitlines():
            m = pat.match(line)
            if m:
                ts = time.mktime(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S"))
                out.append((ts + int(m.group(2)) / 1000, m.group(3).strip()))
        return out

    def stop(self) -> None:
        self.proc.stop()


class Frr:
    """zebra + bgpd (+ bfdd with bfd=) in a namespace, with their own pathspace (-N) and vty
    socket dir.

    Quirks (FRR 8.4 Debian): zebra refuses `-u root` ("root is not part of vty group frrvty")
    and has no -S, so both daemons run `-u frr -g frr` from a frr-owned state dir; -N creates
    /var/run/frr/<name>/, which we remove afterwards; vtysh must be given --vty_socket without
    -N (with -N it looks for /etc/frr/<name>/vtysh.conf and finds no daemons).
    bfdd takes the same options plus --bfdctl (its control socket, else shared
    /var/run/frr/bfdd.sock); bgpd reaches it through zebra (same -z socket), so zebra starts
    first, then bfdd, then bgpd.
    """
    binaries = [f"{FRR_DIR}/zebra", f"{FRR_DIR}/bgpd", "vtysh"]
    bfd_binaries = binaries + [f"{FRR_DIR}/bfdd"]
    BFD_PROFILE = "lab"

    def __init__(self, lab: Lab, ns: Namespace, router_id: str, asn: int,
                 neighbors: list[Neighbor], origins: Iterable[Origin] = (),
                 next_hop_v6: Optional[str] = None, name: str = "frr", hold_time: int = 9,
                 maximum_paths: int = 16, bfd: Optional[BfdTimers] = None,
                 import_routes: bool = True, graceful_restart: bool = True):
        """bfd: also run bfdd with a profile of these timers, and `neighbor X bfd` + `neighbor X
        bfd profile` for every neighbour (single hop for a directly connected eBGP peer).
        import_routes=False: a deny-all inbound route-map and no soft-reconfiguration (FRR as
        a VIP speaker keeps nothing it receives). graceful_restart=False: `bgp
        graceful-restart-disable` (FRR advertises graceful restart by default, so a peer that
        honours it keeps a stopped or silent FRR's routes for the restart time)."""
        self.lab, self.ns, self.neighbors = lab, ns, neighbors
        self.bfd = bfd
        self.pathspace = f"{lab.prefix}{name}"
        self.dir = lab.path(name)
        os.makedirs(self.dir, exist_ok=True)
        origins = list(origins)
        # Route-maps come before `router bgp`: a `network ... route-map X` read before X exists
        # is only applied when FRR's route-map delay timer (5 s) fires, which delays the first
        # UPDATE by 5 s.
        c = ["frr defaults traditional", f"hostname {name}", "log stdout debugging", "!"]
        if origins:
            o = origins[0]
            c += ["route-map ORIGIN permit 10",
                  f" set community {' '.join(o.communities)}",
                  f" set large-community {' '.join(o.large)}",
                  "!"]
        if not import_routes:
            c += ["route-map IMPORT-NONE deny 10", "!"]
        nh6 = next_hop_v6 or next((nb.next_hop_v6 for nb in neighbors if nb.next_hop_v6), None)
        if nh6:
            c += ["route-map NH6 permit 10", f" set ipv6 next-hop global {nh6}", "!"]
        c += [
            f"router bgp {asn}",
            f" bgp router-id {router_id}",
            " no bgp ebgp-requires-policy",
            " no bgp network import-check",
            " no bgp default ipv4-unicast",
            " bgp bestpath as-path multipath-relax",
            *([] if graceful_restart else [" bgp graceful-restart-disable"]),
        ]
        for nb in neighbors:
            c += [f" neighbor {nb.address} remote-as {nb.asn}",
                  f" neighbor {nb.address} timers {hold_time // 3} {hold_time}",
                  f" neighbor {nb.address} timers connect 1",
                  f" neighbor {nb.address} advertisement-interval 0"]
            if nb.passive:
                c.append(f" neighbor {nb.address} passive")
            if bfd:
                c += [f" neighbor {nb.address} bfd",
                      f" neighbor {nb.address} bfd profile {self.BFD_PROFILE}"]
        for afi in ("ipv4", "ipv6"):
            c.append(f" address-family {afi} unicast")
            c.append(f"  maximum-paths {maximum_paths}")
            c.append(f"  maximum-paths ibgp {maximum_paths}")
            for o in origins:
                if (":" in o.prefix) == (afi == "ipv6"):
                    c.append(f"  network {o.prefix} route-map ORIGIN")
            for nb in neighbors:
                c.append(f"  neighbor {nb.address} activate")
                if import_routes:
                    c.append(f"  neighbor {nb.address} soft-reconfiguration inbound")
                else:
                    c.append(f"  neighbor {nb.address} route-map IMPORT-NONE in")
                if afi == "ipv6" and (nb.next_hop_v6 or next_hop_v6):
                    c.append(f"  neighbor {nb.address} route-map NH6 out")
            c.append(" exit-address-family")
        c.append("!")
        self.bgpd_conf = os.path.join(self.dir, "bgpd.conf")
        self.zebra_conf = os.path.join(self.dir, "zebra.conf")
        with open(self.bgpd_conf, "w") as f:
            f.write("\n".join(c) + "\n")
        with open(self.zebra_conf, "w") as f:
            f.write(f"hostname {name}\n")
        shutil.copy(self.bgpd_conf, lab.path(f"{name}-bgpd.conf"))  # dumped on failure
        if bfd:
            self.bfdd_conf = os.path.join(self.dir, "bfdd.conf")
            with open(self.bfdd_conf, "w") as f:
                f.write("\n".join([
                    f"hostname {name}",
                    "log stdout debugging",
                    "!",
                    "bfd",
                    f" profile {self.BFD_PROFILE}",
                    f"  transmit-interval {bfd.min_tx_ms}",
                    f"  receive-interval {bfd.min_rx_ms}",
                    f"  detect-multiplier {bfd.multiplier}",
                    " exit",
                    "exit",
                ]) + "\n")
            shutil.copy(self.bfdd_conf, lab.path(f"{name}-bfdd.conf"))
        run(["chown", "-R", "frr:frr", self.dir])
        zsock = os.path.join(self.dir, "zserv.api")
        common = ["-N", self.pathspace, "--vty_socket", self.dir, "-z", zsock,
                  "-u", "frr", "-g", "frr", "--log", "stdout"]
        lab.on_cleanup(lambda: shutil.rmtree(f"/var/run/frr/{self.pathspace}", ignore_errors=True))
        self.zebra = lab.start(ns, f"{name}-zebra", [f"{FRR_DIR}/zebra", "-f", self.zebra_conf,
                                                     "-i", os.path.join(self.dir, "zebra.pid")] + common)
        wait_until(lambda: os.path.exists(zsock), 10, 0.1, "zebra's zserv socket")
        self.bfdd: Optional[Proc] = None
        if bfd:
            self.bfdd = lab.start(ns, f"{name}-bfdd", [
                f"{FRR_DIR}/bfdd", "-f", self.bfdd_conf, "-i", os.path.join(self.dir, "bfdd.pid"),
                "--bfdctl", os.path.join(self.dir, "bfdd.sock")] + common)
            wait_until(lambda: os.path.exists(os.path.join(self.dir, "bfdd.vty")), 10, 0.1,
                       "bfdd's vty socket")
        self.bgpd = lab.start(ns, f"{name}-bgpd", [f"{FRR_DIR}/bgpd", "-f", self.bgpd_conf,
                                                   "-i", os.path.join(self.dir, "bgpd.pid")] + common)
        wait_until(lambda: os.path.exists(os.path.join(self.dir, "bgpd.vty")), 10, 0.1,
                   "bgpd's vty socket")
        self.procs = [self.zebra] + ([self.bfdd] if self.bfdd else []) + [self.bgpd]

    def vtysh(self, *commands: str) -> str:
        argv = ["vtysh", "--vty_socket", self.dir]
        for cmd in commands:
            argv += ["-c", cmd]
        return run(argv, timeout=10).stdout

    def vtysh_json(self, command: str) -> Any:
        return json.loads(self.vtysh(command) or "{}")

    def neighbor_state(self, addr: str) -> str:
        d = self.vtysh_json(f"show bgp neighbors {addr} json")
        return d.get(addr, {}).get("bgpState", "absent")

    def route_paths(self, prefix: str) -> list[dict]:
        afi = "ipv6" if ":" in prefix else "ipv4"
        d = self.vtysh_json(f"show bgp {afi} unicast {prefix} json")
        return d.get("paths", [])

    def route(self, prefix: str) -> Optional[dict]:
        paths = self.route_paths(prefix)
        if not paths:
            return None
        best = next((p for p in paths if p.get("bestpath", {}).get("overall")), paths[0])
        return {
            "nexthops": [nh["ip"] for nh in best.get("nexthops", []) if nh.get("scope") != "link-local"
                         and not nh["ip"].lower().startswith("fe80")],
            "communities": best.get("community", {}).get("string", "").split(),
            "largeCommunities": best.get("largeCommunity", {}).get("string", "").split(),
            "localPref": best.get("locPrf", best.get("localpref")),
            # FRR prints an empty AS_PATH as "Local".
            "asPath": best.get("aspath", {}).get("string", "").replace("Local", "").strip(),
            "paths": len(paths),
            "raw": best,
        }

    def kernel_nexthops(self, prefix: str) -> list[str]:
        return self.ns.kernel_nexthops(prefix)

    def bfd_peers(self) -> list[dict]:
        """bfdd's `show bfd peers json`: one dict per session with (FRR 8.4) "peer", "local",
        "interface", "status" ("up", "down", "init", "shutdown"), "diagnostic",
        "remote-diagnostic", "id", "remote-id", "receive-interval", "transmit-interval",
        "detect-multiplier" (ours, ms) and "remote-receive-interval", "remote-transmit-interval",
        "remote-detect-multiplier" (the peer's, as last received)."""
        d = self.vtysh_json("show bfd peers json")
        return d if isinstance(d, list) else []

    def bfd_peer(self, addr: str) -> Optional[dict]:
        """bfdd's session with addr (None: no session)."""
        return next((p for p in self.bfd_peers() if p.get("peer") == addr), None)

    def bfd_peer_state(self, addr: str) -> str:
        """bfdd's state of the session with addr ("up", "down", "init", ...; "absent": none)."""
        p = self.bfd_peer(addr)
        return p.get("status", "unknown") if p else "absent"

    def stop(self) -> None:
        self.bgpd.stop()
        if self.bfdd:
            self.bfdd.stop()
        self.zebra.stop()


class Gobgp:
    """gobgpd with a per-instance gRPC port. Quirk: its first connect to a passive peer waits
    5-10 s whatever connect-retry says, so for quick tests let the other side dial
    (passive-mode here) or budget for it."""
    binaries = ["gobgpd", "gobgp"]
    _next_port = 50051 + (os.getpid() % 1000) * 7

    def __init__(self, lab: Lab, ns: Namespace, router_id: str, asn: int,
                 neighbors: list[Neighbor], origins: Iterable[Origin] = (),
                 name: str = "gobgp", hold_time: int = 9, local_address: Optional[str] = None,
                 import_routes: bool = True, api_socket: bool = False):
        """import_routes=False: routes from neighbours are rejected on import (GoBGP as a VIP
        speaker installs nothing it receives). api_socket: gRPC on a unix socket instead of a
        TCP port in ns, so the `gobgp` CLI runs from the host as it would on a node (no
        `ip netns exec` in its path)."""
        self.lab, self.ns, self.neighbors = lab, ns, neighbors
        Gobgp._next_port += 1
        self.port = Gobgp._next_port
        self.conf = lab.path(f"{name}.toml")
        t = [
            "[global.config]",
            f"  as = {asn}",
            f'  router-id = "{router_id}"',
            "  port = 179",
        ]
        if local_address:
            t.append(f'  local-address-list = ["{local_address}"]')
        t += [
            "[global.apply-policy.config]",
            # Not importing: GoBGP's import policy also sees its own `global rib add` routes, so
            # only what comes from a neighbour is rejected.
            f'  import-policy-list = ["{"accept-all" if import_routes else "import-none"}"]',
            '  default-import-policy = "accept-route"',
            '  export-policy-list = ["accept-all"]',
            '  default-export-policy = "accept-route"',
        ]
        for nb in neighbors:
            t += [
                "[[neighbors]]",
                "  [neighbors.config]",
                f'    neighbor-address = "{nb.address}"',
                f"    peer-as = {nb.asn}",
                "  [neighbors.transport.config]",
                f"    passive-mode = {'true' if nb.passive else 'false'}",
            ]
            if local_address:
                t.append(f'    local-address = "{local_address}"')
            t += [
                "  [neighbors.timers.config]",
                "    connect-retry = 1",
                f"    hold-time = {hold_time}",
                f"    keepalive-interval = {max(1, hold_time // 3)}",
                "    idle-hold-time-after-reset = 1",
                "  [[neighbors.afi-safis]]",
                "    [neighbors.afi-safis.config]",
                '      afi-safi-name = "ipv4-unicast"',
                "  [[neighbors.afi-safis]]",
                "    [neighbors.afi-safis.config]",
                '      afi-safi-name = "ipv6-unicast"',
                # Per-neighbour import policy: accept everything.
                "  [neighbors.apply-policy.config]",
                '    import-policy-list = ["accept-all"]',
                '    default-import-policy = "accept-route"',
                '    default-export-policy = "accept-route"',
            ]
        if not import_routes:
            t += [
                "[[defined-sets.neighbor-sets]]",
                '  neighbor-set-name = "neighbors"',
                "  neighbor-info-list = [" + ", ".join(f'"{nb.address}"' for nb in neighbors) + "]",
                "[[policy-definitions]]",
                '  name = "import-none"',
                "  [[policy-definitions.statements]]",
                '    name = "from-neighbors"',
                "    [policy-definitions.statements.conditions.match-neighbor-set]",
                '      neighbor-set = "neighbors"',
                "    [policy-definitions.statements.actions]",
                '      route-disposition = "reject-route"',
            ]
        t += [
            "[[policy-definitions]]",
            '  name = "accept-all"',
            "  [[policy-definitions.statements]]",
            '    name = "accept"',
            "    [policy-definitions.statements.actions]",
            '      route-disposition = "accept-route"',
        ]
        with open(self.conf, "w") as f:
            f.write("\n".join(t) + "\n")
        self.target = f"unix://{lab.path(name + '.grpc')}" if api_socket else None
        self.proc = lab.start(ns, name, ["gobgpd", "-f", self.conf, "-p", "--pprof-disable",
                                         f"--api-hosts={self.target or f'127.0.0.1:{self.port}'}"])
        wait_until(lambda: self.cli("global") is not None, 15, 0.2, f"{name} gRPC API")
        for o in origins:
            self.add_route(o)
        self.procs = [self.proc]

    def cli(self, *args: str, json_out: bool = False) -> Any:
        argv = (["gobgp", "--target", self.target] if self.target else
                ["gobgp", "-u", "127.0.0.1", "-p", str(self.port)]) + list(args)
        if json_out:
            argv.append("-j")
        out = (run(argv, timeout=10) if self.target else self.ns.run(argv, timeout=10)).stdout
        return json.loads(out) if json_out else out

    def add_route(self, o: Origin) -> None:
        fam = "ipv6" if ":" in o.prefix else "ipv4"
        # origin igp: GoBGP defaults to INCOMPLETE, and BIRD only merges ECMP paths of equal origin.
        args = ["global", "rib", "add", "-a", fam, o.prefix, "origin", "igp"]
        if o.next_hop:
            args += ["nexthop", o.next_hop]
        if o.communities:
            args += ["community", ",".join(o.communities)]
        if o.large:
            args += ["large-community", ",".join(o.large)]
        self.cli(*args)

    def del_route(self, o: Origin) -> None:
        fam = "ipv6" if ":" in o.prefix else "ipv4"
        self.cli("global", "rib", "del", "-a", fam, o.prefix)

    def neighbor_state(self, addr: str) -> str:
        d = self.cli("neighbor", addr, json_out=True)
        st = d.get("state", {}).get("session_state", "absent")
        names = {1: "Idle", 2: "Connect", 3: "Active", 4: "OpenSent", 5: "OpenConfirm", 6: "Established"}
        if isinstance(st, int):
            return names.get(st, str(st))
        return str(st).capitalize() if str(st).islower() else str(st)

    def rib(self, prefix: str, family: Optional[str] = None) -> list[dict]:
        family = family or ("ipv6" if ":" in prefix else "ipv4")
        d = self.cli("global", "rib", "-a", family, prefix, json_out=True)
        if isinstance(d, dict):
            return d.get(prefix, []) or next(iter(d.values()), [])
        return d or []

    def route(self, prefix: str) -> Optional[dict]:
        paths = self.rib(prefix)
        if not paths:
            return None
        best = next((p for p in paths if p.get("best")), paths[0])
        out = {"nexthops": [], "communities": [], "largeCommunities": [], "localPref": None,
               "asPath": "", "paths": len(paths), "raw": best}
        for a in best.get("attrs", []):
            t = a.get("type")
            if t == 3:
                out["nexthops"].append(a["nexthop"])
            elif t == 14:
                out["nexthops"] += [nh for nh in ([a.get("nexthop")] if a.get("nexthop") else [])
                                    if not nh.lower().startswith("fe80")]
            elif t == 5:
                out["localPref"] = a.get("value")
            elif t == 8:
                out["communities"] = [_community_str(v) for v in a.get("communities", [])]
            elif t == 32:
                out["largeCommunities"] = [f"{v['ASN']}:{v['LocalData1']}:{v['LocalData2']}"
                                           for v in a.get("value", [])]
            elif t == 2:
                segs = a.get("as_paths", [])
                out["asPath"] = " ".join(str(x) for s in segs for x in s.get("asns", []))
        if not out["nexthops"] and best.get("nexthop"):
            out["nexthops"] = [best["nexthop"]]
        return out

    def stop(self) -> None:
        self.proc.stop()


class Exabgp:
    """Foreground ExaBGP. Its API process (exabgp_recorder.py) appends every received JSON
    message to a file, which stands in for a RIB."""
    binaries = ["exabgp"]

    def __init__(self, lab: Lab, ns: Namespace, router_id: str, asn: int,
                 neighbors: list[Neighbor], local_address: str,
                 origins: Iterable[Origin] = (), name: str = "exabgp", hold_time: int = 9,
                 record: bool = True, control_fifo: Optional[str] = None):
        """record=False: no API process receives UPDATEs (ExaBGP as a VIP speaker).
        control_fifo: a FIFO whose lines are ExaBGP API commands (`withdraw route ...`),
        relayed by exabgp_control.py; the FIFO is created here."""
        self.lab, self.ns, self.neighbors = lab, ns, neighbors
        self.control_fifo = control_fifo
        self.conf = lab.path(f"{name}.conf")
        self.received = lab.path(f"{name}-received.jsonl")
        open(self.received, "w").close()
        origins = list(origins)
        c = []
        processes = []
        if record:
            processes.append("recorder")
            c += ["process recorder {",
                  f"  run {sys.executable} {os.path.join(E2E_DIR, 'exabgp_recorder.py')} "
                  f"{self.received};",
                  "  encoder json;",
                  "}"]
        if control_fifo:
            os.mkfifo(control_fifo)
            processes.append("control")
            c += ["process control {",
                  f"  run {sys.executable} {os.path.join(E2E_DIR, 'exabgp_control.py')} "
                  f"{control_fifo};",
                  "  encoder text;",
                  "}"]
        for nb in neighbors:
            c += [
                f"neighbor {nb.address} {{",
                f"  router-id {router_id};",
                f"  local-address {local_address};",
                f"  local-as {asn};",
                f"  peer-as {nb.asn};",
                f"  hold-time {hold_time};",
                f"  passive {'true' if nb.passive else 'false'};",
                "  family { ipv4 unicast; ipv6 unicast; }",
                *([f"  api {{ processes [ {' '.join(processes)} ]; neighbor-changes; "
                   + ("receive { parsed; update; } }" if record else "}")] if processes else []),
            ]
            if origins:
                c.append("  static {")
                for o in origins:
                    nh = o.next_hop or ("self" if ":" not in o.prefix else nb.next_hop_v6)
                    attrs = ""
                    if o.communities:
                        attrs += f" community [ {' '.join(o.communities)} ]"
                    if o.large:
                        attrs += f" large-community [ {' '.join(o.large)} ]"
                    c.append(f"    route {o.prefix} next-hop {nh}{attrs};")
                c.append("  }")
            c.append("}")
        with open(self.conf, "w") as f:
            f.write("\n".join(c) + "\n")
        env = {
            "exabgp_daemon_daemonize": "false",
            "exabgp_daemon_user": "root",
            "exabgp_daemon_drop": "false",
            "exabgp_log_destination": "stdout",
            "exabgp_api_cli": "false",
            "exabgp_api_ack": "false",
            "exabgp_tcp_bind": local_address,  # listen, so passive neighbours can be dialled
            "exabgp_tcp_port": "179",
            "exabgp_log_network": "true",
        }
        self.proc = lab.start(ns, name, ["exabgp", self.conf], env=env)
        self.procs = [self.proc]

    def messages(self) -> list[dict]:
        out = []
        with open(self.received, errors="replace") as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    with contextlib.suppress(ValueError):
                        out.append(json.loads(line))
        return out

    def neighbor_state(self, addr: str) -> str:
        state = "absent"
        for m in self.messages():
            nb = m.get("neighbor", {})
            if nb.get("address", {}).get("peer") != addr:
                continue
            if m.get("type") == "state":
                state = nb.get("state", state)
            elif m.get("type") == "update":
                state = "up"
        return {"up": "Established", "connected": "Connect", "down": "Idle"}.get(state, state)

    def received_routes(self) -> dict[str, dict]:
        """prefix -> current route (announces minus later withdraws), with attributes."""
        rib: dict[str, dict] = {}
        for m in self.messages():
            nb = m.get("neighbor", {})
            if m.get("type") == "state" and nb.get("state") == "down":
                peer = nb.get("address", {}).get("peer")
                rib = {k: v for k, v in rib.items() if v["peer"] != peer}
                continue
            if m.get("type") != "update":
                continue
            upd = nb.get("message", {}).get("update", {})
            attr = upd.get("attribute", {})
            for fam, by_nh in upd.get("announce", {}).items():
                for nh, nlris in by_nh.items():
                    for n in nlris:
                        prefix = n["nlri"] if isinstance(n, dict) else n
                        rib[prefix] = {
                            "peer": nb.get("address", {}).get("peer"),
                            "family": fam,
                            "nexthops": [nh],
                            "communities": [f"{a}:{b}" for a, b in attr.get("community", [])],
                            "largeCommunities": [f"{a}:{b}:{c}" for a, b, c in attr.get("large-community", [])],
                            "localPref": attr.get("local-preference"),
                            "asPath": " ".join(str(x) for x in attr.get("as-path", [])),
                        }
            for fam, nlris in upd.get("withdraw", {}).items():
                for n in nlris:
                    rib.pop(n["nlri"] if isinstance(n, dict) else n, None)
        return rib

    def route(self, prefix: str) -> Optional[dict]:
        return self.received_routes().get(str(ipaddress.ip_network(prefix)))

    def stop(self) -> None:
        self.proc.stop()


# --------------------------------------------------------------------------------------------
# Packet capture: what actually went over the wire (tcpdump writes a pcap, parsed here).


class TcpCapture:
    """tcpdump on ifname in ns from now on (start it before the session comes up). Stopped by
    PID with the lab; streams()/bgp_messages() read the pcap (stdlib only; IPv4 over Ethernet).
    --immediate-mode: without it libpcap hands packets over in blocks (up to ~1 s late), so a
    pcap read while tcpdump runs misses the newest ones."""
    binaries = ["tcpdump"]

    def __init__(self, lab: Lab, ns: Namespace, ifname: str, bpf: str = "tcp port 179",
                 name: str = "tcpdump"):
        self.path = lab.path(f"{name}.pcap")
        self.proc = lab.start(ns, name, ["tcpdump", "-i", ifname, "-n", "-U", "--immediate-mode",
                                         "-s", "0", "-Z", "root", "-w", self.path, bpf])
        self.procs = [self.proc]
        wait_until(lambda: "listening on" in self.proc.log_text(), 10, 0.05,
                   lambda: f"{name} to listen: {self.proc.log_text()!r}")

    def _packets(self) -> Iterable[tuple[float, str, int, str, int, int, bytes]]:
        """(time, src, sport, dst, dport, seq, payload) of each IPv4 TCP packet with a payload;
        time is the capture's wall-clock timestamp (comparable with time.time())."""
        for ts, src, sport, dst, dport, seq, payload, _, _ in self._segments():
            if payload:
                yield ts, src, sport, dst, dport, seq, payload

    def segment_ttls(self, src: str, dst: str) -> list[tuple[int, int, int]]:
        """(IP TTL, TCP flags, payload length) of every TCP segment src sent to dst, in order:
        SYNs and bare ACKs included (GTSM, RFC 5082, covers them all)."""
        return [(ttl, flags, len(payload))
                for _, s, _, d, _, _, payload, ttl, flags in self._segments()
                if (s, d) == (src, dst)]

    def _segments(self) -> Iterable[tuple[float, str, int, str, int, int, bytes, int, int]]:
        """_packets(), but every IPv4 TCP segment, with its IP TTL and TCP flags after the
        payload."""
        with open(self.path, "rb") as f:
            data = f.read()
        if len(data) < 24:
            return
        magic = data[:4]
        endian = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
        frac = 1e-9 if magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d") else 1e-6
        linktype = struct.unpack(endian + "I", data[20:24])[0]
        check(linktype == 1, f"{self.path}: link type {linktype}, expected Ethernet")
        off = 24
        while off + 16 <= len(data):
            sec, sub, incl = struct.unpack(endian + "III", data[off:off + 12])
            frame = data[off + 16:off + 16 + incl]
            off += 16 + incl
            if len(frame) < 34 or frame[12:14] != b"\x08\x00":
                continue
            ip = frame[14:]
            ihl, total = (ip[0] & 0x0F) * 4, struct.unpack("!H", ip[2:4])[0]
            if ip[9] != 6:
                continue
            tcp = ip[ihl:total]
            sport, dport, seq = struct.unpack("!HHI", tcp[:8])
            payload = tcp[(tcp[12] >> 4) * 4:]
            yield (sec + sub * frac, str(ipaddress.IPv4Address(ip[12:16])), sport,
                   str(ipaddress.IPv4Address(ip[16:20])), dport, seq, payload, ip[8], tcp[13])

    def _timed_streams(self, src: str, dst: str) -> list[tuple[bytes, list[tuple[int, float]]]]:
        """Per connection src -> dst, in order: (byte stream, [(end offset, time)] of its
        segments), retransmits dropped (the first capture of a sequence number counts)."""
        conns: dict[tuple, dict[int, tuple[float, bytes]]] = {}
        for ts, s_addr, sport, d_addr, dport, seq, payload in self._packets():
            if (s_addr, d_addr) == (src, dst):
                conns.setdefault((sport, dport), {}).setdefault(seq, (ts, payload))
        out = []
        for segs in conns.values():
            base = min(segs)  # no wrap-around in a short test
            stream, ends = b"", []
            for seq in sorted(segs):
                ts, payload = segs[seq]
                rel = seq - base
                if rel + len(payload) > len(stream):
                    stream += payload[len(stream) - rel:]
                    ends.append((len(stream), ts))
            out.append((stream, ends))
        return out

    def streams(self, src: str, dst: str) -> list[bytes]:
        """The TCP byte streams src -> dst, one per connection in order, retransmits dropped."""
        return [stream for stream, _ in self._timed_streams(src, dst)]

    def timed_bgp_messages(self, src: str, dst: str) -> list[tuple[float, int, bytes]]:
        """(capture time of the segment that completed it, type, body without the 19-byte
        header) of each BGP message src sent to dst."""
        msgs = []
        for stream, ends in self._timed_streams(src, dst):
            off = 0
            while off + 19 <= len(stream) and stream[off:off + 16] == b"\xff" * 16:
                length = int.from_bytes(stream[off + 16:off + 18], "big")
                if length < 19 or off + length > len(stream):
                    break
                ts = next(t for end, t in ends if end >= off + length)
                msgs.append((ts, stream[off + 18], stream[off + 19:off + length]))
                off += length
        return msgs

    def bgp_messages(self, src: str, dst: str) -> list[tuple[int, bytes]]:
        """(type, body without the 19-byte header) of each BGP message src sent to dst."""
        return [(t, body) for _, t, body in self.timed_bgp_messages(src, dst)]

    def stop(self) -> None:
        self.proc.stop()


class BfdCapture:
    """tcpdump -v of BFD control packets (UDP 3784, single hop; bpf= for 4784) on ifname in ns, decoded by
    tcpdump's BFD printer into its log (a text log, not a pcap: TcpCapture's parser is TCP
    only). packets() gives what each packet carried on the wire: TTL, ports, state, diagnostic,
    multiplier, discriminators and intervals."""
    binaries = ["tcpdump"]

    def __init__(self, lab: Lab, ns: Namespace, ifname: str, bpf: str = "udp port 3784",
                 name: str = "tcpdump-bfd"):
        self.proc = lab.start(ns, name, ["tcpdump", "-i", ifname, "-n", "-l", "-v",
                                         "--immediate-mode", "-tt", bpf])
        self.procs = [self.proc]
        wait_until(lambda: "listening on" in self.proc.log_text(), 10, 0.05,
                   lambda: f"{name} to listen: {self.proc.log_text()!r}")

    _HEAD = re.compile(r"^(\d+\.\d+) IP \(.*?\bttl (\d+),.*\)$")
    _ADDRS = re.compile(r"^\s+([0-9.]+)\.(\d+) > ([0-9.]+)\.(\d+): BFDv(\d)")

    def packets(self) -> list[dict]:
        """One dict per captured IPv4 BFD control packet: "time" (wall clock), "ttl", "src",
        "sport", "dst", "dport", "version", "state" ("AdminDown", "Down", "Init", "Up"),
        "diagnostic" (code), "flags" (tcpdump's text), "multiplier", "myDisc", "yourDisc",
        "minTxMs", "minRxMs"."""
        out: list[dict] = []
        cur: Optional[dict] = None
        for line in self.proc.log_text().splitlines():
            m = self._HEAD.match(line)
            if m:
                cur = {"time": float(m.group(1)), "ttl": int(m.group(2))}
                continue
            if cur is None:
                continue
            m = self._ADDRS.match(line)
            if m:
                cur.update(src=m.group(1), sport=int(m.group(2)), dst=m.group(3),
                           dport=int(m.group(4)), version=int(m.group(5)))
                out.append(cur)
                continue
            m = re.search(r"(?:Control|Multihop), State (\w+), Flags: \[([^\]]*)\], Diagnostic: .*\(0x([0-9a-f]+)\)",
                          line)
            if m:
                cur.update(state=m.group(1), flags=m.group(2), diagnostic=int(m.group(3), 16))
            m = re.search(r"Detection Timer Multiplier: (\d+)", line)
            if m:
                cur["multiplier"] = int(m.group(1))
            m = re.search(r"My Discriminator: 0x([0-9a-f]+), Your Discriminator: 0x([0-9a-f]+)", line)
            if m:
                cur.update(myDisc=int(m.group(1), 16), yourDisc=int(m.group(2), 16))
            m = re.search(r"Desired min T(?:x|ransmit) Interval:\s+(\d+) ms", line)
            if m:
                cur["minTxMs"] = int(m.group(1))
            m = re.search(r"Required min R(?:x|eceive) Interval:\s+(\d+) ms", line)
            if m:
                cur["minRxMs"] = int(m.group(1))
        return [p for p in out if "state" in p]

    def from_addr(self, src: str, since: float = 0.0) -> list[dict]:
        """packets() sent by src at or after the wall-clock time since."""
        return [p for p in self.packets() if p["src"] == src and p["time"] >= since]

    def stop(self) -> None:
        self.proc.stop()


def check_bfd_single_hop(packets: list[dict], who: str, source_port: bool = True) -> None:
    """Asserts RFC 5881 single-hop framing on every packet: version 1, TTL 255, destination
    port 3784 and (source_port) a source port in 49152-65535 (RFC 5881 section 4). BIRD 2.0.12
    sends from an ordinary ephemeral port (32768-60999), so its packets are checked with
    source_port=False; a receiver must not insist on the range."""
    check(packets, f"no BFD packets captured from {who}")
    for p in packets:
        ok = p["version"] == 1 and p["ttl"] == 255 and p["dport"] == 3784
        if source_port:
            ok = ok and 49152 <= p["sport"] <= 65535
        check(ok, f"{who} sent a BFD packet that is not RFC 5881 single-hop (version 1, "
              f"TTL 255, UDP {'49152-65535 ' if source_port else ''}-> 3784): {p}")


BGP_UPDATE = 2
GRACEFUL_SHUTDOWN = "65535:0"  # RFC 8326 well-known community


def _nlri_prefixes(raw: bytes, width: int) -> list[str]:
    out, off = [], 0
    while off < len(raw):
        plen = raw[off]
        nbytes = (plen + 7) // 8
        addr = raw[off + 1:off + 1 + nbytes] + b"\0" * (width - nbytes)
        ip = ipaddress.IPv4Address(addr) if width == 4 else ipaddress.IPv6Address(addr)
        out.append(f"{ip}/{plen}")
        off += 1 + nbytes
    return out


def update_attributes(body: bytes) -> tuple[list[tuple[int, bytes]], list[str]]:
    """([(attribute type, value)] in wire order, [IPv4 NLRI prefixes]) of an UPDATE body (no
    ADD-PATH). The one attribute walker every wire-level check here uses."""
    wlen = struct.unpack("!H", body[0:2])[0]
    alen = struct.unpack("!H", body[2 + wlen:4 + wlen])[0]
    raw = body[4 + wlen:4 + wlen + alen]
    attrs, off = [], 0
    while off < len(raw):
        flags, atype = raw[off], raw[off + 1]
        if flags & 0x10:  # extended length
            length, hdr = struct.unpack("!H", raw[off + 2:off + 4])[0], 4
        else:
            length, hdr = raw[off + 2], 3
        attrs.append((atype, raw[off + hdr:off + hdr + length]))
        off += hdr + length
    return attrs, _nlri_prefixes(body[4 + wlen + alen:], 4)


def update_prefixes(body: bytes) -> tuple[list[str], list[str]]:
    """(withdrawn, announced) prefixes of an UPDATE body: IPv4 fields and MP_REACH/MP_UNREACH
    (IPv4/IPv6 unicast, no ADD-PATH)."""
    wlen = struct.unpack("!H", body[0:2])[0]
    withdrawn = _nlri_prefixes(body[2:2 + wlen], 4)
    attrs, announced = update_attributes(body)
    for atype, value in attrs:
        if atype in (14, 15):
            afi = struct.unpack("!H", value[0:2])[0]
            width = 16 if afi == 2 else 4
            if atype == 15:
                withdrawn += _nlri_prefixes(value[3:], width)
            else:
                nh_len = value[3]
                announced += _nlri_prefixes(value[5 + nh_len:], width)  # 1 reserved octet
    return withdrawn, announced


def update_communities(body: bytes) -> list[str]:
    """The COMMUNITIES (type 8) of an UPDATE body as "a:b" strings (65535:0 = GRACEFUL_SHUTDOWN)."""
    out = []
    for atype, value in update_attributes(body)[0]:
        if atype == 8:
            out += [_community_str(struct.unpack("!I", value[i:i + 4])[0])
                    for i in range(0, len(value) - 3, 4)]
    return out


def first_withdrawal(cap: TcpCapture, src: str, dst: str, prefix: str,
                     after: float) -> Optional[float]:
    """Capture time of the first UPDATE from src to dst withdrawing prefix at or after the
    wall-clock time `after` (None: not captured yet)."""
    want = str(ipaddress.ip_network(prefix))
    for ts, t, body in cap.timed_bgp_messages(src, dst):
        if ts >= after and t == BGP_UPDATE and want in update_prefixes(body)[0]:
            return ts
    return None


# --------------------------------------------------------------------------------------------
# vipd


def to_yaml(obj: Any, indent: int = 0) -> str:
    """Minimal YAML emitter for the config dict (strings are JSON-quoted, which YAML accepts)."""
    pad = "  " * indent
    if isinstance(obj, dict):
        lines = []
        for k, v in obj.items():
            scalar_list = isinstance(v, list) and all(not isinstance(x, (dict, list)) for x in v)
            if isinstance(v, (dict, list)) and v and not scalar_list:
                lines.append(f"{pad}{k}:")
                lines.append(to_yaml(v, indent + 1))
            else:
                lines.append(f"{pad}{k}: {to_yaml(v)}")
        return "\n".join(lines)
    if isinstance(obj, list):
        if not obj:
            return "[]"
        if all(not isinstance(v, (dict, list)) for v in obj):
            return "[" + ", ".join(to_yaml(v) for v in obj) + "]"
        lines = []
        for v in obj:
            sub = to_yaml(v, indent + 1).lstrip()
            lines.append(f"{pad}- {sub}")
        return "\n".join(lines)
    if isinstance(obj, bool):
        return "true" if obj else "false"
    if isinstance(obj, (int, float)):
        return str(obj)
    if obj is None:
        return "null"
    return json.dumps(str(obj))


def vipd_config(lab: Lab, node: Node, local_asn: int, peer_addr: str, peer_asn: int,
                name: str) -> dict:
    return {
        "apiVersion": "vipd.io/v1alpha1",
        "kind": "SpeakerConfiguration",
        "routerId": node.v4,
        "localAsn": local_asn,
        "vips": [{"address": VIP4, "interface": "lo"}, {"address": VIP6, "interface": "lo"}],
        "communities": list(COMMUNITIES),
        "largeCommunities": list(LARGE_COMMUNITIES),
        "peers": [{"address": peer_addr, "asn": peer_asn, "sourceAddress": node.v4, "holdTime": "9s",
                   "connectRetryTime": "1s", "nextHopIpv6": node.v6}],
        "control": {"socket": lab.path(f"{name}.sock"), "stateDir": lab.path(f"{name}-state")},
        # Short drain steps keep SIGTERM fast in tests; the order is what the tests check.
        "drain": {"gracefulShutdownTime": "300ms", "unbindDelay": UNBIND_DELAY},
        # No apiserver in most tests: the gate is off, explicitly (vipd has no implicit default).
        "health": {"type": "none"},
    }


def as_user(user: str, dac_override: bool = False) -> list[str]:
    """A command prefix running the rest as user (its primary group, no supplementary groups).
    dac_override keeps CAP_DAC_OVERRIDE (ambient): file modes no longer stop it, so only the
    program's own checks (SO_PEERCRED) can refuse it."""
    if not dac_override:
        return ["runuser", "-u", user, "--"]
    import pwd
    pw = pwd.getpwnam(user)
    return ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups",
            "--inh-caps=+dac_override", "--ambient-caps=+dac_override", "--"]


_HTTP_GET = """
import sys, urllib.request, urllib.error
try:
    r = urllib.request.urlopen(sys.argv[1], timeout=float(sys.argv[2]))
    code, body = r.status, r.read()
except urllib.error.HTTPError as e:
    code, body = e.code, e.read()
sys.stdout.write(str(code) + "\\n" + body.decode("utf-8", "replace"))
"""


def http_get(ns: Namespace, url: str, timeout: float = 3) -> tuple[int, str]:
    """GET url from inside ns (python stdlib; no curl needed): (status, body). Raises when no
    HTTP answer came (connection refused, timeout)."""
    p = ns.run([sys.executable, "-c", _HTTP_GET, url, str(timeout)], timeout=timeout + 10)
    code, _, body = p.stdout.partition("\n")
    return int(code), body


def parse_prometheus(text: str) -> list[tuple[str, dict, float]]:
    """Prometheus text exposition -> (name, labels, value) per sample (comments skipped)."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)', line)
        if not m:
            raise AssertionError(f"not a Prometheus sample line: {line!r}")
        labels = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        out.append((m.group(1), labels, float(m.group(3))))
    return out


# --- A stand-in kube-apiserver for vipd's health gate: certificates and an HTTPS /readyz.


def make_ca(lab: Lab, name: str) -> tuple[str, str]:
    """A self-signed CA in the lab's temp dir (openssl CLI): (cert path, key path)."""
    crt, key = lab.path(f"{name}.crt"), lab.path(f"{name}.key")
    run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", key, "-out", crt, "-days", "2", "-subj", f"/CN={name}",
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
    return crt, key


# What kubeadm puts in the apiserver's serving certificate besides the node's address: the
# `kubernetes` Service's names and its ClusterIP (the first address of the default service CIDR).
# No 127.0.0.1: vipd's default check (https://127.0.0.1:6443/readyz) has to verify the name
# `kubernetes` instead, the one every kubeadm, k3s and RKE2 apiserver certificate carries.
KUBEADM_APISERVER_DNS = ("kubernetes", "kubernetes.default", "kubernetes.default.svc",
                         "kubernetes.default.svc.cluster.local")
KUBEADM_SERVICE_IP = "10.96.0.1"


def make_server_cert(lab: Lab, ca: tuple[str, str], name: str, node_ip: Optional[str] = None,
                     only_ip: Optional[str] = None) -> tuple[str, str]:
    """An apiserver serving certificate signed by ca: (cert path, key path). By default shaped
    like a stock kubeadm one: CN kube-apiserver, DNS KUBEADM_APISERVER_DNS, IP
    KUBEADM_SERVICE_IP and node_ip when given, and no 127.0.0.1. With only_ip, the other shape:
    the address as the CN and as the only subjectAltName, no DNS name at all."""
    crt, key, csr = lab.path(f"{name}.crt"), lab.path(f"{name}.key"), lab.path(f"{name}.csr")
    ext = lab.path(f"{name}.ext")
    if only_ip is not None:
        cn, sans = only_ip, [f"IP:{only_ip}"]
    else:
        cn = "kube-apiserver"
        sans = [f"DNS:{d}" for d in KUBEADM_APISERVER_DNS] + [f"IP:{KUBEADM_SERVICE_IP}"]
        if node_ip is not None:
            sans.append(f"IP:{node_ip}")
    with open(ext, "w") as f:
        f.write(f"subjectAltName={','.join(sans)}\nextendedKeyUsage=serverAuth\n"
                "basicConstraints=CA:FALSE\n")
    run(["openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", key, "-out", csr, "-subj", f"/CN={cn}"])
    run(["openssl", "x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1], "-CAcreateserial",
         "-out", crt, "-days", "2", "-extfile", ext])
    return crt, key


class FakeApiserver:
    """fake_apiserver.py in ns: HTTPS on addr:port with cert/key; what /readyz answers is read
    from a file per request, so set_mode() switches it at run time:
      ok       200 "ok" (a healthy apiserver)
      proxy502 502 with an HTML error page (a proxy in front of a dead apiserver)
      other    200 with a body that is not "ok"
      slow     answers "ok" after 2 s (longer than any probe timeout)"""
    binaries = ["openssl"]

    def __init__(self, lab: Lab, ns: Namespace, cert: tuple[str, str], mode: str = "ok",
                 addr: str = "127.0.0.1", port: int = 6443, name: str = "apiserver"):
        self.mode_file = lab.path(f"{name}.mode")
        self.set_mode(mode)
        self.addr, self.port = addr, port
        self.proc = lab.start(ns, name, [sys.executable, os.path.join(E2E_DIR, "fake_apiserver.py"),
                                         "--cert", cert[0], "--key", cert[1], "--listen",
                                         f"{addr}:{port}", "--mode-file", self.mode_file])
        self.procs = [self.proc]
        wait_until(lambda: "listening" in self.proc.log_text(), 10, 0.05,
                   lambda: f"{name} to listen: {self.proc.log_text()!r}")

    def set_mode(self, mode: str) -> None:
        tmp = self.mode_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(mode)
        os.replace(tmp, self.mode_file)  # atomic: a request never reads half a mode

    def url(self, path: str = "/readyz") -> str:
        return f"https://{self.addr}:{self.port}{path}"

    def server_names(self) -> list[str]:
        """The TLS server name (SNI) of each handshake so far, "-" where none was sent."""
        return re.findall(r"^\S+ SNI (\S+)$", self.proc.log_text(), re.MULTILINE)

    def stop(self) -> None:
        self.proc.stop()


def bind_vips(ns: Namespace, vips: Iterable[str] = (VIP4, VIP6), ifname: str = "lo") -> None:
    """An operator's `ip addr add` of each VIP (preferred forever: vipd never removes these).
    vipd binds its VIPs itself; stand-in speakers (ExaBGP, GoBGP) need the lab to do it."""
    for v in vips:
        ns.add_address(ifname, v)


class Vipd:
    """vipd in ns; it binds its VIPs itself. bind: addresses an operator puts on lo first
    (plain `ip addr add`), default none."""

    def __init__(self, lab: Lab, ns: Namespace, config: Any, build_dir: str = BUILD_DIR,
                 name: str = "vipd", bind: Iterable[str] = (), args: Iterable[str] = (),
                 wrapper: Iterable[str] = ()):
        self.lab, self.ns, self.name = lab, ns, name
        self.args = list(args)  # extra command-line arguments (e.g. --router-id)
        # A command prefix that execs vipd inside ns (e.g. setpriv dropping capabilities): the
        # process the lab tracks is then vipd itself.
        self.wrapper = list(wrapper)
        self.build_dir = build_dir
        self.conf = lab.path(f"{name}.yaml")
        text = config if isinstance(config, str) else to_yaml(config) + "\n"
        with open(self.conf, "w") as f:
            f.write(text)
        self.metrics_listen = (config.get("metrics", {}).get("listen") if isinstance(config, dict)
                               else None) or METRICS_LISTEN
        self.socket = config["control"]["socket"] if isinstance(config, dict) \
            else (re.findall(r"socket:\s*\"?([^\"\n]+)", text) or [lab.path(f"{name}.sock")])[0]
        bind_vips(ns, bind)
        self.binary = vipd_binary("vipd", build_dir)
        self.procs: list[Proc] = []
        self.proc = self._start()

    def _start(self) -> Proc:
        name = self.name if not self.procs else f"{self.name}-run{len(self.procs) + 1}"
        proc = self.lab.start(self.ns, name,
                              self.wrapper + [self.binary, "--config", self.conf] + self.args)
        self.procs.append(proc)
        return proc

    def restart(self, sig: int = signal.SIGKILL, timeout: float = 10) -> Proc:
        """Stops the running vipd with sig (SIGKILL: a crash, its addresses stay), waits for it
        and starts a new one with the same config; self.proc (and log_lines) is the new run,
        whose log is a separate file."""
        self.proc.signal(sig)
        self.wait_exit(timeout)
        self.proc = self._start()
        return self.proc

    def wait_exit(self, timeout: float) -> int:
        """Waits for the running vipd to exit by itself; returns its exit code."""
        wait_until(lambda: not self.proc.alive(), timeout, 0.02,
                   f"{self.proc.name} (pid {self.proc.pid}) to exit")
        return self.proc.popen.returncode

    def vipctl(self, *args: str) -> str:
        binary = vipd_binary("vipctl", self.build_dir)
        if not os.access(binary, os.X_OK):
            return f"<vipctl not built at {binary}>"
        p = self.ns.run([binary, "--socket", self.socket] + list(args or ("status",)),
                        check=False, timeout=10)
        return p.stdout + p.stderr

    def status(self) -> dict:
        """`vipctl status --json`, parsed (raises while vipd is not answering)."""
        p = self.ns.run([vipd_binary("vipctl", self.build_dir), "--socket", self.socket,
                         "status", "--json"], timeout=10)
        return json.loads(p.stdout)

    def peer_status(self, addr: str) -> dict:
        for p in self.status()["peers"]:
            if p.get("address") == addr:
                return p
        raise KeyError(f"peer {addr} not in vipd's status")

    def bfd_status(self, addr: str) -> dict:
        """The "bfd" object of the peer at addr in `vipctl status --json` (enabled, state,
        remoteState, diagnostic, discriminators, txIntervalMs, detectionTimeMs, transition and
        packet counters)."""
        return self.peer_status(addr)["bfd"]

    def vip_status(self, prefix: str) -> dict:
        want = ipaddress.ip_network(prefix)
        for v in self.status()["vips"]:
            if ipaddress.ip_network(v["address"]) == want:
                return v
        raise KeyError(f"VIP {prefix} not in vipd's status")

    def wait_vip(self, prefix: str, predicate: Callable[[dict], Any], timeout: float,
                 what: str) -> dict:
        """Polls vip_status(prefix) until predicate(status) holds; returns that status."""
        return wait_until(lambda: (lambda v: v if predicate(v) else None)(self.vip_status(prefix)),
                          timeout, 0.1, lambda: f"{what} (status {self.vip_status(prefix)})")

    def vipctl_run(self, *args: str, wrapper: Iterable[str] = (),
                   timeout: float = 30) -> subprocess.CompletedProcess:
        """vipctl --socket S ARGS in vipd's namespace, as root or through wrapper (as_user());
        the completed process (returncode, stdout, stderr), never raises on a non-zero exit."""
        binary = vipd_binary("vipctl", self.build_dir)
        if wrapper:
            # Another user may not reach the build directory (a clone under a 0700 directory):
            # a copy in the lab's directory (0755) is the same program.
            copy = self.lab.path("vipctl")
            if not os.path.exists(copy):
                shutil.copy2(binary, copy)
            binary = copy
        argv = list(wrapper) + [binary, "--socket", self.socket]
        return self.ns.run(argv + list(args), check=False, timeout=timeout)

    def http(self, path: str, timeout: float = 3) -> tuple[int, str]:
        """GET http://<metrics.listen><path> from inside vipd's namespace: (status, body)."""
        return http_get(self.ns, f"http://{self.metrics_listen}{path}", timeout)

    def metrics(self) -> list[tuple[str, dict, float]]:
        """GET /metrics, parsed: (name, labels, value) per sample."""
        code, body = self.http("/metrics")
        check(code == 200, f"GET /metrics answered {code}: {body[:200]!r}")
        return parse_prometheus(body)

    def metric(self, name: str, **labels: str) -> Optional[float]:
        """The value of the first sample of name whose labels include labels (None: absent)."""
        for n, lab_, v in self.metrics():
            if n == name and all(lab_.get(k) == val for k, val in labels.items()):
                return v
        return None

    def log_lines(self, pattern: str) -> list[str]:
        """Lines of vipd's log matching the regex pattern (case-insensitive)."""
        return [line for line in self.proc.log_text().splitlines()
                if re.search(pattern, line, re.IGNORECASE)]

    def stop(self) -> None:
        self.proc.stop()


class ExabgpSpeaker(Exabgp):
    """Stands in for vipd (harness self-test): dials the peer and announces the VIPs with the
    same next hops and communities vipd would."""

    def __init__(self, lab: Lab, node: Node, local_asn: int, peer_addr: str, peer_asn: int,
                 name: str):
        bind_vips(node.ns)
        super().__init__(lab, node.ns, node.v4, local_asn,
                         [Neighbor(peer_addr, peer_asn, passive=False, next_hop_v6=node.v6)],
                         local_address=node.v4,
                         origins=[Origin(VIP4), Origin(VIP6, next_hop=node.v6)], name=name)


class GobgpSpeaker(Gobgp):
    """Stands in for vipd (harness self-test). Passive, so the peer must dial it (GoBGP's first
    active connect waits 5-10 s)."""

    def __init__(self, lab: Lab, node: Node, local_asn: int, peer_addr: str, peer_asn: int,
                 name: str):
        bind_vips(node.ns)
        super().__init__(lab, node.ns, node.v4, local_asn,
                         [Neighbor(peer_addr, peer_asn, passive=True)],
                         origins=[Origin(VIP4), Origin(VIP6, next_hop=node.v6)], name=name,
                         local_address=node.v4)

    passive = True


def start_speaker(kind: str, lab: Lab, node: Node, local_asn: int, peer_addr: str,
                  peer_asn: int, name: str,
                  vipd_edit: Optional[Callable[[dict, Node], None]] = None):
    """The thing under test on a node: vipd (its config changed by vipd_edit(config, node)
    first), or a stand-in for harness self-tests."""
    if kind == "vipd":
        config = vipd_config(lab, node, local_asn, peer_addr, peer_asn, name)
        if vipd_edit:
            vipd_edit(config, node)
        return Vipd(lab, node.ns, config, name=name)
    if kind == "exabgp":
        return ExabgpSpeaker(lab, node, local_asn, peer_addr, peer_asn, name)
    if kind == "gobgp":
        return GobgpSpeaker(lab, node, local_asn, peer_addr, peer_asn, name)
    raise ValueError(kind)


def speaker_binaries(kind: str) -> list[str]:
    return {"vipd": [], "exabgp": Exabgp.binaries, "gobgp": Gobgp.binaries}[kind]


def speaker_dials(kind: str) -> bool:
    return kind != "gobgp"


def start_fabric_peer(kind: str, lab: Lab, topo: Topology, neighbors: list[Neighbor]):
    """The fabric-side peer on topo.fabric: "bird", "frr", "gobgp" or "exabgp"."""
    f = topo.fabric
    if kind == "bird":
        return Bird(lab, f, topo.fabric_v4, FABRIC_ASN, neighbors, interfaces=[topo.fabric_if])
    if kind == "frr":
        return Frr(lab, f, topo.fabric_v4, FABRIC_ASN, neighbors)
    if kind == "gobgp":
        return Gobgp(lab, f, topo.fabric_v4, FABRIC_ASN, neighbors, local_address=topo.fabric_v4)
    if kind == "exabgp":
        return Exabgp(lab, f, topo.fabric_v4, FABRIC_ASN, neighbors, local_address=topo.fabric_v4)
    raise ValueError(kind)


PEER_CLASSES = {"bird": Bird, "frr": Frr, "gobgp": Gobgp, "exabgp": Exabgp}


# --------------------------------------------------------------------------------------------
# Shared scenarios (tests, demo and self-test all call these; no copies).


def check(cond: bool, msg: str) -> None:
    if not cond:
        raise AssertionError(msg)


def wait_established(peer, addrs: Iterable[str], timeout: float) -> float:
    t0 = time.monotonic()
    for a in addrs:
        wait_until(lambda a=a: peer.neighbor_state(a) == "Established", timeout, 0.2,
                   f"session with {a} Established in the peer's view")
    return time.monotonic() - t0


@dataclass
class EcmpLab:
    lab: Lab
    topo: Topology
    bird: Bird
    speakers: list
    times: dict


def build_ecmp(lab: Lab, speaker_kinds: list[str], timeout: float = 60,
               vipd_edit: Optional[Callable[[dict, Node], None]] = None,
               bird_bfd: Optional[BfdTimers] = None) -> EcmpLab:
    """BIRD fabric (AS 65000) + one speaker per node, each node in its own AS (65001, ...);
    vipd_edit(config, node) changes each vipd's config before it starts. bird_bfd: BIRD runs
    BFD with these timers towards every node (Bird(bfd=)); the vipd side is vipd_edit's.

    Per-node ASNs: BIRD merges eBGP paths from different neighbour ASNs into one multipath kernel
    route when local-pref, AS-path length, origin and MED match (they do: every node sends a
    one-hop AS path with origin IGP and no MED). Per-node ASNs are also how vipd is deployed on
    control-plane nodes, and keep the same-ASN loop check out of the picture.
    """
    t0 = time.monotonic()
    topo = lab.fabric_with_nodes(len(speaker_kinds))
    neighbors = [Neighbor(n.v4, n.asn, passive=speaker_dials(k), name=f"node{n.index}")
                 for n, k in zip(topo.nodes, speaker_kinds)]
    bird = Bird(lab, topo.fabric, topo.fabric_v4, FABRIC_ASN, neighbors, interfaces=[topo.fabric_if],
                bfd=bird_bfd)
    speakers = [start_speaker(k, lab, n, n.asn, topo.fabric_v4, FABRIC_ASN, f"{k}-n{n.index}",
                              vipd_edit)
                for n, k in zip(topo.nodes, speaker_kinds)]
    t_start = time.monotonic()
    want4 = sorted(n.v4 for n in topo.nodes)
    want6 = sorted((n.v6 for n in topo.nodes), key=_addr_key)
    times = {"setup": t_start - t0}
    wait_established(bird, [n.v4 for n in topo.nodes], timeout)
    times["established"] = time.monotonic() - t_start
    wait_until(lambda: topo.fabric.kernel_nexthops(VIP4) == want4, timeout, 0.1,
               lambda: f"fabric kernel ECMP route {VIP4} via {want4} "
               f"(have: {topo.fabric.route_show(VIP4).strip()!r})")
    wait_until(lambda: topo.fabric.kernel_nexthops(VIP6) == want6, timeout, 0.1,
               lambda: f"fabric kernel ECMP route {VIP6} via {want6} "
               f"(have: {topo.fabric.route_show(VIP6).strip()!r})")
    times["ecmp"] = time.monotonic() - t_start
    return EcmpLab(lab, topo, bird, speakers, times)


def ecmp_withdraw_on_stop(e: EcmpLab, index: int = 0, bound: float = 15) -> float:
    """SIGTERMs speaker[index]; returns seconds until its next hop left both fabric routes."""
    node = e.topo.nodes[index]
    t0 = time.monotonic()
    e.speakers[index].stop()
    rest4 = [n.v4 for n in e.topo.nodes if n is not node]
    rest6 = sorted((n.v6 for n in e.topo.nodes if n is not node), key=_addr_key)
    wait_until(lambda: node.v4 not in e.topo.fabric.kernel_nexthops(VIP4), bound, 0.05,
               f"{node.v4} to leave the fabric route for {VIP4}")
    wait_until(lambda: node.v6 not in e.topo.fabric.kernel_nexthops(VIP6), bound, 0.05,
               f"{node.v6} to leave the fabric route for {VIP6}")
    dt = time.monotonic() - t0
    check(e.topo.fabric.kernel_nexthops(VIP4) == sorted(rest4),
          f"after stopping node {node.index}, {VIP4} should be via {rest4}: "
          f"{e.topo.fabric.route_show(VIP4)}")
    check(e.topo.fabric.kernel_nexthops(VIP6) == rest6,
          f"after stopping node {node.index}, {VIP6} should be via {rest6}: "
          f"{e.topo.fabric.route_show(VIP6)}")
    return dt


def time_nexthop(ns: Namespace, prefix: str, hop: str, present: bool, t0: float,
                 timeout: float = 15, interval: float = 0.01) -> float:
    """Polls ns's kernel route for prefix every interval seconds (default 10 ms, plus the ~5 ms
    an `ip route show` takes) until hop is (present=True) or is no longer (False) one of its
    next hops; returns the seconds since t0, a time.monotonic() taken just before the event.
    timeout is a safety net, not the bound under test: callers compare the figure themselves,
    so a slow result is printed before it fails."""
    word = "back in" if present else "gone from"
    wait_until(lambda: (hop in ns.kernel_nexthops(prefix)) == present, timeout, interval,
               lambda: f"{hop} {word} {ns.name}'s kernel route {prefix} "
               f"(have: {ns.route_show(prefix).strip()!r})")
    return time.monotonic() - t0


def bfd_selfcheck(timers: Optional[BfdTimers] = None, name: str = "bfd-selfcheck") -> dict:
    """Harness self-check of the BFD configs, no vipd: BIRD on the fabric (AS 65000) and FRR
    (zebra, bfdd, bgpd) on node 1 (AS 65001) run BFD with timers over their eBGP session.
    Asserts: both see the session Up; FRR's negotiated intervals and multiplier are timers; FRR's
    VIP4 reaches the fabric kernel. Then freezes the node's FRR (SIGSTOP to all three daemons)
    and asserts BIRD logs the detection-time expiry and drops the route within the detection
    time + 300 ms, and that SIGCONT brings BFD, BGP and the route back. Returns the figures
    (seconds): "up", "drop", "expired" (BIRD's log time of the expiry), "back"."""
    timers = timers or BfdTimers()
    out = {}
    with Lab(name) as L:
        topo = L.fabric_with_nodes(1)
        node = topo.nodes[0]
        bird = Bird(L, topo.fabric, topo.fabric_v4, FABRIC_ASN,
                    [Neighbor(node.v4, node.asn, passive=True, name="node1")],
                    interfaces=[topo.fabric_if], bfd=timers)
        cap = BfdCapture(L, topo.fabric, topo.fabric_if)
        frr = Frr(L, node.ns, node.v4, node.asn, [Neighbor(topo.fabric_v4, FABRIC_ASN, passive=False)],
                  origins=[Origin(VIP4)], name="frr-n1", bfd=timers)
        t0 = time.monotonic()
        wait_established(bird, [node.v4], 30)
        wait_until(lambda: bird.bfd_state(node.v4) == "Up", 15, 0.1,
                   lambda: f"BIRD's BFD session to {node.v4} Up (have {bird.bfd_sessions()})")
        wait_until(lambda: frr.bfd_peer_state(topo.fabric_v4) == "up", 15, 0.1,
                   lambda: f"FRR's BFD peer {topo.fabric_v4} up (have {frr.bfd_peers()})")
        time_nexthop(topo.fabric, VIP4, node.v4, True, t0, 30)
        out["up"] = time.monotonic() - t0
        bs, fp = bird.bfd_sessions()[node.v4], frr.bfd_peer(topo.fabric_v4)
        log(f"self-check {timers}: BIRD {bs}; FRR status={fp['status']} "
            f"tx={fp['transmit-interval']} rx={fp['receive-interval']} "
            f"mult={fp['detect-multiplier']} remote tx={fp['remote-transmit-interval']} "
            f"rx={fp['remote-receive-interval']} mult={fp['remote-detect-multiplier']}")
        check((fp["transmit-interval"], fp["receive-interval"], fp["detect-multiplier"]) ==
              (timers.min_tx_ms, timers.min_rx_ms, timers.multiplier),
              f"FRR's BFD timers {fp} are not {timers}")
        check((fp["remote-transmit-interval"], fp["remote-receive-interval"],
               fp["remote-detect-multiplier"]) ==
              (timers.min_tx_ms, timers.min_rx_ms, timers.multiplier),
              f"FRR's view of BIRD's BFD timers {fp} is not {timers}")
        check(bs["timeoutMs"] == timers.detection_ms(timers),
              f"BIRD's detection time {bs['timeoutMs']} ms != {timers.detection_ms(timers)} ms")
        check_bfd_single_hop(cap.from_addr(node.v4), "FRR")
        check_bfd_single_hop(cap.from_addr(topo.fabric_v4), "BIRD", source_port=False)
        last = cap.from_addr(node.v4)[-1]
        check((last["state"], last["minTxMs"], last["minRxMs"], last["multiplier"]) ==
              ("Up", timers.min_tx_ms, timers.min_rx_ms, timers.multiplier),
              f"the capture's last packet from FRR is not Up with {timers}: {last}")

        bound = timers.detection_ms(timers) / 1000 + 0.3
        wall0, t0 = time.time(), time.monotonic()
        for p in frr.procs:
            p.signal(signal.SIGSTOP)
        try:
            out["drop"] = time_nexthop(topo.fabric, VIP4, node.v4, False, t0)
            expired = [t for t, e in bird.bfd_events(node.v4) if e == "expired" and t >= wall0 - 0.01]
            out["expired"] = expired[0] - wall0 if expired else None
        finally:
            for p in frr.procs:
                p.signal(signal.SIGCONT)
        log(f"self-check {timers}: FRR frozen; BIRD's BFD expired after "
            f"{out['expired'] if out['expired'] is None else round(out['expired'], 3)} s, fabric "
            f"dropped the route after {out['drop']:.3f} s (bound {bound:.2f} s)")
        check(out["expired"] is not None, f"BIRD logged no expiry of the session to {node.v4}: "
              f"{bird.bfd_events(node.v4)}")
        check(out["drop"] <= bound, f"fabric dropped the route after {out['drop']:.3f} s, "
              f"more than the detection time + 300 ms ({bound:.2f} s)")
        t0 = time.monotonic()
        wait_until(lambda: bird.bfd_state(node.v4) == "Up"
                   and frr.bfd_peer_state(topo.fabric_v4) == "up", 30, 0.1,
                   lambda: f"BFD Up again (BIRD {bird.bfd_sessions()}, FRR {frr.bfd_peers()})")
        out["back"] = time_nexthop(topo.fabric, VIP4, node.v4, True, t0, 30)
        log(f"self-check {timers}: after SIGCONT, BFD Up and the route back in "
            f"{out['back']:.2f} s")
    return out


@dataclass
class SingleNode:
    lab: Lab
    topo: Topology
    node: Node
    bird: Bird
    vipd: Vipd


def build_single_vipd(lab: Lab, edit: Optional[Callable[[dict, Topology], None]] = None,
                      bind: Iterable[str] = (), bird_dials: bool = False,
                      bird_hold_time: int = 9, idle_nodes: int = 0,
                      after_bird: Optional[Callable[[Bird], None]] = None,
                      bird_peer_asn: Any = None,
                      bird_options: Iterable[str] = ()) -> SingleNode:
    """BIRD fabric (AS 65000) + one vipd node (AS 65001) with lab.vipd_config, changed by
    edit(config, topo) first; bind as for Vipd. BIRD is passive unless bird_dials. idle_nodes
    more nodes (topo.nodes[1:]) run nothing: a BGP peer there refuses connections.
    after_bird(bird) runs between BIRD's start and vipd's. bird_peer_asn (default: the node's
    ASN) and bird_options (extra lines) go into BIRD's protocol for the node (edit must then set
    the matching localAsn). Does not wait for the session."""
    topo = lab.fabric_with_nodes(1 + idle_nodes)
    node = topo.nodes[0]
    bird = Bird(lab, topo.fabric, topo.fabric_v4, FABRIC_ASN,
                [Neighbor(node.v4, bird_peer_asn or node.asn, passive=not bird_dials,
                          name="node1", bird_options=list(bird_options))],
                interfaces=[topo.fabric_if], hold_time=bird_hold_time)
    if after_bird:
        after_bird(bird)
    config = vipd_config(lab, node, node.asn, topo.fabric_v4, FABRIC_ASN, "vipd-n1")
    if edit:
        edit(config, topo)
    vipd = Vipd(lab, node.ns, config, name="vipd-n1", bind=bind)
    return SingleNode(lab, topo, node, bird, vipd)


def peer_scenario(lab: Lab, peer_kind: str, speaker_kind: str, ibgp: bool,
                  timeout: float = 45) -> dict:
    """One speaker on node 1 against a fabric peer of peer_kind, eBGP (65001 -> 65000) or iBGP
    (65000 both). Asserts Established, both VIPs in the peer's RIB with the node's next hops,
    communities, large communities and (iBGP) LOCAL_PREF 100. Returns measured times."""
    topo = lab.fabric_with_nodes(1)
    node = topo.nodes[0]
    local_asn = FABRIC_ASN if ibgp else node.asn
    peer = start_fabric_peer(peer_kind, lab, topo,
                             [Neighbor(node.v4, local_asn, passive=speaker_dials(speaker_kind),
                                       name="node1")])
    start_speaker(speaker_kind, lab, node, local_asn, topo.fabric_v4, FABRIC_ASN,
                  f"{speaker_kind}-n1")
    t0 = time.monotonic()
    wait_established(peer, [node.v4], timeout)
    times = {"established": time.monotonic() - t0}
    for prefix, nh in ((VIP4, node.v4), (VIP6, node.v6)):
        r = wait_until(lambda p=prefix: peer.route(p), timeout, 0.2,
                       f"{prefix} in {peer_kind}'s RIB")
        what = f"{peer_kind} {'iBGP' if ibgp else 'eBGP'} route {prefix}"
        log(f"{what}: nexthops={r['nexthops']} communities={r['communities']} "
            f"large={r['largeCommunities']} localPref={r['localPref']} asPath={r['asPath']!r}")
        check(nh in r["nexthops"], f"{what}: next hop {r['nexthops']} should contain {nh}")
        check(r["communities"] == COMMUNITIES,
              f"{what}: communities {r['communities']} != {COMMUNITIES}")
        check(r["largeCommunities"] == LARGE_COMMUNITIES,
              f"{what}: large communities {r['largeCommunities']} != {LARGE_COMMUNITIES}")
        if ibgp:
            check(r["localPref"] == 100, f"{what}: LOCAL_PREF {r['localPref']} != 100")
            check(r["asPath"].strip() == "", f"{what}: iBGP AS_PATH should be empty: {r['asPath']!r}")
        else:
            check(str(node.asn) in r["asPath"], f"{what}: AS_PATH {r['asPath']!r} lacks {node.asn}")
    times["routes"] = time.monotonic() - t0
    return times


# What AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer print (CI builds vipd with
# -Db_sanitize=address,undefined): any of it in a process log fails the test, even a test whose
# own assertions passed.
_SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                      "SUMMARY: UndefinedBehaviorSanitizer", "SUMMARY: AddressSanitizer")
SANITIZER_REPORTS: list[str] = []


def sanitizer_report(text: str) -> str:
    """The lines around the first sanitizer report in a process log, or ""."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if any(m in line for m in _SANITIZER_MARKERS):
            return "\n".join(lines[max(0, i - 2):i + 40])
    return ""


def main(test: Callable[[], None], binaries: Iterable[str] = (), vipd: bool = False,
         root: bool = True) -> None:
    """Runs test() and exits 0 (pass), 1 (fail) or 77 (skip: only outside CI)."""
    t0 = time.monotonic()
    try:
        require(binaries, vipd=vipd, root=root)
        test()
        for lab_ in list(_LABS):
            lab_.cleanup()
        if SANITIZER_REPORTS:
            for r in SANITIZER_REPORTS:
                print(f"----- sanitizer report -----\n{r}", flush=True)
            raise AssertionError(f"{len(SANITIZER_REPORTS)} process(es) reported a sanitizer "
                                 f"error (see above)")
    except Skip as e:
        print(f"SKIP: {e}", flush=True)
        sys.exit(SKIP)
    except (AssertionError, TimeoutError, RuntimeError, subprocess.TimeoutExpired, OSError) as e:
        traceback.print_exc()
        print(f"FAIL: {e}", flush=True)
        sys.exit(1)
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        print(f"FAIL (unexpected {type(e).__name__}): {e}", flush=True)
        sys.exit(1)
    print(f"PASS ({time.monotonic() - t0:.1f}s)", flush=True)
    sys.exit(0)
