#!/usr/bin/env python3
"""e2e: the real vipd against a hostile Kubernetes API (issue 41, part 5: the API is never in
the announce path, so what it does must never change the route, end, spin, flood the log of or
grow vipd). e2e_hostile_api holds kube/'s client to that through kube_probe; this runs vipd.

One vipd node (AS 65001, mode standalone) and BIRD (AS 65000) sending every path back (ADD-PATH),
so vipd has the fabric's view and the withdraw guard can count. vipd's config has

    kubernetes: {kubeconfig: <https://192.0.2.11:6443, the test's CA, a token>, nodeName: node1}

and the API is hostile_api.py listening on the node's own address in the node's namespace (as
the DaemonSet talks to its node's apiserver at status.hostIP). The phases, one after another:
1. refused: nothing listens on 6443;
2. garbage: invalid JSON for the Node list, 500 on every status write and Event;
3. drip: every answer one byte every 200 ms (a request ends at the client's 15 s deadline);
4. hostile, in parts (each lasts WINDOW_S after the first request it serves):
   a. the list answers, every watch misbehaves, in turn: an endless stream of another node's
      object flipping vipd.io/withdraw (never this node's: that would be a real request),
      invalid JSON, a Content-Length of 100 MiB, a line that never ends, 429 with Retry-After;
      the status writes get 429 with Retry-After, an endless chunked body, 500 (the link is
      backed off to 5-10 s by then, so a window sees the first two or three of each);
   b. gone: every watch 410 Gone (as its status, then as an ERROR event), every list answered:
      the relists back off (at most GONE_LISTS_MAX lists in WINDOW_S);
   c. status 404 / create 409: the status subresource is missing (PATCH 404) and the object
      exists (POST 409), as with a VipdNode CRD without its status subresource: the writes back
      off (at most STATUS_404_MAX PATCHes in WINDOW_S);
   d. short watches: every watch sends one event (this node, unchanged) and ends cleanly: the
      watches back off too (at most SHORT_WATCHES_MAX in WINDOW_S);
   e. endless: every watch streams this node's unchanged Node every 2 ms with bookmarks;
5. well-behaved: the Node without annotation, a watch held open, 404 then create then status
   patches accepted: within RECOVER_S vipd writes its VipdNode status (a PATCH to
   .../vipdnodes/node1/status whose status.vips[0].announced is true) and `vipctl status` says
   connected;
6. the Node asks for a withdrawal (vipd.io/withdraw: "test", sent on the open watch): this node
   is the only announcer the fabric holds, so the guard refuses; an Event WithdrawRefused is
   POSTed, status says withdrawRefused, the route stays; the annotation removed, the refusal
   goes.

Asserted across phases 1 to 4, and through 6 for the route: the fabric's kernel route to both
VIPs stays via node 1, with no change at all (`ip monitor route` in the fabric for VIP4, and
BIRD's path from node 1 keeps its time); vipd never exits and answers `vipctl status` in every
phase with a kubernetes block that says NOT CONNECTED and the last error; vipd's log has at most
LOG_LINES_MAX lines mentioning kubernetes over phases 1 to 4 (the link logs a change of health
once); vipd's RSS grows less than RSS_GROWTH_MIB from the end of phase 1 to the end of phase 4
(more allowed under AddressSanitizer); vipd's CPU stays under CPU_SHARE_MAX of one core in each
of phases 1 to 4 and under CPU_TOTAL_MAX over them all. Prints the figures per phase.
"""
import json
import os
import sys
import threading
import time
from typing import Callable, Optional

import hostile_api as ha
import lab
from test_hostile_api import kubeconfig, sanitized

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(lab.E2E_DIR)), "bench"))
import benchlab  # noqa: E402  (RouteMonitor: `ip monitor route` on the fabric)

