"""Daemons the lab starts (Proc: started with its log in a file, stopped by PID, killed with
the test) and what /proc says about a process (proc_status, the capability table).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from typing import Iterable, Optional

from .base import log


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


def cpu_seconds(pid: int) -> float:
    """User + system CPU time pid has used so far (/proc/PID/stat); 0.0 once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def rss_kib(pid: int) -> int:
    """VmRSS of pid in KiB."""
    return int(proc_status(pid)["VmRSS"].split()[0])
