#!/usr/bin/env python3
"""e2e, real cluster (issue 39, scenarios 2, 3 and 4): day 2 on the three-node cluster of
tests/e2e/cluster.py, after day 0 (static pods announcing). One cluster for the three, in the
order a cluster lives them; the fabric's kernel route is watched with `ip monitor` throughout.

2. Day 2: the nodes marked as control-plane nodes as kubeadm marks them, then `kubectl apply -k`
   of an overlay of manifests/ (the shipped ConfigMap, the image pinned to this build with
   `images:`): the real DaemonSet controller and scheduler start a vipd pod on each node, which
   takes BGP over from the static pod; then `vipd render` with `bootstrap.enabled: false` moves
   the static pod's file out and the kubelet stops it. Asserts: no route change at the fabric
   from the apply to the static pods' end; every node's `vipctl status` names the DaemonSet's
   instance as active, the static pod's manifest is in the archive folder, and node 1's
   DaemonSet container runs as its spec says (capabilities, no_new_privs, seccomp, read-only
   root, hostPaths).
3. Rollout: a new image tag on the DaemonSet (the same image under a second name): the
   controller surges node by node (maxSurge 1, maxUnavailable 0). Asserts: 0 route changes,
   0 failed requests through the VIP (HTTPS to the apiservers, 20 a second), and a `kubectl get
   --watch` through the VIP keeps its connection. Then a rollout of a config vipd refuses at
   start (the VIP's prefix mistyped /33): the surge pod crash-loops and never becomes Ready, the
   rollout stalls with every node's old pod speaking, and re-applying the previous overlay rolls
   back; 0 route changes throughout.
4. Live config: `kubectl apply` of the ConfigMap with a community added (the overlay's
   configMapGenerator without a hash suffix, so the pods keep running): the kubelet swaps the
   volume and vipd applies only what changed. Asserts: the community reaches BIRD on every node's
   path, no session reset (BIRD's state-change times unchanged) and no route change. Prints the
   time from the apply to the new attribute at the fabric.
"""
import os
import time

import cluster  # first: it puts bench/ on the path (pods does)
import lab
import pods
from pods import benchlab

LOAD_RATE, LOAD_TIMEOUT_S = 20, 2.0
overlay = cluster.daemonset_overlay


def session_since(C: cluster.Cluster) -> dict[str, str]:
    """BIRD's state-change time of each node's session."""
    return {cn.name: C.bird.protocol_row(cn.name)[4] for cn in C.nodes}


