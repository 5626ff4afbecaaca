#!/usr/bin/env python3
"""e2e: who announces (issue 40 part 1): the fabric view counts nodes, not paths, against BIRD.

1. Two eBGP ToRs (BIRD: ToR 1 in AS 65000 at 192.0.2.1, ToR 2 in AS 65100 at 192.0.2.2, peering
   with each other), both `next hop self` and `add paths tx`, every node (AS 65001-65003)
   dual-homed to both. Each ToR sends node 1 the other nodes' paths directly and through the
   other ToR, and node 1's own path through the other ToR (AS paths 65000 65100 65001 and
   65100 65000 65001): main counted 11 on every node. Every node counts 3 (itself and the two
   others, each named by its AS), each session's list in the status names the same two nodes,
   and after node 3 stops the others count 2.
2. A hostile session. Node 1 peers with a BIRD ToR (AS 65000, next hop kept, `add paths tx`) and
   with an iBGP neighbour (ExaBGP, ADD-PATH send) that sends the two real nodes' paths, five
   paths from next hops that do not exist, and one from another next hop carrying node 1's
   router ID as ORIGINATOR_ID. Node 1 counts 3 (main: 11), lists the five under notCounted,
   reports the duplicate router ID (status, log, vipd_fabric_duplicate_router_id) and stays
   ready: one session alone does not fail /readyz (main failed it).
3. Nodes sharing one AS (65001 on every node, `guard.nodesShareAsn: true`) behind a BIRD ToR
   that keeps the next hop: every node counts 3 by next hop. The ToR then rewrites the next hop
   (`next hop self`): the paths name no node, and every node's view is unavailable, with the
   reason, never a guess.
4. A pair of route reflectors (BIRD, iBGP AS 65000, `rr client`, `add paths tx`; the reflectors
   exchange every path): every node counts 3, each other node once, by ORIGINATOR_ID, via both
   reflectors; after node 3 stops, 2.
"""
import re

import lab

VIP = lab.VIP4
TOR2_V4 = "192.0.2.2"
TOR2_ASN = 65100
HOSTILE_V4 = "192.0.2.3"
INVENTED = [f"198.51.100.{i}" for i in range(1, 6)]
FORGED_NEXT_HOP = "198.51.100.9"


def fabric(v: lab.Vipd) -> dict:
    return v.status().get("fabric", {}).get("vips", {}).get(VIP, {})


def counts(vipds) -> list[int]:
    return [int(fabric(v).get("count", -1)) for v in vipds]


def wait_counts(vipds, want: list[int], what: str, timeout: float = 45) -> None:
    lab.wait_until(lambda: counts(vipds) == want, timeout, 0.2,
                   lambda: f"{what}: counts {want} expected, have {counts(vipds)}; "
                   f"{[fabric(v) for v in vipds]}")


def ipv4_only(config: dict) -> dict:
    config["vips"] = [v for v in config["vips"] if ":" not in v["address"]]
    for p in config["peers"]:
        p.pop("nextHopIpv6", None)
    return config


def second_peer(config: dict, address: str, asn: int) -> None:
    peer = dict(config["peers"][0])
    peer.update(address=address, asn=asn)
    config["peers"].append(peer)


