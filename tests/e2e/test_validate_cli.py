#!/usr/bin/env python3
"""e2e: the command-line contract for broken configs and a missing daemon. No root, no
namespaces: this test never skips.

Asserts:
- `vipd validate --config BROKEN` exits 1 and prints each error as `file:line:col: path: message`
  (unknown key, holdTime 2s, a /24 VIP, missing localAsn), with the right line, column and path;
- `vipd validate --config VALID` exits 0 and prints `FILE: valid`;
- `vipd --config BROKEN` exits 1 without starting (no control socket appears);
- `vipctl --socket /nonexistent status` exits 3 and says vipd is not reachable at that path.
"""
import os
import re
import shutil
import tempfile

import lab

BROKEN = """\
apiVersion: vipd.io/v1alpha1
kind: SpeakerConfiguration
routerId: 192.0.2.11
colour: blue
vips:
  - address: 203.0.113.0/24
    interface: lo
peers:
  - address: 192.0.2.1
    asn: 65000
    holdTime: 2s
control:
  socket: {socket}
health:
  type: none
"""
FIXES = [("colour: blue", "localAsn: 65001"), ("203.0.113.0/24", "203.0.113.10/32"),
         ("holdTime: 2s", "holdTime: 9s")]


def position(text: str, needle: str, value: bool) -> tuple[int, int]:
    """1-based line and column of needle's key (value=False) or of its value (value=True)."""
    for i, line in enumerate(text.splitlines(), 1):
        col = line.find(needle)
        if col >= 0:
            if value:
                col += len(needle.split(":")[0]) + 2
            return i, col + 1
    raise AssertionError(f"{needle!r} not in the test config")


def cmd(argv: list[str], timeout: float = 10):
    p = lab.run(argv, check=False, timeout=timeout)
    lab.log(f"$ {' '.join(argv)}  -> exit {p.returncode}")
    for line in (p.stdout + p.stderr).rstrip().splitlines():
        print(f"  {line}")
    return p


def test() -> None:
    tmp = tempfile.mkdtemp(prefix="vipd-e2e-validate-")
    try:
        socket = os.path.join(tmp, "vipd.sock")
        broken_text = BROKEN.format(socket=socket)
        broken = os.path.join(tmp, "broken.yaml")
        with open(broken, "w") as f:
            f.write(broken_text)
        valid_text = broken_text
        for old, new in FIXES:
            valid_text = valid_text.replace(old, new)
        valid = os.path.join(tmp, "valid.yaml")
        with open(valid, "w") as f:
            f.write(valid_text)
        vipd, vipctl = lab.vipd_binary(), lab.vipd_binary("vipctl")

        p = cmd([vipd, "validate", "--config", broken])
        out = p.stdout + p.stderr
        lab.check(p.returncode == 1, f"validate of a broken config should exit 1, not {p.returncode}")
        expected = [
            # (path, line, col or None, message regex)
            ("colour",) + position(broken_text, "colour:", False) + (r"unknown key 'colour'",),
            ("vips[0].address",) + position(broken_text, "address: 203.0.113.0/24", True)
            + (r"203\.0\.113\.0/24 is a covering prefix",),
            ("peers[0].holdTime",) + position(broken_text, "holdTime: 2s", True)
            + (r"hold time 2s is not allowed",),
            ("localAsn", None, None, r"'localAsn' is missing"),
        ]
        for path, line, col, message in expected:
            where = rf"{line}:{col}" if line else r"\d+:\d+"
            pattern = rf"^{re.escape(broken)}:{where}: {re.escape(path)}: .*{message}"
            lab.check(re.search(pattern, out, re.MULTILINE),
                      f"validate should print an error matching {pattern!r}")
        errors = re.findall(rf"^{re.escape(broken)}:\d+:\d+: \S+: .+$", out, re.MULTILINE)
        lab.check(len(errors) == len(expected),
                  f"expected {len(expected)} file:line:col errors, got {len(errors)}: {errors}")

        p = cmd([vipd, "validate", "--config", valid])
        lab.check(p.returncode == 0, f"validate of a valid config should exit 0, not {p.returncode}")
        lab.check(f"{valid}: valid" in p.stdout + p.stderr, f"expected '{valid}: valid'")

        p = cmd([vipd, "--config", broken])
        lab.check(p.returncode == 1, f"vipd --config BROKEN should exit 1, not {p.returncode}")
        lab.check(len(re.findall(rf"^{re.escape(broken)}:\d+:\d+: ", p.stdout + p.stderr,
                                 re.MULTILINE)) == len(expected),
                  "vipd --config BROKEN should print every error")
        lab.check(not os.path.exists(socket), f"vipd started anyway: {socket} exists")

        p = cmd([vipctl, "--socket", "/nonexistent", "status"])
        lab.check(p.returncode == 3, f"vipctl with no vipd should exit 3, not {p.returncode}")
        msg = p.stdout + p.stderr
        lab.check("/nonexistent" in msg and re.search(r"not running|not reachable", msg),
                  f"vipctl should say vipd is not reachable at /nonexistent: {msg!r}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    lab.main(test, vipd=True, root=False)
