"""Shared scenarios (tests, demo and self-test all call these; no copies): the thing under test
on a node (vipd or a stand-in speaker), the fabric-side peer of each kind, the ECMP and
single-vipd labs, the peer scenario and the BFD self-check.
"""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional

from .base import COMMUNITIES, FABRIC_ASN, LARGE_COMMUNITIES, VIP4, VIP6, log
from .bird import Bird
from .capture import BfdCapture, check_bfd_single_hop
from .checks import check, wait_until
from .exabgp import Exabgp
from .fabric import time_nexthop
from .frr import Frr
from .gobgp import Gobgp
from .netns import Lab, Node, Topology, _addr_key
from .peers import BfdTimers, Neighbor, Origin
from .vipd import Vipd, bind_vips, vipd_config


class ExabgpSpeaker(Exabgp):
    """Stands in for vipd (harness self-test): dials the peer and announces the VIPs with the
    same next hops and communities vipd would."""

    def __init__(self, lab: Lab, node: Node, local_asn: int, peer_addr: str, peer_asn: int,
                 name: str):
        bind_vips(node.ns)
        super().__init__(lab, node.ns, node.v4, local_asn,
                         [Neighbor(peer_addr, peer_asn, passive=False, next_hop_v6=node.v6)],
                         local_address=node.v4,
                         origins=[Origin(VIP4), Origin(VIP6, next_hop=node.v6)], name=name)


class GobgpSpeaker(Gobgp):
    """Stands in for vipd (harness self-test). Passive, so the peer must dial it (GoBGP's first
    active connect waits 5-10 s)."""

    def __init__(self, lab: Lab, node: Node, local_asn: int, peer_addr: str, peer_asn: int,
                 name: str):
        bind_vips(node.ns)
        super().__init__(lab, node.ns, node.v4, local_asn,
                         [Neighbor(peer_addr, peer_asn, passive=True)],
                         origins=[Origin(VIP4), Origin(VIP6, next_hop=node.v6)], name=name,
                         local_address=node.v4)

    passive = True


def start_speaker(kind: str, lab: Lab, node: Node, local_asn: int, peer_addr: str,
                  peer_asn: int, name: str,
                  vipd_edit: Optional[Callable[[dict, Node], None]] = None):
    """The thing under test on a node: vipd (its config changed by vipd_edit(config, node)
    first), or a stand-in for harness self-tests."""
    if kind == "vipd":
        config = vipd_config(lab, node, local_asn, peer_addr, peer_asn, name)
        if vipd_edit:
            vipd_edit(config, node)
        return Vipd(lab, node.ns, config, name=name)
    if kind == "exabgp":
        return ExabgpSpeaker(lab, node, local_asn, peer_addr, peer_asn, name)
    if kind == "gobgp":
        return GobgpSpeaker(lab, node, local_asn, peer_addr, peer_asn, name)
    raise ValueError(kind)


def speaker_binaries(kind: str) -> list[str]:
    return {"vipd": [], "exabgp": Exabgp.binaries, "gobgp": Gobgp.binaries}[kind]


def speaker_dials(kind: str) -> bool:
    return kind != "gobgp"


def start_fabric_peer(kind: str, lab: Lab, topo: Topology, neighbors: list[Neighbor]):
    """The fabric-side peer on topo.fabric: "bird", "frr", "gobgp" or "exabgp"."""
    f = topo.fabric
    if kind == "bird":
        return Bird(lab, f, topo.fabric_v4, FABRIC_ASN, neighbors, interfaces=[topo.fabric_if])
    if kind == "frr":
        return Frr(lab, f, topo.fabric_v4, FABRIC_ASN, neighbors)
    if kind == "gobgp":
        return Gobgp(lab, f, topo.fabric_v4, FABRIC_ASN, neighbors, local_address=topo.fabric_v4)
    if kind == "exabgp":
        return Exabgp(lab, f, topo.fabric_v4, FABRIC_ASN, neighbors, local_address=topo.fabric_v4)
    raise ValueError(kind)


PEER_CLASSES = {"bird": Bird, "frr": Frr, "gobgp": Gobgp, "exabgp": Exabgp}


def wait_established(peer, addrs: Iterable[str], timeout: float) -> float:
    t0 = time.monotonic()
    for a in addrs:
        wait_until(lambda a=a: peer.neighbor_state(a) == "Established", timeout, 0.2,
                   f"session with {a} Established in the peer's view")
    return time.monotonic() - t0


@dataclass
class EcmpLab:
    lab: Lab
    topo: Topology
    bird: Bird
    speakers: list
    times: dict


