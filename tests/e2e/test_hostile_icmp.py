#!/usr/bin/env python3
"""e2e: the hostile-ICMP suite (issue 28 part 1), beside the hostile-peer one.

Three vipd nodes behind BIRD, defaults (return-path check in enforce mode); the fabric hashes
answers to the VIP onto one node, which relays the others'. A host on the node network that is
no peer (192.0.2.99, tests/e2e/hostile_icmp.py) forges what the check reads, one case at a time:

  own_source     echo replies in vipd's layout from its own address, to each node's address and
                 VIP, naming other nodes as probers: 1000 a second per node
  spoofed_relay  replies spoofed from the peer's address to each node's VIP, naming relay
                 addresses of every kind (another host, multicast, broadcast, loopback, the VIP,
                 the node itself, IPv6 ones) and other ports
  budget_flood   replies spoofed from the peer to the VIP, naming node 2 as the prober: 1000 a
                 second per node (spends only node 2's relay budget)
  truncated      vipd-layout replies cut at every length, with a bad version, kind, family or
                 checksum
  relay_port     datagrams to every node's relay port: forged relays, witness queries from off
                 the node network and from other ports, forged witness answers, garbage: 1000 a
                 second per node
  ipv6           the same kinds of forged replies over IPv6, to the IPv6 VIP

Each case asserts: no node leaves the fabric's route at any 0.2 s sample; no datagram leaves a
node for an address outside the node networks or for a port other than the relay port (a
capture on the fabric bridge); each vipd's CPU time stays under a bound and its RSS grows by less
than 8 MiB (plus ASan's quarantine in a sanitized build); and the drop the case should cause is counted
(vipd_return_path_relay_drops_total{reason}, or the witness refusals).

Then the "one spoofed packet" case: the fabric stops routing answers back to the VIP (as a route
reflector that installs no routes), node 1's vipd restarts (trusting nothing yet), and one echo
reply spoofed from the peer to the VIP arrives: the peer must not become trusted evidence, and
node 1 must stay announced over the following rounds.
"""
import ipaddress
import json
import os
import sys
import time

import lab

HOSTILE_V4 = "192.0.2.99"
HOSTILE_V6 = "2001:db8::99"
VIP4 = lab.VIP4.split("/")[0]
VIP6 = lab.VIP6.split("/")[0]
CASE_SECONDS = 5  # two and a half return-path rounds (2 s each) under each flood
RATE_PER_NODE = 1000
CPU_BOUND = 0.5  # of one core, per vipd, over a case (sanitized build)
# ASan keeps freed memory in a 16 MiB quarantine (scripts/dev.sh): a sanitized vipd may grow by
# that much without holding anything.
RSS_GROWTH_BOUND_KB = (8 + (16 if os.environ.get("VIPD_SANITIZED") else 0)) * 1024
NODE_NETS = [ipaddress.ip_network("192.0.2.0/24"), ipaddress.ip_network("2001:db8::/64")]
HERE = os.path.dirname(os.path.abspath(__file__))


def mac(ns: lab.Namespace, ifname: str) -> str:
    return json.loads(ns.ip("-j", "link", "show", ifname).stdout)[0]["address"]


def drops(v: lab.Vipd) -> dict:
    c = v.status()["returnPath"]["counters"]
    out = dict(c.get("relaysDroppedByReason", {}))
    out["malformed"] = c.get("malformedReplies", 0)
    out["witness_refused"] = c.get("witnessQueriesRefused", 0)
    out["relays_sent"] = c.get("relaysSent", 0)
    return out


