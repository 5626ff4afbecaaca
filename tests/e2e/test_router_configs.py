#!/usr/bin/env python3
"""e2e: the fabric-side router configurations of docs/routers.md, each run as shipped (issue 42).

docs/routers/bird.conf (BIRD 2.0.12), frr.conf (FRR 8.4: zebra, bfdd and bgpd booted with
`vtysh -b`, as its init script boots them) and gobgp.toml (GoBGP 3.10) run in turn in a fabric
namespace at 192.0.2.1, the address they are written for, against three vipd nodes at
192.0.2.11-13 in AS 65001-65003. Each vipd has the key of the files as its
peers[].passwordFile, BFD (not towards GoBGP, which has none), `mode: static-pod` (vipd advertises
graceful restart only in its two Kubernetes modes, here with a 3 s restart time) and, on node 3, a
3 s drain.gracefulShutdownTime. What the lab must change in a file is in SUBSTITUTIONS (BIRD's
log line, nothing else), and each substitution must find its text exactly once. For each router:

1. Node 3 first starts with a wrong TCP-MD5 key: it never reaches Established (5 s) while nodes
   1 and 2, with the right key, do; node 3 then restarts with the right key.
2. Every session Established; BFD Up in the router's and in vipd's view (BIRD, FRR); graceful
   restart negotiated, as the router's neighbour view shows it, with vipd's restart time.
3. The router's kernel has each VIP (/32 and /128) as one ECMP route over the three nodes.
   GoBGP: a path from each node in its RIB (it has no FIB; its zebra client cannot read FRR
   8.4's zebra, see docs/routers.md).
4. ADD-PATH send: every vipd counts 3 announcers of each VIP (itself and the two paths sent back).
5. GRACEFUL_SHUTDOWN honoured: `vipctl withdraw` on node 3; while the router still holds node 3's
   paths, they carry local-pref 0 (GoBGP 1: it cannot set 0) and the kernel routes are over nodes
   1 and 2 only (GoBGP: they are not its best paths), and node 1's fabric view shows node 3's
   path as draining (the router passed the community back); then the paths go.
6. The graceful-restart helper: node 2's vipd is killed (no NOTIFICATION); the router keeps its
   path (and the kernel its next hop) for vipd's restart time, then drops it.
7. BFD meets graceful restart: node 1's vipd frozen (SIGSTOP). BIRD, whose file says `bfd
   graceful`, drops the path after BFD's detection time (0.9 s) plus the restart time; FRR at
   BFD's detection time, before a restart time could have passed.

Not run, because the router cannot: BFD with GoBGP (it has none) and GoBGP's routes in a kernel.
"""
import os
import signal
import sys
import time
from dataclasses import dataclass, field

import lab

ROUTERS_DIR = os.path.normpath(os.path.join(lab.E2E_DIR, "..", "..", "docs", "routers"))
KEY = "vipd-example-key"  # the key written in the three files
GSHUT_TIME_S = 3
RESTART_TIME_S = 3  # vipd's handoff.restartTime: the graceful-restart time it advertises
# (file, [(text in the shipped file, what the lab runs instead)]): only what the lab must change.
SUBSTITUTIONS = {
    # BIRD logs to syslog; the lab keeps its log (lab.Bird reads it on failure).
    "bird": ("bird.conf", [("log syslog all;", "log stderr all;")]),
    # vtysh -b reads docs/routers/frr.conf itself (--config_dir): nothing changed.
    "frr": ("frr.conf", []),
    "gobgp": ("gobgp.toml", []),
}


def shipped(name: str, subst: list) -> str:
    """The shipped file, each substitution found exactly once and made."""
    with open(os.path.join(ROUTERS_DIR, name)) as f:
        text = f.read()
    for old, new in subst:
        lab.check(text.count(old) == 1,
                  f"the shipped {name} must hold {old!r} exactly once (the test replaces it)")
        text = text.replace(old, new)
    return text


def write_key(L: lab.Lab, name: str, text: str) -> str:
    path = L.path(name)
    with open(path, "w") as f:
        f.write(text + "\n")
    os.chmod(path, 0o600)
    return path