def build_ecmp(lab: Lab, speaker_kinds: list[str], timeout: float = 60,
               vipd_edit: Optional[Callable[[dict, Node], None]] = None,
               bird_bfd: Optional[BfdTimers] = None, add_paths: bool = False) -> EcmpLab:
    """BIRD fabric (AS 65000) + one speaker per node, each node in its own AS (65001, ...);
    vipd_edit(config, node) changes each vipd's config before it starts. bird_bfd: BIRD runs
    BFD with these timers towards every node (Bird(bfd=)); the vipd side is vipd_edit's.
    add_paths: BIRD sends every node every path it holds for the VIPs (ADD-PATH), so each vipd
    has the fabric's view; without it BIRD sends the nodes nothing.

    Per-node ASNs: BIRD merges eBGP paths from different neighbour ASNs into one multipath kernel
    route when local-pref, AS-path length, origin and MED match (they do: every node sends a
    one-hop AS path with origin IGP and no MED). Per-node ASNs are also how vipd is deployed on
    control-plane nodes, and keep the same-ASN loop check out of the picture.
    """
    t0 = time.monotonic()
    topo = lab.fabric_with_nodes(len(speaker_kinds))
    neighbors = [Neighbor(n.v4, n.asn, passive=speaker_dials(k), name=f"node{n.index}",
                          add_paths_tx=add_paths)
                 for n, k in zip(topo.nodes, speaker_kinds)]
    bird = Bird(lab, topo.fabric, topo.fabric_v4, FABRIC_ASN, neighbors, interfaces=[topo.fabric_if],
                bfd=bird_bfd)
    speakers = [start_speaker(k, lab, n, n.asn, topo.fabric_v4, FABRIC_ASN, f"{k}-n{n.index}",
                              vipd_edit)
                for n, k in zip(topo.nodes, speaker_kinds)]
    t_start = time.monotonic()
    want4 = sorted(n.v4 for n in topo.nodes)
    want6 = sorted((n.v6 for n in topo.nodes), key=_addr_key)
    times = {"setup": t_start - t0}
    wait_established(bird, [n.v4 for n in topo.nodes], timeout)
    times["established"] = time.monotonic() - t_start
    wait_until(lambda: topo.fabric.kernel_nexthops(VIP4) == want4, timeout, 0.1,
               lambda: f"fabric kernel ECMP route {VIP4} via {want4} "
               f"(have: {topo.fabric.route_show(VIP4).strip()!r})")
    wait_until(lambda: topo.fabric.kernel_nexthops(VIP6) == want6, timeout, 0.1,
               lambda: f"fabric kernel ECMP route {VIP6} via {want6} "
               f"(have: {topo.fabric.route_show(VIP6).strip()!r})")
    times["ecmp"] = time.monotonic() - t_start
    return EcmpLab(lab, topo, bird, speakers, times)


def ecmp_withdraw_on_stop(e: EcmpLab, index: int = 0, bound: float = 15) -> float:
    """SIGTERMs speaker[index]; returns seconds until its next hop left both fabric routes."""
    node = e.topo.nodes[index]
    t0 = time.monotonic()
    e.speakers[index].stop()
    rest4 = [n.v4 for n in e.topo.nodes if n is not node]
    rest6 = sorted((n.v6 for n in e.topo.nodes if n is not node), key=_addr_key)
    wait_until(lambda: node.v4 not in e.topo.fabric.kernel_nexthops(VIP4), bound, 0.05,
               f"{node.v4} to leave the fabric route for {VIP4}")
    wait_until(lambda: node.v6 not in e.topo.fabric.kernel_nexthops(VIP6), bound, 0.05,
               f"{node.v6} to leave the fabric route for {VIP6}")
    dt = time.monotonic() - t0
    check(e.topo.fabric.kernel_nexthops(VIP4) == sorted(rest4),
          f"after stopping node {node.index}, {VIP4} should be via {rest4}: "
          f"{e.topo.fabric.route_show(VIP4)}")
    check(e.topo.fabric.kernel_nexthops(VIP6) == rest6,
          f"after stopping node {node.index}, {VIP6} should be via {rest6}: "
          f"{e.topo.fabric.route_show(VIP6)}")
    return dt


