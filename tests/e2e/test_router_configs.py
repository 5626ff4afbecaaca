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

Not run, because the router cannot: BFD with GoBGP (it has none) and GoBGP's routes in a kernel.
"""
import os
import signal
import sys
import time

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

    def __init__(self, kind: str, peer, bfd: bool, fib: bool, drained_pref: int = 0):
        self.kind, self.peer, self.bfd, self.fib = kind, peer, bfd, fib
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
                      fib=True)
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


def run_router(kind: str) -> dict:
    figures = {}
    with lab.Lab(f"router-configs-{kind}") as L:
        topo = L.fabric_with_nodes(3)
        nodes = topo.nodes
        lab.check([(n.v4, n.asn) for n in nodes] == [("192.0.2.11", 65001), ("192.0.2.12", 65002),
                                                      ("192.0.2.13", 65003)]
                  and topo.fabric_v4 == "192.0.2.1",
                  "the lab's addresses are the ones the shipped files are written for")
        router = start_router(L, kind, topo, nodes)
        good, bad = write_key(L, "good.key", KEY), write_key(L, "wrong.key", "not-" + KEY)
        t0 = time.monotonic()

        # 1. A wrong key never establishes; the right one does.
        vipds = [start_vipd(L, topo, n, good, router.bfd, f"vipd-n{n.index}") for n in nodes[:2]]
        wrong = start_vipd(L, topo, nodes[2], bad, router.bfd, "vipd-n3-wrong-key")
        lab.wait_established(router.peer, [n.v4 for n in nodes[:2]], 45)
        figures["established"] = time.monotonic() - t0
        lab.wait_never(lambda: router.established(nodes[2].v4), 5, 0.2,
                       f"{kind}: node 3 with a wrong TCP-MD5 key Established")
        lab.log(f"{kind}: node 3 with a wrong key after 5 s: vipd "
                f"{wrong.peer_status(topo.fabric_v4)['state']}, last error "
                f"{wrong.peer_status(topo.fabric_v4)['lastError']!r}")
        wrong.stop()
        t1 = time.monotonic()
        vipds.append(start_vipd(L, topo, nodes[2], good, router.bfd, "vipd-n3", gshut=True))
        lab.wait_established(router.peer, [nodes[2].v4], 45)
        figures["node 3 established"] = time.monotonic() - t1

        # 2. BFD and graceful restart.
        for n, v in zip(nodes, vipds):
            if router.bfd:
                lab.wait_until(lambda n=n, v=v: router.bfd_up(n.v4)
                               and v.bfd_status(topo.fabric_v4)["state"] == "Up", 20, 0.1,
                               f"{kind}: BFD Up with node {n.index} on both sides")
            ok, evidence = router.graceful_restart(n.v4)
            if n.index == 1:
                lab.log(f"{kind}: graceful restart with node 1 as the router shows it:\n{evidence}")
            lab.check(ok, f"{kind}: graceful restart not negotiated with node {n.index}: "
                      f"{evidence}")

        # 3. ECMP into the router's kernel (GoBGP, with no FIB: a path from every node).
        want4 = [n.v4 for n in nodes]
        want6 = sorted((n.v6 for n in nodes), key=lab._addr_key)
        for vip, want in ((lab.VIP4, want4), (lab.VIP6, want6)):
            if router.fib:
                lab.wait_until(lambda vip=vip, want=want: topo.fabric.kernel_nexthops(vip) == want,
                               30, 0.1, lambda vip=vip, want=want:
                               f"{kind}: kernel ECMP route {vip} via {want} (have "
                               f"{topo.fabric.route_show(vip).strip()!r})")
            else:
                lab.wait_until(lambda vip=vip: router.paths_from(vip) == want4, 30, 0.1,
                               lambda vip=vip: f"{kind}: a path for {vip} from each node "
                               f"(have {router.paths_from(vip)})")
        figures["routes"] = time.monotonic() - t1
        if router.fib:
            lab.log(f"{kind}: kernel routes:\n{topo.fabric.route_show(lab.VIP4).rstrip()}\n"
                    f"{topo.fabric.route_show(lab.VIP6).rstrip()}")
        else:
            lab.log(f"{kind}: RIB:\n{router.peer.cli('global', 'rib', '-a', 'ipv4')}"
                    f"{router.peer.cli('global', 'rib', '-a', 'ipv6')}")

        # 4. ADD-PATH send: the fabric view.
        for vip in (lab.VIP4, lab.VIP6):
            lab.wait_until(lambda vip=vip: [fabric_count(v, vip) for v in vipds] == [3, 3, 3],
                           30, 0.2, lambda vip=vip: f"{kind}: every node counting 3 announcers "
                           f"of {vip}: {[fabric_count(v, vip) for v in vipds]}; node 1's view: "
                           f"{fabric(vipds[0], vip)}")
        figures["fabric view"] = time.monotonic() - t1
        lab.log(f"{kind}: node 1's vipctl status:\n{vipds[0].vipctl('status')}")

        # 5. GRACEFUL_SHUTDOWN honoured: node 3's paths at a low local-pref, out of the ECMP
        # routes (GoBGP: not its best paths) while the router still holds them.
        n3 = nodes[2].v4
        before = [router.local_pref(vip, n3) for vip in (lab.VIP4, lab.VIP6)]
        lab.check(before == ["-", "-"] or before == [100, 100],
                  f"{kind}: node 3's paths carry no lowered local-pref before the drain: {before}")
        r = vipds[2].vipctl_run("withdraw")
        lab.check(r.returncode == 0, f"vipctl withdraw on node 3: {r.returncode} {r.stderr}")
        t_w = time.monotonic()

        def lowered() -> bool:
            # The router passes the community back: node 1 sees node 3's path as draining.
            if not any(a.get("draining") for a in fabric(vipds[0], lab.VIP4)["announcers"]):
                return False
            for vip, want in ((lab.VIP4, want4), (lab.VIP6, want6)):
                if router.local_pref(vip, n3) != router.drained_pref:
                    return False
                if router.fib and topo.fabric.kernel_nexthops(vip) != want[:2]:
                    return False
                if not router.fib and router.best_from(vip) not in want4[:2]:
                    return False
            return True

        def state() -> str:
            return "; ".join(
                f"{vip}: local-pref {router.local_pref(vip, n3)!r}, "
                + (f"kernel {topo.fabric.route_show(vip).strip()!r}" if router.fib else
                   f"best from {router.best_from(vip)}") for vip in (lab.VIP4, lab.VIP6))
        lab.wait_until(lowered, GSHUT_TIME_S, 0.05,
                       lambda: f"{kind}: node 3's paths at local-pref {router.drained_pref} and "
                       f"out of {'the kernel routes' if router.fib else 'the best paths'}, "
                       f"draining in node 1's view ({state()}; node 1's view "
                       f"{fabric(vipds[0], lab.VIP4)['announcers']})")
        figures["gshut"] = time.monotonic() - t_w
        lab.wait_until(lambda: router.local_pref(lab.VIP4, n3) is None
                       and router.local_pref(lab.VIP6, n3) is None, 15, 0.1,
                       f"{kind}: node 3's paths withdrawn")
        lab.log(f"{kind}: node 3 drained: local-pref {router.drained_pref} and out of "
                f"{'the ECMP route' if router.fib else 'the best path'} after "
                f"{figures['gshut']:.2f} s, withdrawn after {time.monotonic() - t_w:.2f} s")

        # 6. The graceful-restart helper: node 2's vipd crashes (SIGKILL: no NOTIFICATION); the
        # router keeps its path (stale, still forwarding) for vipd's restart time, then drops it.
        n2 = nodes[1].v4
        t_k = time.monotonic()
        vipds[1].proc.signal(signal.SIGKILL)
        kept = []

        def gone() -> bool:
            if router.local_pref(lab.VIP4, n2) is not None and (
                    not router.fib or n2 in topo.fabric.kernel_nexthops(lab.VIP4)):
                kept.append(time.monotonic() - t_k)
                return False
            return True
        lab.wait_until(gone, RESTART_TIME_S + 5, 0.05, f"{kind}: node 2's stale path dropped")
        figures["stale path kept"] = kept[-1] if kept else 0.0
        figures["stale path dropped"] = time.monotonic() - t_k
        lab.log(f"{kind}: node 2 killed: its path kept for {figures['stale path kept']:.2f} s, "
                f"gone {figures['stale path dropped']:.2f} s after the kill (restart time "
                f"{RESTART_TIME_S} s)")
        lab.check(figures["stale path kept"] >= RESTART_TIME_S - 0.5,
                  f"{kind}: node 2's path left {figures['stale path kept']:.2f} s after the "
                  f"crash, before its restart time ({RESTART_TIME_S} s): no graceful restart")
    return figures


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