class Router:
    """One router kind behind the same questions: the peer object (lab.Bird, lab.Frr,
    lab.Gobgp) and what its neighbour, BFD and path views say. bfd: it runs BFD; fib: it
    installs its routes in the kernel."""

    def __init__(self, kind: str, peer, bfd: bool, fib: bool, drained_pref: int = 0,
                 bfd_graceful: bool = False):
        self.kind, self.peer, self.bfd, self.fib = kind, peer, bfd, fib
        # A BFD Down ends the session as a graceful restart (BIRD's `bfd graceful`).
        self.bfd_graceful = bfd_graceful
        # The local-pref its config gives a GRACEFUL_SHUTDOWN path (GoBGP 3.10 cannot set 0).
        self.drained_pref = drained_pref

    def established(self, addr: str) -> bool:
        return self.peer.neighbor_state(addr) == "Established"

    def bfd_up(self, addr: str) -> bool:
        if self.kind == "bird":
            return self.peer.bfd_state(addr) == "Up"
        return self.peer.bfd_peer_state(addr) == "up"

    def graceful_restart(self, addr: str) -> tuple[bool, str]:
        """(negotiated, with vipd's restart time, the evidence as the router prints it)."""
        if self.kind == "bird":
            text = self.peer.protocol_all(addr)
            caps = text.split("Neighbor capabilities", 1)[-1].split("Session:", 1)[0]
            gr = caps.split("Graceful restart", 1)[-1] if "Graceful restart" in caps else ""
            return f"Restart time: {RESTART_TIME_S}\n" in gr + "\n", caps.strip()
        if self.kind == "frr":
            d = self.peer.vtysh_json(f"show bgp neighbors {addr} json").get(addr, {})
            cap = d.get("neighborCapabilities", {}).get("gracefulRestart")
            info = d.get("gracefulRestartInfo", {})
            return (cap == "advertisedAndReceived" and info.get("timers", {}).get(
                "receivedRestartTimer") == RESTART_TIME_S), f"gracefulRestart {cap!r}; {info}"
        text = self.peer.cli("neighbor", addr)
        gr = text.split("graceful-restart:", 1)[-1] if "graceful-restart:" in text else ""
        lines = [line.strip() for line in gr.splitlines()[:4]]
        return (bool(lines) and lines[0] == "advertised and received"
                and f"Remote: restart time {RESTART_TIME_S} sec" in lines,
                "graceful-restart: " + "; ".join(lines))

    def paths_from(self, prefix: str) -> list[str]:
        """The neighbours the router holds a path for prefix from (GoBGP)."""
        return sorted((p.get("neighbor-ip") for p in self.peer.rib(prefix)), key=lab._addr_key)

    def best_from(self, prefix: str) -> str:
        """The neighbour of GoBGP's best path for prefix."""
        return next((p.get("neighbor-ip") for p in self.peer.rib(prefix) if p.get("best")), "")

    def local_pref(self, prefix: str, addr: str):
        """The LOCAL_PREF of the router's path for prefix from addr: None when it holds no such
        path, "-" when the path has none (an eBGP path left alone: 100 in the decision)."""
        if self.kind == "bird":
            p = self.peer.path_from(prefix, addr)
            return None if p is None else p["localPref"]
        if self.kind == "frr":
            for p in self.peer.route_paths(prefix):
                if p.get("peer", {}).get("peerId") == addr:
                    return p.get("locPrf", "-")
            return None
        for p in self.peer.rib(prefix):
            if p.get("neighbor-ip") == addr:
                return next((a.get("value") for a in p.get("attrs", []) if a.get("type") == 5),
                            "-")
        return None


def start_router(L: lab.Lab, kind: str, topo: lab.Topology, nodes) -> Router:
    name, subst = SUBSTITUTIONS[kind]
    if kind == "bird":
        text = shipped(name, subst)
        neighbors = [lab.Neighbor(n.v4, n.asn, name=f"node{n.index}") for n in nodes]
        return Router(kind, lab.Bird.from_text(L, topo.fabric, text, neighbors), bfd=True,
                      fib=True, bfd_graceful=True)
    if kind == "frr":
        shipped(name, subst)  # read only for the check: vtysh reads the file itself
        return Router(kind, lab.Frr.booted(L, topo.fabric, ROUTERS_DIR, name="frr"), bfd=True,
                      fib=True)
    return Router(kind, lab.Gobgp.from_text(L, topo.fabric, shipped(name, subst)), bfd=False,
                  fib=False, drained_pref=1)


