#!/usr/bin/env python3
"""e2e: no config edit takes the VIP down (issue 40 part 4, issue 43's config items).

One vipd node (AS 65001) and BIRD (AS 65000) sending it every path back (ADD-PATH), so vipd
has the fabric's view and the withdraw guard (guard.minAnnouncers 1, the default) can check.
The config file is rewritten under the running vipd in the ways an operator, a script or an
attacker with write access to its directory would; `ip -timestamp monitor route` runs in the
fabric for the whole test, and at the end no kernel route to either VIP may have been deleted.
After each edit vipd must still answer on its control socket (within CONTROL_S), announce both
VIPs and say in status what it refused:
1. the alias bomb (633 bytes, six levels of ten aliases under a key vipd does not know) renamed
   over the config: refused, "more than 20000 nodes"; on main the daemon died of
   std::bad_alloc. `vipd validate` on it exits 1 with that message (on main it aborted);
2. a FIFO renamed over the config: refused at once as "a FIFO, not a regular file"; on main the
   one thread hung in open() (the control socket dead, BGP hold timers expiring). `vipd
   validate` and `vipd doctor` on the FIFO return within CLI_S;
3. the config a symlink to a secret outside its directory (as /etc/shadow was): refused unread,
   the secret in neither the log nor status; on main every line of it was logged and shown;
4. a slow in-place writer (`cat >`, scp) paused PAUSE_S before the last VIP: nothing is read
   until it closes the file (no reload during the pause); on main the half-written file was
   applied, the last VIP withdrawn and unbound, and the fabric's route to it deleted;
5. the file truncated to zero, then rewritten a second later: the empty file is refused ("the
   file is empty"), the rewrite is valid and unchanged;
6. a whole, valid config without the last VIP (renamed into place): this node is the only one
   announcing it, so the guard keeps it, pending with the reason, as `vipctl withdraw` would.
VIPD_CONFIG_EDITS_STEPS=2,4 runs only those edits (to show each one failing on an old build).
"""
import os
import re
import shutil
import subprocess
import tempfile
import time

import lab

CONTROL_S = 5.0  # vipd answers its control socket within this after any edit
CLI_S = 10.0  # `vipd validate` / `vipd doctor` on a refused file return within this
APPLY_S = 5.0  # a finished edit is read within this
PAUSE_S = 2.0  # the slow writer's pause before the last VIP (on main: 1.5 s without a route)
VIP_LAST = "203.0.113.20/32"
SECRET = "vipd-e2e-secret-line-not-for-any-log"
STEPS = {int(n) for n in os.environ.get("VIPD_CONFIG_EDITS_STEPS", "1,2,3,4,5,6").split(",")}


def config_text(L: lab.Lab, node: lab.Node, peer_addr: str, vips: list[str]) -> str:
    """The node's config with `vips` last, so that a file cut before the last VIP still parses
    (on main it was applied: that VIP withdrawn)."""
    lines = [
        "apiVersion: vipd.io/v1alpha1",
        "kind: SpeakerConfiguration",
        f"routerId: {node.v4}",
        f"localAsn: {node.asn}",
        "peers:",
        f"  - address: {peer_addr}",
        f"    asn: {lab.FABRIC_ASN}",
        f"    sourceAddress: {node.v4}",
        "    holdTime: 9s",
        "    connectRetryTime: 1s",
        "control:",
        f"  socket: {L.path('vipd-n1.sock')}",
        f"  stateDir: {L.path('vipd-n1-state')}",
        "drain:",
        "  gracefulShutdownTime: 300ms",
        f"  unbindDelay: {lab.UNBIND_DELAY}",
        "health:",
        "  type: none",
        "vips:",
    ]
    lines += [f"  - address: {v}" for v in vips]
    return "\n".join(lines) + "\n"


def alias_bomb(base: str) -> str:
    """base plus six levels of ten aliases under keys vipd does not know: a million nodes."""
    out = base + "x0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
    for level in range(1, 7):
        out += f"x{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 10) + "]\n"
    return out


class RouteDeletions:
    """`ip -timestamp monitor route` in the fabric: every deletion of a route to a VIP."""

    def __init__(self, L: lab.Lab, fabric: lab.Namespace, prefixes: list[str]):
        self.prefixes = [p.split("/")[0] for p in prefixes]
        self.proc = L.start(fabric, "route-monitor", ["ip", "-timestamp", "monitor", "route"])
        time.sleep(0.2)  # subscribed before anything happens

    def deletions(self) -> list[str]:
        return [ln for ln in self.proc.log_text().splitlines()
                if ln.startswith("Deleted ") and
                any(ln.startswith(f"Deleted {p} ") or ln.startswith(f"Deleted {p}/")
                    for p in self.prefixes)]


def test() -> None:
    outside = tempfile.mkdtemp(prefix="vipd-e2e-outside-")  # a secret outside the config's dir
    try:
        with lab.Lab("config-edits") as L:
            run(L, outside)
    finally:
        shutil.rmtree(outside, ignore_errors=True)


