#!/usr/bin/env python3
"""e2e: live config, touching only what changed (issue 29 part 2).

One vipd node (AS 65001) in DaemonSet layout: the cluster file is a ConfigMap volume (the file a
symlink into `..data`, which the test swaps as the kubelet does) and the node file a host file
(rewritten by a rename, as editors do), with a TCP-MD5 key file beside it. BIRD (AS 65000) has
four sessions with the node: three IPv4 ones, 192.0.2.1, .2 (TCP-MD5) and .3 on BIRD's side
(addresses of the fabric bridge), each from its own node address (BIRD 2.0 keeps one session per
neighbour address), and one IPv6 one; every session has BFD. No change is signalled: vipd sees each in its
files; one SIGHUP at the end shows the signal takes the same path.

After each change, BIRD's state-change time ("since") of every BGP and BFD session the change
does not concern must be what it was (those sessions never went down), and the change must be
applied within APPLY_S of the file's change:
1. a community and a VIP added (ConfigMap swap): the new community on every path, the new VIP
   announced; no session reset;
2. that VIP removed: withdrawn, then unbound from the node; no session reset;
3. health settings (none -> tcp, then another interval): the check runs with them, the VIPs are
   never withdrawn; returnPath settings: the check restarts; no session reset;
4. a peer added (node file): BIRD's .3 session (and its BFD) comes up, the VIPs go out over it;
   the others untouched; then removed: BIRD sees Cease "Peer de-configured";
5. a peer's hold time: that session alone is reset (BIRD: "Other configuration change") and
   comes back with hold time 6; its BFD minRx: reset, its BFD session replaced (BIRD now sends
   every 600 ms), the other BFD sessions untouched;
6. the MD5 key file rewritten with another key (same name): that session alone is reset and
   stays down, and after a while vipd's lastError says the keys may differ; BIRD given the new
   `password` (`birdc configure`): back Established;
7. a router ID change: nothing reset, `vipctl status` (text and JSON) shows it pending a restart,
   vipd_config_pending_restart 1; reverted: 0; the node file gone for a second: no failure;
8. a broken cluster file: nothing changes, the failure is in status and metrics; fixed: good.
"""
import json
import os
import re
import shutil
import signal
import time

import lab

APPLY_S = 5.0  # a change seen in the files is applied within this
VIP_NEW = "203.0.113.20/32"
COMMUNITY_NEW = "65000:777"
OLD_KEY = "vipd-live-key-one"
NEW_KEY = "vipd-live-key-two"
MD5_HINT_S = 25  # vipd says the keys may differ after 10 s without an OPEN; BIRD is slow to care
BFD = lab.BfdTimers()  # 300 ms x 3 both sides

# BIRD's sessions with the node: name -> (BIRD's address, the node's address).
SESSIONS = {
    "p1": ("192.0.2.1", "192.0.2.11"),
    "p2": ("192.0.2.2", "192.0.2.21"),
    "p3": ("192.0.2.3", "192.0.2.31"),
    "p6": ("2001:db8::1", "2001:db8::11"),
}


class Layout:
    """The two files vipd reads: the ConfigMap-style cluster file and the host node file."""

    def __init__(self, L: lab.Lab):
        self.cm = L.path("configmap")
        os.mkdir(self.cm)
        self.generation = 0
        self.cluster = os.path.join(self.cm, "vipd.yaml")
        self.node = L.path("node.yaml")
        self.key = L.path("p2.key")

    def swap_cluster(self, config: dict) -> None:
        """What the kubelet does on a ConfigMap update: a new timestamped directory, a new
        `..data` symlink renamed over the old one, the old directory removed. The file vipd
        was given (`vipd.yaml -> ..data/vipd.yaml`) never changes."""
        self.generation += 1
        new = f"..2026_12_06_{self.generation:02d}"
        os.mkdir(os.path.join(self.cm, new))
        with open(os.path.join(self.cm, new, "vipd.yaml"), "w") as f:
            f.write(config if isinstance(config, str) else lab.to_yaml(config) + "\n")
        os.symlink(new, os.path.join(self.cm, "..data_tmp"))
        old = os.path.realpath(os.path.join(self.cm, "..data")) \
            if os.path.islink(os.path.join(self.cm, "..data")) else None
        os.rename(os.path.join(self.cm, "..data_tmp"), os.path.join(self.cm, "..data"))
        if not os.path.islink(self.cluster):
            os.symlink("..data/vipd.yaml", self.cluster)
        if old:
            shutil.rmtree(old)

    def write_node(self, config: dict) -> None:
        """An editor's save: a new file renamed over the old one."""
        tmp = self.node + ".tmp"
        with open(tmp, "w") as f:
            f.write(lab.to_yaml(config) + "\n")
        os.rename(tmp, self.node)

    def write_key(self, key: str) -> None:
        """The key file rewritten in place: the same name (and inode), another key."""
        fd = os.open(self.key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, (key + "\n").encode())
        os.close(fd)