def start_vipd(L: lab.Lab, topo: lab.Topology, node: lab.Node, key_file: str, bfd: bool,
               name: str, gshut: bool = False) -> lab.Vipd:
    """vipd on node as the test runs it; gshut: a drain announces GRACEFUL_SHUTDOWN for
    GSHUT_TIME_S (the lab's 300 ms otherwise, so that the others stop quickly)."""
    c = lab.vipd_config(L, node, node.asn, topo.fabric_v4, lab.FABRIC_ASN, name)
    run_dir = L.path(f"{name}-run")
    os.makedirs(run_dir, exist_ok=True)
    c["mode"] = "static-pod"  # vipd advertises graceful restart in its Kubernetes modes only
    c["handoff"] = {"dir": run_dir, "restartTime": f"{RESTART_TIME_S}s"}
    c["peers"][0]["passwordFile"] = key_file
    if bfd:
        c["peers"][0]["bfd"] = lab.BfdTimers().vipd()
    if gshut:
        c["drain"]["gracefulShutdownTime"] = f"{GSHUT_TIME_S}s"
    c["returnPath"] = {"mode": "off"}  # this test is about the router
    return lab.Vipd(L, node.ns, c, name=name)


def fabric(v: lab.Vipd, vip: str) -> dict:
    return v.status().get("fabric", {}).get("vips", {}).get(vip, {})


def fabric_count(v: lab.Vipd, vip: str) -> int:
    return int(fabric(v, vip).get("count", -1))


@dataclass
class Run:
    """One router's lab: its topology, the router, the vipds (node 1, 2, 3 once started), the
    figures measured so far and the next hops each VIP's ECMP route should have."""
    L: lab.Lab
    kind: str
    topo: lab.Topology
    router: Router
    vipds: list = field(default_factory=list)
    figures: dict = field(default_factory=dict)

    @property
    def nodes(self) -> list:
        return self.topo.nodes

    def want(self, vip: str) -> list[str]:
        return sorted((n.v6 if ":" in vip else n.v4 for n in self.nodes), key=lab._addr_key)


def md5_sessions(r: Run, good: str, bad: str) -> None:
    """1. Nodes 1 and 2 Established with the right key, node 3 never with a wrong one; then node
    3 with the right key."""
    n3 = r.nodes[2]
    t0 = time.monotonic()
    r.vipds = [start_vipd(r.L, r.topo, n, good, r.router.bfd, f"vipd-n{n.index}")
               for n in r.nodes[:2]]
    wrong = start_vipd(r.L, r.topo, n3, bad, r.router.bfd, "vipd-n3-wrong-key")
    lab.wait_established(r.router.peer, [n.v4 for n in r.nodes[:2]], 45)
    r.figures["established"] = time.monotonic() - t0
    lab.wait_never(lambda: r.router.established(n3.v4), 5, 0.2,
                   f"{r.kind}: node 3 with a wrong TCP-MD5 key Established")
    st = wrong.peer_status(r.topo.fabric_v4)
    lab.log(f"{r.kind}: node 3 with a wrong key after 5 s: vipd {st['state']}, last error "
            f"{st['lastError']!r}")
    wrong.stop()
    t1 = time.monotonic()
    r.vipds.append(start_vipd(r.L, r.topo, n3, good, r.router.bfd, "vipd-n3", gshut=True))
    lab.wait_established(r.router.peer, [n3.v4], 45)
    r.figures["node 3 established"] = time.monotonic() - t1


def bfd_and_graceful_restart(r: Run) -> None:
    """2. BFD Up on both sides (routers with BFD); graceful restart negotiated."""
    for n, v in zip(r.nodes, r.vipds):
        if r.router.bfd:
            lab.wait_until(lambda n=n, v=v: r.router.bfd_up(n.v4)
                           and v.bfd_status(r.topo.fabric_v4)["state"] == "Up", 20, 0.1,
                           f"{r.kind}: BFD Up with node {n.index} on both sides")
        ok, evidence = r.router.graceful_restart(n.v4)
        if n.index == 1:
            lab.log(f"{r.kind}: graceful restart with node 1 as the router shows it:\n{evidence}")
        lab.check(ok, f"{r.kind}: graceful restart not negotiated with node {n.index}: "
                  f"{evidence}")


