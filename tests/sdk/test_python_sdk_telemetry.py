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


def test_down_then_slow_then_back_every_event_kept_arrives_once(server: Server,
                                                                 operator: Operator) -> None:
    """Through a loopback proxy: stopped, recording never waits and the buffer holds at most
    max_buffered (+ the batch being sent), the rest dropped and counted; slowed past the
    client's timeout, the batch is applied by the server but its answer lost, and its retry
    (same Idempotency-Key) counted once; back, everything kept arrives."""
    import json

    from tests.sdk.fault_proxy import FaultProxy

    _, key = operator.new_tenant("team")
    proxy = FaultProxy(server.url)
    try:
        client = Client(key, proxy.url, timeout=0.3, backoff_base=0.05, backoff_max=0.2)
        telemetry = client.telemetry("sdk-faults", batch_size=5, flush_interval=0.05,
                                     max_buffered=20)
        recorded, slowest = 0, 0.0

        def record(n: int) -> None:
            nonlocal recorded, slowest
            for _ in range(n):
                start = time.monotonic()
                telemetry.tool_call("search", {"q": recorded})
                slowest = max(slowest, time.monotonic() - start)
                recorded += 1

        record(5)
        assert telemetry.flush(timeout=5) is True
        proxy.down()
        record(40)
        assert 40 - 20 - 5 <= telemetry.dropped <= 40 - 20  # at most max_buffered (+ a batch)
        proxy.slow(1.0)
        time.sleep(1.5)  # the batch in flight is applied upstream, its answer comes too late
        proxy.up()
        assert telemetry.end(timeout=15) is True
        assert slowest < 0.05, slowest  # recording never waited on the network
        applied = [json.loads(body) for route, status, body in proxy.answers
                   if route.endswith("/events") and status == 200]
        assert sum(a["accepted"] for a in applied if not a["duplicate"]) \
            == recorded - telemetry.dropped  # everything kept arrived, nothing twice
    finally:
        proxy.down()


def test_ids_holding_a_colon_are_delivered(server, operator: Operator):
    """The SDK percent-encodes ':' (quote(safe='')); the server decodes the path parameter once,
    so the run and the execution are the ids as written (issue 25: all three events dropped)."""
    _, key = operator.new_tenant("team")
    client = Client(key, server.url)
    assert client.runs.put_memory("py:colon:run", "plan:step", {"n": 1}).created is True
    assert client.runs.get_memory("py:colon:run", "plan:step") == {"n": 1}
    assert client.runs.memory("py:colon:run") == {"plan:step": {"n": 1}}
    telemetry = client.telemetry("x:colon-1", batch_size=2, flush_interval=0.01)
    for _ in range(3):
        telemetry.event("step")
    assert telemetry.end(duration_ms=10) is True
    assert telemetry.dropped == 0
