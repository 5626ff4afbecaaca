#!/usr/bin/env python3
"""e2e: multihop BFD (RFC 5883) with BIRD, and hostile BFD input on a single-hop session.

1. Multihop: BIRD's BGP protocol for the node is `multihop 2` with `bfd on`, so BIRD asks for a
   multihop BFD session (UDP 4784); vipd has ebgpMultihop 2 and bfd.multihop true. Asserts the
   session is Up in both views over UDP 4784 (vipd's packets on the wire: version 1, destination
   port 4784, source port 49152-65535), that nothing goes to 3784, and that freezing vipd drops
   the route from the fabric kernel within the detection time + 200 ms; SIGCONT brings it back.
2. Hostile input to a single-hop session that is Up (RFC 5881), sent from the fabric namespace:
   a. a well-formed "Down" packet for vipd's session, from the peer's own address and port
      range but with TTL 64: dropped by the TTL 255 check (status ttlDropped grows), the
      session stays Up and BGP stays Established;
   b. the same packet with TTL 255 from an address that is not the peer: dropped, stays Up;
   c. malformed datagrams (short, wrong version, length beyond the datagram, zero detect
      multiplier, zero My Discriminator, the A bit with no authentication, a zero Your
      Discriminator while Up, oversized garbage): each dropped (malformedReceived grows by
      exactly their number), stays Up, vipd keeps running;
   d. control: the packet of (a) with TTL 255 from the peer's address IS taken as the peer
      signalling Down (RFC 5880 6.8.6), so (a) and (b) were dropped for the reason claimed: vipd
      goes Down with diagnostic "Neighbor Signaled Session Down", the BGP session ends (vipd's
      Cease / BFD Down 6/10, or BIRD's Cease when BIRD's BFD, seeing vipd's Down, acts within
      vipd's 50 ms grace for a NOTIFICATION in flight), and comes back Up and Established.
3. IPv6: a session to BIRD over IPv6 (a /128 VIP only) with single-hop BFD: Up in both views,
   and a freeze drops the route within the detection time + 200 ms (hop limit 255 both ways).
4. Port conflict: with UDP 3784 held by another process on the node, a vipd with BFD exits 1
   within 3 s, naming the port and the likely cause, and binds no VIP.
"""
import re
import struct
import signal
import sys
import time

import lab

TIMERS = lab.BfdTimers(100, 100, 3)
MARGIN_S = 0.200
BACK_BOUND_S = 20

_SEND = """
import socket, sys
src, dst, port, ttl, payload = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, ttl)
s.bind((src, 0))
for chunk in payload.split(","):
    s.sendto(bytes.fromhex(chunk), (dst, port))
"""


def send_udp(ns: lab.Namespace, src: str, dst: str, port: int, ttl: int,
             payloads: list[bytes]) -> None:
    """Sends each payload as one UDP datagram from src (an address of ns) with this TTL."""
    ns.run([sys.executable, "-c", _SEND, src, dst, str(port), str(ttl),
            ",".join(p.hex() for p in payloads)])


def bfd_packet(state: int, my_disc: int, your_disc: int, diag: int = 0, version: int = 1,
               flags: int = 0, mult: int = 3, length: int = 24, tx_us: int = 100000,
               rx_us: int = 100000) -> bytes:
    """An RFC 5880 section 4.1 control packet (no authentication section)."""
    return struct.pack("!BBBBIIIII", (version << 5) | diag, (state << 6) | flags, mult, length,
                       my_disc, your_disc, tx_us, rx_us, 0)


UP, DOWN = 3, 1


def freeze(vipd: lab.Vipd, fabric: lab.Namespace, vip: str, next_hop: str) -> tuple[float, float]:
    """SIGSTOPs vipd until the fabric kernel route to vip loses next_hop, then SIGCONTs it.
    Returns the seconds that took and the monotonic time of the SIGCONT."""
    t0 = time.monotonic()
    vipd.proc.signal(signal.SIGSTOP)
    try:
        dt = lab.time_nexthop(fabric, vip, next_hop, False, t0)
    finally:
        thawed = time.monotonic()
        vipd.proc.signal(signal.SIGCONT)
    return dt, thawed


