"""Shared by the manifest and container tests: where things are, prerequisites and failures.

Exit codes (meson): 0 pass, 1 fail, 77 skip. A missing prerequisite (kubectl, PyYAML, dpkg) skips
only outside CI; with CI=true it is a failure.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Callable, NoReturn

SKIP = 77
SOURCE_DIR = os.environ.get("VIPD_SOURCE_DIR",
                            os.path.dirname(os.path.dirname(os.path.dirname(
                                os.path.abspath(__file__)))))
BUILD_DIR = os.environ.get("VIPD_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))


def missing(what: str) -> NoReturn:
    """A prerequisite is absent: skip outside CI, fail in CI."""
    if os.environ.get("CI", "") == "true":
        print(f"FAIL: {what} (CI=true: a missing prerequisite is a failure)", flush=True)
        sys.exit(1)
    print(f"SKIP: {what}", flush=True)
    sys.exit(SKIP)


def yaml_module():
    try:
        import yaml  # Debian python3-yaml
    except ImportError:
        missing("PyYAML is not installed (apt-get install python3-yaml)")
    return yaml


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    print(f"$ {' '.join(argv)}", flush=True)
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, **kwargs)


_DURATION_PART = re.compile(r"(\d+)(h|ms|m|s)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def seconds(duration: str | int) -> float:
    """A vipd config duration ("2s", "1m30s", "300ms", or a bare 0) in seconds."""
    text = str(duration)
    if text == "0":
        return 0.0
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"not a vipd duration: {text!r}")
    return sum(int(n) * _UNIT_SECONDS[u] for n, u in parts)


class Checks:
    """Collects every failed expectation so one run reports them all, not only the first."""

    def __init__(self) -> None:
        self.failures: list[str] = []

    def expect(self, cond: bool, what: str) -> bool:
        print(f"  {'ok  ' if cond else 'FAIL'} {what}", flush=True)
        if not cond:
            self.failures.append(what)
        return cond

    def equal(self, actual, expected, what: str) -> bool:
        ok = actual == expected
        return self.expect(ok, what if ok else f"{what}: expected {expected!r}, got {actual!r}")

    def finish(self) -> NoReturn:
        if self.failures:
            print(f"\n{len(self.failures)} check(s) failed:", flush=True)
            for f in self.failures:
                print(f"  - {f}")
            sys.exit(1)
        print("\nall checks passed", flush=True)
        sys.exit(0)


def main(test: Callable[[Checks], None]) -> NoReturn:
    checks = Checks()
    test(checks)
    checks.finish()
