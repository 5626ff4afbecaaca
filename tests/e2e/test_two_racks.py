#!/usr/bin/env python3
"""e2e: one cluster config, two racks (issue 18 part 1). Four vipd nodes read the same cluster
file, as the DaemonSet's pods read one ConfigMap; each reads its own node file (--node-config)
with its router ID, AS and peers, as `vipd render` writes it at first boot.

Rack A: router BIRD AS 64512 at 192.0.2.1, nodes 1 and 2 (AS 64513) at 192.0.2.11-12.
Rack B: router BIRD AS 64522 at 198.51.100.1, nodes 3 and 4 (AS 64523) at 198.51.100.13-14.

Asserts:
- each rack's router has the VIP from its own two nodes and from no other (the BGP next hops of
  BIRD's paths and the router's kernel ECMP route), every path carrying the cluster file's
  community;
- `vipd config --show` on node 3 names the node file for routerId, localAsn and the peer, the
  cluster file for the VIP, the drain timing and (through peerDefaults) the peer's hold time;
- a node file that also sets a cluster key (vips) stops vipd at start with exit 1 and an error
  naming both files;
- stopping node 1 takes its path out of rack A only: rack A keeps node 2, rack B keeps both.
The lab nodes share one filesystem, so each node file also carries that node's control socket
and state directory (on real nodes /run/vipd and /var/lib/vipd are each node's own).
"""
import lab

CLUSTER_COMMUNITY = "64600:42"
RACKS = {
    # name: (router address, router AS, node AS, node addresses)
    "a": ("192.0.2.1", 64512, 64513, ["192.0.2.11", "192.0.2.12"]),
    "b": ("198.51.100.1", 64522, 64523, ["198.51.100.13", "198.51.100.14"]),
}
BOUND_S = 30


def cluster_file() -> str:
    """The one file every node reads: policy only, no router ID, AS or peers."""
    return lab.to_yaml({
        "apiVersion": "vipd.io/v1alpha1",
        "kind": "SpeakerConfiguration",
        "vips": [{"address": lab.VIP4, "interface": "lo"}],
        "communities": [CLUSTER_COMMUNITY],
        # Session timers are cluster policy, though the peers are in the node files.
        "peerDefaults": {"holdTime": "9s", "connectRetryTime": "1s"},
        "health": {"type": "none"},
        "drain": {"gracefulShutdownTime": "300ms", "unbindDelay": "200ms"},
    }) + "\n"


def node_file(L: lab.Lab, name: str, address: str, asn: int, router: str, router_asn: int) -> str:
    return lab.to_yaml({
        "apiVersion": "vipd.io/v1alpha1",
        "kind": "NodeConfiguration",
        "routerId": address,
        "localAsn": asn,
        "peers": [{"address": router, "asn": router_asn}],
        "control": {"socket": L.path(f"{name}.sock"), "stateDir": L.path(f"{name}-state")},
    }) + "\n"


def write(L: lab.Lab, name: str, text: str) -> str:
    path = L.path(name)
    with open(path, "w") as f:
        f.write(text)
    return path


