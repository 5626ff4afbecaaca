#!/usr/bin/env python3
"""e2e, real cluster (issue 41): Kubernetes sees and steers vipd on day 2, and never depends on
it. The three-node cluster of tests/e2e/cluster.py after day 0, then the DaemonSet (`kubectl
apply -k` of an overlay of manifests/: the CRD, RBAC and admission policy of manifests/kube come
with it); BIRD sends every path back (ADD-PATH), so each vipd sees the others.

1. `kubectl get vipdnodes` shows the three nodes announcing, each with the fabric's count (3),
   written by that node's own pod through the vipd service account's token.
2. The Node annotation `vipd.io/withdraw` on node 1, then node 2: each node's path leaves the
   fabric and its VipdNode says WithdrawnByNode; `vipctl announce` on node 1 does not override
   it (exit 5). On node 3, the last announcer: refused. Its path stays, an Event
   WithdrawRefused is on the Node, its VipdNode's Announcing condition says WithdrawRefused.
   The annotations removed: all three announce again (node 3 never left).
3. The API cut off for a minute: every packet to and from each apiserver at its node's address
   (the link's way to it) is dropped, both ways; the health check uses 127.0.0.1 and keeps
   passing, and the VIP still reaches the API. Meanwhile the
   annotation is put on node 1 through the VIP (the API itself is up). Asserts: no change of
   the fabric's route for the whole minute, every vipd answers `vipctl status` and kept its
   container (restart count 0). Once the cut ends, node 1 sees the request and withdraws, and
   its VipdNode says so within 30 s; then the annotation goes and node 1 returns.
4. A token of the vipd service account bound to node 1's pod writes node 1's VipdNode status,
   and is refused (403, by the admission policy) when it writes node 2's.
"""
import json
import os
import time

import cluster  # first: it puts bench/ on the path (pods does)
import lab
import pods

CUT_S = 60
CATCH_UP_S = 30
# Where kubectl runs: the client network, through the VIP (set by test()). Node 1's namespace
# loses its local VIP when node 1 is withdrawn.
CLIENT = None


def vipdnodes(C: cluster.Cluster) -> dict[str, dict]:
    """{node: VipdNode status} as `kubectl get vipdnodes` has them."""
    got = C.get("vipdnodes", ns=CLIENT)
    if "error" in got:
        lab.log(f"kubectl get vipdnodes: {got['error'].strip()[-300:]}")
    return {o["metadata"]["name"]: o.get("status", {}) for o in got["items"]}


def condition(status: dict, kind: str) -> dict:
    return next((c for c in status.get("conditions", []) if c.get("type") == kind), {})


def announcing(status: dict) -> str:
    return condition(status, "Announcing").get("status", "")


def annotate(C: cluster.Cluster, node: str, reason: str = "") -> None:
    value = [f"vipd.io/withdraw={reason}"] if reason else ["vipd.io/withdraw-"]
    C.kubectl("annotate", "--overwrite", "node", node, *value, ns=CLIENT)


def hops_now(monitor) -> set[str]:
    events = monitor.events
    return set(events[-1][1]) if events else set()


def events_for(C: cluster.Cluster, node: str, reason: str) -> list[dict]:
    got = C.get("events", "-n", "default", "--field-selector",
                f"involvedObject.name={node},reason={reason}", ns=CLIENT)
    return got["items"]


def day2(C: cluster.Cluster) -> None:
    C.mark_control_plane()
    C.kubectl("apply", "-k", cluster.daemonset_overlay(C, C.version, [], hashed=True),
              timeout=60)
    lab.wait_until(lambda: C.pods_ready("kube-system", "vipd-", len(C.nodes) * 2), 240, 1.0,
                   lambda: f"a DaemonSet pod Ready beside each static pod: "
                   f"{C.pod_phases('kube-system')}")
    for cn in C.nodes:
        lab.wait_until(lambda cn=cn: cn.vipctl_status().get("mode") == "daemonset", 60, 0.5,
                       lambda cn=cn: f"{cn.name}: the DaemonSet's vipd active")


