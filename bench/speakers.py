"""The VIP speakers the benchmark compares, behind one interface.

Each adapter runs one speaker on one lab node, configured the way a platform team would run it
as a VIP speaker: it dials the fabric (GoBGP excepted, see below), announces the lab's two VIPs
(IPv4 /32 and IPv6 /128, with the node as next hop and the lab's communities), imports nothing,
uses the same hold time, and optionally single-hop BFD. The adapter knows the speaker's own
commands for a planned withdraw and for putting the route back.

Only vipd binds the VIPs itself; for the others the lab binds them on lo (an operator's
`ip addr add`) before the speaker starts, so their start-up figure does not include it.

GoBGP is passive and the fabric dials it: its own first connect is delayed 5-10 s whatever
`connect-retry` says (GoBGP's minimum connect-retry interval), which would dominate its start
figure; a fabric that dials is the set-up a GoBGP user would choose.

With a health gate (Health: the node's apiserver, for the apiserver scenarios) each speaker gates
the VIP the way its users would:
  vipd    its own gate, `health.type: apiserver` with url and caFile, every other health key at
          vipd's documented default
  ExaBGP  Debian's `python3 -m exabgp healthcheck` as its API process (HEALTHCHECK_SETTINGS),
          IPv4 VIP only (one healthcheck process announces one next hop family)
  BIRD    the VIPs as `protocol static` (origin4, origin6), a shell loop (bird_check.sh) running
          curl against /readyz every second and `birdc disable`/`enable` on a change
GoBGP and FRR are not run in those scenarios.

FRR runs with `bgp graceful-restart-disable`: it advertises graceful restart by default, and the
fabric (BIRD, graceful restart aware by default) then keeps a stopped, frozen or cut-off FRR's
path as stale for FRR's 120 s restart time instead of dropping it; no VIP speaker wants that.
"""
from __future__ import annotations

import os
import signal
import sys
import time
from typing import Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
import lab  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

ORIGINS = lambda node: [lab.Origin(lab.VIP4), lab.Origin(lab.VIP6, next_hop=node.v6)]  # noqa: E731


