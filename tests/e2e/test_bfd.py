#!/usr/bin/env python3
"""e2e: BFD (RFC 5880/5881) between three vipd nodes and a BIRD fabric with 3-way ECMP.

For each timer set (300ms x 3, then 50ms x 3; the same on both sides):
1. Up: every BFD session is Up in BIRD's view and in vipd's (status, remote state, negotiated
   TX interval and detection time, the vipd_bfd_* metrics); vipd's packets on the wire are RFC
   5881 single hop (TTL 255, UDP 49152-65535 -> 3784); the fabric kernel has 3-way ECMP.
2. Freeze: SIGSTOP node 2's vipd. The fabric kernel route is polled every 10 ms until node 2's
   next hop leaves it; the time from the signal must be within multiplier x interval + a margin
   (BIRD must log the detection-time expiry). The other two nodes never flap.
3. Thaw: SIGCONT. BFD comes Up again in both views, BGP re-establishes, the next hop returns.
4. Link cut: node 3's switch port (its veth end in the fabric bridge) is set down, a real cut:
   both ends lose carrier, BIRD's br0 stays up, so only BFD can tell. Measured as for the
   freeze; the port is then restored and node 3 comes back.
5. Clean stop: SIGTERM node 1. vipd sends AdminDown (seen on the wire), and BIRD takes the
   session down on it rather than on a detection-time expiry (its log).

Margins on top of the detection time: the detection time runs from the last packet received,
so it ends at most multiplier x interval after the freeze; then BIRD's BFD thread wakes its
main loop, BGP stops, the route is withdrawn and synced to the kernel (~60-80 ms measured on a
2-core machine), and the poll adds up to ~15 ms. 200 ms for 300 ms timers and 150 ms for 50 ms
timers cover that on a loaded machine; the figures are printed either way.
"""
import signal
import time

import lab

TIMER_SETS = [(lab.BfdTimers(300, 300, 3), 0.200), (lab.BfdTimers(50, 50, 3), 0.150)]
BACK_BOUND_S = 20  # SIGCONT/restore -> BFD Up, BGP up (BIRD's error wait 1-2 s), next hop back


def vipd_bfd_edit(timers: lab.BfdTimers):
    def edit(config: dict, node: lab.Node) -> None:
        config["peers"][0]["bfd"] = timers.vipd()
    return edit


