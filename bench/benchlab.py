"""The benchmark's lab: a BIRD fabric router with 3-way ECMP (L4 multipath hash) towards three
speaker nodes, an HTTP responder on the VIP in each node (or, with apiservers, a stand-in
kube-apiserver per node that is both the health check's target and the service behind VIP:6443), a client namespace behind the fabric,
a route monitor on the fabric's kernel table, process figures from /proc, and a full-table
feeder. Built from tests/e2e/lab/ (namespaces, peers, cleanup by PID).

Addresses (TEST-NET only): fabric br0 192.0.2.1, node i 192.0.2.(10+i); client 198.51.100.2
behind the fabric's 198.51.100.1; VIPs 203.0.113.10/32 and 2001:db8:ffff::10/128.
"""
from __future__ import annotations

import datetime
import fcntl
import os
import select
import signal
import socket
import struct
import sys
import threading
import time
from typing import Callable, Optional

import speakers
from speakers import lab

import hostile_peer as hp  # tests/e2e, on sys.path through speakers

HERE = os.path.dirname(os.path.abspath(__file__))

VIP4_ADDR = lab.VIP4.split("/")[0]
CLIENT_V4, CLIENT_GW = "198.51.100.2", "198.51.100.1"
HTTP_PORT = 80
APISERVER_PORT = 6443


class NodeApiserver:
    """bench_apiserver.py in a node's namespace on 0.0.0.0:6443 with a kubeadm-shaped serving
    certificate that also names the VIP (as kubeadm's does with the VIP as controlPlaneEndpoint).
    kill() is SIGKILL by PID: the kernel closes its connections and refuses its port."""

    def __init__(self, L: lab.Lab, node: lab.Node, ca: tuple[str, str]):
        self.L, self.node = L, node
        self.base = f"apiserver-n{node.index}"
        self.cert = lab.make_server_cert(L, ca, self.base, node_ip=VIP4_ADDR)
        self.mode_file = L.path(f"{self.base}.mode")
        self.set_mode("ok")
        self.runs = 0
        self.proc: Optional[lab.Proc] = None
        self.start()

    def start(self) -> None:
        self.runs += 1
        self.proc = self.L.start(self.node.ns, f"{self.base}-r{self.runs}", [
            sys.executable, os.path.join(HERE, "bench_apiserver.py"), "--cert", self.cert[0],
            "--key", self.cert[1], "--listen", f"0.0.0.0:{APISERVER_PORT}",
            "--mode-file", self.mode_file, "--node", f"node{self.node.index}"])
        lab.wait_until(lambda: "listening" in self.proc.log_text(), 10, 0.02,
                       lambda: f"{self.base} to listen: {self.proc.log_text()!r}")

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)

    def reap(self) -> None:
        self.proc.popen.wait(10)

    def set_mode(self, mode: str) -> None:
        tmp = self.mode_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(mode)
        os.replace(tmp, self.mode_file)


class RouteMonitor:
    """`ip -tshort -o monitor route` in the fabric namespace: every change of the fabric's kernel
    route to the IPv4 VIP with the wall-clock time `ip` received it from the kernel (it stamps and
    flushes each message), so a figure does not depend on a polling interval."""

    def __init__(self, L: lab.Lab, ns: lab.Namespace, addr: str = VIP4_ADDR):
        self.addr = addr
        self.proc = L.start(ns, "route-monitor", ["ip", "-tshort", "-o", "monitor", "route"])
        self._events: list[tuple[float, frozenset]] = []
        self._offset = 0
        self._partial = ""
        time.sleep(0.2)  # subscribed before anything is measured

    @property
    def events(self) -> list[tuple[float, frozenset]]:
        """Every change seen so far: (wall-clock time, next hops). Reads what `ip` wrote since the
        last look, so a test that checks the list after a scenario sees the whole scenario."""
        self._read()
        return self._events

    def _read(self) -> None:
        with open(self.proc.log_path, errors="replace") as f:
            f.seek(self._offset)
            data = f.read()
            self._offset = f.tell()
        lines = (self._partial + data).split("\n")
        self._partial = lines.pop()
        for line in lines:
            ev = self._parse(line)
            if ev:
                self._events.append(ev)

    def _parse(self, line: str) -> Optional[tuple[float, frozenset]]:
        if not line.startswith("["):
            return None
        stamp, _, rest = line[1:].partition("] ")
        words = rest.replace("\\", " ").split()
        deleted = bool(words) and words[0] == "Deleted"
        if deleted:
            words = words[1:]
        if not words or words[0] not in (self.addr, f"{self.addr}/32") or "table" in words:
            return None
        t = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%f").timestamp()
        hops = frozenset() if deleted else frozenset(
            words[i + 1] for i, w in enumerate(words[:-1]) if w == "via")
        return t, hops

    def wait(self, pred: Callable[[frozenset], bool], since: float, timeout: float,
             what: str) -> float:
        """Wall-clock time of the first route change at or after since (time.time()) whose next
        hops satisfy pred; raises TimeoutError after timeout seconds."""
        deadline = time.monotonic() + timeout
        while True:
            self._read()
            for t, hops in self.events:
                if t >= since and pred(hops):
                    return t
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what}: no such route change in {timeout:.0f} s; changes "
                                   f"seen: {[(round(t - since, 3), sorted(h)) for t, h in self.events if t >= since]}")
            time.sleep(0.005)

    def timeline(self, since: float, until: float) -> list[tuple[float, int]]:
        """(seconds after since, number of next hops) for each change in [since, until]."""
        self._read()
        return [(round(t - since, 4), len(h)) for t, h in self.events if since <= t <= until]


