#!/usr/bin/env python3
"""e2e, real cluster (issue 42 part 4): `vipd doctor` keeps the VIP from becoming the node's
identity. The three-node cluster of tests/e2e/cluster.py at day 0 (static pods); `vipd doctor` on
node 1's host, as an operator runs it, after each mistake made on purpose and after its mend:

- vip-identity: the kubelet's --node-ip set to the VIP in kubeadm's flags file
  (/var/lib/kubelet/kubeadm-flags.env), and node 1's kube-apiserver restarted with
  --advertise-address set to the VIP: each fails, naming the program, the flag and where it was
  read; mended, the check names the node's own addresses it compared;
- vip-reachable: node 1 withdrawn (`vipctl withdraw --wait`, the VIP unbound) with an
  `unreachable` route to the VIP: fails with the kernel's reason; without the route (and no
  default route, as the lab's nodes have none) it warns;
- vip-replies: a policy rule sending the VIP's packets into a table whose default leaves by lo:
  fails, naming both interfaces;
- vip-exposure: a BIRD started on node 1 and the VIP added on eth0: fails, naming the daemon.
A node set up right passes every check (exit 0) before and after.
"""
import json
import os
import time

import cluster  # first: it puts bench/ on the path (pods does)
import lab
import pods

VIP = cluster.VIP


def doctor(cn: cluster.ClusterNode) -> tuple[int, dict]:
    p = cn.host.run([lab.vipd_binary(), "doctor", "--config", "/etc/vipd/vipd.yaml", "--json"],
                    check=False, timeout=60)
    out = p.stdout
    report = json.loads(out[:out.rindex("}") + 1]) if "}" in out else {}
    return p.returncode, {c["name"]: c for c in report.get("checks", [])}


def expect(cn: cluster.ClusterNode, name: str, result: str, *words: str) -> str:
    code, checks = doctor(cn)
    got = checks.get(name, {})
    line = f"{got.get('result')} {name}: {got.get('detail')} (fix: {got.get('fix', '')})"
    lab.log(f"vipd doctor on {cn.name} -> {code}: {line}")
    lab.check(got.get("result") == result and all(w in got.get("detail", "") for w in words),
              f"{name} is {result}, naming {words}: {line}")
    if result == "fail":
        lab.check(code == 1 and got.get("fix"), f"a fail exits 1 and says what to do: {code}")
    return line


def all_ok(cn: cluster.ClusterNode, what: str) -> None:
    code, checks = doctor(cn)
    bad = {n: c for n, c in checks.items() if c["result"] != "ok"}
    lab.check(code == 0 and not bad, f"{what}: every check ok: {code} {bad}")


def restart_apiserver(C: cluster.Cluster, cn: cluster.ClusterNode, argv: list[str]) -> None:
    cn.procs["kube-apiserver"].stop()
    cn.start("kube-apiserver", argv)
    lab.wait_until(lambda: C.readyz(cn) == "ok", 120, 1.0,
                   lambda: f"{cn.name}'s apiserver ready again: {C.readyz(cn, verbose=True)}")


