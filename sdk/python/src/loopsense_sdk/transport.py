"""HTTP transports: the default keeps connections alive (``KeepAliveTransport``, the standard
library's http.client), ``urllib_transport`` opens one per request (and honours proxies).

``HttpRequest.timeout`` bounds the whole request on the default transport (connect, send, the
answer's head and body: each socket operation gets what is left of it), so a server that
trickles its answer cannot hold a caller past it. urllib's is per socket operation (and so is
the default transport's through a proxy).

A transport sends one request and answers any HTTP status; it raises ``APIConnectionError`` (or
``RequestTimeoutError``) when there is no answer. The client's retry loop (loopsense_sdk.client)
decides what happens next.
"""

from __future__ import annotations

import http.client
import io
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from loopsense_sdk.errors import APIConnectionError, RequestTimeoutError

__all__ = ["HttpRequest", "HttpResponse", "KeepAliveTransport", "Transport", "urllib_transport"]


@dataclass(frozen=True)
class HttpRequest:
    method: str
    url: str
    headers: dict[str, str]
    body: bytes | None
    timeout: float  # seconds


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""


# Sends one request; answers any HTTP status; raises APIConnectionError (or RequestTimeoutError)
# when there is no answer. Replaceable (Client(transport=...)) for tests or another HTTP stack.
Transport = Callable[[HttpRequest], HttpResponse]

_opener = urllib.request.build_opener()  # honours HTTP(S)_PROXY / NO_PROXY like urlopen


def urllib_transport(request: HttpRequest) -> HttpResponse:
    """The standard library's urllib, one connection per request (proxies honoured)."""
    return _urllib_send(_opener, request)


def _urllib_send(opener: urllib.request.OpenerDirector, request: HttpRequest) -> HttpResponse:
    req = urllib.request.Request(request.url, data=request.body, headers=request.headers,
                                 method=request.method)
    try:
        with opener.open(req, timeout=request.timeout) as answer:
            return HttpResponse(answer.status, dict(answer.headers.items()), answer.read())
    except urllib.error.HTTPError as error:  # a non-2xx answer: still an answer
        with error:
            return HttpResponse(error.code, dict(error.headers.items()), error.read())
    except urllib.error.URLError as error:
        if isinstance(error.reason, TimeoutError):
            raise RequestTimeoutError(f"no answer within {request.timeout:.3g} s") from error
        raise APIConnectionError(f"could not reach the API: {error.reason}") from error
    except TimeoutError as error:  # socket.timeout is TimeoutError
        raise RequestTimeoutError(f"no answer within {request.timeout:.3g} s") from error
    except (OSError, http.client.HTTPException) as error:
        raise APIConnectionError(f"the connection failed: {type(error).__name__}") from error


# A kept connection the server closed while idle fails like this on its next request.
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


