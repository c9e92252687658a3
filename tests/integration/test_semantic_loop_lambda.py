"""functions/semantic_loop/app.py, invoked the way Lambda does: with events/semantic_loop.json
(the `sam local invoke` event) and a Lambda context. No payload string reaches the logs, the
metrics (EMF on stdout) or the answer.
"""

from __future__ import annotations

import copy
import json

import pytest

HASH_97 = "97a932d811c4d8463c6be2fe84f1476a086c9544324d28f7f68b73c634083be6"
SPEC_OUTPUT = {
    "fired": True, "revisitThreshold": 3, "checkpoints": 7, "skipped": 2,
    "groups": [{"signature": "semantic_loop:97a932d8", "hash": HASH_97, "count": 3,
                "eventIndices": [0, 3, 6]}],
}
MARKER = "ZZ-LEAK-MARKER-9b42c0"


@pytest.fixture
def app(lambda_module):
    return lambda_module("semantic_loop")




def test_events_file_gives_the_spec_answer(app, event_file, lambda_context):
    event = event_file("semantic_loop")
    assert event["requestId"]
    assert app.lambda_handler(event, lambda_context) == {"output": SPEC_OUTPUT}


def test_over_5000_events_is_the_skills_limit_error(app, event_file, lambda_context):
    event = event_file("semantic_loop")
    event["input"]["events"] = event["input"]["events"] * 600  # 5,400

    result = app.lambda_handler(event, lambda_context)

    assert result == {
        "error": {
            "code": "SEMANTIC_LOOP_EVENT_LIMIT_EXCEEDED",
            "message": "input.events: must have at most 5000 events",
            "retryable": False,
            "next": "send at most 5,000 events and 2 MiB per call (drop other event types "
                    "first)",
            "details": [{"path": "input.events", "issue": "must have at most 5000 events"}],
        },
        "requestId": event["requestId"],
    }


def _mark(value):
    """MARKER in every key and string of the metadata (trimmed first, so that the same states
    stay the same), and in the names."""
    if isinstance(value, str):
        return f"{MARKER}:{value.strip()}"
    if isinstance(value, list):
        return [_mark(v) for v in value]
    if isinstance(value, dict):
        return {f"{MARKER}:{k}": _mark(v) for k, v in value.items()}
    return value


def _mark_events(events):
    return [{**e, **{k: _mark(e[k]) for k in ("name", "metadata", "tool") if k in e}}
            for e in events]


def _deep(depth: int):
    value: object = MARKER
    for _ in range(depth):
        value = {MARKER: value}
    return value


@pytest.mark.parametrize("case", ["success", "deep", "long_key", "unknown_field", "bad_name",
                                  "infinite"])
def test_no_payload_string_reaches_logs_metrics_or_answer(case, app, event_file,
                                                          lambda_context, captured):
    event = event_file("semantic_loop")
    events = _mark_events(event["input"]["events"])
    inputs = {
        "success": ({"events": events}, None),
        "deep": ({"events": [*events, {"type": "checkpoint", "metadata": _deep(80)}]},
                 "VALIDATION_ERROR"),
        "long_key": ({"events": [{"type": "checkpoint", "metadata": {MARKER * 200: 1}}]},
                     "VALIDATION_ERROR"),
        "unknown_field": ({"events": events, MARKER: MARKER}, "VALIDATION_ERROR"),
        "bad_name": ({"events": [{"type": "checkpoint", "name": [MARKER]}]},
                     "VALIDATION_ERROR"),
        "infinite": ({"events": [{"type": "checkpoint", "metadata": {MARKER: float("inf")}}]},
                     "VALIDATION_ERROR"),
    }
    raw_input, expected = inputs[case]
    event["input"] = copy.deepcopy(raw_input)

    result = app.lambda_handler(event, lambda_context)
    seen = captured()

    if expected is None:
        assert result["output"]["fired"] is True  # marking keys and strings keeps the revisits
        assert result["output"]["groups"][0]["eventIndices"] == [0, 3, 6]
    else:
        assert result["error"]["code"] == expected
    assert "skill finished" in seen
    assert '"_aws"' in seen
    assert MARKER not in seen and MARKER.lower() not in seen
    assert MARKER not in json.dumps(result) and MARKER.lower() not in json.dumps(result)
