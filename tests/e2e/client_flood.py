#!/usr/bin/env python3
"""Hostile clients for vipd's listeners, run inside a lab node's namespace (stdlib only).

  client_flood.py idle-probe --tcp HOST:PORT --unix PATH --idle N --probes M
      Holds N idle TCP connections to the metrics listener and N idle unix connections to the
      control socket (connected, sending nothing), then, while they are held, sends M fresh
      `GET /readyz` requests one after another (each its own connection, 1 s timeout) and asks
      `status` on the control socket once. Before that it times how long vipd takes to close one
      idle client of each listener (bounded at 15 s). Prints one JSON object.
(A flood held open without probing is tests/soak/soak_tools.py's `flood`.)
"""
import argparse
import json
import select
import socket
import time


def tcp(address: str) -> socket.socket:
    host, port = address.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=2)


def unix(path: str) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # A unix socket connect with a timeout is non-blocking underneath: a full accept queue is
    # EAGAIN at once, not a wait. Retry for up to 2 s, as a blocking connect would wait.
    s.settimeout(2)
    deadline = time.monotonic() + 2
    while True:
        try:
            s.connect(path)
            return s
        except BlockingIOError:
            if time.monotonic() > deadline:
                s.close()
                raise
            time.sleep(0.01)


def readyz(address: str) -> tuple[bool, float, str]:
    t0 = time.monotonic()
    try:
        with tcp(address) as s:
            s.settimeout(1.0)
            s.sendall(b"GET /readyz HTTP/1.0\r\n\r\n")
            data = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        ok = data.startswith(b"HTTP/1.0 200") or data.startswith(b"HTTP/1.1 200")
        return ok, time.monotonic() - t0, data[:40].decode("latin-1")
    except OSError as e:
        return False, time.monotonic() - t0, repr(e)


def control_status(path: str) -> tuple[bool, float]:
    t0 = time.monotonic()
    try:
        with unix(path) as s:
            s.settimeout(3.0)
            s.sendall(b'{"command":"status"}\n')
            data = b""
            while not data.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        return '"peers"' in data.decode("utf-8", "replace"), time.monotonic() - t0
    except OSError:
        return False, time.monotonic() - t0


def closed_after(s: socket.socket, since: float, bound: float) -> float:
    """Seconds (from since) until the server closed s, or -1 if not within bound."""
    s.setblocking(False)
    while time.monotonic() - since < bound:
        r, _, _ = select.select([s], [], [], 0.05)
        if r:
            try:
                if s.recv(1) == b"":
                    return time.monotonic() - since
            except (ConnectionResetError, BlockingIOError):
                return time.monotonic() - since
    return -1.0


def idle_probe(args) -> dict:
    t0 = time.monotonic()
    watched_tcp, watched_unix = tcp(args.tcp), unix(args.unix)
    idle_tcp_closed_s = closed_after(watched_tcp, t0, 15)
    idle_unix_closed_s = closed_after(watched_unix, t0, 15)
    held, errors = [], 0
    for _ in range(args.idle):
        for make, target in ((tcp, args.tcp), (unix, args.unix)):
            try:
                held.append(make(target))
            except OSError:
                errors += 1
    probes = [readyz(args.tcp) for _ in range(args.probes)]
    status_ok, status_s = control_status(args.unix)
    out = {
        "held": len(held), "connect_errors": errors,
        "probes": len(probes), "answered": sum(1 for ok, _, _ in probes if ok),
        "slowest_s": max(t for _, t, _ in probes),
        "failures": [d for ok, _, d in probes if not ok][:5],
        "status_ok": status_ok, "status_s": status_s,
        "idle_tcp_closed_s": idle_tcp_closed_s,
        "idle_unix_closed_s": idle_unix_closed_s,
    }
    for s in held:
        s.close()
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["idle-probe"])
    p.add_argument("--tcp", required=True)
    p.add_argument("--unix", required=True)
    p.add_argument("--idle", type=int, default=64)
    p.add_argument("--probes", type=int, default=70)
    args = p.parse_args()
    print(json.dumps(idle_probe(args)), flush=True)


if __name__ == "__main__":
    main()