def two_tors() -> None:
    with lab.Lab("fabric-identity-two-tors") as L:
        topo = L.fabric_with_nodes(3)
        nodes = topo.nodes
        tor2 = L.namespace("tor2")
        tor2.add_veth("eth0", topo.fabric, "tor2", peer_bridge=topo.fabric_if)
        tor2.add_address("eth0", f"{TOR2_V4}/24")
        tors = []
        for ns, rid, asn, ifname, other, other_asn in (
                (topo.fabric, topo.fabric_v4, lab.FABRIC_ASN, topo.fabric_if, TOR2_V4, TOR2_ASN),
                (tor2, TOR2_V4, TOR2_ASN, "eth0", topo.fabric_v4, lab.FABRIC_ASN)):
            neighbors = [lab.Neighbor(n.v4, n.asn, passive=True, add_paths_tx=True,
                                      families=["ipv4"]) for n in nodes]
            # The ToRs dial each other (the lower address is passive).
            neighbors.append(lab.Neighbor(other, other_asn, passive=rid < other, name="tor",
                                          add_paths_tx=True, families=["ipv4"]))
            tor = lab.Bird(L, ns, rid, asn, neighbors, interfaces=[ifname], name=f"bird-{asn}")
            # `next hop self` toward every neighbour: the next hop names no node. Between the
            # ToRs ADD-PATH both ways, so each ToR holds every path the other has.
            tor.configure(lambda text: re.sub(
                r"(protocol bgp tor \{.*?)add paths tx; ", r"\1add paths on; ",
                text.replace("add paths tx; ", "add paths tx; next hop self; "), flags=re.S))
            tors.append(tor)
        vipds = []
        for n in nodes:
            c = ipv4_only(lab.vipd_config(L, n, n.asn, topo.fabric_v4, lab.FABRIC_ASN,
                                          f"vipd-n{n.index}"))
            second_peer(c, TOR2_V4, TOR2_ASN)
            vipds.append(lab.Vipd(L, n.ns, c, name=f"vipd-n{n.index}"))
        # Each ToR sends node 1 five paths once the ToRs have exchanged theirs: the two other
        # nodes directly and through the other ToR, and node 1's own through the other ToR.
        def sessions() -> dict:
            return {s["peer"]: s for s in fabric(vipds[0]).get("sessions", [])}

        lab.wait_until(lambda: counts(vipds) == [3, 3, 3] and
                       all(sessions().get(a, {}).get("paths") == 5
                           for a in (topo.fabric_v4, TOR2_V4)), 60, 0.2,
                       lambda: f"every node to count 3 ({counts(vipds)}), node 1 holding 5 paths "
                       f"from each ToR: {sessions()}; node 1: {fabric(vipds[0])}; "
                       f"ToR 1: {tors[0].paths(VIP)}")
        f1 = fabric(vipds[0])
        lab.log(f"node 1's view through both ToRs: {f1}")
        others = sorted(a["node"] for a in f1["announcers"] if not a["self"])
        lab.check(others == [f"AS {nodes[1].asn}", f"AS {nodes[2].asn}"],
                  f"the other nodes named by their AS: {others}")
        for tor_addr in (topo.fabric_v4, TOR2_V4):
            s = sessions().get(tor_addr, {})
            lab.check(s.get("used") and s.get("others") == others and s.get("self") is True,
                      f"session {tor_addr} says the same two nodes, and sent node 1's own path "
                      f"back: {s}")
        vipds[2].stop()
        wait_counts(vipds[:2], [2, 2], "after node 3 stopped")


EXABGP_CONF = """
neighbor {node} {{
  router-id {rid};
  local-address {rid};
  local-as {asn};
  peer-as {asn};
  hold-time 9;
  passive true;
  family {{ ipv4 unicast; }}
  capability {{ add-path send; }}
  static {{
{routes}
  }}
}}
"""


def hostile_neighbour(L: lab.Lab, topo) -> None:
    nodes = topo.nodes
    ns = L.namespace("hostile")
    ns.add_veth("eth0", topo.fabric, "hostile", peer_bridge=topo.fabric_if)
    ns.add_address("eth0", f"{HOSTILE_V4}/24")
    routes = []
    # The two real nodes (what a router beside the ToR would hold), then five invented nodes,
    # then a path from another next hop carrying node 1's router ID as ORIGINATOR_ID.
    paths = [(n.v4, n.v4) for n in nodes[1:]] + [(a, a) for a in INVENTED]
    paths.append((FORGED_NEXT_HOP, nodes[0].v4))
    for i, (next_hop, originator) in enumerate(paths, start=1):
        routes.append(f"    route {VIP} next-hop {next_hop} originator-id {originator} "
                      f"path-information {i};")
    conf = L.path("exabgp-hostile.conf")
    with open(conf, "w") as f:
        f.write(EXABGP_CONF.format(node=nodes[0].v4, rid=HOSTILE_V4, asn=nodes[0].asn,
                                   routes="\n".join(routes)))
    L.start(ns, "exabgp-hostile", ["exabgp", conf], env=lab.exabgp_env(HOSTILE_V4))


