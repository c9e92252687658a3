"""functions/run_monitor/app.py, invoked the way Lambda does: with events/run_monitor.json (the
`sam local invoke` event) and a Lambda context. No payload string reaches the logs, the metrics
(EMF on stdout) or the answer, whether it succeeds or fails.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

MARKER = "ZZ-LEAK-MARKER-30be"


@pytest.fixture
def app(lambda_module):
    return lambda_module("run_monitor")


def _mark(value: Any) -> Any:
    """MARKER in every string, consistently, so equal steps stay equal."""
    if isinstance(value, str):
        return f"{MARKER}:{value}"
    if isinstance(value, list):
        return [_mark(v) for v in value]
    if isinstance(value, dict):
        return {k: (v if k in ("kind", "outcome") else _mark(v)) for k, v in value.items()}
    return value


def test_events_file_answers_a_break(app, event_file, lambda_context):
    result = app.lambda_handler(event_file("run_monitor"), lambda_context)
    output = result["output"]
    assert output["is_looping"] and output["is_stuck"]
    assert output["recommendation"]["action"] == "break"
    assert [f["rule"] for f in output["findings"]] == [
        "repeated_call", "error_streak", "stagnation", "novelty"]


def test_handler_emits_emf_metrics(app, event_file, lambda_context, capsys):
    app.lambda_handler(event_file("run_monitor"), lambda_context)
    out = capsys.readouterr().out
    blobs = [json.loads(line) for line in out.splitlines() if line.startswith('{"_aws"')]
    names = {m["Name"] for b in blobs for d in b["_aws"]["CloudWatchMetrics"]
             for m in d["Metrics"]}
    assert {"SkillDuration", "SkillSuccesses"} <= names


def test_no_steps_is_run_steps_invalid(app, event_file, lambda_context):
    event = event_file("run_monitor")
    event["input"]["steps"] = []
    result = app.lambda_handler(event, lambda_context)
    assert result == {
        "error": {
            "code": "RUN_STEPS_INVALID",
            "message": "input.steps: must have at least 1 step",
            "retryable": False,
            "next": "send 1 to 5,000 steps of one agent, each with a kind (a tool_call needs an "
                    "action), embeddings of one length",
            "details": [{"path": "input.steps", "issue": "must have at least 1 step"}],
        },
        "requestId": event["requestId"],
    }


@pytest.mark.parametrize("case", ["success", "no_action", "unknown_config", "bad_outcome",
                                  "too_many"])
def test_no_payload_string_reaches_logs_metrics_or_answer(case, app, event_file,
                                                          lambda_context, captured):
    event = event_file("run_monitor")
    steps = _mark(event["input"]["steps"])
    inputs = {
        "success": ({"steps": steps}, None),
        "no_action": ({"steps": [{"kind": "tool_call", "args": {"q": MARKER}}]},
                      "RUN_STEPS_INVALID"),
        "unknown_config": ({"steps": steps, "config": {MARKER: 1}}, "VALIDATION_ERROR"),
        "bad_outcome": ({"steps": [{**steps[2], "outcome": MARKER}]}, "VALIDATION_ERROR"),
        "too_many": ({"steps": steps * 600}, "RUN_STEP_LIMIT_EXCEEDED"),
    }
    raw, code = inputs[case]
    event["input"] = copy.deepcopy(raw)
    result = app.lambda_handler(event, lambda_context)
    seen = captured()
    if code is None:
        assert result["output"]["is_looping"]
        assert '"events":10' in seen.replace(" ", "")  # the step count, a size, is logged
    else:
        assert result["error"]["code"] == code
    assert "skill finished" in seen and '"_aws"' in seen
    assert MARKER not in seen
    assert MARKER not in json.dumps(result)