def multihop() -> dict:
    figures = {}
    with lab.Lab("bfd-multihop") as L:
        topo = L.fabric_with_nodes(1)
        node, peer = topo.nodes[0], topo.fabric_v4
        cap = lab.BfdCapture(L, topo.fabric, topo.fabric_if, bpf="udp port 4784 or udp port 3784",
                             name="tcpdump-bfd-mh")
        bird = lab.Bird(L, topo.fabric, peer, lab.FABRIC_ASN,
                        [lab.Neighbor(node.v4, node.asn, name="node1",
                                      bird_options=["multihop 2;", f"source address {peer};"])],
                        interfaces=[topo.fabric_if], bfd=TIMERS, bfd_multihop=True)
        config = lab.vipd_config(L, node, node.asn, peer, lab.FABRIC_ASN, "vipd-n1")
        config["peers"][0]["ebgpMultihop"] = 2
        config["peers"][0]["bfd"] = TIMERS.vipd(multihop=True)
        vipd = lab.Vipd(L, node.ns, config, name="vipd-n1")

        def describe() -> str:
            try:
                v = vipd.bfd_status(peer)
            except Exception as e:  # noqa: BLE001 - shown in a timeout message
                v = f"<{e!r}>"
            return (f"BIRD BFD {bird.bfd_sessions().get(node.v4)}, BIRD BGP "
                    f"{bird.neighbor_state(node.v4)}, vipd BFD {v}")

        def up() -> bool:
            b = vipd.bfd_status(peer)
            return (bird.bfd_state(node.v4) == "Up" and b["state"] == "Up"
                    and bird.neighbor_state(node.v4) == "Established")

        t0 = time.monotonic()
        lab.wait_until(up, 20, 0.05, lambda: f"multihop BFD Up and BGP Established ({describe()})")
        lab.time_nexthop(topo.fabric, lab.VIP4, node.v4, True, t0, 10)
        figures["up"] = time.monotonic() - t0
        b = vipd.bfd_status(peer)
        lab.check(b["mode"] == "multihop" and b["txIntervalMs"] == 100
                  and b["detectionTimeMs"] == 300, f"vipd's multihop session: {b}")
        print(bird.birdc("show", "bfd", "sessions"), flush=True)
        pk = lab.wait_until(lambda: (lambda p: p if len(p) >= 3 else None)(
            cap.from_addr(node.v4)), 5, 0.1, "3 BFD packets from the node captured")
        for p in pk:
            lab.check(p["dport"] == 4784 and p["version"] == 1 and 49152 <= p["sport"] <= 65535
                      and p["ttl"] == 255,
                      f"vipd sent a packet that is not RFC 5883 multihop (UDP 4784, version 1, "
                      f"source port 49152-65535, TTL 255): {p}")
        lab.log(f"multihop {TIMERS}: BFD Up over UDP 4784 and the route in the fabric "
                f"{figures['up']:.2f} s after start; {len(pk)} packets from vipd, all to 4784")

        wall0 = time.time()
        dt, t1 = freeze(vipd, topo.fabric, lab.VIP4, node.v4)
        bound = 0.3 + MARGIN_S
        expired = [t for t, ev in bird.bfd_events(node.v4) if ev == "expired" and t >= wall0]
        lab.log(f"multihop freeze {TIMERS}: fabric dropped the node after {dt:.3f} s (bound "
                f"{bound:.2f} s); BIRD's multihop BFD expired: {bool(expired)}")
        lab.check(expired, f"BIRD logged no BFD expiry: {bird.bfd_events(node.v4)}")
        lab.check(dt <= bound, f"multihop freeze: the route left after {dt:.3f} s > {bound:.2f} s")
        figures["freeze"] = dt
        lab.wait_until(up, BACK_BOUND_S, 0.05, lambda: f"back after SIGCONT ({describe()})")
        figures["thaw"] = lab.time_nexthop(topo.fabric, lab.VIP4, node.v4, True, t1,
                                           BACK_BOUND_S)
        lab.log(f"multihop thaw: route back {figures['thaw']:.2f} s after SIGCONT")
    return figures


