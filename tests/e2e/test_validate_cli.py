#!/usr/bin/env python3
"""e2e: the command-line contract for broken configs and a missing daemon. No root, no
namespaces: this test never skips.

Asserts:
- `vipd validate --config BROKEN` exits 1 and prints each error as `file:line:col: path: message`
  (unknown key, holdTime 2s, a /24 VIP, missing localAsn), with the right line, column and path;
- `vipd validate --config VALID` exits 0 and prints `FILE: valid`;
- `vipd --config BROKEN` exits 1 without starting (no control socket appears);
- one table of bad configs (health.url with port 99999 or 0, userinfo, an unclosed `[` or a
  space; a VIP equal to a peer's address or to the router ID; a router ID in 127.0.0.0/8,
  0.0.0.0 or 255.255.255.255; an IPv4-mapped IPv6 VIP) is refused by `vipd validate` and by
  starting vipd alike, with the same message at the same key;
- `vipd validate` reads peers[].passwordFile as start does: a 0600 key file is valid; one that
  group or others can read, a missing one and a FIFO (refused at once, not waited on) exit 1
  with start's message at `peers[0].passwordFile`;
- `vipd validate` reads kubernetes.kubeconfig as start does (issue 41): a missing one and one
  that skips TLS verification exit 1 at `kubernetes.kubeconfig` with the reason;
- files refused unread with one error (issue 40, issue 43): the alias bomb (exit 1, not an
  abort), a FIFO as the config or the node file (at once, not waited on), a symlink to a file
  outside the config's directory (nothing of that file shown);
- `vipctl --socket /nonexistent status` exits 3 and says vipd is not reachable at that path.
The command line (cli/, on CLI11), the same for vipd and vipctl:
- `--flag=value` as well as `--flag value`; vipctl's --socket before or after the command;
- --help on each command exits 0 and prints that command's usage to stdout; --version prints
  `vipd VERSION` and `vipctl VERSION`, one version;
- a repeated option (`--config a --config b`, `--socket a --socket b`) exits 2 naming it, and
  vipctl tries no socket; so do a missing or unknown command, a bad --timeout or --log-level.
"""
import os
import re
import shutil
import subprocess
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


def check_password_files(vipd: str, tmp: str, valid_text: str) -> None:
    """`vipd validate` reads peers[].passwordFile as start does (one function,
    daemon/session/key.h): a key file group or others can read, a missing one and a FIFO
    (refused at once, never waited on) fail it with the error start gives, at the key's path."""
    key = os.path.join(tmp, "bgp.key")
    anchor = "    asn: 65000\n"
    lab.check(anchor in valid_text, "the valid config has a peer to give a key")
    keyed = os.path.join(tmp, "keyed.yaml")
    with open(keyed, "w") as f:
        f.write(valid_text.replace(anchor, f"{anchor}    passwordFile: {key}\n"))

    def validate(what: str):
        try:
            return cmd([vipd, "validate", "--config", keyed], timeout=5)
        except subprocess.TimeoutExpired:
            lab.check(False, f"vipd validate with {what} as the password file hung for 5 s")

    with open(key, "w") as f:
        f.write("secret\n")
    os.chmod(key, 0o600)
    p = validate("a 0600 key file")
    lab.check(p.returncode == 0 and f"{keyed}: valid" in p.stdout,
              f"a 0600 key file is valid: exit {p.returncode}")

    fifo = os.path.join(tmp, "fifo.key")
    os.mkfifo(fifo, 0o600)
    cases = [("mode 0644", 0o644, key, rf"the password file {re.escape(key)} has mode 0644, "
                                       rf"so group or others can read or change the BGP key; "
                                       rf"run chmod 600 {re.escape(key)}$"),
             ("a missing file", None, os.path.join(tmp, "missing.key"),
              r"cannot read the password file .*missing\.key: No such file or directory$"),
             ("a FIFO", None, fifo, rf"the password file {re.escape(fifo)} is not a regular file$")]
    for what, mode, path, message in cases:
        if mode is not None:
            os.chmod(path, mode)
        with open(keyed, "w") as f:
            f.write(valid_text.replace(anchor, f"{anchor}    passwordFile: {path}\n"))
        p = validate(what)
        pattern = rf"^{re.escape(keyed)}: peers\[0\]\.passwordFile: {message}"
        lab.check(p.returncode == 1 and re.search(pattern, p.stderr, re.MULTILINE)
                  and f"{keyed}: 1 error(s); nothing started" in p.stderr,
                  f"validate refuses a password file that is {what} as start does: exit "
                  f"{p.returncode}, expected a line matching {pattern!r}")


