#!/usr/bin/env python3
"""e2e: TCP-MD5 (RFC 2385) with peers[].passwordFile against BIRD (`password` on its side).

- a key file readable by others: vipd refuses to start, exit 1, and says to chmod 600;
  `vipd validate` on the same config refuses it too, with the same message;
- the right key: Established, and the VIP is in BIRD;
- a wrong key, and no key at all: the session never reaches Established (checked for 6 s), and
  the kernel drops the unsigned or mis-signed segments (vipd's TCP connect times out or is never
  answered).
"""
import os
import re
import signal
import time

import lab

KEY = "vipd-md5-test-key"


def write_key(L: lab.Lab, name: str, text: str, mode: int) -> str:
    path = L.path(name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def test() -> None:
    with lab.Lab("tcp-md5") as L:
        topo = L.fabric_with_nodes(1)
        node = topo.nodes[0]
        bird = lab.Bird(L, topo.fabric, topo.fabric_v4, lab.FABRIC_ASN,
                        [lab.Neighbor(node.v4, node.asn, name="node1",
                                      bird_options=[f'password "{KEY}";'])],
                        interfaces=[topo.fabric_if])

        def config(name: str, password_file=None) -> dict:
            c = lab.vipd_config(L, node, node.asn, topo.fabric_v4, lab.FABRIC_ASN, name)
            if password_file:
                c["peers"][0]["passwordFile"] = password_file
            return c

        # 1. A key others can read is refused before anything starts.
        loose = write_key(L, "loose.key", KEY + "\n", 0o644)
        v = lab.Vipd(L, node.ns, config("md5-loose", loose), name="md5-loose")
        rc = v.wait_exit(10)
        errors = v.log_lines(r"chmod 600")
        lab.log(f"loose key file: exit {rc}; {errors}")
        lab.check(rc == 1 and errors, "a group/other-readable key file must stop vipd with a fix")
        # `vipd validate` (the systemd unit's ExecStartPre) refuses it with start's words.
        p = lab.run([v.binary, "validate", "--config", v.conf], check=False)
        said = re.findall(r"peers\[0\]\.passwordFile: .*", p.stderr)
        lab.log(f"vipd validate: exit {p.returncode}; {said}")
        lab.check(p.returncode == 1 and said and any(said[0] in line for line in errors),
                  f"vipd validate must refuse the key file as start did: {p.stderr!r}")

        # 2. The right key (with the trailing newline `echo` writes): Established.
        good = write_key(L, "good.key", KEY + "\n", 0o600)
        t0 = time.monotonic()
        v = lab.Vipd(L, node.ns, config("md5-good", good), name="md5-good")
        lab.wait_established(bird, [node.v4], 20)
        lab.wait_until(lambda: bird.has_route(lab.VIP4), 10, 0.05, f"{lab.VIP4} in BIRD")
        print(f"right TCP-MD5 key: Established and announced in {time.monotonic() - t0:.2f}s")
        v.proc.signal(signal.SIGTERM)
        lab.check(v.wait_exit(15) == 0, "vipd exits 0")
        lab.wait_until(lambda: bird.neighbor_state(node.v4) != "Established", 15, 0.1,
                       "BIRD sees the session go down")

        # 3. A wrong key and no key never establish.
        bad = write_key(L, "bad.key", "not-the-key", 0o600)
        for name, key_file in (("md5-wrong", bad), ("md5-none", None)):
            v = lab.Vipd(L, node.ns, config(name, key_file), name=name)
            lab.wait_never(lambda: bird.neighbor_state(node.v4) == "Established", 6, 0.2,
                           f"{name}: BIRD must not establish")
            state = v.peer_status(lab.FABRIC_V4)
            lab.log(f"{name}: vipd state {state['state']}, last error {state['lastError']!r}")
            lab.check(state["state"] != "Established", f"{name}: vipd must not establish")
            lab.check(not bird.has_route(lab.VIP4), f"{name}: nothing announced")
            v.proc.signal(signal.SIGTERM)
            v.wait_exit(15)
        print("wrong TCP-MD5 key and no key: never Established in 6 s each")


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries, vipd=True)