def hostile_session() -> None:
    with lab.Lab("fabric-identity-hostile") as L:
        topo = L.fabric_with_nodes(3)
        nodes = topo.nodes
        neighbors = [lab.Neighbor(n.v4, n.asn, passive=True, add_paths_tx=True,
                                  families=["ipv4"]) for n in nodes]
        lab.Bird(L, topo.fabric, topo.fabric_v4, lab.FABRIC_ASN, neighbors,
                 interfaces=[topo.fabric_if])
        hostile_neighbour(L, topo)
        vipds = []
        for n in nodes:
            c = ipv4_only(lab.vipd_config(L, n, n.asn, topo.fabric_v4, lab.FABRIC_ASN,
                                          f"vipd-n{n.index}"))
            if n.index == 1:
                second_peer(c, HOSTILE_V4, n.asn)  # iBGP
            vipds.append(lab.Vipd(L, n.ns, c, name=f"vipd-n{n.index}"))
        hostile = lambda: {s["peer"]: s for s in fabric(vipds[0]).get("sessions", [])}.get(
            HOSTILE_V4, {})
        lab.wait_until(lambda: counts(vipds) == [3, 3, 3] and hostile().get("paths") == 8 and
                       hostile().get("used"), 45, 0.2,
                       lambda: f"every node to count 3 ({counts(vipds)}), node 1 using the "
                       f"hostile neighbour's 8 paths: {hostile()}; node 1: {fabric(vipds[0])}")
        f1 = fabric(vipds[0])
        lab.log(f"node 1's view: {f1}")
        # Named by ORIGINATOR_ID: the invented paths carry one each.
        lab.check(sorted(f1.get("notCounted", [])) ==
                  sorted(f"router {a} (only via {HOSTILE_V4})" for a in INVENTED),
                  f"the five invented nodes are shown, not counted: {f1.get('notCounted')}")
        lab.check(len(hostile().get("others", [])) == 7,
                  f"the hostile session's list: {hostile()}")
        dup = vipds[0].status()["fabric"]
        lab.log(f"node 1: duplicate router ID {dup['duplicateRouterId']}")
        lab.check(any(FORGED_NEXT_HOP in d and HOSTILE_V4 in d for d in dup["duplicateRouterId"]),
                  f"node 1 reports the forged ORIGINATOR_ID and who sent it: {dup}")
        lab.check(dup.get("duplicateRouterIdConfirmed") == [],
                  f"one session confirms nothing: {dup}")
        lab.check(vipds[0].metric("vipd_fabric_duplicate_router_id") >= 1,
                  "vipd_fabric_duplicate_router_id on node 1")
        lab.check(bool(vipds[0].log_lines("another node uses the same router ID")),
                  "node 1 logs the duplicate router ID")
        code, body = vipds[0].http("/readyz?verbose")
        lab.check(code == 200, f"/readyz passes on node 1 (it can serve): {code} {body!r}")
        vipds[2].stop()
        wait_counts(vipds[:2], [2, 2], "after node 3 stopped")


