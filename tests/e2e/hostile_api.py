"""A hostile Kubernetes API server for kube/'s client (tests/e2e/test_hostile_api.py) and for vipd
itself (tests/e2e/test_hostile_api_vipd.py): HTTPS on 127.0.0.1, or on an address in a lab
namespace, with a certificate made at test time, answering every request with the bytes the
current scenario writes on the raw TLS socket (so a test can send what no HTTP library would: a
Content-Length of 100 MiB, a body one byte at a time, a chunked stream that never ends, a line
that never ends). Records each request it read (method, target, headers, body).
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
from typing import Callable, Optional

from hostile_peer import tcp_socket_in


class Request:
    def __init__(self, method: str, target: str, headers: dict[str, str], body: bytes):
        self.method, self.target, self.headers, self.body = method, target, headers, body

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]

    @property
    def watch(self) -> bool:
        return "watch=1" in self.target

    def __repr__(self) -> str:
        return f"{self.method} {self.target}"


Handler = Callable[["HostileApi", ssl.SSLSocket, Request], None]


def send(conn: ssl.SSLSocket, status: str, body: bytes = b"", headers: tuple = (),
         length: Optional[int] = None) -> None:
    """A whole answer with Content-Length (length overrides the real one)."""
    head = [f"HTTP/1.1 {status}", "Content-Type: application/json", "Connection: close",
            f"Content-Length: {len(body) if length is None else length}", *headers]
    conn.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)


def start_chunked(conn: ssl.SSLSocket, status: str = "200 OK") -> None:
    conn.sendall(f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
                 "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n".encode())


def chunk(conn: ssl.SSLSocket, data: bytes) -> None:
    conn.sendall(f"{len(data):x}\r\n".encode() + data + b"\r\n")


def end_chunked(conn: ssl.SSLSocket) -> None:
    conn.sendall(b"0\r\n\r\n")


def status_body(code: int, reason: str, message: str) -> bytes:
    return json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                       "message": message, "reason": reason, "code": code}).encode()


def node(name: str, rv: str, withdraw: Optional[str] = None, out_of_service: bool = False) -> dict:
    meta: dict = {"name": name, "resourceVersion": rv, "annotations": {}}
    if withdraw is not None:
        meta["annotations"]["vipd.io/withdraw"] = withdraw
    spec: dict = {"taints": []}
    if out_of_service:
        spec["taints"].append({"key": "node.kubernetes.io/out-of-service", "effect": "NoExecute"})
    return {"kind": "Node", "apiVersion": "v1", "metadata": meta, "spec": spec}


def node_list(name: str, rv: str, **kw) -> bytes:
    return json.dumps({"kind": "NodeList", "apiVersion": "v1",
                       "metadata": {"resourceVersion": rv},
                       "items": [node(name, rv, **kw)]}).encode()


def event(kind: str, obj: dict) -> bytes:
    return json.dumps({"type": kind, "object": obj}).encode() + b"\n"


class HostileApi:
    """Serves on addr:port (port 0: any free one), inside the network namespace netns (an `ip
    netns` name) when given: the threads stay in ours, the listening socket is that namespace's.
    `handler` answers every request; swap it between scenarios."""

    def __init__(self, cert: str, key: str, addr: str = "127.0.0.1", port: int = 0,
                 netns: Optional[str] = None):
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(cert, key)
        self.sock = tcp_socket_in(netns)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((addr, port))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.handler: Handler = lambda api, conn, req: send(conn, "404 Not Found")
        self.requests: list[Request] = []
        self.lock = threading.Lock()
        self.stopping = False
        self.bytes_sent = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def reset(self, handler: Handler) -> None:
        with self.lock:
            self.handler = handler
            self.requests = []

    def seen(self) -> list[Request]:
        with self.lock:
            return list(self.requests)

    def close(self) -> None:
        self.stopping = True
        self.sock.close()

    def _accept(self) -> None:
        while not self.stopping:
            try:
                raw, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        try:
            raw.settimeout(30)
            conn = self.context.wrap_socket(raw, server_side=True)
        except (OSError, ssl.SSLError):
            raw.close()  # the client refused our certificate (the wrong-CA case)
            return
        try:
            req = self._read_request(conn)
            if req is None:
                return
            with self.lock:
                self.requests.append(req)
                handler = self.handler
            handler(self, conn, req)
        except (OSError, ssl.SSLError):
            pass  # the client went away: what most cases expect of it
        finally:
            try:
                conn.close()
            except OSError:
                pass

    @staticmethod
    def _read_request(conn: ssl.SSLSocket) -> Optional[Request]:
        data = b""
        while b"\r\n\r\n" not in data:
            piece = conn.recv(4096)
            if not piece or len(data) > 65536:
                return None
            data += piece
        head, body = data.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        length = int(headers.get("content-length", "0"))
        while len(body) < length:
            piece = conn.recv(4096)
            if not piece:
                break
            body += piece
        return Request(method, target, headers, body)


def sleep_or_stop(api: HostileApi, seconds: float) -> bool:
    """Sleeps; False once the server is stopping (a scenario's endless loop ends then)."""
    time.sleep(seconds)
    return not api.stopping
