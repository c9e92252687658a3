"""The Python SDK's telemetry helper (``client.telemetry(execution_id)``) against a real
`loopsense serve`: a looping agent's events arrive batched and form the expected failure groups;
recording never blocks or raises when the service is down; the buffer is bounded; a batch the
service refuses is dropped, not retried for ever."""

from __future__ import annotations

import socket
import time

from loopsense_sdk import Client, semantic_signature

from loopsense.core.signatures import hash8
from tests.e2e.server import Operator, Server


def _groups(server: Server, key: str) -> dict[str, int]:
    answer = server.request(b"", key=key, method="GET", path="/v1/failure-groups")
    return {g["signature"]: g["executions"] for g in answer.json()["items"]}


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_looping_agent_streamed_through_the_helper_forms_its_groups(server, operator: Operator):
    _, key = operator.new_tenant("team")
    client = Client(key, server.url)
    for run in ("a", "b"):
        telemetry = client.telemetry(f"sdk-{run}", batch_size=4, flush_interval=0.05)
        for _ in range(4):
            telemetry.llm_call("gpt-4o-mini", "which hotel?")
            telemetry.tool_call("search", {"q": "hotel"})
            telemetry.checkpoint("plan", goal="Book a HOTEL ", step=1)
        assert telemetry.end(duration_ms=500) is True
        assert telemetry.dropped == 0
    groups = _groups(server, key)
    assert groups[f"loops/identical_call_{hash8('gpt-4o-mini', 'which hotel?')}"] == 2
    assert groups[semantic_signature({"goal": "book a hotel", "step": 1})] == 2
    assert groups["loops/step_count_10+"] == 2


def test_recording_never_blocks_or_raises_when_the_service_is_down():
    client = Client("ls_" + "x" * 30, f"http://127.0.0.1:{_closed_port()}", timeout=5.0,
                    deadline=10.0)
    telemetry = client.telemetry("down", batch_size=2, flush_interval=0.01, max_buffered=5)
    started = time.monotonic()
    for _ in range(10):
        telemetry.llm_call("m", "hello")
    recorded_in = time.monotonic() - started
    assert telemetry.dropped >= 5 - 2  # the buffer holds 5 (2 more may be in flight)
    assert telemetry.flush(timeout=0.3) is False  # still waiting: nothing raised
    assert telemetry.end(timeout=0.2) is False
    # Recording is a buffer append: it never waits for a request (5 s timeout, 10 s deadline).
    assert recorded_in < client.timeout


def test_a_refused_batch_is_dropped_and_counted(server, operator: Operator):
    _, key = operator.new_tenant("team")
    client = Client(key, server.url)
    telemetry = client.telemetry("bad id/with slash", batch_size=1, flush_interval=0.01)
    telemetry.event("x")
    assert telemetry.flush(timeout=30) is True  # done with: refused (400), not retried
    assert telemetry.dropped == 1
    telemetry.close()
