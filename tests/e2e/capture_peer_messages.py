#!/usr/bin/env python3
"""Captures the raw BGP messages real peers send, as decoder test vectors.

For each peer (BIRD 2, FRR 8, GoBGP 3, ExaBGP 4) and each session type (eBGP, iBGP), a lab
namespace pair is built: the peer runs on node 192.0.2.11 and originates 203.0.113.10/32 and
2001:db8:ffff::10/128 (next hop 2001:db8::11, MP_REACH) with community 65000:100 and large
community 65000:1:2; a minimal Python speaker on the fabric (192.0.2.1, AS 65000) accepts its
connection (or, for GoBGP, whose first active connect waits 5-10 s, dials it), answers with an
OPEN + KEEPALIVEs, and records every message the peer sends: OPEN, KEEPALIVEs, UPDATEs
(End-of-RIB included) and, after the peer is stopped with SIGTERM, its NOTIFICATION if any.

Output: tests/data/captures/<peer>.hex, one message per line (hex, marker included), each
preceded by a comment line naming peer, version, session and message.

Usage (root): python3 tests/e2e/capture_peer_messages.py [bird2 frr8 gobgp3 exabgp4] [--out DIR]
Internal: capture_peer_messages.py --speaker JSON_ARGS (runs inside the fabric namespace).
"""
import ipaddress
import json
import os
import select
import socket
import struct
import subprocess
import sys
import time

import lab
from hostile_peer import MARKER, build_open, frame

TYPES = {1: "OPEN", 2: "UPDATE", 3: "NOTIFICATION", 4: "KEEPALIVE", 5: "ROUTE-REFRESH"}
CAPTURE_ASN = lab.FABRIC_ASN
HOLD_TIME = 9


# ------------------------------------------------------------------------------------------
# The minimal speaker (runs inside the fabric namespace); its OPEN and framing are
# hostile_peer's builders (MP ipv4 + ipv6 unicast, route refresh, 4-octet AS).


def update_families(msg: bytes) -> set:
    """Which families an UPDATE carries NLRI for: {"ipv4", "ipv6"} (End-of-RIB excluded)."""
    body = msg[19:]
    fams = set()
    wlen = struct.unpack("!H", body[0:2])[0]
    alen = struct.unpack("!H", body[2 + wlen:4 + wlen])[0]
    attrs = body[4 + wlen:4 + wlen + alen]
    if len(body) > 4 + wlen + alen:
        fams.add("ipv4")
    i = 0
    while i + 3 <= len(attrs):
        flags, code = attrs[i], attrs[i + 1]
        if flags & 0x10:
            ln, hdr = struct.unpack("!H", attrs[i + 2:i + 4])[0], 4
        else:
            ln, hdr = attrs[i + 2], 3
        val = attrs[i + hdr:i + hdr + ln]
        if code == 14 and len(val) >= 5:
            afi = struct.unpack("!H", val[0:2])[0]
            nhlen = val[3]
            nlri_start = 4 + nhlen + 1
            if len(val) > nlri_start:
                fams.add("ipv6" if afi == 2 else f"afi{afi}")
        i += hdr + ln
    return fams


def speaker(args: dict) -> int:
    """Accepts (or makes) one BGP connection and records what the peer sends."""
    out, ready = args["out"], args["ready"]
    deadline = time.monotonic() + args["max_seconds"]
    if args["mode"] == "listen":
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind((args["local"], 179))
        srv.listen(1)
        srv.settimeout(max(1, deadline - time.monotonic()))
        conn, _ = srv.accept()
        srv.close()
    else:
        conn = None
        while conn is None:
            try:
                conn = socket.create_connection((args["peer"], 179), timeout=2,
                                                source_address=(args["local"], 0))
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
    conn.setblocking(False)
    conn.sendall(build_open(args["asn"], args["local"], HOLD_TIME))
    buf = b""
    records = []
    keepalives = 0
    families = set()
    got_open = False
    next_ka = 0.0
    signalled = False
    while time.monotonic() < deadline:
        now = time.monotonic()
        if got_open and now >= next_ka:
            conn.sendall(frame(4, b""))
            next_ka = now + 1.0
        r, _, _ = select.select([conn], [], [], 0.2)
        if r:
            data = conn.recv(65536)
            if not data:
                break
            buf += data
        while len(buf) >= 19:
            length = struct.unpack("!H", buf[16:18])[0]
            if length < 19 or buf[:16] != MARKER:
                raise RuntimeError(f"bad framing from peer: {buf[:32].hex()}")
            if len(buf) < length:
                break
            msg, buf = buf[:length], buf[length:]
            mtype = msg[18]
            if mtype == 1:
                got_open = True
            if mtype == 4:
                keepalives += 1
                if keepalives > 2:
                    continue  # identical; two are enough
            if mtype == 2:
                families |= update_families(msg)
            records.append(msg.hex())
            with open(out, "w") as f:
                json.dump(records, f)
        if not signalled and got_open and keepalives >= 2 and {"ipv4", "ipv6"} <= families:
            open(ready, "w").close()
            signalled = True
    with open(out, "w") as f:
        json.dump(records, f)
    conn.close()
    return 0


