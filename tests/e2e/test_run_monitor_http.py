"""agent.run_monitor end to end: POST /v1/execute on `loopsense serve` (team plan dev tenant;
a hobby tenant is refused), its error codes over HTTP, and `loopsense execute` of the sample."""

from __future__ import annotations

import json
from pathlib import Path

from loopsense_local.cli import main
from tests.e2e.server import Server

ROOT = Path(__file__).resolve().parents[2]
SKILL = "agent.run_monitor"
MARK = "SECRET-MARKER-c61d"
SAMPLE = json.loads((ROOT / "events" / "samples" / "run_monitor.json").read_text("utf-8"))
SIX = [{"kind": "tool_call", "action": MARK, "args": {"q": MARK},
        "result": {"r": MARK, "durationMs": 3}}] * 6


def test_six_identical_calls_over_http(server: Server):
    answer = server.execute(SKILL, {"steps": SIX})
    assert answer.status == 200, answer.body
    body = answer.json()
    assert (body["skillKey"], body["skillVersion"], body["billing"]) == (
        SKILL, "1.0.0", {"credits": 1})
    output = body["output"]
    assert output["is_looping"] and output["confidence"] >= 0.7
    assert output["recommendation"]["action"] == "nudge"
    assert MARK not in answer.body.decode()


def test_more_than_5000_steps_is_429_not_retryable(server: Server):
    answer = server.execute(SKILL, {"steps": [{"kind": "message"}] * 5_001})
    assert answer.status == 429
    error = answer.json()["error"]
    assert (error["code"], error["retryable"]) == ("RUN_STEP_LIMIT_EXCEEDED", False)
    assert "retry-after" not in answer.lower_headers()


def test_bad_steps_and_config_over_http(server: Server):
    answer = server.execute(SKILL, {"steps": [{"kind": "tool_call", "args": MARK}]})
    assert answer.status == 400
    assert answer.json()["error"]["code"] == "RUN_STEPS_INVALID"
    answer = server.execute(SKILL, {"steps": SIX, "config": {"cycle_repeats": 99, MARK: 1}})
    assert answer.status == 400
    error = answer.json()["error"]
    assert error["code"] == "VALIDATION_ERROR" and error["details"][0]["path"] == "input.config"
    answer = server.execute(SKILL, {"steps": SIX, "config": {"cycle_repeats": 99}})
    assert answer.json()["error"]["details"] == [
        {"path": "input.config.cycle_repeats", "issue": "must be from 2 to 20"}]
    assert MARK not in answer.body.decode()


def test_tenant_thresholds_apply(server: Server):
    put = server.request(json.dumps({"repeat_critical": 8}).encode(), method="PUT",
                         path="/v1/detector-thresholds")
    assert put.status == 200, put.body
    try:
        output = server.execute(SKILL, {"steps": SIX}).json()["output"]
        assert output["findings"][0]["severity"] == "warning"
    finally:
        server.request(json.dumps({"repeat_critical": None}).encode(), method="PUT",
                       path="/v1/detector-thresholds")


def test_a_hobby_tenant_is_refused(server: Server):
    tenant = server.operator("tenants", "create", "--plan", "hobby")["tenantId"]
    key = server.operator("keys", "issue", tenant)["apiKey"]
    answer = server.execute(SKILL, {"steps": SIX}, key=key)
    assert answer.status == 403
    assert answer.json()["error"]["code"] == "SKILL_NOT_AVAILABLE_FOR_PLAN"


def test_cli_executes_the_sample(capsys):
    code = main(["execute", SKILL, str(ROOT / "events" / "samples" / "run_monitor.json")])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["is_stuck"]
