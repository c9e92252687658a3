"""HTTP transports: the default keeps connections alive (``KeepAliveTransport``, the standard
library's http.client), ``urllib_transport`` opens one per request (and honours proxies).

A transport sends one request and answers any HTTP status; it raises ``APIConnectionError`` (or
``RequestTimeoutError``) when there is no answer. The client's retry loop (loopsense_sdk.client)
decides what happens next.
"""

from __future__ import annotations

import http.client
import threading
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
        with self._lock:
            idle = self._idle.setdefault(key, [])
            if len(idle) < self.max_idle:
                idle.append(connection)
                return
        connection.close()