def apply_config(C: cluster.Cluster, communities: list[str]) -> None:
    """`kubectl apply` of the DaemonSet's ConfigMap, under the name the pods mount, with the
    shipped vipd.yaml and communities: what a user's GitOps tool does with a changed file."""
    yaml = lab.yaml_module()
    ds = C.get("daemonset", "vipd", "-n", "kube-system")
    name = [v["configMap"]["name"] for v in ds["spec"]["template"]["spec"]["volumes"]
            if "configMap" in v][0]
    with open(os.path.join(pods.SOURCE_DIR, "manifests", "daemonset", "vipd.yaml")) as f:
        config = yaml.safe_load(f)
    config["communities"] = communities
    doc = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": "kube-system"},
           "data": {"vipd.yaml": yaml.safe_dump(config, sort_keys=False)}}
    path = C.L.path("configmap-live.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(doc, f, sort_keys=False)
    C.kubectl("apply", "-f", path, timeout=60)


def roll_out(C: cluster.Cluster, generation_before: int, timeout: float) -> None:
    def done() -> bool:
        ds = C.get("daemonset", "vipd", "-n", "kube-system")
        st = ds.get("status", {})
        return (ds.get("metadata", {}).get("generation", 0) > generation_before and
                st.get("observedGeneration") == ds["metadata"]["generation"] and
                st.get("updatedNumberScheduled") == len(C.nodes) and
                st.get("numberReady") == len(C.nodes) and
                st.get("numberAvailable") == len(C.nodes))
    lab.wait_until(done, timeout, 1.0, lambda: "the DaemonSet rolled out: "
                   f"{C.get('daemonset', 'vipd', '-n', 'kube-system').get('status')}")


def cannot_start(C: cluster.Cluster, monitor, tag: str) -> None:
    """A new version that cannot start (a typo in the config, refused by vipd at start): the
    surge pod crash-loops, never Ready, so the rollout stalls with the old pods speaking and the
    route unchanged; applying the previous overlay again rolls back."""
    t0 = time.time()
    generation = C.get("daemonset", "vipd", "-n", "kube-system")["metadata"]["generation"]
    C.kubectl("apply", "-k", overlay(C, tag, [], hashed=True, typo=True), timeout=60)

    def crashing() -> list[str]:
        return [p["metadata"]["name"] for p in C.get("pods", "-n", "kube-system")["items"]
                if p["metadata"]["name"].startswith("vipd-")
                and any(c.get("restartCount", 0) >= 1 and not c.get("ready")
                        for c in p.get("status", {}).get("containerStatuses", []))]
    bad = lab.wait_until(crashing, 180, 1.0, lambda: f"the surge pod restarting, never Ready: "
                         f"{C.pod_phases('kube-system')}")
    time.sleep(5)
    ds = C.get("daemonset", "vipd", "-n", "kube-system")["status"]
    roles = {cn.name: cn.vipctl_status().get("role") for cn in C.nodes}
    lab.check(len(bad) == 1 and ds.get("updatedNumberScheduled", 0) <= 1 and
              ds.get("numberAvailable") == len(C.nodes),
              f"the rollout stalls at one crash-looping pod {bad}, the old pods available: {ds}")
    lab.check(set(roles.values()) == {"active"}, f"every node's vipd still speaks: {roles}")
    stalled = time.time() - t0
    C.kubectl("apply", "-k", overlay(C, tag, [], hashed=True), timeout=60)
    roll_out(C, generation + 1, 300)
    changes = [(round(t - t0, 3), sorted(h)) for t, h in monitor.events if t >= t0]
    print(f"rollout of a config vipd refuses: the surge pod crash-looped ({bad[0]}), the rollout "
          f"stalled with the old pods speaking for {stalled:.1f} s and rolled back in "
          f"{time.time() - t0 - stalled:.1f} s; route changes {len(changes)}")
    lab.check(not changes, f"no route change while a new version cannot start: {changes}")


def test() -> None:
    with lab.Lab("cluster-day2") as L:
        C, client, monitor = cluster.up(L)
        C.day0(monitor)
        lab.wait_until(lambda: C.ready_nodes() == {cn.name for cn in C.nodes}, 180, 1.0,
                       lambda: f"three Ready nodes: {C.ready_nodes()}")
        C.mark_control_plane()

        # --- 2. day 2 ---
        t0 = time.time()
        C.kubectl("apply", "-k", overlay(C, C.version, [], hashed=True), timeout=60)
        lab.wait_until(lambda: C.pods_ready("kube-system", "vipd-", len(C.nodes) * 2), 240, 1.0,
                       lambda: f"a DaemonSet pod Ready beside each static pod: "
                       f"{C.pod_phases('kube-system')}")
        for cn in C.nodes:
            lab.wait_until(lambda cn=cn: cn.vipctl_status().get("mode") == "daemonset", 60, 0.5,
                           lambda cn=cn: f"{cn.name}: the DaemonSet's vipd active: "
                           f"{cn.vipctl_status().get('mode')}")
        for cn in C.nodes:
            p = cn.render(bootstrap=False)
            lab.check(p.returncode == 0, f"{cn.name}: render with bootstrap off: {p.stderr}")
        lab.wait_until(lambda: not any(n.startswith("vipd-bootstrap")
                                       for n in C.pod_phases("kube-system")), 120, 1.0,
                       lambda: f"the static pods gone: {C.pod_phases('kube-system')}")
        n1 = C.nodes[0]
        lab.check(os.listdir(n1.host.path("/etc/kubernetes/vipd-manifest-archive")),
                  "render with bootstrap off moved the static pod's manifest into the archive")
        n1.check_container(n1.pod("vipd-"))
        changes = [(round(t - t0, 3), sorted(h)) for t, h in monitor.events if t >= t0]
        print(f"day 2: the DaemonSet took over on three nodes and the static pods were removed "
              f"in {time.time() - t0:.1f} s; route changes at the fabric: {len(changes)}")
        lab.check(not changes, f"no route change from the apply to the static pods' end: "
                  f"{changes}")

        # --- 3. rollout ---
        next_tag = f"{C.version}-next"
        for cn in C.nodes:
            cn.ctr("images", "tag", f"localhost/vipd:{C.version}", f"localhost/vipd:{next_tag}")
        out = L.path("rollout-load.json")
        load = benchlab.run_load(L, client, LOAD_RATE, 600, LOAD_TIMEOUT_S, out,
                                 port=cluster.APISERVER_PORT, ca_file=C.ca_file, path="/readyz")
        watch = L.start(client, "kubectl-watch", [
            os.path.join(C.tools, "kubectl"), f"--kubeconfig={C.admin_conf}", "get", "pods",
            "-n", "kube-system", "--watch", "--output-watch-events"])
        time.sleep(2)
        generation = C.get("daemonset", "vipd", "-n", "kube-system")["metadata"]["generation"]
        t1 = time.time()
        C.kubectl("apply", "-k", overlay(C, next_tag, [], hashed=True), timeout=60)
        roll_out(C, generation, 300)
        rolled = time.time() - t1
        time.sleep(2)
        load.signal(15)
        reqs = C.requests(load, out)
        failed = [r for r in reqs if "error" in r]
        changes = [(round(t - t1, 3), sorted(h)) for t, h in monitor.events if t >= t1]
        print(f"rollout: three nodes in {rolled:.1f} s; route changes {len(changes)}; "
              f"{len(failed)} of {len(reqs)} requests through the VIP failed; the watch "
              f"through the VIP {'kept' if watch.alive() else 'lost'} its connection")
        lab.check(watch.alive(), f"kubectl get --watch through the VIP kept its connection: "
                  f"{watch.log_text()[-2000:]}")
        lab.check(not changes, f"no route change during the rollout: {changes}")
        lab.check(len(reqs) > LOAD_RATE * rolled / 2 and not failed,
                  f"no request through the VIP failed: {failed[:5]} of {len(reqs)}")
        watch.stop()
        cannot_start(C, monitor, next_tag)

        # --- 4. live config ---
        before = session_since(C)
        t2 = time.time()
        apply_config(C, ["65000:4242"])
        arrived = lab.timed_wait(
            lambda: C.bird.route_all(lab.VIP4).count("(65000,4242)") == len(C.nodes), 180, 0.5,
            lambda: f"the new community on every node's path at BIRD: "
            f"{C.bird.route_all(lab.VIP4)}")
        time.sleep(1.5)  # BIRD's "since" may still move by a millisecond as channels settle
        after = session_since(C)
        changes = [(round(t - t2, 3), sorted(h)) for t, h in monitor.events if t >= t2]
        print(f"live config: the community added by `kubectl apply` of the ConfigMap reached "
              f"the fabric on all three paths {arrived:.1f} s later (the kubelet's volume sync "
              f"included); route changes {len(changes)}")
        lab.check(all(lab.bird_since_delta(after[n], before[n]) < 0.5 for n in before),
                  f"no session was reset: BIRD's state-change times {before} -> {after}")
        lab.check(not changes, f"no route change for a community: {changes}")


if __name__ == "__main__":
    lab.main(test, binaries=pods.BINARIES + ["bird", "birdc", "openssl", "ctr"], vipd=True)