def cluster_config(L: lab.Lab) -> dict:
    return {
        "apiVersion": "vipd.io/v1alpha1",
        "kind": "SpeakerConfiguration",
        "vips": [{"address": lab.VIP4}, {"address": lab.VIP6}],
        "communities": list(lab.COMMUNITIES),
        "largeCommunities": list(lab.LARGE_COMMUNITIES),
        "control": {"socket": L.path("vipd.sock"), "stateDir": L.path("vipd-state")},
        "drain": {"gracefulShutdownTime": "300ms", "unbindDelay": lab.UNBIND_DELAY},
        "health": {"type": "none"},
    }


def peer(name: str) -> dict:
    """vipd's peer for BIRD's session `name`."""
    bird_side, node_side = SESSIONS[name]
    return {"address": bird_side, "asn": lab.FABRIC_ASN, "sourceAddress": node_side,
            "holdTime": "9s", "connectRetryTime": "1s",
            "families": ["ipv6" if ":" in bird_side else "ipv4"], "bfd": BFD.vipd()}


def node_config(node: lab.Node, key_file: str) -> dict:
    return {
        "apiVersion": "vipd.io/v1alpha1",
        "kind": "NodeConfiguration",
        "routerId": node.v4,
        "localAsn": node.asn,
        "peers": [peer("p1"), dict(peer("p2"), passwordFile=key_file), peer("p6")],
    }