def routes_and_fabric_view(r: Run) -> None:
    """3. The VIPs as ECMP routes in the router's kernel (GoBGP, with no FIB: a path from every
    node in its RIB); 4. every vipd counting 3 announcers of each VIP (ADD-PATH send)."""
    t0 = time.monotonic()
    for vip in (lab.VIP4, lab.VIP6):
        if r.router.fib:
            lab.wait_until(lambda vip=vip: r.topo.fabric.kernel_nexthops(vip) == r.want(vip),
                           30, 0.1, lambda vip=vip: f"{r.kind}: kernel ECMP route {vip} via "
                           f"{r.want(vip)} (have {r.topo.fabric.route_show(vip).strip()!r})")
        else:
            lab.wait_until(lambda vip=vip: r.router.paths_from(vip) == r.want(lab.VIP4), 30,
                           0.1, lambda vip=vip: f"{r.kind}: a path for {vip} from each node "
                           f"(have {r.router.paths_from(vip)})")
    r.figures["routes"] = time.monotonic() - t0
    if r.router.fib:
        lab.log(f"{r.kind}: kernel routes:\n{r.topo.fabric.route_show(lab.VIP4).rstrip()}\n"
                f"{r.topo.fabric.route_show(lab.VIP6).rstrip()}")
    else:
        lab.log(f"{r.kind}: RIB:\n{r.router.peer.cli('global', 'rib', '-a', 'ipv4')}"
                f"{r.router.peer.cli('global', 'rib', '-a', 'ipv6')}")
    for vip in (lab.VIP4, lab.VIP6):
        lab.wait_until(lambda vip=vip: [fabric_count(v, vip) for v in r.vipds] == [3, 3, 3],
                       30, 0.2, lambda vip=vip: f"{r.kind}: every node counting 3 announcers "
                       f"of {vip}: {[fabric_count(v, vip) for v in r.vipds]}; node 1's view: "
                       f"{fabric(r.vipds[0], vip)}")
    r.figures["fabric view"] = time.monotonic() - t0
    lab.log(f"{r.kind}: node 1's vipctl status:\n{r.vipds[0].vipctl('status')}")


def graceful_shutdown(r: Run) -> None:
    """5. `vipctl withdraw` on node 3: while the router still holds node 3's paths they carry
    the low local-pref, are out of the ECMP routes (GoBGP: not its best paths) and node 1 sees
    node 3's path as draining (the router passed the community back); then they go."""
    router, n3 = r.router, r.nodes[2].v4
    before = [router.local_pref(vip, n3) for vip in (lab.VIP4, lab.VIP6)]
    lab.check(before == ["-", "-"] or before == [100, 100],
              f"{r.kind}: node 3's paths carry no lowered local-pref before the drain: {before}")
    p = r.vipds[2].vipctl_run("withdraw")
    lab.check(p.returncode == 0, f"vipctl withdraw on node 3: {p.returncode} {p.stderr}")
    t0 = time.monotonic()

    def lowered() -> bool:
        if not any(a.get("draining") for a in fabric(r.vipds[0], lab.VIP4)["announcers"]):
            return False
        for vip in (lab.VIP4, lab.VIP6):
            if router.local_pref(vip, n3) != router.drained_pref:
                return False
            if router.fib and r.topo.fabric.kernel_nexthops(vip) != r.want(vip)[:2]:
                return False
            if not router.fib and router.best_from(vip) not in r.want(lab.VIP4)[:2]:
                return False
        return True

    def state() -> str:
        return "; ".join(
            f"{vip}: local-pref {router.local_pref(vip, n3)!r}, "
            + (f"kernel {r.topo.fabric.route_show(vip).strip()!r}" if router.fib else
               f"best from {router.best_from(vip)}") for vip in (lab.VIP4, lab.VIP6))
    where = "the kernel routes" if router.fib else "the best paths"
    lab.wait_until(lowered, GSHUT_TIME_S, 0.05,
                   lambda: f"{r.kind}: node 3's paths at local-pref {router.drained_pref}, out "
                   f"of {where} and draining in node 1's view ({state()}; node 1's view "
                   f"{fabric(r.vipds[0], lab.VIP4)['announcers']})")
    r.figures["gshut"] = time.monotonic() - t0
    lab.wait_until(lambda: router.local_pref(lab.VIP4, n3) is None
                   and router.local_pref(lab.VIP6, n3) is None, 15, 0.1,
                   f"{r.kind}: node 3's paths withdrawn")
    lab.log(f"{r.kind}: node 3 drained: local-pref {router.drained_pref} and out of {where} "
            f"after {r.figures['gshut']:.2f} s, withdrawn after {time.monotonic() - t0:.2f} s")


