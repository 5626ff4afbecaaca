#!/usr/bin/env python3
"""e2e: a 4-octet vipd (AS 4200000001) and a 2-octet-only peer (RFC 6793 section 4.2).

BIRD (AS 65000) runs the protocol with `enable as4 off`: it does not advertise the 4-octet AS
capability, so the session is 2-octet and vipd must send AS_TRANS (23456) as the OPEN's My AS
and in AS_PATH, with its real ASN in the optional transitive AS4_PATH.

How BIRD has to be configured (found by trying, BIRD 2.0.12):
- `neighbor 192.0.2.11 as 4200000001;` with as4 off is refused at parse time ("Neighbor AS
  number out of range (AS4 not available)");
- `neighbor 192.0.2.11 as 23456;` parses, but BIRD still reads the peer's 4-octet AS capability
  and compares the real ASN: it rejects vipd with NOTIFICATION 2/2 "Bad peer AS: 4200000001";
- `neighbor 192.0.2.11 external;` (any ASN but BIRD's own) is what works. vipd's peers[].asn is
  BIRD's 65000 (a 2-octet ASN; vipd's config refuses 23456 as a peer or local ASN anyway).

BIRD does not show the wire attributes: on a 2-octet session it merges AS_PATH and AS4_PATH
(RFC 6793 section 4.2.3) and drops AS4_PATH, so `show route all` has `BGP.as_path: 4200000001`
and no `BGP.as4_path`. That merged path can only come from AS_PATH [23456] + AS4_PATH
[4200000001] (AS_PATH alone would show 23456; a 4-octet AS_PATH read as 2-octet would show
64086 59905). The wire itself is asserted from a tcpdump capture on the fabric bridge: vipd's
OPEN (My AS 23456, AS4 capability 4200000001) and the UPDATE for 203.0.113.10/32 (AS_PATH
[23456] in 2-octet encoding, AS4_PATH [4200000001], NEXT_HOP 192.0.2.11).
"""
import ipaddress
import struct

import lab

LOCAL_ASN = 4200000001
AS_TRANS = 23456
T_OPEN, T_UPDATE = 1, 2
A_NEXT_HOP, A_AS_PATH, A_AS4_PATH = 3, 2, 17


def open_fields(body: bytes) -> tuple[int, list[tuple[int, bytes]]]:
    """(My AS, [(capability code, value)]) of an OPEN body."""
    my_as = struct.unpack("!H", body[1:3])[0]
    opt_len, opts, caps = body[9], body[10:10 + body[9]], []
    off = 0
    while off + 2 <= opt_len:
        ptype, plen = opts[off], opts[off + 1]
        if ptype == 2:  # capabilities
            c, end = off + 2, off + 2 + plen
            while c + 2 <= end:
                caps.append((opts[c], opts[c + 2:c + 2 + opts[c + 1]]))
                c += 2 + opts[c + 1]
        off += 2 + plen
    return my_as, caps


def update_fields(body: bytes) -> tuple[dict[int, bytes], list[str]]:
    """({attribute type: value}, [IPv4 NLRI prefixes]) of an UPDATE body."""
    attrs, nlri = lab.update_attributes(body)
    return dict(attrs), nlri


def as_path(value: bytes, width: int) -> list[list[int]]:
    """AS_PATH / AS4_PATH segments as lists of ASNs (width 2 or 4 octets)."""
    segs, off, fmt = [], 0, "!H" if width == 2 else "!I"
    while off + 2 <= len(value):
        count = value[off + 1]
        segs.append([struct.unpack(fmt, value[off + 2 + i * width:off + 2 + (i + 1) * width])[0]
                     for i in range(count)])
        off += 2 + count * width
    return segs


