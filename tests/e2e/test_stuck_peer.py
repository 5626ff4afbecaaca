#!/usr/bin/env python3
"""A session stuck outside Established is never silent (issue 4).

BIRD fabric + one vipd node with a second configured peer, 192.0.2.99, where nothing answers
(hold time 3s). The BIRD session comes up and the VIP is announced there; the dead peer stays in
Connect/Active. Once it has been down for more than 3x its hold time (9s):
  - /readyz answers 503 naming that peer, while it answered 200 before;
  - vipctl status marks the peer notEstablishedTooLong;
  - vipd_peer_not_established_too_long{peer="192.0.2.99"} is 1;
  - vipd logs a warning naming the peer and its last error.
A query string never changes the endpoint (`/metrics?x=1` is /metrics), and `/readyz?verbose`
lists every check as the apiserver's does: `[+]name ok` or `[-]name failed: why`, then the verdict.
"""
import time

import lab

DEAD_PEER = "192.0.2.99"
HOLD_SECONDS = 3


def test() -> None:
    with lab.Lab("stuck-peer") as L:
        def edit(c: dict, _topo: lab.Topology) -> None:
            c["peers"].append({"address": DEAD_PEER, "asn": lab.FABRIC_ASN,
                               "holdTime": f"{HOLD_SECONDS}s", "connectRetryTime": "1s",
                               "nextHopIpv6": c["peers"][0]["nextHopIpv6"]})

        s = lab.build_single_vipd(L, edit=edit)
        t0 = time.monotonic()
        lab.wait_until(lambda: s.bird.route(lab.VIP4), 30, 0.1, "VIP in BIRD")
        code, body = s.vipd.http("/readyz")
        lab.log(f"before the bound: /readyz -> {code} {body.strip()!r}")
        lab.check(code == 200, f"/readyz should be 200 while the dead peer is young: {body!r}")
        dead = s.vipd.peer_status(DEAD_PEER)
        lab.check(dead["state"] != "Established" and not dead["notEstablishedTooLong"],
                  f"dead peer too early: {dead}")
        code, body = s.vipd.http("/readyz?verbose")
        lab.check(code == 200 and f"[+]peer {DEAD_PEER} ok" in body and "[+]bgp ok" in body
                  and f"[+]vip {lab.VIP4}" in body and body.endswith("readyz check passed\n"),
                  f"/readyz?verbose lists every check while ready: {code} {body!r}")
        code, body = s.vipd.http("/metrics?x=1")
        lab.check(code == 200 and "vipd_build_info" in body,
                  f"/metrics?x=1 is /metrics: {code} {body[:200]!r}")

        bound = 3 * HOLD_SECONDS
        code, body = lab.wait_until(
            lambda: (lambda r: r if r[0] == 503 else None)(s.vipd.http("/readyz")),
            bound + 6, 0.2, "/readyz turning 503")
        waited = time.monotonic() - t0
        lab.log(f"/readyz -> {code} after {waited:.1f}s (bound {bound}s): {body.strip()!r}")
        lab.check(DEAD_PEER in body and "not Established" in body,
                  f"/readyz should name the stuck peer: {body!r}")
        code, body = s.vipd.http("/readyz?verbose=1")
        lab.check(code == 503 and f"[-]peer {DEAD_PEER} failed: peer {DEAD_PEER} not Established"
                  in body and "[+]bgp ok" in body and body.endswith("readyz check failed\n"),
                  f"/readyz?verbose=1 marks the stuck peer's check: {code} {body!r}")
        dead = s.vipd.peer_status(DEAD_PEER)
        lab.check(dead["notEstablishedTooLong"], f"status should flag the stuck peer: {dead}")
        metric = s.vipd.metric("vipd_peer_not_established_too_long", peer=DEAD_PEER)
        lab.check(metric == 1, f"vipd_peer_not_established_too_long for {DEAD_PEER}: {metric}")
        warnings = lab.wait_until(
            lambda: s.vipd.log_lines(rf"peer {DEAD_PEER}: not Established for"), 3, 0.2,
            "the stuck-peer warning in vipd's log")
        lab.log(f"vipd log: {warnings[0]}")
        lab.check("warning again in 1m" in warnings[0], f"warning should say when it repeats")
        # The healthy session is unaffected: the VIP is still in BIRD.
        lab.check(s.bird.route(lab.VIP4) is not None, "VIP should still be in BIRD")


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries, vipd=True)