def bfd_selfcheck(timers: Optional[BfdTimers] = None, name: str = "bfd-selfcheck") -> dict:
    """Harness self-check of the BFD configs, no vipd: BIRD on the fabric (AS 65000) and FRR
    (zebra, bfdd, bgpd) on node 1 (AS 65001) run BFD with timers over their eBGP session.
    Asserts: both see the session Up; FRR's negotiated intervals and multiplier are timers; FRR's
    VIP4 reaches the fabric kernel. Then freezes the node's FRR (SIGSTOP to all three daemons)
    and asserts BIRD logs the detection-time expiry and drops the route within the detection
    time + 300 ms, and that SIGCONT brings BFD, BGP and the route back. Returns the figures
    (seconds): "up", "drop", "expired" (BIRD's log time of the expiry), "back"."""
    timers = timers or BfdTimers()
    out = {}
    with Lab(name) as L:
        topo = L.fabric_with_nodes(1)
        node = topo.nodes[0]
        bird = Bird(L, topo.fabric, topo.fabric_v4, FABRIC_ASN,
                    [Neighbor(node.v4, node.asn, passive=True, name="node1")],
                    interfaces=[topo.fabric_if], bfd=timers)
        cap = BfdCapture(L, topo.fabric, topo.fabric_if)
        frr = Frr(L, node.ns, node.v4, node.asn, [Neighbor(topo.fabric_v4, FABRIC_ASN, passive=False)],
                  origins=[Origin(VIP4)], name="frr-n1", bfd=timers)
        t0 = time.monotonic()
        wait_established(bird, [node.v4], 30)
        wait_until(lambda: bird.bfd_state(node.v4) == "Up", 15, 0.1,
                   lambda: f"BIRD's BFD session to {node.v4} Up (have {bird.bfd_sessions()})")
        wait_until(lambda: frr.bfd_peer_state(topo.fabric_v4) == "up", 15, 0.1,
                   lambda: f"FRR's BFD peer {topo.fabric_v4} up (have {frr.bfd_peers()})")
        time_nexthop(topo.fabric, VIP4, node.v4, True, t0, 30)
        out["up"] = time.monotonic() - t0
        bs, fp = bird.bfd_sessions()[node.v4], frr.bfd_peer(topo.fabric_v4)
        log(f"self-check {timers}: BIRD {bs}; FRR status={fp['status']} "
            f"tx={fp['transmit-interval']} rx={fp['receive-interval']} "
            f"mult={fp['detect-multiplier']} remote tx={fp['remote-transmit-interval']} "
            f"rx={fp['remote-receive-interval']} mult={fp['remote-detect-multiplier']}")
        check((fp["transmit-interval"], fp["receive-interval"], fp["detect-multiplier"]) ==
              (timers.min_tx_ms, timers.min_rx_ms, timers.multiplier),
              f"FRR's BFD timers {fp} are not {timers}")
        check((fp["remote-transmit-interval"], fp["remote-receive-interval"],
               fp["remote-detect-multiplier"]) ==
              (timers.min_tx_ms, timers.min_rx_ms, timers.multiplier),
              f"FRR's view of BIRD's BFD timers {fp} is not {timers}")
        check(bs["timeoutMs"] == timers.detection_ms(timers),
              f"BIRD's detection time {bs['timeoutMs']} ms != {timers.detection_ms(timers)} ms")
        check_bfd_single_hop(cap.from_addr(node.v4), "FRR")
        check_bfd_single_hop(cap.from_addr(topo.fabric_v4), "BIRD", source_port=False)
        last = cap.from_addr(node.v4)[-1]
        check((last["state"], last["minTxMs"], last["minRxMs"], last["multiplier"]) ==
              ("Up", timers.min_tx_ms, timers.min_rx_ms, timers.multiplier),
              f"the capture's last packet from FRR is not Up with {timers}: {last}")

        bound = timers.detection_ms(timers) / 1000 + 0.3
        wall0, t0 = time.time(), time.monotonic()
        for p in frr.procs:
            p.signal(signal.SIGSTOP)
        try:
            out["drop"] = time_nexthop(topo.fabric, VIP4, node.v4, False, t0)
            expired = [t for t, e in bird.bfd_events(node.v4) if e == "expired" and t >= wall0 - 0.01]
            out["expired"] = expired[0] - wall0 if expired else None
        finally:
            for p in frr.procs:
                p.signal(signal.SIGCONT)
        log(f"self-check {timers}: FRR frozen; BIRD's BFD expired after "
            f"{out['expired'] if out['expired'] is None else round(out['expired'], 3)} s, fabric "
            f"dropped the route after {out['drop']:.3f} s (bound {bound:.2f} s)")
        check(out["expired"] is not None, f"BIRD logged no expiry of the session to {node.v4}: "
              f"{bird.bfd_events(node.v4)}")
        check(out["drop"] <= bound, f"fabric dropped the route after {out['drop']:.3f} s, "
              f"more than the detection time + 300 ms ({bound:.2f} s)")
        t0 = time.monotonic()
        wait_until(lambda: bird.bfd_state(node.v4) == "Up"
                   and frr.bfd_peer_state(topo.fabric_v4) == "up", 30, 0.1,
                   lambda: f"BFD Up again (BIRD {bird.bfd_sessions()}, FRR {frr.bfd_peers()})")
        out["back"] = time_nexthop(topo.fabric, VIP4, node.v4, True, t0, 30)
        log(f"self-check {timers}: after SIGCONT, BFD Up and the route back in "
            f"{out['back']:.2f} s")
    return out