def test() -> None:
    with lab.Lab("two-racks") as L:
        cluster = write(L, "cluster.yaml", cluster_file())
        routers, nodes = {}, []
        for rack, (router_ip, router_asn, node_asn, addresses) in RACKS.items():
            router = L.namespace(f"r{rack}")
            router.add_bridge("br0")
            router.add_address("br0", f"{router_ip}/24")
            for address in addresses:
                i = len(nodes) + 1
                ns = L.namespace(f"n{i}")
                ns.add_veth("eth0", router, f"n{i}", peer_bridge="br0")
                ns.add_address("eth0", f"{address}/24")
                ns.ip("route", "add", "default", "via", router_ip)
                nodes.append((rack, f"node{i}", ns, address))
            routers[rack] = lab.Bird(
                L, router, router_ip, router_asn,
                [lab.Neighbor(a, node_asn, passive=True) for a in addresses],
                name=f"bird-{rack}")
        vipds = {}
        for rack, name, ns, address in nodes:
            router_ip, router_asn, node_asn, _ = RACKS[rack]
            node = write(L, f"{name}.node.yaml",
                         node_file(L, name, address, node_asn, router_ip, router_asn))
            vipds[name] = lab.Vipd(L, ns, cluster_file(), name=name,
                                   args=["--node-config", node])

        def rack_view(rack: str) -> tuple[list[str], list[str]]:
            bird = routers[rack]
            sources = sorted(h for p in bird.paths(lab.VIP4) for h in p["nexthops"])
            return sources, sorted(bird.kernel_nexthops(lab.VIP4))

        for rack, (_, _, _, addresses) in RACKS.items():
            want = sorted(addresses)
            lab.wait_until(lambda r=rack, w=want: rack_view(r) == (w, w), BOUND_S, 0.2,
                           f"rack {rack}'s router to have {lab.VIP4} from {want} only, ECMP in "
                           f"its kernel")
            for p in routers[rack].paths(lab.VIP4):
                lab.check(CLUSTER_COMMUNITY in p["communities"],
                          f"rack {rack}: the path via {p['nexthops']} carries the cluster file's "
                          f"community {CLUSTER_COMMUNITY}: {p['communities']}")
            lab.log(f"rack {rack}: {lab.VIP4} from {want}; kernel: "
                    f"{routers[rack].ns.route_show(lab.VIP4).strip()}")

        # The effective config and where each field came from.
        node3 = L.path("node3.node.yaml")
        shown = lab.run([vipds["node3"].binary, "config", "--show", "--config", cluster,
                         "--node-config", node3]).stdout
        fields = {}
        for line in shown.splitlines():
            if line.startswith("#"):
                continue
            head, _, source = line.partition("  # ")
            key, _, value = head.partition(": ")
            fields[key] = (value.strip(), source.strip())
        for key, value, source in [("routerId", "198.51.100.13", node3),
                                   ("localAsn", "64523", node3),
                                   ("peers[198.51.100.1].asn", "64522", node3),
                                   ("peers[198.51.100.1].holdTime", "9s",
                                    f"{cluster} (peerDefaults)"),
                                   ("peers[198.51.100.1].keepaliveTime", "3s", "default"),
                                   ("vips[203.0.113.10/32].interface", '"lo"', cluster),
                                   ("vips[203.0.113.10/32].rebind", "true", "default"),
                                   ("communities", f"[{CLUSTER_COMMUNITY}]", cluster),
                                   ("drain.unbindDelay", "200ms", cluster),
                                   ("drain.timeout", "10s", "default")]:
            lab.check(fields.get(key) == (value, source),
                      f"config --show: {key} is {value} from {source}, got {fields.get(key)}")

        # A node file that sets a cluster key: refused at start, naming both files.
        bad = write(L, "bad.node.yaml", open(node3).read() + "vips: [{address: 203.0.113.99/32}]\n")
        p = lab.run([vipds["node3"].binary, "--config", cluster, "--node-config", bad],
                    check=False, timeout=10)
        out = p.stdout + p.stderr
        lab.check(p.returncode == 1 and f"vips: set in both {cluster}" in out and bad in out,
                  f"a key in both files stops vipd with both files named: exit {p.returncode}: "
                  f"{out.strip()}")

        # Node 1 stops: rack A loses its path, rack B does not notice.
        vipds["node1"].stop()
        a_rest = [RACKS["a"][3][1]]
        lab.wait_until(lambda: rack_view("a") == (a_rest, a_rest), BOUND_S, 0.1,
                       f"rack a to keep only {a_rest} after node 1 stopped")
        b_all = sorted(RACKS["b"][3])
        lab.check(rack_view("b") == (b_all, b_all), f"rack b still has {b_all}: {rack_view('b')}")
        lab.log("node 1 stopped: rack a keeps node 2, rack b keeps both")


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries, vipd=True)
