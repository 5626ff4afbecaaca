#!/usr/bin/env python3
"""e2e: a hostile peer (the project's security issue). vipd on node 1 (AS 65001) has two peers
in the fabric namespace: BIRD on 192.0.2.1 (AS 65000), a normal peer, and hostile_peer.py on a
second address, 192.0.2.2 (AS 65100), a scripted raw BGP speaker that breaks the protocol on
purpose, one connection per scenario (vipd dials it again after each):

- broken headers in Established: bad marker 1/1, length 18 and 4097 (and a 20-byte KEEPALIVE)
  1/2 with the length as data, unknown types 0 and 6 1/3 with the type as data;
- broken OPENs: version 3 2/1 (data 0x0004), bad peer AS 2/2, BGP identifier 0 2/3, hold time
  1 and 2 2/6, an unsupported optional parameter 2/4, truncated capabilities and an optional
  parameters length mismatch 2/0, a 28-byte OPEN 1/2;
- UPDATEs that reset the session: withdrawn-routes or path-attribute length beyond the message
  3/1, NLRI or withdrawn prefix length > 32 and a truncated prefix 3/10 (RFC 7606 section 5.3),
  an unrecognized well-known attribute 3/2 (the attribute as data), a malformed MP_REACH_NLRI
  3/1 (RFC 7606 section 7.11);
- UPDATEs RFC 7606 treats as withdraw, on one session that must stay up: missing ORIGIN or
  NEXT_HOP, ORIGIN 3, ORIGIN length 2, NEXT_HOP length 5, AS_PATH segment type 7, an empty
  segment, 2-octet ASNs on a 4-octet session (RFC 6793), an attribute overrunning the list, ORIGIN
  with the optional flag; each moves vipd's treatAsWithdraw counter by one and nothing else;
  and on a 2-octet session (no capability 65): an AS4_PATH with a confederation segment
  (attribute discard, RFC 6793 section 6) and 4-octet ASNs in AS_PATH (treat-as-withdraw);
- OPEN and an UPDATE one byte per TCP segment, then KEEPALIVE + UPDATE + KEEPALIVE in one
  segment: counted correctly, the session stays up;
- a peer that accepts and never sends OPEN: 4/0 after vipd's openHoldTime (5 s here), retried;
- a full table: 1,000,000 /24s in 988 UPDATEs of up to 4096 bytes as fast as TCP allows, then
  withdrawn: vipd stays Established, counts every prefix, and its RSS stays within 20 MiB;
- RST (SO_LINGER 0) and plain close (FIN) right after accept (vipd is already in OpenSent: it
  sends its OPEN on connect), after its OPEN, in OpenConfirm and in Established: no NOTIFICATION,
  vipd notes the close in that state (lastError), goes Idle and dials again within its backoff
  (connectRetryTime 250 ms here, so that the 35 redials take seconds, not half a minute: every
  redial within 2 s, 0.19-0.25 s after an Established session, up to 0.5 s after a failed OPEN
  exchange; the scenario order alternates the two so the backoff never climbs);
- the same peer as a CLI (hostile_peer.py in the namespace) for two scenarios.
After every scenario: vipd is the same process, BIRD's session is Established and has not
flapped since the start (BIRD's `since` and vipd's establishedTransitions unchanged), and both
VIPs are in BIRD's RIB. Prints each scenario's NOTIFICATION and the flood's figures.
"""
import json
import os
import sys
import threading
import time

import hostile_peer as hp
import lab

HOSTILE = "192.0.2.2"
HOSTILE_ASN = 65100
OPEN_HOLD_S = 5
RSS_BOUND_MIB = 20
# Under AddressSanitizer (CI builds with -Db_sanitize=address,undefined) freed memory sits in
# ASan's quarantine (quarantine_size_mb=16 in scripts/dev.sh) and every allocation has shadow
# memory and redzones, so RSS is not vipd's own; the bound grows by that much. The release
# build's figure (README) is the one that describes vipd.
ASAN_RSS_ALLOWANCE_MIB = 32
FLOOD_PREFIXES = 1_000_000
FLOOD_TIMEOUT = 60  # a safety net; here vipd counts the million in about 0.1 s
ACCEPT_TIMEOUT = 40  # > vipd's capped backoff (30 s)
CONNECT_RETRY_S = 0.25
# The longest backoff (2 x connectRetryTime after a failed OPEN exchange) plus 1.5 s for the close
# to reach vipd and its dial to reach us under ASan on a loaded CI machine (1.04 s was seen).
REDIAL_BOUND_S = 2 * CONNECT_RETRY_S + 1.5


