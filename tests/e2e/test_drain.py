#!/usr/bin/env python3
"""e2e: the drain (issue 4). Three vipd nodes (AS 65001-65003) + a BIRD fabric (AS 65000) whose
import filter honours GRACEFUL_SHUTDOWN (65535:0 -> local_pref 0, lab.Bird); each vipd with
drain.gracefulShutdownTime 1s (long enough to see the step in BIRD).

Asserts:
- `vipctl withdraw --wait --reason "node replacement"` on node 1: BIRD first shows node 1's path
  with community (65535,0) and local_pref 0 (the fabric's kernel route drops to 2 next hops at
  once), then the path disappears; vipctl exits 0 with "acknowledged": true only after that.
  Ordering by timestamps: on the wire (tcpdump on the fabric's port to node 1) GS UPDATE <
  withdrawing UPDATE < vipctl exit; in BIRD (birdc polled) GS seen < path gone, and gone when
  vipctl has exited; status withdrawn.active with the reason, vipd_withdrawn 1; the addresses
  vipd added leave node 1's lo;
- node 1's vipd restarted: its session comes up but nothing is announced or bound for several
  seconds (status withdrawn.active); `vipctl announce`: 3 next hops again, without 65535:0;
- SIGTERM on node 2: GRACEFUL_SHUTDOWN then withdraw, exit 0, BIRD's `show protocols all`
  shows "vipd: node draining".
"""
import json
import signal
import threading
import time

import lab

GS_TIME_S = 1.0
GS = lab.GRACEFUL_SHUTDOWN
RESTART_WATCH_S = 4.0
DRAIN_BOUND_S = 10.0
SHUTDOWN_TEXT = "vipd: node draining"


class PathWatch:
    """Polls BIRD (birdc, ~every 10 ms) for the path of lab.VIP4 from one neighbour in a thread;
    records the wall-clock times (when birdc answered) of the first sample with
    GRACEFUL_SHUTDOWN and of the first one without the path."""

    def __init__(self, bird: lab.Bird, addr: str):
        self.bird, self.addr = bird, addr
        self.t_gs = self.t_gone = None
        self.gs_path = None
        self.samples = 0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                path = self.bird.path_from(lab.VIP4, self.addr)
            except Exception as e:  # noqa: BLE001 - reported by stop()
                self.errors.append(repr(e))
                time.sleep(0.01)
                continue
            t = time.time()  # BIRD was in this state by now
            self.samples += 1
            if path and GS in path["communities"] and self.t_gs is None:
                self.t_gs, self.gs_path = t, path
            if path is None and self.t_gone is None:
                self.t_gone = t
            time.sleep(0.01)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(15)


def wire_times(cap: lab.TcpCapture, src: str, dst: str, after: float) -> tuple:
    """(first UPDATE announcing VIP4 with GRACEFUL_SHUTDOWN, first UPDATE withdrawing VIP4),
    capture times after `after` (None when not captured)."""
    t_gs = None
    for ts, t, body in cap.timed_bgp_messages(src, dst):
        if ts >= after and t == lab.BGP_UPDATE and lab.VIP4 in lab.update_prefixes(body)[1] \
                and GS in lab.update_communities(body):
            t_gs = ts
            break
    return t_gs, lab.first_withdrawal(cap, src, dst, lab.VIP4, after)


