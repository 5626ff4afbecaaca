"""Open-loop HTTP load for the drain benchmark: one request every 1/RATE s for DURATION s, each
on a new TCP connection, each bounded by TIMEOUT s (no answer in time is a failure). Writes one
JSON document: every request's wall-clock start, latency, and the answering node or the error.

Usage: load_client.py HOST PORT RATE DURATION TIMEOUT OUTFILE
"""
import concurrent.futures
import json
import socket
import sys
import time


def one(host: str, port: int, timeout: float) -> dict:
    t0 = time.time()
    m0 = time.monotonic()
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
        if not head.startswith(b"HTTP/1.0 200"):
            return {"t": t0, "latency": time.monotonic() - m0, "error": f"bad answer {head[:40]!r}"}
        return {"t": t0, "latency": time.monotonic() - m0, "node": body.decode().strip()}
    except (OSError, socket.timeout) as e:
        return {"t": t0, "latency": time.monotonic() - m0,
                "error": type(e).__name__ if not getattr(e, "strerror", None) else e.strerror}


def main() -> int:
    host, port = sys.argv[1], int(sys.argv[2])
    rate, duration, timeout = float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
    count = int(rate * duration)
    start = time.monotonic() + 0.05
    futures = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(16, int(rate * timeout) + 8)) as pool:
        for i in range(count):
            delay = start + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            futures.append(pool.submit(one, host, port, timeout))
        results = [f.result() for f in futures]
    with open(sys.argv[6], "w") as f:
        json.dump({"rate": rate, "duration": duration, "timeout": timeout, "requests": results}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