# ------------------------------------------------------------------------------------------
# Describing messages for the comment lines


def describe(msg: bytes) -> str:
    mtype = msg[18]
    name = TYPES.get(mtype, f"type {mtype}")
    body = msg[19:]
    if mtype == 1:
        ver, asn, hold = struct.unpack("!BHH", body[:5])
        rid = ipaddress.IPv4Address(body[5:9])
        caps = []
        params = body[10:10 + body[9]]
        i = 0
        while i + 2 <= len(params):
            ptype, plen = params[i], params[i + 1]
            if ptype == 2:
                j, cv = 0, params[i + 2:i + 2 + plen]
                while j + 2 <= len(cv):
                    caps.append(str(cv[j]))
                    j += 2 + cv[j + 1]
            i += 2 + plen
        return f"OPEN as {asn} hold {hold} id {rid} capabilities {','.join(caps)} " \
               f"({body[9]} bytes of optional parameters)"
    if mtype == 2:
        wlen = struct.unpack("!H", body[0:2])[0]
        alen = struct.unpack("!H", body[2 + wlen:4 + wlen])[0]
        fams = update_families(msg)
        if not fams and alen == 0 and wlen == 0:
            return "UPDATE End-of-RIB ipv4 unicast"
        attrs = body[4 + wlen:4 + wlen + alen]
        if not fams and wlen == 0 and len(attrs) >= 6 and attrs[1] == 15 and \
                struct.unpack("!H", attrs[-3:-1])[0] == 2:
            return "UPDATE End-of-RIB ipv6 unicast (empty MP_UNREACH_NLRI)"
        if not fams:
            return "UPDATE without NLRI (withdraw or End-of-RIB)"
        parts = []
        if "ipv4" in fams:
            parts.append("ipv4 NLRI")
        if "ipv6" in fams:
            parts.append("MP_REACH ipv6")
        return f"UPDATE {' + '.join(parts)} with communities and large communities"
    if mtype == 3:
        code, sub = body[0], body[1]
        data = body[2:]
        txt = f" data {data!r}" if data else ""
        return f"NOTIFICATION {code}/{sub}{txt}"
    return name


# ------------------------------------------------------------------------------------------
# Orchestration


def peer_version(kind: str) -> str:
    cmds = {"bird2": ["bird", "--version"], "frr8": [f"{lab.FRR_DIR}/bgpd", "--version"],
            "gobgp3": ["gobgpd", "--version"], "exabgp4": ["exabgp", "--version"]}
    p = subprocess.run(cmds[kind], capture_output=True, text=True, timeout=20)
    text = (p.stdout + p.stderr).strip().splitlines()
    return text[0].strip().replace(" : ", " ") if text else "unknown"


