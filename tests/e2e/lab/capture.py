"""Packet capture: what actually went over the wire. TcpCapture (tcpdump writes a pcap, parsed
here: TCP streams, BGP messages, TTLs), BfdCapture (tcpdump's decoded BFD packets) and the
checks built on them (check_bfd_single_hop, first_withdrawal).
"""

from __future__ import annotations

import ipaddress
import re
import struct
from typing import Iterable, Optional

from .checks import check, wait_until
from .netns import Lab, Namespace
from .wire import BGP_UPDATE, update_prefixes


class TcpCapture:
    """tcpdump on ifname in ns from now on (start it before the session comes up). Stopped by
    PID with the lab; streams()/bgp_messages() read the pcap (stdlib only; IPv4 over Ethernet).
    --immediate-mode: without it libpcap hands packets over in blocks (up to ~1 s late), so a
    pcap read while tcpdump runs misses the newest ones."""
    binaries = ["tcpdump"]

    def __init__(self, lab: Lab, ns: Namespace, ifname: str, bpf: str = "tcp port 179",
                 name: str = "tcpdump"):
        self.path = lab.path(f"{name}.pcap")
        self.proc = lab.start(ns, name, ["tcpdump", "-i", ifname, "-n", "-U", "--immediate-mode",
                                         "-s", "0", "-Z", "root", "-w", self.path, bpf])
        self.procs = [self.proc]
        wait_until(lambda: "listening on" in self.proc.log_text(), 10, 0.05,
                   lambda: f"{name} to listen: {self.proc.log_text()!r}")

    def _packets(self) -> Iterable[tuple[float, str, int, str, int, int, bytes]]:
        """(time, src, sport, dst, dport, seq, payload) of each IPv4 TCP packet with a payload;
        time is the capture's wall-clock timestamp (comparable with time.time())."""
        for ts, src, sport, dst, dport, seq, payload, _, _ in self._segments():
            if payload:
                yield ts, src, sport, dst, dport, seq, payload

    def segment_ttls(self, src: str, dst: str) -> list[tuple[int, int, int]]:
        """(IP TTL, TCP flags, payload length) of every TCP segment src sent to dst, in order:
        SYNs and bare ACKs included (GTSM, RFC 5082, covers them all)."""
        return [(ttl, flags, len(payload))
                for _, s, _, d, _, _, payload, ttl, flags in self._segments()
                if (s, d) == (src, dst)]

    def _segments(self) -> Iterable[tuple[float, str, int, str, int, int, bytes, int, int]]:
        """_packets(), but every IPv4 TCP segment, with its IP TTL and TCP flags after the
        payload."""
        with open(self.path, "rb") as f:
            data = f.read()
        if len(data) < 24:
            return
        magic = data[:4]
        endian = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
        frac = 1e-9 if magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d") else 1e-6
        linktype = struct.unpack(endian + "I", data[20:24])[0]
        check(linktype == 1, f"{self.path}: link type {linktype}, expected Ethernet")
        off = 24
        while off + 16 <= len(data):
            sec, sub, incl = struct.unpack(endian + "III", data[off:off + 12])
            frame = data[off + 16:off + 16 + incl]
            off += 16 + incl
            if len(frame) < 34 or frame[12:14] != b"\x08\x00":
                continue
            ip = frame[14:]
            ihl, total = (ip[0] & 0x0F) * 4, struct.unpack("!H", ip[2:4])[0]
            if ip[9] != 6:
                continue
            tcp = ip[ihl:total]
            sport, dport, seq = struct.unpack("!HHI", tcp[:8])
            payload = tcp[(tcp[12] >> 4) * 4:]
            yield (sec + sub * frac, str(ipaddress.IPv4Address(ip[12:16])), sport,
                   str(ipaddress.IPv4Address(ip[16:20])), dport, seq, payload, ip[8], tcp[13])

    def _timed_streams(self, src: str, dst: str) -> list[tuple[bytes, list[tuple[int, float]]]]:
        """Per connection src -> dst, in order: (byte stream, [(end offset, time)] of its
        segments), retransmits dropped (the first capture of a sequence number counts)."""
        conns: dict[tuple, dict[int, tuple[float, bytes]]] = {}
        for ts, s_addr, sport, d_addr, dport, seq, payload in self._packets():
            if (s_addr, d_addr) == (src, dst):
                conns.setdefault((sport, dport), {}).setdefault(seq, (ts, payload))
        out = []
        for segs in conns.values():
            base = min(segs)  # no wrap-around in a short test
            stream, ends = b"", []
            for seq in sorted(segs):
                ts, payload = segs[seq]
                rel = seq - base
                if rel + len(payload) > len(stream):
                    stream += payload[len(stream) - rel:]
                    ends.append((len(stream), ts))
            out.append((stream, ends))
        return out

    def streams(self, src: str, dst: str) -> list[bytes]:
        """The TCP byte streams src -> dst, one per connection in order, retransmits dropped."""
        return [stream for stream, _ in self._timed_streams(src, dst)]

    def timed_bgp_messages(self, src: str, dst: str) -> list[tuple[float, int, bytes]]:
        """(capture time of the segment that completed it, type, body without the 19-byte
        header) of each BGP message src sent to dst."""
        msgs = []
        for stream, ends in self._timed_streams(src, dst):
            off = 0
            while off + 19 <= len(stream) and stream[off:off + 16] == b"\xff" * 16:
                length = int.from_bytes(stream[off + 16:off + 18], "big")
                if length < 19 or off + length > len(stream):
                    break
                ts = next(t for end, t in ends if end >= off + length)
                msgs.append((ts, stream[off + 18], stream[off + 19:off + length]))
                off += length
        return msgs

    def bgp_messages(self, src: str, dst: str) -> list[tuple[int, bytes]]:
        """(type, body without the 19-byte header) of each BGP message src sent to dst."""
        return [(t, body) for _, t, body in self.timed_bgp_messages(src, dst)]

    def stop(self) -> None:
        self.proc.stop()


