#!/usr/bin/env python3
"""e2e: GTSM (RFC 5082) with peers[].ttlSecurity against BIRD (`ttl security on` on its side).

- both sides with GTSM: Established, the VIP in BIRD, and the capture on the fabric bridge shows
  every TCP segment each way (SYN, bare ACKs, BGP messages) with TTL 255;
- vipd with GTSM, BIRD without (BIRD then sends eBGP with TTL 1): never Established (checked for
  NEVER_S), the node's kernel counts the drops (TcpExt TCPMinTTLDrop) and vipd's status and log
  point at GTSM;
- BIRD with GTSM, vipd without (vipd sends TTL 1): never Established in BIRD's view, the
  fabric's kernel drops. (vipd may see a short-lived Established: BIRD sets the minimum TTL on
  the accepted socket after the handshake, so vipd's OPEN arriving before that gets through.)
- vipd listening (every peer with GTSM, so the listener itself requires TTL 255), BIRD dialling
  with GTSM: Established, and vipd's SYN-ACK and all later segments carry TTL 255.
"""
import re
import signal
import time

import lab

NEVER_S = 10


def min_ttl_drops(ns: lab.Namespace) -> int:
    """TcpExt TCPMinTTLDrop of the namespace: segments the kernel dropped below a socket's
    minimum TTL."""
    lines = ns.run(["cat", "/proc/net/netstat"]).stdout.splitlines()
    for names, values in zip(lines[::2], lines[1::2]):
        if names.startswith("TcpExt:"):
            return int(dict(zip(names.split(), values.split()))["TCPMinTTLDrop"])
    lab.check(False, "no TcpExt line in /proc/net/netstat")
    return 0


def gtsm_edit(on: bool):
    def edit(config: dict, topo: lab.Topology) -> None:  # noqa: ARG001
        config["peers"][0]["ttlSecurity"] = on
    return edit


def both_sides() -> None:
    with lab.Lab("ttl-security-both") as L:
        cap: list[lab.TcpCapture] = []
        t0 = time.monotonic()
        s = lab.build_single_vipd(L, gtsm_edit(True), bird_options=["ttl security on;"],
                                  after_bird=lambda b: cap.append(lab.TcpCapture(L, b.ns, "br0")))
        bird, vipd, node, fabric = s.bird, s.vipd, s.node, s.topo.fabric_v4
        lab.wait_established(bird, [node.v4], 20)
        lab.wait_until(lambda: bird.has_route(lab.VIP4), 10, 0.05, f"{lab.VIP4} in BIRD")
        print(f"both with GTSM: Established and {lab.VIP4} in BIRD in "
              f"{time.monotonic() - t0:.2f}s")
        st = vipd.peer_status(fabric)
        lab.check(st["ttlSecurity"] is True and st["state"] == "Established",
                  f"status shows ttlSecurity and Established: {st['ttlSecurity']}, {st['state']}")
        # Let a KEEPALIVE or two go by each way, then read what went over the bridge.
        time.sleep(4)
        sent, received = cap[0].segment_ttls(node.v4, fabric), cap[0].segment_ttls(fabric, node.v4)
        for who, segs in (("vipd", sent), ("BIRD", received)):
            ttls = sorted({ttl for ttl, _, _ in segs})
            syns = sum(1 for _, flags, _ in segs if flags & 0x02)
            data = sum(1 for _, _, n in segs if n)
            lab.log(f"{who}'s segments: {len(segs)} ({syns} SYN, {data} with data), TTLs {ttls}")
            lab.check(syns >= 1 and data >= 2, f"{who}'s SYN and BGP messages captured: {segs}")
            lab.check(ttls == [255], f"every segment {who} sent has TTL 255, not {ttls}")
        print(f"both with GTSM: vipd sent {len(sent)} segments, BIRD {len(received)}, all TTL 255")
        lab.check(min_ttl_drops(node.ns) == 0, "nothing dropped on the node")
        vipd.proc.signal(signal.SIGTERM)
        lab.check(vipd.wait_exit(15) == 0, "vipd exits 0")