class KeepAliveTransport:
    """Connections kept open per host and reused (HTTP/1.1 keep-alive): a request to a host
    already reached skips the TCP (and TLS) handshake. Thread-safe: a connection serves one
    request at a time; at most ``max_idle`` idle ones are kept per host.

    A request on a reused connection that the server had closed while idle is sent once more on
    a new connection when repeating it is safe: GET, PUT and DELETE, or a request carrying an
    ``Idempotency-Key`` (the server answers a repeat with the first answer). Where a proxy
    applies to the URL (HTTP(S)_PROXY, NO_PROXY), requests go through ``urllib_transport``.
    """

    def __init__(self, max_idle: int = 8) -> None:
        self.max_idle = max_idle
        self._idle: dict[tuple[str, str, int], list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()
        self._proxies = urllib.request.getproxies()  # read once, as urllib's opener does
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler(self._proxies))

    def __call__(self, request: HttpRequest) -> HttpResponse:
        url = urlsplit(request.url)
        host = url.hostname or ""
        if url.scheme in self._proxies and not urllib.request.proxy_bypass(host):
            return _urllib_send(self._opener, request)
        key = (url.scheme, host, url.port or (443 if url.scheme == "https" else 80))
        target = (url.path or "/") + (f"?{url.query}" if url.query else "")
        connection, reused = self._take(key, request.timeout)
        try:
            try:
                answer = self._send(connection, request, target)
            except _STALE:
                connection.close()
                if not reused or not self._repeatable(request):
                    raise
                connection = self._open(key, request.timeout)
                answer = self._send(connection, request, target)
        except TimeoutError as error:
            connection.close()
            raise RequestTimeoutError(f"no answer within {request.timeout:.3g} s") from error
        except (OSError, http.client.HTTPException) as error:
            connection.close()
            raise APIConnectionError(f"the connection failed: {type(error).__name__}") from error
        self._give(key, connection, answer)
        return answer

    def close(self) -> None:
        """Close every idle connection."""
        with self._lock:
            idle, self._idle = self._idle, {}
        for connections in idle.values():
            for connection in connections:
                connection.close()

    @staticmethod
    def _repeatable(request: HttpRequest) -> bool:
        return request.method in ("GET", "PUT", "DELETE") or "Idempotency-Key" in request.headers

    @staticmethod
    def _send(connection: http.client.HTTPConnection, request: HttpRequest,
              target: str) -> HttpResponse:
        end = time.monotonic() + request.timeout
        if connection.sock is None and connection.auto_open:
            connection.connect()  # here, not in request(): so that the socket is wrapped
        if connection.sock is not None:
            connection.sock = _Deadline(_raw(connection.sock), end)
        connection.request(request.method, target, body=request.body, headers=request.headers)
        answer = connection.getresponse()
        body = answer.read()
        response = HttpResponse(answer.status, dict(answer.headers.items()), body)
        if answer.will_close:
            connection.close()
        return response

    def _open(self, key: tuple[str, str, int], timeout: float) -> http.client.HTTPConnection:
        scheme, host, port = key
        if scheme == "https":
            return http.client.HTTPSConnection(host, port, timeout=timeout)
        return http.client.HTTPConnection(host, port, timeout=timeout)

    def _take(self, key: tuple[str, str, int],
              timeout: float) -> tuple[http.client.HTTPConnection, bool]:
        with self._lock:
            idle = self._idle.get(key)
            connection = idle.pop() if idle else None
        if connection is None:
            return self._open(key, timeout), False
        connection.timeout = timeout
        if connection.sock is not None:
            connection.sock.settimeout(timeout)
        return connection, True

    def _give(self, key: tuple[str, str, int], connection: http.client.HTTPConnection,
              answer: HttpResponse) -> None:
        if connection.sock is None:  # closed (the server said so, or an error)
            return
        connection.sock = _raw(connection.sock)
        with self._lock:
            idle = self._idle.setdefault(key, [])
            if len(idle) < self.max_idle:
                idle.append(connection)
                return
        connection.close()


class _Deadline:
    """A connected socket whose every operation gets what is left until ``end`` (monotonic
    seconds) as its timeout: the request's timeout holds for the whole request, however the
    server spreads its answer. ``makefile`` reads through it (http.client reads the answer from
    a file of the socket)."""

    def __init__(self, sock: socket.socket, end: float) -> None:
        self.sock = sock
        self.end = end
        self._files = 0  # open makefile()s: closing waits for them, as a socket's close does
        self._closed = False

    def _left(self) -> None:
        left = self.end - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request's time is up")
        self.sock.settimeout(left)

    def sendall(self, data: bytes) -> None:
        self._left()
        self.sock.sendall(data)

    def recv_into(self, buffer: memoryview, nbytes: int = 0) -> int:
        self._left()
        return self.sock.recv_into(buffer, nbytes)

    def makefile(self, mode: str = "rb", buffering: int = -1) -> io.BufferedReader:
        self._files += 1
        return io.BufferedReader(socket.SocketIO(self, "rb"))  # type: ignore[arg-type]

    def _decref_socketios(self) -> None:  # SocketIO.close calls it
        self._files -= 1
        if self._closed and self._files <= 0:
            self.sock.close()

    def close(self) -> None:  # http.client closes the connection before reading a last answer
        self._closed = True
        if self._files <= 0:
            self.sock.close()

    def __getattr__(self, name: str) -> object:  # close, settimeout, fileno, ...
        return getattr(self.sock, name)


def _raw(sock: object) -> socket.socket:
    return sock.sock if isinstance(sock, _Deadline) else sock  # type: ignore[return-value]
