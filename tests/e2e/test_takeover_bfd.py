#!/usr/bin/env python3
"""e2e: the day-0 -> day-2 takeover with BFD on. A BIRD fabric (AS 65000, graceful restart on,
BFD 300ms x 3, ECMP into its kernel) and two nodes, every vipd with BFD 300ms x 3 to it: node 2
runs a standalone vipd (the rest of the control plane), node 1 a static-pod-mode vipd, then a
daemonset-mode vipd on the same node (same handoff and state directories) that takes over.

The takeover runs twice, against the two ways BIRD 2.0.12 can tie BGP to BFD:
- `bfd graceful`: BIRD treats BFD going Down as a graceful restart of the BGP session (it keeps
  the path as stale and waits for the restarted speaker's End-of-RIB). Everything below is
  asserted, the no-drop rule included.
- `bfd on` (lab.Bird(bfd=)'s default): BIRD stops the BGP session and flushes the path when BFD
  goes from Up to Down, even when the Down is the peer's AdminDown (RFC 5882 section 3.2 says a
  received AdminDown must not be taken for a failure). No speaker can hand a BFD session over
  without such a Down, so against this BIRD setting the node's path is briefly gone (the other
  nodes carry the traffic): the gap is measured and printed, not asserted; the rest is.
vipd's yield closes its BGP sessions without a NOTIFICATION (graceful restart), then says
goodbye with BFD AdminDown and frees the BFD ports for the daemonset instance.

Asserted, and why:
1. Before: the static-pod instance speaks and its BFD session is Up in BIRD's view and in its
   own (state and remote state), so the takeover starts from a BFD-protected session.
2. No drop: from before the daemonset instance starts until past the restart time (3 s), the
   fabric kernel route to VIP4 is polled every 10 ms, `ip monitor route` records every change
   the kernel made to it, and BIRD's RIB is polled every 10 ms for the path from node 1. Node
   1's next hop never leaves the kernel route and BIRD's path from node 1 never disappears: the
   longest gap any of them saw must be 0. A BFD Down taken for a failure, or a BIRD that stops
   BGP on it, would flush the path that graceful restart keeps; this is what the test is for.
3. The takeover: the daemonset instance becomes active and the static-pod instance standby
   (roles in `vipctl status --json`); the daemonset instance reopened as a graceful restart and
   opened its BGP session on BFD Up (its log), so its End-of-RIB carries the VIPs.
4. The yield said goodbye the BFD way: node 1 closed its BGP connection first (the first FIN
   is node 1's), then sent AdminDown with diagnostic 7 (Administratively Down, RFC 5880 4.1)
   within 200 ms; BIRD's log for node 1 has no "expired" (a detection-time expiry would be a
   failure; "changed state from Up to Down" on the AdminDown is expected). The static-pod
   instance sent no NOTIFICATION, its BFD is stopped (it closed UDP 3784 for the daemonset
   instance), and its status says the peer kept the path (graceful restart).
5. After: BFD is Up again in BIRD's view and in the daemonset instance's status (a new session:
   a new discriminator, Up once, never down), BIRD's session with node 1 is Established, and
   node 2's BFD session never went down in either view.

The figures printed per BIRD mode: daemonset start to active (the takeover), to BFD Up in its
status, to BGP Established (its status and BIRD's), first AdminDown to first FIN, and the
longest gap (must be 0). Both modes run even when the first fails; the test fails if either did.
"""
import re
import time

import lab
import test_takeover

TIMERS = lab.BfdTimers(300, 300, 3)
RESTART_TIME_S = 3  # handoff.restartTime in test_takeover.node1_configs
POLL_S = lab.FabricPoller.interval  # 10 ms
# (BIRD's BGP option on top of lab.Bird(bfd=)'s `bfd on;`, what it means)
# and whether the no-drop rule is asserted (see the docstring).
BIRD_BFD_MODES = [
    ("bfd graceful;", "BFD Down starts a graceful restart in BIRD", True),
    ("", "BFD Down stops the BGP session in BIRD (`bfd on`)", False),
]
# TCP FIN or RST on a BGP connection (tcpdump's text, one line per packet).
FIN_BPF = "tcp port 179 and (tcp[tcpflags] & (tcp-fin|tcp-rst) != 0)"