def vipd_only() -> None:
    with lab.Lab("ttl-security-vipd-only") as L:
        s = lab.build_single_vipd(L, gtsm_edit(True))
        bird, vipd, node, fabric = s.bird, s.vipd, s.node, s.topo.fabric_v4
        lab.wait_never(lambda: bird.neighbor_state(node.v4) == "Established", NEVER_S, 0.2,
                       "vipd with GTSM, BIRD without: BIRD must not establish")
        st = vipd.peer_status(fabric)
        drops = min_ttl_drops(node.ns)
        lab.log(f"vipd only: vipd {st['state']}, last error {st['lastError']!r}; BIRD "
                f"{bird.neighbor_state(node.v4)}; node kernel TCPMinTTLDrop {drops}")
        lab.check(st["state"] != "Established" and st["ttlSecurity"] is True,
                  f"vipd must not establish: {st['state']}")
        lab.check(not bird.has_route(lab.VIP4), "nothing announced")
        lab.check(drops > 0, "the node's kernel dropped BIRD's TTL-1 segments")
        # The kernel drops silently; vipd sees a connection that never answers and says why it
        # suspects GTSM in lastError (and logs it when the attempt fails).
        lab.check("GTSM" in st["lastError"] and "TCPMinTTLDrop" in st["lastError"],
                  f"vipd's lastError names GTSM and the kernel's drop counter: {st['lastError']!r}")
        print(f"vipd with GTSM, BIRD without: never Established in {NEVER_S} s; vipd "
              f"{st['state']} ({st['lastError']}); {drops} segments dropped by the node's kernel")
        vipd.proc.signal(signal.SIGTERM)
        vipd.wait_exit(15)


def bird_only() -> None:
    with lab.Lab("ttl-security-bird-only") as L:
        s = lab.build_single_vipd(L, gtsm_edit(False), bird_options=["ttl security on;"])
        bird, vipd, node, fabric = s.bird, s.vipd, s.node, s.topo.fabric_v4
        lab.wait_never(lambda: bird.neighbor_state(node.v4) == "Established", NEVER_S, 0.2,
                       "BIRD with GTSM, vipd without: BIRD must not establish")
        st = vipd.peer_status(fabric)
        drops = min_ttl_drops(s.topo.fabric)
        lab.log(f"BIRD only: vipd {st['state']}, last error {st['lastError']!r}; "
                f"fabric kernel TCPMinTTLDrop {drops}")
        lab.check(st["state"] != "Established" and st["ttlSecurity"] is False,
                  f"vipd must not establish: {st['state']}")
        lab.check(drops > 0, "the fabric's kernel dropped vipd's TTL-1 segments")
        lab.check(not bird.has_route(lab.VIP4), "nothing announced")
        lab.log(f"BIRD only: vipd's Established transitions {st['establishedTransitions']}")
        print(f"BIRD with GTSM, vipd without: never Established in {NEVER_S} s; vipd "
              f"{st['state']} ({st['lastError']}); {drops} segments dropped by the fabric's kernel")
        vipd.proc.signal(signal.SIGTERM)
        vipd.wait_exit(15)


def bird_dials() -> None:
    with lab.Lab("ttl-security-listen") as L:
        cap: list[lab.TcpCapture] = []

        def edit(config: dict, topo: lab.Topology) -> None:
            config["peers"][0]["ttlSecurity"] = True
            # Nothing listens there: vipd's own dials are refused, so BIRD's connection is used.
            config["peers"][0]["port"] = 1179
            config["listen"] = {"enabled": True, "address": topo.nodes[0].v4, "port": 179}

        s = lab.build_single_vipd(L, edit, bird_dials=True, bird_options=["ttl security on;"],
                                  after_bird=lambda b: cap.append(lab.TcpCapture(L, b.ns, "br0")))
        bird, vipd, node, fabric = s.bird, s.vipd, s.node, s.topo.fabric_v4
        lab.wait_established(bird, [node.v4], 20)
        lab.wait_until(lambda: bird.has_route(lab.VIP4), 10, 0.05, f"{lab.VIP4} in BIRD")
        sent = cap[0].segment_ttls(node.v4, fabric)
        syn_acks = [ttl for ttl, flags, _ in sent if flags & 0x12 == 0x12]
        # From vipd's first SYN-ACK on: a dial of BIRD's that arrives before vipd listens is
        # refused by the node's kernel, whose RST (no socket, so no GTSM) has the default TTL.
        first = next((i for i, (_, flags, _) in enumerate(sent) if flags & 0x12 == 0x12), 0)
        early = [(ttl, flags) for ttl, flags, _ in sent[:first]]
        lab.check(all(flags & 0x04 for _, flags in early),
                  f"before vipd's SYN-ACK only the kernel's RSTs: {early}")
        sent = sent[first:]
        ttls = sorted({ttl for ttl, _, _ in sent})
        lab.log(f"listening: vipd's SYN-ACK TTLs {syn_acks}, all its TTLs {ttls}")
        lab.check(ttls == [255], f"every segment vipd sent has TTL 255, not {ttls}")
        lab.check(len(syn_acks) >= 1 and vipd.log_lines("using the connection the peer opened"),
                  "BIRD's connection was accepted and used")
        print(f"listening, every peer with GTSM: Established; vipd's SYN-ACKs {syn_acks}, "
              f"all its segments TTL 255")
        vipd.proc.signal(signal.SIGTERM)
        lab.check(vipd.wait_exit(15) == 0, "vipd exits 0")


def test() -> None:
    bird_dials()
    both_sides()
    vipd_only()
    bird_only()


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries + lab.TcpCapture.binaries, vipd=True)
