#!/usr/bin/env python3
"""e2e: a withdrawn.json vipd cannot use never takes vipd down and never announces the node
(issue 17, item 4). One vipd node (AS 65001, both lab VIPs on lo) against a BIRD fabric
(AS 65000).

For each bad file, written into control.stateDir before vipd starts: "since" a number, "since"
null, a JSON array, and a truncated object. Asserts for each:
- vipd stays up (it answers `vipctl status` and is still running 2 s later);
- status withdrawn.active, withdrawn.reason and withdrawn.stateFileError name the file (and the
  field, for the wrong types); /readyz answers 503 naming the file; the log has an error line
  naming it;
- nothing is bound (no VIP on lo) and, once the session is up, BIRD has no route from the node.
Then a file whose reason holds an escape sequence and a newline (valid: the node is withdrawn
with that reason): `vipctl status` shows it escaped, on one line, and no control character.
Then `vipctl announce` (after the last one): the file is gone, both VIPs are bound and in BIRD,
/readyz 200.
"""
import json
import os
import re
import signal

import lab

BAD_FILES = [
    ('{"reason": "replace node", "since": 5}\n', '"since" is a number'),
    ('{"reason": "replace node", "since": null}\n', '"since" is null'),
    ('["reason", "since"]\n', "holds an array"),
    ('{"reason": "replace no', "is not valid JSON"),
]
VIPS = (lab.VIP4, lab.VIP6)


def test() -> None:
    with lab.Lab("state-files") as L:
        s = lab.build_single_vipd(L)
        bird, vipd, node = s.bird, s.vipd, s.node
        ns = node.ns
        state_dir = L.path("vipd-n1-state")
        state_file = os.path.join(state_dir, "withdrawn.json")
        lab.wait_established(bird, [node.v4], 30)
        for prefix in VIPS:
            lab.wait_until(lambda p=prefix: bird.has_route(p), 15, 0.05, f"{prefix} in BIRD")
        lab.log("healthy start: both VIPs in BIRD")

        for body, what in BAD_FILES:
            # SIGTERM unbinds vipd's VIPs; the next vipd finds the bad file before binding.
            vipd.proc.signal(signal.SIGTERM)
            lab.check(vipd.wait_exit(10) == 0, "vipd should exit 0 on SIGTERM")
            os.makedirs(state_dir, exist_ok=True)
            with open(state_file, "w") as f:
                f.write(body)
            lab.log(f"withdrawn.json <- {body!r}")
            vipd.restart()
            lab.wait_until(lambda: vipd.status(), 10, 0.1,
                           lambda: f"vipd to answer with {body!r} in withdrawn.json "
                                   f"(alive: {vipd.proc.alive()})\n{vipd.proc.log_text()[-2000:]}")
            st = vipd.status()["withdrawn"]
            lab.log(f"status withdrawn: {st}")
            lab.check(st.get("active") is True, f"the node should be withdrawn: {st}")
            for key in ("reason", "stateFileError"):
                text = st.get(key, "")
                lab.check(state_file in text and what in text,
                          f"withdrawn.{key} should name {state_file} and say {what!r}: {st}")
            code, text = vipd.http("/readyz")
            lab.log(f"/readyz: {code} {text.strip()!r}")
            lab.check(code == 503 and state_file in text,
                      f"/readyz should be 503 naming {state_file}: {code} {text!r}")
            errors = vipd.log_lines(r"^\S+ error\b.*withdrawn\.json")
            lab.check(errors, f"the log should have an error naming {state_file}:\n"
                      + vipd.proc.log_text())
            print(f"  vipd log: {errors[0]}")
            for prefix in VIPS:
                lab.check(not ns.address_entries("lo", prefix),
                          f"{prefix} should not be bound:\n{ns.addr_show('lo')}")
            lab.wait_established(bird, [node.v4], 30)
            lab.wait_never(lambda: any(bird.has_route(p) for p in VIPS), 1.5, 0.1,
                           "a route from the node in BIRD")
            lab.check(vipd.proc.alive(), "vipd should still be running")

        # A reason with an escape sequence and a newline, as an older vipd accepted it or an
        # operator wrote it by hand: a valid withdraw, shown escaped on one line.
        vipd.proc.signal(signal.SIGTERM)
        lab.check(vipd.wait_exit(10) == 0, "vipd should exit 0 on SIGTERM")
        reason = "disk swap\x1b[2J\nFORGED"
        with open(state_file, "w") as f:
            json.dump({"reason": reason, "since": "2025-01-01T00:00:00Z"}, f)
        vipd.restart()
        lab.wait_until(lambda: vipd.status(), 10, 0.1, "vipd to answer")
        st = vipd.status()["withdrawn"]
        lab.check(st.get("active") is True and st.get("reason") == reason,
                  f"withdrawn with the file's reason: {st}")
        r = vipd.vipctl_run("status")
        shown = "WITHDRAWN since 2025-01-01T00:00:00Z: disk swap\\x1b[2J\\nFORGED  (vipctl"
        lab.log(f"vipctl status: {[l for l in r.stdout.splitlines() if 'WITHDRAWN' in l]}")
        lab.check(r.returncode == 0 and shown in r.stdout and "\x1b" not in r.stdout
                  and not re.search(r"^FORGED", r.stdout, re.MULTILINE),
                  f"vipctl status should show the reason escaped, on one line: {r.stdout!r}")

        r = vipd.vipctl_run("announce")
        lab.log(f"vipctl announce: exit {r.returncode}")
        lab.check(r.returncode == 0, f"vipctl announce should succeed: {r.stdout}{r.stderr}")
        lab.check(not os.path.exists(state_file), f"{state_file} should be cleared")
        for prefix in VIPS:
            lab.wait_until(lambda p=prefix: bird.has_route(p), 15, 0.05,
                           f"{prefix} in BIRD after vipctl announce")
        st = vipd.status()["withdrawn"]
        lab.check(st == {"active": False}, f"no longer withdrawn: {st}")
        lab.wait_until(lambda: vipd.http("/readyz")[0] == 200, 10, 0.2, "/readyz 200")


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries, vipd=True)
