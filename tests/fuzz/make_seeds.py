#!/usr/bin/env python3
"""Writes the hand-made seed files of tests/fuzz/corpus/<target>/ (names starting "seed-").

Seeds are real peer messages (tests/data/captures, BIRD/FRR/GoBGP/ExaBGP), the config and
metadata files of tests/data and config/example.yaml, and hand-built messages for what the
captures lack (every attribute type, 2-octet AS with AS4_PATH, graceful restart, ROUTE-REFRESH,
ADD-PATH capabilities and path identifiers, malformations), and the return path's echoes,
relays and witness messages, intact and malformed. Files that a fuzz run added (named by their SHA-1, kept by `run.sh`'s merge) and
reproducers ("repro-") are not touched. Rerun after changing a seed: python3 tests/fuzz/make_seeds.py
"""
import hashlib
import json
import pathlib
import struct
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CORPUS = HERE / "corpus"


def write(target, name, data):
    if isinstance(data, str):
        data = data.encode()
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / f"seed-{name}").write_bytes(data)


# ---- BGP ----

def msg(mtype, body):
    return b"\xff" * 16 + struct.pack("!HB", 19 + len(body), mtype) + body


def cap(code, value):
    return bytes([code, len(value)]) + value


def open_body(asn, hold, router_id, caps, version=4, raw_params=None):
    params = raw_params if raw_params is not None else b"".join(
        bytes([2, len(c)]) + c for c in caps)
    return struct.pack("!BHHIB", version, asn if asn <= 0xFFFF else 23456, hold, router_id,
                       len(params)) + params


def attr(flags, code, value):
    if flags & 0x10 or len(value) > 255:
        return struct.pack("!BBH", flags | 0x10, code, len(value)) + value
    return struct.pack("!BBB", flags, code, len(value)) + value


def update_body(withdrawn=b"", attrs=b"", nlri=b""):
    return struct.pack("!H", len(withdrawn)) + withdrawn + struct.pack("!H", len(attrs)) + attrs + nlri


def as_path(segments, four=True):
    out = b""
    for seg_type, asns in segments:
        out += bytes([seg_type, len(asns)])
        out += b"".join(struct.pack("!I" if four else "!H", a) for a in asns)
    return out


