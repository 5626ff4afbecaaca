#!/usr/bin/env python3
"""e2e: `vipd doctor` on a lab node (issue 30 part 4). BIRD fabric (AS 65000), vipd on node 1
(AS 65001) gated on a stand-in apiserver (fake_apiserver.py) whose certificate is shaped like a
stock kubeadm one: no VIP among its subjectAltNames. Each case is run as an operator would, by
`vipd doctor --config FILE` in the node's namespace, first on the broken node and then on the
mended one; the broken run must exit 1 with the check's fail line, the mended one exit 0.

Asserts:
- a certificate that lacks the VIPs: exit 1, `fail apiserver-certificate` naming both VIPs and
  the certificate's subjectAltNames; the same in `--json`; the running vipd logged the same line
  at start and `vipctl status` shows the result;
- the certificate reissued with the VIPs (kubeadm certSANs): exit 0, every check ok; a vipd
  started afterwards shows 0 fail in `vipctl status`;
- a peer's passwordFile with mode 0644: `fail password-files` naming the file and the mode;
  after chmod 0600, exit 0;
- strict rp_filter on a node with two uplinks (a second peer through eth1): `fail rp-filter`
  naming both interfaces and the sysctl to set; after rp_filter=2 (loose), exit 0;
- a second BGP daemon on the node (a BIRD, as a CNI's speaker) peering with vipd's router from
  vipd's address: `fail bgp-sessions` naming bird and its PID, `warn bgp-port` (it listens on
  179, vipd dials out); with listen.enabled, `fail bgp-port`; once it is stopped, exit 0.
"""
import json
import os
import signal

import lab

VIPS = (lab.VIP4, lab.VIP6)
UPLINK2_NODE, UPLINK2_FABRIC = "198.51.100.11", "198.51.100.1"


def doctor(node: lab.Node, conf: str, *args: str) -> tuple[int, str]:
    """Runs `vipd doctor` in the node's namespace: (exit code, stdout + stderr)."""
    p = node.ns.run([lab.vipd_binary(), "doctor", "--config", conf] + list(args), check=False,
                    timeout=30)
    out = p.stdout + p.stderr
    lab.log(f"vipd doctor {' '.join(args)} -> exit {p.returncode}\n{out.rstrip()}")
    return p.returncode, out


def line(out: str, name: str) -> str:
    """The output line of check `name` ("fail  NAME  DETAIL; fix: FIX")."""
    found = [ln for ln in out.splitlines() if ln.split()[1:2] == [name]]
    lab.check(len(found) == 1, f"one line for check {name}: {found}")
    return found[0]


def verdict(out: str, name: str) -> str:
    return line(out, name).split()[0]


def all_ok(code: int, out: str, what: str) -> None:
    lab.check(code == 0, f"{what}: vipd doctor should exit 0, exited {code}")
    bad = [ln for ln in out.splitlines() if ln.startswith(("fail", "warn"))]
    lab.check(not bad, f"{what}: every check should be ok: {bad}")


def write_config(L: lab.Lab, name: str, config: dict) -> str:
    path = L.path(f"{name}.yaml")
    with open(path, "w") as f:
        f.write(lab.to_yaml(config) + "\n")
    return path