NODE = "node1"
OTHER = "node2"
TOKEN = "hostile-vipd-token"
PORT = 6443
PHASE_S = {"refused": 8, "garbage": 8, "drip": 18}
WINDOW_S = 12          # each part of phase 4 runs this long after its first request
# ... which comes within two of the link's longest backoffs (10 s each) + margin: after a
# failed watch vipd watches again from its resourceVersion first, and lists only once that
# watch is answered 410 Gone (CI under AddressSanitizer took longer than 15 s for the two).
PART_WAIT_S = 35
# BIRD's time of the path moves by a millisecond now and then with nothing changed (.821 ->
# .822 was seen; as lab.bird_since_delta says of sessions); a change is a new path, later.
BIRD_SINCE_SLACK_S = 0.5
RECOVER_S = 30         # phase 5: the status written and connected within this
REFUSE_S = 15          # phase 6: the refusal Event within this
# Bounds on what vipd asks of an API that misbehaves in a loop (phase 4 b-d). With the link's
# backoff (0.5 s doubling to 10 s, jittered down to half) a loop of failures makes at most
# about five tries in 12 s from a standing start, and fewer from where phase 4a leaves it.
GONE_LISTS_MAX = 8
STATUS_404_MAX = 12    # each try is a PATCH, a create, and a PATCH again
SHORT_WATCHES_MAX = 12
LOG_LINES_MAX = 12     # lines mentioning kubernetes over phases 1-4, the start's line included
RSS_GROWTH_MIB = 4
# AddressSanitizer's quarantine (quarantine_size_mb=16 under scripts/dev.sh) keeps freed TLS
# buffers and 4 MiB bodies resident (+16.8 MiB measured, from 265 MiB); the plain build's bound
# (+0.7 MiB measured, from 12.7 MiB) is what shows vipd's memory flat.
ASAN_RSS_ALLOWANCE_MIB = 40
CPU_SHARE_MAX = 0.20   # of one core, in each phase of 1-4 (plain build: at most 2.4%, endless)
CPU_TOTAL_MAX = 0.05   # of one core, over phases 1-4 (plain build: 0.6%)
# Under AddressSanitizer at -O0 (CI's build) vipd costs several times the CPU: about 2% idle
# (the status read every half second), 17 to 23% parsing the endless phase's 500 events a
# second, 4.5% over phases 1-4. Both bounds double; a loop (44% and 58% of a core in the plain build before
# the fixes) is caught by the request counts of phase 4 whatever the build.
ASAN_CPU_FACTOR = 2


