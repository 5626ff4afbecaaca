"""ExaBGP as a peer (Exabgp: foreground exabgp whose API process records every received
message, which stands in for a RIB; optionally a FIFO of API commands)."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import sys
from typing import Iterable, Optional

from .base import E2E_DIR
from .netns import Lab, Namespace
from .peers import Neighbor, Origin



def exabgp_env(bind: str) -> dict[str, str]:
    """ExaBGP in the foreground as the lab runs it (root, no privilege drop, no CLI pipe, logs to
    stdout), listening on bind:179 so that passive neighbours can be dialled."""
    return {
        "exabgp_daemon_daemonize": "false",
        "exabgp_daemon_user": "root",
        "exabgp_daemon_drop": "false",
        "exabgp_log_destination": "stdout",
        "exabgp_api_cli": "false",
        "exabgp_tcp_bind": bind,
        "exabgp_tcp_port": "179",
    }

class Exabgp:
    """Foreground ExaBGP. Its API process (exabgp_recorder.py) appends every received JSON
    message to a file, which stands in for a RIB."""
    binaries = ["exabgp"]

    def __init__(self, lab: Lab, ns: Namespace, router_id: str, asn: int,
                 neighbors: list[Neighbor], local_address: str,
                 origins: Iterable[Origin] = (), name: str = "exabgp", hold_time: int = 9,
                 record: bool = True, control_fifo: Optional[str] = None):
        """record=False: no API process receives UPDATEs (ExaBGP as a VIP speaker).
        control_fifo: a FIFO whose lines are ExaBGP API commands (`withdraw route ...`),
        relayed by exabgp_control.py; the FIFO is created here."""
        self.lab, self.ns, self.neighbors = lab, ns, neighbors
        self.control_fifo = control_fifo
        self.conf = lab.path(f"{name}.conf")
        self.received = lab.path(f"{name}-received.jsonl")
        open(self.received, "w").close()
        origins = list(origins)
        c = []
        processes = []
        if record:
            processes.append("recorder")
            c += ["process recorder {",
                  f"  run {sys.executable} {os.path.join(E2E_DIR, 'exabgp_recorder.py')} "
                  f"{self.received};",
                  "  encoder json;",
                  "}"]
        if control_fifo:
            os.mkfifo(control_fifo)
            processes.append("control")
            c += ["process control {",
                  f"  run {sys.executable} {os.path.join(E2E_DIR, 'exabgp_control.py')} "
                  f"{control_fifo};",
                  "  encoder text;",
                  "}"]
        for nb in neighbors:
            c += [
                f"neighbor {nb.address} {{",
                f"  router-id {router_id};",
                f"  local-address {local_address};",
                f"  local-as {asn};",
                f"  peer-as {nb.asn};",
                f"  hold-time {hold_time};",
                f"  passive {'true' if nb.passive else 'false'};",
                "  family { ipv4 unicast; ipv6 unicast; }",
                *([f"  api {{ processes [ {' '.join(processes)} ]; neighbor-changes; "
                   + ("receive { parsed; update; } }" if record else "}")] if processes else []),
            ]
            if origins:
                c.append("  static {")
                for o in origins:
                    nh = o.next_hop or ("self" if ":" not in o.prefix else nb.next_hop_v6)
                    attrs = ""
                    if o.communities:
                        attrs += f" community [ {' '.join(o.communities)} ]"
                    if o.large:
                        attrs += f" large-community [ {' '.join(o.large)} ]"
                    c.append(f"    route {o.prefix} next-hop {nh}{attrs};")
                c.append("  }")
            c.append("}")
        with open(self.conf, "w") as f:
            f.write("\n".join(c) + "\n")
        env = dict(exabgp_env(local_address), exabgp_api_ack="false",
                   exabgp_log_network="true")
        self.proc = lab.start(ns, name, ["exabgp", self.conf], env=env)
        self.procs = [self.proc]

    def messages(self) -> list[dict]:
        out = []
        with open(self.received, errors="replace") as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    with contextlib.suppress(ValueError):
                        out.append(json.loads(line))
        return out

    def neighbor_state(self, addr: str) -> str:
        state = "absent"
        for m in self.messages():
            nb = m.get("neighbor", {})
            if nb.get("address", {}).get("peer") != addr:
                continue
            if m.get("type") == "state":
                state = nb.get("state", state)
            elif m.get("type") == "update":
                state = "up"
        return {"up": "Established", "connected": "Connect", "down": "Idle"}.get(state, state)

    def received_routes(self) -> dict[str, dict]:
        """prefix -> current route (announces minus later withdraws), with attributes."""
        rib: dict[str, dict] = {}
        for m in self.messages():
            nb = m.get("neighbor", {})
            if m.get("type") == "state" and nb.get("state") == "down":
                peer = nb.get("address", {}).get("peer")
                rib = {k: v for k, v in rib.items() if v["peer"] != peer}
                continue
            if m.get("type") != "update":
                continue
            upd = nb.get("message", {}).get("update", {})
            attr = upd.get("attribute", {})
            for fam, by_nh in upd.get("announce", {}).items():
                for nh, nlris in by_nh.items():
                    for n in nlris:
                        prefix = n["nlri"] if isinstance(n, dict) else n
                        rib[prefix] = {
                            "peer": nb.get("address", {}).get("peer"),
                            "family": fam,
                            "nexthops": [nh],
                            "communities": [f"{a}:{b}" for a, b in attr.get("community", [])],
                            "largeCommunities": [f"{a}:{b}:{c}" for a, b, c in attr.get("large-community", [])],
                            "localPref": attr.get("local-preference"),
                            "asPath": " ".join(str(x) for x in attr.get("as-path", [])),
                        }
            for fam, nlris in upd.get("withdraw", {}).items():
                for n in nlris:
                    rib.pop(n["nlri"] if isinstance(n, dict) else n, None)
        return rib

    def route(self, prefix: str) -> Optional[dict]:
        return self.received_routes().get(str(ipaddress.ip_network(prefix)))

    def stop(self) -> None:
        self.proc.stop()