def v4(prefix_len, *octets):
    return bytes([prefix_len]) + bytes(octets[: (prefix_len + 7) // 8])


V6_VIP = bytes.fromhex("20010db8ffff00000000000000000010")
V6_NH = bytes.fromhex("20010db8000000000000000000000011")
V6_LL = bytes.fromhex("fe800000000000000000000000000011")

mp_caps = [cap(1, struct.pack("!HBB", 1, 0, 1)), cap(1, struct.pack("!HBB", 2, 0, 1))]
gr = cap(64, struct.pack("!H", 0x8000 | 120) + struct.pack("!HBB", 1, 1, 0x80) +
         struct.pack("!HBB", 2, 1, 0))
opens = {
    "open-4octet-rr": open_body(65002, 90, 0xC0000209, mp_caps + [cap(2, b""),
                                                                  cap(65, struct.pack("!I", 65002))]),
    "open-as-trans": open_body(4200000001, 9, 0xC0000209, mp_caps +
                               [cap(65, struct.pack("!I", 4200000001))]),
    "open-2octet-only": open_body(65002, 180, 0xC0000209, []),
    "open-graceful-restart": open_body(65002, 3, 0xC0000209, mp_caps + [gr, cap(65, struct.pack("!I", 65002))]),
    "open-unknown-capability": open_body(65002, 90, 0xC0000209, [cap(73, b"\x04host\x00"), cap(128, b"")]),
    "open-several-caps-one-param": open_body(65002, 90, 0xC0000209, [],
                                             raw_params=bytes([2, 12]) + mp_caps[0] + mp_caps[1]),
    "open-bad-param-type": open_body(65002, 90, 0xC0000209, [], raw_params=b"\x01\x02\x00\x00"),
    "open-hold-1": open_body(65002, 1, 0xC0000209, []),
    "open-version-3": open_body(65002, 90, 0xC0000209, [], version=3),
    "open-truncated-cap": open_body(65002, 90, 0xC0000209, [], raw_params=b"\x02\x04\x41\x04\x00"),
}
# ADD-PATH (RFC 7911): a route reflector sending all paths (send for IPv4, both for IPv6), FRR's
# receive-only default, a bad Send/Receive value (ignored) and a length that is not whole tuples.
add_path_send = cap(69, struct.pack("!HBB", 1, 1, 2) + struct.pack("!HBB", 2, 1, 3))
add_path_opens = {
    "open-add-path-send": open_body(65002, 90, 0xC0000209, mp_caps + [cap(2, b""), cap(65, struct.pack("!I", 65002)),
                                                                    add_path_send]),
    "open-add-path-rr-ibgp": open_body(65001, 90, 0xC0000209, mp_caps + [cap(65, struct.pack("!I", 65001)),
                                                                       add_path_send]),
    "open-add-path-receive-only": open_body(65002, 90, 0xC0000209, mp_caps + [
        cap(65, struct.pack("!I", 65002)), cap(69, struct.pack("!HBB", 1, 1, 1) + struct.pack("!HBB", 2, 1, 1))]),
    "open-add-path-bad-mode": open_body(65002, 90, 0xC0000209, mp_caps + [
        cap(65, struct.pack("!I", 65002)), cap(69, struct.pack("!HBB", 1, 1, 4))]),
    "open-add-path-bad-length": open_body(65002, 90, 0xC0000209, [cap(69, struct.pack("!HB", 1, 1))]),
}
opens.update(add_path_opens)

origin = attr(0x40, 1, b"\x00")
path4 = attr(0x40, 2, as_path([(2, [65002, 4200000001])]))
nh = attr(0x40, 3, bytes([192, 0, 2, 9]))
updates = {
    "update-every-attribute": update_body(
        v4(24, 198, 51, 100),
        origin + path4 + nh + attr(0x80, 4, struct.pack("!I", 50)) + attr(0x40, 5, struct.pack("!I", 100)) +
        attr(0x40, 6, b"") + attr(0xC0, 7, struct.pack("!I", 65002) + bytes([192, 0, 2, 9])) +
        attr(0xC0, 8, struct.pack("!II", 0xFFFF0000, (65002 << 16) | 7)) +
        attr(0x80, 9, bytes([192, 0, 2, 1])) + attr(0x80, 10, bytes([192, 0, 2, 1, 192, 0, 2, 2])) +
        attr(0xC0, 32, struct.pack("!III", 65002, 1, 2)) + attr(0xE0, 99, b"opaque"),
        v4(32, 203, 0, 113, 10) + v4(0) + v4(25, 203, 0, 113, 128)),
    "update-2octet-as4-path": update_body(
        b"", origin + attr(0x40, 2, as_path([(2, [65002, 23456]), (1, [1, 2])], four=False)) + nh +
        attr(0xC0, 17, as_path([(2, [65002, 4200000001])])) +
        attr(0xC0, 18, struct.pack("!I", 4200000001) + bytes([192, 0, 2, 9])),
        v4(32, 203, 0, 113, 10)),
    "update-mp-reach-link-local": update_body(
        b"", origin + path4 + attr(0x90, 14, struct.pack("!HBB", 2, 1, 32) + V6_NH + V6_LL + b"\x00" +
                                   bytes([128]) + V6_VIP)),
    "update-mp-unreach": update_body(
        b"", attr(0x90, 15, struct.pack("!HB", 2, 1) + bytes([128]) + V6_VIP + bytes([64]) + V6_VIP[:8])),
    "update-mp-reach-ipv4": update_body(
        b"", origin + path4 + attr(0x80, 14, struct.pack("!HBB", 1, 1, 4) + bytes([192, 0, 2, 9]) +
                                   b"\x00" + v4(32, 203, 0, 113, 10))),
    "update-eor-ipv6": update_body(b"", attr(0x80, 15, struct.pack("!HB", 2, 1))),
    "update-withdraw-only": update_body(v4(32, 203, 0, 113, 10) + v4(8, 10)),
    "update-bad-med-length": update_body(b"", origin + path4 + nh + attr(0x80, 4, b"\x00\x01\x02"),
                                         v4(32, 203, 0, 113, 10)),
    "update-bad-origin": update_body(b"", attr(0x40, 1, b"\x07") + path4 + nh, v4(32, 203, 0, 113, 10)),
    "update-missing-next-hop": update_body(b"", origin + path4, v4(32, 203, 0, 113, 10)),
    "update-duplicate-attribute": update_body(b"", origin + origin + path4 + nh, v4(32, 203, 0, 113, 10)),
    "update-bad-prefix-length": update_body(b"", origin + path4 + nh, b"\x21\xcb\x00\x71\x0a\x00"),
    "update-attr-overrun": update_body(b"", origin + b"\x40\x02\xff\x02", b""),
    "update-bad-flags": update_body(b"", attr(0x80, 1, b"\x00") + path4 + nh, v4(32, 203, 0, 113, 10)),
    "update-as-set-confed": update_body(
        b"", origin + attr(0x40, 2, as_path([(3, [65010]), (4, [65011, 65012]), (2, [65002])])) + nh,
        v4(32, 203, 0, 113, 10)),
}

# UPDATEs with RFC 7911 path identifiers (meaningful to a decoder with ADD-PATH in both families),
# as a route reflector sends them: ORIGINATOR_ID and CLUSTER_LIST, two paths of one VIP.
def path_id(n):
    return struct.pack("!I", n)


VIP4 = v4(32, 203, 0, 113, 10)
rr_attrs = (origin + attr(0x40, 2, b"") + attr(0x40, 5, struct.pack("!I", 100)) +
            attr(0xC0, 8, struct.pack("!I", (65001 << 16) | 42)) + attr(0x80, 9, bytes([192, 0, 2, 11])) +
            attr(0x80, 10, bytes([192, 0, 2, 1])))
add_path_updates = {
    "update-add-path-ipv4": update_body(b"", rr_attrs + attr(0x40, 3, bytes([198, 51, 100, 11])),
                                        path_id(1) + VIP4 + path_id(2) + VIP4),
    "update-add-path-ipv4-withdrawn": update_body(path_id(1) + VIP4 + path_id(7) + v4(24, 198, 51, 100)),
    "update-add-path-mp-reach": update_body(
        b"", rr_attrs + attr(0x90, 14, struct.pack("!HBB", 2, 1, 32) + V6_NH + V6_LL + b"\x00" +
                             path_id(3) + bytes([128]) + V6_VIP + path_id(4) + bytes([128]) + V6_VIP)),
    "update-add-path-mp-unreach": update_body(
        b"", attr(0x90, 15, struct.pack("!HB", 2, 1) + path_id(3) + bytes([128]) + V6_VIP)),
    "update-add-path-treat-as-withdraw": update_body(
        b"", rr_attrs + attr(0x40, 3, bytes([198, 51, 100, 11])) + attr(0x80, 4, b"\x00\x01\x02"),
        path_id(2) + VIP4),
    "update-add-path-id-cut-off": update_body(b"", rr_attrs + attr(0x40, 3, bytes([198, 51, 100, 11])),
                                              path_id(1) + VIP4 + b"\x00\x00"),
    "update-add-path-id-without-prefix": update_body(path_id(5)),
    "update-add-path-mp-unreach-cut": update_body(b"", attr(0x90, 15, struct.pack("!HB", 2, 1) + path_id(3) + b"\x80")),
}
updates.update(add_path_updates)

notifications = {
    "notification-6-2-text": b"\x06\x02" + bytes([13]) + b"node draining",
    "notification-6-4-empty": b"\x06\x04",
    "notification-6-2-bad-length": b"\x06\x02\x20abc",
    "notification-2-2-data": b"\x02\x02\xfd\xea",
    "notification-1-2-nodata": b"\x01\x02",
}


def read_captures():
    out = []
    for path in sorted((ROOT / "tests" / "data" / "captures").glob("*.hex")):
        for line in path.read_text().splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                out.append((path.stem, bytes.fromhex(line)))
    return out


def bgp_seeds():
    captures = read_captures()
    seen = set()
    for peer, wire in captures:
        digest = hashlib.sha1(wire).hexdigest()[:8]
        if digest in seen:
            continue
        seen.add(digest)
        mtype = wire[18]
        name = {1: "open", 2: "update", 3: "notification", 4: "keepalive", 5: "route-refresh"}[mtype]
        write("bgp_message", f"capture-{peer}-{name}-{digest}", wire)
        if mtype == 1:
            write("bgp_open", f"capture-{peer}-{digest}", wire[19:])
        if mtype == 2:
            write("bgp_update", f"capture-{peer}-{digest}", wire[19:])
    for name, body in opens.items():
        write("bgp_open", name, body)
        write("bgp_message", name, msg(1, body))
    for name, body in updates.items():
        write("bgp_update", name, body)
        write("bgp_message", name, msg(2, body))
    for name, body in notifications.items():
        write("bgp_message", name, msg(3, body))
    write("bgp_message", "keepalive", msg(4, b""))
    write("bgp_message", "route-refresh-ipv6", msg(5, struct.pack("!HBB", 2, 0, 1)))
    write("bgp_message", "route-refresh-bad-length", msg(5, struct.pack("!HBBB", 1, 0, 1, 0)))
    write("bgp_message", "keepalive-with-body", msg(4, b"\x00"))
    write("bgp_message", "type-6", msg(6, b""))
    write("bgp_message", "bad-marker", b"\xff" * 15 + b"\xfe\x00\x13\x04")
    write("bgp_message", "length-over-4096", b"\xff" * 16 + b"\x10\x01\x02" + b"\x00" * 4078)
    write("bgp_message", "length-field-mismatch", b"\xff" * 16 + b"\x00\x20\x04")

    # The framer: byte 0 = pattern length, then the chunk sizes, then the stream.
    for peer in sorted({p for p, _ in captures}):
        stream = b"".join(w for p, w in captures if p == peer)
        write("bgp_framer", f"{peer}-whole", b"\x00" + stream)
        write("bgp_framer", f"{peer}-byte-by-byte", b"\x01\x01" + stream)
        write("bgp_framer", f"{peer}-7-13-200", b"\x03\x07\x0d\xc8" + stream)
    write("bgp_framer", "bad-marker-after-keepalive", b"\x01\x05" + msg(4, b"") + b"\x00" * 19)
    write("bgp_framer", "route-refresh-too-long", b"\x00" + msg(5, b"\x00\x01\x00\x01\x00"))
    write("bgp_framer", "partial-header", b"\x00" + msg(4, b"")[:10])

    # The session FSM: byte 0 high nibble = mode, low nibble = pattern length (see the target).
    hello = msg(1, opens["open-4octet-rr"]) + msg(4, b"")
    established_stream = [
        ("updates", b"".join(msg(2, updates[k]) for k in
                             ["update-every-attribute", "update-mp-reach-link-local", "update-mp-unreach",
                              "update-eor-ipv6", "update-withdraw-only"])),
        ("route-refresh", msg(5, struct.pack("!HBB", 1, 0, 1)) + msg(5, struct.pack("!HBB", 2, 0, 1)) +
         msg(5, struct.pack("!HBB", 1, 1, 1)) + msg(4, b"")),
        ("treat-as-withdraw", msg(2, updates["update-bad-med-length"]) + msg(4, b"")),
        ("malformed-update", msg(2, updates["update-attr-overrun"])),
        ("notification", msg(3, notifications["notification-6-2-text"])),
        ("open-in-established", hello),
        ("bad-header", b"\x00" * 19),
        ("capture-bird2", b"".join(w for p, w in captures if p == "bird2" and w[18] != 1)),
    ]
    for name, stream in established_stream:
        write("bgp_session_fsm", f"established-{name}", b"\x00" + stream)
        write("bgp_session_fsm", f"established-{name}-chunks-1-9", b"\x02\x01\x09" + stream)
    write("bgp_session_fsm", "ibgp-updates", b"\x10" + established_stream[0][1])
    write("bgp_session_fsm", "peer-2octet-updates",
          b"\x40" + msg(2, updates["update-2octet-as4-path"]) + established_stream[0][1])
    write("bgp_session_fsm", "graceful-restart", b"\x80" + established_stream[1][1])
    for name in ["open-4octet-rr", "open-graceful-restart", "open-as-trans", "open-hold-1",
                 "open-unknown-capability", "open-version-3"]:
        write("bgp_session_fsm", f"opensent-{name}", b"\x20" + msg(1, opens[name]) + msg(4, b"") +
              established_stream[1][1])
    write("bgp_session_fsm", "opensent-update-first", b"\x20" + msg(2, updates["update-withdraw-only"]))
    # ADD-PATH: the peer's OPEN from the input advertises send, so what follows carries path
    # identifiers: paths for the watched VIPs, withdrawals, treat-as-withdraw, more than the 64
    # kept, End-of-RIB, then a malformed identifier that resets the session.
    add_path_stream = b"".join(msg(2, add_path_updates[k]) for k in [
        "update-add-path-ipv4", "update-add-path-mp-reach", "update-add-path-ipv4-withdrawn",
        "update-add-path-mp-unreach", "update-add-path-treat-as-withdraw"]) + msg(2, updates["update-eor-ipv6"])
    many_paths = msg(2, update_body(b"", rr_attrs + attr(0x40, 3, bytes([198, 51, 100, 11])),
                                    b"".join(path_id(n) + VIP4 for n in range(70))))
    write("bgp_session_fsm", "opensent-add-path-updates",
          b"\x20" + msg(1, opens["open-add-path-send"]) + msg(4, b"") + add_path_stream + msg(4, b""))
    write("bgp_session_fsm", "opensent-add-path-rr-ibgp",
          b"\x30" + msg(1, opens["open-add-path-rr-ibgp"]) + msg(4, b"") + add_path_stream + many_paths +
          msg(2, add_path_updates["update-add-path-id-cut-off"]))
    write("bgp_session_fsm", "opensent-add-path-receive-only",
          b"\x20" + msg(1, opens["open-add-path-receive-only"]) + msg(4, b"") +
          b"".join(msg(2, updates[k]) for k in ["update-every-attribute", "update-mp-reach-link-local",
                                                 "update-mp-unreach", "update-withdraw-only"]))
    write("bgp_session_fsm", "opensent-notification", b"\x20" + msg(3, notifications["notification-2-2-data"]))


# ---- BFD: op bytes (low 3 bits) and packets, see bfd_packet.cc ----

def bfd(state, my, your, tx=300000, rx=300000, mult=3, poll=False, final=False, diag=0, length=24):
    flags = (state << 6) | (0x20 if poll else 0) | (0x10 if final else 0)
    return bytes([(1 << 5) | diag, flags, mult, length]) + struct.pack("!IIIII", my, your, tx, rx, 0)


def bfd_seeds():
    down, init, up, admin = 1, 2, 3, 0
    P = lambda *a, **k: b"\x00" + bfd(*a, **k)
    write("bfd_packet", "handshake-to-up", P(down, 0x11, 0) + P(up, 0x11, 1) + b"\x01" + b"\x01")
    write("bfd_packet", "init-then-up", P(init, 0x11, 1) + P(up, 0x11, 1) + b"\x01")
    write("bfd_packet", "up-then-detect-expiry", P(down, 0x11, 0) + P(up, 0x11, 1) + b"\x02" + b"\x01")
    write("bfd_packet", "up-then-peer-admin-down",
          P(down, 0x11, 0) + P(up, 0x11, 1) + P(admin, 0x11, 1, diag=7) + b"\x01")
    write("bfd_packet", "poll-and-final",
          P(down, 0x11, 0) + P(up, 0x11, 1) + P(up, 0x11, 1, poll=True, tx=50000, rx=50000) +
          b"\x03\x05\x05" + P(up, 0x11, 1, final=True) + b"\x01")
    write("bfd_packet", "set-intervals-zero", P(down, 0x11, 0) + P(up, 0x11, 1) + b"\x03\x00\x00\x01\x02")
    write("bfd_packet", "admin-down-and-restart",
          P(down, 0x11, 0) + P(up, 0x11, 1) + b"\x04" + b"\x01" * 6 + b"\x05" + P(down, 0x12, 0))
    write("bfd_packet", "huge-intervals", P(down, 0x11, 0, tx=0xFFFFFFFF, rx=0xFFFFFFFF, mult=255) +
          P(up, 0x11, 1, tx=0xFFFFFFFF, rx=0, mult=255) + b"\x01\x02")
    write("bfd_packet", "wrong-discriminator", P(down, 0x11, 0) + P(up, 0x11, 7))
    write("bfd_packet", "long-datagram", b"\x20" + bfd(down, 0x11, 0, length=28) + b"\x00" * 4)
    for name, pkt in [("version-0", b"\x00\xc0\x03\x18" + b"\x00" * 20),
                      ("auth-bit", bfd(up, 1, 1)[:1] + b"\xc4" + bfd(up, 1, 1)[2:]),
                      ("multipoint", bfd(up, 1, 1)[:1] + b"\xc1" + bfd(up, 1, 1)[2:]),
                      ("mult-0", bfd(down, 1, 0, mult=0)), ("my-discr-0", bfd(down, 0, 0)),
                      ("your-discr-0-in-up", bfd(up, 1, 0)), ("length-23", bfd(down, 1, 0, length=23)),
                      ("short", bfd(down, 1, 0)[:20])]:
        write("bfd_packet", name, b"\x00" + pkt)


# ---- the return path's ICMP echoes and relay-port datagrams, see returnpath_*.cc ----

# The Internet checksum of the e2e suite's forger of return-path packets, not a second copy
# (its other builders pick random IP identifiers: seeds must be the same bytes every run).
sys.dont_write_bytecode = True  # no __pycache__ left in tests/e2e
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from hostile_icmp import checksum  # noqa: E402


def echo_data(kind=1, nonce=0x0102030405060708, family=4, port=4790,
              address=bytes([192, 0, 2, 11]) + bytes(12), version=1):
    return b"vipdRP" + bytes([version, kind]) + struct.pack("!QBBH", nonce, family, 0, port) + address


def icmp_echo(icmp_type, data, ident=0x1234, seq=1, fix_checksum=True):
    message = struct.pack("!BBHHH", icmp_type, 0, 0, ident, seq) + data
    if fix_checksum:
        message = message[:2] + struct.pack("!H", checksum(message)) + message[4:]
    return message


def ipv4(payload, src=bytes([198, 51, 100, 1]), dst=bytes([192, 0, 2, 11]), proto=1, options=b""):
    ihl = 5 + len(options) // 4
    return struct.pack("!BBHHHBBH", 0x40 | ihl, 0, 20 + len(options) + len(payload), 0, 0, 64,
                       proto, 0) + src + dst + options + payload


def returnpath_seeds():
    v4reply = icmp_echo(0, echo_data())
    v6relay = bytes.fromhex("20010db8000000000000000000000011")
    vip6 = echo_data(kind=2, family=6, address=v6relay)
    # Byte 0 of an echo input is the fix-up mask (bit 0 total length, bit 1 checksum).
    for name, fixes, packet in [
            ("v4-node-sourced", 0, ipv4(v4reply)),
            ("v4-vip-sourced-v6-relay", 0, ipv4(icmp_echo(0, vip6))),
            ("v4-ip-options", 0, ipv4(v4reply, options=b"\x01\x01\x01\x00")),
            ("v4-longer-data", 0, ipv4(icmp_echo(0, echo_data() + b"pad!"))),
            ("v4-trailing-bytes", 0, ipv4(v4reply) + b"\x00" * 6),
            ("v4-bad-checksum", 0, ipv4(icmp_echo(0, echo_data(), fix_checksum=False))),
            ("v4-fix-everything", 3, ipv4(icmp_echo(0, echo_data(), fix_checksum=False))[:2] +
             b"\x00\x00" + ipv4(icmp_echo(0, echo_data(), fix_checksum=False))[4:]),
            ("v4-request-not-reply", 0, ipv4(icmp_echo(8, echo_data()))),
            ("v4-someone-elses-ping", 0, ipv4(icmp_echo(0, b"abcdefghijklmnopqrstuvwabcdefghi"))),
            ("v4-truncated", 0, ipv4(v4reply)[:40]),
            ("v4-udp", 0, ipv4(v4reply, proto=17)),
            ("v4-kind-3", 2, ipv4(icmp_echo(0, echo_data(kind=3)))),
            ("v4-family-5", 2, ipv4(icmp_echo(0, echo_data(family=5)))),
            ("v4-port-0", 2, ipv4(icmp_echo(0, echo_data(port=0)))),
            ("v4-version-2", 2, ipv4(icmp_echo(0, echo_data(version=2)))),
            ("v6-node-sourced", 0, icmp_echo(129, echo_data(), fix_checksum=False)),
            ("v6-vip-sourced", 0, icmp_echo(129, vip6, fix_checksum=False)),
            ("v6-request-not-reply", 0, icmp_echo(128, vip6, fix_checksum=False)),
            ("v6-short", 0, icmp_echo(129, vip6, fix_checksum=False)[:43]),
            ("empty", 0, b"")]:
        write("returnpath_echo", name, bytes([fixes]) + packet)

    def witness(kind, nonce, tail, version=1):
        return b"vipdRW" + bytes([version, kind]) + struct.pack("!Q", nonce) + tail

    query4 = witness(1, 7, struct.pack("!IB3x", 3000, 4) + bytes([198, 51, 100, 1]) + bytes(12))
    query6 = witness(1, 8, struct.pack("!IB3x", 3000, 6) + v6relay)
    answer = witness(2, 7, struct.pack("!II", 5, 1))
    relay = b"vipdRR" + bytes([1, 0]) + struct.pack("!Q", 0x0102030405060708)
    for name, datagram in [
            ("relay", relay), ("relay-version-2", relay[:6] + b"\x02" + relay[7:]),
            ("relay-nonzero-reserved", relay[:7] + b"\x01" + relay[8:]),
            ("relay-long", relay + b"\x00"), ("relay-short", relay[:15]),
            ("query-v4", query4), ("query-v6", query6),
            ("query-v4-padding", query4[:39] + b"\x01"),
            ("query-family-5", query4[:20] + b"\x05" + query4[21:]),
            ("query-reserved", query4[:21] + b"\x01" + query4[22:]),
            ("query-as-answer-type", query4[:7] + b"\x02" + query4[8:]),
            ("answer", answer), ("answer-as-query-type", answer[:7] + b"\x01" + answer[8:]),
            ("answer-version-0", answer[:6] + b"\x00" + answer[7:]), ("empty", b"")]:
        write("returnpath_relay", name, datagram)


# ---- text inputs ----

def text_seeds():
    for path in sorted((ROOT / "tests" / "data" / "config").glob("*.yaml")):
        write("config", f"data-{path.name}", path.read_bytes())
    write("config", "example.yaml", (ROOT / "config" / "example.yaml").read_bytes())
    for name, text in [("duration-1m30s", "1m30s"), ("duration-0", "0"), ("duration-300ms", "300ms"),
                       ("duration-overflow", "99999999999999999999h"), ("not-yaml", "{[: \x00"),
                       ("anchors", "a: &x [*x]\nb: *x\n"), ("tag", "!!binary aGk=\n"),
                       ("empty", "")]:
        write("config", name, text)
    for path in sorted((ROOT / "tests" / "data" / "bootstrap").glob("*.metadata.*")):
        write("metadata", f"data-{path.name}", path.read_bytes())
    base = json.loads((ROOT / "tests" / "data" / "bootstrap" / "ipv4-only.metadata.json").read_text())
    disabled = dict(base, bootstrap={"enabled": False})
    write("metadata", "bootstrap-disabled.json", json.dumps(disabled))
    write("metadata", "not-a-map", "[1, 2, 3]\n")
    write("metadata", "wrong-kind", "apiVersion: vipd.io/v1alpha1\nkind: Other\n")

    identity = {"protocolVersions": [1], "mode": "daemonset", "routerId": "192.0.2.11",
                "localAsn": 65001, "vips": ["203.0.113.10/32"]}
    for name, request in [
            ("status", {"command": "status"}),
            ("withdraw-wait", {"command": "withdraw", "wait": True, "persist": True,
                               "timeoutMs": 10000, "reason": "node replacement"}),
            ("withdraw-transient", {"command": "withdraw", "wait": True, "persist": False}),
            ("announce", {"command": "announce"}),
            ("handoff-check", {"command": "handoff-check", "identity": identity}),
            ("handoff-yield", {"command": "handoff-yield", "identity": dict(identity, vips=[])}),
            ("unknown-command", {"command": "reboot"})]:
        write("control_request", name, json.dumps(request) + "\n")
    for name, line in [("not-json", "status\n"), ("array", "[]\n"), ("command-number", '{"command":1}\n'),
                       ("deep", "[" * 600 + "]" * 600 + "\n"), ("unicode", '{"command":"st\\u00e4tus"}\n')]:
        write("control_request", name, line)


if __name__ == "__main__":
    bgp_seeds()
    bfd_seeds()
    returnpath_seeds()
    text_seeds()