def start_subject(kind: str, L: lab.Lab, node: lab.Node, asn: int):
    nb = lab.Neighbor(lab.FABRIC_V4, CAPTURE_ASN, passive=(kind == "gobgp3"), name="capture",
                      next_hop_v6=node.v6)
    origins = [lab.Origin(lab.VIP4, next_hop=None if kind != "gobgp3" else node.v4),
               lab.Origin(lab.VIP6, next_hop=node.v6)]
    if kind == "bird2":
        return lab.Bird(L, node.ns, node.v4, asn, [nb], interfaces=["eth0"], origins=origins,
                        next_hop_v6=node.v6)
    if kind == "frr8":
        return lab.Frr(L, node.ns, node.v4, asn, [nb], origins=origins, next_hop_v6=node.v6)
    if kind == "gobgp3":
        return lab.Gobgp(L, node.ns, node.v4, asn, [nb], origins=origins, local_address=node.v4)
    if kind == "exabgp4":
        return lab.Exabgp(L, node.ns, node.v4, asn, [nb], local_address=node.v4, origins=origins)
    raise ValueError(kind)


def capture_one(kind: str, session: str) -> list[bytes]:
    with lab.Lab(f"capture-{kind}-{session}") as L:
        topo = L.fabric_with_nodes(1)
        node = topo.nodes[0]
        asn = CAPTURE_ASN if session == "ibgp" else node.asn
        out, ready = L.path("records.json"), L.path("ready")
        args = {"mode": "connect" if kind == "gobgp3" else "listen", "local": lab.FABRIC_V4,
                "peer": node.v4, "asn": CAPTURE_ASN, "out": out, "ready": ready,
                "max_seconds": 60}
        spk = L.start(topo.fabric, "speaker", [sys.executable, os.path.abspath(__file__),
                                               "--speaker", json.dumps(args)])
        time.sleep(0.3)  # let it bind before the peer dials
        subject = start_subject(kind, L, node, asn)
        lab.wait_until(lambda: os.path.exists(ready), 45, 0.2,
                       f"{kind} {session}: OPEN, 2 KEEPALIVEs and ipv4 + ipv6 UPDATEs")
        time.sleep(1.0)  # trailing End-of-RIB markers
        for p in subject.procs[::-1]:
            p.stop()  # SIGTERM: most peers send a Cease NOTIFICATION
        lab.wait_until(lambda: not spk.alive(), 15, 0.2, "capture speaker to finish")
        with open(out) as f:
            return [bytes.fromhex(h) for h in json.load(f)]


def write_hex(kind: str, version: str, sessions: dict, path: str) -> None:
    lines = [
        f"# BGP messages sent by {version} ({kind}) to a minimal speaker, captured by",
        "# tests/e2e/capture_peer_messages.py. One message per line in hex, marker included; a",
        "# comment line names each. The peer is 192.0.2.11 (2001:db8::11), the speaker 192.0.2.1",
        "# AS 65000; routes 203.0.113.10/32 and 2001:db8:ffff::10/128 with community 65000:100 and",
        "# large community 65000:1:2. Trailing NOTIFICATIONs, if any, follow SIGTERM of the peer.",
    ]
    for session, msgs in sessions.items():
        local = CAPTURE_ASN if session == "ibgp" else 65001
        for i, m in enumerate(msgs, 1):
            lines.append("")
            lines.append(f"# {kind} {version} {session} (AS {local} -> AS {CAPTURE_ASN}) "
                         f"message {i}: {describe(m)}")
            lines.append(m.hex())
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def capture_all() -> None:
    argv = [a for a in sys.argv[1:]]
    out_dir = os.path.join(os.path.dirname(lab.E2E_DIR), "data", "captures")
    if "--out" in argv:
        out_dir = argv[argv.index("--out") + 1]
        del argv[argv.index("--out"):argv.index("--out") + 2]
    kinds = argv or ["bird2", "frr8", "gobgp3", "exabgp4"]
    os.makedirs(out_dir, exist_ok=True)
    for kind in kinds:
        version = peer_version(kind)
        sessions = {}
        for session in ("ebgp", "ibgp"):
            msgs = capture_one(kind, session)
            types = [TYPES.get(m[18], str(m[18])) for m in msgs]
            lab.log(f"{kind} {session}: {len(msgs)} messages: {types}")
            sessions[session] = msgs
        path = os.path.join(out_dir, f"{kind}.hex")
        write_hex(kind, version, sessions, path)
        lab.log(f"wrote {path}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--speaker":
        sys.exit(speaker(json.loads(sys.argv[2])))
    lab.main(capture_all, binaries=lab.Bird.binaries + lab.Frr.binaries + lab.Gobgp.binaries
             + lab.Exabgp.binaries)