def hostile() -> dict:
    figures = {}
    with lab.Lab("bfd-hostile") as L:
        topo = L.fabric_with_nodes(1)
        node, peer = topo.nodes[0], topo.fabric_v4
        stranger = "192.0.2.99"
        topo.fabric.add_address(topo.fabric_if, f"{stranger}/24")
        bird = lab.Bird(L, topo.fabric, peer, lab.FABRIC_ASN,
                        [lab.Neighbor(node.v4, node.asn, name="node1")],
                        interfaces=[topo.fabric_if], bfd=TIMERS)
        config = lab.vipd_config(L, node, node.asn, peer, lab.FABRIC_ASN, "vipd-n1")
        config["peers"][0]["bfd"] = TIMERS.vipd()
        vipd = lab.Vipd(L, node.ns, config, name="vipd-n1")

        def up() -> bool:
            b = vipd.bfd_status(peer)
            return (b["state"] == "Up" and bird.bfd_state(node.v4) == "Up"
                    and bird.neighbor_state(node.v4) == "Established")

        lab.wait_until(up, 20, 0.05, lambda: f"BFD Up and BGP Established "
                       f"({vipd.bfd_status(peer)}, BIRD {bird.neighbor_state(node.v4)})")
        text = vipd.vipctl_run("status").stdout
        print(text, flush=True)
        lab.check(re.search(r"^" + re.escape(peer) + r"\s+Up\s+Up\s", text, re.M),
                  "vipctl status should list the BFD session as Up/Up")
        base = vipd.bfd_status(peer)
        mine, theirs = base["localDiscriminator"], base["remoteDiscriminator"]
        forged_down = bfd_packet(DOWN, theirs, mine, diag=1)

        def still_up(what: str, since: dict) -> dict:
            time.sleep(0.5)  # > the detection time: a wrongly accepted packet would show by now
            now = vipd.bfd_status(peer)
            lab.check(vipd.proc.alive(), f"{what}: vipd exited")
            lab.check(now["state"] == "Up" and now["downTransitions"] == since["downTransitions"]
                      and bird.neighbor_state(node.v4) == "Established",
                      f"{what}: the session did not stay Up: {now}, BIRD BGP "
                      f"{bird.neighbor_state(node.v4)}")
            return now

        # (a) TTL 64 from the peer's address.
        send_udp(topo.fabric, peer, node.v4, 3784, 64, [forged_down] * 3)
        after = still_up("a Down packet with TTL 64", base)
        lab.check(after["ttlDropped"] == base["ttlDropped"] + 3,
                  f"ttlDropped should have grown by 3: {base['ttlDropped']} -> {after['ttlDropped']}")
        # (b) TTL 255 from an address that is not the peer.
        send_udp(topo.fabric, stranger, node.v4, 3784, 255, [forged_down] * 3)
        after = still_up("a Down packet from a stranger", after)
        # (c) Malformed datagrams, TTL 255, from the peer's address.
        bad = [
            b"\x20\x40",                                                 # short
            bfd_packet(UP, theirs, mine, version=0),                     # version 0
            bfd_packet(UP, theirs, mine, version=2),                     # version 2
            bfd_packet(UP, theirs, mine, length=48),                     # length > datagram
            bfd_packet(UP, theirs, mine, length=20),                     # length < 24
            bfd_packet(UP, theirs, mine, mult=0),                        # detect mult 0
            bfd_packet(UP, 0, mine),                                     # my discriminator 0
            bfd_packet(UP, theirs, mine, flags=0x04),                    # A bit, no auth section
            bfd_packet(UP, theirs, 0),                                   # your discr 0 while Up
            bfd_packet(UP, theirs, mine, flags=0x01),                    # multipoint
            bytes(range(256)) * 2,                                       # garbage, 512 bytes
        ]
        before = after
        send_udp(topo.fabric, peer, node.v4, 3784, 255, bad)
        after = still_up("malformed datagrams", before)
        grew = after["malformedReceived"] - before["malformedReceived"]
        lab.check(grew == len(bad), f"malformedReceived grew by {grew}, expected {len(bad)}: {after}")
        lab.log(f"hostile: {after['ttlDropped']} TTL-64 packets and {grew} malformed datagrams "
                f"dropped, a stranger's packets ignored; BFD stayed Up, BGP Established")
        # (d) Control: the same Down packet with TTL 255 from the peer is accepted.
        after_peer = vipd.peer_status(peer)
        t0 = time.monotonic()
        send_udp(topo.fabric, peer, node.v4, 3784, 255, [forged_down])
        lab.wait_until(lambda: vipd.bfd_status(peer)["downTransitions"] > after["downTransitions"],
                       3, 0.01, lambda: f"vipd to accept a TTL 255 Down from the peer "
                       f"({vipd.bfd_status(peer)})")
        # The session ends: vipd sends Cease / BFD Down (6/10), unless BIRD's own BFD, seeing
        # vipd's Down, made BIRD send its Cease first (vipd waits PeerSession's 50 ms grace for a
        # NOTIFICATION in flight, so the session ends with the peer's reason when it has one).
        received_before = sum(v for k, v in after_peer["notificationsReceivedByCode"].items()
                              if k.startswith("6/"))

        def session_ended():
            p = vipd.peer_status(peer)
            if p["notificationsSentByCode"].get("6/10"):
                return "vipd sent Cease / BFD Down 6/10"
            got = {k: v for k, v in p["notificationsReceivedByCode"].items() if k.startswith("6/")}
            return (f"BIRD's Cease {sorted(got)} read first" if sum(got.values()) > received_before
                    else None)
        ended = lab.wait_until(session_ended, 3, 0.05, lambda: f"the BGP session to end: vipd's "
                               f"Cease 6/10 or BIRD's Cease ({vipd.peer_status(peer)})")
        lab.log(f"control: {ended}")
        lab.wait_until(up, BACK_BOUND_S, 0.05, lambda: f"back Up after the control packet "
                       f"({vipd.bfd_status(peer)}, BIRD {bird.neighbor_state(node.v4)})")
        figures["control_back"] = time.monotonic() - t0
        last = vipd.bfd_status(peer)
        lab.log(f"control: a TTL 255 Down from the peer took vipd's session down and it was back "
                f"Up and Established after {figures['control_back']:.2f} s")
        lab.check(vipd.metric("vipd_bfd_transitions_total", peer=peer, to="Down") == 
                  last["transitionsTo"]["Down"],
                  "vipd_bfd_transitions_total{to=Down} disagrees with the status")

        # 3. Port conflict.
        vipd.proc.signal(signal.SIGTERM)
        vipd.wait_exit(15)
        lab.check(not node.ns.address_entries("lo", lab.VIP4), "the stopped vipd left its VIP")
        holder = L.start(node.ns, "udp-3784-holder", [sys.executable, "-c",
                         "import socket, time; s = socket.socket(socket.AF_INET, "
                         "socket.SOCK_DGRAM); s.bind(('0.0.0.0', 3784)); print('bound', "
                         "flush=True); time.sleep(120)"])
        lab.wait_until(lambda: "bound" in holder.log_text(), 5, 0.05, "the holder to bind 3784")
        config2 = lab.vipd_config(L, node, node.asn, peer, lab.FABRIC_ASN, "vipd-conflict")
        config2["peers"][0]["bfd"] = TIMERS.vipd()
        blocked = lab.Vipd(L, node.ns, config2, name="vipd-conflict")
        rc = blocked.wait_exit(3)
        text = blocked.proc.log_text()
        lab.check(rc == 1, f"vipd should exit 1 when UDP 3784 is taken, got {rc}: {text}")
        lab.check("cannot receive BFD on UDP port 3784 (IPv4)" in text
                  and "another BFD speaker" in text,
                  f"vipd should name the BFD port and the likely cause: {text}")
        lab.check(not node.ns.address_entries("lo", lab.VIP4),
                  "vipd bound the VIP although it refused to start")
        lab.log("port conflict: vipd exited 1: "
                + next(l for l in text.splitlines() if "cannot receive BFD" in l).strip())
        holder.stop()
    return figures