class BirdPathPoller(lab.FabricPoller):
    """FabricPoller's bookkeeping (gaps, summary) over BIRD's RIB instead of the kernel: polls
    `show route for VIP4 all` every 10 ms and records whether BIRD holds a path learnt from the
    neighbour at addr (stale or not). A birdc error counts as missing and is kept in the
    sample, so a broken poll fails loudly instead of passing quietly."""

    def __init__(self, bird: lab.Bird, addr: str):
        self.bird, self.protocol = bird, bird.neighbor(addr).name
        super().__init__(bird.ns, self.protocol)

    def _run(self) -> None:
        while not self._stop.is_set():
            t = time.monotonic()
            try:
                protocols = [p["protocol"] for p in self.bird.paths(lab.VIP4)]
            except Exception as e:  # noqa: BLE001 - recorded as a missing sample
                protocols = [f"<birdc failed: {e!r}>"]
            self.samples.append((t, self.protocol in protocols, protocols))
            time.sleep(max(0.0, POLL_S - (time.monotonic() - t)))


class FinCapture:
    """tcpdump (text, one line per packet) of every TCP FIN or RST on port 179 in ns: when
    each BGP connection was closed, and by which side."""

    def __init__(self, L: lab.Lab, ns: lab.Namespace, ifname: str):
        self.proc = L.start(ns, "tcpdump-fin", ["tcpdump", "-i", ifname, "-n", "-l",
                                                "--immediate-mode", "-tt", FIN_BPF])
        lab.wait_until(lambda: "listening on" in self.proc.log_text(), 10, 0.05,
                       lambda: f"tcpdump-fin to listen: {self.proc.log_text()!r}")

    _LINE = re.compile(r"^(\d+\.\d+) IP ([0-9.]+)\.\d+ > ([0-9.]+)\.\d+: Flags \[([^\]]*)\]")

    def closes(self, addr: str, since: float) -> list[tuple[float, str, str]]:
        """(wall-clock time, sender, tcpdump's flags text) of each FIN/RST to or from addr at
        or after since, in capture order."""
        out = []
        for line in self.proc.log_text().splitlines():
            m = self._LINE.match(line)
            if m and addr in (m.group(2), m.group(3)) and float(m.group(1)) >= since:
                out.append((float(m.group(1)), m.group(2), m.group(4)))
        return out


def with_bfd(config: dict) -> dict:
    """config with BFD (TIMERS) on its one peer; the peers list is copied, not shared."""
    return dict(config, peers=[dict(config["peers"][0], bfd=TIMERS.vipd())])


def bfd_up(bird: lab.Bird, v: lab.Vipd, node: lab.Node, peer: str) -> bool:
    b = v.bfd_status(peer)
    return bird.bfd_state(node.v4) == "Up" and b["state"] == "Up" and b["remoteState"] == "Up"


def describe(bird: lab.Bird, v: lab.Vipd, node: lab.Node, peer: str) -> str:
    try:
        mine = v.bfd_status(peer)
    except Exception as e:  # noqa: BLE001 - shown in a timeout message
        mine = f"<{e!r}>"
    return (f"{v.name}: BIRD BFD {bird.bfd_sessions().get(node.v4)}, BIRD BGP "
            f"{bird.neighbor_state(node.v4)}, vipd BFD {mine}")


