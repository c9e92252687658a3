"""The MCP gateway over streamable HTTP (``loopsense-mcp-gateway --listen HOST:PORT ...``): an
MCP endpoint at ``http://HOST:PORT/mcp`` whose every session gets a real server of its own (the
command after ``--``, over stdio), pumped by the same ``Gateway`` as the stdio gateway.

The official ``mcp`` package's ``StreamableHTTPServerTransport`` speaks the protocol (POST, the
SSE streams, ``Mcp-Session-Id``, DELETE); this module only routes each request to its session's
transport and starts the child when a session opens. Requests must name a loopback (or the
listened-on) host: the package's DNS rebinding protection is on.
"""

from __future__ import annotations

import socket
import sys
import uuid
from typing import Any

import anyio
import uvicorn
from anyio.abc import TaskGroup
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.transport_security import TransportSecuritySettings

from loopsense_sdk.adapters.mcp_gateway import Gateway
from loopsense_sdk.tracker import Tracker

__all__ = ["HttpGateway", "serve_http"]

PATH = "/mcp"
SESSION_HEADER = b"mcp-session-id"
LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


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
        self.sessions: dict[str, StreamableHTTPServerTransport] = {}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"].rstrip("/") != PATH:
            await _answer(send, 404, b"not found")
            return
        named = dict(scope["headers"]).get(SESSION_HEADER)
        if named is None:
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
