"""BIRD 2 as a peer (Bird: config, birdc queries, BFD sessions and events) and
bird_since_delta for its "since" times.
"""

from __future__ import annotations

import ipaddress
import os
import re
import time
from typing import Callable, Iterable, Optional

from .base import run
from .checks import wait_until
from .netns import Lab, Namespace
from .peers import BfdTimers, Neighbor, Origin


def bird_since_delta(a: str, b: str) -> float:
    """|a - b| in seconds for two BIRD "since" times (HH:MM:SS.mmm; a date: 0 if equal, else
    infinity). BIRD's "since" can move by a millisecond as a session's channels finish coming
    up, so a restart is a later time, not any change."""
    def secs(t: str) -> Optional[float]:
        try:
            h, m, rest = t.split(":")
            return int(h) * 3600 + int(m) * 60 + float(rest)
        except ValueError:
            return None
    x, y = secs(a), secs(b)
    if x is None or y is None:
        return 0.0 if a == b else float("inf")
    return abs(x - y)


class Bird:
    binaries = ["bird", "birdc"]

    def __init__(self, lab: Lab, ns: Namespace, router_id: str, asn: int,
                 neighbors: list[Neighbor], interfaces: Iterable[str] = ("br0",),
                 origins: Iterable[Origin] = (), next_hop_v6: Optional[str] = None,
                 name: str = "bird", hold_time: int = 9, bfd: Optional[BfdTimers] = None,
                 bfd_multihop: bool = False, import_routes: bool = True):
        """bfd: run `protocol bfd` on interfaces with these timers and put `bfd on` in every
        BGP protocol (BIRD then asks for a single-hop session to each neighbour and stops the
        BGP session when it goes from Up to Down). bfd_multihop: the same timers for multihop
        sessions (RFC 5883, UDP 4784), which BIRD uses for BGP protocols with `multihop`.
        import_routes=False: `import none` on every channel (BIRD as a VIP speaker keeps
        nothing it receives)."""
        self.lab, self.ns, self.name = lab, ns, name
        self.bfd = bfd
        self.conf = lab.path(f"{name}.conf")
        self.sock = lab.path(f"{name}.ctl")
        self.neighbors = neighbors
        for i, nb in enumerate(neighbors):
            nb.name = nb.name or f"peer{i + 1}"
        origins = list(origins)
        lines = [
            "log stderr all;",
            f"router id {router_id};",
            "protocol device { scan time 10; }",
            "protocol direct { ipv4; ipv6; interface " + ", ".join(f'"{i}"' for i in interfaces) + "; }",
            # ECMP into the kernel: one multipath route per prefix from mergeable BGP paths.
            "protocol kernel kernel4 { ipv4 { import none; export where source = RTS_BGP; }; merge paths on limit 16; }",
            "protocol kernel kernel6 { ipv6 { import none; export where source = RTS_BGP; }; merge paths on limit 16; }",
        ]
        if bfd:
            lines += [
                # Millisecond log timestamps: when BIRD's BFD declared a session down.
                'timeformat log "%F %T.%3f";',
                "protocol bfd {",
                # "events" logs "Session to A expired" (detection time) apart from "changed
                # state from Up to Down" (which a received AdminDown or Down also causes).
                "  debug { states, events };",
                "  interface " + ", ".join(f'"{i}"' for i in interfaces) + " {",
                f"    min rx interval {bfd.min_rx_ms} ms;",
                f"    min tx interval {bfd.min_tx_ms} ms;",
                f"    multiplier {bfd.multiplier};",
                "  };",
                *([f"  multihop {{ min rx interval {bfd.min_rx_ms} ms; min tx interval "
                   f"{bfd.min_tx_ms} ms; multiplier {bfd.multiplier}; }};"] if bfd_multihop
                  else []),
                "}",
            ]
        lines += [
            "filter bgp_in {",
            "  if (65535, 0) ~ bgp_community then bgp_local_pref = 0;  # RFC 8326 GRACEFUL_SHUTDOWN",
            "  accept;",
            "}",
        ]
        export = "none"
        imp = "filter bgp_in" if import_routes else "none"
        if origins:
            lines.append("protocol static origin4 { ipv4; " + "".join(
                f"route {o.prefix} blackhole; " for o in origins if ":" not in o.prefix) + "}")
            lines.append("protocol static origin6 { ipv6; " + "".join(
                f"route {o.prefix} blackhole; " for o in origins if ":" in o.prefix) + "}")
            o = origins[0]
            sets = "".join(f"bgp_community.add(({c.replace(':', ',')})); " for c in o.communities)
            sets += "".join(f"bgp_large_community.add(({c.replace(':', ',')})); " for c in o.large)
            lines.append(f"filter bgp_out {{ if source = RTS_STATIC then {{ {sets}accept; }} reject; }}")
            export = "filter bgp_out"
        for nb in neighbors:
            v6_nh = nb.next_hop_v6 or next_hop_v6
            # ADD-PATH send: every path BIRD holds for the VIPs goes back to this neighbour
            # (BIRD never sends a neighbour its own path back).
            add_paths = "add paths tx; " if nb.add_paths_tx else ""
            nb_export = ("where source = RTS_BGP" if nb.add_paths_tx and export == "none"
                         else export)
            lines += [
                f"protocol bgp {nb.name} {{",
                f"  local as {asn};",
                # asn "internal"/"external": any ASN that is (not) BIRD's own.
                f"  neighbor {nb.address} " + (f"as {nb.asn};" if isinstance(nb.asn, int)
                                               else f"{nb.asn};"),
                f"  passive {'on' if nb.passive else 'off'};",
                "  error wait time 1, 2;",
                "  connect retry time 1;",
                "  connect delay time 1;",
                f"  hold time {hold_time};",
                *(["  bfd on;"] if bfd else []),
                *(f"  {o}" for o in nb.bird_options),
                *([f"  ipv4 {{ import {imp}; export {nb_export}; {add_paths}}};"]
                  if "ipv4" in (nb.families or ["ipv4"]) else []),
                # IPv6 routes over an IPv4 session: BIRD needs a global IPv6 next hop on a
                # directly connected prefix for what it sends (received ones must resolve too).
                *([f"  ipv6 {{ import {imp}; export {nb_export}; {add_paths}"
                   + (f"next hop address {v6_nh}; " if v6_nh else "") + "};"]
                  if "ipv6" in (nb.families or ["ipv6"]) else []),
                "}",
            ]
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        self._start()

    @classmethod
    def from_text(cls, lab: Lab, ns: Namespace, text: str, neighbors: list[Neighbor],
                  name: str = "bird") -> "Bird":
        """BIRD with a config written elsewhere (say docs/routers/bird.conf, as text), whose
        BGP protocols are named as in neighbors (nb.name), so that the queries by address
        work."""
        self = cls.__new__(cls)
        self.lab, self.ns, self.name, self.bfd, self.neighbors = lab, ns, name, None, neighbors
        self.conf = lab.path(f"{name}.conf")
        self.sock = lab.path(f"{name}.ctl")
        with open(self.conf, "w") as f:
            f.write(text)
        self._start()
        return self

    def _start(self) -> None:
        run(["bird", "-p", "-c", self.conf])  # parse check: a clear error before starting
        self.proc = self.lab.start(self.ns, self.name,
                                   ["bird", "-f", "-c", self.conf, "-s", self.sock])
        self.procs = [self.proc]
        wait_until(lambda: os.path.exists(self.sock), 10, 0.1, f"{self.name} control socket")

    def birdc(self, *args: str) -> str:
        return run(["birdc", "-s", self.sock] + list(args), timeout=10).stdout

    def protocol_row(self, name: str) -> list[str]:
        """The `show protocols` line of protocol name, split: name, proto, table, state, since
        (BIRD's state-change time: it moves only when the session changes state), info."""
        for line in self.birdc("show", "protocols").splitlines():
            parts = line.split()
            if parts and parts[0] == name:
                return parts
        raise AssertionError(f"BIRD has no protocol {name}")

    def protocol_detail(self, name: str) -> str:
        """`show protocols all NAME`: timers, capabilities, last error (`Received: ...`)."""
        return self.birdc("show", "protocols", "all", name)

    def configure(self, edit: Callable[[str], str]) -> None:
        """Rewrites BIRD's config with edit(text) and applies it (`birdc configure`): BIRD
        restarts only the protocols whose config changed."""
        with open(self.conf) as f:
            text = edit(f.read())
        with open(self.conf, "w") as f:
            f.write(text)
        out = self.birdc("configure")
        if "Reconfigured" not in out and "Reconfiguration in progress" not in out:
            raise AssertionError(f"birdc configure: {out.strip()}")

    def protocol_state(self, name: str) -> str:
        """The Info column of `show protocols` (e.g. "Established", "Active", "Connect")."""
        for line in self.birdc("show", "protocols").splitlines():
            parts = line.split()
            if parts and parts[0] == name:
                return parts[5] if len(parts) > 5 else parts[3]
        return "absent"

    def neighbor(self, addr: str) -> Neighbor:
        for nb in self.neighbors:
            if nb.address == addr:
                return nb
        raise KeyError(addr)

    def neighbor_state(self, addr: str) -> str:
        return self.protocol_state(self.neighbor(addr).name)

    def protocol_all(self, addr: str) -> str:
        """`show protocols all NAME` for the neighbour at addr: timers, capabilities, last error
        and the RFC 8203 shutdown communication as `Message:`."""
        return self.birdc("show", "protocols", "all", self.neighbor(addr).name)

    def route_all(self, prefix: str) -> str:
        """`show route for PREFIX all`; "Network not found" (birdc exits 1) is an answer."""
        p = run(["birdc", "-s", self.sock, "show", "route", "for", prefix, "all"], check=False,
                timeout=10)
        if p.returncode != 0 and "Network not found" not in p.stdout:
            raise RuntimeError(f"birdc show route for {prefix} all failed ({p.returncode}): "
                               f"{p.stdout.strip()} {p.stderr.strip()}")
        return p.stdout

    def route(self, prefix: str) -> Optional[dict]:
        """The first (best) path of `show route for PREFIX all`, parsed."""
        text = self.route_all(prefix)
        if "via" not in text and "unreachable" not in text:
            return None
        nexthops = re.findall(r"BGP\.next_hop: (.+)", text)
        comms = re.findall(r"BGP\.community: (.+)", text)
        large = re.findall(r"BGP\.large_community: (.+)", text)
        lp = re.findall(r"BGP\.local_pref: (\d+)", text)
        aspath = re.findall(r"BGP\.as_path: ?(.*)", text)
        return {
            "nexthops": nexthops[0].split() if nexthops else [],
            "communities": [c.strip("()").replace(",", ":") for c in comms[0].split()] if comms else [],
            "largeCommunities": [c.strip("()").replace(", ", ":").replace(",", ":")
                                 for c in re.findall(r"\([^)]*\)", large[0])] if large else [],
            "localPref": int(lp[0]) if lp else None,
            "asPath": aspath[0].strip() if aspath else "",
            "text": text,
        }

    def paths(self, prefix: str) -> list[dict]:
        """Every path BIRD has for prefix (`show route for PREFIX all`), each as
        {"protocol", "from", "best", "nexthops", "communities", "localPref", "asPath"}.
        Communities are "a:b" strings (GRACEFUL_SHUTDOWN is "65535:0")."""
        text = self.route_all(prefix)
        blocks = re.split(r"(?m)^(?=\S*\s+unicast \[)", text)
        out = []
        for b in blocks:
            m = re.match(r"\S*\s+unicast \[(\S+) [^\]]*?(?:from (\S+))?\]( \*)?", b)
            if not m:
                continue
            nexthops = re.findall(r"BGP\.next_hop: (.+)", b)
            comms = re.findall(r"BGP\.community: (.+)", b)
            lp = re.findall(r"BGP\.local_pref: (\d+)", b)
            aspath = re.findall(r"BGP\.as_path: ?(.*)", b)
            out.append({
                "protocol": m.group(1),
                "from": m.group(2),
                "best": bool(m.group(3)),
                "nexthops": nexthops[0].split() if nexthops else [],
                "communities": [c.strip("()").replace(",", ":")
                                for c in re.findall(r"\(\d+,\d+\)", comms[0])] if comms else [],
                "localPref": int(lp[0]) if lp else None,
                "asPath": aspath[0].strip() if aspath else "",
                "text": b,
            })
        return out

    def path_from(self, prefix: str, addr: str) -> Optional[dict]:
        """The path for prefix learnt from the neighbour at addr (None: BIRD has none)."""
        name = self.neighbor(addr).name
        return next((p for p in self.paths(prefix) if p["protocol"] == name), None)

    def has_route(self, prefix: str) -> bool:
        """Whether BIRD has any route for prefix (`show route for PREFIX`, no attributes: cheap
        enough to poll every 10 ms)."""
        p = run(["birdc", "-s", self.sock, "show", "route", "for", prefix], check=False, timeout=10)
        if "Network not found" in p.stdout:
            return False
        if p.returncode != 0:
            raise RuntimeError(f"birdc show route for {prefix} failed ({p.returncode}): "
                               f"{p.stdout.strip()} {p.stderr.strip()}")
        return str(ipaddress.ip_network(prefix)) in p.stdout

    def reload_in(self, addr: str) -> str:
        """`birdc reload in NAME`: re-import from the neighbour at addr (BIRD sends a
        ROUTE-REFRESH when the neighbour advertised the capability)."""
        return self.birdc("reload", "in", self.neighbor(addr).name)

    def kernel_nexthops(self, prefix: str) -> list[str]:
        return self.ns.kernel_nexthops(prefix)

    def bfd_sessions(self) -> dict[str, dict]:
        """`show bfd sessions`, parsed: address -> {"interface", "state", "since",
        "intervalMs" (the TX interval in use), "timeoutMs" (the detection time)}.
        BIRD 2.0.12 shows its own state only, no remote state or diagnostic: tell a received
        AdminDown from a detection-time expiry with bfd_events()."""
        out = {}
        for line in self.birdc("show", "bfd", "sessions").splitlines():
            m = re.match(r"\s*([0-9a-fA-F:.]+)\s+(\S+)\s+(AdminDown|Down|Init|Up)\s+(.*?)\s+"
                         r"(\d+)\.(\d{3})\s+(\d+)\.(\d{3})\s*$", line)
            if m:
                out[m.group(1)] = {
                    "interface": m.group(2), "state": m.group(3), "since": m.group(4),
                    "intervalMs": int(m.group(5)) * 1000 + int(m.group(6)),
                    "timeoutMs": int(m.group(7)) * 1000 + int(m.group(8)),
                }
        return out

    def bfd_state(self, addr: str) -> str:
        """BIRD's BFD state for the session to addr ("Up", "Down", ...; "absent": none)."""
        return self.bfd_sessions().get(addr, {}).get("state", "absent")

    def bfd_events(self, addr: str) -> list[tuple[float, str]]:
        """(wall-clock time, text) of each BFD event BIRD logged for the session to addr, in
        order: "added", "removed", "expired" (the detection time ran out: a failure),
        "changed state from X to Y". Needs bfd= (which turns the millisecond log on)."""
        out = []
        pat = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\.(\d{3}) .*?"
                         r"Session to " + re.escape(addr) + r" (.*)$")
        for line in self.proc.log_text().splitlines():
            m = pat.match(line)
            if m:
                ts = time.mktime(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S"))
                out.append((ts + int(m.group(2)) / 1000, m.group(3).strip()))
        return out

    def stop(self) -> None:
        self.proc.stop()