def test() -> None:
    with lab.Lab("as4-two-octet") as L:
        cap: list = []

        def edit(c: dict, _topo: lab.Topology) -> None:
            c["localAsn"] = LOCAL_ASN

        s = lab.build_single_vipd(
            L, edit, bird_peer_asn="external", bird_options=["enable as4 off;"],
            after_bird=lambda b: cap.append(lab.TcpCapture(L, b.ns, "br0")))
        bird, vipd, node = s.bird, s.vipd, s.node
        lab.wait_established(bird, [node.v4], 30)
        r = lab.wait_until(lambda: bird.route(lab.VIP4), 15, 0.1, f"{lab.VIP4} in BIRD")
        print(r["text"].rstrip(), flush=True)

        # vipd's view.
        p = vipd.peer_status(lab.FABRIC_V4)
        lab.log(f"vipd: state={p['state']} asn={p['asn']} lastError={p['lastError']!r}")
        lab.check(p["state"] == "Established", f"vipd should be Established: {p}")
        lab.check(vipd.status()["localAsn"] == LOCAL_ASN,
                  f"vipd's localAsn: {vipd.status()['localAsn']}")

        # BIRD's view: a 2-octet session (no AS4 capability of its own), the peer's real ASN
        # (from vipd's AS4 capability), and the merged path.
        detail = bird.protocol_all(node.v4)
        local_caps = detail.split("Local capabilities", 1)[1].split("Neighbor capabilities", 1)[0]
        neighbor_caps = detail.split("Neighbor capabilities", 1)[1].split("Session:", 1)[0]
        lab.check("4-octet AS numbers" not in local_caps,
                  f"`enable as4 off` should leave BIRD without the AS4 capability:\n{detail}")
        lab.check("4-octet AS numbers" in neighbor_caps,
                  f"vipd should still advertise the AS4 capability:\n{detail}")
        lab.check("AS4" not in detail.split("Session:", 1)[1].splitlines()[0],
                  f"the session should be 2-octet (no AS4 on BIRD's Session: line):\n{detail}")
        lab.check(f"Neighbor AS:      {LOCAL_ASN}" in detail,
                  f"BIRD should see the neighbour's ASN as {LOCAL_ASN}:\n{detail}")
        lab.check(r["asPath"] == str(LOCAL_ASN),
                  f"BIRD's merged AS path for {lab.VIP4} should be {LOCAL_ASN}: {r['asPath']!r}")
        lab.check("BGP.as4_path" not in r["text"],
                  "BIRD merges AS4_PATH into the path and should not show it separately")
        lab.check(r["nexthops"] == [node.v4], f"next hop {r['nexthops']} != [{node.v4}]")
        lab.check(f"via {node.v4} on br0" in r["text"], f"BIRD should route via {node.v4}")
        lab.check(r["communities"] == lab.COMMUNITIES, f"communities {r['communities']}")
        r6 = lab.wait_until(lambda: bird.route(lab.VIP6), 10, 0.1, f"{lab.VIP6} in BIRD")
        lab.check(r6["asPath"] == str(LOCAL_ASN) and node.v6 in r6["nexthops"],
                  f"{lab.VIP6}: asPath {r6['asPath']!r} nexthops {r6['nexthops']}")

        # The wire: vipd's OPEN and its UPDATE for the IPv4 VIP.
        msgs = lab.wait_until(
            lambda: (lambda m: m if any(t == T_UPDATE and lab.VIP4 in update_fields(b)[1]
                                        for t, b in m) else None)(
                cap[0].bgp_messages(node.v4, lab.FABRIC_V4)),
            5, 0.1, f"vipd's UPDATE for {lab.VIP4} in the capture")
        lab.log(f"captured {len(msgs)} messages from vipd: {[t for t, _ in msgs]}")
        my_as, caps = open_fields(next(b for t, b in msgs if t == T_OPEN))
        as4_cap = [struct.unpack("!I", v)[0] for c, v in caps if c == 65]
        lab.log(f"vipd's OPEN: My AS {my_as}, AS4 capability {as4_cap}")
        lab.check(my_as == AS_TRANS, f"OPEN My AS should be AS_TRANS {AS_TRANS}, got {my_as}")
        lab.check(as4_cap == [LOCAL_ASN], f"AS4 capability should carry {LOCAL_ASN}: {as4_cap}")

        attrs = next(a for a, n in (update_fields(b) for t, b in msgs if t == T_UPDATE)
                     if lab.VIP4 in n)
        path2 = as_path(attrs.get(A_AS_PATH, b""), 2)
        path4 = as_path(attrs.get(A_AS4_PATH, b""), 4)
        nh = str(ipaddress.IPv4Address(attrs[A_NEXT_HOP])) if A_NEXT_HOP in attrs else None
        lab.log(f"vipd's UPDATE for {lab.VIP4}: AS_PATH {path2} AS4_PATH {path4} NEXT_HOP {nh}")
        lab.check(len(attrs.get(A_AS_PATH, b"")) == 4,
                  f"AS_PATH should be one segment with one 2-octet ASN: "
                  f"{attrs.get(A_AS_PATH, b'').hex()}")
        lab.check(path2 == [[AS_TRANS]], f"AS_PATH should be [{AS_TRANS}], got {path2}")
        lab.check(A_AS4_PATH in attrs, "AS4_PATH should be present")
        lab.check(path4 == [[LOCAL_ASN]], f"AS4_PATH should be [{LOCAL_ASN}], got {path4}")
        lab.check(nh == node.v4, f"NEXT_HOP should be {node.v4}, got {nh}")

        lab.wait_never(lambda: bird.neighbor_state(node.v4) != "Established"
                       or vipd.peer_status(lab.FABRIC_V4)["establishedTransitions"] != 1,
                       2, 0.2, "the 2-octet session dropping")


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries + lab.TcpCapture.binaries, vipd=True)
