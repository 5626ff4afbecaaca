#!/usr/bin/env python3
"""e2e: a DaemonSet rollout with maxSurge, three nodes rolled one after another (issue 29 part 1).

Three nodes behind a BIRD fabric (graceful restart on); on each, vipd runs as a DaemonSet pod
would (mode daemonset, the node's /run/vipd and state directory, its own instance socket), as a
process. Each node is rolled the way a DaemonSet controller with maxSurge 1 / maxUnavailable 0
does: the new instance starts beside the old one, takes over (graceful restart), becomes ready
(`vipctl ready` on its own socket, the pod's exec readiness probe), then the old one's preStop
(`vipctl --socket <its own> withdraw --wait --transient`) and SIGTERM.

Asserts, under 50 new client connections a second through the VIP and 24 long-lived connections
(half idle, half streaming a line every 100 ms) to the nodes:
- the fabric's kernel route keeps all three nodes at every sample and `ip monitor` shows no
  change of the VIP's route during the whole rollout;
- each new instance gets the old one's answer to its yield request, although the old one hands
  the node's control socket over while answering it;
- each old instance's preStop says there is nothing to drain and it exits 0 on SIGTERM;
- 0 client requests failed, and every long-lived connection survived (idle ones answer a ping,
  streaming ones still stream);
- a successor with a config vipd refuses exits and leaves the old instance speaking; one whose
  identity differs (another VIP set) is refused the takeover, stays not ready, and the old one
  keeps speaking; one that crashes right after taking over (once it has announced) leaves the
  node to the old one, which takes it back (graceful restart): no route change either;
- at the end the last instance on node 1 still announces: its preStop drains and the node leaves
  the route.
"""
import json
import os
import signal
import sys
import time

import lab

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(lab.E2E_DIR)), "bench"))
import benchlab  # noqa: E402  (add_client, run_load, RouteMonitor)

HERE = os.path.dirname(os.path.abspath(__file__))
HOLD_PORT = 7070
LOAD_RATE = 50
VIP4_ADDR = lab.VIP4.split("/")[0]


def ds_config(L: lab.Lab, node: lab.Node, name: str) -> dict:
    """A DaemonSet pod's config on node: the node's shared paths, the instance's own socket."""
    c = lab.vipd_config(L, node, node.asn, lab.FABRIC_V4, lab.FABRIC_ASN, name)
    run = L.path(f"n{node.index}-run")
    c["mode"] = "daemonset"
    c["handoff"] = {"dir": run, "restartTime": "5s"}
    c["control"] = {"socket": os.path.join(run, "vipd.sock"),
                    "instanceSocket": L.path(f"{name}-instance.sock"),
                    "stateDir": L.path(f"n{node.index}-state")}
    c["metrics"] = {"listen": "127.0.0.1:9472", "healthListen": "127.0.0.1:9474"}
    return c


class Instance:
    def __init__(self, L: lab.Lab, node: lab.Node, name: str, config=None):
        self.node, self.name = node, name
        self.config = config or ds_config(L, node, name)
        self.vipd = lab.Vipd(L, node.ns, self.config, name=name)
        # vipctl in "the pod" reaches this instance: its own socket.
        if isinstance(self.config, dict):
            self.vipd.socket = self.config["control"]["instanceSocket"]

    def status(self) -> dict:
        return self.vipd.status()

    def role(self) -> str:
        try:
            return self.status()["role"]
        except Exception:  # noqa: BLE001 - not answering yet
            return "not answering"

    def ready(self) -> bool:
        return self.vipd.vipctl_run("ready").returncode == 0

    def pre_stop(self) -> str:
        r = self.vipd.vipctl_run("withdraw", "--wait", "--transient", timeout=30)
        lab.check(r.returncode == 0, f"{self.name}'s preStop: {r.returncode} {r.stderr}")
        return r.stdout

    def sigterm(self) -> int:
        self.vipd.proc.signal(signal.SIGTERM)
        return self.vipd.wait_exit(30)


