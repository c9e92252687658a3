"""HTTP for `loopsense serve`: Hypercorn (h11) speaks the protocol, a small ASGI app hands each
request to the Gateway in a bounded thread pool.

Hypercorn frames requests (Content-Length, chunked), closes a connection that has sent no
complete request head within ``idle_timeout_s`` or no byte for ``read_timeout_s``, and answers a
malformed request with an empty 400/431/501 that quotes nothing. The app adds what it does not:
a request with both Content-Length and Transfer-Encoding is refused and its connection closed
(RFC 9112, section 6.1: h11 would take the chunked body and keep the connection); a body is
counted as it arrives and refused past MAX_BODY_BYTES or ``body_timeout_s``, never buffered
beyond the cap; at ``max_concurrency`` requests in flight (or ``large_bodies`` bodies over
1 MiB, whose parse takes ~100 MB) the next one is SERVER_BUSY (503, Retry-After) at once.
Every answer is the envelope, and nothing of a request is logged.
"""

from __future__ import annotations

import asyncio
import base64
import signal
import socket
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from hypercorn.asyncio import serve
from hypercorn.config import Config

from loopsense import jsonio
from loopsense.errors import LoopsenseError, validation_error
from loopsense.observability import logger
from loopsense.platform.http.request import MAX_BODY_BYTES, body_too_large, error_response
from loopsense.validation import is_digits
from loopsense_local.gateway import Gateway
from loopsense_local.limits import Limits

# A body over this takes one of Limits.large_bodies slots (the parse, not the bytes, is large).
LARGE_BODY_BYTES = 1 << 20

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class _Refused(Exception):
    """A request answered by the app itself; the connection is closed after the answer."""

    def __init__(self, error: LoopsenseError) -> None:
        super().__init__(error.code)
        self.error = error


class _Gone(Exception):
    """The client closed its connection before its request was complete: nobody to answer."""


class GatewayApp:
    """The ASGI application: HTTP request -> Gateway.handle -> HTTP response."""

    def __init__(self, gateway: Gateway, limits: Limits) -> None:
        self.gateway, self.limits = gateway, limits
        self.pool = ThreadPoolExecutor(limits.max_concurrency, thread_name_prefix="handler")
        self.in_flight = self.large_in_flight = 0  # touched on the event loop only

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            self.pool.shutdown(wait=False, cancel_futures=True)
            await send({"type": "lifespan.shutdown.complete"})
            return
        # A WebSocket upgrade is answered as a plain request (no route takes one).
        prefix = "websocket.http." if scope["type"] == "websocket" else "http."
        try:
            response = await self._answer(scope, receive)
            close = False
        except _Gone:
            return
        except _Refused as refused:
            response, close = error_response(refused.error, str(uuid.uuid4())), True
        except Exception as exc:  # noqa: BLE001 - answered in the envelope, type logged only
            logger.error("http crashed", extra={"exception": type(exc).__name__})
            error = LoopsenseError("INTERNAL_ERROR", "unexpected failure")
            response, close = error_response(error, str(uuid.uuid4())), True
        await _send(send, prefix, response, close, scope["http_version"].startswith("1"))

    async def _answer(self, scope: dict[str, Any], receive: Receive) -> dict[str, Any]:
        headers: dict[str, str] = {}
        for raw_name, raw_value in scope["headers"]:
            name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
            headers[name] = f"{headers[name]},{value}" if name in headers else value
        if "content-length" in headers and "transfer-encoding" in headers:
            raise _Refused(validation_error(
                "headers", "must not carry both Content-Length and Transfer-Encoding"))
        if self.in_flight >= self.limits.max_concurrency:
            raise _Refused(_busy(f"more than {self.limits.max_concurrency} requests"))
        self.in_flight += 1
        large = [False]  # holds a large-body slot
        try:
            length = headers.get("content-length")
            if length is not None and not is_digits(length):  # h11 refuses these; HTTP/2 may not
                raise _Refused(validation_error("Content-Length", "must be a number of bytes"))
            if length is not None and int(length) > MAX_BODY_BYTES:
                raise _Refused(body_too_large(MAX_BODY_BYTES))
            body = await self._body(receive, int(length or 0), large) \
                if scope["type"] == "http" else b""
            path = scope["raw_path"].decode("latin-1")
            query = scope["query_string"].decode("latin-1")
            method = scope.get("method", "GET")  # a WebSocket upgrade is a GET
            return await asyncio.get_running_loop().run_in_executor(
                self.pool, self.gateway.handle, method, path, query, headers, body)
        finally:
            self.in_flight -= 1
            if large[0]:
                self.large_in_flight -= 1

    async def _body(self, receive: Receive, declared: int, large: list[bool]) -> bytes:
        """The body as it arrives, refused once over the cap or past the deadline, or when it
        grows large (``declared`` or as counted) while every large-body slot is taken."""
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(self.limits.body_timeout_s):
                while True:
                    if max(size, declared) > LARGE_BODY_BYTES and not large[0]:
                        if self.large_in_flight >= self.limits.large_bodies:
                            raise _Refused(_busy(f"more than {self.limits.large_bodies} "
                                                 f"bodies over {LARGE_BODY_BYTES} bytes"))
                        self.large_in_flight += 1
                        large[0] = True
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        raise _Gone
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > MAX_BODY_BYTES:
                        raise _Refused(body_too_large(MAX_BODY_BYTES))
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        return b"".join(chunks)
        except TimeoutError:
            raise _Refused(validation_error(
                "body", f"must arrive within {self.limits.body_timeout_s} seconds")) from None


def _busy(what: str) -> LoopsenseError:
    return LoopsenseError("SERVER_BUSY", f"{what} at once on this server", retry_after=1)


async def _send(send: Send, prefix: str, response: dict[str, Any], close: bool,
                http1: bool) -> None:
    payload = response.get("body", "")
    if response.get("isBase64Encoded"):  # a binary answer (OTLP protobuf), as API Gateway decodes
        data = base64.b64decode(payload)
    elif isinstance(payload, str):
        data = payload.encode()
    else:
        data = jsonio.dumps(payload).encode()
    headers = {**(response.get("headers") or {}), "Content-Length": len(data)}
    if close and http1:  # h11 then closes the connection after this answer
        headers["Connection"] = "close"
    # HTTP/1 names keep the handler's case, as API Gateway sends them; HTTP/2 wants lower case.
    await send({"type": prefix + "response.start", "status": int(response.get("statusCode", 200)),
                "headers": [((name if http1 else name.lower()).encode("latin-1"),
                             str(value).encode("latin-1")) for name, value in headers.items()]})
    await send({"type": prefix + "response.body", "body": data})


class HttpServer:
    """Bound at construction (so a port 0 is known before serving); ``run`` serves until
    SIGINT or SIGTERM, then lets requests in flight finish."""

    def __init__(self, gateway: Gateway, host: str, port: int, limits: Limits) -> None:
        self.app = GatewayApp(gateway, limits)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        listener = socket.socket(family, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
        listener.listen(1024)  # a burst of clients waits here instead of being reset
        self.port: int = listener.getsockname()[1]
        self.config = Config()
        self.config.bind = [f"fd://{listener.detach()}"]  # Hypercorn's to close now
        self.config.include_server_header = False  # no product or version in any answer
        self.config.accesslog = None  # an access line would carry the path
        self.config.loglevel = "WARNING"
        self.config.keep_alive_timeout = limits.idle_timeout_s
        self.config.read_timeout = limits.read_timeout_s
        self.config.graceful_timeout = 5

    def run(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        await serve(self.app, self.config, shutdown_trigger=stop.wait)  # type: ignore[arg-type]