class Api:
    """What the hostile API answers in each phase (hostile_api.HostileApi runs it, one thread per
    connection). Records every request with the phase and what it was served."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.phase = "refused"
        self.rv = 1000
        self.annotation: Optional[str] = None
        self.created = False
        self.turn: dict[str, int] = {}
        self.log: list[tuple[float, str, ha.Request, str]] = []

    def set_phase(self, phase: str) -> None:
        with self.lock:
            self.phase = phase

    def next_rv(self) -> str:
        with self.lock:
            self.rv += 1
            return str(self.rv)

    def next_turn(self, key: str) -> int:
        with self.lock:
            n = self.turn.get(key, 0)
            self.turn[key] = n + 1
            return n

    def note(self, phase: str, req: ha.Request, what: str) -> None:
        with self.lock:
            self.log.append((time.monotonic(), phase, req, what))

    def served(self, phase: str, kind: Optional[str] = None) -> list[tuple[float, ha.Request, str]]:
        with self.lock:
            return [(t, r, w) for t, p, r, w in self.log
                    if p == phase and (kind is None or kind_of(r) == kind)]

    def __call__(self, api: ha.HostileApi, conn, req: ha.Request) -> None:
        with self.lock:
            phase = self.phase
        getattr(self, "_" + phase.replace("-", "_"))(api, conn, req, phase, kind_of(req))

    # --- 2: garbage
    def _garbage(self, api, conn, req, phase, kind) -> None:
        if kind == "list":
            self.note(phase, req, "invalid JSON")
            ha.send(conn, "200 OK", b'{"kind":"NodeList","items":[{')
        elif kind == "watch":
            self.note(phase, req, "invalid JSON")
            ha.start_chunked(conn)
            ha.chunk(conn, b'{"type":"MODIFIED","object":{"kind":"Node"\n')
            ha.chunk(conn, b"\x00\xff not json at all\n")
        else:
            self.note(phase, req, "500")
            self._error_500(api, conn)

    # --- 3: a slow drip of every answer, the status line included
    def _drip(self, api, conn, req, phase, kind) -> None:
        self.note(phase, req, "drip")
        body = ha.node_list(NODE, self.next_rv()) if kind == "list" else b"{}"
        answer = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Padding: {'y' * 64}"
                  f"\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
        for b in answer:  # about 100 bytes: 20 s, longer than the client's 15 s deadline
            if not ha.sleep_or_stop(api, 0.2):
                return
            conn.sendall(bytes([b]))

    # --- 4a: the list answers; each watch and status write misbehaves in turn
    def _hostile(self, api, conn, req, phase, kind) -> None:
        if kind == "list":
            self.note(phase, req, "node list")
            ha.send(conn, "200 OK", ha.node_list(NODE, self.next_rv()))
        elif kind == "watch":
            ways = [self._other_node, self._invalid_line, self._huge_length, self._endless_line,
                    self._too_many]
            way = ways[self.next_turn("watch") % len(ways)]
            self.note(phase, req, way.__name__.strip("_"))
            way(api, conn)
        elif kind == "status":
            ways = [self._too_many, self._huge_chunked, self._error_500]
            way = ways[self.next_turn("status") % len(ways)]
            self.note(phase, req, way.__name__.strip("_"))
            way(api, conn)
        else:
            self.note(phase, req, "500")
            self._error_500(api, conn)

    def _other_node(self, api, conn) -> None:
        """Another node's object, its withdraw annotation flipping every 2 ms, until vipd goes."""
        ha.start_chunked(conn)
        while ha.sleep_or_stop(api, 0.002):
            rv = self.next_rv()
            ha.chunk(conn, ha.event("MODIFIED", ha.node(
                OTHER, rv, withdraw="flip" if int(rv) % 2 else None)))

    @staticmethod
    def _endless_line(api, conn) -> None:
        ha.start_chunked(conn)
        ha.chunk(conn, b'{"type":"MODIFIED","object":{"metadata":{"annotations":{"x":"')
        while ha.sleep_or_stop(api, 0.001):
            ha.chunk(conn, b"z" * 8192)

    @staticmethod
    def _huge_length(api, conn) -> None:
        ha.send(conn, "200 OK", b"", length=100 * 2**20)
        blob = b"x" * 65536
        while not api.stopping:
            conn.sendall(blob)

    @staticmethod
    def _huge_chunked(api, conn) -> None:
        ha.start_chunked(conn)
        blob = b"[" + b"1," * 32767
        while not api.stopping:
            ha.chunk(conn, blob)

    @staticmethod
    def _invalid_line(api, conn) -> None:
        ha.start_chunked(conn)
        ha.chunk(conn, b"\x00\xff not json at all\n")
        ha.sleep_or_stop(api, 1)

    @staticmethod
    def _too_many(api, conn) -> None:
        ha.send(conn, "429 Too Many Requests", ha.status_body(429, "TooManyRequests", "slow down"),
                headers=("Retry-After: 3",))

    @staticmethod
    def _error_500(api, conn) -> None:
        ha.send(conn, "500 Internal Server Error",
                ha.status_body(500, "InternalError", "etcd is sad"))

    # --- 4b: every watch 410 Gone
    def _gone(self, api, conn, req, phase, kind) -> None:
        if kind == "list":
            self.note(phase, req, "node list")
            ha.send(conn, "200 OK", ha.node_list(NODE, self.next_rv()))
        elif kind == "watch":
            if self.next_turn("gone") % 2 == 0:
                self.note(phase, req, "410 status")
                ha.send(conn, "410 Gone",
                        ha.status_body(410, "Expired", "too old resource version"))
            else:
                self.note(phase, req, "410 event")
                ha.start_chunked(conn)
                ha.chunk(conn, ha.event("ERROR", {"kind": "Status", "code": 410,
                                                  "reason": "Expired",
                                                  "message": "too old resource version"}))
        else:
            self.note(phase, req, "429")
            self._too_many(api, conn)

    # --- 4c: the status subresource missing, the object there
    def _status_404(self, api, conn, req, phase, kind) -> None:
        if kind == "status":
            self.note(phase, req, "404")
            ha.send(conn, "404 Not Found", ha.status_body(404, "NotFound",
                                                          "the server could not find the "
                                                          "requested resource"))
        elif kind == "create":
            self.note(phase, req, "409")
            ha.send(conn, "409 Conflict", ha.status_body(409, "AlreadyExists",
                                                         f'vipdnodes.vipd.io "{NODE}" already '
                                                         f'exists'))
        else:
            self._quiet(api, conn, req, phase, kind)

    def _quiet(self, api, conn, req, phase, kind) -> None:
        """The list, and a watch that stays open without an event until the phase ends."""
        if kind == "list":
            self.note(phase, req, "node list")
            ha.send(conn, "200 OK", ha.node_list(NODE, self.next_rv()))
        elif kind == "watch":
            self.note(phase, req, "quiet watch")
            ha.start_chunked(conn)
            while self.phase == phase and ha.sleep_or_stop(api, 0.1):
                pass
            ha.end_chunked(conn)
        else:
            self.note(phase, req, "500")
            self._error_500(api, conn)

    # --- 4d: every watch one event, then its end
    def _short_watches(self, api, conn, req, phase, kind) -> None:
        if kind == "watch":
            self.note(phase, req, "one event")
            ha.start_chunked(conn)
            ha.chunk(conn, ha.event("MODIFIED", ha.node(NODE, self.next_rv())))
            ha.end_chunked(conn)
        else:
            self._quiet(api, conn, req, phase, kind)

    # --- 4e: every watch an endless stream of this node, unchanged, and bookmarks
    def _endless(self, api, conn, req, phase, kind) -> None:
        if kind != "watch":
            self._quiet(api, conn, req, phase, kind)
            return
        self.note(phase, req, "endless")
        ha.start_chunked(conn)
        while self.phase == phase and ha.sleep_or_stop(api, 0.002):
            rv = self.next_rv()
            if int(rv) % 50 == 0:
                ha.chunk(conn, ha.event("BOOKMARK", {"kind": "Node",
                                                     "metadata": {"resourceVersion": rv}}))
            else:
                obj = ha.node(NODE, rv)
                obj["metadata"]["labels"] = {"flip": str(int(rv) % 2)}
                ha.chunk(conn, ha.event("MODIFIED", obj))
        ha.end_chunked(conn)

    # --- 5 and 6: a well-behaved API; the Node's annotation is self.annotation
    def _happy(self, api, conn, req, phase, kind) -> None:
        if kind == "list":
            self.note(phase, req, "node list")
            ha.send(conn, "200 OK", ha.node_list(NODE, self.next_rv(), withdraw=self.annotation))
        elif kind == "watch":
            self.note(phase, req, "watch")
            ha.start_chunked(conn)
            sent = self.annotation
            while self.phase in ("happy", "withdraw") and ha.sleep_or_stop(api, 0.05):
                if self.annotation != sent:
                    sent = self.annotation
                    ha.chunk(conn, ha.event("MODIFIED", ha.node(NODE, self.next_rv(),
                                                                withdraw=sent)))
            ha.end_chunked(conn)
        elif kind == "status" and not self.created:
            self.note(phase, req, "404")
            ha.send(conn, "404 Not Found", ha.status_body(404, "NotFound", "vipdnodes not found"))
        elif kind == "create":
            self.created = True
            self.note(phase, req, "201")
            ha.send(conn, "201 Created", req.body)
        elif kind == "event":
            self.note(phase, req, "201")
            ha.send(conn, "201 Created", req.body)
        else:
            self.note(phase, req, "200")
            ha.send(conn, "200 OK", req.body)

    _withdraw = _happy  # 6: the same API; the Node's annotation changes


