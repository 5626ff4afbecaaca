"""What every peer wrapper (bird.py, frr.py, gobgp.py, exabgp.py) is configured with: Neighbor,
Origin and BfdTimers.

Every peer wrapper offers the same view for assertions:
  neighbor_state(addr) -> "Established" | other state string
  route(prefix) -> None | {"nexthops": [...], "communities": [...], "largeCommunities": [...],
                           "localPref": int|None, "asPath": str}
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from .base import COMMUNITIES, LARGE_COMMUNITIES


@dataclass
class Neighbor:
    address: str
    asn: Any  # int; BIRD also takes "internal" or "external"
    passive: bool = True
    name: str = ""  # protocol name (BIRD)
    next_hop_v6: Optional[str] = None  # what we send as IPv6 next hop (route originators)
    bird_options: list[str] = field(default_factory=list)  # extra lines in BIRD's protocol block
    # The address families of the session (BIRD: its channels); None: both ipv4 and ipv6. A
    # session per family, as dual-stack fabrics run by default: ["ipv4"] or ["ipv6"].
    families: Optional[list[str]] = None
    # Send this neighbour every path for what it gets (RFC 7911 ADD-PATH send: BIRD `add paths
    # tx`, FRR `addpath-tx-all-paths`, GoBGP add-paths send-max), the other nodes' VIP paths
    # included: vipd's fabric view (issue 28).
    add_paths_tx: bool = False
    # FRR, iBGP: this neighbour is a route-reflector client (its paths are reflected to the
    # other clients with ORIGINATOR_ID and CLUSTER_LIST).
    rr_client: bool = False


@dataclass
class Origin:
    """A route a peer originates (captures, self-tests)."""
    prefix: str
    next_hop: Optional[str] = None  # None = self
    communities: list[str] = field(default_factory=lambda: list(COMMUNITIES))
    large: list[str] = field(default_factory=lambda: list(LARGE_COMMUNITIES))


@dataclass
class BfdTimers:
    """One side's BFD (RFC 5880 6.8.1) timers: bfd.DesiredMinTxInterval, bfd.RequiredMinRxInterval
    and bfd.DetectMult. The same object configures BIRD (`protocol bfd`), FRR (a bfdd profile)
    and vipd (peers[].bfd, via vipd())."""
    min_tx_ms: int = 300
    min_rx_ms: int = 300
    multiplier: int = 3

    def vipd(self, multihop: Optional[bool] = None) -> dict:
        """vipd's peers[].bfd block (every key spelled out, defaults included)."""
        d = {"enabled": True, "minTx": f"{self.min_tx_ms}ms", "minRx": f"{self.min_rx_ms}ms",
             "multiplier": self.multiplier}
        if multihop is not None:
            d["multihop"] = multihop
        return d

    def detection_ms(self, remote: "BfdTimers") -> int:
        """The detection time this side applies (RFC 5880 6.8.4, asynchronous mode): the remote
        multiplier times max(our RequiredMinRxInterval, the remote DesiredMinTxInterval)."""
        return remote.multiplier * max(self.min_rx_ms, remote.min_tx_ms)

    def tx_ms(self, remote: "BfdTimers") -> int:
        """The interval this side transmits at once Up (RFC 5880 6.8.7): max(our
        DesiredMinTxInterval, the remote RequiredMinRxInterval), before jitter."""
        return max(self.min_tx_ms, remote.min_rx_ms)

    def __str__(self) -> str:
        if self.min_tx_ms == self.min_rx_ms:
            return f"{self.min_tx_ms}ms x {self.multiplier}"
        return f"tx {self.min_tx_ms}ms/rx {self.min_rx_ms}ms x {self.multiplier}"