def main_test() -> None:
    with lab.Lab("live-reload") as L:
        topo = L.fabric_with_nodes(1)
        node = topo.nodes[0]
        for name in ("p2", "p3"):
            topo.fabric.add_address(topo.fabric_if, f"{SESSIONS[name][0]}/24")
            node.ns.add_address("eth0", f"{SESSIONS[name][1]}/24")
        neighbors = []
        for name, (bird_side, node_side) in SESSIONS.items():
            options = [f"local {bird_side};"]
            if name == "p2":
                options.append(f'password "{OLD_KEY}";')
            neighbors.append(lab.Neighbor(node_side, node.asn, passive=True, name=name,
                                          bird_options=options,
                                          families=["ipv6"] if ":" in bird_side else ["ipv4"]))
        bird = lab.Bird(L, topo.fabric, topo.fabric_v4, lab.FABRIC_ASN, neighbors,
                        interfaces=[topo.fabric_if], bfd=BFD)

        files = Layout(L)
        cluster = cluster_config(L)
        nodecfg = node_config(node, files.key)
        files.write_key(OLD_KEY)
        files.swap_cluster(cluster)
        files.write_node(nodecfg)
        vipd = lab.Vipd(L, node.ns, cluster, name="vipd-n1", config_path=files.cluster,
                        args=["--node-config", files.node])

        def up(*names: str) -> bool:
            return all(bird.protocol_state(n) == "Established" for n in names)

        lab.wait_until(lambda: up("p1", "p2", "p6"), 40, 0.2,
                       lambda: "p1, p2, p6 Established: " + ", ".join(
                           f"{n} {bird.protocol_state(n)}" for n in SESSIONS))
        lab.wait_until(lambda: bird.has_route(lab.VIP4) and bird.has_route(lab.VIP6), 15, 0.1,
                       "both VIPs in BIRD")
        time.sleep(1.5)  # BIRD's "since" may still move by a millisecond as channels come up

        def bfd(name: str) -> dict:
            return bird.bfd_sessions().get(SESSIONS[name][1], {"state": "absent", "since": "-"})

        since = {n: bird.protocol_row(n)[4] for n in ("p1", "p2", "p6")}
        bfd_since = {n: bfd(n)["since"] for n in ("p1", "p2", "p6")}
        lab.check(all(bfd(n)["state"] == "Up" for n in bfd_since), f"BFD Up: {bird.bfd_sessions()}")
        lab.log(f"sessions up; BIRD's state-change times: BGP {since}, BFD {bfd_since}")

        def untouched(names, after: str) -> None:
            for n in names:
                row = bird.protocol_row(n)
                lab.check(row[-1] == "Established" and
                          lab.bird_since_delta(row[4], since[n]) < 0.5,
                          f"after {after}: BIRD's session {n} went down or restarted: "
                          f"{' '.join(row)} (since {since[n]} before)")
                b = bfd(n)
                lab.check(b["state"] == "Up" and lab.bird_since_delta(b["since"], bfd_since[n]) < 0.5,
                          f"after {after}: BIRD's BFD session for {n} went down or restarted: "
                          f"{b} (since {bfd_since[n]} before)")

        def reset(name: str, after: str, timeout: float = 30) -> None:
            """The session went down and came back: a later "since", Established."""
            lab.wait_until(lambda: bird.protocol_state(name) == "Established" and
                           lab.bird_since_delta(bird.protocol_row(name)[4], since[name]) > 0.5,
                           timeout, 0.2, lambda: f"{name} to come back after {after}: "
                           f"{' '.join(bird.protocol_row(name))}")
            since[name] = bird.protocol_row(name)[4]

        def bird_received(name: str, what: str) -> str:
            """BIRD's log line saying protocol name received the NOTIFICATION what."""
            return lab.wait_until(lambda: next(
                (ln for ln in bird.proc.log_text().splitlines()
                 if re.search(rf"\b{name}: Received: {what}", ln, re.IGNORECASE)), None), 5, 0.1,
                f"BIRD to log that {name} received {what}")

        def applied(what: str, predicate, t0: float) -> float:
            lab.wait_until(predicate, APPLY_S, 0.05, f"{what} within {APPLY_S}s of the change")
            took = time.monotonic() - t0
            lab.log(f"{what}: applied {took:.2f}s after the file changed")
            return took

        def reload_count() -> int:
            return len(vipd.log_lines(r"file change seen; re-reading"))

        # 1. A community and a VIP added, in one ConfigMap update, no signal.
        cluster["communities"] = list(lab.COMMUNITIES) + [COMMUNITY_NEW]
        cluster["vips"].append({"address": VIP_NEW})
        t0 = time.monotonic()
        files.swap_cluster(cluster)
        applied("the ConfigMap update (a new community, a new VIP)",
                lambda: len(bird.paths(VIP_NEW)) == 2 and all(
                    COMMUNITY_NEW in p["communities"] for p in bird.paths(lab.VIP4)), t0)
        lab.check(len(bird.paths(lab.VIP4)) == 2,
                  f"VIP4 over p1 and p2: {bird.paths(lab.VIP4)}")
        lab.check(node.ns.address_entries("lo", VIP_NEW), f"{VIP_NEW} bound on the node")
        untouched(("p1", "p2", "p6"), "a community and a VIP added")
        status = vipd.status()["config"]
        lab.check(status.get("lastReloadTrigger") == "file change" and
                  status.get("lastReloadResult") == "applied" and
                  {c["key"] for c in status["lastApplied"]} ==
                  {"communities", f"vips[{VIP_NEW}]"},
                  f"status config after the ConfigMap update: {status}")
        lab.check(reload_count() == 1, f"one reload for one update: {reload_count()}")

        # 2. The VIP removed: withdrawn, then unbound.
        cluster["vips"].pop()
        t0 = time.monotonic()
        files.swap_cluster(cluster)
        applied(f"{VIP_NEW} withdrawn", lambda: not bird.has_route(VIP_NEW), t0)
        lab.wait_until(lambda: not node.ns.address_entries("lo", VIP_NEW), APPLY_S, 0.05,
                       f"{VIP_NEW} unbound after the withdrawal")
        lab.check(vipd.log_lines(rf"vip {re.escape(VIP_NEW)}: withdrawn and unbound"),
                  "vipd logs the unbinding")
        lab.check(bird.has_route(lab.VIP4) and bird.has_route(lab.VIP6), "the other VIPs stay")
        untouched(("p1", "p2", "p6"), "a VIP removed")

        # 3. Health settings: the check restarts, the gate does not flap; returnPath likewise.
        watch_from = time.monotonic()
        gaps = []
        cluster["health"] = {"type": "tcp", "address": lab.METRICS_LISTEN, "interval": "500ms",
                             "timeout": "250ms", "rise": 2, "fall": 3}
        files.swap_cluster(cluster)
        lab.wait_until(lambda: vipd.status()["health"]["type"] == "tcp" and
                       vipd.status()["health"]["checks"] >= 3, 10, 0.1,
                       "the tcp check running")
        cluster["health"]["interval"] = "300ms"
        cluster["returnPath"] = {"interval": "3s"}
        files.swap_cluster(cluster)
        lab.wait_until(lambda: vipd.log_lines(r"returnPath\.interval changed from 2s to 3s: "
                                              r"applied"), APPLY_S, 0.1, "the returnPath change")
        while time.monotonic() - watch_from < 6:
            if not (bird.has_route(lab.VIP4) and bird.has_route(lab.VIP6)):
                gaps.append(round(time.monotonic() - watch_from, 2))
            time.sleep(0.05)
        health = vipd.status()["health"]
        lab.check(not gaps and health["healthy"],
                  f"the VIPs left BIRD while the health settings changed: {gaps}; {health}")
        lab.check(vipd.log_lines(r"probing tcp .* every 300ms .*reloaded: the gate stays open"),
                  "vipd logs the checker's restart with the gate kept open")
        lab.check(vipd.log_lines(r"checking that VIP-sourced packets get answers: every 3s"),
                  "the return-path check restarted with the new interval")
        untouched(("p1", "p2", "p6"), "health and returnPath settings")

        # 4. A peer added, then removed (node file, renamed over).
        nodecfg["peers"].append(peer("p3"))
        t0 = time.monotonic()
        files.write_node(nodecfg)
        lab.wait_until(lambda: bird.protocol_state("p3") == "Established", APPLY_S + 5, 0.1,
                       lambda: f"p3 Established: {bird.protocol_state('p3')}")
        lab.log(f"peer added: Established {time.monotonic() - t0:.2f}s after the change")
        lab.wait_until(lambda: len(bird.paths(lab.VIP4)) == 3, 5, 0.1,
                       "VIP4 over p3 too (its BFD Up: vipd holds the VIPs back until then)")
        lab.check(bfd("p3")["state"] == "Up", f"p3's BFD: {bfd('p3')}")
        untouched(("p1", "p2", "p6"), "a peer added")
        nodecfg["peers"].pop()
        files.write_node(nodecfg)
        lab.wait_until(lambda: bird.protocol_state("p3") != "Established", APPLY_S, 0.05,
                       "p3 down after its removal")
        lab.log(f"peer removed: BIRD logged {bird_received('p3', 'Peer de-?configured')!r}")
        untouched(("p1", "p2", "p6"), "a peer removed")

        # 5. A peer's hold time: that session alone is reset.
        nodecfg["peers"][0]["holdTime"] = "6s"
        nodecfg["peers"][0]["keepaliveTime"] = "2s"
        files.write_node(nodecfg)
        reset("p1", "p1's hold time changed")
        lab.log(f"p1 reset: BIRD logged {bird_received('p1', 'Other configuration change')!r}")
        detail = bird.protocol_detail("p1")
        lab.check(re.search(r"Hold timer:\s+\S+/6\b", detail), f"hold time 6 now: {detail}")
        lab.check(vipd.log_lines(r"peer 192\.0\.2\.1: reset for a config change \(holdTime 9s "
                                 r"-> 6s, keepaliveTime 3s -> 2s\)"),
                  "vipd logs why it reset that session")
        untouched(("p2", "p6"), "p1's hold time")
        bfd_since["p1"] = bfd("p1")["since"]

        # 5b. p1's BFD settings: p1 reset, its BFD session replaced; the other BFD sessions stay.
        nodecfg["peers"][0]["bfd"] = dict(BFD.vipd(), minRx="600ms")
        files.write_node(nodecfg)
        reset("p1", "p1's BFD minRx changed")
        lab.wait_until(lambda: bfd("p1")["state"] == "Up" and bfd("p1")["intervalMs"] == 600, 10,
                       0.1, lambda: f"BIRD sending every 600 ms to p1: {bfd('p1')}")
        lab.check(vipd.log_lines(r"peer 192\.0\.2\.1: reset for a config change \(bfd\.minRx "
                                 r"300ms -> 600ms\).*its BFD session is replaced"),
                  "vipd logs the BFD change as the reason")
        bfd_since["p1"] = bfd("p1")["since"]
        untouched(("p2", "p6"), "p1's BFD settings")

        # 6. The MD5 key file rewritten with another key: that session alone is reset, stays
        #    down (BIRD has the old key), says why, and comes back once BIRD has the new one.
        files.write_key(NEW_KEY)
        lab.wait_until(lambda: bird.protocol_state("p2") != "Established", APPLY_S, 0.05,
                       "p2 reset after its key changed")
        lab.check(vipd.log_lines(r"peer 192\.0\.2\.2: reset for a config change \(TCP-MD5 key "),
                  "vipd logs the key change as the reason")
        hint = lab.wait_until(lambda: (lambda e: e if "keys may differ" in e else None)(
            vipd.peer_status("192.0.2.2")["lastError"]), MD5_HINT_S, 0.5,
            lambda: f"p2's lastError to say the keys may differ: "
                    f"{vipd.peer_status('192.0.2.2')['lastError']}")
        lab.log(f"p2 lastError: {hint}")
        untouched(("p1", "p6"), "p2's key")
        bird.configure(lambda text: text.replace(f'password "{OLD_KEY}";',
                                                 f'password "{NEW_KEY}";'))
        bird_received("p2", "Other configuration change")
        reset("p2", "the new key on both sides", timeout=60)  # vipd's retries have backed off
        lab.wait_until(lambda: bfd("p2")["state"] == "Up", 10, 0.1, "p2's BFD Up")
        bfd_since["p2"] = bfd("p2")["since"]  # BIRD restarted p2, and the BFD it asks for
        untouched(("p1", "p6"), "BIRD's new key for p2")

        # 7. A router ID change: pending a restart, nothing reset.
        nodecfg["routerId"] = "192.0.2.99"
        files.write_node(nodecfg)
        pending = lab.wait_until(lambda: vipd.status()["config"]["pendingRestart"], APPLY_S,
                                 0.1, "the router ID pending a restart")
        lab.check(pending == [{"key": "routerId", "running": node.v4, "file": "192.0.2.99",
                               "reason": "needs a restart"}], f"pendingRestart: {pending}")
        text = vipd.vipctl("status")
        lab.check(re.search(rf"PENDING routerId: running {re.escape(node.v4)}, the file says "
                            r"192\.0\.2\.99 \(needs a restart\)", text),
                  f"vipctl status shows the pending change:\n{text}")
        lab.check(re.search(r"last reload .*\(file change\): pending restart", text),
                  f"vipctl status shows the last reload:\n{text}")
        lab.check(vipd.metric("vipd_config_pending_restart") == 1, "the gauge counts it")
        lab.check(vipd.status()["routerId"] == node.v4, "still running with the old router ID")
        untouched(("p1", "p2", "p6"), "a router ID change")
        nodecfg["routerId"] = node.v4
        files.write_node(nodecfg)
        lab.wait_until(lambda: vipd.metric("vipd_config_pending_restart") == 0, APPLY_S, 0.1,
                       "nothing pending once reverted")

        # A file gone for a moment (a careless editor, a volume remounted) is no failure.
        failures = vipd.status()["config"]["reloadFailures"]
        os.rename(files.node, files.node + ".away")
        time.sleep(1.0)
        os.rename(files.node + ".away", files.node)
        time.sleep(1.5)
        lab.check(vipd.log_lines(r"node\.yaml is gone; waiting up to 5s for it to come back"),
                  "vipd logs that it waits for the file")
        lab.check(vipd.status()["config"]["reloadFailures"] == failures,
                  f"a file gone for 1 s failed a reload: {vipd.status()['config']}")
        untouched(("p1", "p2", "p6"), "the node file gone for a moment")

        # 8. A broken cluster file: nothing changes; then fixed.
        before = vipd.status()["config"]
        files.swap_cluster("apiVersion: vipd.io/v1alpha1\nkind: SpeakerConfiguration\n"
                           "vips: [{address: 203.0.113.10/33}]\n")
        lab.wait_until(lambda: not vipd.status()["config"]["lastReloadSuccessful"], APPLY_S,
                       0.1, "the broken file reported")
        status = vipd.status()["config"]
        lab.check(status["lastReloadResult"] == "failed" and
                  status["loadedAt"] == before["loadedAt"] and status["lastReloadError"],
                  f"a broken file changes nothing: {status}")
        lab.check(vipd.metric("vipd_config_last_reload_successful") == 0, "the metric says so")
        lab.check(re.search(r"LAST RELOAD FAILED", vipd.vipctl("status")), "vipctl says so")
        lab.check(bird.has_route(lab.VIP4) and bird.has_route(lab.VIP6), "the VIPs stay")
        untouched(("p1", "p2", "p6"), "a broken file")
        files.swap_cluster(cluster)
        lab.wait_until(lambda: vipd.status()["config"]["lastReloadSuccessful"], APPLY_S, 0.1,
                       "the fixed file loads")

        # The signal takes the same path: an unchanged file is nothing to apply.
        vipd.proc.signal(signal.SIGHUP)
        lab.wait_until(lambda: vipd.log_lines(r"is valid and unchanged; nothing to apply"), 5,
                       0.1, "SIGHUP with the files unchanged")
        untouched(("p1", "p2", "p6"), "SIGHUP")
        lab.check(vipd.proc.alive(), "vipd still runs")
        print(json.dumps(vipd.status()["config"], indent=1))


if __name__ == "__main__":
    lab.main(main_test, binaries=lab.Bird.binaries, vipd=True)