def kind_of(req: ha.Request) -> str:
    if req.method == "GET":
        return "watch" if req.watch else "list"
    if req.path == f"/apis/vipd.io/v1alpha1/vipdnodes/{NODE}/status":
        return "status"
    if req.path == "/apis/vipd.io/v1alpha1/vipdnodes":
        return "create"
    if req.path == "/api/v1/namespaces/default/events":
        return "event"
    return "other"


class Invariants:
    """What holds across the phases, checked every SAMPLE_S: vipd alive and answering status,
    both VIPs via node 1 in the fabric's kernel. Keeps the link's errors seen."""

    SAMPLE_S = 0.5

    def __init__(self, vipd: lab.Vipd, fabric: lab.Namespace, node: lab.Node):
        self.vipd, self.fabric, self.node = vipd, fabric, node
        self.errors: list[str] = []
        self.samples = 0

    def hold(self, seconds: float, until: Callable[[], bool] = lambda: False) -> None:
        """Checks the invariants for seconds (or until until() holds, checked each sample)."""
        end = time.monotonic() + seconds
        while time.monotonic() < end and not until():
            self.sample()
            time.sleep(self.SAMPLE_S)

    def sample(self) -> dict:
        self.samples += 1
        lab.check(self.vipd.proc.alive(), f"vipd exited ({self.vipd.proc.popen.returncode})")
        for prefix, hop in ((lab.VIP4, self.node.v4), (lab.VIP6, self.node.v6)):
            hops = self.fabric.kernel_nexthops(prefix)
            lab.check(hops == [hop], f"the fabric's route to {prefix} is via {hops}, not {hop}")
        t0 = time.monotonic()
        k = self.vipd.status()["kubernetes"]
        lab.check(time.monotonic() - t0 < 2, "vipd answers status within 2 s")
        if k.get("lastError") and (not self.errors or self.errors[-1] != k["lastError"]):
            self.errors.append(k["lastError"])
        return k


