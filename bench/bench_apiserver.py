#!/usr/bin/env python3
"""The benchmark's stand-in kube-apiserver on one node: HTTPS on --listen (0.0.0.0:6443, as
kube-apiserver binds by default), so the same process serves the node's health check
(https://127.0.0.1:6443/readyz) and the clients that come in through the VIP (VIP:6443).

Like kube-apiserver (Go net/http) it keeps HTTP/1.1 connections alive (idle timeout 90 s) unless
the client asks to close. /readyz reads --mode-file on every request:
  ok       200 text/plain "ok"
  unready  500 with kube-apiserver's "[-]etcd failed" check list
  slow     "ok" after 3 s (longer than any check's timeout: an overloaded apiserver)
Any other path answers 200 text/plain with --node (which node served a client request).
Kill it with SIGKILL and the kernel closes its connections and refuses its port, as for a
crashed apiserver. Logs nothing per request (200 requests a second).

Usage: bench_apiserver.py --cert C --key K --listen ADDR:PORT --mode-file F --node NAME
"""
import argparse
import http.server
import os
import ssl
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from apiserver_handler import ModeFileHandler  # noqa: E402

UNREADY = ("[+]ping ok\n[+]log ok\n[-]etcd failed: reason withheld\n[+]etcd-readiness ok\n"
           "[+]informer-sync ok\n[+]poststarthook/start-apiserver-admission-initializer ok\n"
           "[+]shutdown ok\nreadyz check failed\n")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--listen", default="0.0.0.0:6443")
    ap.add_argument("--mode-file", required=True)
    ap.add_argument("--node", required=True)
    args = ap.parse_args()
    host, port = args.listen.rsplit(":", 1)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)

    class Handler(ModeFileHandler):
        mode_file = args.mode_file
        slow_s = 3
        timeout = 90  # kube-apiserver's idle timeout

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if self.path.split("?")[0] == "/readyz":
                code, body = (500, UNREADY) if self.mode() == "unready" else (200, "ok")
            else:
                code, body = 200, args.node + "\n"
            self.answer(code, "text/plain; charset=utf-8", body,
                        (("X-Content-Type-Options", "nosniff"),))

        def log_message(self, fmt: str, *a) -> None:  # noqa: A003
            pass

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 256

        def finish_request(self, request, client_address) -> None:
            try:
                request.settimeout(10)
                tls = ctx.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError):
                return
            self.RequestHandlerClass(tls, client_address, self)

    srv = Server((host, int(port)), Handler)
    print(f"{time.time():.3f} listening on https://{host}:{port} as {args.node}", flush=True)
    srv.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