def steer(C: cluster.Cluster, monitor) -> None:
    n1, n2, n3 = C.nodes
    for cn in (n1, n2):
        t0 = time.time()
        annotate(C, cn.name, f"replacing {cn.name}")
        left = monitor.wait(lambda h, cn=cn: cn.node.v4 not in h, t0, 60,
                            f"{cn.name}'s path leaving once annotated")
        lab.wait_until(lambda cn=cn: condition(vipdnodes(C).get(cn.name, {}), "Announcing")
                       .get("reason") == "WithdrawnByNode", CATCH_UP_S, 1.0,
                       lambda cn=cn: f"{cn.name}'s VipdNode says WithdrawnByNode: "
                       f"{vipdnodes(C).get(cn.name)}")
        print(f"annotation on {cn.name}: its path left the fabric {left - t0:.1f} s later")
    p = n1.host.run([lab.vipd_binary("vipctl"), "announce"], check=False)
    lab.check(p.returncode == 5 and "vipd.io/withdraw" in p.stderr + p.stdout,
              f"vipctl announce does not override the annotation (exit 5): {p.returncode} "
              f"{p.stdout} {p.stderr}")
    t0 = time.time()
    annotate(C, n3.name, "the last one")
    refused = lab.wait_until(lambda: events_for(C, n3.name, "WithdrawRefused"), 30, 1.0,
                             lambda: f"an Event WithdrawRefused on {n3.name}: "
                             f"{C.get('events', '-n', 'default', ns=CLIENT).get('items', [])[-5:]}")
    lab.wait_until(lambda: condition(vipdnodes(C).get(n3.name, {}), "Announcing")
                   .get("reason") == "WithdrawRefused", CATCH_UP_S, 1.0,
                   lambda: f"{n3.name}'s VipdNode says WithdrawRefused: "
                   f"{vipdnodes(C).get(n3.name)}")
    time.sleep(3)  # the request stands and is asked again every second: still refused
    changes = [(round(t - t0, 2), sorted(h)) for t, h in monitor.events if t >= t0]
    lab.check(not changes and hops_now(monitor) == {n3.node.v4},
              f"the last announcer stays: {changes} {hops_now(monitor)}")
    print(f"annotation on {n3.name}, the last announcer: refused, Event "
          f"{refused[0].get('message', '')!r}")
    t1 = time.time()
    for cn in C.nodes:
        annotate(C, cn.name)
    every = {cn.node.v4 for cn in C.nodes}
    back = monitor.wait(lambda h: every <= h, t1, 60, "every node's path back")
    lab.wait_until(lambda: all(announcing(s) == "True" for s in vipdnodes(C).values()),
                   CATCH_UP_S, 1.0, lambda: f"three VipdNodes announcing: {vipdnodes(C)}")
    print(f"annotations removed: every path back {back - t1:.1f} s later")


def cut(C: cluster.Cluster, on: bool) -> None:
    """Drops (on) or lets through again every packet to and from each apiserver at its node's
    address, both ways (the link's way to the API; the watch in flight hangs, as on a real
    partition). 127.0.0.1 (the health check) and the VIP (kubectl from the client) stay open."""
    for cn in C.nodes:
        if on:
            port = cluster.APISERVER_PORT
            script = (f"table inet vipd_cut {{\n chain out {{\n"
                      f"  type filter hook output priority 0;\n"
                      f"  ip daddr {cn.node.v4} tcp dport {port} drop\n"
                      f"  ip saddr {cn.node.v4} tcp sport {port} drop\n }}\n}}\n")
            lab.run(cn.node.ns.argv(["nft", "-f", "-"]), input=script)
        else:
            lab.run(cn.node.ns.argv(["nft", "delete", "table", "inet", "vipd_cut"]), check=False)


def restarts(C: cluster.Cluster) -> dict[str, int]:
    return {cn.name: sum(c.get("restartCount", 0) for c in
                         cn.pod("vipd-").get("status", {}).get("containerStatuses", []))
            for cn in C.nodes}