def graceful_restart_helper(r: Run) -> None:
    """6. Node 2's vipd crashes (SIGKILL: no NOTIFICATION): the router keeps its path (stale,
    still forwarding) for vipd's restart time, then drops it."""
    n2 = r.nodes[1].v4
    t0 = time.monotonic()
    r.vipds[1].proc.signal(signal.SIGKILL)
    kept = [0.0]

    def gone() -> bool:
        if r.router.local_pref(lab.VIP4, n2) is not None and (
                not r.router.fib or n2 in r.topo.fabric.kernel_nexthops(lab.VIP4)):
            kept.append(time.monotonic() - t0)
            return False
        return True
    lab.wait_until(gone, RESTART_TIME_S + 5, 0.05, f"{r.kind}: node 2's stale path dropped")
    r.figures["stale path kept"] = kept[-1]
    r.figures["stale path dropped"] = time.monotonic() - t0
    lab.log(f"{r.kind}: node 2 killed: its path kept for {kept[-1]:.2f} s, gone "
            f"{r.figures['stale path dropped']:.2f} s after the kill (restart time "
            f"{RESTART_TIME_S} s)")
    lab.check(kept[-1] >= RESTART_TIME_S - 0.5,
              f"{r.kind}: node 2's path left {kept[-1]:.2f} s after the crash, before its "
              f"restart time ({RESTART_TIME_S} s): no graceful restart")


def bfd_meets_graceful_restart(r: Run) -> None:
    """7. Node 1's vipd frozen (SIGSTOP). BIRD (`bfd graceful`) restarts the session gracefully
    on BFD Down and keeps the path for the restart time too; FRR ends it at BFD's detection
    time. Loose bounds: they tell the two apart, not how fast BFD is (e2e_bfd and e2e_bfd_frr,
    run alone, do). Detection may come up to one TX interval (0.3 s) early after the freeze: the
    last packet received may be that old."""
    node, v = r.nodes[0], r.vipds[0]
    detection = lab.BfdTimers().detection_ms(lab.BfdTimers()) / 1000
    low, high = ((detection + RESTART_TIME_S - 0.5, detection + RESTART_TIME_S + 2.0)
                 if r.router.bfd_graceful else (detection - 0.35, RESTART_TIME_S - 0.5))
    t0 = time.monotonic()
    v.proc.signal(signal.SIGSTOP)
    try:
        lab.wait_until(lambda: r.router.local_pref(lab.VIP4, node.v4) is None
                       and node.v4 not in r.topo.fabric.kernel_nexthops(lab.VIP4),
                       high + 5, 0.05, f"{r.kind}: frozen node 1's path gone")
        dt = r.figures["frozen path dropped"] = time.monotonic() - t0
    finally:
        v.proc.signal(signal.SIGCONT)
    lab.log(f"{r.kind}: node 1 frozen: its path gone after {dt:.2f} s (expected "
            f"{low:.1f}-{high:.1f} s)")
    lab.check(low <= dt <= high, f"{r.kind}: node 1 frozen: path gone after {dt:.2f} s, not "
              f"within {low:.1f}-{high:.1f} s")


def run_router(kind: str) -> dict:
    with lab.Lab(f"router-configs-{kind}") as L:
        topo = L.fabric_with_nodes(3)
        lab.check([(n.v4, n.asn) for n in topo.nodes] == [
            ("192.0.2.11", 65001), ("192.0.2.12", 65002), ("192.0.2.13", 65003)]
            and topo.fabric_v4 == "192.0.2.1",
            "the lab's addresses are the ones the shipped files are written for")
        r = Run(L, kind, topo, start_router(L, kind, topo, topo.nodes))
        md5_sessions(r, write_key(L, "good.key", KEY), write_key(L, "wrong.key", "not-" + KEY))
        bfd_and_graceful_restart(r)
        routes_and_fabric_view(r)
        graceful_shutdown(r)
        graceful_restart_helper(r)
        if r.router.bfd:
            bfd_meets_graceful_restart(r)
        return r.figures


def test() -> None:
    # By hand, some of them: test_router_configs.py frr gobgp
    for kind in [a for a in sys.argv[1:] if a in SUBSTITUTIONS] or list(SUBSTITUTIONS):
        t0 = time.monotonic()
        f = run_router(kind)
        lab.log(f"{kind}: passed in {time.monotonic() - t0:.1f} s: "
                + ", ".join(f"{k} {v:.2f} s" for k, v in f.items()))


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries + lab.Frr.bfd_binaries + lab.Gobgp.binaries,
             vipd=True)
