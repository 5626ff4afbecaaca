"""contrib/vipd.service.in as systemd would run it, on a machine whose PID 1 is not systemd.

- render(): the unit with @bindir@ filled in, as contrib/meson.build does at install time.
- Unit: the parsed unit (every value of a key, in order; `Key=` with no value resets, as in
  systemd), its Exec lines (prefix flags, argv, $MAINPID) and time spans.
- Service: one service in a lab node. Every Exec line runs in the node's network namespace and
  in a mount namespace where the host paths the unit names (/etc/vipd, /var/lib/vipd, /run/vipd)
  are the node's own directories in the lab's temp dir, under the unit's sandbox as far as it is
  reproduced here:
    * CapabilityBoundingSet=, AmbientCapabilities= (uid 0: every capability set is exactly
      this one, as systemd leaves it for root) and NoNewPrivileges=, through setpriv;
    * ProtectSystem=strict (every mount read-only but /proc, /sys and /dev), StateDirectory=,
      RuntimeDirectory= (created with their modes before ExecStartPre, as systemd does, and the
      only writable paths), ReadWritePaths=, PrivateTmp= and ProtectHome=, in the mount namespace;
    * LimitNOFILE=, through prlimit.
  Not reproduced (they need systemd as PID 1): the seccomp filters (SystemCallFilter=,
  RestrictAddressFamilies=, MemoryDenyWriteExecute=, RestrictNamespaces=, LockPersonality=;
  test_unit_run checks the first two against what vipd does under strace),
  PrivateDevices=, ProtectKernel*=, ProtectClock=, ProtectHostname=, ProtectProc= and cgroups.
  start() runs ExecStartPre= lines in order (a failure fails the start, as systemd does, unless
  the line starts with `-`), then ExecStart= (Type=exec: its PID is the main PID); reload() runs
  ExecReload= with $MAINPID; stop() runs ExecStop= lines, then sends KillSignal= (and SIGCONT,
  as systemd does), waits TimeoutStopSec= and only then SIGKILLs.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Optional

CONTRIB_TESTS = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(CONTRIB_TESTS))
UNIT_SOURCE = os.path.join(SOURCE_DIR, "contrib", "vipd.service.in")
sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "e2e"))
import lab  # noqa: E402

# The host paths the unit names that a Service maps to the node's own directories.
HOST_PATHS = ("/etc/vipd", "/var/lib/vipd", "/run/vipd")
# What ProtectSystem=strict leaves writable: the API file systems.
API_FS = ("/proc", "/sys", "/dev")


def render(bindir: str, source: str = UNIT_SOURCE) -> str:
    """The unit as meson installs it, with bindir for @bindir@."""
    with open(source) as f:
        text = f.read()
    rest = re.findall(r"@[A-Za-z_]+@", text.replace("@bindir@", ""))
    lab.check(not rest, f"{source}: placeholders meson does not fill: {sorted(set(rest))}")
    return text.replace("@bindir@", bindir)


def seconds(span: str) -> float:
    """A systemd time span ("30s", "1min 30s", "500ms", "90": seconds) in seconds."""
    units = {"us": 1e-6, "ms": 1e-3, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600}
    total, pos = 0.0, 0
    for m in re.finditer(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)", span):
        lab.check(m.start() == pos and (m.group(2) in units or m.group(2) == ""),
                  f"not a time span: {span!r}")
        total += float(m.group(1)) * units.get(m.group(2) or "s")
        pos = m.end()
    lab.check(pos == len(span.rstrip()) and pos > 0, f"not a time span: {span!r}")
    return total


@dataclass
class ExecLine:
    """One Exec*= value: its argv and whether a failure is ignored (the `-` prefix)."""
    argv: list[str]
    ignore_failure: bool

    def expand(self, main_pid: Optional[int]) -> list[str]:
        out = []
        for a in self.argv:
            if "MAINPID" in a:
                lab.check(main_pid is not None, f"$MAINPID without a main process: {self.argv}")
                a = a.replace("${MAINPID}", str(main_pid)).replace("$MAINPID", str(main_pid))
            out.append(a)
        return out


class Unit:
    """A parsed unit file: values(section, key) lists every value in order."""

    def __init__(self, text: str):
        self.sections: dict[str, dict[str, list[str]]] = {}
        section = None
        logical = ""
        for raw in text.splitlines():
            line = raw.strip()
            if not logical and (not line or line[0] in "#;"):
                continue
            if line.endswith("\\"):
                logical += line[:-1] + " "
                continue
            line, logical = logical + line, ""
            if line.startswith("["):
                section = line.strip("[]")
                self.sections.setdefault(section, {})
                continue
            lab.check(section is not None and "=" in line, f"unit line outside a section or "
                      f"without '=': {raw!r}")
            key, _, value = line.partition("=")
            key, value = key.strip(), value.strip()
            values = self.sections[section].setdefault(key, [])
            if value == "":
                values.clear()  # `Key=` resets a list, as in systemd
            else:
                values.append(value)

    def values(self, section: str, key: str) -> list[str]:
        return self.sections.get(section, {}).get(key, [])

    def value(self, section: str, key: str, default: Optional[str] = None) -> Optional[str]:
        v = self.values(section, key)
        return v[-1] if v else default

    def words(self, section: str, key: str) -> list[str]:
        return [w for v in self.values(section, key) for w in v.split()]

    def exec_lines(self, key: str) -> list[ExecLine]:
        out = []
        for v in self.values("Service", key):
            argv = shlex.split(v)
            prefix = re.match(r"[-@:+!]*", argv[0]).group(0)
            lab.check(set(prefix) <= {"-"}, f"{key}={v}: this runner handles only the '-' prefix")
            argv[0] = argv[0][len(prefix):]
            lab.check(os.path.isabs(argv[0]), f"{key}={v}: not an absolute path")
            out.append(ExecLine(argv, "-" in prefix))
        return out

    def capabilities(self) -> set[str]:
        """The unit's capability set; the bounding and ambient sets must be the same one."""
        bounding = {c.removeprefix("CAP_") for c in self.words("Service", "CapabilityBoundingSet")}
        ambient = {c.removeprefix("CAP_") for c in self.words("Service", "AmbientCapabilities")}
        lab.check(bounding and bounding == ambient,
                  f"CapabilityBoundingSet {sorted(bounding)} != AmbientCapabilities "
                  f"{sorted(ambient)}")
        return bounding

    def timeout_stop(self) -> float:
        return seconds(self.value("Service", "TimeoutStopSec", "90s"))


