"""Watching the fabric's kernel route for a VIP: FabricPoller (a sampling thread that records
when a next hop is missing) and time_nexthop (the seconds until a next hop comes or goes).
"""

from __future__ import annotations

import threading
import time
from typing import Optional

from .base import VIP4, run
from .checks import wait_until
from .netns import Namespace, parse_nexthops


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
