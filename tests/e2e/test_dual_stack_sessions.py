#!/usr/bin/env python3
"""e2e: a dual-stack fabric with one session per address family (issue 18 part 5).

Three vipd nodes (AS 65001-65003) announce VIP4 (/32) and VIP6 (/128) to a BIRD fabric
(AS 65000) that has, per node, an IPv4 neighbour with only an ipv4 channel and an IPv6 neighbour
with only an ipv6 channel: the layout BIRD, FRR and vendor defaults give a dual-stack fabric.
Each vipd has two peers, 192.0.2.1 and 2001:db8::1. Nodes 1 and 2 leave `families` out (an IPv4
session without nextHopIpv6 carries the IPv4 VIPs, an IPv6 session the IPv6 ones); node 3 writes
the same thing explicitly.

Asserts, in BIRD's own view, that each session negotiated exactly its own family (vipd's OPEN
carried only that multiprotocol capability) and that VIP4 came over the three IPv4 sessions and
VIP6 over the three IPv6 ones; in the fabric kernel, 3-way ECMP for both; in `vipctl status`,
what each session carries. Then SIGTERMs node 1 and asserts its next hops leave both routes
within a bound, and the other two nodes' stay.

A vipd without `families` refuses this config (every session had to carry every VIP: "IPv4 VIP
over an IPv6 session needs an IPv4 next hop"), so on such a build the test fails at the start.
"""
import re

import lab

TIMEOUT_S = 60
WITHDRAW_BOUND_S = 10  # SIGTERM -> NOTIFICATION/close -> BIRD withdraws -> kernel update


def neighbour_families(bird: lab.Bird, addr: str) -> list[str]:
    """The families the neighbour at addr announced in its multiprotocol capability, as BIRD
    shows them under `Neighbor capabilities` (`AF announced: ipv4 ipv6`)."""
    text = bird.protocol_all(addr)
    block = text.split("Neighbor capabilities", 1)
    if len(block) < 2:
        return []
    m = re.search(r"AF announced:([^\n]*)", block[1])
    return m.group(1).split() if m else []


def session_edit(explicit: bool):
    def edit(config: dict, node: lab.Node) -> None:
        v4 = {"address": lab.FABRIC_V4, "asn": lab.FABRIC_ASN, "sourceAddress": node.v4,
              "holdTime": "9s", "connectRetryTime": "1s"}
        v6 = {"address": lab.FABRIC_V6, "asn": lab.FABRIC_ASN, "sourceAddress": node.v6,
              "holdTime": "9s", "connectRetryTime": "1s"}
        if explicit:
            v4["families"], v6["families"] = ["ipv4"], ["ipv6"]
        config["peers"] = [v4, v6]
    return edit


