#!/usr/bin/env python3
"""A host on the node network that is no peer, forging what vipd's return-path check reads
(issue 28): ICMP echo replies carrying vipd's probe layout (from its own address or spoofed from
a peer's, to a node's address or to the VIP), truncated and garbled ones, and datagrams to the
relay port (forged relays, witness queries and answers, garbage). Frames are written with an
AF_PACKET socket, so any source address can be spoofed and any node's MAC chosen.

Run inside the hostile host's namespace:
  hostile_icmp.py flood --iface eth0 --rate 1000 --seconds 10 --spec SPEC.json
SPEC.json is a list of packet templates (see build()); they are sent round-robin at --rate
packets a second in all, each echo reply with a fresh random nonce. Prints one JSON line:
{"sent": N, "seconds": S}.

The layouts follow daemon/returnpath/packet.h (the test builds them independently,
so a change there that breaks the wire format fails here too).
"""
from __future__ import annotations

import argparse
import ipaddress
import json
import os
import random
import socket
import struct
import sys
import time

PROBE_MAGIC = b"vipdRP"
RELAY_MAGIC = b"vipdRR"
WITNESS_MAGIC = b"vipdRW"
VERSION = 1


def checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def probe_data(kind: int, nonce: int, relay: str, port: int, version: int = VERSION) -> bytes:
    a = ipaddress.ip_address(relay)
    family = 4 if a.version == 4 else 6
    return (PROBE_MAGIC + bytes([version, kind]) + struct.pack("!Q", nonce) +
            bytes([family, 0]) + struct.pack("!H", port) + a.packed.ljust(16, b"\0"))


def ipv4(src: str, dst: str, proto: int, payload: bytes) -> bytes:
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), random.getrandbits(16), 0,
                         64, proto, 0, ipaddress.IPv4Address(src).packed,
                         ipaddress.IPv4Address(dst).packed)
    header = header[:10] + struct.pack("!H", checksum(header)) + header[12:]
    return header + payload


def ipv6(src: str, dst: str, next_header: int, payload: bytes) -> bytes:
    return (struct.pack("!IHBB", 6 << 28, len(payload), next_header, 64) +
            ipaddress.IPv6Address(src).packed + ipaddress.IPv6Address(dst).packed + payload)


def echo_reply_v4(ident: int, data: bytes, bad_checksum: bool = False) -> bytes:
    msg = struct.pack("!BBHHH", 0, 0, 0, ident, 1) + data
    c = checksum(msg) ^ (0x5555 if bad_checksum else 0)
    return msg[:2] + struct.pack("!H", c) + msg[4:]


def echo_reply_v6(src: str, dst: str, ident: int, data: bytes) -> bytes:
    msg = struct.pack("!BBHHH", 129, 0, 0, ident, 1) + data
    pseudo = (ipaddress.IPv6Address(src).packed + ipaddress.IPv6Address(dst).packed +
              struct.pack("!I3xB", len(msg), 58))
    c = checksum(pseudo + msg)
    return msg[:2] + struct.pack("!H", c) + msg[4:]


def udp(src: str, dst: str, sport: int, dport: int, payload: bytes) -> bytes:
    length = 8 + len(payload)
    head = struct.pack("!HHHH", sport, dport, length, 0)
    a, b = ipaddress.ip_address(src), ipaddress.ip_address(dst)
    if a.version == 4:
        pseudo = a.packed + b.packed + struct.pack("!BBH", 0, 17, length)
    else:
        pseudo = a.packed + b.packed + struct.pack("!I3xB", length, 17)
    c = checksum(pseudo + head + payload) or 0xFFFF
    return struct.pack("!HHHH", sport, dport, length, c) + payload


def udp_payload(kind: str, target: str = "192.0.2.1") -> bytes:
    nonce = struct.pack("!Q", random.getrandbits(64))
    if kind == "relay":
        return RELAY_MAGIC + bytes([VERSION, 0]) + nonce
    if kind == "witness_query":
        a = ipaddress.ip_address(target)
        return (WITNESS_MAGIC + bytes([VERSION, 1]) + nonce + struct.pack("!I", 5000) +
                bytes([a.version == 4 and 4 or 6, 0, 0, 0]) + a.packed.ljust(16, b"\0"))
    if kind == "witness_answer":
        return WITNESS_MAGIC + bytes([VERSION, 2]) + nonce + struct.pack("!II", 99, 0)
    if kind == "garbage":
        return os.urandom(random.randint(0, 64))
    raise ValueError(kind)


def build(t: dict) -> bytes:
    """One packet (IP and up) from a template:
    {"type": "echo", "src", "dst", "kind": 1|2, "relay", "port", "version"?, "truncate"?,
     "bad_checksum"?} or {"type": "udp", "src", "dst", "sport", "dport", "payload": relay |
     witness_query | witness_answer | garbage, "target"?}."""
    if t["type"] == "echo":
        data = probe_data(t.get("kind", 2), random.getrandbits(64), t["relay"],
                          t.get("port", 9475), t.get("version", VERSION))
        if "truncate" in t:
            data = data[:t["truncate"]]
        if ipaddress.ip_address(t["src"]).version == 4:
            return ipv4(t["src"], t["dst"], 1,
                        echo_reply_v4(random.getrandbits(16), data, t.get("bad_checksum", False)))
        return ipv6(t["src"], t["dst"], 58,
                    echo_reply_v6(t["src"], t["dst"], random.getrandbits(16), data))
    if t["type"] == "udp":
        payload = udp_payload(t["payload"], t.get("target", "192.0.2.1"))
        seg = udp(t["src"], t["dst"], t.get("sport", 9475), t.get("dport", 9475), payload)
        if ipaddress.ip_address(t["src"]).version == 4:
            return ipv4(t["src"], t["dst"], 17, seg)
        return ipv6(t["src"], t["dst"], 17, seg)
    raise ValueError(t["type"])


def mac_bytes(mac: str) -> bytes:
    return bytes(int(x, 16) for x in mac.split(":"))


def flood(iface: str, spec: list[dict], rate: float, seconds: float) -> dict:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    src_mac = s.getsockname()[4]
    sent = 0
    t0 = time.monotonic()
    end = t0 + seconds
    i = 0
    while True:
        now = time.monotonic()
        if now >= end:
            break
        # Paced in bursts of 10 ms so the rate holds without a syscall per sleep.
        due = int((now - t0) * rate) - sent
        if due <= 0:
            time.sleep(0.002)
            continue
        for _ in range(min(due, 200)):
            t = spec[i % len(spec)]
            i += 1
            packet = build(t)
            ethertype = 0x0800 if ipaddress.ip_address(t["src"]).version == 4 else 0x86DD
            frame = mac_bytes(t["dst_mac"]) + src_mac + struct.pack("!H", ethertype) + packet
            try:
                s.send(frame)
                sent += 1
            except OSError:
                pass
    return {"sent": sent, "seconds": round(time.monotonic() - t0, 3)}


def main() -> int:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("flood")
    f.add_argument("--iface", required=True)
    f.add_argument("--spec", required=True)
    f.add_argument("--rate", type=float, default=1000)
    f.add_argument("--seconds", type=float, default=10)
    a = p.parse_args()
    with open(a.spec) as fh:
        spec = json.load(fh)
    print(json.dumps(flood(a.iface, spec, a.rate, a.seconds)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
