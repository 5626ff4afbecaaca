#!/usr/bin/env python3
"""e2e: vipd's control socket is root-only and robust. BIRD fabric (AS 65000), vipd on node 1
(AS 65001) with its socket in a 0755 directory (so a refusal comes from vipd, not from the
filesystem).

Asserts:
- the socket file is a socket with mode 0600, owned by root;
- `runuser -u nobody -- vipctl --socket S status`: exit 3, "Permission denied" (the kernel's: the
  socket is 0600); the same as nobody with CAP_DAC_OVERRIDE (setpriv: past the file mode, as
  after an operator's chmod 666), status and withdraw: exit 3, "vipd: permission denied: uid
  65534 ...", vipd logs the refusals naming the uid (at most one line per 10 s, with a count, so
  a caller cannot flood the log: issue 17), counts every one in status
  (listeners.control.refused), and nothing is withdrawn;
- raw requests (python socket): longer than 4096 bytes without a newline, malformed JSON, JSON
  without "command", an unknown command, a connection closed without a request: each gets an
  error reply (where one can be sent) and vipd stays up, the session Established and the VIPs
  announced; vipctl status works afterwards;
- a withdraw reason with a newline or an escape sequence: vipctl refuses it (exit 2), vipd
  refuses it in a raw request, nothing is withdrawn, and vipd's log holds no control character
  and no forged line.
"""
import json
import os
import pwd
import stat

import lab

MAX_REQUEST = 4096
REFUSALS = 10  # the refusal reply must arrive every time, not by luck of timing


def error_reply(path: str, data: bytes, what: str) -> str:
    reply = lab.control_exchange(path, data)
    lab.log(f"{what}: {len(data)} bytes sent, reply {reply[:200]!r}")
    lab.check(reply.endswith(b"\n"), f"{what}: the reply should be one JSON line: {reply!r}")
    doc = json.loads(reply)
    lab.check(isinstance(doc, dict) and doc.get("error"), f"{what}: expected an error: {doc}")
    return doc["error"]


