"""The MCP gateway with the official mcp package: the package's own client session talks, through
``loopsense-mcp-gateway`` (a subprocess; over stdio, and over streamable HTTP with ``--listen``),
to a scripted tool server, with a running `loopsense serve` as the run monitor. A call
repeated with the same arguments and result gets the nudge appended to its result, then
(policy stop) an ``isError`` answer with the reason; a polling call whose result changes is
passed unchanged; every other message (initialize, tools/list, resources, prompts,
notifications) passes through as a direct session sees it; with loopsense down each call is
forwarded unchanged within the tracker's timeout plus a margin, and the steps kept arrive once
it is back, each once."""

from __future__ import annotations

import contextlib
import functools
import json
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from loopsense_sdk import Client  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from tests.e2e.server import DEV_KEY, Server  # noqa: E402

SCRIPTED = Path(__file__).parent / "mcp" / "scripted_server.py"
TIMEOUT = 0.5
MARGIN = 0.9  # beyond TIMEOUT on a loaded machine; still short of the 4 x TIMEOUT delays below


def gateway(url: str, run: str, policy: str, cli: bool = False) -> StdioServerParameters:
    """The gateway in front of the scripted server: ``loopsense mcp-gateway`` (``cli``) or the
    module itself."""
    command = [str(Path(sys.executable).parent / "loopsense"), "mcp-gateway"] if cli else [
        sys.executable, "-m", "loopsense_sdk.adapters.mcp_gateway"]
    return StdioServerParameters(
        command=command[0],
        args=[*command[1:], "--run", run, "--agent", "ide", "--policy", policy,
              "--api-url", url, "--api-key", DEV_KEY, "--timeout", str(TIMEOUT), "--",
              sys.executable, str(SCRIPTED)])


Connect = Callable[[], Any]  # -> the async context manager of a client transport's streams


def over_stdio(params: StdioServerParameters) -> Connect:
    return lambda: stdio_client(params)


@dataclass
class Listening:
    """The gateway serving streamable HTTP: its URL and process; called, a client transport."""

    url: str
    pid: int

    def __call__(self) -> Any:
        return streamable_http_client(self.url)

    def children(self) -> list[str]:
        """The server children it started (one per session)."""
        return Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text().split()


@contextlib.contextmanager
def listening(params: StdioServerParameters) -> Iterator[Listening]:
    """The gateway serving streamable HTTP (``--listen 127.0.0.1:0``)."""
    command = [params.command, *params.args]
    split = command.index("--")
    process = subprocess.Popen([*command[:split], "--listen", "127.0.0.1:0", *command[split:]],
                               stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        line = process.stderr.readline()  # the URL, once it listens
        found = re.search(r"http://\S+", line)
        assert found, line
        # Keep reading what it writes after: a full pipe would block the gateway mid-test.
        threading.Thread(target=process.stderr.read, daemon=True).start()
        yield Listening(found.group(0), process.pid)
    finally:
        process.terminate()
        process.wait(timeout=10)


async def session_calls(connect: Connect, *plan: tuple[str, int]) -> tuple[
        list[Any], list[str], float]:
    """``n`` calls of each ``(tool, n)`` in turn, in one session; the results, the tools
    listed, the slowest call (s)."""
    results, slowest = [], 0.0
    async with connect() as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = [t.name for t in (await session.list_tools()).tools]
        for tool, n in plan:
            for _ in range(n):
                start = time.monotonic()
                results.append(await session.call_tool(tool, {"job": 42}))
                slowest = max(slowest, time.monotonic() - start)
    return results, sorted(listed), slowest


def texts(result: Any) -> list[str]:
    return [c.text for c in result.content]


def test_polling_passes_unchanged_then_a_looping_call_is_nudged_then_refused(
        server: Server) -> None:
    run = "mcp:" + uuid.uuid4().hex[:12]
    connect = over_stdio(gateway(server.url, run, "stop", cli=True))
    check_poll_then_loop(server, run, connect)


def test_over_streamable_http_the_same_and_every_other_message_unchanged(
        server: Server) -> None:
    run = "mcp:" + uuid.uuid4().hex[:12]
    with listening(gateway(server.url, run, "stop")) as connect:
        through = anyio.run(every_other_message, connect)  # a session of its own, then another
        check_poll_then_loop(server, run, connect)
    assert through == direct_messages()


INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "probe", "version": "1"}}}).encode()


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads children from /proc")
def test_over_http_only_an_initialize_from_a_local_page_opens_a_session(server: Server) -> None:
    """Anything else without a session id (a GET, a DELETE, another method, a foreign Host: a
    page rebinding its DNS to the port) is refused and starts no server child."""
    run = "mcp:" + uuid.uuid4().hex[:12]

    def status(gw: Listening, method: str, body: bytes | None = None,
               host: str | None = None) -> int:
        request = urllib.request.Request(gw.url, data=body, method=method, headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            **({"Host": host} if host else {})})
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return int(answer.status)
        except urllib.error.HTTPError as refused:
            return int(refused.code)

    with listening(gateway(server.url, run, "stop")) as gw:
        assert status(gw, "GET") == 400
        assert status(gw, "DELETE") == 400
        assert status(gw, "POST", b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}') == 400
        assert status(gw, "POST", INITIALIZE, host="rebound.example:80") >= 400
        assert gw.children() == []
        assert status(gw, "POST", INITIALIZE) == 200  # and this one does
        assert len(gw.children()) == 1


