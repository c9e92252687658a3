"""``client.runs`` against a real `loopsense serve` (docs/runs.md): register, steps (one by one,
batched, retried through a proxy that loses the answer: applied and charged once), signal as
attributes, reset, config, the monitor's off switch, and each runs error as its typed class."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from loopsense_sdk import (
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