class BfdCapture:
    """tcpdump -v of BFD control packets (UDP 3784, single hop; bpf= for 4784) on ifname in ns, decoded by
    tcpdump's BFD printer into its log (a text log, not a pcap: TcpCapture's parser is TCP
    only). packets() gives what each packet carried on the wire: TTL, ports, state, diagnostic,
    multiplier, discriminators and intervals."""
    binaries = ["tcpdump"]

    def __init__(self, lab: Lab, ns: Namespace, ifname: str, bpf: str = "udp port 3784",
                 name: str = "tcpdump-bfd"):
        self.proc = lab.start(ns, name, ["tcpdump", "-i", ifname, "-n", "-l", "-v",
                                         "--immediate-mode", "-tt", bpf])
        self.procs = [self.proc]
        wait_until(lambda: "listening on" in self.proc.log_text(), 10, 0.05,
                   lambda: f"{name} to listen: {self.proc.log_text()!r}")

    _HEAD = re.compile(r"^(\d+\.\d+) IP \(.*?\bttl (\d+),.*\)$")
    _ADDRS = re.compile(r"^\s+([0-9.]+)\.(\d+) > ([0-9.]+)\.(\d+): BFDv(\d)")

    def packets(self) -> list[dict]:
        """One dict per captured IPv4 BFD control packet: "time" (wall clock), "ttl", "src",
        "sport", "dst", "dport", "version", "state" ("AdminDown", "Down", "Init", "Up"),
        "diagnostic" (code), "flags" (tcpdump's text), "multiplier", "myDisc", "yourDisc",
        "minTxMs", "minRxMs"."""
        out: list[dict] = []
        cur: Optional[dict] = None
        for line in self.proc.log_text().splitlines():
            m = self._HEAD.match(line)
            if m:
                cur = {"time": float(m.group(1)), "ttl": int(m.group(2))}
                continue
            if cur is None:
                continue
            m = self._ADDRS.match(line)
            if m:
                cur.update(src=m.group(1), sport=int(m.group(2)), dst=m.group(3),
                           dport=int(m.group(4)), version=int(m.group(5)))
                out.append(cur)
                continue
            m = re.search(r"(?:Control|Multihop), State (\w+), Flags: \[([^\]]*)\], Diagnostic: .*\(0x([0-9a-f]+)\)",
                          line)
            if m:
                cur.update(state=m.group(1), flags=m.group(2), diagnostic=int(m.group(3), 16))
            m = re.search(r"Detection Timer Multiplier: (\d+)", line)
            if m:
                cur["multiplier"] = int(m.group(1))
            m = re.search(r"My Discriminator: 0x([0-9a-f]+), Your Discriminator: 0x([0-9a-f]+)", line)
            if m:
                cur.update(myDisc=int(m.group(1), 16), yourDisc=int(m.group(2), 16))
            m = re.search(r"Desired min T(?:x|ransmit) Interval:\s+(\d+) ms", line)
            if m:
                cur["minTxMs"] = int(m.group(1))
            m = re.search(r"Required min R(?:x|eceive) Interval:\s+(\d+) ms", line)
            if m:
                cur["minRxMs"] = int(m.group(1))
        return [p for p in out if "state" in p]

    def from_addr(self, src: str, since: float = 0.0) -> list[dict]:
        """packets() sent by src at or after the wall-clock time since."""
        return [p for p in self.packets() if p["src"] == src and p["time"] >= since]

    def stop(self) -> None:
        self.proc.stop()


def check_bfd_single_hop(packets: list[dict], who: str, source_port: bool = True) -> None:
    """Asserts RFC 5881 single-hop framing on every packet: version 1, TTL 255, destination
    port 3784 and (source_port) a source port in 49152-65535 (RFC 5881 section 4). BIRD 2.0.12
    sends from an ordinary ephemeral port (32768-60999), so its packets are checked with
    source_port=False; a receiver must not insist on the range."""
    check(packets, f"no BFD packets captured from {who}")
    for p in packets:
        ok = p["version"] == 1 and p["ttl"] == 255 and p["dport"] == 3784
        if source_port:
            ok = ok and 49152 <= p["sport"] <= 65535
        check(ok, f"{who} sent a BFD packet that is not RFC 5881 single-hop (version 1, "
              f"TTL 255, UDP {'49152-65535 ' if source_port else ''}-> 3784): {p}")


def first_withdrawal(cap: TcpCapture, src: str, dst: str, prefix: str,
                     after: float) -> Optional[float]:
    """Capture time of the first UPDATE from src to dst withdrawing prefix at or after the
    wall-clock time `after` (None: not captured yet)."""
    want = str(ipaddress.ip_network(prefix))
    for ts, t, body in cap.timed_bgp_messages(src, dst):
        if ts >= after and t == BGP_UPDATE and want in update_prefixes(body)[0]:
            return ts
    return None