def test() -> None:
    with lab.Lab("control-socket") as L:
        sock_dir = lab.socket_dir(L)

        def edit(c: dict, topo: lab.Topology) -> None:
            c["control"]["socket"] = os.path.join(sock_dir, "vipd.sock")

        s = lab.build_single_vipd(L, edit)
        bird, vipd, node = s.bird, s.vipd, s.node
        lab.wait_established(bird, [node.v4], 30)
        lab.wait_until(lambda: bird.has_route(lab.VIP4) and bird.has_route(lab.VIP6), 15, 0.1,
                       "both VIPs in BIRD")

        st = os.stat(vipd.socket)
        lab.log(f"{vipd.socket}: mode {stat.filemode(st.st_mode)} ({oct(st.st_mode & 0o7777)}), "
                f"uid {st.st_uid}")
        lab.check(stat.S_ISSOCK(st.st_mode), "the control socket should be a socket")
        lab.check(st.st_mode & 0o7777 == 0o600, f"mode {oct(st.st_mode & 0o7777)}, expected 0600")
        lab.check(st.st_uid == 0, f"owner uid {st.st_uid}, expected root")

        # A non-root caller. Mode 0600: the kernel refuses connect() before vipd sees it.
        nobody = pwd.getpwnam("nobody").pw_uid
        r = vipd.vipctl_run("status", wrapper=lab.as_user("nobody"))
        lab.log(f"as nobody: vipctl status: exit {r.returncode}, stderr {r.stderr.strip()!r}")
        lab.check(r.returncode == 3, f"vipctl as nobody should exit 3, got {r.returncode}")
        lab.check("permission denied" in r.stderr.lower(),
                  f"vipctl as nobody should say permission denied: {r.stderr!r}")
        # nobody with CAP_DAC_OVERRIDE gets past the file mode (as anyone would after an
        # operator's chmod 666): vipd's own SO_PEERCRED check must refuse it, and log it.
        lost = []
        for i in range(REFUSALS):
            args = ("status",) if i % 2 == 0 else ("withdraw", "--reason", "not allowed")
            r = vipd.vipctl_run(*args, wrapper=lab.as_user("nobody", dac_override=True))
            if i < 2:
                lab.log(f"as nobody with CAP_DAC_OVERRIDE: vipctl {' '.join(args)}: exit "
                        f"{r.returncode}, stderr {r.stderr.strip()!r}")
            lab.check(r.returncode == 3, f"vipctl as nobody should exit 3, got {r.returncode}")
            if "vipd: permission denied" not in r.stderr.lower():
                lost.append(f"vipctl {args[0]}: {r.stderr.strip()!r}")
        refused = lab.wait_until(lambda: vipd.log_lines(r"refused a request"), 5, 0.1,
                                 "vipd to log a refusal")
        for line in refused[:2]:
            print(f"  vipd log: {line}")
        lab.check(all(f"uid {nobody}" in line for line in refused),
                  f"each refusal should be logged naming uid {nobody}")
        lab.check(len(refused) < REFUSALS,
                  f"{len(refused)} refusal lines for {REFUSALS} refusals in a few seconds: the "
                  f"log should be throttled")
        counted = vipd.status()["listeners"]["control"]["refused"]
        lab.check(counted == REFUSALS, f"status counts {counted} refusals, expected {REFUSALS}")
        lab.log(f"{REFUSALS - len(lost)} of {REFUSALS} refused callers got vipd's reply")
        lab.check(vipd.status()["withdrawn"]["active"] is False,
                  "a refused withdraw must not withdraw")

        # Raw abuse of the protocol.
        for i in range(5):  # replying without reading everything must not lose the reply
            err = error_reply(vipd.socket, b"x" * (MAX_REQUEST + 904), f"oversized request #{i + 1}")
            lab.check(str(MAX_REQUEST) in err, f"oversized: the error should name the limit: {err!r}")
        big = json.dumps({"command": "status", "pad": "y" * 5000}).encode() + b"\n"
        error_reply(vipd.socket, big, "oversized valid JSON")
        err = error_reply(vipd.socket, b'{"command": "status"\n', "malformed JSON")
        lab.check("malformed" in err, f"malformed JSON: {err!r}")
        error_reply(vipd.socket, b"\x00\xff\xfe garbage\n", "binary garbage")
        error_reply(vipd.socket, b'["status"]\n', "JSON without a command")
        error_reply(vipd.socket, b'{"command": 7}\n', "non-string command")
        err = error_reply(vipd.socket, b'{"command": "reboot"}\n', "unknown command")
        lab.check("unknown command" in err, f"unknown command: {err!r}")
        error_reply(vipd.socket, b"", "no request (EOF at once)")
        error_reply(vipd.socket, b'{"command": "status"', "no newline before EOF, truncated")
        ok = json.loads(lab.control_exchange(vipd.socket, b'{"command": "status"}\n'))
        lab.check("peers" in ok, f"a well-formed raw status request should work: {str(ok)[:200]}")

        # A withdraw reason that would forge a log line or reach a terminal as an escape sequence
        # (it goes into the log, `vipctl status` and withdrawn.json): vipctl refuses it before
        # connecting (usage error), vipd refuses it from any other client, and nothing is
        # withdrawn.
        forged = "replace node\n2025-01-01T00:00:00.000Z info  drain: vipctl announce"
        r = vipd.vipctl_run("withdraw", "--reason", forged)
        lab.log(f"vipctl withdraw --reason {forged!r}: exit {r.returncode}, {r.stderr.strip()!r}")
        lab.check(r.returncode == 2 and "--reason must be one line of printable text" in r.stderr,
                  f"vipctl should refuse a reason with a newline (exit 2): {r.returncode}")
        err = error_reply(vipd.socket, json.dumps({"command": "withdraw",
                                                   "reason": "x\x1b[2J\nFORGED"}).encode() + b"\n",
                          "a reason with control characters")
        lab.check('"reason" must be one line of printable text' in err,
                  f"vipd should refuse a reason with control characters: {err!r}")
        lab.check(vipd.status()["withdrawn"]["active"] is False,
                  "a refused reason must not withdraw")
        lab.check("\x1b" not in vipd.proc.log_text() and not vipd.log_lines(r"^FORGED|^2025-01-01"),
                  "no control character and no forged line in vipd's log")

        lab.check(vipd.proc.alive(), "vipd should survive bad requests")
        lab.check(bird.neighbor_state(node.v4) == "Established", "the session should stay up")
        lab.check(bird.has_route(lab.VIP4) and bird.has_route(lab.VIP6), "VIPs stay announced")
        r = vipd.vipctl_run("status")
        lab.check(r.returncode == 0, f"vipctl status as root after the abuse: {r.returncode} "
                  f"{r.stderr}")
        print(r.stdout, flush=True)

        # Checked last so that the checks above run whatever happens here. vipd must deliver its
        # refusal: the caller should learn why, not see "Connection reset by peer".
        lab.check(not lost, f"{len(lost)} of {REFUSALS} refused callers did not get vipd's "
                  f"'permission denied' reply, e.g. {lost[:2]}")


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries + ["runuser", "setpriv"], vipd=True)