def test() -> None:
    with lab.Lab("hostile-api-vipd") as L:
        r = Run(L)
        try:
            r.hostile_phases()
            r.recovery_phases()
        finally:
            r.stop()
        r.report()


class Run:
    """The lab (BIRD, one vipd node with the link on), the hostile API and the figures of each
    phase: (name, wall s, vipd's CPU s, its RSS KiB at the end, kubernetes log lines)."""

    def __init__(self, L: lab.Lab):
        topo = L.fabric_with_nodes(1)
        self.node, self.fabric = topo.nodes[0], topo.fabric
        node = self.node
        self.bird = lab.Bird(L, self.fabric, topo.fabric_v4, lab.FABRIC_ASN,
                             [lab.Neighbor(node.v4, node.asn, passive=True, name="node1",
                                           add_paths_tx=True)],
                             interfaces=[topo.fabric_if])
        ca = lab.make_ca(L, "cluster-ca")
        self.cert = lab.make_server_cert(L, ca, "apiserver", only_ip=node.v4)
        config = lab.vipd_config(L, node, node.asn, topo.fabric_v4, lab.FABRIC_ASN, "vipd-n1")
        config["kubernetes"] = {"kubeconfig": kubeconfig(L, "vipd", PORT, ca[0], host=node.v4,
                                                         user=f"{{token: {TOKEN}}}"),
                                "nodeName": NODE}
        self.vipd = lab.Vipd(L, node.ns, config, name="vipd-n1")
        lab.wait_until(lambda: self.bird.protocol_state("node1") == "Established", 40, 0.2,
                       lambda: f"node1 Established: {self.bird.protocol_state('node1')}")
        lab.wait_until(lambda: self.fabric.kernel_nexthops(lab.VIP4) == [node.v4]
                       and self.fabric.kernel_nexthops(lab.VIP6) == [node.v6], 20, 0.1,
                       lambda: f"both VIPs in the fabric's kernel: "
                       f"{self.fabric.route_show(lab.VIP4)!r} {self.fabric.route_show(lab.VIP6)!r}")
        lab.wait_until(lambda: self.vipd.status()["fabric"]["vips"][lab.VIP4].get("available"),
                       20, 0.2, lambda: f"the fabric view of {lab.VIP4}: "
                       f"{self.vipd.status().get('fabric')}")
        self.monitor = benchlab.RouteMonitor(L, self.fabric, lab.VIP4.split("/")[0])
        self.since = bird_path_since(self.bird, node)
        self.invariants = Invariants(self.vipd, self.fabric, node)
        self.scenario = Api()
        self.pid = self.vipd.proc.pid
        self.asan = sanitized(self.vipd.binary)
        self.api: Optional[ha.HostileApi] = None
        self.figures: list[tuple[str, float, float, int, int]] = []
        self.rss_first = self.rss_last = self.hostile_logs = 0
        self.errors: list[str] = []

    def kube_lines(self) -> int:
        return len(self.vipd.log_lines("kubernetes"))

    def phase(self, name: str, body: Callable[[], None]) -> None:
        """Runs body with the API in phase name; records and prints the phase's figures."""
        t0, cpu0, logs0 = time.monotonic(), lab.cpu_seconds(self.pid), self.kube_lines()
        lab.log(f"--- phase {name}")
        self.scenario.set_phase(name)
        body()
        wall, cpu = time.monotonic() - t0, lab.cpu_seconds(self.pid) - cpu0
        rss = lab.rss_kib(self.pid)
        self.figures.append((name, wall, cpu, rss, self.kube_lines() - logs0))
        kinds: dict[str, int] = {}
        for _, r, w in self.scenario.served(name):
            kinds[f"{kind_of(r)} {w}"] = kinds.get(f"{kind_of(r)} {w}", 0) + 1
        lab.log(f"phase {name}: {wall:.1f} s, vipd CPU {cpu:.2f} s ({100 * cpu / wall:.1f}%), "
                f"RSS {rss / 1024:.1f} MiB, {self.figures[-1][4]} kubernetes log lines; "
                f"served {kinds}")
        now = bird_path_since(self.bird, self.node)
        lab.check(lab.bird_since_delta(now, self.since) < BIRD_SINCE_SLACK_S,
                  f"phase {name}: BIRD's path from node 1 changed at {now} (was {self.since})")

    def hostile_status(self, name: str) -> None:
        """`vipctl status` (the binary, text and JSON) in a hostile phase: NOT CONNECTED, the
        last error, no withdrawal asked."""
        self.invariants.sample()
        text = self.vipd.vipctl("status")
        p = self.vipd.vipctl_run("status", "--json")
        lab.check(p.returncode == 0, f"{name}: vipctl status --json exits {p.returncode}: "
                  f"{p.stdout[-300:]} {p.stderr[-300:]}")
        k = json.loads(p.stdout)["kubernetes"]
        lab.log(f"{name}: vipctl status: "
                f"{[ln for ln in text.splitlines() if ln.startswith('kubernetes')]}")
        lab.check(k["enabled"] and k["connected"] is False and k.get("lastError"),
                  f"{name}: status says kubernetes connected false with a lastError: {k}")
        lab.check(f"kubernetes: Node {NODE} at https://{self.node.v4}:{PORT}: NOT CONNECTED"
                  in text and "kubernetes: last error: " in text,
                  f"{name}: vipctl status says NOT CONNECTED and the last error:\n{text}")
        lab.check(k.get("withdrawRefused") is None and not k.get("intent", {}).get("withdraw"),
                  f"{name}: no withdrawal asked or refused: {k}")

    def timed(self, name: str) -> Callable[[], None]:
        """Phases 1-3: PHASE_S[name] long."""
        def body() -> None:
            self.invariants.hold(PHASE_S[name])
            self.hostile_status(name)
        return body

    def part(self, name: str, kind: str, most: Optional[int] = None) -> Callable[[], None]:
        """Phase 4's parts: WINDOW_S from the first request of `kind` they serve; with most, at
        most that many requests of `kind` in the window (a loop is more)."""
        def body() -> None:
            self.invariants.hold(PART_WAIT_S, until=lambda: self.scenario.served(name, kind))
            first = self.scenario.served(name, kind)
            lab.check(first, f"{name}: vipd sent no {kind} request in {PART_WAIT_S} s")
            self.invariants.hold(first[0][0] + WINDOW_S - time.monotonic())
            self.hostile_status(name)
            n = len(self.scenario.served(name, kind))
            lab.log(f"{name}: {n} {kind} requests")
            lab.check(most is None or n <= most, f"{name}: {n} {kind} requests in about "
                      f"{WINDOW_S} s, at most {most}: each a failure, backed off, not a loop")
        return body

    def hostile_phases(self) -> None:
        self.phase("refused", self.timed("refused"))
        self.rss_first = lab.rss_kib(self.pid)
        self.api = ha.HostileApi(*self.cert, addr=self.node.v4, port=PORT,
                                 netns=self.node.ns.name)
        self.api.reset(self.scenario)
        self.phase("garbage", self.timed("garbage"))
        self.phase("drip", self.timed("drip"))
        self.phase("hostile", self.part("hostile", "watch"))
        self.phase("gone", self.part("gone", "list", GONE_LISTS_MAX))
        self.phase("status-404", self.part("status-404", "status", STATUS_404_MAX))
        self.phase("short-watches", self.part("short-watches", "watch", SHORT_WATCHES_MAX))
        self.phase("endless", self.part("endless", "watch"))
        self.rss_last = lab.rss_kib(self.pid)
        self.hostile_logs = self.kube_lines()  # since vipd's start: its "linked to" included
        self.errors = list(self.invariants.errors)
        for word in ("Connection refused", "timed out", "HTTP 500", "HTTP 429", "410"):
            lab.check(any(word in e for e in self.errors),
                      f"the link reported {word!r}: {self.errors}")

    def recovery_phases(self) -> None:
        self.phase("happy", self.happy)
        self.phase("withdraw", self.withdraw)

    def happy(self) -> None:
        """5: a well-behaved API: the status written, connected."""
        t0 = time.monotonic()

        def written() -> Optional[ha.Request]:
            return next((r for _, r, w in self.scenario.served("happy", "status")
                         if w == "200" and json.loads(r.body)["status"]["vips"][0]["announced"]
                         is True), None)

        self.invariants.hold(RECOVER_S,
                             until=lambda: written() and self.invariants.sample()["connected"])
        lab.check(written(), f"happy: no status PATCH with vips[0].announced true within "
                  f"{RECOVER_S} s: {self.scenario.served('happy')}")
        k = self.invariants.sample()
        lab.check(k["connected"] is True, f"happy: kubernetes connected within {RECOVER_S} s: {k}")
        text = self.vipd.vipctl("status")
        lab.check(f"kubernetes: Node {NODE} at https://{self.node.v4}:{PORT}: connected" in text,
                  f"happy: vipctl status says connected:\n{text}")
        lab.log(f"happy: status written and connected {time.monotonic() - t0:.1f} s after the "
                f"API turned well-behaved; {json.loads(written().body)['status']['vips']}")

    def withdraw(self) -> None:
        """6: the Node asks for a withdrawal; the guard refuses it for the last announcer."""
        t0 = time.monotonic()
        self.scenario.annotation = "test"

        def refusal() -> Optional[ha.Request]:
            return next((r for _, r, _ in self.scenario.served("withdraw", "event")
                         if json.loads(r.body).get("reason") == "WithdrawRefused"), None)

        self.invariants.hold(REFUSE_S, until=refusal)
        lab.check(refusal(), f"withdraw: no WithdrawRefused Event within {REFUSE_S} s: "
                  f"{[r.body[:200] for _, r, _ in self.scenario.served('withdraw', 'event')]}")
        lab.log(f"withdraw: the Event {time.monotonic() - t0:.2f} s after the annotation: "
                f"{json.loads(refusal().body)['message']!r}")
        k = self.invariants.sample()
        lab.check(k.get("withdrawRefused") and k["intent"]["withdraw"] is True,
                  f"withdraw: status says the Node asks and the guard refuses: {k}")
        self.invariants.hold(3)  # the request is asked again every second: the route stays
        self.scenario.annotation = None
        self.invariants.hold(5, until=lambda: "withdrawRefused" not in self.invariants.sample())
        k = self.invariants.sample()
        lab.check("withdrawRefused" not in k, f"withdraw: the refusal gone with the annotation: "
                  f"{k}")

    def stop(self) -> None:
        if self.api is not None:
            self.api.close()

    def report(self) -> None:
        """The route never changed; the figures of phases 1-4 within their bounds."""
        changes = self.monitor.events
        lab.check(not changes, f"the fabric's route to {lab.VIP4} never changes: {changes}")
        print("phase            wall s   CPU s   CPU %   RSS MiB   kubernetes log lines")
        for name, wall, cpu, rss, logs in self.figures:
            print(f"{name:<15} {wall:7.1f} {cpu:7.2f} {100 * cpu / wall:7.1f} {rss / 1024:9.1f} "
                  f"{logs:6d}")
        hostile = self.figures[:-2]
        wall, cpu = sum(f[1] for f in hostile), sum(f[2] for f in hostile)
        growth = (self.rss_last - self.rss_first) / 1024
        bound = RSS_GROWTH_MIB + (ASAN_RSS_ALLOWANCE_MIB if self.asan else 0)
        factor = ASAN_CPU_FACTOR if self.asan else 1
        lab.log(f"phases 1-4: {wall:.1f} s, vipd CPU {cpu:.2f} s ({100 * cpu / wall:.1f}% of a "
                f"core), RSS {self.rss_first / 1024:.1f} -> {self.rss_last / 1024:.1f} MiB "
                f"({growth:+.1f}), {self.hostile_logs} kubernetes log lines, "
                f"{self.invariants.samples} samples; the link's errors, in turn:")
        for e in self.errors:
            print(f"  {e}")
        print("vipd's log lines about kubernetes:")
        for line in self.vipd.log_lines("kubernetes"):
            print(f"  {line}")
        lab.check(self.hostile_logs <= LOG_LINES_MAX, f"phases 1-4: {self.hostile_logs} "
                  f"kubernetes log lines, at most {LOG_LINES_MAX}")
        lab.check(growth < bound, f"phases 1-4: vipd's RSS grew {growth:.1f} MiB, less than "
                  f"{bound} MiB{' (AddressSanitizer)' if self.asan else ''}")
        each, total = factor * CPU_SHARE_MAX, factor * CPU_TOTAL_MAX
        for name, w, c, _, _ in hostile:
            lab.check(c < each * w, f"phase {name}: vipd used {100 * c / w:.1f}% of a core, "
                      f"less than {100 * each:.0f}%")
        lab.check(cpu < total * wall, f"phases 1-4: vipd used {100 * cpu / wall:.1f}% of a core, "
                  f"less than {100 * total:.0f}%")


def bird_path_since(bird: lab.Bird, node: lab.Node) -> str:
    """The time BIRD's path for VIP4 from node 1 last changed (its `show route` bracket)."""
    p = bird.path_from(lab.VIP4, node.v4)
    lab.check(p is not None, f"BIRD has a path for {lab.VIP4} from node 1")
    head = p["text"].split("]", 1)[0]
    return head.rsplit(" ", 1)[-1]


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries + ["openssl"], vipd=True)
