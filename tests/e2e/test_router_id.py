#!/usr/bin/env python3
"""e2e: the router ID must be one of the node's own IPv4 addresses. One vipd node (AS 65001,
192.0.2.11) against a BIRD fabric (AS 65000).

- routerId 192.0.2.99 (on no interface of the node): vipd exits 1 quickly, saying
  "router ID 192.0.2.99 is not an address of this node" and listing the addresses it found;
  BIRD never sees a session;
- the same with allowNonLocalRouterId: true: vipd starts, the session is Established, BIRD
  sees neighbour ID 192.0.2.99, and the VIPs are announced.
"""
import re
import time

import lab

NON_LOCAL_ID = "192.0.2.99"
EXIT_BOUND_S = 3


def test() -> None:
    with lab.Lab("router-id") as L:
        def edit(c: dict, _topo: lab.Topology) -> None:
            c["routerId"] = NON_LOCAL_ID

        s = lab.build_single_vipd(L, edit)
        bird, vipd, node = s.bird, s.vipd, s.node
        rc = vipd.wait_exit(EXIT_BOUND_S)
        lab.log(f"vipd exited {rc} {time.monotonic() - vipd.proc.started:.2f}s after its start")
        text = vipd.proc.log_text()
        print(text.rstrip(), flush=True)
        lab.check(rc == 1, f"vipd should exit 1 with a non-local router ID, got {rc}")
        m = re.search(r"router ID " + re.escape(NON_LOCAL_ID)
                      + r" is not an address of this node \(IPv4 addresses found: ([^)]*)\)", text)
        lab.check(m, "vipd should say the router ID is not an address of this node")
        lab.check(node.v4 in m.group(1) and "127.0.0.1" in m.group(1),
                  f"the message should list the node's IPv4 addresses ({node.v4}, 127.0.0.1): "
                  f"{m.group(1)!r}")
        lab.check(bird.neighbor_state(node.v4) != "Established", "no session should come up")
        lab.check(not node.ns.address_entries("lo", lab.VIP4),
                  "vipd should bind nothing when it refuses to start")

        config = lab.vipd_config(L, node, node.asn, s.topo.fabric_v4, lab.FABRIC_ASN, "vipd-allow")
        config["routerId"] = NON_LOCAL_ID
        config["allowNonLocalRouterId"] = True
        allowed = lab.Vipd(L, node.ns, config, name="vipd-allow")
        lab.wait_established(bird, [node.v4], 30)
        for prefix in (lab.VIP4, lab.VIP6):
            lab.wait_until(lambda p=prefix: bird.has_route(p), 15, 0.05, f"{prefix} in BIRD")
        detail = bird.protocol_all(node.v4)
        lab.check(re.search(r"Neighbor ID:\s*" + re.escape(NON_LOCAL_ID), detail),
                  f"BIRD should see neighbour ID {NON_LOCAL_ID}:\n{detail}")
        lab.check(allowed.status()["routerId"] == NON_LOCAL_ID, "status routerId")
        lab.log(f"allowNonLocalRouterId: true -> Established with router ID {NON_LOCAL_ID}; "
                "both VIPs in BIRD")


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries, vipd=True)
