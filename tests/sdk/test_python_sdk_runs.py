"""``client.runs`` against a real `loopsense serve` (docs/runs.md, docs/recover.md): register,
steps (one by one, batched, retried through a proxy that loses the answer: applied and charged
once), signal as attributes, reset, config, the monitor's off switch, each runs error as its
typed class; the spec's Python usage (loop_safety.md) verbatim, working memory, lessons, events,
snapshots, restore, and breaks and restores retried after a lost answer applied once."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from loopsense_sdk import (
    Briefing,
    CircuitBreak,
    Client,
    NotFoundError,
    RunAgentNotFoundError,
    RunStep,
    SkillNotAvailableForPlanError,
    ValidationError,
)

from tests.e2e.server import DEV_KEY, Operator, Server
from tests.sdk.test_python_sdk import Proxy

CALL: RunStep = {"kind": "tool_call", "action": "export_status", "args": {"job": 42},
                 "result": {"state": "pending"}, "outcome": "neutral"}


def client(server: Server, key: str = DEV_KEY, **options: Any) -> Client:
    return Client(key, server.url, **options)


def run_id() -> str:
    return "sdk:" + uuid.uuid4().hex[:12]  # ':' is a run id character: sent unquoted


def test_register_steps_and_signal_as_attributes(server: Server) -> None:
    runs, run = client(server).runs, run_id()
    agent = runs.register(run, agent_id="ari", role="support", objective_embedding=[1.0, 0.0])
    assert (agent.run_id, agent.agent_id, agent.role, agent.objective_dimensions,
            agent.sequence) == (run, "ari", "support", 2, 0)
    assert agent.retention is not None and agent.retention.days == 14
    for i in range(6):
        result = runs.steps(run, [CALL], agent_id="ari")
        assert (result.accepted, result.first_index, result.sequence) == (1, i, i + 1)
        assert result.credits == 1 and result.execution_id
    assert result.repeated and not result.stagnant
    assert [(f.rule, f.severity, f.count) for f in result.findings][0] == \
        ("repeated_call", "critical", 6)
    assert result.recommendation.action == "nudge"
    assert result.recommendation.nudge and "export_status" in result.recommendation.nudge

    signal = runs.signal(run, agent_id="ari")
    assert signal.is_looping and signal.confidence >= 0.7 and not signal.monitor_disabled
    assert (signal.sequence, signal.segment_start) == (6, 0)
    assert signal.findings[0].step_indices == (0, 1, 2, 3, 4, 5)
    assert signal.recommendation == result.recommendation  # re-reading counts nothing
    assert signal.raw["signal"]["rationale"] == signal.rationale


def test_a_batch_answers_for_its_last_step_and_reset_starts_a_new_segment(
        server: Server) -> None:
    runs, run = client(server).runs, run_id()
    batch: list[RunStep] = [{**CALL, "agentId": "bob", "action": a} for a in ("a", "b") * 4]
    result = runs.steps(run, batch)
    assert (result.accepted, result.first_index, result.sequence) == (8, 0, 8)
    assert {"cycle", "repeated_call"} <= {f.rule for f in result.findings}
    runs.steps(run, [CALL], agent_id="cy")
    one = runs.reset(run, agent_id="bob")
    assert [(a.agent_id, a.segment_start) for a in one.agents] == [("bob", 8)]
    after = runs.signal(run, agent_id="bob")
    assert not after.is_looping and after.findings == () and after.segment_start == 8
    assert after.recommendation.action == "continue"
    every = runs.reset(run)  # no agent: every agent of the run, sorted
    assert [(a.agent_id, a.segment_start) for a in every.agents] == [("bob", 8), ("cy", 1)]


def test_config_applies_to_the_next_steps_and_is_checked(server: Server) -> None:
    runs, run = client(server).runs, run_id()
    stored = runs.config(run, repeat_warn=2, tools={"heartbeat": {"exempt": True}})
    assert stored.config == {"repeat_warn": 2, "tools": {"heartbeat": {"exempt": True}}}
    assert stored.retention is not None
    result = runs.steps(run, [CALL, CALL], agent_id="ari")
    assert [(f.rule, f.severity) for f in result.findings] == [("repeated_call", "warning")]
    misspelt: dict[str, Any] = {"repeat_warning": 2}  # untyped: the server names the field
    with pytest.raises(ValidationError) as unknown:
        runs.config(run, **misspelt)
    assert unknown.value.details[0]["path"] == "config"
    with pytest.raises(ValidationError) as objective:
        runs.config(run, objective_embedding=[1.0])
    assert objective.value.details[0]["path"] == "config.objective_embedding"


def test_a_retried_batch_is_applied_and_charged_once(server: Server, operator: Operator) -> None:
    tenant, key = operator.new_tenant("team")
    proxy = Proxy(server.url, ["drop", "429"])  # applied and charged, answer lost; then 429
    run = run_id()
    try:
        result = Client(key, proxy.url, backoff_base=0.01).runs.steps(run, [CALL] * 3,
                                                                       agent_id="ari")
    finally:
        proxy.stop()
    keys = {k for k, _ in proxy.seen}
    assert len(proxy.seen) == 3 and len(keys) == 1 and None not in keys
    assert (result.first_index, result.sequence) == (0, 3)  # the first answer, replayed
    assert operator.usage(tenant)["used"] == 1
    assert Client(key, server.url).runs.signal(run, agent_id="ari").sequence == 3


def test_the_monitor_off_switch_reads_as_nothing_found(server: Server,
                                                      operator: Operator) -> None:
    _, key = operator.new_tenant("team")
    off = server.request({"monitor_disabled": True}, key=key, path="/v1/detector-thresholds",
                         method="PUT")
    assert off.status == 200, off.body
    runs, run = Client(key, server.url).runs, run_id()
    result = runs.steps(run, [CALL] * 6, agent_id="ari")
    assert (result.accepted, result.monitor_disabled, result.credits) == (6, True, 0)
    assert result.findings == () and result.recommendation.action == "continue"
    assert result.sequence is None and result.execution_id is None
    signal = runs.signal(run, agent_id="ari")
    assert signal.monitor_disabled and not signal.is_looping and signal.confidence == 0.0
    assert signal.recommendation.action == "continue" and signal.sequence is None


def test_runs_errors_are_typed(server: Server, operator: Operator) -> None:
    runs = client(server).runs
    with pytest.raises(RunAgentNotFoundError) as missing:
        runs.signal(run_id(), agent_id="nobody")
    assert isinstance(missing.value, NotFoundError)
    assert (missing.value.code, missing.value.status, missing.value.retryable,
            missing.value.attempts) == ("RUN_AGENT_NOT_FOUND", 404, False, 1)
    with pytest.raises(RunAgentNotFoundError):
        runs.reset(run_id(), agent_id="nobody")
    with pytest.raises(ValidationError) as batch:
        runs.steps(run_id(), [{"kind": "tool_call", "agentId": "ari"}])  # no action
    assert batch.value.code == "RUN_BATCH_INVALID"
    assert batch.value.details == [{"path": "steps.0.action", "issue": "is required for a "
                                                                       "tool_call"}]
    with pytest.raises(ValidationError) as bad_run:
        runs.signal("no/such run", agent_id="ari")  # quoted: one path segment, refused by name
    assert bad_run.value.details[0]["path"] == "runId"
    _, hobby = operator.new_tenant("hobby")
    with pytest.raises(SkillNotAvailableForPlanError):
        client(server, hobby).runs.steps(run_id(), [CALL], agent_id="ari")


def test_the_specs_python_usage(server: Server) -> None:
    client = Client(DEV_KEY, server.url)
    run_id = "sdk-run-" + uuid.uuid4().hex[:8]
    client.runs.register(run_id, agent_id="ari", role="support")
    client.runs.put_memory(run_id, "ticket", {"id": 2214, "status": "export pending"})
    client.runs.add_lesson(run_id, "the export service times out for tickets with "
                                   "attachments", tags=["export"])
    result: CircuitBreak | None = None
    briefing: Briefing | None = None
    for _ in range(10):
        client.runs.steps(run_id, [CALL], agent_id="ari")
        # -- the spec's lines, verbatim --
        signal = client.runs.signal(run_id, agent_id="ari")
        if signal.is_looping and signal.confidence >= 0.7:
            result = client.runs.circuit_break(run_id, reason="repeated_tool_call")
            briefing = client.runs.context(run_id, query="resume ticket 2214",
                                           max_token_budget=1500)
            break
    assert result is not None and briefing is not None
    assert (result.broken, result.entries, result.reason, result.agents_reset) == (
        True, 1, "repeated_tool_call", ("ari",))
    assert briefing.tokens <= 1500 and briefing.max_token_budget == 1500
    assert [i["type"] for i in briefing.items] == ["snapshot", "lesson"]
    assert "export pending" in briefing.context_block
    assert client.runs.memory(run_id) == {}
    assert client.runs.snapshot(run_id, result.snapshot_id) == {
        "ticket": {"id": 2214, "status": "export pending"}}
    assert [e["type"] for e in client.runs.events(run_id)] == ["CIRCUIT_BROKEN"]
    assert client.runs.signal(run_id, agent_id="ari").is_looping is False


def test_memory_lessons_and_restore(server: Server) -> None:
    runs, run = client(server).runs, run_id()
    for i in range(5):
        written = runs.put_memory(run, f"k{i}", {"i": i, "s": "é"})
        assert (written.run_id, written.key, written.created) == (run, f"k{i}", True)
    assert runs.put_memory(run, "k0", {"i": 0, "s": "é"}).created is False
    runs.put_memory(run, "nothing", None)  # JSON null is a value
    assert runs.get_memory(run, "nothing") is None
    assert runs.get_memory(run, "k3") == {"i": 3, "s": "é"}
    runs.delete_memory(run, "k4")
    runs.delete_memory(run, "nothing")
    with pytest.raises(NotFoundError) as caught:
        runs.get_memory(run, "k4")
    assert caught.value.code == "RUN_MEMORY_NOT_FOUND"
    before = runs.memory(run)
    assert list(before) == ["k0", "k1", "k2", "k3"]
    broken = runs.circuit_break(run, reason="test", idempotency_key="sdk-b1")
    assert runs.circuit_break(run, reason="test", idempotency_key="sdk-b1") == broken
    runs.put_memory(run, "later", True)
    restored = runs.restore(run, broken.snapshot_id)
    assert (restored.snapshot_id, restored.entries, restored.replaced_entries) == (
        broken.snapshot_id, 4, 1)
    assert runs.memory(run) == before
    assert runs.snapshot(run, restored.replaced_snapshot_id) == {"later": True}
    lessons = runs.lessons(run)
    assert [x.kind for x in lessons] == ["loop_detected", "replaced_by_restore"]
    assert [x.snapshot_id for x in lessons] == [broken.snapshot_id,
                                                restored.replaced_snapshot_id]
    assert [e["type"] for e in runs.events(run)] == ["CIRCUIT_BROKEN", "MEMORY_RESTORED"]
    with pytest.raises(NotFoundError) as missing:
        runs.snapshot(run, "0000000000000-00000000")
    assert missing.value.code == "RUN_SNAPSHOT_NOT_FOUND"


def test_lessons_added_are_answered_in_order_as_objects(server: Server) -> None:
    runs, run = client(server).runs, run_id()
    for i in range(3):
        runs.add_lesson(run, f"lesson {i}", tags=["t"])
    assert [x.text for x in runs.lessons(run)] == ["lesson 0", "lesson 1", "lesson 2"]
    assert runs.lessons(run)[0].tags == ("t",) and runs.lessons(run)[0].kind == "lesson"


def test_a_value_over_32_kib_is_a_validation_error_naming_the_limit(server: Server) -> None:
    with pytest.raises(ValidationError) as caught:
        client(server).runs.put_memory(run_id(), "k", "x" * 40_000)
    assert caught.value.details == [{"path": "value",
                                     "issue": "must be at most 32768 bytes (32 KiB) of JSON"}]


@pytest.mark.parametrize("route", ["circuit_break", "restore"])
def test_a_break_or_restore_whose_answer_was_lost_is_applied_once(server: Server,
                                                                  route: str) -> None:
    runs, run = client(server).runs, run_id()
    runs.put_memory(run, "k", 1)
    snapshot = runs.circuit_break(run, reason="first").snapshot_id
    proxy = Proxy(server.url, ["drop", "503"])  # applied, answer lost; then refused
    try:
        through = Client(DEV_KEY, proxy.url, backoff_base=0.01).runs
        answer: Any = (through.circuit_break(run, reason="again") if route == "circuit_break"
                       else through.restore(run, snapshot))
    finally:
        proxy.stop()
    keys = {k for k, _ in proxy.seen}
    assert len(proxy.seen) == 3 and len(keys) == 1 and None not in keys
    events = [e["type"] for e in runs.events(run)]
    assert events == ["CIRCUIT_BROKEN", "CIRCUIT_BROKEN" if route == "circuit_break"
                      else "MEMORY_RESTORED"]  # one each: the retries were replays
    assert answer.raw["runId"] == run