def api_away(C: cluster.Cluster, monitor, client) -> None:
    n1 = C.nodes[0]
    before = restarts(C)
    t0 = time.time()
    cut(C, True)
    try:
        time.sleep(5)
        annotate(C, n1.name, "asked while vipd cannot see the API")
        deadline = t0 + CUT_S
        while time.time() < deadline:
            for cn in C.nodes:
                lab.check(cn.vipctl_status().get("vips"), f"{cn.name}'s vipd answers during "
                          f"the cut")
            time.sleep(5)
        linked = {cn.name: cn.vipctl_status().get("kubernetes", {}).get("connected")
                  for cn in C.nodes}
    finally:
        cut(C, False)
    t1 = time.time()
    changes = [(round(t - t0, 2), sorted(h)) for t, h in monitor.events if t0 <= t <= t1]
    lab.check(not changes, f"no change of the fabric's route while the API was away: {changes}")
    lab.check(not any(linked.values()), f"every link says it is not connected: {linked}")
    gone = monitor.wait(lambda h: n1.node.v4 not in h, t1, CATCH_UP_S,
                        "node 1 withdrawing once it sees the annotation")
    lab.wait_until(lambda: condition(vipdnodes(C).get(n1.name, {}), "Announcing")
                   .get("reason") == "WithdrawnByNode", CATCH_UP_S - (time.time() - t1), 0.5,
                   lambda: f"node 1's VipdNode right within {CATCH_UP_S} s of the API's "
                   f"return: {vipdnodes(C).get(n1.name)}")
    caught_up = time.time() - t1
    after = restarts(C)
    lab.check(after == before, f"no vipd restarted: {before} -> {after}")
    print(f"API away for {t1 - t0:.0f} s: 0 route changes, every vipd running; after its "
          f"return node 1 saw the annotation and withdrew in {gone - t1:.1f} s, its VipdNode "
          f"right {caught_up:.1f} s after")
    annotate(C, n1.name)
    every = {cn.node.v4 for cn in C.nodes}
    monitor.wait(lambda h: every <= h, time.time() - 1, 60, "node 1 back")


def forged_write(C: cluster.Cluster, client) -> None:
    """A token bound to node 1's vipd pod writes node 1's VipdNode and not node 2's."""
    n1, n2 = C.nodes[0], C.nodes[1]
    pod = n1.pod("vipd-")
    token = C.kubectl("--namespace", "kube-system", "create", "token", "vipd", "--bound-object-kind",
                      "Pod", "--bound-object-name", pod["metadata"]["name"],
                      "--bound-object-uid", pod["metadata"]["uid"]).stdout.strip()

    def patch(node: str) -> tuple[int, str]:
        url = (f"https://{cluster.VIP}:{cluster.APISERVER_PORT}/apis/vipd.io/v1alpha1/"
               f"vipdnodes/{node}/status")
        p = lab.run(client.argv(["curl", "-sS", "--max-time", "10", "--cacert", C.ca_file,
                                 "-o", "/dev/stdout", "-w", "\n%{http_code}", "-X", "PATCH",
                                 "-H", "Content-Type: application/merge-patch+json",
                                 "-H", f"Authorization: Bearer {token}",
                                 "--data", json.dumps({"status": {"version": "forged"}}), url]),
                    check=False, timeout=15)
        body, _, code = p.stdout.rpartition("\n")
        return int(code or 0), body

    own, own_body = patch(n1.name)
    other, other_body = patch(n2.name)
    print(f"a token bound to {n1.name}'s pod: its own VipdNode -> {own}, {n2.name}'s -> {other}")
    lab.check(own == 200, f"node 1's token writes node 1's VipdNode: {own} {own_body[-500:]}")
    lab.check(other == 403 and "only the VipdNode of its own node" in other_body,
              f"node 1's token is refused on node 2's VipdNode: {other} {other_body[-500:]}")


def test() -> None:
    with lab.Lab("cluster-kube") as L:
        global CLIENT
        C, client, monitor = cluster.up(L)
        CLIENT = client
        C.kubectl_ns = client
        C.day0(monitor)
        lab.wait_until(lambda: C.ready_nodes() == {cn.name for cn in C.nodes}, 180, 1.0,
                       lambda: f"three Ready nodes: {C.ready_nodes()}")
        t0 = time.time()
        day2(C)
        lab.wait_until(lambda: len(vipdnodes(C)) == 3 and all(
            announcing(s) == "True" and [v.get("fabricAnnouncers") for v in s.get("vips", [])]
            == [3] for s in vipdnodes(C).values()), 60, 1.0,
            lambda: f"three VipdNodes announcing, the fabric counting 3: {vipdnodes(C)}")
        table = C.kubectl("get", "vipdnodes", ns=client).stdout
        print(f"kubectl get vipdnodes, {time.time() - t0:.1f} s after the DaemonSet's apply:\n"
              f"{table}")
        lab.check(table.count("True") == 3, f"the printer columns say who announces: {table}")
        steer(C, monitor)
        api_away(C, monitor, client)
        forged_write(C, client)


if __name__ == "__main__":
    lab.main(test, binaries=pods.BINARIES + ["bird", "birdc", "openssl", "ctr", "curl", "nft"],
             vipd=True)
