"""The ground floor of the lab: where things are (E2E_DIR, BUILD_DIR, FRR_DIR), the lab's
addressing plan (VIP4, VIP6, the fabric's addresses and ASN, the communities every speaker
announces), the skip rule (Skip, SKIP, in_ci, require), log and run. Imports nothing of the
lab's own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from typing import Iterable, Optional


E2E_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/e2e
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


class Skip(Exception):
    """Raised when a prerequisite is missing outside CI; main() turns it into exit 77."""


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def in_ci() -> bool:
    return os.environ.get("CI", "") == "true"


def yaml_module():
    """PyYAML (Debian python3-yaml): missing, a skip outside CI and a failure in CI."""
    try:
        import yaml
    except ImportError:
        if in_ci():
            raise AssertionError("CI=true and PyYAML is missing (apt-get install python3-yaml)")
        raise Skip("PyYAML is not installed")
    return yaml


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
