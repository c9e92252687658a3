"""functions/loops/app.py and functions/playbooks/app.py, invoked the way Lambda does: with
events/loops.json and events/playbooks.json (the `sam local invoke` events) and a Lambda
context. No payload string reaches the logs, the metrics (EMF on stdout) or the answer.
"""

from __future__ import annotations

import copy
import json
import math

import pytest

from loopsense.playbooks import NAMES, markdown

MARKER = "ZZ-LEAK-MARKER-4d17e2"


@pytest.fixture
def app(lambda_module):
    return lambda_module("loops")


@pytest.fixture
def playbooks_app(lambda_module):
    return lambda_module("playbooks")




def test_events_file_fires_all_four(app, event_file, lambda_context):
    event = event_file("loops")
    assert event["requestId"]
    output = app.lambda_handler(event, lambda_context)["output"]
    assert [f["signature"] for f in output["findings"]] == [
        "loops/step_count_10+", "loops/identical_call_50a8ebc1", "loops/similar_call_602001a9",
        "loops/time_budget_60s+"]
    assert output["stats"]["durationMs"] == 81_500


def test_over_10000_events_is_the_skills_limit_error(app, event_file, lambda_context):
    event = event_file("loops")
    event["input"]["events"] = event["input"]["events"] * 715  # 10,010
    assert app.lambda_handler(event, lambda_context) == {
        "error": {
            "code": "LOOPS_EVENT_LIMIT_EXCEEDED",
            "message": "input.events: must have at most 10000 events",
            "retryable": False,
            "next": "send at most 10,000 events and 5 MiB per call (split the execution)",
            "details": [{"path": "input.events", "issue": "must have at most 10000 events"}],
        },
        "requestId": event["requestId"],
    }


def _marked_events(events):
    out = []
    for e in events:
        e = dict(e)
        for key in ("user_message", "model", "name", "outcome"):
            if isinstance(e.get(key), str):
                e[key] = f"{MARKER}:{e[key]}"
        out.append(e)
    return out


@pytest.mark.parametrize("case", ["success", "bad_timestamp", "nan", "unknown_field",
                                  "bad_model", "too_big"])
def test_no_payload_string_reaches_logs_metrics_or_answer(case, app, event_file,
                                                          lambda_context, captured):
    event = event_file("loops")
    events = _marked_events(event["input"]["events"])
    inputs = {
        "success": ({"events": events}, None),
        "bad_timestamp": ({"events": [*events, {"type": "x", "timestamp": MARKER}]},
                          "VALIDATION_ERROR"),
        "nan": ({"events": [{"type": "llm_call", "model": MARKER, "user_message": MARKER,
                             "embedding": [math.nan]}]}, "VALIDATION_ERROR"),
        "unknown_field": ({"events": events, MARKER: MARKER}, "VALIDATION_ERROR"),
        "bad_model": ({"events": [{"type": "llm_call", "model": [MARKER]}]}, "VALIDATION_ERROR"),
        "too_big": ({"events": [{"type": "llm_call", "model": "m",
                                 "user_message": MARKER * 300_000}]},
                    "LOOPS_EVENT_LIMIT_EXCEEDED"),
    }
    raw_input, expected = inputs[case]
    event["input"] = copy.deepcopy(raw_input)

    result = app.lambda_handler(event, lambda_context)
    seen = captured()

    if expected is None:
        assert len(result["output"]["findings"]) == 4
    else:
        assert result["error"]["code"] == expected
    assert "skill finished" in seen
    assert '"_aws"' in seen
    assert MARKER not in seen and MARKER.lower() not in seen
    assert MARKER not in json.dumps(result)


# ---- GET /v1/playbooks/{name} -----------------------------------------------------------------


def _playbook_event(event_file, name, authorizer=None):
    event = event_file("playbooks")
    event["pathParameters"] = {"name": name}
    event["rawPath"] = event["requestContext"]["http"]["path"] = f"/v1/playbooks/{name}"
    if authorizer is not None:
        event["requestContext"]["authorizer"] = {"lambda": authorizer}
    return event


def test_playbooks_event_file_answers_the_playbook(playbooks_app, event_file, lambda_context):
    result = playbooks_app.lambda_handler(event_file("playbooks"), lambda_context)
    assert result["statusCode"] == 200
    assert result["headers"]["Content-Type"] == "application/json"
    body = json.loads(result["body"])
    assert body == {"name": "similar_call", "title": body["title"],
                    "markdown": markdown("similar_call")}
    assert body["title"].startswith("Playbook: `loops/similar_call_")


@pytest.mark.parametrize("name", NAMES)
def test_every_playbook_is_served(name, playbooks_app, event_file, lambda_context):
    result = playbooks_app.lambda_handler(_playbook_event(event_file, name), lambda_context)
    assert result["statusCode"] == 200
    assert json.loads(result["body"])["markdown"] == markdown(name)


@pytest.mark.parametrize("name", ["nope", "..%2F..%2Fetc%2Fpasswd", "STEP_COUNT",
                                  "step_count.md", "__init__", MARKER])
def test_an_unknown_playbook_is_404_without_echo(name, playbooks_app, event_file,
                                                 lambda_context, captured):
    result = playbooks_app.lambda_handler(_playbook_event(event_file, name), lambda_context)
    body = json.loads(result["body"])
    assert result["statusCode"] == 404
    assert body["error"]["code"] == "PLAYBOOK_NOT_FOUND"
    assert set(body) == {"error", "requestId"}
    assert MARKER not in result["body"] and MARKER not in captured()


def test_without_a_key_it_is_401(playbooks_app, event_file, lambda_context):
    no_key = {"authError": "UNAUTHORIZED", "authReason": "missing Authorization header"}
    result = playbooks_app.lambda_handler(
        _playbook_event(event_file, "step_count", no_key), lambda_context)
    assert result["statusCode"] == 401
    assert json.loads(result["body"])["error"]["code"] == "UNAUTHORIZED"