class BfdEcmp:
    """The ECMP lab with BFD on both sides, and the assertions the scenarios share."""

    def __init__(self, L: lab.Lab, timers: lab.BfdTimers, margin: float):
        self.timers, self.margin = timers, margin
        self.e = lab.build_ecmp(L, ["vipd", "vipd", "vipd"], vipd_edit=vipd_bfd_edit(timers),
                                bird_bfd=timers)
        self.topo, self.bird, self.vipds = self.e.topo, self.e.bird, self.e.speakers
        self.fabric = self.topo.fabric
        self.peer = self.topo.fabric_v4
        self.cap = lab.BfdCapture(L, self.fabric, self.topo.fabric_if)
        self.bound = timers.detection_ms(timers) / 1000 + margin

    def nodes(self) -> list[lab.Node]:
        return self.topo.nodes

    def bfd(self, i: int) -> dict:
        return self.vipds[i].bfd_status(self.peer)

    def up_everywhere(self, i: int) -> bool:
        node = self.nodes()[i]
        b = self.bfd(i)
        return (self.bird.bfd_state(node.v4) == "Up" and b["state"] == "Up"
                and b["remoteState"] == "Up")

    def describe(self, i: int) -> str:
        node = self.nodes()[i]
        try:
            v = self.bfd(i)
        except Exception as e:  # noqa: BLE001 - shown in a timeout message
            v = f"<{e!r}>"
        return (f"node {i + 1}: BIRD BFD {self.bird.bfd_sessions().get(node.v4)}, "
                f"BIRD BGP {self.bird.neighbor_state(node.v4)}, vipd BFD {v}")

    def check_up(self, i: int) -> None:
        """Node i's session is Up in both views with the negotiated timers, and the metrics say
        so (BIRD uses the same timers, so they are the same both ways)."""
        t, node, v = self.timers, self.nodes()[i], self.vipds[i]
        b, s = self.bfd(i), self.bird.bfd_sessions()[node.v4]
        lab.check(b["enabled"] is True and b["state"] == "Up" and b["remoteState"] == "Up",
                  f"node {i + 1}: vipd's BFD is not Up/Up: {b}")
        lab.check(b["txIntervalMs"] == t.tx_ms(t) and b["detectionTimeMs"] == t.detection_ms(t),
                  f"node {i + 1}: vipd negotiated TX {b['txIntervalMs']} ms / detection "
                  f"{b['detectionTimeMs']} ms, expected {t.tx_ms(t)} / {t.detection_ms(t)}: {b}")
        lab.check(b["localDiscriminator"] != 0 and b["remoteDiscriminator"] != 0,
                  f"node {i + 1}: a zero discriminator while Up: {b}")
        lab.check(s["state"] == "Up" and s["intervalMs"] == t.tx_ms(t)
                  and s["timeoutMs"] == t.detection_ms(t),
                  f"node {i + 1}: BIRD's session {s} is not Up with TX {t.tx_ms(t)} ms and "
                  f"detection {t.detection_ms(t)} ms")
        lab.check(v.metric("vipd_bfd_state", peer=self.peer, state="Up") == 1,
                  f"node {i + 1}: vipd_bfd_state{{state=\"Up\"}} is not 1")
        for other in ("AdminDown", "Down", "Init"):
            val = v.metric("vipd_bfd_state", peer=self.peer, state=other)
            lab.check(val in (0, None), f"node {i + 1}: vipd_bfd_state{{state={other!r}}} = {val}")
        det = v.metric("vipd_bfd_detection_time_seconds", peer=self.peer)
        lab.check(det is not None and abs(det - t.detection_ms(t) / 1000) < 1e-6,
                  f"node {i + 1}: vipd_bfd_detection_time_seconds = {det}, expected "
                  f"{t.detection_ms(t) / 1000}")

    def wait_back(self, i: int, t0: float, what: str) -> dict:
        """Waits for node i's BFD Up in both views, BGP Established in BIRD's and its next hop
        in both fabric routes; returns the seconds from t0 to each."""
        node = self.nodes()[i]
        out = {}
        lab.wait_until(lambda: self.up_everywhere(i), BACK_BOUND_S, 0.05,
                       lambda: f"{what}: BFD Up in both views ({self.describe(i)})")
        out["bfd"] = time.monotonic() - t0
        lab.wait_until(lambda: self.bird.neighbor_state(node.v4) == "Established", BACK_BOUND_S,
                       0.05, lambda: f"{what}: BGP Established ({self.describe(i)})")
        out["bgp"] = time.monotonic() - t0
        out["nexthop"] = lab.time_nexthop(self.fabric, lab.VIP4, node.v4, True, t0, BACK_BOUND_S)
        lab.time_nexthop(self.fabric, lab.VIP6, node.v6, True, t0, BACK_BOUND_S)
        out["nexthop6"] = time.monotonic() - t0
        self.check_up(i)
        return out

    def check_ecmp(self, missing: tuple = ()) -> None:
        want4 = sorted(n.v4 for k, n in enumerate(self.nodes()) if k not in missing)
        want6 = sorted((n.v6 for k, n in enumerate(self.nodes()) if k not in missing),
                       key=lab._addr_key)
        lab.check(self.fabric.kernel_nexthops(lab.VIP4) == want4
                  and self.fabric.kernel_nexthops(lab.VIP6) == want6,
                  f"fabric routes should be via {want4} / {want6}: "
                  f"{self.fabric.route_show(lab.VIP4)}{self.fabric.route_show(lab.VIP6)}")

    def measure_drop(self, i: int, cause: str, act) -> float:
        """act() cuts node i off; returns the seconds until its next hop left the fabric's
        VIP4 route (asserted against the bound, with BIRD's expiry logged), and checks VIP6
        followed and the other nodes stayed."""
        node = self.nodes()[i]
        before = self.bfd(i)
        wall0, t0 = time.time(), time.monotonic()
        act()
        dt = lab.time_nexthop(self.fabric, lab.VIP4, node.v4, False, t0)
        lab.time_nexthop(self.fabric, lab.VIP6, node.v6, False, t0, 5)
        expired = [t for t, ev in self.bird.bfd_events(node.v4) if ev == "expired" and t >= wall0]
        exp_s = f"{expired[0] - wall0:.3f} s" if expired else "never"
        lab.log(f"{cause} {self.timers}: fabric dropped node {i + 1} after {dt:.3f} s "
                f"(bound {self.bound:.2f} s; BIRD's BFD expired after {exp_s})")
        lab.check(expired, f"{cause}: BIRD logged no BFD expiry for {node.v4}: "
                  f"{self.bird.bfd_events(node.v4)}")
        lab.check(dt <= self.bound, f"{cause} {self.timers}: node {i + 1}'s next hop left the "
                  f"fabric route after {dt:.3f} s, more than the bound {self.bound:.2f} s "
                  f"(detection {self.timers.detection_ms(self.timers)} ms + {self.margin * 1000:.0f} ms)")
        self.check_ecmp(missing=(i,))
        self.before = before
        return dt

    def check_jitter(self) -> dict:
        """RFC 5880 6.8.7: with Detect Mult > 1 the interval between two packets is 75-100% of
        the negotiated transmit interval. Over at least 1.5 s and at least 10 gaps of Up
        packets per node (tcpdump's capture timestamps on the fabric bridge), the median gap
        must be within that range (+-5 ms for capture timing) and no gap may reach the
        detection time; the spread is printed. This is what "the transmit timer stays
        accurate" means for the peer."""
        tx = self.timers.tx_ms(self.timers)
        time.sleep(1.5)

        def up_packets(n) -> list:
            return [p for p in self.cap.from_addr(n.v4) if p["state"] == "Up"]
        # How many packets 1.5 s holds depends on the interval and on when the capture began;
        # wait (bounded) for 11 per node rather than count on it.
        lab.wait_until(lambda: all(len(up_packets(n)) >= 11 for n in self.nodes()),
                       11 * tx / 1000 + 3, 0.1,
                       lambda: "11 Up packets from every node captured: "
                       f"{[len(up_packets(n)) for n in self.nodes()]}")
        t_end = time.time()
        out = {}
        for i, n in enumerate(self.nodes()):
            pk = [p for p in up_packets(n) if p["time"] <= t_end]
            gaps = sorted((b["time"] - a["time"]) * 1000 for a, b in zip(pk, pk[1:]))
            lab.check(len(gaps) >= 10, f"node {i + 1}: too few Up packets captured: {len(gaps)}")
            med, hi, lo = gaps[len(gaps) // 2], gaps[-1], gaps[0]
            p99 = gaps[min(len(gaps) - 1, int(len(gaps) * 0.99))]
            inside = sum(1 for g in gaps if 0.75 * tx - 5 <= g <= tx + 5) / len(gaps)
            lab.log(f"jitter {self.timers}: node {i + 1}: {len(gaps)} gaps, min {lo:.1f} ms, "
                    f"median {med:.1f} ms, p99 {p99:.1f} ms, max {hi:.1f} ms; "
                    f"{inside * 100:.0f}% within 75-100% of {tx} ms (+-5 ms)")
            lab.check(0.75 * tx - 5 <= med <= tx + 5,
                      f"node {i + 1}: median gap {med:.1f} ms is outside 75-100% of {tx} ms")
            lab.check(hi < self.timers.detection_ms(self.timers),
                      f"node {i + 1}: a {hi:.1f} ms gap reaches the detection time")
            out[f"jitter_median_n{i + 1}"] = med / 1000
        return out

    def check_no_flap(self, i: int, since_wall: float, down_transitions: int = 0) -> None:
        """Node i, which nothing was done to since since_wall, never went down: no expiry or
        Up->Down in BIRD's log, and vipd's downTransitions still down_transitions."""
        n = self.nodes()[i]
        ev = [e for t, e in self.bird.bfd_events(n.v4) if t >= since_wall
              and (e == "expired" or e.startswith("changed state from Up"))]
        lab.check(not ev, f"BIRD's BFD session to node {i + 1} went down on its own "
                  f"({self.timers}): {ev}; {self.describe(i)}")
        b = self.bfd(i)
        lab.check(b["downTransitions"] == down_transitions,
                  f"vipd's BFD on node {i + 1} went down on its own ({self.timers}): {b}")


def run_set(timers: lab.BfdTimers, margin: float) -> dict:
    figures = {}
    with lab.Lab(f"bfd-{timers.min_tx_ms}ms") as L:
        t0 = time.monotonic()
        b = BfdEcmp(L, timers, margin)
        wall_start = time.time()
        for i in range(3):
            lab.wait_until(lambda i=i: b.up_everywhere(i), 15, 0.05,
                           lambda i=i: f"BFD Up in both views ({b.describe(i)})")
            b.check_up(i)
        b.check_ecmp()
        figures["up"] = time.monotonic() - t0
        lab.log(f"up {timers}: 3 BFD sessions Up in BIRD and vipd, 3-way ECMP, "
                f"{figures['up']:.2f} s after start (BGP Established after "
                f"{b.e.times['established']:.2f} s, ECMP after {b.e.times['ecmp']:.2f} s)")
        print(b.bird.birdc("show", "bfd", "sessions"), flush=True)
        for i, n in enumerate(b.nodes()):
            # The capture started once ECMP was up: give each node a few packets' time.
            pk = lab.wait_until(lambda n=n: (lambda p: p if len(p) >= 3 else None)(
                b.cap.from_addr(n.v4)), 5, 0.1, f"3 BFD packets from node {i + 1} captured")
            lab.check_bfd_single_hop(pk, f"vipd on node {i + 1}")
            last = pk[-1]
            lab.check((last["state"], last["minTxMs"], last["minRxMs"], last["multiplier"]) ==
                      ("Up", timers.min_tx_ms, timers.min_rx_ms, timers.multiplier),
                      f"node {i + 1}'s last BFD packet is not Up with {timers}: {last}")

        figures.update(b.check_jitter())

        # Freeze node 2.
        frozen = b.vipds[1]
        try:
            figures["freeze"] = b.measure_drop(1, "freeze", lambda: frozen.proc.signal(signal.SIGSTOP))
        finally:
            t0 = time.monotonic()
            frozen.proc.signal(signal.SIGCONT)
        down_before = b.before["downTransitions"]
        back = b.wait_back(1, t0, "thaw")
        figures["thaw"] = back["nexthop6"]
        after = b.bfd(1)
        lab.log(f"thaw {timers}: node 2 back after {back['nexthop6']:.2f} s (BFD Up in both "
                f"views after {back['bfd']:.2f} s, BGP Established after {back['bgp']:.2f} s, "
                f"IPv4 next hop after {back['nexthop']:.2f} s); vipd counted "
                f"{after['downTransitions'] - down_before} down transition(s), last diagnostic "
                f"{after['diagnostic']!r}")
        lab.check(after["downTransitions"] > down_before and
                  after["upTransitions"] > b.before["upTransitions"],
                  f"node 2: vipd's BFD counters did not record the down and up: before "
                  f"{b.before}, after {after}")
        b.check_ecmp()
        b.check_no_flap(0, wall_start)
        b.check_no_flap(2, wall_start)
        wall_thawed, node2_downs = time.time(), after["downTransitions"]

        # Cut node 3's switch port.
        port = f"n{b.nodes()[2].index}"
        cut = lambda: b.fabric.ip("link", "set", port, "down")  # noqa: E731
        try:
            figures["cut"] = b.measure_drop(2, "link cut", cut)
        finally:
            t0 = time.monotonic()
            b.fabric.ip("link", "set", port, "up")
        back = b.wait_back(2, t0, "link restored")
        figures["restore"] = back["nexthop6"]
        lab.log(f"link restored {timers}: node 3 back after {back['nexthop6']:.2f} s (BFD Up "
                f"after {back['bfd']:.2f} s, BGP Established after {back['bgp']:.2f} s)")
        after = b.bfd(2)
        lab.check(after["downTransitions"] > b.before["downTransitions"],
                  f"node 3: vipd did not count the cut as a down transition: {after}")
        b.check_ecmp()
        b.check_no_flap(0, wall_start)
        b.check_no_flap(1, wall_thawed, node2_downs)
        n1 = b.nodes()[0]

        # Clean stop of node 1: AdminDown, not a detection-time expiry.
        wall0 = time.time()
        dt = lab.ecmp_withdraw_on_stop(b.e, index=0, bound=15)
        lab.wait_until(lambda: b.bird.bfd_state(n1.v4) != "Up", 5, 0.05,
                       lambda: f"BIRD's session to node 1 to leave Up ({b.describe(0)})")
        time.sleep(0.2)  # the capture's last lines
        sent = b.cap.from_addr(n1.v4, since=wall0)
        states = [p["state"] for p in sent]
        admin = [p for p in sent if p["state"] == "AdminDown"]
        events = [(round(t - wall0, 3), e) for t, e in b.bird.bfd_events(n1.v4) if t >= wall0]
        lab.log(f"stop {timers}: node 1's next hop left the fabric {dt:.2f} s after SIGTERM; "
                f"vipd's BFD packets after SIGTERM: {compress(states)}; AdminDown diagnostic "
                f"{admin[0]['diagnostic'] if admin else None}; BIRD's BFD events (s after "
                f"SIGTERM): {events}; BIRD: {b.bird.protocol_all(n1.v4).count('BFD session down')}"
                f" x 'BFD session down' in show protocols all")
        lab.check(admin, f"vipd sent no AdminDown on SIGTERM (states after SIGTERM: {states})")
        lab.check(admin[0]["diagnostic"] == 7,
                  f"vipd's AdminDown carries diagnostic {admin[0]['diagnostic']}, not 7 "
                  f"(Administratively Down, RFC 5880 4.1): {admin[0]}")
        lab.check(all(p["state"] == "AdminDown" for p in sent[sent.index(admin[0]):]),
                  f"vipd sent something other than AdminDown after its first AdminDown: {states}")
        first = next((e for _, e in events if e == "expired"
                      or e.startswith("changed state from Up")), None)
        lab.check(first is not None and first.startswith("changed state from Up"),
                  f"BIRD should take the session down on vipd's AdminDown, not on a "
                  f"detection-time expiry; its events after SIGTERM: {events}")
    return figures


def compress(states: list[str]) -> str:
    """["Up", "Up", "AdminDown"] -> "Up x2, AdminDown x1"."""
    out: list[list] = []
    for s in states:
        if out and out[-1][0] == s:
            out[-1][1] += 1
        else:
            out.append([s, 1])
    return ", ".join(f"{s} x{n}" for s, n in out) or "none"


def test() -> None:
    results = {}
    for timers, margin in TIMER_SETS:
        results[str(timers)] = run_set(timers, margin)
    for name, f in results.items():
        lab.log(f"summary {name}: " + ", ".join(f"{k} {v:.3f} s" for k, v in f.items()))


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries + lab.BfdCapture.binaries, vipd=True)