def ipv6() -> dict:
    figures = {}
    with lab.Lab("bfd-v6") as L:
        topo = L.fabric_with_nodes(1)
        node, peer = topo.nodes[0], topo.fabric_v6
        bird = lab.Bird(L, topo.fabric, topo.fabric_v4, lab.FABRIC_ASN,
                        [lab.Neighbor(node.v6, node.asn, name="node1")],
                        interfaces=[topo.fabric_if], bfd=TIMERS)
        config = lab.vipd_config(L, node, node.asn, peer, lab.FABRIC_ASN, "vipd-n1")
        config["vips"] = [v for v in config["vips"] if ":" in v["address"]]
        p0 = config["peers"][0]
        p0["sourceAddress"] = node.v6
        p0.pop("nextHopIpv6", None)
        p0["bfd"] = TIMERS.vipd()
        vipd = lab.Vipd(L, node.ns, config, name="vipd-n1")

        def up() -> bool:
            b = vipd.bfd_status(peer)
            return (b["state"] == "Up" and bird.bfd_state(node.v6) == "Up"
                    and bird.neighbor_state(node.v6) == "Established")

        t0 = time.monotonic()
        lab.wait_until(up, 20, 0.05, lambda: f"IPv6 BFD Up and BGP Established "
                       f"({vipd.bfd_status(peer)}, BIRD {bird.bfd_sessions().get(node.v6)}, "
                       f"{bird.neighbor_state(node.v6)})")
        lab.time_nexthop(topo.fabric, lab.VIP6, node.v6, True, t0, 10)
        figures["v6_up"] = time.monotonic() - t0
        b = vipd.bfd_status(peer)
        lab.check(b["txIntervalMs"] == 100 and b["detectionTimeMs"] == 300 and b["ttlDropped"] == 0,
                  f"vipd's IPv6 session: {b}")
        dt, t1 = freeze(vipd, topo.fabric, lab.VIP6, node.v6)
        lab.log(f"IPv6 {TIMERS}: Up after {figures['v6_up']:.2f} s; freeze dropped the /128 "
                f"after {dt:.3f} s (bound {0.3 + MARGIN_S:.2f} s)")
        lab.check(dt <= 0.3 + MARGIN_S, f"IPv6 freeze: the route left after {dt:.3f} s")
        figures["v6_freeze"] = dt
        lab.wait_until(up, BACK_BOUND_S, 0.05, lambda: f"IPv6 back after SIGCONT "
                       f"({vipd.bfd_status(peer)})")
        lab.time_nexthop(topo.fabric, lab.VIP6, node.v6, True, t1, BACK_BOUND_S)
    return figures


def test() -> None:
    f = multihop()
    g = hostile()
    h = ipv6()
    lab.log("summary: " + ", ".join(f"{k} {v:.3f} s" for k, v in {**f, **g, **h}.items()))


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries + lab.BfdCapture.binaries, vipd=True)