def descendants(pid: int) -> list[int]:
    """pid and every process below it (from /proc's parent links)."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


class Health:
    """The node's apiserver check every gated speaker uses: url (https://127.0.0.1:6443/readyz),
    the cluster CA, and the name the serving certificate carries (kubeadm's: `kubernetes`)."""

    def __init__(self, ca_file: str, url: str = "https://127.0.0.1:6443/readyz",
                 server_name: str = "kubernetes"):
        self.ca_file, self.url, self.server_name = ca_file, url, server_name

    def curl(self) -> str:
        """The check a user writes: curl verifying the CA and the certificate's name, at most
        1 s, passing only on HTTP 200 with the body "ok"."""
        host_port = self.url.split("//", 1)[1].split("/", 1)[0]
        host, port = host_port.rsplit(":", 1)
        path = "/" + self.url.split("//", 1)[1].split("/", 1)[1]
        return (f'test "$(curl -fsS --max-time 1 --cacert {self.ca_file} --resolve '
                f'{self.server_name}:{port}:{host} https://{self.server_name}:{port}{path})" = ok')


# ExaBGP's healthcheck: a failed check is checked again after fast-interval, two in a row
# withdraw (--withdraw-on-down; by default it would only raise the MED), two passes announce.
# --timeout is whole seconds (1 is its minimum), --interval 1 s as vipd's default.
HEALTHCHECK_SETTINGS = {"interval": "1", "fast-interval": "0.2", "timeout": "1", "rise": "2",
                        "fall": "2"}
BIRD_CHECK_INTERVAL_S = 1  # bird_check.sh: sleep 1 between checks; one failure disables


class Speaker:
    """One speaker instance on one node. start() spawns it (for GoBGP it also issues the
    `global rib add` commands, part of its start-up); the lab waits for the fabric route."""
    kind = ""
    supports_bfd = False
    dials = True  # False: the fabric dials this speaker
    withdraw_how = ""  # the planned-withdraw command, for the report
    supports_health = False  # True: runs gated by the node's apiserver (health=)

    def __init__(self, L: lab.Lab, node: lab.Node, hold_s: int,
                 bfd: Optional[lab.BfdTimers], build_dir: str, peer_v4: str = lab.FABRIC_V4,
                 peer_asn: int = lab.FABRIC_ASN, health: Optional[Health] = None):
        if health and not self.supports_health:
            raise NotImplementedError(f"{self.kind} has no apiserver-gated set-up here")
        self.L, self.node, self.hold_s, self.bfd = L, node, hold_s, bfd
        self.health = health
        self.build_dir, self.peer_v4, self.peer_asn = build_dir, peer_v4, peer_asn
        self.runs = 0
        self.impl = None

    @property
    def name(self) -> str:
        return f"{self.kind}-n{self.node.index}-r{self.runs}"

    binds_vips = False  # True: the speaker puts the VIPs on lo itself (vipd)

    def start(self) -> None:
        self.runs += 1
        if self.runs == 1 and not self.binds_vips:
            lab.bind_vips(self.node.ns)  # the operator's `ip addr add`, before the speaker starts
        self._start()

    def _start(self) -> None:
        raise NotImplementedError

    def roots(self) -> list[int]:
        """The PIDs the lab started for this speaker (their children count too)."""
        return [p.pid for p in self.impl.procs if p.alive()]

    def pids(self) -> list[int]:
        return [q for p in self.roots() for q in descendants(p)]

    def alive(self) -> bool:
        return all(p.alive() for p in self.impl.procs)

    def signal(self, sig: int) -> None:
        for pid in self.pids():
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    def stop(self) -> None:
        for p in reversed(self.impl.procs):
            p.stop(timeout=15)

    def withdraw(self) -> None:
        """The planned-withdraw command; returns when the command has returned."""
        raise NotImplementedError

    def withdrawn(self) -> None:
        """Returns once the withdraw has run its course and announce() may follow."""

    def announce(self) -> None:
        """Undoes withdraw()."""
        raise NotImplementedError

    def drain(self) -> None:
        """Takes the node out for maintenance with this speaker's tools: withdraw, then remove
        the VIPs from lo as soon as the command returns (vipd: `vipctl withdraw --wait`, which
        waits for the peers' acknowledgement and unbinds by itself)."""
        self.withdraw()
        for v in (lab.VIP4, lab.VIP6):
            self.node.ns.del_address("lo", v)

    def undrain(self) -> None:
        lab.bind_vips(self.node.ns)
        self.announce()


class VipdSpeaker(Speaker):
    kind, supports_bfd, binds_vips, supports_health = "vipd", True, True, True
    withdraw_how = "vipctl withdraw --transient"
    return_path_mode: Optional[str] = None  # None: vipd's default (enforce)

    def _start(self) -> None:
        config = lab.vipd_config(self.L, self.node, self.node.asn, self.peer_v4, self.peer_asn,
                                 self.name)
        config["peers"][0]["holdTime"] = f"{self.hold_s}s"
        if self.health:
            # vipd's documented defaults for everything else (interval, timeout, rise, fall,
            # onFailure withdraw, unbindWhenUnhealthy).
            config["health"] = {"type": "apiserver", "url": self.health.url,
                                "caFile": self.health.ca_file}
        if self.bfd:
            config["peers"][0]["bfd"] = self.bfd.vipd()
        if self.return_path_mode:
            config["returnPath"] = {"mode": self.return_path_mode}
        del config["drain"]  # vipd's defaults: GRACEFUL_SHUTDOWN for 2 s, unbind 1 s after the ack
        self.impl = lab.Vipd(self.L, self.node.ns, config, build_dir=self.build_dir, name=self.name)

    def _vipctl(self, *args: str) -> None:
        # From the host, as on a node: the control socket is a file, not in the namespace.
        lab.run([lab.vipd_binary("vipctl", self.build_dir), "--socket", self.impl.socket]
                + list(args), timeout=30)

    def withdraw(self) -> None:
        self._vipctl("withdraw", "--transient", "--reason", "benchmark")

    def withdrawn(self) -> None:
        # The withdraw is a drain: GRACEFUL_SHUTDOWN for 2 s, withdraw, unbind 1 s after the
        # peers' acknowledgement; `vipctl announce` is refused until it has finished.
        lab.wait_until(lambda: not self.node.ns.address_entries("lo", lab.VIP4), 15, 0.05,
                       "vipd to unbind the VIP after the withdraw")

    def announce(self) -> None:
        self._vipctl("announce")

    def drain(self) -> None:
        self._vipctl("withdraw", "--wait", "--transient", "--reason", "benchmark drain")

    def undrain(self) -> None:
        self.announce()


class VipdNoReturnPathSpeaker(VipdSpeaker):
    """vipd without its return-path check (returnPath.mode off): what the check, a feature no
    other speaker here has, costs in the idle figures. Run only when named (--speakers)."""
    kind = "vipd-norp"
    return_path_mode = "off"


class GobgpSpeaker(Speaker):
    kind, dials = "gobgp", False
    withdraw_how = "gobgp global rib del -a ipv4 ... (then -a ipv6)"

    def _start(self) -> None:
        self.impl = lab.Gobgp(self.L, self.node.ns, self.node.v4, self.node.asn,
                              [lab.Neighbor(self.peer_v4, self.peer_asn, passive=True)],
                              origins=ORIGINS(self.node), name=self.name, hold_time=self.hold_s,
                              local_address=self.node.v4, import_routes=False,
                              api_socket=True)

    def withdraw(self) -> None:
        self.impl.del_route(lab.Origin(lab.VIP4))
        self.impl.del_route(lab.Origin(lab.VIP6))

    def announce(self) -> None:
        for o in ORIGINS(self.node):
            self.impl.add_route(o)


class ExabgpSpeaker(Speaker):
    kind, supports_health = "exabgp", True
    withdraw_how = "API: withdraw route ... (a line to its API process)"

    def _start(self) -> None:
        if self.health:
            self._start_healthcheck()
            return
        self.fifo = self.L.path(f"{self.name}.fifo")
        self.impl = lab.Exabgp(
            self.L, self.node.ns, self.node.v4, self.node.asn,
            [lab.Neighbor(self.peer_v4, self.peer_asn, passive=False, next_hop_v6=self.node.v6)],
            local_address=self.node.v4, origins=ORIGINS(self.node), name=self.name,
            hold_time=self.hold_s, record=False, control_fifo=self.fifo)

    def _start_healthcheck(self) -> None:
        """ExaBGP whose only API process is its own healthcheck, announcing the IPv4 VIP while
        the check passes (the VIPs are on lo already: --no-ip-setup)."""
        hc = self.L.path(f"{self.name}-healthcheck.conf")
        lines = [f"{k} = {v}" for k, v in HEALTHCHECK_SETTINGS.items()] + [
            "no-syslog", "no-ack", "no-ip-setup", "withdraw-on-down", f"name = {self.name}",
            f"ip = {lab.VIP4}", f"community = {' '.join(lab.COMMUNITIES)}",
            f"large-community = {' '.join(lab.LARGE_COMMUNITIES)}",
            f"command = {self.health.curl()}"]
        with open(hc, "w") as f:
            f.write("\n".join(lines) + "\n")
        conf = self.L.path(f"{self.name}.conf")
        c = ["process healthcheck {",
             f"  run /usr/bin/python3 -m exabgp healthcheck --config {hc};",
             "  encoder text;",
             "}",
             f"neighbor {self.peer_v4} {{",
             f"  router-id {self.node.v4};",
             f"  local-address {self.node.v4};",
             f"  local-as {self.node.asn};",
             f"  peer-as {self.peer_asn};",
             f"  hold-time {self.hold_s};",
             "  passive false;",
             "  family { ipv4 unicast; ipv6 unicast; }",
             "  api { processes [ healthcheck ]; }",
             "}"]
        with open(conf, "w") as f:
            f.write("\n".join(c) + "\n")
        env = {"exabgp_daemon_daemonize": "false", "exabgp_daemon_user": "root",
               "exabgp_daemon_drop": "false", "exabgp_log_destination": "stdout",
               "exabgp_api_cli": "false", "exabgp_api_ack": "false"}
        proc = self.L.start(self.node.ns, self.name, ["exabgp", conf], env=env)
        self.impl = type("ExabgpHealthcheck", (), {"procs": [proc]})()

    def _api(self, *lines: str) -> None:
        deadline = time.monotonic() + 10
        while True:
            try:
                fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError:  # ENXIO: ExaBGP's API process has not opened it yet
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{self.name}: its API process never opened {self.fifo}")
                time.sleep(0.01)
        try:
            os.write(fd, "".join(line + "\n" for line in lines).encode())
        finally:
            os.close(fd)

    def _routes(self, verb: str) -> list[str]:
        attrs = (f" community [ {' '.join(lab.COMMUNITIES)} ]"
                 f" large-community [ {' '.join(lab.LARGE_COMMUNITIES)} ]")
        return [f"{verb} route {lab.VIP4} next-hop self{attrs}",
                f"{verb} route {lab.VIP6} next-hop {self.node.v6}{attrs}"]

    def withdraw(self) -> None:
        self._api(*self._routes("withdraw"))

    def announce(self) -> None:
        self._api(*self._routes("announce"))


class FrrSpeaker(Speaker):
    kind, supports_bfd = "frr", True
    withdraw_how = "vtysh: no network ... (both families, one vtysh call)"

    def _start(self) -> None:
        self.impl = lab.Frr(
            self.L, self.node.ns, self.node.v4, self.node.asn,
            [lab.Neighbor(self.peer_v4, self.peer_asn, passive=False, next_hop_v6=self.node.v6)],
            origins=ORIGINS(self.node), name=self.name, hold_time=self.hold_s, bfd=self.bfd,
            import_routes=False, graceful_restart=False)

    def _networks(self, no: str) -> None:
        cmds = ["configure terminal", f"router bgp {self.node.asn}"]
        for afi, prefix in (("ipv4", lab.VIP4), ("ipv6", lab.VIP6)):
            cmds += [f"address-family {afi} unicast", f"{no}network {prefix} route-map ORIGIN",
                     "exit-address-family"]
        self.impl.vtysh(*cmds)

    def withdraw(self) -> None:
        self._networks("no ")

    def announce(self) -> None:
        self._networks("")


class BirdSpeaker(Speaker):
    kind, supports_bfd, supports_health = "bird", True, True
    withdraw_how = "birdc disable origin4 (then origin6)"

    def _start(self) -> None:
        self.impl = lab.Bird(
            self.L, self.node.ns, self.node.v4, self.node.asn,
            [lab.Neighbor(self.peer_v4, self.peer_asn, passive=False, name="fabric")],
            interfaces=["eth0"], origins=ORIGINS(self.node), next_hop_v6=self.node.v6,
            name=self.name, hold_time=self.hold_s, bfd=self.bfd, import_routes=False)
        if self.health:
            self.impl.procs.append(self.L.start(self.node.ns, f"{self.name}-check", [
                "bash", os.path.join(HERE, "bird_check.sh"), self.impl.sock,
                str(BIRD_CHECK_INTERVAL_S), self.health.curl()]))

    def withdraw(self) -> None:
        self.impl.birdc("disable", "origin4")
        self.impl.birdc("disable", "origin6")

    def announce(self) -> None:
        self.impl.birdc("enable", "origin4")
        self.impl.birdc("enable", "origin6")


KINDS = {c.kind: c for c in (VipdSpeaker, VipdNoReturnPathSpeaker, GobgpSpeaker, ExabgpSpeaker,
                             FrrSpeaker, BirdSpeaker)}

BINARIES = {"vipd": [], "vipd-norp": [], "gobgp": lab.Gobgp.binaries, "exabgp": lab.Exabgp.binaries,
            "frr": lab.Frr.bfd_binaries, "bird": lab.Bird.binaries}


def make(kind: str, *args, **kw) -> Speaker:
    return KINDS[kind](*args, **kw)


def freeze(s: Speaker) -> None:
    s.signal(signal.SIGSTOP)


def thaw(s: Speaker) -> None:
    s.signal(signal.SIGCONT)
