"""The Python SDK's default transport keeps connections alive: requests to one host reuse one
connection; a kept connection the server closed while idle is replaced, the request repeated only
when that is safe (GET/PUT/DELETE or an Idempotency-Key); a proxy from the environment is used;
the timeout bounds the whole request, also when the answer trickles in."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from loopsense_sdk import (
    APIConnectionError,
    Client,
    HttpRequest,
    KeepAliveTransport,
    RequestTimeoutError,
)


class Counting(ThreadingHTTPServer):
    daemon_threads = True
    connections = 0
    requests = 0
    close_after_answer = False  # answer, then drop the connection without saying so


@pytest.fixture
def origin() -> Iterator[Counting]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def setup(self) -> None:
            super().setup()
            server.connections += 1

        def _any(self) -> None:
            # Read before answering: the test changes it as soon as it has the answer.
            close = server.close_after_answer
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            server.requests += 1
            body = json.dumps({"n": server.requests}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            if close:
                self.close_connection = True

        do_GET = do_POST = _any  # noqa: N815

    server = Counting(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def url(server: Counting) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def test_requests_to_one_host_share_one_connection(origin: Counting) -> None:
    client = Client("k", url(origin))
    for _ in range(5):
        client.playbook("identical_call")
    assert (origin.connections, origin.requests) == (1, 5)


def test_a_stale_connection_is_replaced_and_a_safe_request_repeated(origin: Counting) -> None:
    transport = KeepAliveTransport()
    get = HttpRequest("GET", url(origin) + "/x", {}, None, 2.0)
    assert transport(get).status == 200
    origin.close_after_answer = True
    assert transport(get).status == 200  # the server closes this one after answering
    origin.close_after_answer = False
    assert json.loads(transport(get).body) == {"n": 3}  # a new connection, no error
    assert origin.connections == 2


def test_an_unkeyed_post_on_a_stale_connection_is_not_repeated(origin: Counting) -> None:
    transport = KeepAliveTransport()
    post = HttpRequest("POST", url(origin) + "/x", {}, b"{}", 2.0)
    transport(post)
    idle = transport._idle[("http", "127.0.0.1", origin.server_address[1])][0]
    assert idle.sock is not None
    idle.sock.close()  # as if the server had dropped it: the next send fails
    idle.sock = None
    idle.auto_open = 0  # http.client would silently reconnect otherwise
    with pytest.raises(APIConnectionError):
        transport(post)
    keyed = HttpRequest("POST", url(origin) + "/x", {"Idempotency-Key": "k1"}, b"{}", 2.0)
    assert transport(keyed).status == 200


def test_a_proxy_in_the_environment_is_honoured(origin: Counting,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", url(origin))
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    transport = KeepAliveTransport()
    answer = transport(HttpRequest("GET", "http://loopsense.invalid/v1/x", {}, None, 2.0))
    assert answer.status == 200 and origin.requests == 1  # it went to the proxy


def test_the_timeout_holds_for_the_whole_request_however_the_answer_trickles() -> None:
    """A server that sends its answer a byte at a time, each well within the timeout: the request
    still ends at its timeout (it was per socket operation, so this took the whole trickle)."""
    listener = socket.create_server(("127.0.0.1", 0))
    answer = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + b"X-Pad: " + b"a" * 60

    def trickle() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            for byte in answer:
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return
                time.sleep(0.05)  # the whole answer: about 6 s

    threading.Thread(target=trickle, daemon=True).start()
    port = listener.getsockname()[1]
    start = time.monotonic()
    with pytest.raises(RequestTimeoutError):
        KeepAliveTransport()(HttpRequest("GET", f"http://127.0.0.1:{port}/x", {}, None, 0.5))
    assert time.monotonic() - start < 2.0  # 0.5 s and scheduling, not the 6 s trickle
    listener.close()