@dataclass
class SingleNode:
    lab: Lab
    topo: Topology
    node: Node
    bird: Bird
    vipd: Vipd


def build_single_vipd(lab: Lab, edit: Optional[Callable[[dict, Topology], None]] = None,
                      bind: Iterable[str] = (), bird_dials: bool = False,
                      bird_hold_time: int = 9, idle_nodes: int = 0,
                      after_bird: Optional[Callable[[Bird], None]] = None,
                      bird_peer_asn: Any = None,
                      bird_options: Iterable[str] = (),
                      vipd_args: Iterable[str] = ()) -> SingleNode:
    """BIRD fabric (AS 65000) + one vipd node (AS 65001) with lab.vipd_config, changed by
    edit(config, topo) first; bind as for Vipd. BIRD is passive unless bird_dials. idle_nodes
    more nodes (topo.nodes[1:]) run nothing: a BGP peer there refuses connections.
    after_bird(bird) runs between BIRD's start and vipd's. bird_peer_asn (default: the node's
    ASN) and bird_options (extra lines) go into BIRD's protocol for the node (edit must then set
    the matching localAsn). vipd_args: extra vipd arguments (e.g. --log-format json). Does not
    wait for the session."""
    topo = lab.fabric_with_nodes(1 + idle_nodes)
    node = topo.nodes[0]
    bird = Bird(lab, topo.fabric, topo.fabric_v4, FABRIC_ASN,
                [Neighbor(node.v4, bird_peer_asn or node.asn, passive=not bird_dials,
                          name="node1", bird_options=list(bird_options))],
                interfaces=[topo.fabric_if], hold_time=bird_hold_time)
    if after_bird:
        after_bird(bird)
    config = vipd_config(lab, node, node.asn, topo.fabric_v4, FABRIC_ASN, "vipd-n1")
    if edit:
        edit(config, topo)
    vipd = Vipd(lab, node.ns, config, name="vipd-n1", bind=bind, args=vipd_args)
    return SingleNode(lab, topo, node, bird, vipd)


def peer_scenario(lab: Lab, peer_kind: str, speaker_kind: str, ibgp: bool,
                  timeout: float = 45) -> dict:
    """One speaker on node 1 against a fabric peer of peer_kind, eBGP (65001 -> 65000) or iBGP
    (65000 both). Asserts Established, both VIPs in the peer's RIB with the node's next hops,
    communities, large communities and (iBGP) LOCAL_PREF 100. Returns measured times."""
    topo = lab.fabric_with_nodes(1)
    node = topo.nodes[0]
    local_asn = FABRIC_ASN if ibgp else node.asn
    peer = start_fabric_peer(peer_kind, lab, topo,
                             [Neighbor(node.v4, local_asn, passive=speaker_dials(speaker_kind),
                                       name="node1")])
    start_speaker(speaker_kind, lab, node, local_asn, topo.fabric_v4, FABRIC_ASN,
                  f"{speaker_kind}-n1")
    t0 = time.monotonic()
    wait_established(peer, [node.v4], timeout)
    times = {"established": time.monotonic() - t0}
    for prefix, nh in ((VIP4, node.v4), (VIP6, node.v6)):
        r = wait_until(lambda p=prefix: peer.route(p), timeout, 0.2,
                       f"{prefix} in {peer_kind}'s RIB")
        what = f"{peer_kind} {'iBGP' if ibgp else 'eBGP'} route {prefix}"
        log(f"{what}: nexthops={r['nexthops']} communities={r['communities']} "
            f"large={r['largeCommunities']} localPref={r['localPref']} asPath={r['asPath']!r}")
        check(nh in r["nexthops"], f"{what}: next hop {r['nexthops']} should contain {nh}")
        check(r["communities"] == COMMUNITIES,
              f"{what}: communities {r['communities']} != {COMMUNITIES}")
        check(r["largeCommunities"] == LARGE_COMMUNITIES,
              f"{what}: large communities {r['largeCommunities']} != {LARGE_COMMUNITIES}")
        if ibgp:
            check(r["localPref"] == 100, f"{what}: LOCAL_PREF {r['localPref']} != 100")
            check(r["asPath"].strip() == "", f"{what}: iBGP AS_PATH should be empty: {r['asPath']!r}")
        else:
            check(str(node.asn) in r["asPath"], f"{what}: AS_PATH {r['asPath']!r} lacks {node.asn}")
    times["routes"] = time.monotonic() - t0
    return times
