"""Open-loop HTTP load for the drain benchmark: one request every 1/RATE s for DURATION s, each
on a new TCP connection, each bounded by TIMEOUT s (no answer in time is a failure). Writes one
JSON document: every request's wall-clock start, latency, and the answering node or the error.
With CAFILE each request is HTTPS (TLS verified against CAFILE, the server name being HOST), as a
client of the apiserver behind the VIP makes it.

With PATH, HTTPS requests GET PATH (a real apiserver's /readyz: anonymous, 200 "ok") instead of
the stand-in apiservers' /bench-node. SIGTERM ends the load early; the document is still written.

Usage: load_client.py HOST PORT RATE DURATION TIMEOUT OUTFILE [CAFILE [PATH]]
"""
import concurrent.futures
import json
import signal
import socket
import ssl
import sys
import time


def one(host: str, port: int, timeout: float, tls, path: str = "/bench-node") -> dict:
    t0 = time.time()
    m0 = time.monotonic()
    try:
        with socket.create_connection((host, port), timeout=timeout) as raw:
            s = raw
            if tls is not None:
                raw.settimeout(max(0.001, timeout - (time.monotonic() - m0)))
                s = tls.wrap_socket(raw, server_hostname=host)
            s.settimeout(max(0.001, timeout - (time.monotonic() - m0)))
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: vip\r\nConnection: close\r\n\r\n".encode()
                      if tls is not None else b"GET / HTTP/1.0\r\nHost: vip\r\n\r\n")
            data = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        if not (head.startswith(b"HTTP/1.0 200") or head.startswith(b"HTTP/1.1 200")):
            return {"t": t0, "latency": time.monotonic() - m0, "error": f"bad answer {head[:40]!r}"}
        return {"t": t0, "latency": time.monotonic() - m0, "node": body.decode().strip()}
    except (OSError, socket.timeout, ssl.SSLError) as e:
        return {"t": t0, "latency": time.monotonic() - m0,
                "error": type(e).__name__ if not getattr(e, "strerror", None) else e.strerror}


def main() -> int:
    host, port = sys.argv[1], int(sys.argv[2])
    rate, duration, timeout = float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
    tls = None
    if len(sys.argv) > 7:
        tls = ssl.create_default_context(cafile=sys.argv[7])
    path = sys.argv[8] if len(sys.argv) > 8 else "/bench-node"
    stopped = []
    signal.signal(signal.SIGTERM, lambda *_: stopped.append(True))
    count = int(rate * duration)
    start = time.monotonic() + 0.05
    futures = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(16, int(rate * timeout) + 8)) as pool:
        for i in range(count):
            delay = start + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            if stopped:
                break
            futures.append(pool.submit(one, host, port, timeout, tls, path))
        results = [f.result() for f in futures]
    with open(sys.argv[6], "w") as f:
        json.dump({"rate": rate, "duration": duration, "timeout": timeout, "requests": results}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