def check_refused_files(vipd: str, tmp: str, valid_text: str) -> None:
    """Files `vipd validate` refuses as start and a reload do (issue 40, issue 43), each with one
    error and exit 1, within 5 s: the alias bomb (on main 5c7d414: an abort, exit -6), a FIFO as
    the config or the node file (on main: hung), a symlink to a file outside the config's
    directory (on main: its lines printed as unknown keys)."""
    etc = os.path.join(tmp, "etc")
    os.mkdir(etc)
    secret = os.path.join(tmp, "shadow")
    with open(secret, "w") as f:
        f.write("vipd-validate-secret:$6$salt$hash:19000:0:99999:7:::\n")
    bomb = valid_text + "x0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"x{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 10) + "]\n" for n in range(1, 7))
    bomb_file = os.path.join(etc, "bomb.yaml")
    with open(bomb_file, "w") as f:
        f.write(bomb)
    fifo = os.path.join(etc, "fifo.yaml")
    os.mkfifo(fifo, 0o600)
    link = os.path.join(etc, "link.yaml")
    os.symlink(secret, link)
    valid = os.path.join(etc, "valid.yaml")
    with open(valid, "w") as f:
        f.write(valid_text)
    cases = [
        ("the alias bomb", ["--config", bomb_file],
         rf"^{re.escape(bomb_file)}:\d+:\d+: the YAML describes more than 20000 nodes once its "
         r"aliases \(\*name\) are expanded"),
        ("a FIFO as the config", ["--config", fifo],
         rf"^{re.escape(fifo)}: the config file is a FIFO, not a regular file"),
        ("a FIFO as the node file", ["--config", valid, "--node-config", fifo],
         rf"^{re.escape(fifo)}: the node config file is a FIFO, not a regular file"),
        ("a symlink out of the config's directory", ["--config", link],
         rf"^{re.escape(link)}: the config file is a symlink that leads out of its directory "
         rf"{re.escape(etc)} \(to {re.escape(secret)}\)"),
    ]
    for what, args, pattern in cases:
        try:
            p = cmd([vipd, "validate"] + args, timeout=5)
        except subprocess.TimeoutExpired:
            lab.check(False, f"vipd validate on {what} hung for 5 s")
        lab.check(p.returncode == 1 and re.search(pattern, p.stderr, re.MULTILINE)
                  and "1 error(s); nothing started" in p.stderr,
                  f"validate refuses {what} with one error: exit {p.returncode}, expected a line "
                  f"matching {pattern!r}")
        lab.check("vipd-validate-secret" not in p.stdout + p.stderr,
                  f"validate on {what} shows nothing of the secret")


