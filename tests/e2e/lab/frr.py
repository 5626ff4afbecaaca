"""FRR as a peer (Frr: zebra, bgpd and optionally bfdd in a namespace, queried with vtysh)."""

from __future__ import annotations

import json
import os
import shutil
from typing import Any, Iterable, Optional

from .base import FRR_DIR, run
from .checks import wait_until
from .netns import Lab, Namespace
from .peers import BfdTimers, Neighbor, Origin
from .process import Proc


class Frr:
    """zebra + bgpd (+ bfdd with bfd=) in a namespace, with their own pathspace (-N) and vty
    socket dir.

    Quirks (FRR 8.4 Debian): zebra refuses `-u root` ("root is not part of vty group frrvty")
    and has no -S, so both daemons run `-u frr -g frr` from a frr-owned state dir; -N creates
    /var/run/frr/<name>/, which we remove afterwards; vtysh must be given --vty_socket without
    -N (with -N it looks for /etc/frr/<name>/vtysh.conf and finds no daemons).
    bfdd takes the same options plus --bfdctl (its control socket, else shared
    /var/run/frr/bfdd.sock); bgpd reaches it through zebra (same -z socket), so zebra starts
    first, then bfdd, then bgpd.
    """
    binaries = [f"{FRR_DIR}/zebra", f"{FRR_DIR}/bgpd", "vtysh"]
    bfd_binaries = binaries + [f"{FRR_DIR}/bfdd"]
    BFD_PROFILE = "lab"

    def __init__(self, lab: Lab, ns: Namespace, router_id: str, asn: int,
                 neighbors: list[Neighbor], origins: Iterable[Origin] = (),
                 next_hop_v6: Optional[str] = None, name: str = "frr", hold_time: int = 9,
                 maximum_paths: int = 16, bfd: Optional[BfdTimers] = None,
                 import_routes: bool = True, graceful_restart: bool = True):
        """bfd: also run bfdd with a profile of these timers, and `neighbor X bfd` + `neighbor X
        bfd profile` for every neighbour (single hop for a directly connected eBGP peer).
        import_routes=False: a deny-all inbound route-map and no soft-reconfiguration (FRR as
        a VIP speaker keeps nothing it receives). graceful_restart=False: `bgp
        graceful-restart-disable` (FRR advertises graceful restart by default, so a peer that
        honours it keeps a stopped or silent FRR's routes for the restart time)."""
        self.lab, self.ns, self.neighbors = lab, ns, neighbors
        self.bfd = bfd
        self.pathspace = f"{lab.prefix}{name}"
        self.dir = lab.path(name)
        os.makedirs(self.dir, exist_ok=True)
        origins = list(origins)
        # Route-maps come before `router bgp`: a `network ... route-map X` read before X exists
        # is only applied when FRR's route-map delay timer (5 s) fires, which delays the first
        # UPDATE by 5 s.
        c = ["frr defaults traditional", f"hostname {name}", "log stdout debugging", "!"]
        if origins:
            o = origins[0]
            c += ["route-map ORIGIN permit 10",
                  f" set community {' '.join(o.communities)}",
                  f" set large-community {' '.join(o.large)}",
                  "!"]
        if not import_routes:
            c += ["route-map IMPORT-NONE deny 10", "!"]
        nh6 = next_hop_v6 or next((nb.next_hop_v6 for nb in neighbors if nb.next_hop_v6), None)
        if nh6:
            c += ["route-map NH6 permit 10", f" set ipv6 next-hop global {nh6}", "!"]
        c += [
            f"router bgp {asn}",
            f" bgp router-id {router_id}",
            " no bgp ebgp-requires-policy",
            " no bgp network import-check",
            " no bgp default ipv4-unicast",
            " bgp bestpath as-path multipath-relax",
            *([] if graceful_restart else [" bgp graceful-restart-disable"]),
        ]
        for nb in neighbors:
            c += [f" neighbor {nb.address} remote-as {nb.asn}",
                  f" neighbor {nb.address} timers {hold_time // 3} {hold_time}",
                  f" neighbor {nb.address} timers connect 1",
                  f" neighbor {nb.address} advertisement-interval 0"]
            if nb.passive:
                c.append(f" neighbor {nb.address} passive")
            if bfd:
                c += [f" neighbor {nb.address} bfd",
                      f" neighbor {nb.address} bfd profile {self.BFD_PROFILE}"]
        for afi in ("ipv4", "ipv6"):
            c.append(f" address-family {afi} unicast")
            c.append(f"  maximum-paths {maximum_paths}")
            c.append(f"  maximum-paths ibgp {maximum_paths}")
            for o in origins:
                if (":" in o.prefix) == (afi == "ipv6"):
                    c.append(f"  network {o.prefix} route-map ORIGIN")
            for nb in neighbors:
                c.append(f"  neighbor {nb.address} activate")
                if nb.rr_client:
                    c.append(f"  neighbor {nb.address} route-reflector-client")
                if nb.add_paths_tx:
                    c.append(f"  neighbor {nb.address} addpath-tx-all-paths")
                if import_routes:
                    c.append(f"  neighbor {nb.address} soft-reconfiguration inbound")
                else:
                    c.append(f"  neighbor {nb.address} route-map IMPORT-NONE in")
                if afi == "ipv6" and (nb.next_hop_v6 or next_hop_v6):
                    c.append(f"  neighbor {nb.address} route-map NH6 out")
            c.append(" exit-address-family")
        c.append("!")
        self.bgpd_conf = os.path.join(self.dir, "bgpd.conf")
        self.zebra_conf = os.path.join(self.dir, "zebra.conf")
        with open(self.bgpd_conf, "w") as f:
            f.write("\n".join(c) + "\n")
        with open(self.zebra_conf, "w") as f:
            f.write(f"hostname {name}\n")
        shutil.copy(self.bgpd_conf, lab.path(f"{name}-bgpd.conf"))  # dumped on failure
        if bfd:
            self.bfdd_conf = os.path.join(self.dir, "bfdd.conf")
            with open(self.bfdd_conf, "w") as f:
                f.write("\n".join([
                    f"hostname {name}",
                    "log stdout debugging",
                    "!",
                    "bfd",
                    f" profile {self.BFD_PROFILE}",
                    f"  transmit-interval {bfd.min_tx_ms}",
                    f"  receive-interval {bfd.min_rx_ms}",
                    f"  detect-multiplier {bfd.multiplier}",
                    " exit",
                    "exit",
                ]) + "\n")
            shutil.copy(self.bfdd_conf, lab.path(f"{name}-bfdd.conf"))
        self._start(name, bgpd_conf=self.bgpd_conf, bfdd_conf=self.bfdd_conf if bfd else None)

    @classmethod
    def booted(cls, lab: Lab, ns: Namespace, config_dir: Optional[str], name: str = "frr",
               bgpd: bool = True, bfdd: bool = True) -> "Frr":
        """FRR started as its packaged init script starts it with the integrated config:
        zebra, bfdd and bgpd with no config of their own, then `vtysh -b` applies
        config_dir/frr.conf (a file a test takes as it is, say docs/routers/frr.conf).
        config_dir None: nothing applied (zebra alone, bgpd=False and bfdd=False, is the FIB
        of another BGP daemon: self.zserv is its socket)."""
        self = cls.__new__(cls)
        self.lab, self.ns, self.neighbors, self.bfd = lab, ns, [], None
        self.pathspace = f"{lab.prefix}{name}"
        self.dir = lab.path(name)
        os.makedirs(self.dir, exist_ok=True)
        self.zebra_conf = os.path.join(self.dir, "zebra.conf")
        confs = {}
        for daemon, wanted in (("zebra", True), ("bfdd", bfdd), ("bgpd", bgpd)):
            if wanted:
                confs[daemon] = os.path.join(self.dir, f"{daemon}.conf")
                open(confs[daemon], "w").close()  # empty: frr.conf says it all
        self._start(name, bgpd_conf=confs.get("bgpd"), bfdd_conf=confs.get("bfdd"))
        if config_dir:
            shutil.copy(os.path.join(config_dir, "frr.conf"), lab.path(f"{name}-frr.conf"))
            run(["vtysh", "--vty_socket", self.dir, "--config_dir", config_dir, "-b"], timeout=30)
        return self

    def _start(self, name: str, bgpd_conf: Optional[str], bfdd_conf: Optional[str]) -> None:
        """Starts zebra, then bfdd (bfdd_conf) and bgpd (bgpd_conf), each in self.ns with its
        config file (zebra's is self.zebra_conf)."""
        lab, ns = self.lab, self.ns
        run(["chown", "-R", "frr:frr", self.dir])
        self.zserv = zsock = os.path.join(self.dir, "zserv.api")
        common = ["-N", self.pathspace, "--vty_socket", self.dir, "-z", zsock,
                  "-u", "frr", "-g", "frr", "--log", "stdout"]
        lab.on_cleanup(lambda: shutil.rmtree(f"/var/run/frr/{self.pathspace}", ignore_errors=True))
        self.zebra = lab.start(ns, f"{name}-zebra", [f"{FRR_DIR}/zebra", "-f", self.zebra_conf,
                                                     "-i", os.path.join(self.dir, "zebra.pid")] + common)
        wait_until(lambda: os.path.exists(zsock), 10, 0.1, "zebra's zserv socket")
        self.bfdd: Optional[Proc] = None
        if bfdd_conf:
            self.bfdd = lab.start(ns, f"{name}-bfdd", [
                f"{FRR_DIR}/bfdd", "-f", bfdd_conf, "-i", os.path.join(self.dir, "bfdd.pid"),
                "--bfdctl", os.path.join(self.dir, "bfdd.sock")] + common)
            wait_until(lambda: os.path.exists(os.path.join(self.dir, "bfdd.vty")), 10, 0.1,
                       "bfdd's vty socket")
        self.bgpd: Optional[Proc] = None
        if bgpd_conf:
            self.bgpd = lab.start(ns, f"{name}-bgpd", [
                f"{FRR_DIR}/bgpd", "-f", bgpd_conf, "-i", os.path.join(self.dir, "bgpd.pid")]
                + common)
            wait_until(lambda: os.path.exists(os.path.join(self.dir, "bgpd.vty")), 10, 0.1,
                       "bgpd's vty socket")
        self.procs = [p for p in (self.zebra, self.bfdd, self.bgpd) if p]

    def vtysh(self, *commands: str) -> str:
        argv = ["vtysh", "--vty_socket", self.dir]
        for cmd in commands:
            argv += ["-c", cmd]
        return run(argv, timeout=10).stdout

    def vtysh_json(self, command: str) -> Any:
        return json.loads(self.vtysh(command) or "{}")

    def neighbor_state(self, addr: str) -> str:
        d = self.vtysh_json(f"show bgp neighbors {addr} json")
        return d.get(addr, {}).get("bgpState", "absent")

    def route_paths(self, prefix: str) -> list[dict]:
        afi = "ipv6" if ":" in prefix else "ipv4"
        d = self.vtysh_json(f"show bgp {afi} unicast {prefix} json")
        return d.get("paths", [])

    def route(self, prefix: str) -> Optional[dict]:
        paths = self.route_paths(prefix)
        if not paths:
            return None
        best = next((p for p in paths if p.get("bestpath", {}).get("overall")), paths[0])
        return {
            "nexthops": [nh["ip"] for nh in best.get("nexthops", []) if nh.get("scope") != "link-local"
                         and not nh["ip"].lower().startswith("fe80")],
            "communities": best.get("community", {}).get("string", "").split(),
            "largeCommunities": best.get("largeCommunity", {}).get("string", "").split(),
            "localPref": best.get("locPrf", best.get("localpref")),
            # FRR prints an empty AS_PATH as "Local".
            "asPath": best.get("aspath", {}).get("string", "").replace("Local", "").strip(),
            "paths": len(paths),
            "raw": best,
        }

    def kernel_nexthops(self, prefix: str) -> list[str]:
        return self.ns.kernel_nexthops(prefix)

    def bfd_peers(self) -> list[dict]:
        """bfdd's `show bfd peers json`: one dict per session with (FRR 8.4) "peer", "local",
        "interface", "status" ("up", "down", "init", "shutdown"), "diagnostic",
        "remote-diagnostic", "id", "remote-id", "receive-interval", "transmit-interval",
        "detect-multiplier" (ours, ms) and "remote-receive-interval", "remote-transmit-interval",
        "remote-detect-multiplier" (the peer's, as last received)."""
        d = self.vtysh_json("show bfd peers json")
        return d if isinstance(d, list) else []

    def bfd_peer(self, addr: str) -> Optional[dict]:
        """bfdd's session with addr (None: no session)."""
        return next((p for p in self.bfd_peers() if p.get("peer") == addr), None)

    def bfd_peer_state(self, addr: str) -> str:
        """bfdd's state of the session with addr ("up", "down", "init", ...; "absent": none)."""
        p = self.bfd_peer(addr)
        return p.get("status", "unknown") if p else "absent"

    def stop(self) -> None:
        for p in reversed(self.procs):
            p.stop()
