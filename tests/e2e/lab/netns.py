"""Network namespaces (Namespace: links, addresses, kernel routes) and the Lab that owns them
with its temp dir and daemons, cleaning up on every exit path (the Lab context manager, atexit
and SIGTERM/SIGINT/SIGHUP), and the standard fabric-with-nodes topology (Node, Topology).
"""

from __future__ import annotations

import atexit
import contextlib
import ipaddress
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Callable, Optional

from .base import FABRIC_ASN, FABRIC_V4, FABRIC_V6, Skip, log, run
from .checks import SANITIZER_REPORTS, sanitizer_report, wait_until
from .process import Proc


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


def _addr_key(a: str):
    try:
        ip = ipaddress.ip_address(a)
        return (ip.version, int(ip))
    except ValueError:
        return (9, 0)


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
        # Configs first, then the logs, the last started last: meson prints only the end of a
        # failed test's output, and the processes' last lines are what explains a failure.
        for fn in sorted(os.listdir(self.tmp)) if os.path.isdir(self.tmp) else []:
            if fn.endswith(".conf") or fn.endswith(".toml") or fn.endswith(".yaml"):
                print(f"----- {fn} -----")
                with open(self.path(fn), errors="replace") as f:
                    print(f.read().rstrip())
        for p in self.procs:
            p.dump_log(tail)
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