def test() -> None:
    with lab.Lab("doctor") as L:
        ca = lab.make_ca(L, "cluster-ca")
        st: dict = {}

        def edit(c: dict, topo: lab.Topology) -> None:
            node_ip = topo.nodes[0].v4
            kubeadm = lab.make_server_cert(L, ca, "apiserver-kubeadm", node_ip=node_ip)
            st["with_vips"] = lab.make_server_cert(L, ca, "apiserver-certsans", node_ip=node_ip,
                                                   extra_ips=VIPS_ADDRESSES)
            st["api"] = lab.FakeApiserver(L, topo.nodes[0].ns, kubeadm, mode="ok")
            c["health"] = {"type": "apiserver", "url": st["api"].url(), "caFile": ca[0],
                           "interval": "500ms", "timeout": "500ms", "rise": 2, "fall": 3}
            st["config"] = c

        s = lab.build_single_vipd(L, edit)
        bird, vipd, node, topo = s.bird, s.vipd, s.node, s.topo
        # A node set up right has a default route: the VIP stays reachable from the node while
        # it is not bound here (vip-reachable warns without one).
        node.ns.ip("route", "add", "default", "via", lab.FABRIC_V4)
        node.ns.ip("-6", "route", "add", "default", "via", lab.FABRIC_V6)
        base = st["config"]
        lab.wait_until(lambda: all(bird.has_route(p) for p in VIPS), 30, 0.05,
                       "both VIPs in BIRD (the health check accepts the kubeadm certificate)")

        # 1. The apiserver's certificate lacks the VIPs: clients through the VIP fail TLS.
        code, out = doctor(node, vipd.conf)
        lab.check(code == 1, f"a certificate without the VIPs: exit 1, not {code}")
        cert_line = line(out, "apiserver-certificate")
        lab.check(cert_line.startswith("fail"), f"apiserver-certificate should fail: {cert_line}")
        for needed in VIPS_ADDRESSES + ("DNS:kubernetes", "IP:10.96.0.1", "certSANs"):
            lab.check(needed in cert_line, f"the fail line should name {needed}: {cert_line}")
        lab.check(out.rstrip().endswith("1 fail"), f"the last line counts the fail: {out}")
        code, out = doctor(node, vipd.conf, "--json")
        report = json.loads(out[:out.rindex("}") + 1])
        checks = {c["name"]: c for c in report["checks"]}
        lab.check(code == 1 and report["result"] == "fail" and report["counts"]["fail"] == 1,
                  f"--json: exit {code}, {report['result']} {report['counts']}")
        lab.check(checks["apiserver-certificate"]["result"] == "fail"
                  and lab.VIP4.split("/")[0] in checks["apiserver-certificate"]["detail"]
                  and checks["apiserver-certificate"]["fix"], f"--json: {checks}")
        # The running vipd ran the same checks at start: its log and its status say so.
        lab.wait_until(lambda: vipd.status().get("doctor", {}).get("counts"), 15, 0.1,
                       "the doctor's result in vipctl status")
        status = vipd.status()["doctor"]
        lab.log(f"vipctl status doctor: result {status['result']} {status['counts']} "
                f"trigger {status['trigger']}")
        lab.check(status["result"] == "fail" and status["counts"]["fail"] == 1,
                  f"vipctl status should show the failing check: {status}")
        logged = vipd.log_lines("fail  apiserver-certificate")
        lab.check(logged and lab.VIP4.split("/")[0] in logged[0],
                  f"vipd should log the fail line at start: {logged}")
        text = vipd.vipctl("status")
        lab.check("FAIL apiserver-certificate" in text, f"vipctl status text: {text}")

        # Mended: the certificate reissued with the VIPs among its SANs.
        st["api"].stop()
        st["api"] = lab.FakeApiserver(L, node.ns, st["with_vips"], mode="ok", name="apiserver2")
        code, out = doctor(node, vipd.conf)
        all_ok(code, out, "a certificate with the VIPs")
        lab.check("203.0.113.10" in line(out, "apiserver-certificate"), out)
        vipd.restart(signal.SIGTERM)
        lab.wait_until(lambda: (vipd.status().get("doctor") or {}).get("counts"), 15, 0.1,
                       "the restarted vipd's doctor result")
        status = vipd.status()["doctor"]
        lab.check(status["counts"]["fail"] == 0 and status["counts"]["warn"] == 0,
                  f"the restarted vipd's checks: {status}")

        # 2. A password file any user can read (vipd's start refuses it).
        key = L.path("peer.key")
        with open(key, "w") as f:
            f.write("s3cret-lab-key")
        os.chmod(key, 0o644)
        with_key = json.loads(json.dumps(base))
        with_key["peers"][0]["passwordFile"] = key
        conf = write_config(L, "doctor-key", with_key)
        code, out = doctor(node, conf)
        key_line = line(out, "password-files")
        lab.check(code == 1 and key_line.startswith("fail") and key in key_line
                  and "0644" in key_line, f"a 0644 password file: exit {code}: {key_line}")
        os.chmod(key, 0o600)
        code, out = doctor(node, conf)
        lab.check(code == 0 and verdict(out, "password-files") == "ok",
                  f"after chmod 0600: exit {code}: {line(out, 'password-files')}")

        # 3. Strict rp_filter on a node with two uplinks: the fabric's ECMP delivers VIP traffic
        # on either, and strict mode drops what arrives on the one the node would not answer by.
        node.ns.add_veth("eth1", topo.fabric, "n1b")
        node.ns.add_address("eth1", f"{UPLINK2_NODE}/24")
        topo.fabric.add_address("n1b", f"{UPLINK2_FABRIC}/24")
        two = json.loads(json.dumps(base))
        second = dict(two["peers"][0], address=UPLINK2_FABRIC, sourceAddress=UPLINK2_NODE)
        two["peers"].append(second)
        conf = write_config(L, "doctor-two-uplinks", two)
        for key_name in ("all", "eth0", "eth1"):
            node.ns.sysctl(f"net.ipv4.conf.{key_name}.rp_filter", "1")
        code, out = doctor(node, conf)
        rp_line = line(out, "rp-filter")
        lab.check(code == 1 and rp_line.startswith("fail") and "eth0" in rp_line
                  and "eth1" in rp_line and "rp_filter=2" in rp_line,
                  f"strict rp_filter on two uplinks: exit {code}: {rp_line}")
        node.ns.sysctl("net.ipv4.conf.all.rp_filter", "2")
        for key_name in ("eth0", "eth1"):
            node.ns.sysctl(f"net.ipv4.conf.{key_name}.rp_filter", "2")
        code, out = doctor(node, conf)
        lab.check(code == 0 and verdict(out, "rp-filter") == "ok",
                  f"loose rp_filter: exit {code}: {line(out, 'rp-filter')}")

        # 4. A second BGP daemon (a CNI's speaker) on the node, peering with vipd's router from
        # vipd's address. vipd is stopped first: the doctor runs before the first announce.
        vipd.proc.signal(signal.SIGTERM)
        vipd.wait_exit(20)
        other = lab.Bird(L, node.ns, node.v4, node.asn,
                         [lab.Neighbor(topo.fabric_v4, lab.FABRIC_ASN, passive=False,
                                       name="fabric")],
                         interfaces=["eth0"], name="cni-bird", import_routes=False)
        lab.wait_until(lambda: bird.neighbor_state(node.v4) == "Established", 30, 0.1,
                       "the second daemon's session with the router")
        code, out = doctor(node, vipd.conf)
        sessions, port = line(out, "bgp-sessions"), line(out, "bgp-port")
        lab.check(code == 1 and sessions.startswith("fail") and "bird" in sessions
                  and str(other.proc.pid) in sessions,
                  f"a second daemon with vipd's peer: exit {code}: {sessions}")
        lab.check(port.startswith("warn") and "bird" in port and ":179" in port,
                  f"its listener on 179 while vipd dials out: {port}")
        listening = json.loads(json.dumps(base))
        listening["listen"] = {"enabled": True}
        conf = write_config(L, "doctor-listen", listening)
        code, out = doctor(node, conf)
        lab.check(code == 1 and verdict(out, "bgp-port") == "fail",
                  f"with listen.enabled: exit {code}: {line(out, 'bgp-port')}")
        other.stop()
        code, out = doctor(node, vipd.conf)
        all_ok(code, out, "the second daemon stopped")


VIPS_ADDRESSES = tuple(p.split("/")[0] for p in VIPS)

if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries + lab.FakeApiserver.binaries, vipd=True)