def shared_as() -> None:
    with lab.Lab("fabric-identity-shared-as") as L:
        topo = L.fabric_with_nodes(3)
        nodes = topo.nodes
        neighbors = [lab.Neighbor(n.v4, nodes[0].asn, passive=True, add_paths_tx=True,
                                  families=["ipv4"]) for n in nodes]
        tor = lab.Bird(L, topo.fabric, topo.fabric_v4, lab.FABRIC_ASN, neighbors,
                       interfaces=[topo.fabric_if])
        vipds = []
        for n in nodes:
            c = ipv4_only(lab.vipd_config(L, n, nodes[0].asn, topo.fabric_v4, lab.FABRIC_ASN,
                                          f"vipd-n{n.index}"))
            c["guard"] = {"nodesShareAsn": True}
            vipds.append(lab.Vipd(L, n.ns, c, name=f"vipd-n{n.index}"))
        wait_counts(vipds, [3, 3, 3], "nodes sharing AS 65001, next hop kept")
        f1 = fabric(vipds[0])
        others = sorted(a["node"] for a in f1["announcers"] if not a["self"])
        lab.check(others == [f"next hop {nodes[1].v4}", f"next hop {nodes[2].v4}"],
                  f"named by next hop: {others}")
        tor.configure(lambda text: text.replace("add paths tx; ", "add paths tx; next hop self; "))
        # (BIRD may restart the sessions for the change: "no Established peer" for a moment.)
        lab.wait_until(lambda: all("cannot tell the nodes apart" in fabric(v).get("reason", "")
                                   for v in vipds), 45, 0.2,
                       lambda: f"every view unavailable once the ToR rewrites the next hop: "
                       f"{[fabric(v) for v in vipds]}")
        reason = fabric(vipds[0]).get("reason", "")
        lab.log(f"node 1: {reason}")
        lab.check("cannot tell the nodes apart" in reason and "guard.nodesShareAsn" in reason,
                  f"the reason says why: {reason}")
        lab.check("cannot tell the nodes apart" in vipds[0].vipctl("status"), "vipctl status")


def rr_pair() -> None:
    with lab.Lab("fabric-identity-rr-pair") as L:
        topo = L.fabric_with_nodes(3)
        nodes = topo.nodes
        rr2 = L.namespace("rr2")
        rr2.add_veth("eth0", topo.fabric, "rr2", peer_bridge=topo.fabric_if)
        rr2.add_address("eth0", f"{TOR2_V4}/24")
        for ns, rid, ifname, other in ((topo.fabric, topo.fabric_v4, topo.fabric_if, TOR2_V4),
                                       (rr2, TOR2_V4, "eth0", topo.fabric_v4)):
            neighbors = [lab.Neighbor(n.v4, lab.FABRIC_ASN, passive=True,
                                      bird_options=["rr client;"], add_paths_tx=True,
                                      families=["ipv4"]) for n in nodes]
            neighbors.append(lab.Neighbor(other, lab.FABRIC_ASN, passive=rid < other,
                                          name="reflector", add_paths_tx=True,
                                          families=["ipv4"]))
            rr = lab.Bird(L, ns, rid, lab.FABRIC_ASN, neighbors, interfaces=[ifname],
                          name=f"bird-rr-{rid}")
            rr.configure(lambda text: re.sub(r"(protocol bgp reflector \{.*?)add paths tx; ",
                                             r"\1add paths on; ", text, flags=re.S))
        vipds = []
        for n in nodes:
            c = ipv4_only(lab.vipd_config(L, n, lab.FABRIC_ASN, topo.fabric_v4, lab.FABRIC_ASN,
                                          f"vipd-n{n.index}"))
            second_peer(c, TOR2_V4, lab.FABRIC_ASN)
            vipds.append(lab.Vipd(L, n.ns, c, name=f"vipd-n{n.index}"))

        def both_used() -> bool:
            return all(len([s for s in fabric(v).get("sessions", []) if s.get("used")]) == 2
                       for v in vipds)

        lab.wait_until(lambda: counts(vipds) == [3, 3, 3] and both_used(), 60, 0.2,
                       lambda: f"every node to count 3 through both reflectors: {counts(vipds)}; "
                       f"{[fabric(v) for v in vipds]}")
        f1 = fabric(vipds[0])
        lab.log(f"node 1's view through two reflectors: {f1}")
        others = [a for a in f1["announcers"] if not a["self"]]
        lab.check(sorted(a["node"] for a in others) ==
                  [f"router {nodes[1].v4}", f"router {nodes[2].v4}"] and
                  all(sorted(a["via"]) == [topo.fabric_v4, TOR2_V4] for a in others),
                  f"each other node once, via both reflectors: {others}")
        vipds[2].stop()
        wait_counts(vipds[:2], [2, 2], "after node 3 stopped")


def test() -> None:
    two_tors()
    hostile_session()
    shared_as()
    rr_pair()


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries + lab.Exabgp.binaries, vipd=True)