def sanitized(pid: int) -> bool:
    """Whether the process runs with AddressSanitizer's runtime."""
    with open(f"/proc/{pid}/maps") as f:
        return "libasan" in f.read()


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


class Suite:
    def __init__(self, L: lab.Lab):
        self.L = L
        topo = L.fabric_with_nodes(1)
        self.topo, self.node = topo, topo.nodes[0]
        topo.fabric.add_address("br0", f"{HOSTILE}/24")
        # BIRD listens on 192.0.2.1:179 only (strict bind), so the hostile peer can have
        # 192.0.2.2:179 in the same namespace.
        self.bird = lab.Bird(L, topo.fabric, topo.fabric_v4, lab.FABRIC_ASN,
                             [lab.Neighbor(self.node.v4, self.node.asn, passive=True, name="node1",
                                           bird_options=[f"local {topo.fabric_v4};",
                                                         "strict bind on;"])],
                             interfaces=[topo.fabric_if])
        self.listener = hp.Listener(HOSTILE, 179, netns=topo.fabric.name)
        L.on_cleanup(self.listener.close)
        self.p = hp.Params(asn=HOSTILE_ASN, router_id=HOSTILE, peer_asn=self.node.asn,
                           next_hop=HOSTILE, hold=30, timeout=5,
                           extra={"open_hold_wait": OPEN_HOLD_S + 5})
        config = lab.vipd_config(L, self.node, self.node.asn, topo.fabric_v4, lab.FABRIC_ASN,
                                 "vipd-n1")
        config["peers"].append({"address": HOSTILE, "asn": HOSTILE_ASN,
                                "sourceAddress": self.node.v4, "holdTime": "30s",
                                "connectRetryTime": f"{int(CONNECT_RETRY_S * 1000)}ms",
                                "openHoldTime": f"{OPEN_HOLD_S}s",
                                "nextHopIpv6": self.node.v6})
        self.vipd = lab.Vipd(L, self.node.ns, config, name="vipd-n1")
        self.pid = self.vipd.proc.pid
        lab.wait_established(self.bird, [self.node.v4], 30)
        for prefix in (lab.VIP4, lab.VIP6):
            lab.wait_until(lambda p=prefix: self.bird.route(p), 20, 0.1, f"{prefix} in BIRD")
        self.bird_since = self.bird_protocol()[4]
        self.results: list[tuple[str, str, str]] = []  # (scenario, expected, seen)
        self.last_close = time.monotonic()
        self.retry_delays: list[float] = []

    # --- invariants ---

    def bird_protocol(self) -> list[str]:
        for line in self.bird.birdc("show", "protocols").splitlines():
            parts = line.split()
            if parts and parts[0] == "node1":
                return parts
        raise AssertionError("BIRD has no protocol node1")

    def healthy(self, after: str) -> None:
        """vipd is the same process, BIRD's session never flapped, the VIPs are in BIRD."""
        lab.check(self.vipd.proc.alive(), f"after {after}: vipd (pid {self.pid}) is gone: "
                  f"exit {self.vipd.proc.popen.returncode}")
        lab.check(self.vipd.proc.pid == self.pid, f"after {after}: vipd's pid changed")
        parts = self.bird_protocol()
        # BIRD's "since" can move by a millisecond as its channels finish coming up (seen once
        # under ASan: .562 -> .563), so a flap is a later time, not any change; vipd's own count
        # of transitions to Established (below) catches a flap exactly.
        lab.check(parts[-1] == "Established" and lab.bird_since_delta(parts[4], self.bird_since) < 1.0,
                  f"after {after}: BIRD's session flapped or is down: {' '.join(parts)} "
                  f"(Established since {self.bird_since} at the start)")
        bp = self.vipd.peer_status(self.topo.fabric_v4)
        lab.check(bp["state"] == "Established" and bp["establishedTransitions"] == 1,
                  f"after {after}: vipd's BIRD session: {bp['state']}, "
                  f"{bp['establishedTransitions']} transitions to Established")
        for prefix in (lab.VIP4, lab.VIP6):
            lab.check(self.bird.route(prefix) is not None,
                      f"after {after}: {prefix} is gone from BIRD's RIB")

    def hostile(self) -> dict:
        return self.vipd.peer_status(HOSTILE)

    # --- running one connection ---

    def accept(self) -> hp.Conn:
        conn = self.listener.accept(ACCEPT_TIMEOUT)
        self.retry_delays.append(conn.accepted_at - self.last_close)
        return conn

    def done(self, conn: hp.Conn) -> None:
        if conn.closed_at is None:
            conn.close()
        self.last_close = conn.closed_at or time.monotonic()

    def expect_reset(self, name: str) -> None:
        """Runs a scenario that must draw exactly the NOTIFICATION hostile_peer expects."""
        code, sub, data = hp.expected_notification(self.p, name)
        conn = self.accept()
        try:
            hp.scenarios(self.p)[name](conn, self.p)
        finally:
            self.done(conn)
        got = conn.notifications()
        want = hp.notification_text((code, sub, data))
        seen = hp.notification_text(got[0]) if got else "none"
        lab.log(f"{name}: vipd sent NOTIFICATION {seen} and closed ({conn.close_kind}) "
                f"{conn.closed_at - conn.accepted_at:.2f}s after accept")
        self.results.append((name, want, seen))
        lab.check(len(got) == 1 and got[0] == (code, sub, data),
                  f"{name}: expected NOTIFICATION {want}, vipd sent {[hp.notification_text(n) for n in got]}")
        lab.check(conn.close_kind in ("eof", "reset"), f"{name}: vipd did not close: {conn.record()}")
        self.healthy(name)

    def wait_counter(self, key: str, want: int, what: str, timeout: float = 10) -> dict:
        return lab.wait_until(lambda: (lambda s: s if s[key] >= want else None)(self.hostile()),
                              timeout, 0.05, lambda: f"{what}: {key} to reach {want} "
                              f"(status {self.hostile()})")

    def quiet_cases(self, cases: dict[str, bytes], counter: str, two_octet: bool = False) -> None:
        """Sends each UPDATE on one session; each must move `counter` by one and draw no
        NOTIFICATION; treat-as-withdraw must not count its prefix as received."""
        conn = self.accept()
        try:
            open_bytes = self.p.open(four_octet=False) if two_octet else None
            conn.establish(self.p, open_bytes)
            lab.wait_until(lambda: self.hostile()["state"] == "Established", 5, 0.05,
                           "hostile session Established")
            for name, msg in cases.items():
                before = self.hostile()
                conn.send(msg, name)
                after = self.wait_counter(counter, before[counter] + 1, name)
                conn.quiet(0.2)
                # Treat-as-withdraw counts the NLRI as withdrawn; attribute discard keeps the
                # route (one prefix in each of these UPDATEs).
                want = before["prefixesReceived"] + (1 if counter == "attributeDiscard" else 0)
                lab.check(after["prefixesReceived"] == want,
                          f"{name}: prefixesReceived {before['prefixesReceived']} -> "
                          f"{after['prefixesReceived']}, want {want}")
                lab.check(after["state"] == "Established", f"{name}: session {after['state']}")
                lab.check(after[counter] == before[counter] + 1,
                          f"{name}: {counter} {before[counter]} -> {after[counter]}")
                seen = f"no reset; {counter} {before[counter]} -> {after[counter]}"
                lab.log(f"{name}: {seen}; withdrawalsReceived {before['withdrawalsReceived']} -> "
                        f"{after['withdrawalsReceived']}")
                self.results.append((name, f"no reset ({counter})", seen))
            lab.check(not conn.notifications() and conn.closed_at is None,
                      f"vipd reset the session: {conn.record()}")
        finally:
            self.done(conn)
        self.healthy(f"{len(cases)} {counter} UPDATEs")

    def bytewise(self) -> None:
        before = self.hostile()
        conn = self.accept()
        try:
            hp.scenarios(self.p)["bytewise"](conn, self.p)
            after = self.wait_counter("prefixesReceived", before["prefixesReceived"] + 3,
                                      "bytewise")
            conn.quiet(0.3)
            updates = after["updatesReceived"] - before["updatesReceived"]
            lab.check(updates == 2 and after["state"] == "Established",
                      f"bytewise: {updates} UPDATEs counted (want 2), state {after['state']}")
            lab.check(after["prefixesReceived"] - before["prefixesReceived"] == 3,
                      f"bytewise: prefixes {before['prefixesReceived']} -> "
                      f"{after['prefixesReceived']}")
        finally:
            self.done(conn)
        seen = "no reset; 2 UPDATEs and 3 prefixes counted"
        lab.log(f"bytewise: OPEN, KEEPALIVE, UPDATE one byte per segment, then KEEPALIVE + UPDATE + "
                f"KEEPALIVE in one segment: {seen}")
        self.results.append(("bytewise", "no reset", seen))
        self.healthy("bytewise")

    def never_open(self) -> None:
        conn = self.accept()
        try:
            hp.scenarios(self.p)["never-open"](conn, self.p)
        finally:
            self.done(conn)
        got = conn.notifications()
        held = conn.of_type(hp.NOTIFICATION)[0].t - conn.of_type(hp.OPEN)[0].t
        seen = hp.notification_text(got[0]) if got else "none"
        lab.log(f"never-open: vipd sent NOTIFICATION {seen} {held:.2f}s after its OPEN "
                f"(openHoldTime {OPEN_HOLD_S}s), closed ({conn.close_kind})")
        self.results.append(("never-open", "4/0 data -", seen))
        lab.check(got == [(4, 0, b"")], f"never-open: expected 4/0, got {got}")
        # Both times are when this script read the message: under load its read of vipd's OPEN
        # can lag (ci8: held 4.76 s while vipd's own log showed 5.007 s), so the lower bound
        # allows half a second; an open hold timer that fires early by more is vipd's bug.
        lab.check(OPEN_HOLD_S - 0.5 <= held <= OPEN_HOLD_S + 1.5,
                  f"never-open: held {held:.2f}s, openHoldTime is {OPEN_HOLD_S}s")
        err = self.hostile()["lastError"]
        lab.check("hold timer expired" in err, f"never-open: lastError {err!r}")
        self.healthy("never-open")

    def close_in(self, state: str, rst: bool) -> None:
        name = f"{'rst' if rst else 'fin'}-{state}"
        conn = self.accept()
        try:
            hp.scenarios(self.p)[name](conn, self.p)
        finally:
            self.done(conn)
        vipd_state = {"connect": "OpenSent", "opensent": "OpenSent",
                      "openconfirm": "OpenConfirm", "established": "Established"}[state]
        noted = [f"connection closed in {vipd_state}"]
        if name == "rst-connect":
            # A reset right after the accept can beat vipd's connect completion: the kernel then
            # reports the connect itself as reset (SO_ERROR), before vipd has sent its OPEN.
            noted.append("TCP connection failed: Connection reset by peer")
        s = lab.wait_until(lambda: (lambda s: s if any(n in s["lastError"] for n in noted)
                                    else None)(self.hostile()), 5, 0.05,
                           lambda: f"{name}: vipd to note the close (status {self.hostile()})")
        lab.check(not conn.notifications(), f"{name}: vipd sent {conn.notifications()}")
        seen = f"no NOTIFICATION; lastError {s['lastError']!r}"
        lab.log(f"{name}: {seen}")
        self.results.append((name, f"close noticed in {vipd_state}", seen))
        self.healthy(name)

    def flood(self) -> dict:
        attrs = self.p.attrs()
        t0 = time.monotonic()
        announce = hp.flood_updates(FLOOD_PREFIXES, attrs)
        withdraw = hp.flood_updates(FLOOD_PREFIXES, b"", withdraw=True)
        gen = time.monotonic() - t0
        samples: list[int] = []
        stop = threading.Event()

        def sampler() -> None:
            while not stop.is_set():
                try:
                    samples.append(rss_kib(self.pid))
                except (OSError, RuntimeError):
                    pass
                stop.wait(0.002)

        conn = self.accept()
        fig = {}
        try:
            conn.establish(self.p)
            lab.wait_until(lambda: self.hostile()["state"] == "Established", 5, 0.05,
                           "hostile session Established")
            time.sleep(0.3)
            base = self.hostile()
            fig["rss_before"] = rss_kib(self.pid)
            th = threading.Thread(target=sampler, daemon=True)
            th.start()
            t0 = time.monotonic()
            fig["send_announce"] = conn.send_many(announce)
            self.wait_counter("prefixesReceived", base["prefixesReceived"] + FLOOD_PREFIXES,
                              "announce flood", FLOOD_TIMEOUT)
            fig["announce"] = time.monotonic() - t0
            fig["rss_after_announce"] = rss_kib(self.pid)
            t0 = time.monotonic()
            fig["send_withdraw"] = conn.send_many(withdraw)
            self.wait_counter("withdrawalsReceived",
                              base["withdrawalsReceived"] + FLOOD_PREFIXES, "withdraw flood",
                              FLOOD_TIMEOUT)
            fig["withdraw"] = time.monotonic() - t0
            stop.set()
            th.join(2)
            time.sleep(0.3)
            fig["rss_after"] = rss_kib(self.pid)
            conn.quiet(0.3)
            end = self.hostile()
            lab.check(end["state"] == "Established", f"flood: hostile session {end['state']}")
            lab.check(end["updatesReceived"] - base["updatesReceived"] ==
                      len(announce) + len(withdraw),
                      f"flood: {end['updatesReceived'] - base['updatesReceived']} UPDATEs "
                      f"counted, sent {len(announce) + len(withdraw)}")
        finally:
            stop.set()
            self.done(conn)
        fig["rss_peak"] = max(samples + [fig["rss_before"], fig["rss_after"]])
        fig["samples"] = len(samples)
        lab.log(f"flood: generated {len(announce)} + {len(withdraw)} UPDATEs in {gen:.2f}s")
        lab.log(f"flood: {FLOOD_PREFIXES} prefixes announced in {len(announce)} UPDATEs: sent in "
                f"{fig['send_announce']:.2f}s, all counted by vipd within {fig['announce']:.2f}s "
                f"({FLOOD_PREFIXES / fig['announce']:,.0f} prefixes/s)")
        lab.log(f"flood: withdrawn in {len(withdraw)} UPDATEs: sent in {fig['send_withdraw']:.2f}s, "
                f"counted within {fig['withdraw']:.2f}s (status polled every 50 ms) "
                f"({FLOOD_PREFIXES / fig['withdraw']:,.0f} prefixes/s)")
        lab.log(f"flood: vipd RSS before {fig['rss_before'] / 1024:.1f} MiB, peak "
                f"{fig['rss_peak'] / 1024:.1f} MiB ({fig['samples']} samples), after announce "
                f"{fig['rss_after_announce'] / 1024:.1f} MiB, after withdraw "
                f"{fig['rss_after'] / 1024:.1f} MiB")
        growth = (fig["rss_peak"] - fig["rss_before"]) / 1024
        bound = RSS_BOUND_MIB + (ASAN_RSS_ALLOWANCE_MIB if sanitized(self.pid) else 0)
        lab.check(growth < bound, f"flood: vipd's RSS grew {growth:.1f} MiB (bound {bound} MiB"
                  f"{', AddressSanitizer build' if bound != RSS_BOUND_MIB else ''})")
        self.results.append(("flood", "no reset, RSS bounded",
                             f"no reset; RSS +{growth:.1f} MiB peak; "
                             f"{FLOOD_PREFIXES / fig['announce']:,.0f} prefixes/s"))
        self.healthy("flood")
        return fig


