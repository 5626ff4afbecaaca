"""The request handler both stand-in kube-apiservers build on (tests/e2e/fake_apiserver.py for the
e2e tests, bench/bench_apiserver.py for the benchmark): what a request answers depends on a mode
file that the test or the benchmark rewrites at run time, and the connection stays open between
requests as a real apiserver's does. Each stand-in subclasses ModeFileHandler inside its main(),
sets mode_file, slow_s and timeout (the idle timeout) from its arguments, and maps modes to
answers itself.
"""
import http.server
import time


def read_mode(path: str) -> str:
    """The mode in path, "ok" while the file is missing or unreadable."""
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return "ok"


class ModeFileHandler(http.server.BaseHTTPRequestHandler):
    # keep-alive unless the client asks to close, as Go's net/http (kube-apiserver) answers: a
    # client may hold the connection and send its next request on it
    protocol_version = "HTTP/1.1"
    mode_file: str
    slow_s: float  # longer than any check's timeout: an overloaded apiserver

    def mode(self) -> str:
        """The mode file's mode, read now so a switch applies to the very next request; "slow"
        answers as "ok", only after slow_s."""
        mode = read_mode(self.mode_file)
        if mode == "slow":
            time.sleep(self.slow_s)
            return "ok"
        return mode

    def answer(self, code: int, content_type: str, body: str,
               headers: tuple[tuple[str, str], ...] = ()) -> None:
        """code with body; Content-Length always, as a keep-alive connection needs it to find
        where this answer ends."""
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