@dataclass
class Result:
    """A completed Exec line: its exit status and output (stdout and stderr, as the journal
    gets them)."""
    argv: list[str]
    returncode: int
    output: str


class Service:
    """The unit as a service in node (a lab.Node); see the module docstring. root: the lab
    directory holding the node's view of HOST_PATHS."""

    def __init__(self, L: lab.Lab, node: lab.Node, unit: Unit, name: str = "vipd-unit"):
        self.L, self.node, self.unit, self.name = L, node, unit, name
        self.root = L.path(f"{name}-host")
        self.proc: Optional[lab.Proc] = None
        self.runs = 0
        made: list[str] = []
        for p in HOST_PATHS:
            os.makedirs(self.path(p), exist_ok=True)
            if not os.path.isdir(p):
                # A bind mount needs a mount point; on the machine it stays an empty directory
                # until the lab's cleanup removes it (as tests/e2e/pods.py does).
                os.makedirs(p)
                made.append(p)

        def remove_mountpoints() -> None:
            if self.proc is not None:
                self.proc.stop()
            for p in reversed(made):
                with contextlib.suppress(OSError):
                    os.rmdir(p)
        L.on_cleanup(remove_mountpoints)

    def path(self, host_path: str) -> str:
        """Where the test reads and writes what the service sees at host_path."""
        return os.path.join(self.root, host_path.lstrip("/"))

    # --- the sandbox ----------------------------------------------------------------------

    def _writable(self) -> list[str]:
        s = self.unit
        paths = [f"/var/lib/{d}" for d in s.words("Service", "StateDirectory")]
        paths += [f"/run/{d}" for d in s.words("Service", "RuntimeDirectory")]
        paths += [p.lstrip("-") for p in s.words("Service", "ReadWritePaths")]
        return paths

    def argv(self, cmd: list[str], sandbox: bool = True) -> list[str]:
        """cmd as the service runs it (sandbox) or as an operator on the node runs it (the
        node's network and host paths, nothing else)."""
        u = self.unit
        script = ["set -eu"]
        for p in HOST_PATHS:
            script.append(f"mount --bind {shlex.quote(self.path(p))} {p}")
        if sandbox:
            lab.check(u.value("Service", "ProtectSystem") == "strict",
                      "the runner reproduces ProtectSystem=strict only")
            api = " ".join(f"{p}|{p}/*" for p in API_FS).replace(" ", "|")
            # ProtectSystem=strict: every other mount read-only; mount points that cannot be
            # remounted (another namespace's nsfs files) are not file systems vipd could write.
            script.append("awk '{print $5}' /proc/self/mountinfo | while read -r mp; do "
                          f"case \"$mp\" in {api}) ;; "
                          "*) mount -o remount,bind,ro \"$mp\" 2>/dev/null || true ;; esac; done")
            script.append("touch /.vipd-unit-probe 2>/dev/null && "
                          "{ echo 'ProtectSystem=strict not in effect' >&2; exit 90; } || true")
            for p in self._writable():
                script.append(f"mount -o remount,bind,rw {shlex.quote(p)}")
            if u.value("Service", "PrivateTmp") == "yes":
                script += ["mount -t tmpfs -o mode=1777 tmpfs /tmp",
                           "mount -t tmpfs -o mode=1777 tmpfs /var/tmp"]
            if u.value("Service", "ProtectHome") == "yes":
                script.append("for d in /home /root /run/user; do [ -d \"$d\" ] && "
                              "mount -t tmpfs -o ro,mode=0 tmpfs \"$d\"; done; true")
        script.append('exec "$@"')
        wrappers: list[str] = []
        if sandbox:
            nofile = u.value("Service", "LimitNOFILE")
            if nofile:
                wrappers += ["prlimit", f"--nofile={nofile}:{nofile}", "--"]
            caps = "".join(f",+{c.lower()}" for c in sorted(u.capabilities()))
            wrappers += ["setpriv", f"--bounding-set=-all{caps}", f"--inh-caps=-all{caps}",
                         f"--ambient-caps=-all{caps}"]
            if u.value("Service", "NoNewPrivileges") == "yes":
                wrappers.append("--no-new-privs")
            wrappers.append("--")
        # ip netns exec, unshare (no --fork), sh's exec, prlimit and setpriv all exec: the
        # process started is cmd itself, so its PID is the main PID.
        return self.node.ns.argv(["unshare", "--mount", "--propagation", "private", "--",
                                  "sh", "-c", "\n".join(script), "sh"] + wrappers + cmd)

    def run(self, cmd: list[str], sandbox: bool = True, timeout: float = 30) -> Result:
        p = subprocess.run(self.argv(cmd, sandbox), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=timeout)
        return Result(cmd, p.returncode, p.stdout)

    # --- the service's life ---------------------------------------------------------------

    def _make_directories(self) -> None:
        """StateDirectory= and RuntimeDirectory=, owned by root with their modes, before
        ExecStartPre (systemd creates them then too)."""
        for key, base in (("StateDirectory", "/var/lib"), ("RuntimeDirectory", "/run")):
            mode = int(self.unit.value("Service", key + "Mode", "0755"), 8)
            for d in self.unit.words("Service", key):
                lab.check(f"{base}/{d}" in HOST_PATHS, f"{key}={d}: not a path the runner maps")
                os.makedirs(self.path(f"{base}/{d}"), exist_ok=True)
                os.chmod(self.path(f"{base}/{d}"), mode)

    def start(self) -> list[Result]:
        """ExecStartPre lines, then ExecStart. Returns the ExecStartPre results; the start
        failed when the last one failed (self.proc is then None)."""
        lab.check(self.unit.value("Service", "Type") == "exec", "the runner handles Type=exec")
        lab.check(self.proc is None or not self.proc.alive(), "already running")
        self._make_directories()
        if self.unit.value("Service", "PrivateTmp") == "yes":
            for line in self.unit.exec_lines("ExecStart") + self.unit.exec_lines("ExecStartPre"):
                lab.check(not os.path.realpath(line.argv[0]).startswith(("/tmp/", "/var/tmp/")),
                          f"{line.argv[0]} is under /tmp, which PrivateTmp=yes hides from the "
                          f"service: use a build directory elsewhere")
        timeout = seconds(self.unit.value("Service", "TimeoutStartSec", "90s"))
        results = []
        self.proc = None
        for line in self.unit.exec_lines("ExecStartPre"):
            r = self.run(line.expand(None), timeout=timeout)
            results.append(r)
            lab.log(f"{self.name}: ExecStartPre {' '.join(r.argv)}: exit {r.returncode}")
            if r.returncode != 0 and not line.ignore_failure:
                return results
        (start,) = self.unit.exec_lines("ExecStart")
        self.runs += 1
        self.proc = self.L.start(None, f"{self.name}-run{self.runs}", self.argv(start.expand(None)))
        return results

    @property
    def main_pid(self) -> int:
        lab.check(self.proc is not None and self.proc.alive(), f"{self.name} is not running")
        return self.proc.pid

    def reload(self) -> list[Result]:
        results = []
        for line in self.unit.exec_lines("ExecReload"):
            r = self.run(line.expand(self.main_pid))
            results.append(r)
            lab.check(r.returncode == 0 or line.ignore_failure,
                      f"ExecReload {' '.join(r.argv)} failed ({r.returncode}): {r.output}")
        return results

    def stop(self) -> tuple[Optional[int], float, bool]:
        """ExecStop lines, KillSignal, then at most TimeoutStopSec before SIGKILL. Returns the
        main process's exit code, the seconds the stop took and whether it had to be killed."""
        t0 = time.monotonic()
        timeout = self.unit.timeout_stop()
        pid = self.main_pid
        for line in self.unit.exec_lines("ExecStop"):
            # Each ExecStop line gets TimeoutStopSec; the signal follows whatever they did.
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.run(line.expand(pid), timeout=timeout)
        sig = getattr(signal, self.unit.value("Service", "KillSignal", "SIGTERM"))
        self.proc.signal(sig)
        if sig not in (signal.SIGCONT, signal.SIGKILL):
            self.proc.signal(signal.SIGCONT)
        killed = False
        try:
            self.proc.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            killed = True
            self.proc.signal(signal.SIGKILL)
            self.proc.popen.wait(10)
        return self.proc.popen.returncode, time.monotonic() - t0, killed
