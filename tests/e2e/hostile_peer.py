#!/usr/bin/env python3
"""A scripted hostile BGP peer for vipd's e2e tests: a raw speaker that breaks the protocol on
purpose and records what vipd does about it.

vipd dials its peers (it does not listen by default), so this peer listens on TCP 179, accepts
vipd's connection, completes or deliberately breaks the OPEN exchange and then runs one named
scenario. Every message vipd sends back is recorded with its time: the BGP header, and for a
NOTIFICATION its code, subcode and data; so is whether and when vipd closed the connection
(FIN or RST).

As a module (what tests/e2e/test_hostile_peer.py uses):
    listener = Listener("192.0.2.2", netns="vt123-fabric")   # binds inside that namespace
    conn = listener.accept(timeout=10)                         # a recorded Conn
    SCENARIOS["open-version-3"](conn, Params(...))             # drives it
    conn.notifications(), conn.closed_at, conn.close_kind, conn.record()
As a CLI (run inside the namespace, e.g. `ip netns exec NS python3 hostile_peer.py ...`):
    hostile_peer.py --listen 192.0.2.2 --asn 65100 --peer-asn 65001 --scenario open-version-3
prints one JSON record per accepted connection (scenario, messages vipd sent, NOTIFICATION,
close). `--list` names the scenarios.

Stdlib only. The builders produce exact bytes; nothing here validates what it sends.
"""
from __future__ import annotations

import argparse
import ctypes
import ipaddress
import json
import os
import select
import socket
import struct
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

MARKER = b"\xff" * 16
OPEN, UPDATE, NOTIFICATION, KEEPALIVE, ROUTE_REFRESH = 1, 2, 3, 4, 5
TYPE_NAMES = {1: "OPEN", 2: "UPDATE", 3: "NOTIFICATION", 4: "KEEPALIVE", 5: "ROUTE-REFRESH"}
MAX_MESSAGE = 4096
_CLONE_NEWNET = 0x40000000

# Path attribute flags and types (RFC 4271 section 4.3)
F_OPTIONAL, F_TRANSITIVE, F_PARTIAL, F_EXTENDED = 0x80, 0x40, 0x20, 0x10
WELL_KNOWN = F_TRANSITIVE
A_ORIGIN, A_AS_PATH, A_NEXT_HOP, A_MP_REACH, A_AS4_PATH = 1, 2, 3, 14, 17


# ------------------------------------------------------------------------------------------
# Builders: exact bytes, including broken ones.


def frame(mtype: int, body: bytes = b"", length: Optional[int] = None,
          marker: bytes = MARKER) -> bytes:
    """A BGP message; length overrides the header's length field (to lie about it)."""
    n = 19 + len(body) if length is None else length
    return marker + struct.pack("!HB", n, mtype) + body


def keepalive() -> bytes:
    return frame(KEEPALIVE)


def capabilities(asn: Optional[int], families=((1, 1), (2, 1)), route_refresh: bool = True) -> bytes:
    """Capability TLVs: multiprotocol per (afi, safi), route refresh, 4-octet AS (asn None: not
    advertised, a 2-octet-only speaker)."""
    caps = b""
    for afi, safi in families:
        caps += bytes([1, 4]) + struct.pack("!HBB", afi, 0, safi)
    if route_refresh:
        caps += bytes([2, 0])
    if asn is not None:
        caps += bytes([65, 4]) + struct.pack("!I", asn)
    return caps


def build_open(asn: int, router_id: str, hold: int, version: int = 4,
               params: Optional[bytes] = None, four_octet: bool = True,
               my_as: Optional[int] = None) -> bytes:
    """An OPEN; params replaces the optional parameters (raw bytes after the length byte)."""
    if params is None:
        caps = capabilities(asn if four_octet else None)
        params = bytes([2, len(caps)]) + caps
    if my_as is None:
        my_as = asn if asn <= 0xFFFF else 23456
    body = struct.pack("!BHH", version, my_as, hold) + ipaddress.IPv4Address(router_id).packed
    body += bytes([len(params)]) + params
    return frame(OPEN, body)


