#!/usr/bin/env python3
"""Long-lived TCP connections through the VIP, for the upgrade tests (issue 29): a server on a
node and a client behind the fabric that keeps connections open across a rollout and reports
whether any was reset.

  hold_conn.py serve ADDRESS PORT NAME
      Accepts connections; writes "hello NAME\\n" at once; then, on a connection whose client
      sent "stream\\n", a line every 100 ms; answers "ping\\n" with "pong NAME\\n".
  hold_conn.py hold ADDRESS PORT COUNT SECONDS OUTFILE [NAME]
      Opens COUNT connections (each a new source port, so the fabric's L4 hash spreads them),
      keeps those whose server says NAME (all when NAME is absent), half idle and half streaming,
      for SECONDS; then pings each. Writes {"kept": N, "idle": [...], "streaming": [...]} to
      OUTFILE, each connection {"ok": bool, "lines": n, "error": "..."}.
"""
from __future__ import annotations

import json
import socket
import sys
import threading
import time


def serve(address: str, port: int, name: str) -> None:
    srv = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.setsockopt(socket.IPPROTO_IP, 15, 1)  # IP_FREEBIND: the VIP may not be bound yet
    srv.bind((address, port))
    srv.listen(256)
    print("listening", flush=True)

    def handle(c: socket.socket) -> None:
        streaming = False
        c.settimeout(0.1)
        try:
            c.sendall(f"hello {name}\n".encode())
            buf = b""
            while True:
                try:
                    data = c.recv(1024)
                    if not data:
                        return
                    buf += data
                    while b"\n" in buf:
                        line, buf = buf.split(b"\n", 1)
                        if line == b"stream":
                            streaming = True
                        elif line == b"ping":
                            c.sendall(f"pong {name}\n".encode())
                except socket.timeout:
                    pass
                if streaming:
                    c.sendall(b"tick\n")
        except OSError:
            return
        finally:
            c.close()

    while True:
        c, _ = srv.accept()
        threading.Thread(target=handle, args=(c,), daemon=True).start()


def hold(address: str, port: int, count: int, seconds: float, out: str,
         name: str | None) -> None:
    conns = []
    for i in range(count):
        try:
            c = socket.create_connection((address, port), timeout=2)
            f = c.makefile("rb")
            hello = f.readline().decode().split()
            if len(hello) == 2 and (name is None or hello[1] == name):
                conns.append((c, f))
            else:
                c.close()
        except OSError:
            pass
    streaming = conns[::2]
    idle = conns[1::2]
    lines = {id(c): 0 for c, _ in streaming}
    errors: dict[int, str] = {}
    for c, _ in streaming:
        c.sendall(b"stream\n")
    stop = threading.Event()

    def read(c: socket.socket, f) -> None:
        try:
            while not stop.is_set():
                line = f.readline()
                if not line:
                    errors[id(c)] = "closed by the server"
                    return
                if line == b"tick\n":
                    lines[id(c)] += 1
        except OSError as e:
            errors[id(c)] = e.strerror or type(e).__name__
    threads = [threading.Thread(target=read, args=cf, daemon=True) for cf in streaming]
    for t in threads:
        t.start()
    print(f"holding {len(conns)} connection(s)", flush=True)
    time.sleep(seconds)
    result = {"kept": len(conns), "idle": [], "streaming": []}
    for c, f in idle:
        try:
            c.settimeout(3)
            c.sendall(b"ping\n")
            answer = f.readline().decode().strip()
            result["idle"].append({"ok": answer.startswith("pong"), "answer": answer})
        except OSError as e:
            result["idle"].append({"ok": False, "error": e.strerror or type(e).__name__})
    before = dict(lines)
    time.sleep(0.5)
    for c, _ in streaming:
        err = errors.get(id(c))
        result["streaming"].append({"ok": err is None and lines[id(c)] > before[id(c)],
                                    "lines": lines[id(c)], "error": err})
    stop.set()
    with open(out, "w") as fh:
        json.dump(result, fh)
    print(json.dumps(result), flush=True)


def main() -> int:
    if sys.argv[1] == "serve":
        serve(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    elif sys.argv[1] == "hold":
        hold(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), sys.argv[6],
             sys.argv[7] if len(sys.argv) > 7 else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
