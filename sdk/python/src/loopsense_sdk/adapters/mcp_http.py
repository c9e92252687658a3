"""The MCP gateway over streamable HTTP (``loopsense-mcp-gateway --listen HOST:PORT ...``): an
MCP endpoint at ``http://HOST:PORT/mcp`` whose every session gets a real server of its own (the
command after ``--``, over stdio), pumped by the same ``Gateway`` as the stdio gateway.

The official ``mcp`` package's ``StreamableHTTPServerTransport`` speaks the protocol (POST, the
SSE streams, ``Mcp-Session-Id``, DELETE); this module only routes each request to its session's
transport and starts the child when a session opens. Requests must name a loopback (or the
listened-on) host: the package's DNS rebinding protection is on.
"""

from __future__ import annotations

import json
import socket
import sys
import uuid
from typing import Any

import anyio
import uvicorn
from anyio.abc import TaskGroup
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request

from loopsense_sdk.adapters.mcp_gateway import Gateway
from loopsense_sdk.tracker import Tracker

__all__ = ["HttpGateway", "serve_http"]

PATH = "/mcp"
SESSION_HEADER = b"mcp-session-id"
LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
MAX_OPENING_BYTES = 64 * 1024


class HttpGateway:
    """The ASGI app: one ``StreamableHTTPServerTransport`` and one child per MCP session."""

    def __init__(self, tracker: Tracker, child: StdioServerParameters, tasks: TaskGroup,
                 host: str) -> None:
        self.tracker = tracker
        self.child = child
        self.tasks = tasks
        hosts = sorted({*LOOPBACK, host})
        self.security = TransportSecuritySettings(
            allowed_hosts=[f"{h}:*" for h in hosts],
            allowed_origins=[f"http://{h}:*" for h in hosts])
        self.guard = TransportSecurityMiddleware(self.security)
        self.sessions: dict[str, StreamableHTTPServerTransport] = {}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"].rstrip("/") != PATH:
            await _answer(send, 404, b"not found")
            return
        named = dict(scope["headers"]).get(SESSION_HEADER)
        if named is None:  # only an initialize may open a session (and start a server child)
            refused = await self.guard.validate_request(Request(scope), is_post=True)
            if refused is not None:
                await refused(scope, receive, send)
                return
            body = await _body(receive) if scope["method"] == "POST" else None
            if body is None or not _initializes(body):
                await _answer(send, 400, b"a session starts with a POST of initialize")
                return
            receive = _replay(body, receive)
            transport = await self._open()
        else:
            found = self.sessions.get(named.decode("latin-1"))
            if found is None:  # ended, or never opened: as the MCP spec says, 404
                await _answer(send, 404, b"session not found")
                return
            transport = found
        await transport.handle_request(scope, receive, send)
        if transport.is_terminated:
            self.sessions.pop(transport.mcp_session_id or "", None)

    async def _open(self) -> StreamableHTTPServerTransport:
        transport = StreamableHTTPServerTransport(uuid.uuid4().hex,
                                                  security_settings=self.security)
        self.sessions[transport.mcp_session_id or ""] = transport

        async def pump(*, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
            try:
                async with transport.connect() as (client_read, client_write), \
                        stdio_client(self.child) as (server_read, server_write):
                    task_status.started()
                    await Gateway(self.tracker).run(client_read, client_write, server_read,
                                                    server_write)
            except Exception:  # noqa: BLE001 - one session's end, however it comes, is its own
                pass
            finally:
                self.sessions.pop(transport.mcp_session_id or "", None)

        await self.tasks.start(pump)
        return transport


async def _body(receive: Any) -> bytes | None:
    """The request's body, or None past MAX_OPENING_BYTES (an initialize is a few hundred)."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        size += len(message.get("body", b""))
        if size > MAX_OPENING_BYTES:
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


def _initializes(body: bytes) -> bool:
    try:
        message = json.loads(body)
    except ValueError:
        return False
    return isinstance(message, dict) and message.get("method") == "initialize"


def _replay(body: bytes, receive: Any) -> Any:
    """``receive`` with the body already read handed over first; then the client's own (its
    disconnect)."""
    sent = False

    async def again() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        message: dict[str, Any] = await receive()
        return message

    return again


async def _answer(send: Any, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def serve_http(tracker: Tracker, child: StdioServerParameters, listen: str) -> None:
    """Serve until interrupted (SIGINT/SIGTERM); the bound URL is printed to stderr."""
    host, _, port = listen.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    sock = socket.create_server((host, int(port)))
    bound = sock.getsockname()[1]
    async with anyio.create_task_group() as tasks:
        app = HttpGateway(tracker, child, tasks, host)
        server = uvicorn.Server(uvicorn.Config(app, lifespan="off", log_level="warning"))
        print(f"loopsense mcp-gateway: listening on http://{host}:{bound}{PATH}",
              file=sys.stderr, flush=True)
        await server.serve(sockets=[sock])
        tasks.cancel_scope.cancel()  # the sessions' children end with the server