def test() -> None:
    with lab.Lab("cluster-doctor") as L:
        C, client, monitor = cluster.up(L)
        C.day0(monitor)
        n1 = C.nodes[0]
        all_ok(n1, "a node set up right")
        print(expect(n1, "vip-identity", "ok", f"kubelet --node-ip {n1.node.v4}",
                     f"kube-apiserver --advertise-address {n1.node.v4}",
                     f"etcd --advertise-client-urls {n1.node.v4}"))

        # vip-identity: the kubelet's node IP (kubeadm's flags file) ...
        flags = n1.host.path("/var/lib/kubelet/kubeadm-flags.env")
        with open(flags, "w") as f:
            f.write(f'KUBELET_KUBEADM_ARGS="--node-ip={VIP} --v=1"\n')
        print(expect(n1, "vip-identity", "fail",
                     f"VIP {VIP} is kubelet's --node-ip (/var/lib/kubelet/kubeadm-flags.env)"))
        os.remove(flags)
        # ... and the apiserver's advertise address, on the running process.
        good = n1.apiserver_argv()
        bad = [a if not a.startswith("--advertise-address=") else f"--advertise-address={VIP}"
               for a in good]
        restart_apiserver(C, n1, bad)
        pid = n1.procs["kube-apiserver"].pid
        print(expect(n1, "vip-identity", "fail",
                     f"VIP {VIP} is kube-apiserver's --advertise-address"))
        restart_apiserver(C, n1, good)
        expect(n1, "vip-identity", "ok", f"kube-apiserver --advertise-address {n1.node.v4}")
        del pid

        # vip-reachable: node 1 out of the fabric (the VIP unbound), a route refusing the VIP.
        vipctl = [lab.vipd_binary("vipctl")]
        p = n1.host.run(vipctl + ["withdraw", "--wait", "--reason", "doctor test"], check=False,
                        timeout=60)
        lab.check(p.returncode == 0, f"node 1 withdrawn: {p.returncode} {p.stderr}")
        lab.wait_until(lambda: not n1.node.ns.address_entries("lo", lab.VIP4), 30, 0.2,
                       "node 1's VIP unbound")
        print(expect(n1, "vip-reachable", "warn", f"{VIP} not bound here and no route"))
        n1.node.ns.ip("route", "add", "unreachable", f"{VIP}/32")
        print(expect(n1, "vip-reachable", "fail", f"cannot reach VIP {VIP}: No route to host"))
        n1.node.ns.ip("route", "del", "unreachable", f"{VIP}/32")
        # The drain ends a moment after the unbind (exit 5 "a drain is in progress" until then).
        lab.wait_until(lambda: n1.host.run(vipctl + ["announce"], check=False,
                                           timeout=30).returncode == 0, 30, 0.5,
                       "node 1 to take `vipctl announce`")
        lab.wait_until(lambda: n1.node.ns.address_entries("lo", lab.VIP4), 60, 0.2,
                       "node 1's VIP bound again")
        expect(n1, "vip-reachable", "ok", f"{VIP} is bound here")

        # vip-replies: the VIP's packets ruled into a table that leaves by lo. Checked at once:
        # the return-path check would take node 1 out within seconds.
        n1.node.ns.ip("route", "add", "default", "dev", "lo", "table", "4242")
        n1.node.ns.ip("rule", "add", "from", VIP, "lookup", "4242", "pref", "4242")
        try:
            print(expect(n1, "vip-replies", "fail",
                         f"replies from VIP {VIP} to {lab.FABRIC_V4} leave by lo, not by eth0"))
        finally:
            n1.node.ns.ip("rule", "del", "pref", "4242")
        expect(n1, "vip-replies", "ok", f"from {VIP} to {lab.FABRIC_V4} by eth0")

        # vip-exposure: a routing daemon on the node, and the VIP on eth0.
        conf = L.path("node1-bird.conf")
        with open(conf, "w") as f:
            f.write(f"router id {n1.node.v4};\nprotocol device {{ }}\n")
        bird = L.start(n1.node.ns, "node1-bird", ["bird", "-f", "-c", conf, "-s",
                                                  L.path("node1-bird.ctl")])
        lab.wait_until(lambda: os.path.exists(L.path("node1-bird.ctl")), 10, 0.1, "node 1's BIRD")
        expect(n1, "vip-exposure", "ok", f"bird (pid {bird.pid}) runs here")
        n1.node.ns.ip("addr", "add", f"{VIP}/32", "dev", "eth0")
        try:
            print(expect(n1, "vip-exposure", "fail", f"VIP {VIP} is bound on eth0",
                         f"bird (pid {bird.pid})"))
        finally:
            n1.node.ns.ip("addr", "del", f"{VIP}/32", "dev", "eth0")
        bird.stop()
        time.sleep(0.5)
        all_ok(n1, "every mistake mended")


if __name__ == "__main__":
    lab.main(test, binaries=pods.BINARIES + ["bird", "birdc", "openssl", "ctr"], vipd=True)