def attr(flags: int, atype: int, value: bytes, length: Optional[int] = None) -> bytes:
    """One path attribute; length overrides the length field (to lie about it)."""
    n = len(value) if length is None else length
    if flags & F_EXTENDED:
        return struct.pack("!BBH", flags, atype, n) + value
    return struct.pack("!BBB", flags, atype, n) + value


def origin(value: int = 0) -> bytes:
    return attr(WELL_KNOWN, A_ORIGIN, bytes([value]))


def as_path(asns: list[int], asn_size: int = 4, seg_type: int = 2) -> bytes:
    fmt = "!I" if asn_size == 4 else "!H"
    value = bytes([seg_type, len(asns)]) + b"".join(struct.pack(fmt, a) for a in asns)
    return attr(WELL_KNOWN, A_AS_PATH, value)


def next_hop(addr: str) -> bytes:
    return attr(WELL_KNOWN, A_NEXT_HOP, ipaddress.IPv4Address(addr).packed)


def nlri(prefixes: list[str]) -> bytes:
    out = b""
    for p in prefixes:
        net = ipaddress.ip_network(p)
        out += bytes([net.prefixlen]) + net.network_address.packed[:(net.prefixlen + 7) // 8]
    return out


def update(withdrawn: bytes = b"", attrs: bytes = b"", nlri_bytes: bytes = b"",
           withdrawn_len: Optional[int] = None, attrs_len: Optional[int] = None) -> bytes:
    """An UPDATE from raw fields; the two length fields can be overridden to lie."""
    wl = len(withdrawn) if withdrawn_len is None else withdrawn_len
    al = len(attrs) if attrs_len is None else attrs_len
    body = struct.pack("!H", wl) + withdrawn + struct.pack("!H", al) + attrs + nlri_bytes
    return frame(UPDATE, body)


def good_attrs(asn: int, nh: str, asn_size: int = 4) -> bytes:
    return origin(0) + as_path([asn], asn_size) + next_hop(nh)


def slash24_block(count: int, first: str = "240.0.0.0") -> bytes:
    """count consecutive /24 NLRI entries (4 bytes each: length 24 + 3 address bytes), built
    256 at a time with slice assignment: 1,000,000 prefixes take well under a second."""
    base = int(ipaddress.IPv4Address(first)) >> 8
    out = bytearray(count * 4)
    out[0::4] = b"\x18" * count
    third = bytes(range(256))
    done = 0
    while done < count:
        n = min(256 - ((base + done) & 0xFF), count - done)
        v = base + done
        start = done * 4
        out[start + 1:start + n * 4:4] = bytes([(v >> 16) & 0xFF]) * n
        out[start + 2:start + n * 4:4] = bytes([(v >> 8) & 0xFF]) * n
        out[start + 3:start + n * 4:4] = third[v & 0xFF:(v & 0xFF) + n]
        done += n
    return bytes(out)


def flood_updates(count: int, attrs: bytes, withdraw: bool = False,
                  first: str = "240.0.0.0") -> list[bytes]:
    """count /24s packed into as few UPDATEs of at most 4096 bytes as fit: announcements (NLRI
    after attrs) or, with withdraw, withdrawn routes (no attributes)."""
    block = slash24_block(count, first)
    room = MAX_MESSAGE - 19 - 4 - (0 if withdraw else len(attrs))
    per = room // 4
    out = []
    for i in range(0, len(block), per * 4):
        chunk = block[i:i + per * 4]
        out.append(update(withdrawn=chunk) if withdraw else update(attrs=attrs, nlri_bytes=chunk))
    return out


# ------------------------------------------------------------------------------------------
# Parsing what vipd sends.


@dataclass
class Received:
    t: float  # time.monotonic()
    mtype: int
    raw: bytes

    @property
    def name(self) -> str:
        return TYPE_NAMES.get(self.mtype, f"type {self.mtype}")

    def notification(self) -> Optional[tuple[int, int, bytes]]:
        if self.mtype != NOTIFICATION or len(self.raw) < 21:
            return None
        return self.raw[19], self.raw[20], self.raw[21:]

    def describe(self) -> str:
        n = self.notification()
        if n:
            return f"NOTIFICATION {n[0]}/{n[1]} data {n[2].hex() or '-'}"
        return f"{self.name} ({len(self.raw)} bytes)"


def notification_text(n: Optional[tuple[int, int, bytes]]) -> str:
    return "none" if n is None else f"{n[0]}/{n[1]} data {n[2].hex() or '-'}"


# ------------------------------------------------------------------------------------------
# Connections


def _setns(fd: int) -> None:
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    if libc.setns(fd, _CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


def tcp_socket_in(netns: Optional[str] = None) -> socket.socket:
    """An IPv4 TCP socket of the network namespace netns (an `ip netns` name), or of ours: the
    calling thread enters netns only to create it; the socket stays there."""
    if not netns:
        return socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(f"/var/run/netns/{netns}", os.O_RDONLY)
    try:
        _setns(target)
        try:
            return socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        finally:
            _setns(own)
    finally:
        os.close(own)
        os.close(target)


class Listener:
    """A TCP listener on addr:port, inside the network namespace netns when given."""

    def __init__(self, addr: str, port: int = 179, netns: Optional[str] = None):
        self.addr, self.port = addr, port
        self.sock = tcp_socket_in(netns)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((addr, port))
        self.sock.listen(4)

    def accept(self, timeout: float) -> "Conn":
        r, _, _ = select.select([self.sock], [], [], timeout)
        if not r:
            raise TimeoutError(f"no connection to {self.addr}:{self.port} within {timeout:.1f}s")
        s, peer = self.sock.accept()
        return Conn(s, peer[0])

    def close(self) -> None:
        self.sock.close()


class Conn:
    """One accepted connection from vipd. Everything vipd sends is parsed into self.received
    (raw messages with their arrival time); closed_at/close_kind record the end ("eof": vipd
    closed with FIN, "reset": RST, "local": we closed). framing_error notes bytes that are not
    BGP at all."""

    def __init__(self, sock: socket.socket, peer: str):
        self.sock = sock
        self.peer = peer
        self.accepted_at = time.monotonic()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.setblocking(False)
        self.buf = b""
        self.received: list[Received] = []
        self.sent: list[tuple[float, str]] = []
        self.closed_at: Optional[float] = None
        self.close_kind: Optional[str] = None
        self.framing_error: Optional[str] = None

    # --- receiving ---

    def poll(self, timeout: float) -> None:
        """Reads whatever arrives within timeout seconds (returns at the first read)."""
        if self.closed_at is not None:
            time.sleep(max(0.0, timeout))
            return
        r, _, _ = select.select([self.sock], [], [], max(0.0, timeout))
        if not r:
            return
        try:
            data = self.sock.recv(65536)
        except BlockingIOError:
            return
        except ConnectionResetError:
            self._closed("reset")
            return
        if not data:
            self._closed("eof")
            return
        self.buf += data
        self._parse()

    def _closed(self, kind: str) -> None:
        if self.closed_at is None:
            self.closed_at, self.close_kind = time.monotonic(), kind

    def _parse(self) -> None:
        while len(self.buf) >= 19:
            if self.buf[:16] != MARKER:
                self.framing_error = f"bad marker: {self.buf[:19].hex()}"
                self.buf = b""
                return
            length = struct.unpack("!H", self.buf[16:18])[0]
            if length < 19 or length > MAX_MESSAGE:
                self.framing_error = f"bad length {length}"
                self.buf = b""
                return
            if len(self.buf) < length:
                return
            msg, self.buf = self.buf[:length], self.buf[length:]
            self.received.append(Received(time.monotonic(), msg[18], msg))

    def wait_for(self, pred: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not pred():
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"timed out after {timeout}s waiting for {what}; "
                                   f"received {[m.describe() for m in self.received]}, "
                                   f"closed {self.close_kind}")
            if self.closed_at is not None and not pred():
                raise AssertionError(f"connection closed ({self.close_kind}) while waiting for "
                                     f"{what}; received {[m.describe() for m in self.received]}")
            self.poll(min(left, 0.1))

    def of_type(self, mtype: int) -> list[Received]:
        return [m for m in self.received if m.mtype == mtype]

    def expect(self, mtype: int, timeout: float = 5, count: int = 1) -> Received:
        self.wait_for(lambda: len(self.of_type(mtype)) >= count, timeout,
                      f"{count} {TYPE_NAMES.get(mtype)} from vipd")
        return self.of_type(mtype)[count - 1]

    def notifications(self) -> list[tuple[int, int, bytes]]:
        return [m.notification() for m in self.of_type(NOTIFICATION)]

    def wait_notification_and_close(self, timeout: float = 5) -> tuple[int, int, bytes]:
        """The first NOTIFICATION vipd sends, after which vipd must close the connection."""
        deadline = time.monotonic() + timeout
        while self.closed_at is None and time.monotonic() < deadline:
            self.poll(min(0.1, deadline - time.monotonic()))
        if not self.of_type(NOTIFICATION):
            raise AssertionError(f"no NOTIFICATION from vipd within {timeout}s; received "
                                 f"{[m.describe() for m in self.received]}, closed "
                                 f"{self.close_kind}")
        if self.closed_at is None:
            raise AssertionError(f"vipd sent {self.of_type(NOTIFICATION)[0].describe()} but did "
                                 f"not close the connection within {timeout}s")
        return self.notifications()[0]

    def wait_closed(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.closed_at is None and time.monotonic() < deadline:
            self.poll(min(0.1, deadline - time.monotonic()))
        if self.closed_at is None:
            raise TimeoutError(f"vipd did not close the connection within {timeout}s")

    def quiet(self, duration: float) -> None:
        """Reads for duration seconds; raises if vipd sent a NOTIFICATION or closed."""
        deadline = time.monotonic() + duration
        while time.monotonic() < deadline:
            self.poll(min(0.1, deadline - time.monotonic()))
            if self.of_type(NOTIFICATION) or self.closed_at is not None:
                raise AssertionError(f"vipd reset the session: {self.record()['notification']}, "
                                     f"closed {self.close_kind}")

    # --- sending ---

    def send(self, data: bytes, what: str = "") -> None:
        self.sent.append((time.monotonic(), what or f"{len(data)} bytes"))
        self.sock.setblocking(True)
        try:
            self.sock.sendall(data)
        finally:
            self.sock.setblocking(False)

    def send_bytewise(self, data: bytes, what: str = "", gap: float = 0.0005) -> None:
        """One byte per send() with TCP_NODELAY: one TCP segment per byte."""
        self.sent.append((time.monotonic(), f"{what or len(data)} one byte per segment"))
        self.sock.setblocking(True)
        try:
            for i in range(len(data)):
                self.sock.send(data[i:i + 1])
                if gap:
                    time.sleep(gap)
        finally:
            self.sock.setblocking(False)

    def send_many(self, messages: list[bytes]) -> float:
        """Sends messages back to back as fast as TCP allows, reading (and recording) what vipd
        sends meanwhile so neither side blocks; returns the seconds it took."""
        t0 = time.monotonic()
        data = memoryview(b"".join(messages))
        while data:
            r, w, _ = select.select([self.sock], [self.sock], [], 1.0)
            if r:
                self.poll(0)
                if self.closed_at is not None:
                    raise AssertionError(f"vipd closed the connection ({self.close_kind}) "
                                         f"during the flood: {self.record()['notification']}")
            if w:
                try:
                    n = self.sock.send(data[:1 << 20])
                except BlockingIOError:
                    continue
                data = data[n:]
        self.sent.append((t0, f"{len(messages)} messages back to back"))
        return time.monotonic() - t0

    def reset(self) -> None:
        """Closes with RST (SO_LINGER on, timeout 0)."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()
        self._closed("local-rst")

    def close_fin(self, drain: float = 2.0) -> None:
        """A plain close: FIN first (shutdown), then read until vipd closes too, so unread data
        never turns our close into an RST."""
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        deadline = time.monotonic() + drain
        while self.closed_at is None and time.monotonic() < deadline:
            self.poll(min(0.1, deadline - time.monotonic()))
        self.sock.close()
        self._closed("local-fin")

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
        self._closed("local")

    # --- the OPEN exchange ---

    def establish(self, p: "Params", open_bytes: Optional[bytes] = None,
                  bytewise: bool = False) -> None:
        """Reads vipd's OPEN, sends ours, reads vipd's KEEPALIVE and answers it: vipd is then
        Established (it enters Established on our KEEPALIVE)."""
        self.expect(OPEN, p.timeout)
        o = open_bytes or p.open()
        if bytewise:
            self.send_bytewise(o, "OPEN")
        else:
            self.send(o, "OPEN")
        self.expect(KEEPALIVE, p.timeout)
        self.send(keepalive(), "KEEPALIVE")

    def record(self) -> dict:
        first = self.notifications()[0] if self.of_type(NOTIFICATION) else None
        return {
            "peer": self.peer,
            "received": [{"t": round(m.t - self.accepted_at, 3), "message": m.describe()}
                         for m in self.received],
            "notification": notification_text(first),
            "closed": self.close_kind,
            "closedAfter": None if self.closed_at is None else
            round(self.closed_at - self.accepted_at, 3),
            "framingError": self.framing_error,
        }


# ------------------------------------------------------------------------------------------
# Scenarios: each drives one accepted connection. Outcomes are read from conn (and, in the
# test, from vipd's status); a scenario raises only when the connection does something it
# cannot continue from.


@dataclass
class Params:
    asn: int  # this peer's ASN
    router_id: str  # this peer's BGP identifier
    peer_asn: int  # vipd's ASN
    next_hop: str  # NEXT_HOP for routes this peer announces
    hold: int = 30
    timeout: float = 5.0
    settle: float = 0.5  # how long "no reaction" is watched for, in wire-only runs
    extra: dict = field(default_factory=dict)

    def open(self, **kw) -> bytes:
        return build_open(self.asn, self.router_id, kw.pop("hold", self.hold), **kw)

    def attrs(self, asn_size: int = 4) -> bytes:
        return good_attrs(self.asn, self.next_hop, asn_size)


def _after_open(conn: Conn, p: Params, message: bytes) -> None:
    conn.expect(OPEN, p.timeout)
    conn.send(message)
    conn.wait_notification_and_close(p.timeout)


def _established_then(conn: Conn, p: Params, message: bytes) -> None:
    conn.establish(p)
    conn.send(message)
    conn.wait_notification_and_close(p.timeout)


def _reset_in(state: str, rst: bool) -> Callable[[Conn, Params], None]:
    def run(conn: Conn, p: Params) -> None:
        if state in ("opensent", "openconfirm", "established"):
            conn.expect(OPEN, p.timeout)
        if state in ("openconfirm", "established"):
            conn.send(p.open(), "OPEN")
            conn.expect(KEEPALIVE, p.timeout)
        if state == "established":
            conn.send(keepalive(), "KEEPALIVE")
            conn.expect(UPDATE, p.timeout)  # vipd announces once Established
        if rst:
            conn.reset()
        else:
            conn.close_fin()
    return run


def _silent(conn: Conn, p: Params) -> None:
    """Accepts, reads vipd's OPEN and never answers: vipd's open hold time must end it."""
    conn.expect(OPEN, p.timeout)
    conn.wait_notification_and_close(p.extra.get("open_hold_wait", 30))


def _bytewise(conn: Conn, p: Params) -> None:
    """OPEN and an UPDATE one byte per TCP segment, then KEEPALIVE + UPDATE + KEEPALIVE in one
    segment; the session must stay up."""
    conn.expect(OPEN, p.timeout)
    conn.send_bytewise(p.open(), "OPEN")
    conn.expect(KEEPALIVE, p.timeout)
    conn.send_bytewise(keepalive(), "KEEPALIVE")
    conn.send_bytewise(update(attrs=p.attrs(), nlri_bytes=nlri(["198.18.0.0/24",
                                                                   "198.18.1.0/24"])), "UPDATE")
    conn.send(keepalive() + update(attrs=p.attrs(), nlri_bytes=nlri(["198.18.2.0/24"]))
              + keepalive(), "KEEPALIVE + UPDATE + KEEPALIVE in one segment")
    conn.quiet(p.settle)


def _as_path_2byte_in_4byte(asn: int) -> bytes:
    # 2-byte ASNs on a session that negotiated 4-octet AS: 1 segment of 3 "ASNs" is 6 bytes,
    # read as 4-byte ASNs that is a segment overrunning the attribute.
    value = bytes([2, 3]) + struct.pack("!HHH", asn, 65101, 65102)
    return attr(WELL_KNOWN, A_AS_PATH, value)


def update_cases(p: Params) -> dict[str, bytes]:
    """UPDATEs with NLRI that RFC 7606 says to treat as withdraw (session stays up)."""
    asn, nh = p.asn, p.next_hop
    n = nlri(["198.18.10.0/24"])
    return {
        # RFC 7606 section 3(d): a missing well-known mandatory attribute.
        "update-missing-origin": update(attrs=as_path([asn]) + next_hop(nh), nlri_bytes=n),
        "update-missing-next-hop": update(attrs=origin(0) + as_path([asn]), nlri_bytes=n),
        # RFC 7606 section 7.1: ORIGIN 3 is undefined.
        "update-bad-origin-value": update(attrs=origin(3) + as_path([asn]) + next_hop(nh),
                                          nlri_bytes=n),
        # RFC 7606 section 7.1: ORIGIN length 2 (attribute length error).
        "update-origin-length-2": update(attrs=attr(WELL_KNOWN, A_ORIGIN, b"\x00\x00")
                                         + as_path([asn]) + next_hop(nh), nlri_bytes=n),
        # RFC 7606 section 7.3: NEXT_HOP length 5.
        "update-next-hop-length-5": update(attrs=origin(0) + as_path([asn])
                                           + attr(WELL_KNOWN, A_NEXT_HOP, b"\xc0\x00\x02\x02\x00"),
                                           nlri_bytes=n),
        # RFC 7606 section 7.2: AS_PATH segment type 7.
        "update-as-path-bad-segment-type": update(attrs=origin(0) + as_path([asn], seg_type=7)
                                                  + next_hop(nh), nlri_bytes=n),
        # RFC 7606 section 7.2 / RFC 6793: 2-byte ASNs on a 4-octet session (segment overrun).
        "update-as-path-2-octet-on-4-octet-session": update(
            attrs=origin(0) + _as_path_2byte_in_4byte(asn) + next_hop(nh), nlri_bytes=n),
        # RFC 7606 section 7.2: a segment with 0 ASNs.
        "update-as-path-empty-segment": update(attrs=origin(0) + attr(WELL_KNOWN, A_AS_PATH,
                                                                      b"\x02\x00")
                                               + next_hop(nh), nlri_bytes=n),
        # RFC 7606 section 4: the last attribute's length runs past the attribute list (the
        # Total Path Attribute Length still locates the NLRI).
        "update-attribute-overruns-list": update(
            attrs=origin(0) + as_path([asn]) + attr(WELL_KNOWN, A_NEXT_HOP, b"\xc0\x00", length=4),
            nlri_bytes=n),
        # RFC 7606 section 3(c): ORIGIN with the optional bit set (flags error).
        "update-origin-optional-flag": update(attrs=attr(F_OPTIONAL | F_TRANSITIVE, A_ORIGIN, b"\x00")
                                              + as_path([asn]) + next_hop(nh), nlri_bytes=n),
    }


def reset_update_cases(p: Params) -> dict[str, tuple[bytes, tuple[int, int, bytes]]]:
    """UPDATEs that must reset the session, with the NOTIFICATION expected (code, subcode, data)."""
    asn, nh = p.asn, p.next_hop
    n = nlri(["198.18.10.0/24"])
    a = p.attrs()
    return {
        # RFC 4271 section 6.3 / RFC 7606 section 5: withdrawn length beyond the message: 3/1.
        "update-withdrawn-length-overrun": (update(withdrawn=b"\x18\xc6\x12\x0a",
                                                   withdrawn_len=200, attrs=a, nlri_bytes=n),
                                            (3, 1, b"")),
        # Total path attribute length beyond the message: 3/1.
        "update-attribute-length-overrun": (update(attrs=a, attrs_len=400, nlri_bytes=n),
                                            (3, 1, b"")),
        # RFC 7606 section 5.3: NLRI prefix length 33: session reset, 3/10.
        "update-nlri-prefix-length-33": (update(attrs=a, nlri_bytes=b"\x21\xc6\x12\x0a\x00\x00"),
                                         (3, 10, b"")),
        # NLRI whose last prefix needs more bytes than remain: 3/10.
        "update-nlri-truncated-prefix": (update(attrs=a, nlri_bytes=b"\x18\xc6\x12"),
                                         (3, 10, b"")),
        # Withdrawn prefix length 40: 3/10.
        "update-withdrawn-prefix-length-40": (update(withdrawn=b"\x28\xc6\x12\x0a\x00\x00"),
                                              (3, 10, b"")),
        # RFC 4271 section 6.3: an unrecognized well-known attribute (type 99, no optional
        # bit): 3/2 with the attribute as data.
        "update-unrecognized-well-known": (update(attrs=a + attr(WELL_KNOWN, 99, b"\x01\x02"),
                                                  nlri_bytes=n),
                                           (3, 2, attr(WELL_KNOWN, 99, b"\x01\x02"))),
        # RFC 7606 section 7.11: malformed MP_REACH_NLRI (next hop length 7 for IPv6): 3/1.
        "update-mp-reach-bad-next-hop-length": (update(attrs=origin(0) + as_path([asn]) + attr(
            F_OPTIONAL, A_MP_REACH, struct.pack("!HBB", 2, 1, 7) + b"\x00" * 7 + b"\x00"
            + b"\x40\x20\x01\x0d\xb8\x00\x00\x00\x00")), (3, 1, b"")),
    }


def header_cases() -> dict[str, tuple[bytes, tuple[int, int, bytes]]]:
    """Broken headers, with the NOTIFICATION RFC 4271 section 6.1 requires."""
    return {
        "header-bad-marker": (frame(KEEPALIVE, marker=b"\xff" * 15 + b"\xfe"), (1, 1, b"")),
        "header-length-18": (frame(KEEPALIVE, length=18), (1, 2, struct.pack("!H", 18))),
        "header-length-4097": (frame(UPDATE, b"\x00" * 4078, length=4097),
                               (1, 2, struct.pack("!H", 4097))),
        "header-keepalive-length-20": (frame(KEEPALIVE, b"\x00"), (1, 2, struct.pack("!H", 20))),
        "header-type-6": (frame(6), (1, 3, b"\x06")),
        "header-type-0": (frame(0), (1, 3, b"\x00")),
    }


def open_cases(p: Params) -> dict[str, tuple[bytes, tuple[int, int, bytes]]]:
    """Broken OPENs, with the NOTIFICATION RFC 4271 section 6.2 (and RFC 5492) requires."""
    unknown_param = bytes([1, 2, 0xAB, 0xCD])  # type 1 (deprecated authentication)
    # A last capability (code 70) that claims 9 bytes where its parameter has 2 left.
    caps = capabilities(p.asn) + bytes([70, 9, 1, 2])
    truncated = bytes([2, len(caps)]) + caps
    return {
        # Data: the largest version vipd supports, 2 bytes (RFC 4271 section 6.2).
        "open-version-3": (p.open(version=3), (2, 1, b"\x00\x04")),
        "open-bad-peer-as": (build_open(p.asn + 1, p.router_id, p.hold),
                             (2, 2, struct.pack("!H", p.asn + 1))),
        "open-bgp-id-0": (build_open(p.asn, "0.0.0.0", p.hold), (2, 3, b"")),
        "open-hold-time-1": (p.open(hold=1), (2, 6, b"")),
        "open-hold-time-2": (p.open(hold=2), (2, 6, b"")),
        "open-unsupported-optional-parameter": (p.open(params=unknown_param), (2, 4, b"")),
        # RFC 4271 section 6.2: a recognized but malformed optional parameter is 2/0.
        "open-truncated-capabilities": (p.open(params=truncated), (2, 0, b"")),
        # Optional parameters length says 40 but 30 bytes follow: 2/0.
        "open-parameters-length-mismatch": (
            frame(OPEN, p.open()[19:28] + bytes([40]) + p.open()[29:]), (2, 0, b"")),
        # An OPEN of 28 bytes (one short of the minimum): 1/2 with the length.
        "open-too-short": (frame(OPEN, p.open()[19:28]), (1, 2, struct.pack("!H", 28))),
    }


def _expecting(message: bytes, when: str) -> Callable[[Conn, Params], None]:
    if when == "opensent":
        return lambda conn, p: _after_open(conn, p, message)
    return lambda conn, p: _established_then(conn, p, message)


def _quiet_after(message: bytes) -> Callable[[Conn, Params], None]:
    def run(conn: Conn, p: Params) -> None:
        conn.establish(p)
        conn.send(message)
        conn.quiet(p.settle)
    return run


def scenarios(p: Params) -> dict[str, Callable[[Conn, Params], None]]:
    """Every named scenario for these parameters."""
    s: dict[str, Callable[[Conn, Params], None]] = {}
    for name, (msg, _) in header_cases().items():
        s[name] = _expecting(msg, "established")
    for name, (msg, _) in open_cases(p).items():
        s[name] = _expecting(msg, "opensent")
    for name, (msg, _) in reset_update_cases(p).items():
        s[name] = _expecting(msg, "established")
    for name, msg in update_cases(p).items():
        s[name] = _quiet_after(msg)
    for state in ("connect", "opensent", "openconfirm", "established"):
        s[f"rst-{state}"] = _reset_in(state, True)
        s[f"fin-{state}"] = _reset_in(state, False)
    s["never-open"] = _silent
    s["bytewise"] = _bytewise
    return s


def expected_notification(p: Params, name: str) -> Optional[tuple[int, int, Optional[bytes]]]:
    """The NOTIFICATION a scenario must draw (data None: any), or None: no reset at all."""
    for table in (header_cases(), open_cases(p), reset_update_cases(p)):
        if name in table:
            return table[name][1]
    if name == "never-open":
        return (4, 0, b"")
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--listen", default="192.0.2.2")
    ap.add_argument("--port", type=int, default=179)
    ap.add_argument("--asn", type=int, default=65100)
    ap.add_argument("--router-id", default=None)
    ap.add_argument("--peer-asn", type=int, default=65001)
    ap.add_argument("--next-hop", default=None)
    ap.add_argument("--hold", type=int, default=30)
    ap.add_argument("--scenario", action="append", default=[])
    ap.add_argument("--accept-timeout", type=float, default=40)
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    p = Params(a.asn, a.router_id or a.listen, a.peer_asn, a.next_hop or a.listen, hold=a.hold)
    table = scenarios(p)
    if a.list:
        for name in table:
            exp = expected_notification(p, name)
            print(f"{name}: expects "
                  f"{'no reset' if exp is None else notification_text(exp) if exp[2] is not None else f'{exp[0]}/{exp[1]}'}")
        return 0
    listener = Listener(a.listen, a.port)
    rc = 0
    for name in a.scenario:
        conn = listener.accept(a.accept_timeout)
        error = None
        try:
            table[name](conn, p)
        except (AssertionError, TimeoutError, OSError) as e:
            error, rc = str(e), 1
        finally:
            if conn.closed_at is None:
                conn.close()
        rec = conn.record()
        rec.update({"scenario": name, "error": error})
        print(json.dumps(rec), flush=True)
    listener.close()
    return rc


if __name__ == "__main__":
    sys.exit(main())
