#!/usr/bin/env python3
"""e2e: vipd under exactly the capabilities its manifests grant, and with one fewer.

The set is read from both pod specs (manifests/static-pod/vipd.yaml, filled as `vipd render`
would, and manifests/daemonset/daemonset.yaml), which must grant the same one. vipd runs as uid 0
through setpriv with every other capability out of its bounding, permitted, effective,
inheritable and ambient sets, and with no_new_privs (allowPrivilegeEscalation: false);
/proc/PID/status of the running vipd shows it.

A BIRD fabric (AS 65000) peers with vipd (AS 65001) with TCP-MD5 (`password`), GTSM (`ttl
security on`) and single-hop BFD, and dials vipd's port 179. Scenarios:
1. the manifests' set and every feature that needs a privilege at once: listen on port 179
   (vipd's own dials go to a closed port, so BIRD's connection is the session), passwordFile,
   ttlSecurity, BFD, VIPs on lo and on vip0 (createInterface): in BIRD's view the session is
   Established, BFD Up and every VIP has vipd's next hop; on SIGTERM vipd removes its addresses;
2. without NET_BIND_SERVICE: vipd exits non-zero at start, naming CAP_NET_BIND_SERVICE, and
   binds nothing;
3. without NET_BIND_SERVICE and with listen off (vipd dials): everything else works, so the
   listener is the only feature that needs it (BFD's ports, 3784 and 4784, are above 1023);
4. without NET_ADMIN: BGP with TCP-MD5 and GTSM, the listener and BFD still come up (none of
   them needs it), but no VIP is bound, no dummy interface is created, BIRD gets no VIP route,
   and vipd's status and log name CAP_NET_ADMIN;
5. without NET_RAW: everything but the return-path check works (the VIPs are in BIRD); the check
   is unavailable, and status, log and /readyz name CAP_NET_RAW. In scenario 1 the same check
   runs and verifies both VIPs' return paths (ICMP and ICMPv6, to the fabric's two addresses as
   configured targets), so NET_RAW is what it needs.

A kernel without dummy interfaces (CONFIG_DUMMY unset) cannot create vip0 at all: the test then
makes vip0 itself (an IFB device, as an operator's interface) and adds a VIP on vip1 with
createInterface, which in scenario 1 must fail on the device type, not on a permission (the
kernel checks CAP_NET_ADMIN before it looks at the type), and in scenario 4 on CAP_NET_ADMIN.
Not reproduced here: seccomp RuntimeDefault and the read-only root filesystem.
"""
import os
import re
import signal
import sys

import lab

sys.path.insert(0, os.path.join(os.path.dirname(lab.E2E_DIR), "manifests"))
import test_kustomize  # noqa: E402 - the static-pod rendering the manifest test uses

KEY = "vipd-capabilities-key"
IF_VIP = "203.0.113.20/32"  # on vip0, createInterface: true
REFUSED_VIP = "203.0.113.21/32"  # on vip1, createInterface, only on a kernel without dummies
TIMERS = lab.BfdTimers(300, 300, 3)
UP_S = 30
NO_ROUTE_S = 4

def granted(pod_spec: dict, who: str) -> set[str]:
    """The capabilities the pod's one container adds, after checking it drops ALL first."""
    caps = test_kustomize.container_of(pod_spec).get("securityContext", {}).get("capabilities", {})
    lab.check(caps.get("drop") == ["ALL"], f"{who}: drops ALL: {caps}")
    added = set(caps.get("add", []))
    unknown = added - set(lab.CAPABILITIES)
    lab.check(not unknown, f"{who}: unknown capabilities {sorted(unknown)}")
    return added


def manifest_capabilities() -> set[str]:
    yaml = test_kustomize.yaml
    with open(test_kustomize.STATIC_POD) as f:
        static_pod = yaml.safe_load(test_kustomize.render_static_pod(f.read()))
    with open(os.path.join(test_kustomize.MANIFESTS, "daemonset", "daemonset.yaml")) as f:
        daemonset = yaml.safe_load(f)
    a = granted(static_pod["spec"], "static pod")
    b = granted(daemonset["spec"]["template"]["spec"], "DaemonSet")
    lab.check(a == b, f"the static pod grants {sorted(a)}, the DaemonSet {sorted(b)}")
    return a


