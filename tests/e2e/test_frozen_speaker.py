#!/usr/bin/env python3
"""e2e: a frozen speaker does not keep the node out of the fabric (issue 43). The lab of
test_takeover (a BIRD fabric, node 2 standalone, node 1's static-pod instance and a daemonset
instance that took over from it), then:

1. the daemonset instance, which speaks, is frozen (SIGSTOP). BIRD's hold timer (9 s) takes node
   1 out; the static-pod instance on standby sees no Established session for longer than the hold
   time, finds the holder stopped (same PID namespace, state T, holding the speaker lock in
   /proc/locks), kills it (SIGKILL: it can never wake as a second speaker) and takes the lock;
2. the static-pod instance is frozen just after it took the lock (the test polls speaker.json
   every 5 ms and stops it the moment it names it);
3. the kubelet's answer to the killed daemonset pod, a new daemonset instance, starts: its
   handoff request to the frozen holder gets no answer; it sees the same silence, kills the
   frozen static-pod instance and takes the node.

Asserts: each frozen holder is killed (SIGKILL) before anyone else holds the lock, so node 1 never
has two speakers; node 1's next hop comes back; node 2 keeps the VIP in the fabric throughout;
the fences are logged and counted (status handoff.fenced). Before issue 43 step 1 never ended:
the standby reported the silent holder and waited for the kubelet.
"""
import json
import os
import signal
import time

import lab
import test_takeover

HOLD_S = 9  # the lab's hold time: how long a silent holder is given


def lock_holder_pid(run_dir: str) -> int:
    try:
        with open(os.path.join(run_dir, "speaker.json")) as f:
            return int(json.load(f).get("pid", 0))
    except (OSError, ValueError):
        return 0


def killed(v: lab.Vipd, timeout: float) -> bool:
    lab.wait_until(lambda: not v.proc.alive(), timeout, 0.02, f"{v.name} to be gone")
    return v.proc.popen.returncode == -signal.SIGKILL


def test() -> None:
    with lab.Lab("frozen-speaker") as L:
        topo, n1, n2, bird, other, static, ds_cfg = test_takeover.start_lab(L, graceful_restart=True)
        ds, _ = test_takeover.takeover(L, topo, n1, bird, static, ds_cfg, "ds-1",
                                       expect_gapless=True)
        run_dir = L.path("n1-run")
        lab.check(lock_holder_pid(run_dir) == ds.proc.pid, "the daemonset instance holds the lock")
        poller = lab.FabricPoller(topo.fabric, n1.v4)
        frozen = []
        try:
            # 1. The speaker freezes.
            t0 = time.monotonic()
            ds.proc.signal(signal.SIGSTOP)
            frozen.append(ds)
            lab.wait_until(lambda: n1.v4 not in topo.fabric.kernel_nexthops(lab.VIP4), HOLD_S + 10,
                           0.05, "BIRD's hold timer to take the frozen node out")
            t_out = time.monotonic() - t0
            # 2. The standby fences it and takes the lock; freeze it the moment it has.
            lab.wait_until(lambda: lock_holder_pid(run_dir) == static.proc.pid, 2 * HOLD_S + 30,
                           0.005, lambda: f"the standby to take the lock from the frozen speaker "
                           f"(status {static.status()['handoff']})")
            static.proc.signal(signal.SIGSTOP)
            frozen.append(static)
            t_fenced = time.monotonic() - t0
            print(f"frozen speaker: out of the fabric {t_out:.1f}s after SIGSTOP; the standby took "
                  f"the lock {t_fenced:.1f}s after it, and was frozen at once")
            lab.check(killed(ds, 5), f"the frozen speaker was not killed with SIGKILL: exit "
                                     f"{ds.proc.popen.returncode}")
            lab.check(static.log_lines(rf"killed pid {ds.proc.pid} \(stopped, state T\)"),
                      "the standby logs the fence, naming the pid")
            # 3. The kubelet restarts the killed daemonset pod.
            t1 = time.monotonic()
            ds2 = test_takeover.start_ds(L, n1, ds_cfg, "ds-2")
            test_takeover.wait_role(ds2, "active", 2 * HOLD_S + 30)
            lab.check(killed(static, 5), f"the frozen successor was not killed with SIGKILL: exit "
                                         f"{static.proc.popen.returncode}")
            lab.wait_until(lambda: n1.v4 in topo.fabric.kernel_nexthops(lab.VIP4), 30, 0.05,
                           "node 1's next hop back in the fabric")
            t_back = time.monotonic() - t1
            print(f"frozen successor: the new daemonset instance fenced it and node 1 was back in "
                  f"the fabric {t_back:.1f}s after it started")
        finally:
            for v in frozen:
                if v.proc.alive():
                    v.proc.signal(signal.SIGCONT)
            poller.stop()
        h = ds2.status()["handoff"]
        lab.check(h["fenced"] == 1, f"the new instance counts its fence: {h}")
        lab.check(ds2.log_lines(rf"killed pid {static.proc.pid} \(stopped, state T\)"),
                  "the new instance logs the fence")
        lab.wait_until(lambda: bird.neighbor_state(n1.v4) == "Established", 15, 0.1,
                       "BIRD's session with node 1 Established")
        lab.check(ds2.vip_status(lab.VIP4)["bound"], "the VIP is bound")
        lab.check(poller.never_below(1), "node 2 kept the VIP in the fabric throughout")


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries, vipd=True)
