"""BGP on the wire, decoded (stdlib only, no lab state): an UPDATE's attributes, prefixes and
communities. TcpCapture's checks and the GoBGP wrapper use it.
"""

from __future__ import annotations

import ipaddress
import struct


def _community_str(v: int) -> str:
    return f"{v >> 16}:{v & 0xFFFF}"


BGP_UPDATE = 2
GRACEFUL_SHUTDOWN = "65535:0"  # RFC 8326 well-known community


def _nlri_prefixes(raw: bytes, width: int) -> list[str]:
    out, off = [], 0
    while off < len(raw):
        plen = raw[off]
        nbytes = (plen + 7) // 8
        addr = raw[off + 1:off + 1 + nbytes] + b"\0" * (width - nbytes)
        ip = ipaddress.IPv4Address(addr) if width == 4 else ipaddress.IPv6Address(addr)
        out.append(f"{ip}/{plen}")
        off += 1 + nbytes
    return out


def update_attributes(body: bytes) -> tuple[list[tuple[int, bytes]], list[str]]:
    """([(attribute type, value)] in wire order, [IPv4 NLRI prefixes]) of an UPDATE body (no
    ADD-PATH). The one attribute walker every wire-level check here uses."""
    wlen = struct.unpack("!H", body[0:2])[0]
    alen = struct.unpack("!H", body[2 + wlen:4 + wlen])[0]
    raw = body[4 + wlen:4 + wlen + alen]
    attrs, off = [], 0
    while off < len(raw):
        flags, atype = raw[off], raw[off + 1]
        if flags & 0x10:  # extended length
            length, hdr = struct.unpack("!H", raw[off + 2:off + 4])[0], 4
        else:
            length, hdr = raw[off + 2], 3
        attrs.append((atype, raw[off + hdr:off + hdr + length]))
        off += hdr + length
    return attrs, _nlri_prefixes(body[4 + wlen + alen:], 4)


def update_prefixes(body: bytes) -> tuple[list[str], list[str]]:
    """(withdrawn, announced) prefixes of an UPDATE body: IPv4 fields and MP_REACH/MP_UNREACH
    (IPv4/IPv6 unicast, no ADD-PATH)."""
    wlen = struct.unpack("!H", body[0:2])[0]
    withdrawn = _nlri_prefixes(body[2:2 + wlen], 4)
    attrs, announced = update_attributes(body)
    for atype, value in attrs:
        if atype in (14, 15):
            afi = struct.unpack("!H", value[0:2])[0]
            width = 16 if afi == 2 else 4
            if atype == 15:
                withdrawn += _nlri_prefixes(value[3:], width)
            else:
                nh_len = value[3]
                announced += _nlri_prefixes(value[5 + nh_len:], width)  # 1 reserved octet
    return withdrawn, announced


def update_communities(body: bytes) -> list[str]:
    """The COMMUNITIES (type 8) of an UPDATE body as "a:b" strings (65535:0 = GRACEFUL_SHUTDOWN)."""
    out = []
    for atype, value in update_attributes(body)[0]:
        if atype == 8:
            out += [_community_str(struct.unpack("!I", value[i:i + 4])[0])
                    for i in range(0, len(value) - 3, 4)]
    return out
