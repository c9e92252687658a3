"""A loopback proxy in front of a `loopsense serve` that the tests turn down, slow or up:
``down()`` closes its port (connections refused, as a stopped server), ``slow(seconds)`` forwards
each request and holds the answer that long (the server applied it; the client timed out),
``up()`` forwards again on the same port. Counts what it forwarded, by method and path."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FaultProxy:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.delay = 0.0
        self.forwarded: Counter[str] = Counter()  # "POST /v1/runs/r/steps" -> count
        self.answers: list[tuple[str, int, bytes]] = []  # (method path, status, body) forwarded
        self.lock = threading.Lock()
        self.port = 0
        self.httpd: ThreadingHTTPServer | None = None
        self.up()
        self.url = f"http://127.0.0.1:{self.port}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs' clients use it

            def log_message(self, *args: Any) -> None:
                pass

            def _any(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if proxy.httpd is None:  # down: a kept-alive connection is cut, unanswered
                    self.close_connection = True
                    return
                keep = {k: v for k, v in self.headers.items()
                        if k.lower() not in ("host", "content-length", "connection")}
                request = urllib.request.Request(proxy.upstream + self.path, headers=keep,
                                                 data=body if body else None,
                                                 method=self.command)
                try:
                    with urllib.request.urlopen(request, timeout=30) as answer:
                        status, headers, out = answer.status, dict(answer.headers), answer.read()
                except urllib.error.HTTPError as error:
                    status, headers, out = error.code, dict(error.headers), error.read()
                with proxy.lock:
                    route = f"{self.command} {self.path.split('?')[0]}"
                    proxy.forwarded[route] += 1
                    proxy.answers.append((route, status, out))
                    delay = proxy.delay
                if delay:
                    time.sleep(delay)
                self.send_response(status)
                for name in ("Content-Type", "Retry-After"):
                    if name in headers:
                        self.send_header(name, headers[name])
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            do_GET = do_POST = do_PUT = do_DELETE = _any  # noqa: N815 - http.server's hooks

        return Handler

    def up(self) -> None:
        self.delay = 0.0
        if self.httpd is None:
            ThreadingHTTPServer.allow_reuse_address = True
            self.httpd = ThreadingHTTPServer(("127.0.0.1", self.port), self._handler())
            self.httpd.daemon_threads = True
            self.port = self.httpd.server_address[1]
            threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def slow(self, seconds: float) -> None:
        self.up()
        self.delay = seconds

    def down(self) -> None:
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None

    def count(self, prefix: str) -> int:
        with self.lock:
            return sum(n for key, n in self.forwarded.items() if key.startswith(prefix))
