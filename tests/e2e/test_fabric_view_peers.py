#!/usr/bin/env python3
"""e2e: the fabric's view against each kind of fabric (issue 28 part 2), three labs in turn:

- BIRD as an iBGP route reflector (AS 65000 everywhere, `rr client`, `add paths tx`): nodes 2
  and 3 count 4 announcers (the paths carry ORIGINATOR_ID and CLUSTER_LIST), one of them a
  fourth node that was rendered with node 1's router ID; node 1 counts 3 (a path with its own
  router ID counts as its own: errs low, issue 40), reports the duplicate router ID (status,
  log, vipctl status, vipd_fabric_duplicate_router_id) and stays ready (one session alone
  confirms nothing); the other nodes report two nodes sharing a router ID. Node 3 stops: nodes
  1 and 2 count 2 and 3.
- FRR as a route reflector (`neighbor X route-reflector-client`, `addpath-tx-all-paths`): 3
  announcers by router ID, then 2 after node 3 stops.
- GoBGP as an eBGP ToR (per-node ASNs, add-paths send-max 8): GoBGP rewrites the next hop to its
  own address, so nodes are told apart by their origin AS: 3, then 2.
"""
import lab


def fabric(v: lab.Vipd, vip: str = lab.VIP4) -> dict:
    return v.status().get("fabric", {}).get("vips", {}).get(vip, {})


def counts(vipds) -> list[int]:
    return [int(fabric(v).get("count", -1)) for v in vipds]


def wait_counts(vipds, want: int, what: str) -> None:
    lab.wait_until(lambda: all(c == want for c in counts(vipds)), 30, 0.2,
                   lambda: f"{what}: every node to count {want} announcers: {counts(vipds)}; "
                   f"{[fabric(v) for v in vipds]}")


def ibgp(config: dict) -> None:
    config["localAsn"] = lab.FABRIC_ASN
    config["peers"][0]["asn"] = lab.FABRIC_ASN


def bird_rr() -> None:
    with lab.Lab("fabric-view-bird-rr") as L:
        topo = L.fabric_with_nodes(4)
        nodes = topo.nodes
        neighbors = [lab.Neighbor(n.v4, lab.FABRIC_ASN, passive=True, name=f"node{n.index}",
                                  bird_options=["rr client;"], add_paths_tx=True) for n in nodes]
        lab.Bird(L, topo.fabric, topo.fabric_v4, lab.FABRIC_ASN, neighbors,
                 interfaces=[topo.fabric_if])
        vipds = []
        for n in nodes:
            c = lab.vipd_config(L, n, lab.FABRIC_ASN, topo.fabric_v4, lab.FABRIC_ASN,
                                f"vipd-n{n.index}")
            if n.index == 4:  # a clone: rendered with node 1's router ID
                c["routerId"] = nodes[0].v4
                c["allowNonLocalRouterId"] = True
            vipds.append(lab.Vipd(L, n.ns, c, name=f"vipd-n{n.index}"))
        # Node 1 counts the clone's path (its own router ID on another next hop) as its own;
        # nodes 2 and 3 see two next hops with one router ID and count them apart.
        lab.wait_until(lambda: counts(vipds)[:3] == [3, 4, 4], 30, 0.2,
                       lambda: f"nodes 1-3 to count 3, 4, 4 announcers: {counts(vipds)}; "
                       f"{[fabric(v) for v in vipds[:3]]}")
        f2 = fabric(vipds[1])
        lab.log(f"node 2's view through the route reflector: {f2}")
        routers = sorted(a.get("originatorId", "") for a in f2["announcers"] if not a["self"])
        lab.check(routers == [nodes[0].v4, nodes[0].v4, nodes[2].v4],
                  f"ORIGINATOR_IDs seen by node 2: {routers}")
        status1 = vipds[0].status()["fabric"]
        lab.log(f"node 1: duplicate router ID {status1['duplicateRouterId']}")
        lab.check(any(nodes[3].v4 in d and "same router ID" in d
                      for d in status1["duplicateRouterId"]),
                  f"node 1 must report the clone at {nodes[3].v4}: {status1}")
        lab.check(vipds[0].metric("vipd_fabric_duplicate_router_id") >= 1,
                  "vipd_fabric_duplicate_router_id on node 1")
        lab.check(bool(vipds[0].log_lines("another node uses the same router ID")),
                  "node 1 must log the duplicate router ID")
        lab.check("DUPLICATE ROUTER ID" in vipds[0].vipctl("status"), "vipctl status on node 1")
        lab.check(any("same router ID" in d
                      for d in vipds[1].status()["fabric"]["duplicateRouterId"]),
                  "node 2 must report two nodes sharing a router ID")
        # One route reflector is one session: it does not confirm the duplicate, and readiness
        # says whether this node can serve (issue 40).
        code, body = vipds[0].http("/readyz?verbose")
        lab.check(code == 200 and "same router ID" not in body,
                  f"/readyz passes on node 1: {code} {body!r}")
        vipds[2].stop()
        lab.wait_until(lambda: counts(vipds[:2]) == [2, 3], 30, 0.2,
                       lambda: f"nodes 1-2 to count 2, 3 after node 3 stops: {counts(vipds[:2])}")