def takeover_with_bfd(bird_option: str, what: str, gapless: bool) -> dict:
    """One lab, one takeover against BIRD with bird_option; returns the figures (seconds)."""
    mode = bird_option.rstrip(";") or "bfd on"
    with lab.Lab("takeover-bfd") as L:
        topo = L.fabric_with_nodes(2)
        n1, n2 = topo.nodes
        peer = topo.fabric_v4
        options = ["graceful restart on;"] + ([bird_option] if bird_option else [])
        bird = lab.Bird(L, topo.fabric, topo.fabric_v4, lab.FABRIC_ASN,
                        [lab.Neighbor(n1.v4, n1.asn, name="node1", bird_options=options),
                         lab.Neighbor(n2.v4, n2.asn, name="node2", bird_options=options)],
                        interfaces=[topo.fabric_if], bfd=TIMERS)
        bfd_cap = lab.BfdCapture(L, topo.fabric, topo.fabric_if)
        fin_cap = FinCapture(L, topo.fabric, topo.fabric_if)
        other = lab.Vipd(L, n2.ns, with_bfd(lab.vipd_config(L, n2, n2.asn, lab.FABRIC_V4,
                                                            lab.FABRIC_ASN, "vipd-n2")),
                         name="vipd-n2")
        static_cfg, ds_cfg = (with_bfd(c) for c in test_takeover.node1_configs(L, n1))
        static = lab.Vipd(L, n1.ns, static_cfg, name="static-pod")
        wall_start = time.time()
        lab.log(f"[{mode}] {what}")

        # 1. The static-pod instance speaks, BFD Up in both views.
        want = sorted([n1.v4, n2.v4])
        lab.wait_until(lambda: topo.fabric.kernel_nexthops(lab.VIP4) == want, 30, 0.05,
                       f"fabric ECMP route {lab.VIP4} via {want}")
        for v, n in ((static, n1), (other, n2)):
            lab.wait_until(lambda v=v, n=n: bfd_up(bird, v, n, peer), 15, 0.05,
                           lambda v=v, n=n: f"BFD Up in both views ({describe(bird, v, n, peer)})")
        lab.check(static.status()["role"] == "active", "the static-pod instance speaks at first")
        before = static.bfd_status(peer)

        # 2-3. The daemonset instance takes over while the fabric is watched.
        monitor = test_takeover.RouteMonitor(L, topo.fabric, n1.v4, "route-monitor")
        kernel = lab.FabricPoller(topo.fabric, n1.v4)
        rib = BirdPathPoller(bird, n1.v4)
        time.sleep(0.3)
        lab.check(kernel.samples and rib.samples
                  and all(s[1] for s in kernel.samples + rib.samples),
                  f"node 1's path should be in the fabric before the takeover: "
                  f"{kernel.samples[-1:]} {rib.samples[-1:]}")
        wall0, t0 = time.time(), time.monotonic()
        ds = test_takeover.start_ds(L, n1, ds_cfg, "daemonset")
        try:
            test_takeover.wait_role(ds, "active")
            t_active = time.monotonic()
            test_takeover.wait_role(static, "standby", 5)
            lab.wait_until(lambda: (lambda b: b["state"] == "Up" and b["remoteState"] == "Up")(
                ds.bfd_status(peer)), 15, 0.01,
                lambda: f"the daemonset instance's BFD Up ({describe(bird, ds, n1, peer)})")
            t_bfd = time.monotonic()
            lab.wait_until(lambda: ds.peer_status(peer)["state"] == "Established", 15, 0.01,
                           lambda: f"the daemonset instance's session Established "
                           f"({describe(bird, ds, n1, peer)})")
            t_est = time.monotonic()
            lab.wait_until(lambda: bird.neighbor_state(n1.v4) == "Established", 15, 0.02,
                           lambda: f"BIRD's session with node 1 Established again "
                           f"({describe(bird, ds, n1, peer)})")
            t_bird_est = time.monotonic()
            # Past BIRD's End-of-RIB handling and past the restart time: a late flush of the
            # stale path would show as a gap here.
            time.sleep(max(1.5, t0 + RESTART_TIME_S + 0.5 - time.monotonic()))
        finally:
            rib.stop()
            kernel.stop()
            monitor.stop()

        kernel_gaps = [g for _, g in kernel.gaps()]
        rib_gaps = [g for _, g in rib.gaps()]
        event_gaps = monitor.gaps()
        longest = max(kernel_gaps + rib_gaps + event_gaps, default=0.0)

        # What went over the wire, and what each side made of it.
        sent = bfd_cap.from_addr(n1.v4, since=wall0)
        admin = [p for p in sent if p["state"] == "AdminDown"]
        closes = fin_cap.closes(n1.v4, since=wall0)
        events = [(round(t - wall0, 3), e) for t, e in bird.bfd_events(n1.v4) if t >= wall0]
        sh, dh = static.status()["handoff"], ds.status()["handoff"]
        static_peer = static.peer_status(peer)
        admin_to_fin = closes[0][0] - admin[0]["time"] if admin and closes else None
        figures = {"active": t_active - t0, "bfdUp": t_bfd - t0, "established": t_est - t0,
                   "birdEstablished": t_bird_est - t0, "longestGap": longest}

        lab.log(f"[{mode}] kernel route events during the takeover: {monitor.events()}")
        lab.log(f"[{mode}] kernel poll {kernel.summary()}; BIRD RIB poll {rib.summary()}")
        lab.log(f"[{mode}] node 1's BFD packets (s after the daemonset start, state, diagnostic, "
                f"My Discriminator): {[(round(p['time'] - wall0, 3), p['state'], p['diagnostic'], p['myDisc']) for p in sent]}")
        lab.log(f"[{mode}] FIN/RST on node 1's BGP connections (s, sender, flags): "
                f"{[(round(t - wall0, 3), src, f) for t, src, f in closes]}")
        lab.log(f"[{mode}] BIRD's BFD events for node 1 (s after the daemonset start): {events}")
        lab.log(f"[{mode}] static-pod instance: yielded peers {sh['lastYieldPeers']}, last "
                f"NOTIFICATION received {static_peer['lastNotificationReceived']!r}; daemonset "
                f"instance gracefulRestart={dh['gracefulRestart']}")
        print(f"takeover with BFD {TIMERS}, BIRD {mode}: daemonset instance active "
              f"{figures['active']:.3f}s after its start, BFD Up in its status at "
              f"{figures['bfdUp']:.3f}s, BGP Established at {figures['established']:.3f}s "
              f"(BIRD's view {figures['birdEstablished']:.3f}s); first FIN to first AdminDown "
              f"{-admin_to_fin * 1000 if admin_to_fin is not None else float('nan'):.1f} ms "
              f"(sent by {closes[0][1] if closes else None}); longest gap {longest * 1000:.1f} ms "
              f"(kernel poll {len(kernel_gaps)} gap(s), BIRD RIB poll {len(rib_gaps)}, kernel "
              f"route events {len(event_gaps)})", flush=True)

        # 2. No drop.
        if not gapless:
            lab.log(f"[{mode}] not asserted (BIRD drops the path on any BFD Down): node 1's path "
                    f"was gone for {longest * 1000:.0f} ms")
        lab.check(not gapless or not kernel_gaps, f"[{mode}] node 1's next hop left the fabric kernel route "
                  f"during the takeover: {kernel.gaps()}")
        lab.check(not gapless or not event_gaps, f"[{mode}] the fabric kernel dropped node 1's next hop during "
                  f"the takeover: {monitor.events()}")
        lab.check(not gapless or not rib_gaps, f"[{mode}] BIRD lost its path from node 1 during the takeover: "
                  f"{[s for s in rib.samples if not s[1]][:5]}")
        lab.check(not gapless or longest == 0.0, f"[{mode}] longest gap {longest * 1000:.1f} ms, must be 0")

        # 3. Roles and the graceful restart gated on BFD.
        lab.check(static.status()["role"] == "standby",
                  f"[{mode}] the static-pod instance is on standby")
        lab.check(sh["yielded"] == 1, f"[{mode}] the static-pod instance yielded once: {sh}")
        lab.check(dh["gracefulRestart"], f"[{mode}] the daemonset instance reopened as a "
                  f"graceful restart: {dh}")
        lab.check(ds.log_lines(r"BFD is Up: opening the BGP session"),
                  f"[{mode}] the daemonset instance should open its BGP session on BFD Up")
        lab.check(not ds.log_lines(r"BFD is not Up after half the graceful-restart time"),
                  f"[{mode}] the daemonset instance opened its BGP session before BFD was Up")

        # 4. AdminDown, then the close; no failure in BIRD's view; no NOTIFICATION.
        lab.check(admin, f"[{mode}] node 1 sent no BFD AdminDown on the yield: "
                  f"{[(p['state'], p['diagnostic']) for p in sent]}")
        lab.check(all(p["diagnostic"] == 7 for p in admin),
                  f"[{mode}] node 1's AdminDown should carry diagnostic 7 (Administratively "
                  f"Down): {[(p['state'], p['diagnostic']) for p in admin]}")
        lab.check(closes, f"[{mode}] no FIN on node 1's BGP connection was captured")
        lab.check(closes[0][1] == n1.v4 and 0 <= admin[0]["time"] - closes[0][0] <= 0.2,
                  f"[{mode}] node 1 should close its BGP connection first, then send AdminDown "
                  f"within 200 ms: first FIN at {closes[0][0] - wall0:.3f}s by {closes[0][1]}, "
                  f"AdminDown at {admin[0]['time'] - wall0:.3f}s")
        lab.check(not [e for _, e in events if e == "expired"],
                  f"[{mode}] BIRD's BFD session to node 1 expired (a failure, not the "
                  f"AdminDown): {events}")
        lab.check(static_peer["notificationsSent"] == 0,
                  f"[{mode}] the static-pod instance sent a NOTIFICATION on the yield: "
                  f"{static_peer}")
        sb = static_peer["bfd"]
        lab.check(sb["running"] is False and sb["state"] == "AdminDown",
                  f"[{mode}] the standby's BFD should be stopped (AdminDown, not running): {sb}")

        # 5. After: Up in both views, BGP Established, node 2 untouched.
        lab.wait_until(lambda: bfd_up(bird, ds, n1, peer), 5, 0.05,
                       lambda: f"[{mode}] BFD Up in both views after the takeover "
                       f"({describe(bird, ds, n1, peer)})")
        lab.check(bird.neighbor_state(n1.v4) == "Established",
                  f"[{mode}] BIRD's session with node 1 after the takeover: "
                  f"{bird.neighbor_state(n1.v4)}")
        after = ds.bfd_status(peer)
        lab.check(after["upTransitions"] == 1 and after["downTransitions"] == 0
                  and after["localDiscriminator"] != before["localDiscriminator"],
                  f"[{mode}] the daemonset instance runs its own BFD session, Up once: {after} "
                  f"(the static-pod instance's was {before})")
        lab.check(ds.vip_status(lab.VIP4)["bound"],
                  f"[{mode}] the VIP stays bound through the takeover")
        lab.check(topo.fabric.kernel_nexthops(lab.VIP4) == want,
                  f"[{mode}] fabric route after the takeover: {topo.fabric.route_show(lab.VIP4)}")
        n2_events = [e for t, e in bird.bfd_events(n2.v4) if t >= wall_start
                     and (e == "expired" or e.startswith("changed state from Up"))]
        lab.check(not n2_events, f"[{mode}] node 2's BFD session went down in BIRD's view: "
                  f"{n2_events}")
        lab.check(other.bfd_status(peer)["downTransitions"] == 0,
                  f"[{mode}] node 2's BFD session went down in vipd's view: "
                  f"{other.bfd_status(peer)}")

        # Last, because it is the static-pod instance's account of what the peer did (the
        # fabric's own view is asserted above): the peer kept the path.
        lab.check(all(p["gracefulRestart"] for p in sh["lastYieldPeers"]),
                  f"[{mode}] the static-pod instance reports that BIRD dropped the path "
                  f"(lastYieldPeers {sh['lastYieldPeers']}), but BIRD kept it")
    return figures


def test() -> None:
    results, failures = {}, []
    for option, what, gapless in BIRD_BFD_MODES:
        mode = option.rstrip(";") or "bfd on"
        try:
            results[mode] = takeover_with_bfd(option, what, gapless)
        except (AssertionError, TimeoutError) as e:
            lab.log(f"FAILED with BIRD {mode}: {e}")
            failures.append(f"BIRD {mode}: {e}")
    for mode, f in results.items():
        lab.log(f"summary, BIRD {mode}: " + ", ".join(f"{k} {v:.3f} s" for k, v in f.items()))
    lab.check(not failures, "; ".join(failures))


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries + lab.BfdCapture.binaries, vipd=True)
