#!/usr/bin/env python3
"""A stand-in kube-apiserver /readyz for vipd's health gate (run by lab.FakeApiserver).

HTTPS (python ssl) on --listen with --cert/--key. Each request reads --mode-file and answers:
  ok        200 text/plain "ok"
  proxy502  502 with a proxy's HTML error page
  other     200 with a body that is not "ok"
  slow      "ok" after 2 s
  version   200 application/json {"gitVersion": ...} (an apiserver's /version)
  unready   500 with the apiserver's own failed-check body ("[-]etcd failed ...")
HTTP/1.1 with keep-alive, as a real apiserver (Go's net/http) answers: a client may hold the
connection and send its next request on it; an idle connection is closed after --idle-timeout.
Every request, every handshake's TLS server name (SNI; "-" when the client sent none), every
failed TLS handshake and every closed connection is logged to stdout with a wall-clock timestamp.
"""
import argparse
import http.server
import ssl
import sys
import time

from apiserver_handler import ModeFileHandler

PROXY_502 = ("<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
             "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
             "</body>\r\n</html>\r\n")
ANSWERS = {
    "ok": (200, "text/plain; charset=utf-8", "ok"),
    "proxy502": (502, "text/html", PROXY_502),
    "other": (200, "application/json", '{"status": "ok"}'),
    "version": (200, "application/json",
                '{"major": "1", "minor": "30", "gitVersion": "v1.30.2", "platform": "linux/amd64"}'),
    # kube-apiserver's /readyz while etcd is unreachable: every check listed, then the verdict.
    "unready": (500, "text/plain; charset=utf-8",
                "[+]ping ok\n[+]log ok\n[-]etcd failed: reason withheld\n[+]etcd-readiness ok\n"
                "[+]informer-sync ok\n[+]poststarthook/start-apiextensions-controllers ok\n"
                "readyz check failed\n"),
}


def log(msg: str) -> None:
    print(f"{time.time():.3f} {msg}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--listen", default="127.0.0.1:6443")
    ap.add_argument("--mode-file", required=True)
    ap.add_argument("--idle-timeout", type=float, default=60.0,
                    help="seconds an idle keep-alive connection stays open")
    args = ap.parse_args()
    host, port = args.listen.rsplit(":", 1)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)

    def on_server_name(_sslobj, server_name, _ctx) -> None:
        log(f"SNI {server_name or '-'}")

    ctx.sni_callback = on_server_name

    class Handler(ModeFileHandler):
        mode_file = args.mode_file
        slow_s = 2
        timeout = args.idle_timeout

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self.answer(*ANSWERS.get(self.mode(), ANSWERS["ok"]))

        def finish(self) -> None:
            log(f"{self.client_address[0]} connection closed")
            super().finish()

        def log_message(self, fmt: str, *a) -> None:  # noqa: A003
            log(f"{self.client_address[0]} {fmt % a}")

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True

        def finish_request(self, request, client_address) -> None:
            try:
                request.settimeout(5)
                tls = ctx.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError) as e:
                log(f"{client_address[0]} TLS handshake failed: {e}")
                return
            self.RequestHandlerClass(tls, client_address, self)

    srv = Server((host, int(port)), Handler)
    log(f"listening on https://{host}:{port}")
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