def setpriv(caps: set[str]) -> list[str]:
    """Runs the rest as it would run in the pod: uid 0 (unchanged), only caps in every set,
    no_new_privs."""
    plus = "".join(f",+{c.lower()}" for c in sorted(caps))
    return ["setpriv", "--no-new-privs", f"--bounding-set=-all{plus}", f"--inh-caps=-all{plus}",
            f"--ambient-caps=-all{plus}", "--"]


def check_running_caps(v: lab.Vipd, caps: set[str]) -> None:
    """The running vipd (the same PID as the wrapper: ip netns exec and setpriv exec it) holds
    exactly caps, as uid 0, with no_new_privs."""
    st = lab.wait_until(lambda: (lambda s: s if s["Name"] == "vipd" else None)(
        lab.proc_status(v.proc.pid)), 5, 0.02, f"pid {v.proc.pid} to be vipd")
    want = f"{lab.capability_mask(caps):016x}"
    got = {k: st[k] for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")}
    lab.log(f"{v.name} (pid {v.proc.pid}): Uid {st['Uid']}, NoNewPrivs {st['NoNewPrivs']}, {got}")
    lab.check(st["Uid"].split()[:2] == ["0", "0"], f"{v.name} runs as uid 0: {st['Uid']}")
    lab.check(st["NoNewPrivs"] == "1", f"{v.name} has no_new_privs")
    lab.check(all(x == want for x in got.values()),
              f"{v.name}: every capability set is {want} ({sorted(caps)}): {got}")


def test() -> None:
    caps = manifest_capabilities()
    print(f"the manifests grant {sorted(caps)}")
    for needed in ("NET_ADMIN", "NET_BIND_SERVICE"):
        lab.check(needed in caps, f"the manifests grant {needed}, which vipd needs")
    with lab.Lab("capabilities") as L:
        topo = L.fabric_with_nodes(1)
        node = topo.nodes[0]
        ns = node.ns
        first = int(ns.run(["sysctl", "-n", "net.ipv4.ip_unprivileged_port_start"]).stdout)
        lab.check(first > 179, f"net.ipv4.ip_unprivileged_port_start is {first}: port 179 would "
                  f"need no capability, so the test would prove nothing")
        dummy = ns.link_kind_supported("dummy")
        vips = [{"address": lab.VIP4, "interface": "lo"}, {"address": lab.VIP6, "interface": "lo"},
                {"address": IF_VIP, "interface": "vip0", "createInterface": True}]
        if not dummy:
            lab.log("NOTE: this kernel cannot create dummy interfaces (CONFIG_DUMMY unset): vip0 "
                    "is an IFB device made by the test; a VIP on vip1 with createInterface shows "
                    "which check the kernel's refusal comes from")
            ns.ip("link", "add", "vip0", "type", "ifb")
            ns.ip("link", "set", "vip0", "up")
            vips.append({"address": REFUSED_VIP, "interface": "vip1", "createInterface": True})
        key = L.path("bgp.key")
        with open(key, "w") as f:
            f.write(KEY + "\n")
        os.chmod(key, 0o600)

        bird = lab.Bird(L, topo.fabric, topo.fabric_v4, lab.FABRIC_ASN,
                        [lab.Neighbor(node.v4, node.asn, passive=False, name="node1",
                                      bird_options=[f'password "{KEY}";', "ttl security on;"])],
                        interfaces=[topo.fabric_if], bfd=TIMERS)
        routes = [(lab.VIP4, node.v4), (lab.VIP6, node.v6), (IF_VIP, node.v4)]
        bound = [("lo", lab.VIP4), ("lo", lab.VIP6), ("vip0", IF_VIP)]

        def start(name: str, with_caps: set[str], listen: bool) -> lab.Vipd:
            c = lab.vipd_config(L, node, node.asn, topo.fabric_v4, lab.FABRIC_ASN, name)
            c["vips"] = vips
            c["peers"][0].update(passwordFile=key, ttlSecurity=True, bfd=TIMERS.vipd())
            # Both families' return paths (the fabric has no IPv6 peer address to default to),
            # so the raw ICMP and ICMPv6 sockets are both exercised under exactly these caps.
            c["returnPath"] = {"targets": [topo.fabric_v4, topo.fabric_v6]}
            if listen:
                # Nothing listens there: vipd's own dials fail, so the session is BIRD's
                # connection to vipd's port 179.
                c["peers"][0]["port"] = 1179
                c["listen"] = {"enabled": True, "port": 179}
            return lab.Vipd(L, ns, c, name=name, wrapper=setpriv(with_caps))

        def nothing_bound(what: str) -> None:
            for ifname, cidr in bound:
                if ns.link(ifname) is not None:
                    lab.check(not ns.address_entries(ifname, cidr),
                              f"{what}: {cidr} is not on {ifname}: {ns.addr_show(ifname)}")

        def up_in_bird(v: lab.Vipd, what: str) -> None:
            """The session Established and BFD Up in BIRD's view; fails at once if vipd exits."""
            def running() -> None:
                if not v.proc.alive():
                    last = v.proc.log_text().strip().splitlines()[-1:]
                    lab.check(False, f"{what}: vipd exited {v.proc.popen.returncode}: {last}")
            lab.wait_until(lambda: not v.proc.alive()
                           or bird.neighbor_state(node.v4) == "Established", UP_S, 0.1,
                           lambda: f"{what}: Established in BIRD ({bird.neighbor_state(node.v4)})")
            running()
            lab.wait_until(lambda: not v.proc.alive() or bird.bfd_state(node.v4) == "Up", UP_S,
                           0.1, lambda: f"{what}: BFD Up in BIRD ({bird.bfd_sessions()})")
            running()

        def routes_in_bird(what: str) -> None:
            for prefix, hop in routes:
                r = lab.wait_until(lambda p=prefix: bird.route(p), UP_S, 0.1,
                                   f"{what}: {prefix} in BIRD")
                lab.check(hop in r["nexthops"],
                          f"{what}: {prefix} via {hop}, not {r['nexthops']}")

        def stop(v: lab.Vipd, what: str) -> None:
            v.proc.signal(signal.SIGTERM)
            lab.check(v.wait_exit(15) == 0, f"{what}: vipd exits 0 on SIGTERM")
            lab.wait_until(lambda: bird.neighbor_state(node.v4) != "Established", 15, 0.1,
                           f"{what}: BIRD sees the session go down")

        # 1. The manifests' set: every privileged feature at once.
        what = "manifests' set"
        v = start("vipd-caps", caps, listen=True)
        check_running_caps(v, caps)
        up_in_bird(v, what)
        routes_in_bird(what)
        for vip in (lab.VIP4, lab.VIP6):
            lab.wait_until(lambda: v.status()["returnPath"]["vips"].get(vip, {}).get("state")
                           == "passing", UP_S, 0.2,
                           lambda: f"{what}: the return-path check verifies {vip}: "
                           f"{v.status()['returnPath']}")
        st = v.peer_status(lab.FABRIC_V4)
        lab.check(st["state"] == "Established" and st["ttlSecurity"] is True,
                  f"{what}: vipd's view: {st['state']}, ttlSecurity {st['ttlSecurity']}")
        lab.check(v.log_lines("using the connection the peer opened"),
                  f"{what}: the session is BIRD's connection to vipd's listener")
        for ifname, cidr in bound:
            lab.check(len(ns.address_entries(ifname, cidr)) == 1,
                      f"{what}: {cidr} on {ifname}: {ns.addr_show(ifname)}")
        if dummy:
            kind = (ns.link("vip0") or {}).get("linkinfo", {}).get("info_kind")
            lab.check(kind == "dummy", f"{what}: vipd created vip0 as a dummy, not {kind}")
        else:
            reason = v.vip_status(REFUSED_VIP)["reason"]
            lab.log(f"{what}: {REFUSED_VIP} on vip1: {reason}")
            lab.check("create dummy vip1" in reason and "not permitted" not in reason
                      and "CAP_NET_ADMIN" not in reason,
                      f"{what}: the kernel refuses the device type, not the permission: {reason}")
        print(f"{what} {sorted(caps)}: Established through the listener with TCP-MD5 and GTSM, "
              f"BFD Up, {len(routes)} VIPs in BIRD via vipd")
        stop(v, what)
        nothing_bound(f"{what}, after SIGTERM")

        # 2. Without NET_BIND_SERVICE the listener cannot start: vipd stops and says why.
        what = "without NET_BIND_SERVICE"
        fewer = caps - {"NET_BIND_SERVICE"}
        v = start("vipd-no-bind", fewer, listen=True)
        rc = v.wait_exit(10)
        lines = v.log_lines(r"cannot listen for BGP")
        lab.log(f"{what}: exit {rc}: {lines}")
        lab.check(rc != 0, f"{what}: vipd exits non-zero at start, not {rc}")
        lab.check(any("cannot listen for BGP on 0.0.0.0 port 179: Permission denied" in line
                      and "CAP_NET_BIND_SERVICE" in line and "listen.port above 1023" in line
                      for line in lines),
                  f"{what}: the error names CAP_NET_BIND_SERVICE: {lines}")
        nothing_bound(what)
        print(f"{what}: exit {rc}: {lines[0].strip() if lines else ''}")

        # 3. ... which only the listener needs: dialling out, everything else works.
        what = "without NET_BIND_SERVICE, listen off"
        v = start("vipd-dial", fewer, listen=False)
        check_running_caps(v, fewer)
        up_in_bird(v, what)
        routes_in_bird(what)
        print(f"{what}: Established with TCP-MD5 and GTSM, BFD Up (UDP 3784 needs no "
              f"capability), {len(routes)} VIPs in BIRD")
        stop(v, what)
        nothing_bound(f"{what}, after SIGTERM")

        # 4. Without NET_ADMIN: sessions and BFD come up, VIPs are neither bound nor announced.
        what = "without NET_ADMIN"
        fewer = caps - {"NET_ADMIN"}
        if dummy:
            ns.ip("link", "del", "vip0")  # so that vipd has to create it
        v = start("vipd-no-admin", fewer, listen=True)
        check_running_caps(v, fewer)
        up_in_bird(v, what)
        for vip in vips:
            s = v.vip_status(vip["address"])
            lab.log(f"{what}: {vip['address']} on {vip['interface']}: {s['state']}: "
                    f"{s['reason']}")
            lab.check(not s["bound"] and not s["announced"] and "CAP_NET_ADMIN" in s["reason"]
                      and "Operation not permitted" in s["reason"],
                      f"{what}: {vip['address']} is not bound and its status names "
                      f"CAP_NET_ADMIN: {s}")
        lines = v.log_lines(r"CAP_NET_ADMIN")
        lab.check(len(lines) >= len(vips), f"{what}: vipd logs CAP_NET_ADMIN per VIP: {lines}")
        lab.wait_never(lambda: any(bird.has_route(p) for p, _ in routes), NO_ROUTE_S, 0.2,
                       f"{what}: a VIP in BIRD")
        nothing_bound(what)
        if dummy:
            lab.check(ns.link("vip0") is None, f"{what}: vip0 is not created")
        print(f"{what}: Established, BFD Up, no VIP bound or announced; "
              f"{re.sub(r'^.*?vip ', 'vip ', lines[0]).strip() if lines else ''}")
        stop(v, what)

        # 5. Without NET_RAW: only the return-path check is missing, and says so.
        what = "without NET_RAW"
        fewer = caps - {"NET_RAW"}
        v = start("vipd-no-raw", fewer, listen=True)
        check_running_caps(v, fewer)
        up_in_bird(v, what)
        routes_in_bird(what)
        rp = v.status()["returnPath"]
        lab.check(rp["available"] is False and "CAP_NET_RAW" in rp.get("unavailableReason", ""),
                  f"{what}: the return-path check is unavailable and says why: {rp}")
        code, body = v.http("/readyz")
        lab.check(code == 503 and "return-path check unavailable" in body and "CAP_NET_RAW" in body,
                  f"{what}: /readyz names CAP_NET_RAW: {code} {body!r}")
        lab.check(bool(v.log_lines("CAP_NET_RAW")), f"{what}: vipd logs CAP_NET_RAW")
        print(f"{what}: Established, {len(routes)} VIPs in BIRD; {body.strip()}")
        stop(v, what)


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries + ["setpriv"], vipd=True)