def roll(old: Instance, new: Instance) -> float:
    t0 = time.monotonic()
    lab.wait_until(lambda: new.role() == "active" and new.ready(), 30, 0.1,
                   lambda: f"{new.name} to take over and be ready: "
                   f"{new.vipd.vipctl('ready')}; {new.status().get('handoff')}")
    took = time.monotonic() - t0
    lab.check(old.role() == "standby", f"{old.name} on standby after the takeover: {old.role()}")
    lab.check(new.status()["handoff"]["gracefulRestart"],
              f"{new.name} reopened the sessions as a graceful restart")
    log = new.vipd.proc.log_text()
    lab.check("instance yielded (" in log and "handoff interrupted" not in log,
              f"{new.name} got {old.name}'s answer to its yield request (the node's control "
              f"socket is handed over after it): {log[-2000:]}")
    out = old.pre_stop()
    lab.check("nothing to drain" in out, f"{old.name}'s preStop drains nothing: {out}")
    lab.check(old.sigterm() == 0, f"{old.name} exits 0 on SIGTERM")
    return took


def test() -> None:
    with lab.Lab("rollout") as L:
        topo = L.fabric_with_nodes(3)
        nodes, fabric = topo.nodes, topo.fabric
        gr = "graceful restart on;"
        bird = lab.Bird(L, fabric, topo.fabric_v4, lab.FABRIC_ASN,
                        [lab.Neighbor(n.v4, n.asn, name=f"node{n.index}", bird_options=[gr])
                         for n in nodes], interfaces=[topo.fabric_if])
        fabric.sysctl("net.ipv4.fib_multipath_hash_policy", "1")
        current = [Instance(L, n, f"vipd-n{n.index}-a") for n in nodes]
        all4 = sorted(n.v4 for n in nodes)
        lab.wait_until(lambda: fabric.kernel_nexthops(lab.VIP4) == all4, 40, 0.1,
                       lambda: f"all three nodes in the route: {fabric.route_show(lab.VIP4)}")
        client = benchlab.add_client(L, topo)
        for n in nodes:
            L.start(n.ns, f"hold-n{n.index}", [sys.executable, os.path.join(HERE, "hold_conn.py"),
                                               "serve", VIP4_ADDR, str(HOLD_PORT),
                                               f"node{n.index}"])
        time.sleep(0.5)
        monitor = benchlab.RouteMonitor(L, fabric)
        roll_s = 45  # the whole scenario takes about 25 s; the clients must outlast it
        hold_out = L.path("hold.json")
        hold = L.start(client, "hold", [sys.executable, os.path.join(HERE, "hold_conn.py"), "hold",
                                        VIP4_ADDR, str(HOLD_PORT), "24", str(roll_s), hold_out])
        load_out = L.path("load.json")
        load = benchlab.run_load(L, client, LOAD_RATE, roll_s, 1.0, load_out)
        since = time.time()
        samples = []
        bad = []

        def sample() -> None:
            hops = fabric.kernel_nexthops(lab.VIP4)
            samples.append(hops)
            if hops != all4:
                bad.append((round(time.time() - since, 2), hops))

        def wait(seconds: float) -> None:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                sample()
                time.sleep(0.05)

        took = []
        for i, n in enumerate(nodes):
            new = Instance(L, n, f"vipd-n{n.index}-b")
            took.append(roll(current[i], new))
            current[i] = new
            sample()
            lab.log(f"node {n.index} rolled: the new instance took over in {took[-1]:.2f}s")
            wait(2)

        # A successor that cannot start: a config it refuses.
        broken = ds_config(L, nodes[0], "vipd-n1-broken")
        broken["peers"][0]["asn"] = "not a number"
        bad_instance = lab.Vipd(L, nodes[0].ns, broken, name="vipd-n1-broken")
        code = bad_instance.wait_exit(15)
        lab.check(code != 0, f"a successor with a config it refuses exits ({code})")
        wait(2)
        lab.check(current[0].role() == "active", "node 1's instance keeps speaking")

        # A successor that is refused the takeover (another VIP set): never ready.
        other = ds_config(L, nodes[0], "vipd-n1-other")
        other["vips"] = [{"address": "203.0.113.99/32", "interface": "lo"}]
        refused = Instance(L, nodes[0], "vipd-n1-other", other)
        lab.wait_until(lambda: refused.status()["handoff"].get("refused"), 20, 0.1,
                       lambda: f"the takeover refused: {refused.status().get('handoff')}")
        wait(2)
        lab.check(not refused.ready() and refused.role() == "contending",
                  f"a refused successor is not ready: {refused.role()}")
        lab.check(current[0].role() == "active", "node 1's instance keeps speaking")
        lab.check(refused.sigterm() == 0, "the refused successor exits 0 on SIGTERM")

        # A successor that crashes right after taking over: the old one takes the node back.
        # It is killed once it has announced: a crash inside the round trip between the peer's
        # Established and its first UPDATE makes BIRD drop the path it did not re-send (a
        # second restart during a graceful restart, docs/operations.md) until the take-back.
        crashing = Instance(L, nodes[1], "vipd-n2-c")

        def announced_everything() -> bool:
            st = crashing.status()
            return st["role"] == "active" and all(v["announcedToPeers"] > 0 for v in st["vips"])
        lab.wait_until(announced_everything, 30, 0.02,
                       lambda: f"the crashing successor takes over and announces: "
                       f"{crashing.status().get('vips')}")
        crashing.vipd.proc.signal(signal.SIGKILL)
        lab.wait_until(lambda: current[1].role() == "active", 15, 0.05,
                       lambda: f"node 2's previous instance takes the node back: "
                       f"{current[1].status().get('handoff')}")
        lab.check(current[1].status()["handoff"]["tookBack"] >= 1, "counted as a take-back")
        wait(3)

        scenario_s = time.time() - since
        lab.check(load.alive() and hold.alive(), f"the clients ran through the whole scenario "
                  f"({scenario_s:.1f}s; they run {roll_s}s)")
        lab.wait_until(lambda: not load.alive() and not hold.alive(), roll_s + 60, 0.5,
                       "the clients to finish")
        with open(load_out) as f:
            requests = json.load(f)["requests"]
        with open(hold_out) as f:
            held = json.load(f)
        failed = [r for r in requests if "error" in r]
        events = [(round(t - since, 3), sorted(h)) for t, h in monitor.events if t >= since]
        lab.log(f"rollout: takeovers {[round(t, 2) for t in took]}s; {len(samples)} route samples, "
                f"{len(bad)} not all three; route events {events}; requests {len(failed)} of "
                f"{len(requests)} failed; long-lived connections {held}")
        lab.check(not bad, f"the route changed during the rollout: {bad[:5]}")
        lab.check(not events, f"ip monitor saw the VIP's route change: {events}")
        lab.check(len(requests) > LOAD_RATE * 30 and not failed,
                  f"client requests failed: {failed[:5]}")
        lab.check(held["kept"] >= 6 and all(c["ok"] for c in held["idle"] + held["streaming"]),
                  f"a long-lived connection did not survive: {held}")

        # The last instance still announces: stopping it (a node going away) withdraws.
        current[0].pre_stop()
        lab.wait_until(lambda: nodes[0].v4 not in fabric.kernel_nexthops(lab.VIP4), 15, 0.05,
                       "node 1 leaves the route when its last instance drains")
        lab.check(current[0].sigterm() == 0, "and exits 0")
        print(f"FIGURES rollout takeover_s={max(took):.2f} requests={len(requests)} failed="
              f"{len(failed)} long_lived={held['kept']} route_samples={len(samples)}", flush=True)


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries, vipd=True)
