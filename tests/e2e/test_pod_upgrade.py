#!/usr/bin/env python3
"""e2e: a DaemonSet rollout under a real container runtime (issue 29 part 1). On node 1 of
pods.PodLab the DaemonSet's pod (from `kubectl kustomize` of an overlay, as e2e_pod_takeover
builds it) speaks; then the same DaemonSet's pod from a second image tag is run the way a
DaemonSet controller with maxSurge 1 / maxUnavailable 0 runs it: the new pod beside the old one,
its readiness probe (exec `vipctl ready` on its own socket) until it passes, then the old pod's
preStop hook (exec, as the kubelet runs it) and its stop (SIGTERM). The manifests are changed only
as pods.for_podman documents, plus each pod's name and the second one's image tag.

Asserts:
- the new pod takes over with graceful restart and becomes ready; the old pod's preStop answers
  "nothing to drain" and it exits 0 on SIGTERM;
- node 1's path never leaves the fabric: polled every 10 ms and `ip monitor` show no change of
  the VIP's route from the new pod's start until after the old pod is gone;
- long-lived connections through the VIP to node 1 (idle and streaming) are not reset, and none
  of 200 requests a second through the VIP fails;
- a new pod that cannot start (a node file it cannot read: vipd exits, the pod restarts) leaves the
  running pod speaking and the route unchanged;
- the new pod announces at the end: its preStop and stop withdraw node 1's path.
"""
import copy
import json
import os
import sys
import time

import lab
import pods
import test_pod_takeover as takeover

HERE = os.path.dirname(os.path.abspath(__file__))
HOLD_PORT = 7070
CLIENT_S = 30  # the rollout and the broken pod take about 18 s; the clients must outlast them
VIP4_ADDR = lab.VIP4.split("/")[0]
INSTANCE_SOCKET = "/run/vipd-instance/vipd.sock"


def pod_doc(docs: list[dict], name: str, image: str) -> list[dict]:
    """The overlay's objects with the DaemonSet's pod named `name` and running `image`."""
    out = copy.deepcopy(docs)
    for d in out:
        if d.get("kind") == "DaemonSet":
            d["metadata"]["name"] = name
            d["spec"]["template"]["spec"]["containers"][0]["image"] = image
    return out


def status(P: pods.PodLab, pod: str) -> dict:
    return json.loads(P.podman.run("exec", f"{pod}-vipd", "vipctl", "status", "--json").stdout)


def role(P: pods.PodLab, pod: str) -> str:
    try:
        return status(P, pod)["role"]
    except Exception:  # noqa: BLE001 - not answering (yet)
        return "not answering"


def pre_stop(P: pods.PodLab, pod: str, spec_pod: dict) -> str:
    """The pod's preStop hook as the kubelet runs it: its exec command in the container."""
    hook = spec_pod["spec"]["containers"][0]["lifecycle"]["preStop"]["exec"]["command"]
    r = P.podman.run("exec", f"{pod}-vipd", *hook, check=False, timeout=60)
    lab.check(r.returncode == 0, f"{pod}'s preStop: {r.returncode} {r.stdout}{r.stderr}")
    return r.stdout


