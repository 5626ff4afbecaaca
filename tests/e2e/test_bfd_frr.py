#!/usr/bin/env python3
"""e2e: BFD interop between vipd and FRR 8.4's bfdd (RFC 5880/5881, single hop).

0. Harness self-check (no vipd, ~13 s): BIRD on the fabric and FRR (zebra, bfdd, bgpd) on a
   node bring a BFD session Up over their eBGP session; freezing the FRR node drops its route
   within the detection time (lab.bfd_selfcheck). A failure here is the harness's, not vipd's.
   Skip it with `python3 tests/e2e/test_bfd_frr.py --no-selfcheck`.
1. One vipd node, FRR on the fabric with bfdd and `neighbor <node> bfd` + a profile. The two
   sides use different timers, so each must apply RFC 5880 6.8.2/6.8.4 itself:
     FRR:  transmit 300 ms, receive 150 ms, multiplier 3
     vipd: minTx 100 ms,    minRx 200 ms,   multiplier 3
   vipd transmits at max(100, 150) = 150 ms and detects after 3 x max(200, 300) = 900 ms;
   FRR transmits at max(300, 200) = 300 ms and detects after 3 x max(150, 100) = 450 ms.
   Asserts FRR's `show bfd peers` has the peer up with vipd's advertised timers, vipd's status
   has the negotiated TX interval and detection time, vipd's packets are RFC 5881 single hop,
   and the VIPs are in FRR's RIB and the fabric kernel.
2. Freeze vipd (SIGSTOP): FRR drops the BGP session and the route within its detection time
   (450 ms) + 200 ms; the figure is printed. SIGCONT: BFD, BGP and the route come back.
3. SIGTERM: vipd sends AdminDown; FRR's session goes down with vipd's diagnostic 7.
"""
import signal
import sys
import time

import lab

FRR_TIMERS = lab.BfdTimers(min_tx_ms=300, min_rx_ms=150, multiplier=3)
VIPD_TIMERS = lab.BfdTimers(min_tx_ms=100, min_rx_ms=200, multiplier=3)
MARGIN_S = 0.200
BACK_BOUND_S = 20


def frr_up(frr: lab.Frr, node: lab.Node) -> bool:
    return (frr.bfd_peer_state(node.v4) == "up"
            and frr.neighbor_state(node.v4) == "Established")