def rss_kib(pids: list[int], field: str = "VmRSS") -> int:
    """Resident memory of pids (field "RssAnon": only the anonymous part, i.e. without the
    pages of the program and its shared libraries)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith(field + ":"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def cpu_seconds(pids: list[int]) -> float:
    """CPU time of the live threads of pids (schedstat: nanoseconds, not 10 ms ticks)."""
    total = 0
    for pid in pids:
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for t in tasks:
            try:
                with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                    total += int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                pass
    return total / 1e9


class Fabric:
    """The benchmark topology with `kind` on all three nodes. bfd: the same timers on the fabric
    and on every speaker (None: hold timer only)."""

    def __init__(self, L: lab.Lab, kind: str, hold_s: int, bfd: Optional[lab.BfdTimers],
                 build_dir: str, responders: bool = True, apiservers: bool = False):
        """apiservers: a NodeApiserver per node (self.apiservers) is the service behind the VIP
        (clients: HTTPS to VIP:6443) and gates every speaker (speakers.Health)."""
        self.L, self.kind = L, kind
        t0 = time.monotonic()
        self.topo = L.fabric_with_nodes(3)
        self.fabric, self.nodes = self.topo.fabric, self.topo.nodes
        # L4 hash: each client connection is its own flow, spread over the three nodes.
        self.fabric.sysctl("net.ipv4.fib_multipath_hash_policy", "1")
        self.apiservers: list[NodeApiserver] = []
        health = None
        if apiservers:
            self.ca = lab.make_ca(L, "cluster-ca")
            self.apiservers = [NodeApiserver(L, n, self.ca) for n in self.nodes]
            health = speakers.Health(self.ca[0])
        if responders or apiservers:
            self.client = add_client(L, self.topo, http=not apiservers)
        cls = speakers.KINDS[kind]
        neighbors = [lab.Neighbor(n.v4, n.asn, passive=cls.dials, name=f"node{n.index}")
                     for n in self.nodes]
        self.bird = lab.Bird(L, self.fabric, lab.FABRIC_V4, lab.FABRIC_ASN, neighbors,
                             interfaces=[self.topo.fabric_if], bfd=bfd)
        self.monitor = RouteMonitor(L, self.fabric)
        self.speakers = [speakers.make(kind, L, n, hold_s, bfd, build_dir, health=health)
                         for n in self.nodes]
        for s in self.speakers:
            s.start()
        self.wait_all(60, "all three speakers announced")
        self.setup_s = time.monotonic() - t0

    def hops(self) -> list[str]:
        return self.fabric.kernel_nexthops(lab.VIP4)

    def wait_all(self, timeout: float, what: str) -> None:
        want = sorted(n.v4 for n in self.nodes)
        lab.wait_until(lambda: self.hops() == want, timeout, 0.05,
                       lambda: f"{self.kind}: {what}: fabric route {lab.VIP4} via {want} "
                       f"(have {self.fabric.route_show(lab.VIP4).strip()!r}; BIRD: "
                       f"{[self.bird.neighbor_state(n.v4) for n in self.nodes]})")

    def wait_gone(self, node: lab.Node, since: float, timeout: float, what: str) -> float:
        """Seconds from since (time.time()) until node's next hop left the fabric route."""
        return self.monitor.wait(lambda h: node.v4 not in h, since, timeout, what) - since

    def wait_back(self, node: lab.Node, since: float, timeout: float, what: str) -> float:
        return self.monitor.wait(lambda h: node.v4 in h, since, timeout, what) - since

    def bird_ready_for(self, node: lab.Node, timeout: float = 10) -> None:
        """After a session went down, BIRD idles for its error wait (1-2 s here) before it takes
        a connection again; a start-up figure should not include that."""
        lab.wait_until(lambda: self.bird.neighbor_state(node.v4) in ("Active", "Connect",
                                                                     "Passive"),
                       timeout, 0.05, lambda: f"BIRD's session to {node.v4} ready (Active or "
                       f"Passive) again (state {self.bird.neighbor_state(node.v4)!r})")

    def run_load(self, rate: float, duration: float, timeout: float, out: str) -> lab.Proc:
        """With apiservers: HTTPS to VIP:6443, verified against the cluster CA."""
        if self.apiservers:
            return run_load(self.L, self.client, rate, duration, timeout, out,
                            port=APISERVER_PORT, ca_file=self.ca[0])
        return run_load(self.L, self.client, rate, duration, timeout, out)


