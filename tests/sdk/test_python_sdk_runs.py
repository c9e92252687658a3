"""``client.runs`` of the Python SDK against a real `loopsense serve` over HTTP: the spec's
Python usage (loop_safety.md) verbatim, working memory, lessons, events, snapshots, restore,
retried breaks and steps applied once, typed errors, the monitor's off switch."""

from __future__ import annotations

from typing import Any

import pytest
from loopsense_sdk import Client, NotFoundError, Signal, ValidationError

from tests.e2e.server import DEV_KEY, Server

CALL = {"agentId": "ari", "kind": "tool_call", "action": "export_status", "args": {"job": 42},
        "result": {"state": "pending"}, "outcome": "neutral"}


def make(server: Server, key: str = DEV_KEY) -> Client:
    return Client(key, server.url, max_attempts=6, deadline=60)


def test_the_specs_python_usage(server):
    client = make(server)
    run_id = "sdk-run-2214"
    client.runs.register(run_id, "ari", role="support")
    client.runs.put_memory(run_id, "ticket", {"id": 2214, "status": "export pending"})
    client.runs.add_lesson(run_id, "the export service times out for tickets with "
                                   "attachments", tags=["export"])
    result: dict[str, Any] | None = None
    briefing: dict[str, Any] | None = None
    for _ in range(10):
        client.runs.steps(run_id, CALL)
        # -- the spec's lines, verbatim --
        signal = client.runs.signal(run_id, agent_id="ari")
        if signal.is_looping and signal.confidence >= 0.7:
            result = client.runs.circuit_break(run_id, reason="repeated_tool_call")
            briefing = client.runs.context(run_id, query="resume ticket 2214",
                                           max_token_budget=1500)
            break
    assert result is not None and briefing is not None
    assert result["broken"] is True and result["summary"]["entries"] == 1
    assert briefing["tokens"] <= 1500
    assert [i["type"] for i in briefing["items"]] == ["snapshot", "lesson"]
    assert client.runs.memory(run_id) == {}
    assert client.runs.snapshot(run_id, result["snapshot_id"]) == {
        "ticket": {"id": 2214, "status": "export pending"}}
    assert [e["type"] for e in client.runs.events(run_id)] == ["CIRCUIT_BROKEN"]
    assert client.runs.signal(run_id, agent_id="ari").is_looping is False


def test_memory_lessons_and_restore(server):
    client = make(server)
    run_id = "sdk-memory"
    for i in range(5):
        client.runs.put_memory(run_id, f"k{i}", {"i": i, "s": "é"})
    assert client.runs.get_memory(run_id, "k3") == {"i": 3, "s": "é"}
    client.runs.delete_memory(run_id, "k4")
    with pytest.raises(NotFoundError) as caught:
        client.runs.get_memory(run_id, "k4")
    assert caught.value.code == "RUN_MEMORY_NOT_FOUND"
    before = client.runs.memory(run_id)
    broken = client.runs.circuit_break(run_id, reason="test", idempotency_key="sdk-b1")
    assert client.runs.circuit_break(run_id, reason="test", idempotency_key="sdk-b1") == broken
    client.runs.put_memory(run_id, "later", True)
    restored = client.runs.restore(run_id, broken["snapshot_id"])
    assert restored["entries"] == 4
    assert client.runs.memory(run_id) == before
    assert client.runs.snapshot(run_id, restored["replaced"]["snapshotId"]) == {"later": True}
    kinds = [x["kind"] for x in client.runs.lessons(run_id)]
    assert kinds == ["loop_detected", "replaced_by_restore"]


def test_a_value_over_32_kib_is_a_validation_error_naming_the_limit(server):
    with pytest.raises(ValidationError) as caught:
        make(server).runs.put_memory("sdk-big", "k", "x" * 40_000)
    assert caught.value.details == [{"path": "value",
                                     "issue": "must be at most 32768 bytes (32 KiB) of JSON"}]


def test_retried_steps_with_one_key_are_applied_once(server):
    client = make(server)
    first = client.runs.steps("sdk-steps", [CALL] * 3, idempotency_key="sdk-s1")
    again = client.runs.steps("sdk-steps", [CALL] * 3, idempotency_key="sdk-s1")
    assert again == first and client.runs.signal("sdk-steps", "ari").raw["sequence"] == 3


def test_with_the_monitor_off_the_signal_says_no_pathologies(server, operator):
    _, key = operator.new_tenant("team")
    server.request({"monitor_disabled": True}, key=key, path="/v1/detector-thresholds",
                   method="PUT")
    client = make(server, key)
    client.runs.steps("sdk-off", [CALL] * 6)
    signal = client.runs.signal("sdk-off", agent_id="ari")
    assert isinstance(signal, Signal)
    assert signal.monitor_disabled and not signal.is_looping and signal.confidence == 0.0