def interop() -> None:
    with lab.Lab("bfd-frr") as L:
        topo = L.fabric_with_nodes(1)
        node, peer = topo.nodes[0], topo.fabric_v4
        cap = lab.BfdCapture(L, topo.fabric, topo.fabric_if)
        frr = lab.Frr(L, topo.fabric, peer, lab.FABRIC_ASN,
                      [lab.Neighbor(node.v4, node.asn, passive=True, name="node1")],
                      bfd=FRR_TIMERS)
        config = lab.vipd_config(L, node, node.asn, peer, lab.FABRIC_ASN, "vipd-n1")
        config["peers"][0]["bfd"] = VIPD_TIMERS.vipd(multihop=False)
        vipd = lab.Vipd(L, node.ns, config, name="vipd-n1")

        def state() -> str:
            try:
                v = vipd.bfd_status(peer)
            except Exception as e:  # noqa: BLE001 - shown in a timeout message
                v = f"<{e!r}>"
            return (f"FRR BFD {frr.bfd_peer(node.v4)}, FRR BGP {frr.neighbor_state(node.v4)}, "
                    f"vipd BFD {v}")

        t0 = time.monotonic()
        lab.wait_until(lambda: frr_up(frr, node), 30, 0.1,
                       lambda: f"FRR: BFD up and BGP Established ({state()})")
        t_up = time.monotonic() - t0
        for prefix, nh in ((lab.VIP4, node.v4), (lab.VIP6, node.v6)):
            r = lab.wait_until(lambda p=prefix: frr.route(p), 15, 0.1, f"{prefix} in FRR's RIB")
            lab.check(nh in r["nexthops"], f"FRR's route {prefix} via {r['nexthops']}, not {nh}")
        lab.time_nexthop(topo.fabric, lab.VIP4, node.v4, True, t0, 15)
        lab.wait_until(lambda: vipd.bfd_status(peer)["state"] == "Up", 5, 0.05,
                       lambda: f"vipd's BFD Up ({state()})")

        fp, vb = frr.bfd_peer(node.v4), vipd.bfd_status(peer)
        lab.log(f"FRR's view: status={fp['status']} local tx={fp['transmit-interval']} "
                f"rx={fp['receive-interval']} mult={fp['detect-multiplier']}; vipd advertises "
                f"tx={fp['remote-transmit-interval']} rx={fp['remote-receive-interval']} "
                f"mult={fp['remote-detect-multiplier']}; discriminators {fp['id']}/"
                f"{fp['remote-id']}")
        lab.log(f"vipd's view: {vb}")
        print(frr.vtysh("show bfd peers"), flush=True)
        lab.check((fp["remote-transmit-interval"], fp["remote-receive-interval"],
                   fp["remote-detect-multiplier"]) ==
                  (VIPD_TIMERS.min_tx_ms, VIPD_TIMERS.min_rx_ms, VIPD_TIMERS.multiplier),
                  f"FRR sees vipd's timers as {fp}, not {VIPD_TIMERS}")
        lab.check(fp["remote-id"] == vb["localDiscriminator"]
                  and fp["id"] == vb["remoteDiscriminator"],
                  f"discriminators do not match: FRR {fp}, vipd {vb}")
        lab.check(vb["state"] == "Up" and vb["remoteState"] == "Up",
                  f"vipd's BFD is not Up/Up: {vb}")
        want_tx, want_det = VIPD_TIMERS.tx_ms(FRR_TIMERS), VIPD_TIMERS.detection_ms(FRR_TIMERS)
        lab.check(vb["txIntervalMs"] == want_tx and vb["detectionTimeMs"] == want_det,
                  f"vipd negotiated TX {vb['txIntervalMs']} ms / detection "
                  f"{vb['detectionTimeMs']} ms; RFC 5880 gives {want_tx} / {want_det}: {vb}")
        pk = cap.from_addr(node.v4)
        lab.check_bfd_single_hop(pk, "vipd")
        lab.check_bfd_single_hop(cap.from_addr(peer), "FRR")
        # Up packets from vipd carry its configured timers (the TX interval it advertises is
        # its desired one, not the negotiated one).
        last = pk[-1]
        lab.check((last["state"], last["minTxMs"], last["minRxMs"], last["multiplier"]) ==
                  ("Up", VIPD_TIMERS.min_tx_ms, VIPD_TIMERS.min_rx_ms, VIPD_TIMERS.multiplier),
                  f"vipd's last packet is not Up with {VIPD_TIMERS}: {last}")
        lab.log(f"up: FRR BFD up and BGP Established {t_up:.2f} s after start")

        # Freeze.
        frr_det = FRR_TIMERS.detection_ms(VIPD_TIMERS)
        bound = frr_det / 1000 + MARGIN_S
        before = vipd.bfd_status(peer)
        t0 = time.monotonic()
        vipd.proc.signal(signal.SIGSTOP)
        try:
            dt = lab.time_nexthop(topo.fabric, lab.VIP4, node.v4, False, t0)
            rib_dt = lab.timed_wait(lambda: frr.route(lab.VIP4) is None, 10, 0.02,
                                    f"{lab.VIP4} to leave FRR's RIB") + dt
            fp = frr.bfd_peer(node.v4) or {}
            bgp = frr.neighbor_state(node.v4)
        finally:
            t0 = time.monotonic()
            vipd.proc.signal(signal.SIGCONT)
        lab.log(f"freeze FRR {FRR_TIMERS} / vipd {VIPD_TIMERS}: fabric (FRR's zebra) dropped "
                f"the route after {dt:.3f} s (bound {bound:.2f} s = FRR's detection "
                f"{frr_det} ms + {MARGIN_S * 1000:.0f} ms); gone from FRR's RIB by "
                f"{rib_dt:.3f} s; FRR BFD {fp.get('status')} diagnostic "
                f"{fp.get('diagnostic')!r}, BGP {bgp}")
        lab.check(dt <= bound, f"freeze: FRR dropped the route after {dt:.3f} s, more than "
                  f"its detection time {frr_det} ms + {MARGIN_S * 1000:.0f} ms")
        lab.check(fp.get("status") != "up" and bgp != "Established",
                  f"freeze: FRR still has BFD {fp.get('status')} / BGP {bgp}")

        # Thaw.
        lab.wait_until(lambda: frr_up(frr, node), BACK_BOUND_S, 0.05,
                       lambda: f"thaw: FRR BFD up and BGP Established ({state()})")
        t_bgp = time.monotonic() - t0
        back = lab.time_nexthop(topo.fabric, lab.VIP4, node.v4, True, t0, BACK_BOUND_S)
        lab.wait_until(lambda: frr.route(lab.VIP6), 10, 0.1, f"{lab.VIP6} back in FRR's RIB")
        after = vipd.bfd_status(peer)
        lab.log(f"thaw: FRR BFD up and BGP Established {t_bgp:.2f} s after SIGCONT, route back "
                f"in the fabric kernel after {back:.2f} s; vipd: {after}")
        lab.check(after["state"] == "Up" and after["downTransitions"] > before["downTransitions"]
                  and after["upTransitions"] > before["upTransitions"],
                  f"thaw: vipd's BFD counters did not record down and up: {before} -> {after}")

        # Clean stop.
        wall0 = time.time()
        vipd.stop()
        lab.wait_until(lambda: frr.bfd_peer_state(node.v4) != "up", 5, 0.05,
                       lambda: f"FRR's BFD session to leave up ({state()})")
        time.sleep(0.2)
        sent = cap.from_addr(node.v4, since=wall0)
        admin = [p for p in sent if p["state"] == "AdminDown"]
        fp = frr.bfd_peer(node.v4) or {}
        lab.log(f"stop: vipd sent {len(admin)} AdminDown packet(s) of {len(sent)} after SIGTERM; "
                f"FRR: status {fp.get('status')}, diagnostic {fp.get('diagnostic')!r}, remote "
                f"diagnostic {fp.get('remote-diagnostic')!r}")
        lab.check(admin and admin[0]["diagnostic"] == 7,
                  f"vipd sent no AdminDown with diagnostic 7 on SIGTERM: {sent[-3:]}")
        lab.check(fp.get("remote-diagnostic") == "administratively down",
                  f"FRR did not record vipd's AdminDown (diagnostic 7): {fp}")


def test() -> None:
    if "--no-selfcheck" not in sys.argv[1:]:
        f = lab.bfd_selfcheck(FRR_TIMERS)
        lab.log(f"harness self-check (BIRD <-> FRR bfdd) passed: {f}")
    interop()


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries + lab.Frr.bfd_binaries + lab.BfdCapture.binaries,
             vipd=True)
