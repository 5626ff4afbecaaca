"""A tiny HTTP/1.0 responder for the benchmark's VIP: answers every request with this node's
name and closes. Bound to the VIP with IP_FREEBIND, so it can start before the VIP is on lo and
keeps listening while a drain removes it (connections then fail as they would in production).

Usage: http_responder.py ADDRESS PORT NAME
"""
import socket
import socketserver
import sys

IP_FREEBIND = 15


class Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.settimeout(2)
        data = b""
        try:
            while b"\r\n\r\n" not in data and len(data) < 8192:
                chunk = self.request.recv(4096)
                if not chunk:
                    return
                data += chunk
            body = (self.server.node_name + "\n").encode()
            self.request.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n"
                                 b"Content-Length: " + str(len(body)).encode() +
                                 b"\r\nConnection: close\r\n\r\n" + body)
        except OSError:
            pass


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def server_bind(self) -> None:
        self.socket.setsockopt(socket.SOL_IP, IP_FREEBIND, 1)
        super().server_bind()


def main() -> int:
    addr, port, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    with Server((addr, port), Handler) as srv:
        srv.node_name = name
        print(f"listening on {addr}:{port} as {name}", flush=True)
        srv.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