def check_kubeconfig(vipd: str, tmp: str, valid_text: str) -> None:
    """`vipd validate` loads kubernetes.kubeconfig as the link does at start (kube/link.h): a file
    vipd cannot use would only turn the link off at start, so validate says so first."""
    conf = os.path.join(tmp, "kube.yaml")
    section = ("kubernetes:\n  kubeconfig: {path}\n  nodeName: cp-1\n")
    insecure = os.path.join(tmp, "insecure.conf")
    with open(insecure, "w") as f:
        f.write("apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                "clusters:\n- name: k\n  cluster:\n    server: https://192.0.2.1:6443\n"
                "    insecure-skip-tls-verify: true\n"
                "users:\n- name: u\n  user:\n    token: abc\n"
                "contexts:\n- name: c\n  context:\n    cluster: k\n    user: u\n")
    cases = [("a missing kubeconfig", os.path.join(tmp, "missing.conf"),
              r"No such file or directory"),
             ("a kubeconfig that skips TLS verification", insecure, r"insecure-skip-tls-verify")]
    for what, path, message in cases:
        with open(conf, "w") as f:
            f.write(valid_text + section.format(path=path))
        p = cmd([vipd, "validate", "--config", conf], timeout=5)
        pattern = rf"^{re.escape(conf)}: kubernetes\.kubeconfig: .*{message}"
        lab.check(p.returncode == 1 and re.search(pattern, p.stderr, re.MULTILINE),
                  f"validate refuses {what}: exit {p.returncode}, expected a line matching "
                  f"{pattern!r}")


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

        # One table of bad configs through both `vipd validate` and starting vipd: both run the
        # same checks (the health check's URL parser is config/health_target.h), so both refuse
        # each one with the same message at the same key, and vipd starts nothing.
        def health_url(url: str):
            return ("health:\n  type: none\n", f"health:\n  type: apiserver\n  url: \"{url}\"\n"
                                               f"  caFile: /etc/kubernetes/pki/ca.crt\n")
        bad_configs = [
            ("health.url", health_url("https://127.0.0.1:99999/readyz")),
            ("health.url", health_url("https://127.0.0.1:0/readyz")),
            ("health.url", health_url("https://admin:secret@127.0.0.1:6443/readyz")),
            ("health.url", health_url("https://[::1:6443/readyz")),
            ("health.url", health_url("https://127.0.0.1:6443/ready z")),
            ("peers[0].address", ("203.0.113.10/32", "192.0.2.1/32")),
            ("routerId", ("routerId: 192.0.2.11", "routerId: 203.0.113.10")),
            ("routerId", ("routerId: 192.0.2.11", "routerId: 127.0.0.1")),
            ("routerId", ("routerId: 192.0.2.11", "routerId: 0.0.0.0")),
            ("routerId", ("routerId: 192.0.2.11", "routerId: 255.255.255.255")),
            ("vips[0].address", ("203.0.113.10/32", "::ffff:203.0.113.10/128")),
        ]
        for key, (old, new) in bad_configs:
            lab.check(old in valid_text, f"the valid config holds {old!r}")
            bad = os.path.join(tmp, "bad.yaml")
            with open(bad, "w") as f:
                f.write(valid_text.replace(old, new))
            checked = cmd([vipd, "validate", "--config", bad])
            started = cmd([vipd, "--config", bad])
            errors = [re.findall(rf"^.*: {re.escape(key)}: .*$", q.stdout + q.stderr, re.MULTILINE)
                      for q in (checked, started)]
            lab.check(checked.returncode == 1 and started.returncode == 1 and errors[0]
                      and errors[0] == errors[1],
                      f"{key} {new!r}: validate and start refuse it alike: "
                      f"exit {checked.returncode}/{started.returncode}, {errors}")
            lab.check(not os.path.exists(socket), f"vipd started with {key} {new!r}")

        check_password_files(vipd, tmp, valid_text)
        check_kubeconfig(vipd, tmp, valid_text)
        check_refused_files(vipd, tmp, valid_text)

        p = cmd([vipctl, "--socket", "/nonexistent", "status"])
        lab.check(p.returncode == 3, f"vipctl with no vipd should exit 3, not {p.returncode}")
        msg = p.stdout + p.stderr
        lab.check("/nonexistent" in msg and re.search(r"not running|not reachable", msg),
                  f"vipctl should say vipd is not reachable at /nonexistent: {msg!r}")

        # The command line.
        p = cmd([vipd, "validate", f"--config={valid}"])
        lab.check(p.returncode == 0 and f"{valid}: valid" in p.stdout,
                  f"validate --config=FILE should work as --config FILE: exit {p.returncode}")
        for argv in ([vipctl, f"--socket=/nonexistent", "status"],
                     [vipctl, "status", "--socket", "/nonexistent"]):
            p = cmd(argv)
            lab.check(p.returncode == 3 and "/nonexistent" in p.stderr,
                      f"{argv[1:]} should try /nonexistent and exit 3, not {p.returncode}")

        helps = [([vipd, "--help"], "usage: vipd --config FILE", ["validate", "render", "--log-level"]),
                 ([vipd, "validate", "--help"], "usage: vipd validate --config FILE",
                  ["--router-id ADDRESS"]),
                 ([vipd, "render", "--help"], "usage: vipd render --metadata FILE",
                  ["--manifest-dir DIR"]),
                 ([vipctl, "--help"], "usage: vipctl [--socket PATH] [--deadline DUR] COMMAND",
                  ["status", "withdraw", "announce", "exit codes:"]),
                 ([vipctl, "withdraw", "--help"],
                  "usage: vipctl [--socket PATH] [--deadline DUR] withdraw", ["--wait", "--timeout DUR", "--transient", "--socket PATH", "exit codes:"]),
                 ([vipctl, "status", "-h"],
                  "usage: vipctl [--socket PATH] [--deadline DUR] status [--json]", [])]
        for argv, usage, needles in helps:
            p = cmd(argv)
            lab.check(p.returncode == 0 and p.stdout.startswith(usage) and p.stderr == "",
                      f"{argv[1:]} should exit 0 and print {usage!r}: exit {p.returncode}")
            for needle in needles:
                lab.check(needle in p.stdout, f"{argv[1:]} should mention {needle!r}")

        versions = [cmd([binary, "--version"]) for binary in (vipd, vipctl)]
        lab.check(all(p.returncode == 0 for p in versions), "--version should exit 0")
        words = [p.stdout.split() for p in versions]
        lab.check(words[0][0] == "vipd" and words[1][0] == "vipctl" and len(words[0]) == 2
                  and words[0][1] == words[1][1],
                  f"--version should print 'vipd VERSION' and 'vipctl VERSION': {words}")

        usage_errors = [
            ([vipd, "validate", "--config", valid, "--config", broken], "--config is given twice",
             "usage: vipd validate"),
            ([vipd, "--config", valid, "--log-level", "loud"],
             "--log-level must be debug, info, warn or error", "usage: vipd --config FILE"),
            ([vipd, "--config", valid, "--frobnicate"], "unknown argument '--frobnicate'",
             "usage: vipd --config FILE"),
            ([vipctl, "--socket", "/nonexistent", "--socket=/nonexistent2", "status"],
             "--socket is given twice", "usage: vipctl [--socket PATH] [--deadline DUR] status"),
            ([vipctl, "withdraw", "--wait", "--wait"], "--wait is given twice",
             "usage: vipctl [--socket PATH] [--deadline DUR] withdraw"),
            ([vipctl, "withdraw", "--reason=", "--wait"], "--reason needs a value",
             "usage: vipctl"),
            ([vipctl, "withdraw", "--timeout", "soon"],
             "--timeout takes a duration such as 30s, not 'soon'", "usage: vipctl"),
            ([vipctl], "a command is required", "usage: vipctl"),
            ([vipctl, "frobnicate"], "unknown command 'frobnicate'", "usage: vipctl"),
        ]
        for argv, problem, usage in usage_errors:
            p = cmd(argv)
            name = os.path.basename(argv[0])
            lab.check(p.returncode == 2, f"{argv[1:]} is a usage error (exit 2), got {p.returncode}")
            lab.check(p.stderr.startswith(f"{name}: {problem}\n{usage}"),
                      f"{argv[1:]} should say {problem!r}, then {usage!r}: {p.stderr[:200]!r}")
            lab.check(p.stdout == "" and "not reachable" not in p.stderr,
                      f"{argv[1:]} should do nothing else")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    lab.main(test, vipd=True, root=False)
