#!/usr/bin/env python3
"""e2e: a `control.group` member cannot make the speaker yield (issue 43). BIRD fabric (AS 65000,
graceful restart off: a yield would cost the node its path), one vipd node in static-pod mode
(the speaker lock in its handoff directory), `control.group: nogroup`, its socket in a 0755
directory so that `nobody` (whose primary group is nogroup) may use it.

Asserts:
- `nobody` may use the socket (`vipctl status` exits 0): it is a member, as the issue's caller;
- `nobody` sends `handoff-yield` with a valid identity (the one vipd's `handoff-check` answer
  gives root, as a daemonset successor's): refused with "permission denied", and so is
  `handoff-check`; vipd logs each refusal naming uid 65534 and the caller's pid; vipd stays
  active, its session with BIRD is never down (BIRD's session is the same one, polled every
  50 ms for 2 s) and both VIPs stay in BIRD. Before issue 43 the yield was carried out: the
  session closed and came back 0.7 s later;
- root's `withdraw` and `announce` are logged with uid 0 and the caller's pid.
"""
import json
import os
import pwd
import time

import lab

RAW_REQUEST = r"""
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
reply = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    reply += chunk
sys.stdout.write(reply.decode())
"""


def as_nobody(node: lab.Node, path: str, request: dict) -> dict:
    r = node.ns.run(lab.as_user("nobody") + ["python3", "-c", RAW_REQUEST, path,
                                              json.dumps(request)], check=False, timeout=30)
    lab.check(r.returncode == 0, f"the raw request as nobody failed: {r.stderr}")
    return json.loads(r.stdout)


def test() -> None:
    with lab.Lab("handoff-access") as L:
        sock_dir = lab.socket_dir(L)

        def edit(c: dict, topo: lab.Topology) -> None:
            c["mode"] = "static-pod"
            c["handoff"] = {"dir": L.path("handoff"), "restartTime": "3s"}
            c["control"]["socket"] = os.path.join(sock_dir, "vipd.sock")
            c["control"]["group"] = "nogroup"

        s = lab.build_single_vipd(L, edit, bird_options=["graceful restart off;"])
        bird, vipd, node = s.bird, s.vipd, s.node
        lab.wait_established(bird, [node.v4], 30)
        lab.wait_until(lambda: bird.has_route(lab.VIP4) and bird.has_route(lab.VIP6), 15, 0.1,
                       "both VIPs in BIRD")
        lab.check(vipd.status()["handoff"]["role"] == "active", "the static-pod instance speaks")
        nobody = pwd.getpwnam("nobody").pw_uid

        r = vipd.vipctl_run("status", wrapper=lab.as_user("nobody"))
        lab.check(r.returncode == 0, f"nobody (group nogroup) may use the socket: {r.returncode} "
                                     f"{r.stderr}")

        # The identity a successor would send: vipd's own, with the daemonset's mode.
        check = json.loads(lab.control_exchange(vipd.socket, json.dumps(
            {"command": "handoff-check", "identity": {}}).encode() + b"\n"))
        identity = dict(check["identity"], mode="daemonset")
        lab.log(f"identity a successor would send: {identity}")

        established_before = vipd.status()["peers"][0]["stateFor"]
        t_end = time.monotonic() + 2.0
        answer = as_nobody(node, vipd.socket, {"command": "handoff-yield", "identity": identity})
        print(f"handoff-yield from a control.group member: {answer}")
        states = set()
        while time.monotonic() < t_end:
            states.add(bird.neighbor_state(node.v4))
            time.sleep(0.05)
        lab.check("permission denied" in answer.get("error", ""),
                  f"handoff-yield from uid {nobody} should be refused: {answer}")
        lab.check(states == {"Established"}, f"BIRD's session with the node went {states}")
        lab.check(vipd.status()["handoff"]["role"] == "active", "vipd must not have yielded")
        lab.check(vipd.status()["handoff"]["yielded"] == 0, "nothing was yielded")
        lab.check(not vipd.log_lines(r"yielding to"), "vipd logged a yield")
        lab.check(bird.has_route(lab.VIP4) and bird.has_route(lab.VIP6), "both VIPs stay in BIRD")
        lab.log(f"session stateFor before {established_before}, after "
                f"{vipd.status()['peers'][0]['stateFor']}")

        answer = as_nobody(node, vipd.socket, {"command": "handoff-check", "identity": identity})
        lab.check("permission denied" in answer.get("error", ""),
                  f"handoff-check from uid {nobody} should be refused too: {answer}")
        refused = lab.wait_until(
            lambda: vipd.log_lines(rf"refused handoff-yield from uid {nobody} \(pid \d+\)"), 5, 0.1,
            "vipd to log the refused yield with the caller's uid and pid")
        print(f"  vipd log: {refused[0]}")

        # Root's requests that change state are logged with the caller.
        r = vipd.vipctl_run("withdraw", "--wait", "--timeout", "5s", "--force")
        lab.check(r.returncode in (0, 1), f"root's withdraw: {r.returncode} {r.stderr}")
        # Refused (exit 5) while the drain still waits to unbind.
        lab.wait_until(lambda: vipd.vipctl_run("announce").returncode == 0, 15, 0.2,
                       "vipctl announce to succeed once the drain is over")
        for command in ("withdraw", "announce"):
            lines = vipd.log_lines(rf"{command} requested by uid 0 \(pid \d+\)")
            lab.check(lines, f"root's {command} should be logged with its uid and pid")
            print(f"  vipd log: {lines[0]}")
        lab.wait_until(lambda: bird.has_route(lab.VIP4), 30, 0.2, "VIP4 announced again")


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries + ["runuser"], vipd=True)