def test() -> None:
    with lab.Lab("dual-stack") as L:
        topo = L.fabric_with_nodes(3)
        neighbors = []
        for n in topo.nodes:
            neighbors.append(lab.Neighbor(n.v4, n.asn, passive=True, name=f"node{n.index}_v4",
                                          families=["ipv4"]))
            neighbors.append(lab.Neighbor(n.v6, n.asn, passive=True, name=f"node{n.index}_v6",
                                          families=["ipv6"]))
        bird = lab.Bird(L, topo.fabric, topo.fabric_v4, lab.FABRIC_ASN, neighbors,
                        interfaces=[topo.fabric_if])
        speakers = [lab.start_speaker("vipd", L, n, n.asn, topo.fabric_v4, lab.FABRIC_ASN,
                                      f"vipd-n{n.index}", session_edit(explicit=n.index == 3))
                    for n in topo.nodes]

        def exited() -> list:
            return [s for s in speakers if not s.proc.alive()]

        def all_established_or_exited() -> bool:
            # A vipd that refused its config ends the wait at once (that is the failure on a
            # build without `families`), instead of after the whole timeout.
            return bool(exited()) or all(bird.neighbor_state(nb.address) == "Established"
                                         for nb in neighbors)

        lab.wait_until(all_established_or_exited, TIMEOUT_S, 0.2,
                       lambda: "all six sessions Established in BIRD's view: " + ", ".join(
                           f"{nb.name} {bird.neighbor_state(nb.address)}" for nb in neighbors))
        for s in exited():
            raise AssertionError(f"{s.name} exited (code {s.proc.popen.returncode}); its log:\n"
                                 f"{s.proc.log_text()}")

        # Each session negotiated its own family only: vipd advertised no other capability.
        for n in topo.nodes:
            for addr, family in ((n.v4, "ipv4"), (n.v6, "ipv6")):
                got = neighbour_families(bird, addr)
                lab.check(got == [family],
                          f"node {n.index}'s session from {addr} announced multiprotocol "
                          f"families {got}, expected [{family!r}]:\n{bird.protocol_all(addr)}")

        want4 = sorted(n.v4 for n in topo.nodes)
        want6 = sorted((n.v6 for n in topo.nodes), key=lab._addr_key)
        lab.wait_until(lambda: topo.fabric.kernel_nexthops(lab.VIP4) == want4, TIMEOUT_S, 0.1,
                       lambda: f"fabric kernel ECMP route {lab.VIP4} via {want4} "
                       f"(have: {topo.fabric.route_show(lab.VIP4).strip()!r})")
        lab.wait_until(lambda: topo.fabric.kernel_nexthops(lab.VIP6) == want6, TIMEOUT_S, 0.1,
                       lambda: f"fabric kernel ECMP route {lab.VIP6} via {want6} "
                       f"(have: {topo.fabric.route_show(lab.VIP6).strip()!r})")
        print(topo.fabric.route_show(lab.VIP4) + topo.fabric.route_show(lab.VIP6), flush=True)

        # BIRD's own view: VIP4 only from the IPv4 sessions, VIP6 only from the IPv6 ones, each
        # with the node's address of that family as next hop.
        for prefix, suffix, hop in ((lab.VIP4, "_v4", "v4"), (lab.VIP6, "_v6", "v6")):
            paths = bird.paths(prefix)
            got = sorted((p["protocol"], tuple(p["nexthops"])) for p in paths)
            want = sorted((f"node{n.index}{suffix}", (getattr(n, hop),)) for n in topo.nodes)
            lab.check(got == want, f"BIRD's paths for {prefix}: {got}, expected {want}:\n"
                      f"{bird.route_all(prefix)}")
        lab.log(f"BIRD has {lab.VIP4} from the three IPv4 sessions and {lab.VIP6} from the three "
                f"IPv6 sessions; the fabric kernel has 3-way ECMP for both")

        # vipctl status: what each session carries, what it negotiated and advertised.
        for s, n in zip(speakers, topo.nodes):
            for addr, family in ((lab.FABRIC_V4, "ipv4"), (lab.FABRIC_V6, "ipv6")):
                p = s.peer_status(addr)
                lab.check(p["carries"] == [family] and p["families"] == [f"{family}-unicast"]
                          and p["prefixesAdvertised"] == 1,
                          f"{s.name}'s status for peer {addr}: carries {p.get('carries')}, "
                          f"negotiated {p.get('families')}, advertised "
                          f"{p.get('prefixesAdvertised')}; expected [{family!r}] and one prefix")
            status = s.status()
            lab.check(status["ready"], f"{s.name} not ready: {status.get('readyReasons')}")
        table = speakers[0].vipctl("status")
        print(table, flush=True)
        lab.check(re.search(r"2001:db8::1\s+65000\s+eBGP\s+ipv6\s+Established", table) is not None,
                  f"vipctl status should show the IPv6 session carrying ipv6:\n{table}")

        # SIGTERM node 1: both of its next hops leave, the others stay.
        e = lab.EcmpLab(L, topo, bird, speakers, {})
        dt = lab.ecmp_withdraw_on_stop(e, index=0, bound=WITHDRAW_BOUND_S)
        lab.log(f"node 1's next hops left both fabric routes {dt:.2f}s after SIGTERM "
                f"(bound {WITHDRAW_BOUND_S}s)")
        for prefix, suffix in ((lab.VIP4, "_v4"), (lab.VIP6, "_v6")):
            protocols = sorted(p["protocol"] for p in bird.paths(prefix))
            lab.check(protocols == [f"node2{suffix}", f"node3{suffix}"],
                      f"after node 1 stopped, BIRD's paths for {prefix} come from {protocols}")
        print(topo.fabric.route_show(lab.VIP4) + topo.fabric.route_show(lab.VIP6), flush=True)


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries, vipd=True)
