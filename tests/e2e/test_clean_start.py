#!/usr/bin/env python3
"""e2e: a normal start and stop logs no line at ERROR level (issue 17, item 9: only errors are
errors). One vipd node (AS 65001, both lab VIPs on lo, --log-format json) against a BIRD fabric
(AS 65000), started on a fresh namespace as an operator would.
Asserts:
- both VIPs reach BIRD (the start was a healthy one);
- SIGTERM: vipd drains and exits 0;
- every line vipd wrote is a JSON object with a "level", and none has level "error".
"""
import json
import signal

import lab


def test() -> None:
    with lab.Lab("clean-start") as L:
        s = lab.build_single_vipd(L, vipd_args=["--log-format", "json"])
        bird, vipd, node = s.bird, s.vipd, s.node
        lab.wait_established(bird, [node.v4], 30)
        for prefix in (lab.VIP4, lab.VIP6):
            lab.wait_until(lambda p=prefix: bird.has_route(p), 15, 0.05, f"{prefix} in BIRD")
        lab.log("both VIPs in BIRD; stopping vipd with SIGTERM")
        vipd.proc.signal(signal.SIGTERM)
        rc = vipd.wait_exit(10)
        lab.check(rc == 0, f"vipd should exit 0 on SIGTERM, got {rc}")

        lines = vipd.proc.log_text().splitlines()
        lab.check(lines, "vipd logged nothing")
        records, not_json = [], []
        for line in lines:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                not_json.append(line)
                continue
            if not isinstance(record, dict) or "level" not in record:
                not_json.append(line)
                continue
            records.append(record)
        levels = {}
        for r in records:
            levels[r["level"]] = levels.get(r["level"], 0) + 1
        lab.log(f"{len(lines)} log lines: {levels}")
        for r in records:
            if r["level"] in ("warn", "error"):
                print(f"  vipd log: {r['level']} {r.get('subject')}: {r.get('msg')}")
        lab.check(not not_json, "every line should be a JSON log record:\n  " + "\n  ".join(not_json))
        errors = [f"{r.get('subject')}: {r.get('msg')}" for r in records if r["level"] == "error"]
        lab.check(not errors, "a clean start and stop should log no ERROR line:\n  "
                  + "\n  ".join(errors))


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries, vipd=True)