def test() -> None:
    with lab.Lab("pod-upgrade") as L:
        P = pods.PodLab(L)
        try:
            P.wait_hops([P.n2.v4], 30, "node 2 announces")
            P.render(bootstrap=False)  # day 2 only: the node file, no static pod
            docs = takeover.daemonset_docs(P)
            old_ref, new_ref = P.ref, f"{P.ref}-next"
            P.podman.run("tag", old_ref, new_ref)
            old_pod, old_probes = P.play("upgrade-old", pod_doc(docs, "vipd-old", old_ref))
            P.wait_hops([P.n1.v4, P.n2.v4], 40, "node 1's path from the DaemonSet's pod")
            P.probes_pass(old_probes, 20, pod="vipd-old")
            for n in (P.n1, P.n2):
                L.start(n.ns, f"hold-n{n.index}", [sys.executable,
                                                   os.path.join(HERE, "hold_conn.py"), "serve",
                                                   VIP4_ADDR, str(HOLD_PORT), f"node{n.index}"])
            time.sleep(0.5)
            hold_out = L.path("hold.json")
            hold = L.start(P.client, "hold", [sys.executable, os.path.join(HERE, "hold_conn.py"),
                                              "hold", VIP4_ADDR, str(HOLD_PORT), "40",
                                              str(CLIENT_S), hold_out, "node1"])
            load, load_out = P.load("upgrade-load", CLIENT_S)
            time.sleep(2)

            # ---- the rollout: the new pod beside the old one ----
            poller = lab.FabricPoller(P.fabric, P.n1.v4)
            since = time.time()
            t0 = time.monotonic()
            new_pod, new_probes = P.play("upgrade-new", pod_doc(docs, "vipd-new", new_ref))
            pods.check_container(P.podman, "vipd-new-vipd", new_pod["spec"])
            lab.wait_until(lambda: role(P, "vipd-new") == "active", 30, 0.05,
                           lambda: f"the new pod takes over: {status(P, 'vipd-new')['handoff']}")
            took = time.monotonic() - t0
            P.probes_pass({k: v for k, v in new_probes.items() if "readiness" in k}, 15,
                          pod="vipd-new")
            ready = time.monotonic() - t0
            lab.check(role(P, "vipd-old") == "standby", "the old pod's vipd is on standby")
            lab.check(status(P, "vipd-new")["handoff"]["gracefulRestart"],
                      "the new pod reopened the sessions as a graceful restart")
            out = pre_stop(P, "vipd-old", old_pod)
            lab.check("nothing to drain" in out, f"the old pod's preStop drains nothing: {out}")
            P.podman.pod_stop("vipd-old")
            state = P.podman.inspect("vipd-old-vipd")["State"]
            lab.check(state["ExitCode"] == 0, f"the old pod exits 0: {state}")
            P.podman.run("pod", "rm", "vipd-old")
            time.sleep(2.0)
            host = P.vipctl_on_host("status", "--json")
            lab.check(host.returncode == 0 and json.loads(host.stdout)["role"] == "active",
                      f"the host's vipctl reaches the new pod's vipd: {host.stderr}")

            # ---- a new pod that cannot start ----
            broken = pod_doc(docs, "vipd-broken", new_ref)
            for d in broken:
                if d.get("kind") == "DaemonSet":
                    args = d["spec"]["template"]["spec"]["containers"][0]["args"]
                    args[args.index("--node-config") + 1] = "/etc/vipd/missing.yaml"
            P.play("upgrade-broken", broken)
            time.sleep(6)
            lab.check(role(P, "vipd-new") == "active", "the running pod keeps speaking")
            P.podman.run("pod", "rm", "-f", "vipd-broken")
            time.sleep(1)
            poller.stop()
            lab.check(load.alive() and hold.alive(), f"the clients ran through the whole "
                      f"scenario ({time.time() - since:.1f}s; they run {CLIENT_S}s)")

            lab.wait_until(lambda: not load.alive() and not hold.alive(), 90, 0.5,
                           "the clients to finish")
            requests = P.requests(load, load_out, CLIENT_S)
            with open(hold_out) as f:
                held = json.load(f)
            gaps = poller.gaps()
            events = [(round(t - since, 3), sorted(h)) for t, h in P.monitor.events if t >= since]
            failed = [r for r in requests if "error" in r]
            lab.log(f"rollout: new pod active {took:.2f}s and ready {ready:.2f}s after it started; "
                    f"node 1's path gaps {gaps}; route events {events}; requests {len(failed)} "
                    f"of {len(requests)} failed; long-lived connections {held}")
            lab.check(not gaps, f"node 1's path left the fabric during the rollout: {gaps}")
            lab.check(not events, f"the VIP's route changed during the rollout: {events}")
            lab.check(not failed, f"requests failed: {failed[:5]}")
            lab.check(held["kept"] >= 4 and all(c["ok"] for c in held["idle"] + held["streaming"]),
                      f"a long-lived connection to node 1 did not survive: {held}")

            # ---- the new pod announces: stopping it (the node going away) withdraws ----
            pre_stop(P, "vipd-new", new_pod)
            P.wait_hops([P.n2.v4], 15, "node 1 leaves the route when the new pod drains")
            P.podman.pod_stop("vipd-new")
            print(f"FIGURES pod_upgrade active_s={took:.2f} ready_s={ready:.2f} gaps={len(gaps)} "
                  f"requests={len(requests)} failed={len(failed)} long_lived={held['kept']}",
                  flush=True)
        except BaseException:
            for c in ("vipd-old-vipd", "vipd-new-vipd", "vipd-broken-vipd"):
                print(f"----- podman logs {c} -----\n{P.podman.logs(c)[-5000:]}")
            raise


if __name__ == "__main__":
    pods.main(test, ["bird", "birdc", "openssl"])
