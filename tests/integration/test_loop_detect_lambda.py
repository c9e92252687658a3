"""functions/loop_detect/app.py, invoked the way Lambda does: with events/loop_detect.json (the
`sam local invoke` event) and a Lambda context. Also: no payload string ever reaches the logs,
the metrics (EMF on stdout) or the error envelope.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

# spec/loop_detect.md, "Examples": the search/click cycle repeated three times.
SPEC_OUTPUT = {
    "loopDetected": True,
    "similarity": "EXACT",
    "window": 20,
    "repeatThreshold": 3,
    "cycleLength": 2,
    "confidence": "MEDIUM",
    "eventIndices": [0, 1, 2, 3, 4, 5],
    "spans": [{"start": 0, "end": 5, "cycleLength": 2, "repeats": 3}],
}

MARKER = "ZZ-LEAK-MARKER-7f3a91"


@pytest.fixture
def app(lambda_module):
    return lambda_module("loop_detect")




def _emf_lines(stdout: str) -> list[dict[str, Any]]:
    blobs = []
    for line in stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            blob = json.loads(line)
            if "_aws" in blob:
                blobs.append(blob)
    return blobs


def _mark(value: Any) -> Any:
    """Every string (values and keys' values) gets MARKER, consistently, so equality between
    events, and therefore the answer, is unchanged."""
    if isinstance(value, str):
        return f"{MARKER}:{value}"
    if isinstance(value, list):
        return [_mark(v) for v in value]
    if isinstance(value, dict):
        return {k: _mark(v) for k, v in value.items()}
    return value


def test_events_file_gives_the_spec_answer(app, event_file, lambda_context):
    event = event_file("loop_detect")
    assert len(event["input"]["events"]) == 6
    assert all(
        {"action", "target", "stateFingerprint", "outcome"} <= e.keys()
        for e in event["input"]["events"]
    )

    result = app.lambda_handler(event, lambda_context)

    assert result == {"output": SPEC_OUTPUT}


def test_handler_emits_emf_metrics_on_stdout(app, event_file, lambda_context, capsys):
    app.lambda_handler(event_file("loop_detect"), lambda_context)

    blobs = _emf_lines(capsys.readouterr().out)
    assert blobs, "the metrics decorator should flush one EMF document to stdout"
    names = {m["Name"] for b in blobs for d in b["_aws"]["CloudWatchMetrics"] for m in d["Metrics"]}
    assert {"SkillDuration", "SkillSuccesses"} <= names
    assert {d["Namespace"] for b in blobs for d in b["_aws"]["CloudWatchMetrics"]} == {"Loopsense"}


def test_one_event_is_loop_events_invalid(app, event_file, lambda_context):
    event = event_file("loop_detect")
    event["input"]["events"] = event["input"]["events"][:1]

    result = app.lambda_handler(event, lambda_context)

    assert result == {
        "error": {
            "code": "LOOP_EVENTS_INVALID",
            "message": "input.events: must have at least 2 events",
            "retryable": False,
            "next": "send two or more events",
            "details": [{"path": "input.events", "issue": "must have at least 2 events"}],
        },
        "requestId": event["requestId"],
    }


def test_request_id_falls_back_to_the_lambda_context(app, event_file, lambda_context):
    event = event_file("loop_detect")
    del event["requestId"]
    event["input"]["events"] = event["input"]["events"][:1]

    result = app.lambda_handler(event, lambda_context)

    assert result["error"]["code"] == "LOOP_EVENTS_INVALID"
    assert result["requestId"] == lambda_context.aws_request_id


def _marked_inputs(base: dict[str, Any]) -> dict[str, tuple[dict[str, Any], str | None]]:
    """name -> (input with MARKER in it, expected error code or None for success)."""
    events = _mark(base["events"])
    return {
        "success": ({"events": events}, None),
        "one_event": ({"events": events[:1]}, "LOOP_EVENTS_INVALID"),
        "bad_similarity": ({"events": events, "similarity": MARKER}, "LOOP_EVENTS_INVALID"),
        "unknown_key": (
            {"events": [{**events[0], MARKER: MARKER}, *events[1:]]},
            "VALIDATION_ERROR",
        ),
        "wrong_type": (
            {"events": events, "window": f"{MARKER}20"},
            "VALIDATION_ERROR",
        ),
    }


@pytest.mark.parametrize(
    "case", ["success", "one_event", "bad_similarity", "unknown_key", "wrong_type"]
)
def test_no_payload_string_reaches_logs_metrics_or_answer(
    case, app, event_file, lambda_context, captured
):
    event = event_file("loop_detect")
    raw_input, expected_code = _marked_inputs(event["input"])[case]
    event["input"] = copy.deepcopy(raw_input)

    result = app.lambda_handler(event, lambda_context)
    seen = captured()

    if expected_code is None:
        assert result == {"output": SPEC_OUTPUT}
    else:
        assert result["error"]["code"] == expected_code
    # The capture is real: the handler's own log line and its EMF document are in it.
    assert "skill finished" in seen
    assert '"_aws"' in seen
    assert MARKER not in seen
    assert MARKER not in json.dumps(result)
