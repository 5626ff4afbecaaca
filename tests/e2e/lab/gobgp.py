"""GoBGP as a peer (Gobgp: gobgpd with its TOML config, queried and fed with the gobgp CLI)."""

from __future__ import annotations

import json
import os
from typing import Any, Iterable, Optional

from .base import run
from .checks import wait_until
from .netns import Lab, Namespace
from .peers import Neighbor, Origin
from .wire import _community_str


class Gobgp:
    """gobgpd with a per-instance gRPC port. Quirk: its first connect to a passive peer waits
    5-10 s whatever connect-retry says, so for quick tests let the other side dial
    (passive-mode here) or budget for it."""
    binaries = ["gobgpd", "gobgp"]
    _next_port = 50051 + (os.getpid() % 1000) * 7

    def __init__(self, lab: Lab, ns: Namespace, router_id: str, asn: int,
                 neighbors: list[Neighbor], origins: Iterable[Origin] = (),
                 name: str = "gobgp", hold_time: int = 9, local_address: Optional[str] = None,
                 import_routes: bool = True, api_socket: bool = False):
        """import_routes=False: routes from neighbours are rejected on import (GoBGP as a VIP
        speaker installs nothing it receives). api_socket: gRPC on a unix socket instead of a
        TCP port in ns, so the `gobgp` CLI runs from the host as it would on a node (no
        `ip netns exec` in its path)."""
        self.lab, self.ns, self.neighbors = lab, ns, neighbors
        Gobgp._next_port += 1
        self.port = Gobgp._next_port
        self.conf = lab.path(f"{name}.toml")
        t = [
            "[global.config]",
            f"  as = {asn}",
            f'  router-id = "{router_id}"',
            "  port = 179",
        ]
        if local_address:
            t.append(f'  local-address-list = ["{local_address}"]')
        t += [
            "[global.apply-policy.config]",
            # Not importing: GoBGP's import policy also sees its own `global rib add` routes, so
            # only what comes from a neighbour is rejected.
            f'  import-policy-list = ["{"accept-all" if import_routes else "import-none"}"]',
            '  default-import-policy = "accept-route"',
            '  export-policy-list = ["accept-all"]',
            '  default-export-policy = "accept-route"',
        ]
        for nb in neighbors:
            t += [
                "[[neighbors]]",
                "  [neighbors.config]",
                f'    neighbor-address = "{nb.address}"',
                f"    peer-as = {nb.asn}",
                "  [neighbors.transport.config]",
                f"    passive-mode = {'true' if nb.passive else 'false'}",
            ]
            if local_address:
                t.append(f'    local-address = "{local_address}"')
            t += [
                "  [neighbors.timers.config]",
                "    connect-retry = 1",
                f"    hold-time = {hold_time}",
                f"    keepalive-interval = {max(1, hold_time // 3)}",
                "    idle-hold-time-after-reset = 1",
                "  [[neighbors.afi-safis]]",
                "    [neighbors.afi-safis.config]",
                '      afi-safi-name = "ipv4-unicast"',
                # ADD-PATH send (RFC 7911): every path, up to 8, for each prefix.
                *(["    [neighbors.afi-safis.add-paths.config]", "      send-max = 8"]
                  if nb.add_paths_tx else []),
                "  [[neighbors.afi-safis]]",
                "    [neighbors.afi-safis.config]",
                '      afi-safi-name = "ipv6-unicast"',
                *(["    [neighbors.afi-safis.add-paths.config]", "      send-max = 8"]
                  if nb.add_paths_tx else []),
                # Per-neighbour import policy: accept everything.
                "  [neighbors.apply-policy.config]",
                '    import-policy-list = ["accept-all"]',
                '    default-import-policy = "accept-route"',
                '    default-export-policy = "accept-route"',
            ]
        if not import_routes:
            t += [
                "[[defined-sets.neighbor-sets]]",
                '  neighbor-set-name = "neighbors"',
                "  neighbor-info-list = [" + ", ".join(f'"{nb.address}"' for nb in neighbors) + "]",
                "[[policy-definitions]]",
                '  name = "import-none"',
                "  [[policy-definitions.statements]]",
                '    name = "from-neighbors"',
                "    [policy-definitions.statements.conditions.match-neighbor-set]",
                '      neighbor-set = "neighbors"',
                "    [policy-definitions.statements.actions]",
                '      route-disposition = "reject-route"',
            ]
        t += [
            "[[policy-definitions]]",
            '  name = "accept-all"',
            "  [[policy-definitions.statements]]",
            '    name = "accept"',
            "    [policy-definitions.statements.actions]",
            '      route-disposition = "accept-route"',
        ]
        with open(self.conf, "w") as f:
            f.write("\n".join(t) + "\n")
        self._start(name, api_socket)
        for o in origins:
            self.add_route(o)

    @classmethod
    def from_text(cls, lab: Lab, ns: Namespace, text: str, name: str = "gobgp") -> "Gobgp":
        """gobgpd with a config written elsewhere (say docs/routers/gobgp.toml, as text)."""
        self = cls.__new__(cls)
        self.lab, self.ns, self.neighbors = lab, ns, []
        Gobgp._next_port += 1
        self.port = Gobgp._next_port
        self.conf = lab.path(f"{name}.toml")
        with open(self.conf, "w") as f:
            f.write(text)
        self._start(name, api_socket=False)
        return self

    def _start(self, name: str, api_socket: bool) -> None:
        self.target = f"unix://{self.lab.path(name + '.grpc')}" if api_socket else None
        self.proc = self.lab.start(self.ns, name, [
            "gobgpd", "-f", self.conf, "-p", "--pprof-disable",
            f"--api-hosts={self.target or f'127.0.0.1:{self.port}'}"])
        wait_until(lambda: self.cli("global") is not None, 15, 0.2, f"{name} gRPC API")
        self.procs = [self.proc]

    def cli(self, *args: str, json_out: bool = False) -> Any:
        argv = (["gobgp", "--target", self.target] if self.target else
                ["gobgp", "-u", "127.0.0.1", "-p", str(self.port)]) + list(args)
        if json_out:
            argv.append("-j")
        out = (run(argv, timeout=10) if self.target else self.ns.run(argv, timeout=10)).stdout
        return json.loads(out) if json_out else out

    def add_route(self, o: Origin) -> None:
        fam = "ipv6" if ":" in o.prefix else "ipv4"
        # origin igp: GoBGP defaults to INCOMPLETE, and BIRD only merges ECMP paths of equal origin.
        args = ["global", "rib", "add", "-a", fam, o.prefix, "origin", "igp"]
        if o.next_hop:
            args += ["nexthop", o.next_hop]
        if o.communities:
            args += ["community", ",".join(o.communities)]
        if o.large:
            args += ["large-community", ",".join(o.large)]
        self.cli(*args)

    def del_route(self, o: Origin) -> None:
        fam = "ipv6" if ":" in o.prefix else "ipv4"
        self.cli("global", "rib", "del", "-a", fam, o.prefix)

    def neighbor_state(self, addr: str) -> str:
        d = self.cli("neighbor", addr, json_out=True)
        st = d.get("state", {}).get("session_state", "absent")
        names = {1: "Idle", 2: "Connect", 3: "Active", 4: "OpenSent", 5: "OpenConfirm", 6: "Established"}
        if isinstance(st, int):
            return names.get(st, str(st))
        return str(st).capitalize() if str(st).islower() else str(st)

    def rib(self, prefix: str, family: Optional[str] = None) -> list[dict]:
        family = family or ("ipv6" if ":" in prefix else "ipv4")
        d = self.cli("global", "rib", "-a", family, prefix, json_out=True)
        if isinstance(d, dict):
            return d.get(prefix, []) or next(iter(d.values()), [])
        return d or []

    def route(self, prefix: str) -> Optional[dict]:
        paths = self.rib(prefix)
        if not paths:
            return None
        best = next((p for p in paths if p.get("best")), paths[0])
        out = {"nexthops": [], "communities": [], "largeCommunities": [], "localPref": None,
               "asPath": "", "paths": len(paths), "raw": best}
        for a in best.get("attrs", []):
            t = a.get("type")
            if t == 3:
                out["nexthops"].append(a["nexthop"])
            elif t == 14:
                out["nexthops"] += [nh for nh in ([a.get("nexthop")] if a.get("nexthop") else [])
                                    if not nh.lower().startswith("fe80")]
            elif t == 5:
                out["localPref"] = a.get("value")
            elif t == 8:
                out["communities"] = [_community_str(v) for v in a.get("communities", [])]
            elif t == 32:
                out["largeCommunities"] = [f"{v['ASN']}:{v['LocalData1']}:{v['LocalData2']}"
                                           for v in a.get("value", [])]
            elif t == 2:
                segs = a.get("as_paths", [])
                out["asPath"] = " ".join(str(x) for s in segs for x in s.get("asns", []))
        if not out["nexthops"] and best.get("nexthop"):
            out["nexthops"] = [best["nexthop"]]
        return out

    def stop(self) -> None:
        self.proc.stop()