def cli(s: Suite) -> None:
    """The same peer as a CLI in the fabric namespace (what an operator would run by hand):
    two scenarios, one JSON record each."""
    s.listener.close()
    names = ["header-type-6", "rst-established"]
    args = [sys.executable, os.path.join(lab.E2E_DIR, "hostile_peer.py"), "--listen", HOSTILE,
            "--asn", str(HOSTILE_ASN), "--peer-asn", str(s.node.asn), "--accept-timeout", "20"]
    for n in names:
        args += ["--scenario", n]
    p = s.topo.fabric.run(args, check=False, timeout=60)
    records = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    for r in records:
        lab.log(f"CLI {r['scenario']}: NOTIFICATION {r['notification']}, closed {r['closed']} "
                f"after {r['closedAfter']}s, error {r['error']}")
    lab.check(p.returncode == 0 and [r["scenario"] for r in records] == names,
              f"hostile_peer.py CLI exited {p.returncode}: {p.stdout} {p.stderr}")
    lab.check(records[0]["notification"] == "1/3 data 06" and records[0]["closed"] == "eof",
              f"CLI header-type-6: {records[0]}")
    lab.check(records[1]["notification"] == "none", f"CLI rst-established: {records[1]}")
    s.healthy("the CLI scenarios")


def test() -> None:
    with lab.Lab("hostile-peer") as L:
        t_start = time.monotonic()
        s = Suite(L)
        lab.log(f"setup: BIRD Established with the VIPs after {time.monotonic() - t_start:.1f}s")
        p = s.p
        two_octet = {
            # RFC 6793 section 6 / RFC 7606 section 7.2: AS4_PATH with a confederation segment.
            "as4-path-confed-segment-on-2-octet-session": hp.update(
                attrs=hp.origin(0) + hp.as_path([HOSTILE_ASN], 2) + hp.next_hop(HOSTILE)
                + hp.attr(hp.F_OPTIONAL | hp.F_TRANSITIVE, hp.A_AS4_PATH,
                          bytes([3, 1]) + (4200000000).to_bytes(4, "big")),
                nlri_bytes=hp.nlri(["198.18.20.0/24"])),
        }
        two_octet_taw = {
            # 4-octet ASNs in AS_PATH on a 2-octet session: a malformed AS_PATH.
            "update-as-path-4-octet-on-2-octet-session": hp.update(
                attrs=hp.origin(0) + hp.as_path([HOSTILE_ASN], 4) + hp.next_hop(HOSTILE),
                nlri_bytes=hp.nlri(["198.18.21.0/24"])),
        }
        # Pre-Established failures double vipd's retry interval; an Established session resets
        # it to 1 s. Alternating the two kinds keeps every wait for vipd's next dial near 1-2 s.
        pre = [lambda n=n: s.expect_reset(n) for n in hp.open_cases(p)]
        pre += [lambda st=st, r=r: s.close_in(st, r)
                for st in ("connect", "opensent", "openconfirm") for r in (True, False)]
        pre.append(s.never_open)
        est = [s.bytewise]
        est += [lambda n=n: s.expect_reset(n) for n in hp.header_cases()]
        est += [lambda n=n: s.expect_reset(n) for n in hp.reset_update_cases(p)]
        est.append(lambda: s.quiet_cases(hp.update_cases(p), "treatAsWithdraw"))
        est.append(lambda: s.quiet_cases(two_octet, "attributeDiscard", two_octet=True))
        est.append(lambda: s.quiet_cases(two_octet_taw, "treatAsWithdraw", two_octet=True))
        est += [lambda r=r: s.close_in("established", r) for r in (True, False)]
        order = []
        while pre or est:
            if est:
                order.append(est.pop(0))
            if pre:
                order.append(pre.pop(0))
        for step in order:
            step()
        figures = s.flood()

        total = time.monotonic() - t_start
        lab.log("summary (scenario: expected -> seen):")
        for name, want, seen in s.results:
            lab.log(f"  {name}: {want} -> {seen}")
        delays = sorted(s.retry_delays[1:])
        lab.log(f"vipd's redial after each close: min {delays[0]:.2f}s, median "
                f"{delays[len(delays) // 2]:.2f}s, max {delays[-1]:.2f}s over {len(delays)} "
                f"connections; flood RSS before/peak/after {figures['rss_before'] / 1024:.1f}/"
                f"{figures['rss_peak'] / 1024:.1f}/{figures['rss_after'] / 1024:.1f} MiB; "
                f"total {total:.1f}s")
        # Each close is followed by vipd's next dial within its backoff: 0.75-1 x
        # connectRetryTime after an Established session, up to 2 x after a failed OPEN exchange
        # (the alternation above).
        lab.check(delays[-1] <= REDIAL_BOUND_S, f"vipd took {delays[-1]:.2f}s to dial again "
                  f"(bound {REDIAL_BOUND_S}s)")
        cli(s)
        bp = s.vipd.peer_status(s.topo.fabric_v4)
        lab.log(f"BIRD session: {' '.join(s.bird_protocol())}; vipd's view: {bp['state']}, "
                f"{bp['establishedTransitions']} transition(s) to Established")


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries, vipd=True)