def run(L: lab.Lab, outside: str) -> None:
    topo = L.fabric_with_nodes(1)
    node, fabric = topo.nodes[0], topo.fabric
    bird = lab.Bird(L, fabric, topo.fabric_v4, lab.FABRIC_ASN,
                    [lab.Neighbor(node.v4, node.asn, passive=True, name="node1",
                                  add_paths_tx=True)],
                    interfaces=[topo.fabric_if])
    conf_dir = L.path("etc-vipd")
    os.mkdir(conf_dir)
    conf = os.path.join(conf_dir, "vipd.yaml")
    good = config_text(L, node, topo.fabric_v4, [lab.VIP4, VIP_LAST])
    with open(conf, "w") as f:
        f.write(good)
    vipd = lab.Vipd(L, node.ns, good, name="vipd-n1", config_path=conf)
    vipd.socket = L.path("vipd-n1.sock")
    lab.wait_until(lambda: bird.protocol_state("node1") == "Established", 40, 0.2,
                   lambda: f"node1 Established: {bird.protocol_state('node1')}")
    lab.wait_until(lambda: fabric.kernel_nexthops(lab.VIP4) == [node.v4] and
                   fabric.kernel_nexthops(VIP_LAST) == [node.v4], 20, 0.1,
                   lambda: f"both VIPs in the fabric's kernel: {fabric.route_show(lab.VIP4)!r} "
                   f"{fabric.route_show(VIP_LAST)!r}")
    lab.wait_until(lambda: vipd.status()["fabric"]["vips"][VIP_LAST].get("available"), 20, 0.2,
                   lambda: f"the fabric view of {VIP_LAST}: {vipd.status().get('fabric')}")
    monitor = RouteDeletions(L, fabric, [lab.VIP4, VIP_LAST])
    vipctl = lab.vipd_binary("vipctl")
    vipd_bin = lab.vipd_binary("vipd")

    def answers(after: str) -> dict:
        """vipd answers status within CONTROL_S and still announces both VIPs."""
        t0 = time.monotonic()
        try:
            p = node.ns.run([vipctl, "--socket", vipd.socket, "status", "--json"], check=False,
                            timeout=CONTROL_S)
        except subprocess.TimeoutExpired:
            lab.check(False, f"after {after}: vipd did not answer status within {CONTROL_S}s "
                      f"(alive: {vipd.proc.alive()})")
        lab.check(p.returncode == 0, f"after {after}: vipctl status exit {p.returncode}: "
                  f"{p.stdout[-300:]}{p.stderr[-300:]} (vipd alive: {vipd.proc.alive()})")
        lab.log(f"after {after}: status in {time.monotonic() - t0:.2f}s")
        lab.check(fabric.kernel_nexthops(lab.VIP4) == [node.v4] and
                  fabric.kernel_nexthops(VIP_LAST) == [node.v4],
                  f"after {after}: both VIPs via {node.v4}: {fabric.route_show(lab.VIP4)!r} "
                  f"{fabric.route_show(VIP_LAST)!r}")
        return vipd.status()

    def reloads() -> int:
        return len(vipd.log_lines(r"file change seen; re-reading"))

    def refused(after: str, pattern: str) -> None:
        """The reload after `after` failed with an error matching pattern; vipd runs on."""
        lab.wait_until(lambda: re.search(pattern, vipd.status()["config"].get(
            "lastReloadError", "")), APPLY_S + CONTROL_S, 0.1,
            lambda: f"status config.lastReloadError to match {pattern!r} after {after}: "
            f"{vipd.status()['config']}")
        answers(after)

    def rename_over(text_or_make) -> None:
        tmp = os.path.join(conf_dir, ".vipd.yaml.tmp")
        if callable(text_or_make):
            text_or_make(tmp)
        else:
            with open(tmp, "w") as f:
                f.write(text_or_make)
        os.rename(tmp, conf)

    def restore(after: str) -> None:
        rename_over(good)
        lab.wait_until(lambda: vipd.status()["config"].get("lastReloadSuccessful") and
                       vipd.status()["config"].get("lastReloadError", "") == "", APPLY_S, 0.1,
                       lambda: f"the good config read again after {after}: "
                       f"{vipd.status()['config']}")

    # 1. The alias bomb, live and through `vipd validate`.
    if 1 in STEPS:
        bomb = alias_bomb(good)
        lab.log(f"alias bomb: {len(bomb) - len(good)} bytes after the valid config")
        rename_over(bomb)
        refused("the alias bomb", r"more than 20000 nodes once its aliases")
        lab.check(vipd.proc.alive(), "vipd survives the alias bomb")
        bomb_file = L.path("bomb.yaml")
        with open(bomb_file, "w") as f:
            f.write(bomb)
        p = lab.run([vipd_bin, "validate", "--config", bomb_file], check=False, timeout=CLI_S)
        lab.check(p.returncode == 1 and "more than 20000 nodes once its aliases" in p.stderr + p.stdout,
                  f"vipd validate on the alias bomb: exit {p.returncode} (1 expected; -6 is an "
                  f"abort): {(p.stdout + p.stderr)[-400:]}")
        restore("the alias bomb")

    # 2. A FIFO renamed over the config; validate and doctor on a FIFO.
    if 2 in STEPS:
        rename_over(lambda tmp: os.mkfifo(tmp, 0o600))
        refused("a FIFO renamed over the config", r"is a FIFO, not a regular file")
        fifo = L.path("fifo.yaml")
        os.mkfifo(fifo, 0o600)
        for argv, what in (([vipd_bin, "validate", "--config", fifo], "vipd validate"),
                           ([vipd_bin, "doctor", "--config", fifo], "vipd doctor")):
            t0 = time.monotonic()
            try:
                p = node.ns.run(argv, check=False, timeout=CLI_S)
            except subprocess.TimeoutExpired:
                lab.check(False, f"{what} on a FIFO did not return within {CLI_S}s")
            lab.check(p.returncode != 0 and "not a regular file" in p.stdout + p.stderr,
                      f"{what} on a FIFO: exit {p.returncode} in {time.monotonic() - t0:.2f}s: "
                      f"{(p.stdout + p.stderr)[-300:]}")
        restore("the FIFO")

    # 3. The config a symlink to a secret outside its directory.
    if 3 in STEPS:
        secret = os.path.join(outside, "shadow")
        with open(secret, "w") as f:
            f.write(f"{SECRET}:$6$salt$hash:19000:0:99999:7:::\nroot:*:19000:0:99999:7:::\n")
        os.chmod(secret, 0o600)
        rename_over(lambda tmp: os.symlink(secret, tmp))
        refused("a symlink to a file outside the config's directory",
                r"is a symlink that leads out of its directory")
        lab.check(not vipd.log_lines(SECRET), "the secret's line is not in vipd's log: "
                  + "; ".join(vipd.log_lines(SECRET))[:300])
        shown = vipd.vipctl("status") + vipd.vipctl("status", "--json")
        lab.check(SECRET not in shown, f"the secret is not in vipctl status: {shown[-400:]}")
        restore("the symlink")

    # 4. A slow in-place writer with a pause before the last VIP.
    if 4 in STEPS:
        before = reloads()
        slow = "# written slowly\n" + good  # differs from what runs: read once it is closed
        cut = slow.index(f"  - address: {VIP_LAST}")
        with open(conf, "w") as f:  # O_TRUNC in place, the inode kept: what `cat >` and scp do
            f.write(slow[:cut])
            f.flush()
            os.fsync(f.fileno())
            t_pause = time.monotonic()
            while time.monotonic() - t_pause < PAUSE_S:
                lab.check(fabric.kernel_nexthops(VIP_LAST) == [node.v4],
                          f"{VIP_LAST} left the fabric {time.monotonic() - t_pause:.2f}s into the "
                          f"writer's pause: {fabric.route_show(VIP_LAST)!r}")
                time.sleep(0.05)
            during = reloads() - before
            f.write(slow[cut:])
        lab.check(during == 0, f"{during} reload(s) read the file while its writer held it open")
        lab.wait_until(lambda: reloads() > before, APPLY_S, 0.1, "the finished file read")
        answers("the slow writer")
        lab.check(node.ns.address_entries("lo", VIP_LAST), f"{VIP_LAST} still bound")

    # 5. Truncated to zero, rewritten a second later.
    if 5 in STEPS:
        with open(conf, "w"):
            pass
        refused("the file truncated to zero", r"the file is empty")
        before = reloads()
        with open(conf, "w") as f:
            f.write(good)
        lab.wait_until(lambda: reloads() > before and vipd.status()["config"].get(
            "lastReloadSuccessful"), APPLY_S, 0.1,
            lambda: f"the rewritten file read: {vipd.status()['config']}")
        answers("the truncated file rewritten")

    # 6. A valid config without the last VIP: the guard keeps it (this node is its only one).
    if 6 in STEPS:
        rename_over(config_text(L, node, topo.fabric_v4, [lab.VIP4]))
        lab.wait_until(lambda: any(VIP_LAST in c.get("key", "") and "guard.minAnnouncers" in
                                   c.get("reason", "")
                                   for c in vipd.status()["config"].get("pendingRestart", [])),
                       APPLY_S, 0.1, lambda: f"the VIP's removal pending with the guard's reason: "
                       f"{vipd.status()['config']}")
        time.sleep(1.0)  # what a removal would have withdrawn by now
        answers("a reload removing the last node's VIP")
        lab.check(vipd.log_lines(r"the reload would take this node off the fabric"),
                  "vipd logs the guard's refusal")
        restore("the guard")

    deleted = monitor.deletions()
    lab.check(not deleted, f"the fabric's kernel deleted a VIP's route: {deleted}")
    lab.check(vipd.proc.alive(), "vipd runs at the end")
    lab.log("every edit refused or applied without a route deletion; vipd answered throughout")


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries, vipd=True)