def check_poll_then_loop(server: Server, run: str, connect: Connect) -> None:
    results, listed, _ = anyio.run(session_calls, connect,
                                   ("job_progress", 10), ("export_status", 8))
    assert listed == ["announce", "export_status", "job_progress"]  # tools/list passed through
    polled, looped = results[:10], results[10:]
    assert [texts(r) for r in polled] == [[f'{{"done_pct": {n * 10}}}'] for n in range(1, 11)]
    assert not any(r.is_error for r in polled)  # a poll whose result changes is left alone
    first = next(i for i, r in enumerate(looped) if len(r.content) > 1)
    assert all(texts(r) == ['{"state": "pending"}'] for r in looped[:first])
    assert texts(looped[first])[0] == '{"state": "pending"}'  # the result, unchanged
    assert texts(looped[first])[1].startswith("[loopsense] ") and \
        "export_status" in texts(looped[first])[1]
    stopped = next(r for r in looped if r.is_error)
    assert texts(stopped)[0].startswith("[loopsense] You have called export_status")
    signal = Client(DEV_KEY, server.url).runs.signal(run, agent_id="ide")
    assert signal.is_looping and signal.sequence is not None and signal.sequence >= 10 + first


def test_with_loopsense_down_calls_pass_unchanged_within_the_timeout() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    results, _, slowest = anyio.run(session_calls, over_stdio(gateway(
        f"http://127.0.0.1:{closed}", "mcp:down", "stop")), ("export_status", 10))
    assert all(texts(r) == ['{"state": "pending"}'] and not r.is_error for r in results)
    assert slowest < TIMEOUT + MARGIN, slowest


async def every_other_message(connect: Connect) -> dict[str, Any]:
    """What a session sees of the messages other than a reported tools/call: the initialize
    result, each list and read, and the log notification a tool sends (server to client)."""
    logged: list[Any] = []

    async def on_log(params: Any) -> None:
        logged.append(params.model_dump(mode="json"))

    async with connect() as (read, write), \
            ClientSession(read, write, logging_callback=on_log) as session:
        init = (await session.initialize()).model_dump(mode="json")
        seen = {
            "initialize": init,
            "tools": (await session.list_tools()).model_dump(mode="json"),
            "resources": (await session.list_resources()).model_dump(mode="json"),
            "read": (await session.read_resource("notes://readme")).model_dump(mode="json"),
            "prompts": (await session.list_prompts()).model_dump(mode="json"),
            "prompt": (await session.get_prompt("review", {"path": "a.py"})).model_dump(
                mode="json"),
            "announce": (await session.call_tool("announce", {})).model_dump(mode="json"),
        }
        await session.send_ping()
    return {**seen, "logged": logged}


@functools.cache
def direct_messages() -> dict[str, Any]:
    """What a session straight to the scripted server sees (once per test run)."""
    direct = StdioServerParameters(command=sys.executable, args=[str(SCRIPTED)])
    return anyio.run(every_other_message, over_stdio(direct))


def test_every_other_message_passes_through_unchanged(server: Server) -> None:
    through = anyio.run(every_other_message, over_stdio(gateway(
        server.url, "mcp:" + uuid.uuid4().hex[:12], "stop")))
    assert through == direct_messages()
    assert through["logged"] and through["logged"][0]["data"] == "announced"
    assert [r["uri"] for r in through["resources"]["resources"]] == ["notes://readme"]


class Switch:
    """A loopback TCP proxy to ``target`` that refuses every connection until ``up`` is set, and
    holds each answer ``delay`` seconds on the connections made while ``delay`` is set."""

    def __init__(self, target: str) -> None:
        host, port = target.removeprefix("http://").split(":")
        self.target = (host, int(port.rstrip("/")))
        self.up = threading.Event()
        self.refused = 0
        self.delay = 0.0
        self.slowed = 0  # connections whose answers were held
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            if not self.up.is_set():
                conn.close()
                self.refused += 1
                continue
            upstream = socket.create_connection(self.target)
            self.slowed += self.delay > 0
            for a, b, delay in ((conn, upstream, 0.0), (upstream, conn, self.delay)):
                threading.Thread(target=self._pipe, args=(a, b, delay), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket, delay: float) -> None:
        try:
            while data := a.recv(65536):
                time.sleep(delay)
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)


def test_steps_kept_while_loopsense_is_down_then_slow_arrive_once_when_it_is_back(
        server: Server) -> None:
    switch = Switch(server.url)
    run = "mcp:" + uuid.uuid4().hex[:12]

    async def calls() -> tuple[list[Any], float]:
        results, slowest = [], 0.0
        params = gateway(switch.url, run, "observe")
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for n in range(7):
                if n == 2:  # loopsense slowed: answers held past the tracker's timeout
                    switch.delay = 4 * TIMEOUT
                    switch.up.set()
                    await anyio.sleep(0.5)  # past the backoff (<= 0.4 s): the next call asks
                if n == 4:  # loopsense is back, once the tracker's backoff (<= 1.6 s) is over
                    switch.delay = 0.0
                    await anyio.sleep(1.7)
                start = time.monotonic()
                results.append(await session.call_tool("job_progress", {"job": 42}))
                slowest = max(slowest, time.monotonic() - start)
        return results, slowest

    results, slowest = anyio.run(calls)
    switch.sock.close()
    assert [texts(r) for r in results] == [[f'{{"done_pct": {n * 10}}}'] for n in range(1, 8)]
    assert slowest < TIMEOUT + MARGIN, slowest
    assert switch.refused >= 1 and switch.slowed >= 1  # loopsense was found down, then slow
    signal = Client(DEV_KEY, server.url).runs.signal(run, agent_id="ide")
    assert signal.sequence == 7  # each call once: none lost, none twice
