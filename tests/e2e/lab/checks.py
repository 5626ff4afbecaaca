"""Assertions and waits (check, wait_until, wait_never, timed_wait) and the sanitizer reports
found in process logs (sanitizer_report; SANITIZER_REPORTS collects them for main()). Imports
nothing of the lab's own.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Optional


def check(cond: bool, msg: str) -> None:
    if not cond:
        raise AssertionError(msg)


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


# What AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer print (CI builds vipd with
# -Db_sanitize=address,undefined): any of it in a process log fails the test, even a test whose
# own assertions passed.
_SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                      "SUMMARY: UndefinedBehaviorSanitizer", "SUMMARY: AddressSanitizer")
SANITIZER_REPORTS: list[str] = []


def _without_descriptor_artefacts(lines: list[str]) -> list[str]:
    """The log without UBSan's vptr reports that only say the process had no free descriptor.

    UBSan's vptr check, on a type it has not seen yet, asks whether the object's memory is
    readable through a pipe it opens; with every descriptor in use (the chaos soak's fd_limit
    fault does that on purpose) the pipe fails and it reports a valid object as "object has
    invalid vptr" with "<memory cannot be printed>" (a ten-line program shows it; with one free
    descriptor the same call is clean). Such a report, its stack and its summary are dropped; any
    other report stands. Only matters where UBSan does not halt (the soak sets halt_on_error=0)."""
    out, i = [], 0
    while i < len(lines):
        window = lines[i + 1:i + 3]
        if ("runtime error:" in lines[i] and "does not point to an object of type" in lines[i]
                and any("object has invalid vptr" in w for w in window)
                and any("<memory cannot be printed>" in w for w in window)):
            i += 3
            while i < len(lines) and (lines[i].lstrip().startswith("#") or
                                      lines[i].startswith("SUMMARY: UndefinedBehaviorSanitizer")
                                      or not lines[i].strip()):
                i += 1
            continue
        out.append(lines[i])
        i += 1
    return out


def sanitizer_report(text: str) -> str:
    """The lines around the first sanitizer report in a process log, or ""."""
    lines = _without_descriptor_artefacts(text.splitlines())
    for i, line in enumerate(lines):
        if any(m in line for m in _SANITIZER_MARKERS):
            return "\n".join(lines[max(0, i - 2):i + 40])
    return ""
