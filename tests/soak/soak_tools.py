"""Helper programs the chaos soak runs inside a namespace (stdlib only).

  soak_tools.py load HOST PORT RATE TIMEOUT OUTFILE
      Open-loop HTTP load until SIGTERM: one request every 1/RATE s, each on a new TCP
      connection and bounded by TIMEOUT s. One line per finished request, flushed at once:
      `<start wall time> <end wall time> ok <answering node>` or `... err <reason>`.

  soak_tools.py flood --count N --hold S [--tcp HOST:PORT] [--unix PATH]
      Opens up to N idle connections to each target (non-blocking, so a full backlog never
      blocks), sends nothing, holds them S seconds, closes them and prints
      `tcp=<opened>/<N> unix=<opened>/<N> closed_by_peer=<count>` (the peer closing an idle
      client, as vipd's listeners do when full or after their idle timeout, is expected).
"""
from __future__ import annotations

import concurrent.futures
import errno
import select
import signal
import socket
import sys
import threading
import time


def one_request(host: str, port: int, timeout: float) -> str:
    t0, m0 = time.time(), time.monotonic()
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.settimeout(max(0.001, timeout - (time.monotonic() - m0)))
            s.sendall(b"GET / HTTP/1.0\r\nHost: vip\r\n\r\n")
            data = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        if head.startswith(b"HTTP/1.0 200"):
            result = "ok " + (body.decode(errors="replace").strip() or "?")
        else:
            result = "err bad-answer:" + repr(head[:30]).replace(" ", "_")
    except OSError as e:
        result = "err " + (e.strerror or type(e).__name__).replace(" ", "_")
    return f"{t0:.3f} {time.time():.3f} {result}"


def load(host: str, port: int, rate: float, timeout: float, out: str) -> int:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    lock = threading.Lock()
    with open(out, "a", buffering=1) as f, \
            concurrent.futures.ThreadPoolExecutor(max_workers=int(rate * timeout) + 8) as pool:
        def done(fut: concurrent.futures.Future) -> None:
            with lock:
                f.write(fut.result() + "\n")
        start, i = time.monotonic(), 0
        while not stop.is_set():
            delay = start + i / rate - time.monotonic()
            if delay > 0:
                stop.wait(delay)
                continue
            pool.submit(one_request, host, port, timeout).add_done_callback(done)
            i += 1
    return 0


def flood(count: int, hold: float, tcp: str | None, unix: str | None) -> int:
    socks: list[socket.socket] = []
    opened = {"tcp": 0, "unix": 0}
    pending = []
    for _ in range(count if tcp else 0):
        host, _, port = tcp.rpartition(":")
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        rc = s.connect_ex((host, int(port)))
        if rc in (0, errno.EINPROGRESS):
            pending.append(s)
        else:
            s.close()
    deadline = time.monotonic() + 3
    while pending and time.monotonic() < deadline:
        _, w, _ = select.select([], pending[:1000], [], 0.2)
        for s in w:
            pending.remove(s)
            if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                socks.append(s)
                opened["tcp"] += 1
            else:
                s.close()
    for s in pending:
        s.close()
    for _ in range(count if unix else 0):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.setblocking(False)
        if s.connect_ex(unix) == 0:
            socks.append(s)
            opened["unix"] += 1
        else:
            s.close()
    time.sleep(hold)
    closed = 0
    for s in socks:
        try:
            if s.recv(1) == b"":
                closed += 1
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
        s.close()
    print(f"tcp={opened['tcp']}/{count if tcp else 0} unix={opened['unix']}/"
          f"{count if unix else 0} closed_by_peer={closed}", flush=True)
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["load"]:
        host, port, rate, timeout, out = argv[1:6]
        return load(host, int(port), float(rate), float(timeout), out)
    if argv[:1] == ["flood"]:
        opts = dict(zip(argv[1::2], argv[2::2]))
        return flood(int(opts["--count"]), float(opts["--hold"]), opts.get("--tcp"),
                     opts.get("--unix"))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
