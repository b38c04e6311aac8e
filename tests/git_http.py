"""A git smart-HTTP server on loopback: `git http-backend` behind Basic authentication, so that
tests can push and clone over HTTP as CI does against GitHub, and see what credentials arrived."""

from __future__ import annotations

import base64
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from urllib.parse import urlsplit

BACKEND = subprocess.run(["git", "--exec-path"], capture_output=True, text=True, check=True).stdout.strip()


class GitHttpServer:
    """Serves the bare repositories under `root`; every request must carry `user`:`password`."""

    def __init__(self, root: Path, user: str, password: str) -> None:
        self.root, self.url = root, ""
        self.expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        self.authorizations: list[str] = []  # the Authorization header of every request, "" if none
        self._server: ThreadingHTTPServer | None = None

    def __enter__(self) -> GitHttpServer:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()


def _handler(server: GitHttpServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def handle_one(self) -> None:
            given = self.headers.get("Authorization", "")
            server.authorizations.append(given)
            if given != server.expected:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="git"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            parts = urlsplit(self.path)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            env = {
                **os.environ,
                "GIT_PROJECT_ROOT": str(server.root),
                "GIT_HTTP_EXPORT_ALL": "1",
                "PATH_INFO": parts.path,
                "QUERY_STRING": parts.query,
                "REQUEST_METHOD": self.command,
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(body)),
                "REMOTE_USER": "x-access-token",
                "REMOTE_ADDR": "127.0.0.1",
                "GIT_HTTP_MAX_REQUEST_BUFFER": "100M",
            }
            done = subprocess.run([f"{BACKEND}/git-http-backend"], input=body, env=env, capture_output=True)
            head, _, payload = done.stdout.partition(b"\r\n\r\n")
            lines = head.decode().split("\r\n")
            status = next((int(line.split()[1]) for line in lines if line.startswith("Status:")), 200)
            self.send_response(status)
            for line in lines:
                name, _, value = line.partition(":")
                if name and name != "Status":
                    self.send_header(name, value.strip())
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = handle_one

        def log_message(self, format: str, *args: object) -> None:
            """Silent."""

    return Handler