def frr_rr() -> None:
    with lab.Lab("fabric-view-frr-rr") as L:
        topo = L.fabric_with_nodes(3)
        nodes = topo.nodes
        neighbors = [lab.Neighbor(n.v4, lab.FABRIC_ASN, passive=True, rr_client=True,
                                  add_paths_tx=True) for n in nodes]
        lab.Frr(L, topo.fabric, topo.fabric_v4, lab.FABRIC_ASN, neighbors)
        vipds = []
        for n in nodes:
            c = lab.vipd_config(L, n, lab.FABRIC_ASN, topo.fabric_v4, lab.FABRIC_ASN,
                                f"vipd-n{n.index}")
            vipds.append(lab.Vipd(L, n.ns, c, name=f"vipd-n{n.index}"))
        wait_counts(vipds, 3, "FRR RR")
        f1 = fabric(vipds[0])
        lab.log(f"node 1's view through FRR: {f1}")
        keys = sorted(a["node"] for a in f1["announcers"] if not a["self"])
        lab.check(keys == [f"router {nodes[1].v4}", f"router {nodes[2].v4}"],
                  f"FRR's reflected paths name the nodes by ORIGINATOR_ID: {keys}")
        vipds[2].stop()
        wait_counts(vipds[:2], 2, "FRR RR after node 3 stopped")


def gobgp_tor() -> None:
    with lab.Lab("fabric-view-gobgp") as L:
        topo = L.fabric_with_nodes(3)
        nodes = topo.nodes
        neighbors = [lab.Neighbor(n.v4, n.asn, passive=True, add_paths_tx=True) for n in nodes]
        lab.Gobgp(L, topo.fabric, topo.fabric_v4, lab.FABRIC_ASN, neighbors,
                  local_address=topo.fabric_v4)
        vipds = [lab.Vipd(L, n.ns, lab.vipd_config(L, n, n.asn, topo.fabric_v4, lab.FABRIC_ASN,
                                                   f"vipd-n{n.index}"), name=f"vipd-n{n.index}")
                 for n in nodes]
        wait_counts(vipds, 3, "GoBGP")
        f1 = fabric(vipds[0])
        lab.log(f"node 1's view through GoBGP: {f1}")
        others = [a for a in f1["announcers"] if not a["self"]]
        # GoBGP sends the paths in the order it learnt them, which is not the nodes' order.
        lab.check(len(others) == 2 and
                  all(sum(str(n.asn) in str(a["asPath"]) for a in others) == 1
                      for n in nodes[1:]),
                  f"each other node's path carries its AS ({[n.asn for n in nodes[1:]]}): "
                  f"{others}")
        vipds[2].stop()
        wait_counts(vipds[:2], 2, "GoBGP after node 3 stopped")


def test() -> None:
    bird_rr()
    frr_rr()
    gobgp_tor()


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries + lab.Frr.binaries + lab.Gobgp.binaries,
             vipd=True)
