#!/usr/bin/env python3
"""e2e: `vipd probe --watch` reads other hosts' /probe.json documents, which it cannot trust. A
stand-in probe (Python's http.server on 127.0.0.1, a port of its own) serves hostile documents; no
root, no namespaces: this test never skips.

Asserts, for `vipd probe --watch URL --once` and `--json`:
- fields of the wrong type (a string or null where a boolean or a number goes, a number where a
  string goes) are drawn as far as they go: exit 0, never an abort (exit 134, SIGABRT), and
  --json prints a JSON document;
- site and target names and failure reasons with control characters (an escape sequence that
  clears the screen or retitles the window, a newline that fakes a row) reach the terminal
  escaped (`\\x1b`, `\\n`): no control character but the line ends in the frame, one row per
  site; --json keeps the values, JSON-escaped;
- a --watch URL that is not UTF-8 is named escaped by --once and replaced (U+FFFD) by --json,
  which used to abort on it.
"""
import http.server
import json
import threading

import lab

WRONG_TYPES = {
    "site": "site-a",
    "targets": [
        {"name": "vip", "probes": "ten", "successRate": "1", "p50Ms": [1], "p99Ms": None,
         "last": {"ok": "yes", "reason": 7, "detail": None},
         "recent": [{"ok": "yes", "ms": "fast"}, {"ok": 1}, {"ok": True, "ms": "slow"}, "x"]},
        {"name": "proxy", "last": {"ok": None}, "recent": {"ok": False}},
        {"name": 5},
    ],
}
HOSTILE = {
    "site": "site-\x1b]0;owned\x07b",
    "targets": [
        {"name": "vip\x1b[2J", "successRate": 0.0, "last": {"ok": False, "reason":
                                                               "refused\nsite-z  100.0%"},
         "recent": [{"ok": False}]},
    ],
}


class Server(http.server.ThreadingHTTPServer):
    document: dict = {}


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps(self.server.document).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def watch(vipd: str, url: str, *flags: str):
    p = lab.run([vipd, "probe", "--watch", url, *flags], check=False, timeout=20)
    lab.log(f"$ vipd probe --watch {url!r} {' '.join(flags)}  -> exit {p.returncode}")
    for line in (p.stdout + p.stderr).rstrip().splitlines():
        print(f"  {line!r}")
    return p


def test() -> None:
    vipd = lab.vipd_binary()
    server = Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"127.0.0.1:{server.server_address[1]}"
    try:
        server.document = WRONG_TYPES
        p = watch(vipd, url, "--once")
        lab.check(p.returncode == 0, f"wrongly typed fields: --once should exit 0, not "
                  f"{p.returncode}{' (SIGABRT)' if p.returncode in (134, -6) else ''}")
        lab.check("site-a" in p.stdout and "vip" in p.stdout and "proxy" in p.stdout,
                  "the matrix shows the site and the targets that have names")
        p = watch(vipd, url, "--json")
        lab.check(p.returncode == 0, f"wrongly typed fields: --json should exit 0, not "
                  f"{p.returncode}")
        matrix = json.loads(p.stdout)
        lab.check(matrix["sites"] == ["site-a"] and matrix["targets"] == ["vip", "proxy"],
                  f"--json: the site and the named targets: {matrix}")

        server.document = HOSTILE
        p = watch(vipd, url, "--once")
        lab.check(p.returncode == 0, f"control characters: --once should exit 0, not "
                  f"{p.returncode}")
        bad = sorted({c for c in p.stdout if c != "\n" and (ord(c) < 0x20 or ord(c) == 0x7f)})
        lab.check(not bad, f"control characters reached the terminal: {bad}")
        for shown in ("site-\\x1b]0;owned\\x07b", "vip\\x1b[2J", "refused\\nsite-z  100.0%"):
            lab.check(shown in p.stdout, f"the frame should show {shown!r}")
        rows = [l for l in p.stdout.splitlines() if l.startswith("site-")]
        lab.check(len(rows) == 1, f"one row per site, nothing forged: {rows}")
        p = watch(vipd, url, "--json")
        matrix = json.loads(p.stdout)
        lab.check(matrix["sites"] == [HOSTILE["site"]] and "\x1b" not in p.stdout,
                  "--json keeps the site's name, JSON-escaped")

        # A --watch URL that is not UTF-8 (the byte 0xff on the command line): unreachable,
        # drawn escaped, and --json replaces the byte instead of aborting.
        bad_url = "\udcff:1"  # surrogateescape: os.fsencode() gives b"\xff:1"
        p = watch(vipd, bad_url, "--once")
        lab.check(p.returncode == 1 and "unreachable: \\xff:1: " in p.stdout,
                  f"--once names the URL escaped: exit {p.returncode}")
        p = watch(vipd, bad_url, "--json")
        lab.check(p.returncode == 1 and json.loads(p.stdout)["unreachable"][0]["url"] == "\ufffd:1",
                  f"--json replaces the byte that is not UTF-8: exit {p.returncode}")
    finally:
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    lab.main(test, vipd=True, root=False)
