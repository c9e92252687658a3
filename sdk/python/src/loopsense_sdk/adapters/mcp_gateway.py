"""The MCP gateway (``pip install "loopsense-sdk[mcp]"``; spec/integrations.md, "MCP gateway"):
an MCP server over stdio (or streamable HTTP with ``--listen``) that starts the real MCP server
as its child and passes every JSON-RPC message through unchanged, both ways, except the answers
to ``tools/call``:

    loopsense-mcp-gateway --run RUN_ID [--agent ID] [--policy observe|nudge|stop] \\
        [--api-url URL] [--api-key KEY] [--timeout S] [--listen HOST:PORT] \\
        -- <command of the real server...>

Each ``tools/call`` is reported, with its arguments and result, to the run monitor (a run
tracker, loopsense_sdk.tracker). On a nudge the nudge is appended to that call's result as a
text content item; on a break with policy ``stop`` the call is answered with ``isError: true``
and the reason instead of its result. When loopsense is slow or down the answer is forwarded
unchanged after at most the tracker's timeout (its steps are kept and sent once it is back).
Each answer is reported in a task of its own, so the other messages from the server (its
notifications, the answers to other calls) never wait on loopsense.
The official ``mcp`` package's transports do the framing and run the child; with ``--listen``
each HTTP session gets a child of its own (mcp_http.py).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from typing import Any

import anyio
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCError, JSONRPCRequest, JSONRPCResponse

from loopsense_sdk.client import Client
from loopsense_sdk.tracker import AgentLoopDetected, StepAnswer, Tracker

__all__ = ["Gateway", "main"]

PREFIX = "[loopsense] "


class Gateway:
    """Pumps messages between an MCP client (``client_*`` streams) and the real server
    (``server_*`` streams), reporting each tools/call to ``tracker``."""

    def __init__(self, tracker: Tracker) -> None:
        self.tracker = tracker
        self._calls: dict[Any, tuple[str, Any]] = {}  # request id -> (tool, arguments)

    async def run(self, client_read: Any, client_write: Any, server_read: Any,
                  server_write: Any) -> None:
        async with anyio.create_task_group() as tasks:
            async def upstream() -> None:
                with contextlib.suppress(anyio.ClosedResourceError):  # closed by an HTTP DELETE
                    await self._client_to_server(client_read, server_write)
                tasks.cancel_scope.cancel()  # the client went away: stop

            tasks.start_soon(upstream)
            tasks.start_soon(self._server_to_client, server_read, client_write, tasks)

    async def _client_to_server(self, read: Any, write: Any) -> None:
        async for item in read:
            if isinstance(item, Exception):  # not a JSON-RPC message: nothing to forward
                continue
            message = item.message
            if isinstance(message, JSONRPCRequest) and message.method == "tools/call":
                params = message.params or {}
                self._calls[message.id] = (str(params.get("name", "")), params.get("arguments"))
            await write.send(item)

    async def _server_to_client(self, read: Any, write: Any, tasks: Any) -> None:
        async for item in read:
            if isinstance(item, Exception):
                continue
            message = item.message
            if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id in self._calls:
                tool, arguments = self._calls.pop(message.id)
                tasks.start_soon(self._answer, item, tool, arguments, write)
                continue
            await write.send(item)

    async def _answer(self, item: SessionMessage, tool: str, arguments: Any, write: Any) -> None:
        await write.send(await self._reported(item, tool, arguments))

    async def _reported(self, item: SessionMessage, tool: str, arguments: Any) -> SessionMessage:
        message = item.message
        if not isinstance(message, JSONRPCResponse):  # the call failed: an error step, as it is
            await anyio.to_thread.run_sync(self._step, tool, arguments, None, True)
            return item
        result = message.result if isinstance(message.result, dict) else {}
        seen = {key: result[key] for key in ("content", "structuredContent") if key in result}
        answer = await anyio.to_thread.run_sync(self._step, tool, arguments, seen,
                                                bool(result.get("isError")))
        if isinstance(answer, AgentLoopDetected):
            stopped = {"content": [{"type": "text", "text": PREFIX + answer.reason}],
                       "isError": True}
            return SessionMessage(message.model_copy(update={"result": stopped}), item.metadata)
        if answer is not None and answer.inject:
            content = [*result.get("content", []), {"type": "text", "text": PREFIX + answer.inject}]
            nudged = {**result, "content": content}
            return SessionMessage(message.model_copy(update={"result": nudged}), item.metadata)
        return item

    def _step(self, tool: str, arguments: Any, result: Any,
              failed: bool) -> StepAnswer | AgentLoopDetected | None:
        try:
            return self.tracker.tool_call(tool, arguments, result=result,
                                          outcome="error" if failed else None)
        except AgentLoopDetected as stop:
            return stop
        except Exception:  # noqa: BLE001 - the gateway forwards unchanged whatever happens
            return None


def parse(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    args = list(argv)
    split = args.index("--") if "--" in args else len(args)
    parser = argparse.ArgumentParser(prog="loopsense mcp-gateway", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", required=True, help="the run id")
    parser.add_argument("--agent", default="mcp", help="the agent id (default mcp)")
    parser.add_argument("--policy", choices=("observe", "nudge", "stop"), default="nudge")
    parser.add_argument("--api-url", default=os.environ.get("LOOPSENSE_BASE_URL"))
    parser.add_argument("--api-key", default=os.environ.get("LOOPSENSE_API_KEY"))
    parser.add_argument("--timeout", type=float, default=2.0,
                        help="seconds a tools/call answer may wait for loopsense (default 2)")
    parser.add_argument("--listen", metavar="HOST:PORT",
                        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio "
                             "(port 0: any free one; the URL is printed to stderr)")
    options = parser.parse_args(args[:split])
    command = args[split + 1:]
    if not command:
        parser.error("give the real server's command after --")
    return options, command


async def serve(options: argparse.Namespace, command: list[str]) -> None:
    client = Client(options.api_key, options.api_url)
    tracker = client.runs.track(options.run, agent_id=options.agent, policy=options.policy,
                                timeout=options.timeout)
    child = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    try:
        if options.listen:
            from loopsense_sdk.adapters.mcp_http import serve_http  # uvicorn: only for HTTP

            await serve_http(tracker, child, options.listen)
        else:
            async with stdio_server() as (client_read, client_write), \
                    stdio_client(child) as (server_read, server_write):
                await Gateway(tracker).run(client_read, client_write, server_read, server_write)
    finally:
        tracker.flush(timeout=2.0)  # what loopsense did not take yet, bounded
        tracker.close()  # that flush was the exit flush


def main(argv: Sequence[str] | None = None) -> int:
    options, command = parse(sys.argv[1:] if argv is None else argv)
    anyio.run(serve, options, command)
    return 0


if __name__ == "__main__":
    sys.exit(main())