def test() -> None:
    with lab.Lab("drain") as L:
        def edit(c: dict, node: lab.Node) -> None:
            c["drain"]["gracefulShutdownTime"] = f"{int(GS_TIME_S * 1000)}ms"

        e = lab.build_ecmp(L, ["vipd"] * 3, vipd_edit=edit)
        bird, fabric, nodes = e.bird, e.topo.fabric, e.topo.nodes
        n1, n2 = nodes[0], nodes[1]
        v1, v2 = e.speakers[0], e.speakers[1]
        lab.log(f"3-way ECMP after {e.times['ecmp']:.2f}s")
        every4 = sorted(n.v4 for n in nodes)
        every6 = sorted((n.v6 for n in nodes), key=lambda a: lab._addr_key(a))
        p = bird.path_from(lab.VIP4, n1.v4)
        lab.check(p and GS not in p["communities"] and p["localPref"] == 100,
                  f"node 1's path before the drain: {p}")

        # --- vipctl withdraw --wait on node 1 --------------------------------------------------
        cap = lab.TcpCapture(L, fabric, f"n{n1.index}", name="tcpdump-n1")
        watch = PathWatch(bird, n1.v4)
        kernel: dict = {}

        def kernel_watch() -> None:
            while "stop" not in kernel:
                if "t2" not in kernel and fabric.kernel_nexthops(lab.VIP4) == every4[1:]:
                    kernel["t2"] = time.time()
                time.sleep(0.01)

        kt = threading.Thread(target=kernel_watch, daemon=True)
        kt.start()
        time.sleep(0.2)
        t_cmd = time.time()
        r = v1.vipctl_run("withdraw", "--wait", "--reason", "node replacement", timeout=30)
        t_exit = time.time()
        gone_at_exit = bird.path_from(lab.VIP4, n1.v4) is None
        time.sleep(0.3)
        watch.stop()
        kernel["stop"] = True
        kt.join(5)
        lab.log(f"vipctl withdraw --wait: exit {r.returncode} after {t_exit - t_cmd:.3f}s\n"
                f"{r.stdout.strip()}\n{r.stderr.strip()}")
        for line in v1.log_lines(r"drain|withdraw"):
            print(f"  vipd-n1 log: {line}")
        lab.check(r.returncode == 0, f"vipctl withdraw --wait should exit 0: {r.returncode}")
        reply = json.loads(r.stdout)
        lab.check(reply.get("acknowledged") is True, f"reply should say acknowledged: {reply}")
        lab.check(not watch.errors or watch.samples > 20, f"birdc polling failed: {watch.errors[:3]}")

        w_gs, w_wd = lab.wait_until(
            lambda: (lambda w: w if None not in w else None)(
                wire_times(cap, n1.v4, e.topo.fabric_v4, t_cmd)), 3, 0.1,
            lambda: f"the GS and withdrawing UPDATEs from node 1 in the capture "
            f"(have {wire_times(cap, n1.v4, e.topo.fabric_v4, t_cmd)})")
        rel = lambda t: f"{t - t_cmd:+.3f}s" if t else "never"  # noqa: E731
        lab.log(f"timeline from vipctl start ({watch.samples} birdc samples): wire GS UPDATE "
                f"{rel(w_gs)}, BIRD shows GS {rel(watch.t_gs)}, kernel at 2 next hops "
                f"{rel(kernel.get('t2'))}, wire withdraw {rel(w_wd)}, BIRD path gone "
                f"{rel(watch.t_gone)}, vipctl exit {rel(t_exit)}")
        lab.log(f"node 1's path in BIRD during GRACEFUL_SHUTDOWN: communities "
                f"{watch.gs_path and watch.gs_path['communities']} local_pref "
                f"{watch.gs_path and watch.gs_path['localPref']}")
        lab.check(w_gs is not None, "no UPDATE with 65535:0 from node 1 on the wire")
        lab.check(w_wd is not None, "no UPDATE withdrawing the VIP from node 1 on the wire")
        lab.check(w_gs < w_wd < t_exit, "wire order should be GS UPDATE < withdraw < vipctl exit")
        lab.check(w_wd - w_gs >= GS_TIME_S - 0.05,
                  f"withdraw {w_wd - w_gs:.3f}s after GS; gracefulShutdownTime is {GS_TIME_S}s")
        lab.check(watch.t_gs is not None, "BIRD never showed node 1's path with (65535,0)")
        lab.check(watch.gs_path["localPref"] == 0,
                  f"BIRD's filter should set local_pref 0 on the GS path: {watch.gs_path}")
        lab.check(lab.COMMUNITIES[0] in watch.gs_path["communities"],
                  f"the GS path keeps the configured communities: {watch.gs_path}")
        lab.check(watch.t_gone is not None and watch.t_gs < watch.t_gone,
                  "BIRD should show the GS path before the path disappears")
        lab.check(gone_at_exit, "node 1's path should be gone from BIRD when vipctl exits")
        lab.check(kernel.get("t2") and kernel["t2"] < w_wd,
                  "the kernel ECMP route should drop node 1 during GRACEFUL_SHUTDOWN (local_pref "
                  "0 paths are not merged), before the withdraw")
        lab.check(fabric.kernel_nexthops(lab.VIP4) == every4[1:],
                  f"{lab.VIP4} should be via 2 next hops: {fabric.route_show(lab.VIP4)}")
        lab.wait_until(lambda: fabric.kernel_nexthops(lab.VIP6) == every6[1:], 5, 0.05,
                       lambda: f"{lab.VIP6} via 2 next hops: {fabric.route_show(lab.VIP6)}")
        lab.check(bird.path_from(lab.VIP6, n1.v4) is None, "node 1's IPv6 path should be gone")
        print(fabric.route_show(lab.VIP4) + fabric.route_show(lab.VIP6), flush=True)

        st = v1.status()
        lab.check(st["withdrawn"]["active"] is True and
                  st["withdrawn"]["reason"] == "node replacement", f"withdrawn: {st['withdrawn']}")
        lab.check(v1.metric("vipd_withdrawn") == 1, "vipd_withdrawn should be 1")
        lab.wait_until(lambda: not n1.ns.address_entries("lo", lab.VIP4)
                       and not n1.ns.address_entries("lo", lab.VIP6), 5, 0.05,
                       lambda: f"vipd to unbind the VIPs on node 1: {n1.ns.addr_show('lo')}")
        lab.log(f"status: withdrawn {st['withdrawn']}, lastDrainResult {st['lastDrainResult']!r}")

        # --- restart: still withdrawn ---------------------------------------------------------
        v1.restart(signal.SIGTERM)
        lab.wait_established(bird, [n1.v4], 30)
        lab.wait_never(lambda: bird.path_from(lab.VIP4, n1.v4) or bird.path_from(lab.VIP6, n1.v4)
                       or n1.ns.address_entries("lo", lab.VIP4), RESTART_WATCH_S, 0.1,
                       "the restarted, withdrawn vipd announcing or binding a VIP")
        st = v1.status()
        lab.log(f"restarted node 1: Established, nothing announced for {RESTART_WATCH_S}s; "
                f"withdrawn {st['withdrawn']}; VIP reason {v1.vip_status(lab.VIP4)['reason']!r}")
        lab.check(st["withdrawn"]["active"] is True, f"withdrawn after restart: {st['withdrawn']}")
        print(v1.vipctl("status"), flush=True)

        # --- vipctl announce ------------------------------------------------------------------
        t0 = time.monotonic()
        r = v1.vipctl_run("announce")
        lab.log(f"vipctl announce: exit {r.returncode}: {r.stdout.strip()} {r.stderr.strip()}")
        lab.check(r.returncode == 0, f"vipctl announce should exit 0: {r.returncode}")
        lab.wait_until(lambda: fabric.kernel_nexthops(lab.VIP4) == every4
                       and fabric.kernel_nexthops(lab.VIP6) == every6, 10, 0.05,
                       lambda: f"3 next hops again: {fabric.route_show(lab.VIP4)}")
        lab.log(f"3-way ECMP again {time.monotonic() - t0:.2f}s after vipctl announce")
        p = bird.path_from(lab.VIP4, n1.v4)
        lab.check(p and GS not in p["communities"] and p["localPref"] == 100,
                  f"node 1's path after announce should be unmarked: {p}")
        lab.check(v1.status()["withdrawn"]["active"] is False, "withdrawn should be cleared")

        # --- SIGTERM on node 2 ----------------------------------------------------------------
        watch = PathWatch(bird, n2.v4)
        time.sleep(0.1)
        t0 = time.time()
        v2.proc.signal(signal.SIGTERM)
        rc = v2.wait_exit(DRAIN_BOUND_S)
        dt = time.time() - t0
        watch.stop()
        rel2 = lambda t: f"{t - t0:+.3f}s" if t else "never"  # noqa: E731
        lab.log(f"node 2: exit {rc} {dt:.2f}s after SIGTERM; BIRD saw GS {rel2(watch.t_gs)} and "
                f"the path gone {rel2(watch.t_gone)} after SIGTERM")
        lab.check(rc == 0, f"vipd should exit 0 on SIGTERM, got {rc}")
        lab.check(watch.t_gs is not None and watch.t_gone is not None
                  and watch.t_gs < watch.t_gone, "SIGTERM: BIRD should see GS, then the withdraw")
        detail = lab.wait_until(lambda: (lambda t: t if SHUTDOWN_TEXT in t else None)(
            bird.protocol_all(n2.v4)), 5, 0.1,
            lambda: f"BIRD to show {SHUTDOWN_TEXT!r}: {bird.protocol_all(n2.v4)}")
        print(detail.rstrip(), flush=True)
        rest = [n1.v4, nodes[2].v4]
        lab.wait_until(lambda: fabric.kernel_nexthops(lab.VIP4) == rest, 5, 0.05,
                       lambda: f"{lab.VIP4} via {rest}: {fabric.route_show(lab.VIP4)}")


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries + lab.TcpCapture.binaries, vipd=True)