def add_client(L: lab.Lab, topo: lab.Topology, http: bool = True) -> lab.Namespace:
    """Clients of the VIP: a client namespace behind the fabric (198.51.100.2 via 198.51.100.1)
    and (http) on every node of topo an HTTP responder on the VIP that answers with the node's
    name. Returns the client namespace (run_load's)."""
    client = L.namespace("client")
    client.add_veth("eth0", topo.fabric, "cl0")
    topo.fabric.add_address("cl0", f"{CLIENT_GW}/24")
    client.add_address("eth0", f"{CLIENT_V4}/24")
    client.ip("route", "add", "default", "via", CLIENT_GW)
    for n in topo.nodes:
        n.ns.ip("route", "add", "198.51.100.0/24", "via", lab.FABRIC_V4)
        if not http:
            continue
        L.start(n.ns, f"http-n{n.index}", [sys.executable,
                os.path.join(HERE, "http_responder.py"), VIP4_ADDR, str(HTTP_PORT),
                f"node{n.index}"])
    return client


def run_load(L: lab.Lab, client: lab.Namespace, rate: float, duration: float, timeout: float,
             out: str, port: int = HTTP_PORT, ca_file: Optional[str] = None,
             path: Optional[str] = None) -> lab.Proc:
    """load_client.py in client: RATE new connections a second to the VIP for DURATION s, each
    bounded by TIMEOUT s (HTTPS verified against ca_file when given); every request's outcome
    lands in out (JSON) when it exits."""
    return L.start(client, f"load-{os.path.basename(out)}", [
        sys.executable, os.path.join(HERE, "load_client.py"), VIP4_ADDR, str(port),
        str(rate), str(duration), str(timeout), out] + ([ca_file] if ca_file else []) +
        ([path] if ca_file and path else []))


class Feeder:
    """A BGP peer of our own (tests/e2e/hostile_peer.py's codec) in the fabric namespace that
    sends `prefixes` IPv4 /24s (1,000 per UPDATE) to one speaker and keeps the session up with
    KEEPALIVEs while the speaker digests them."""

    def __init__(self, ns: lab.Namespace, speaker: speakers.Speaker, dials: bool):
        self.ns, self.speaker = ns, speaker
        self.params = hp.Params(asn=lab.FABRIC_ASN, router_id=lab.FABRIC_V4,
                                peer_asn=speaker.node.asn, next_hop=lab.FABRIC_V4, hold=90,
                                timeout=30)
        self.dials = dials
        self.listener = None if dials else hp.Listener(lab.FABRIC_V4, 179, netns=ns.name)
        self.conn: Optional[hp.Conn] = None
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def connect(self, timeout: float) -> None:
        if self.dials:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    sock = _connect_in(self.ns.name, self.speaker.node.v4, 179, lab.FABRIC_V4)
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
            self.conn = hp.Conn(sock, self.speaker.node.v4)
        else:
            self.conn = self.listener.accept(timeout)
        self.conn.establish(self.params)

    def keepalive_forever(self) -> None:
        def run() -> None:
            while not self._stop.is_set() and self.conn.closed_at is None:
                try:
                    self.conn.send(hp.keepalive(), "KEEPALIVE")
                    self.conn.poll(1.0)
                    self.conn.received.clear()  # the speaker's own UPDATEs and KEEPALIVEs
                except OSError:
                    return
        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    def feed(self, prefixes: int) -> float:
        """Sends the table (before keepalive_forever(): one writer on the socket at a time);
        returns the seconds the send took, paced by the speaker's TCP window."""
        data = b"".join(hp.flood_updates(prefixes, self.params.attrs(), first="16.0.0.0"))
        t0 = time.monotonic()
        view = memoryview(data)
        while view:
            _, w, _ = select.select([], [self.conn.sock], [], 60)
            if not w:
                raise TimeoutError(f"{self.speaker.name} stopped reading the table for 60 s "
                                   f"({len(data) - len(view)} of {len(data)} bytes sent)")
            try:
                view = view[self.conn.sock.send(view[:1 << 20]):]
            except BlockingIOError:
                continue
        return time.monotonic() - t0

    def backlog(self) -> int:
        """Bytes of the table not yet read by the speaker's process: our unsent and unacked
        bytes plus the speaker's socket receive queue (`ss` in its namespace)."""
        outq = struct.unpack("i", fcntl.ioctl(self.conn.sock.fileno(), 0x5411,  # SIOCOUTQ
                                              b"\0" * 4))[0]
        out = self.speaker.node.ns.run(["ss", "-tnH", "state", "established",
                                        "( sport = :179 or dport = :179 )"], check=False).stdout
        recvq = sum(int(line.split()[0]) for line in out.splitlines() if line.split())
        return outq + recvq

    def up(self) -> bool:
        return self.conn is not None and self.conn.closed_at is None

    def close(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(3)
        if self.conn:
            self.conn.close()
        if self.listener:
            self.listener.close()


def _connect_in(netns: str, addr: str, port: int, source: str) -> socket.socket:
    """A TCP connection made from inside netns."""
    s = hp.tcp_socket_in(netns)
    s.settimeout(3)
    s.bind((source, 0))
    s.connect((addr, port))
    return s