def test() -> None:
    with lab.Lab("hostile-icmp") as L:
        e = lab.build_ecmp(L, ["vipd", "vipd", "vipd"])
        topo, nodes, vipds = e.topo, e.topo.nodes, e.speakers
        topo.fabric.sysctl("net.ipv4.fib_multipath_hash_policy", "0")
        evil = L.namespace("evil")
        evil.add_veth("eth0", topo.fabric, "evil", peer_bridge="br0")
        evil.add_address("eth0", f"{HOSTILE_V4}/24")
        evil.add_address("eth0", f"{HOSTILE_V6}/64")
        macs = [mac(n.ns, "eth0") for n in nodes]
        all4 = sorted(n.v4 for n in nodes)
        lab.wait_until(lambda: all(v.status()["returnPath"]["vips"].get(lab.VIP4, {})
                                   .get("state") == "passing" for v in vipds), 40, 0.2,
                       "every node's return path to pass")
        # Every UDP datagram a node sends (by the nodes' MACs: the hostile host spoofs their
        # addresses too).
        capture = L.path("udp.txt")
        from_nodes = " or ".join(f"ether src {m}" for m in macs)
        tcpdump = L.start(topo.fabric, "tcpdump", [
            "tcpdump", "-i", "br0", "-n", "-l", "-w", L.path("udp.pcap"),
            f"udp and not port 179 and ({from_nodes})"])
        time.sleep(1)

        def others(i: int) -> list[str]:
            return [n.v4 for j, n in enumerate(nodes) if j != i]

        cases = {
            "own_source": ("source", [
                t for i, n in enumerate(nodes) for dst in (n.v4, VIP4) for relay in others(i)
                for t in [{"type": "echo", "src": HOSTILE_V4, "dst": dst, "dst_mac": macs[i],
                           "relay": relay}]]),
            "spoofed_relay": ("relay_address", [
                {"type": "echo", "src": lab.FABRIC_V4, "dst": VIP4, "dst_mac": macs[i],
                 "relay": relay, "port": port}
                for i, n in enumerate(nodes)
                for relay, port in [("198.51.100.7", 9475), ("224.0.0.1", 9475),
                                    ("255.255.255.255", 9475), ("192.0.2.255", 9475),
                                    ("127.0.0.1", 9475), (VIP4, 9475), (n.v4, 9475),
                                    ("0.0.0.0", 9475), ("ff02::1", 9475), ("::1", 9475),
                                    ("fe80::1", 9475), ("2001:db8:99::1", 9475),
                                    (VIP6, 9475), (others(i)[0], 53), (others(i)[0], 9476)]]),
            "budget_flood": ("budget", [
                {"type": "echo", "src": lab.FABRIC_V4, "dst": VIP4, "dst_mac": macs[i],
                 "relay": nodes[1].v4} for i in (0, 2)]),
            "truncated": ("malformed", [
                {"type": "echo", "src": lab.FABRIC_V4, "dst": VIP4, "dst_mac": macs[i],
                 "relay": others(i)[0], **extra}
                for i in range(3)
                for extra in [{"truncate": k} for k in range(6, 36)] +
                [{"version": 9}, {"kind": 7}, {"bad_checksum": True}]]),
            "relay_port": ("witness_refused", [
                {"type": "udp", "src": src, "dst": n.v4, "dst_mac": macs[i], "sport": sport,
                 "payload": payload}
                for i, n in enumerate(nodes)
                for src, sport, payload in [
                    (HOSTILE_V4, 9475, "relay"), (HOSTILE_V4, 9475, "garbage"),
                    ("198.51.100.7", 9475, "witness_query"), (HOSTILE_V4, 4444, "witness_query"),
                    (others(i)[0], 9475, "witness_answer"), (lab.FABRIC_V4, 53, "garbage")]]),
            "ipv6": ("source", [
                {"type": "echo", "src": src, "dst": dst, "dst_mac": macs[i], "relay": relay}
                for i, n in enumerate(nodes)
                for src, dst, relay in [(HOSTILE_V6, VIP6, n.v6), (HOSTILE_V6, n.v6, n.v6),
                                        (lab.FABRIC_V6, VIP6, "ff02::1")]]),
        }
        figures = []
        for name, (reason, spec) in cases.items():
            spec_file = L.path(f"{name}.json")
            with open(spec_file, "w") as f:
                json.dump(spec, f)
            pids = [v.proc.pid for v in vipds]
            cpu0 = [lab.cpu_seconds(p) for p in pids]
            rss0 = [lab.rss_kib(p) for p in pids]
            drops0 = [drops(v) for v in vipds]
            t0 = time.monotonic()
            flood = L.start(evil, f"flood-{name}", [
                sys.executable, os.path.join(HERE, "hostile_icmp.py"), "flood", "--iface",
                "eth0", "--spec", spec_file, "--rate", str(RATE_PER_NODE * 3), "--seconds",
                str(CASE_SECONDS)])
            samples = 0
            while flood.alive() and time.monotonic() - t0 < CASE_SECONDS + 10:
                hops = topo.fabric.kernel_nexthops(lab.VIP4)
                lab.check(hops == all4, f"{name}: a node left the fabric route "
                          f"{time.monotonic() - t0:.1f}s into the case: {hops}")
                samples += 1
                time.sleep(0.2)
            wall = time.monotonic() - t0
            sent = json.loads(flood.log_text().strip().splitlines()[-1])["sent"]
            # Two more rounds: a withdrawal the case caused would show now.
            t_after = time.monotonic()
            while time.monotonic() - t_after < 5:
                lab.check(topo.fabric.kernel_nexthops(lab.VIP4) == all4,
                          f"{name}: a node left the fabric route after the case")
                time.sleep(0.2)
            cpu = [(lab.cpu_seconds(p) - c) / wall for p, c in zip(pids, cpu0)]
            rss = [lab.rss_kib(p) - r for p, r in zip(pids, rss0)]
            after = [drops(v) for v in vipds]
            grew = [a[reason] - d.get(reason, 0) for a, d in zip(after, drops0)]
            relayed = [a["relays_sent"] - d["relays_sent"] for a, d in zip(after, drops0)]
            states = [v.status()["returnPath"]["vips"][lab.VIP4]["state"] for v in vipds]
            line = (f"{name}: {sent} packets in {wall:.1f}s; {samples} route samples, 3/3 "
                    f"throughout; CPU {[round(c, 3) for c in cpu]} of a core; RSS growth "
                    f"{rss} KiB; '{reason}' drops counted {grew}; relays sent {relayed}; states {states}")
            lab.log(line)
            figures.append(f"{name}_cpu_max={max(cpu):.3f}")
            lab.check(sent > RATE_PER_NODE * CASE_SECONDS, f"{name}: the flood sent only {sent}")
            lab.check(max(cpu) < CPU_BOUND, f"{name}: vipd CPU {cpu} over {CPU_BOUND}")
            lab.check(max(rss) < RSS_GROWTH_BOUND_KB, f"{name}: RSS grew {rss} KiB")
            lab.check(sum(grew) > 0, f"{name}: no '{reason}' drop counted: {grew}")
            lab.check(all(s == "passing" for s in states), f"{name}: states {states}")

        tcpdump.stop()
        out = lab.run(["tcpdump", "-n", "-r", L.path("udp.pcap")], check=False).stdout
        with open(capture, "w") as f:
            f.write(out)
        bad = []
        count = 0
        for line in out.splitlines():
            # "12:00:00.000000 IP 192.0.2.11.9475 > 192.0.2.12.9475: UDP, length 16"
            parts = line.split()
            if len(parts) < 5 or parts[1] not in ("IP", "IP6"):
                continue
            count += 1
            dst = parts[4].rstrip(":")
            addr, _, port = dst.rpartition(".")
            try:
                a = ipaddress.ip_address(addr)
            except ValueError:
                bad.append(line)
                continue
            nodes_ok = any(a in net for net in NODE_NETS) and str(a) not in (HOSTILE_V4,
                                                                            HOSTILE_V6)
            if not nodes_ok or port != "9475":
                bad.append(line)
        by_dst: dict[str, int] = {}
        for line in out.splitlines():
            parts = line.split()
            if len(parts) >= 5:
                by_dst[parts[4]] = by_dst.get(parts[4], 0) + 1
        lab.log(f"{count} datagrams from the nodes captured ({by_dst}); {len(bad)} to anything "
                f"but a node's relay port")
        lab.check(count > 0, "the capture saw no relay at all")
        lab.check(not bad, f"datagrams to addresses outside the node networks or other ports: "
                  f"{bad[:10]}")

        # ---- one spoofed reply on a node whose peer routes nothing back ----
        rr = L.path("rr.nft")
        with open(rr, "w") as f:
            f.write("table ip rr {\n chain out {\n  type filter hook output priority 0;\n"
                    f"  ip daddr {VIP4} icmp type echo-reply drop\n"
                    "  }\n}\n")
        lab.run(topo.fabric.argv(["nft", "-f", rr]))
        v1 = vipds[0]
        v1.restart()
        lab.wait_until(lambda: nodes[0].v4 in topo.fabric.kernel_nexthops(lab.VIP4), 30, 0.2,
                       "node 1 back in the route after its restart")

        def target1() -> dict:
            return v1.status()["returnPath"]["targets"][0]

        lab.wait_until(lambda: v1.status()["returnPath"]["counters"]["rounds"] >= 2, 20, 0.2,
                       "two rounds on node 1")
        lab.check(not target1()["trusted"], f"the peer is trusted already: {target1()}")
        one = L.path("one.json")
        with open(one, "w") as f:
            json.dump([{"type": "echo", "src": lab.FABRIC_V4, "dst": VIP4, "dst_mac": macs[0],
                        "relay": nodes[0].v4}], f)
        lab.run(evil.argv([sys.executable, os.path.join(HERE, "hostile_icmp.py"), "flood",
                           "--iface", "eth0", "--spec", one, "--rate", "1", "--seconds", "1"]))
        r0 = v1.status()["returnPath"]["counters"]["rounds"]
        lab.wait_until(lambda: v1.status()["returnPath"]["counters"]["rounds"] >= r0 + 5, 30,
                       0.2, "five more rounds on node 1")
        rp = v1.status()["returnPath"]
        lab.log(f"one spoofed reply: target {rp['targets'][0]}, VIP {rp['vips'][lab.VIP4]}")
        lab.check(not rp["targets"][0]["trusted"],
                  f"one spoofed reply made the peer trusted: {rp['targets'][0]}")
        lab.check(rp["vips"][lab.VIP4]["state"] != "broken", f"node 1 broken: {rp}")
        lab.check(nodes[0].v4 in topo.fabric.kernel_nexthops(lab.VIP4),
                  "node 1 left the route after one spoofed reply")
        print("FIGURES hostile_icmp " + " ".join(figures), flush=True)


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries + ["nft", "tcpdump"], vipd=True)
