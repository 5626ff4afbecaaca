"""vipd and vipctl in the lab: the config a test starts from (vipd_config, written by to_yaml),
the Vipd process with its control socket, status and metrics, the VIPs an operator binds
(bind_vips), running as another user (as_user), and HTTP from inside a namespace.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from typing import Any, Callable, Iterable, Optional

from .base import BUILD_DIR, COMMUNITIES, LARGE_COMMUNITIES, VIP4, VIP6, vipd_binary
from .checks import check, wait_until
from .netns import Lab, Namespace, Node
from .process import Proc


METRICS_LISTEN = "127.0.0.1:9472"  # vipd's default metrics.listen (in its netns)
UNBIND_DELAY = "200ms"  # vipd's drain.unbindDelay in the lab (default 1s)


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


def socket_dir(L, name: str = "run") -> str:
    """A folder in the lab's tree that every user may enter (0755), for a control socket the
    tests reach as other users (as_user()): the lab's own folder is root's alone."""
    path = L.path(name)
    os.makedirs(path)
    os.chmod(path, 0o755)
    return path


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


def bind_vips(ns: Namespace, vips: Iterable[str] = (VIP4, VIP6), ifname: str = "lo") -> None:
    """An operator's `ip addr add` of each VIP (preferred forever: vipd never removes these).
    vipd binds its VIPs itself; stand-in speakers (ExaBGP, GoBGP) need the lab to do it."""
    for v in vips:
        ns.add_address(ifname, v)


def control_exchange(path: str, data: bytes, timeout: float = 5) -> bytes:
    """Sends data on the control socket at path, half-closes it, reads the reply until EOF (what
    vipctl does with one request line; test_control_socket sends hostile bytes through it)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(path)
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)  # EOF: vipd must not wait for more
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass  # vipd may answer and close before reading everything
        reply = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            reply += chunk
        return reply


class Vipd:
    """vipd in ns; it binds its VIPs itself. bind: addresses an operator puts on lo first
    (plain `ip addr add`), default none. config_path: the config file is already there (a
    ConfigMap-style symlink, say) and config (a dict) only says what is in it; otherwise config
    is written to the lab's NAME.yaml."""

    def __init__(self, lab: Lab, ns: Namespace, config: Any, build_dir: str = BUILD_DIR,
                 name: str = "vipd", bind: Iterable[str] = (), args: Iterable[str] = (),
                 wrapper: Iterable[str] = (), config_path: Optional[str] = None):
        self.lab, self.ns, self.name = lab, ns, name
        self.args = list(args)  # extra command-line arguments (e.g. --router-id)
        # A command prefix that execs vipd inside ns (e.g. setpriv dropping capabilities): the
        # process the lab tracks is then vipd itself.
        self.wrapper = list(wrapper)
        self.build_dir = build_dir
        self.conf = config_path or lab.path(f"{name}.yaml")
        text = config if isinstance(config, str) else to_yaml(config) + "\n"
        if not config_path:
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
        """vipd's answer to the control socket's status command, as `vipctl status --json`
        prints it (raises while vipd is not answering). Asked over the socket here, not by
        running vipctl: the tests poll it, and a sanitized vipctl costs about 0.1 s of CPU a
        call (61 calls were a third of e2e_fabric_view_peers' CPU). vipctl itself is tested
        through vipctl() and vipctl_run()."""
        answer = json.loads(control_exchange(self.socket, b'{"command": "status"}\n', 10))
        if not isinstance(answer, dict) or "error" in answer:
            raise RuntimeError(f"vipd at {self.socket} answered status with {answer}")
        return answer

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
