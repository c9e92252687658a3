"""agent.semantic_loop end to end: POST /v1/execute on `loopsense serve` (team and hobby
tenants) and `loopsense execute agent.semantic_loop FILE`."""

from __future__ import annotations

import json
from pathlib import Path

from loopsense_local.cli import main
from tests.conftest import load_event
from tests.e2e.server import Server

ROOT = Path(__file__).resolve().parents[2]
SKILL = "agent.semantic_loop"
MARK = "SECRET-MARKER-d7e0"
HASH_97 = "97a932d811c4d8463c6be2fe84f1476a086c9544324d28f7f68b73c634083be6"
SPEC_OUTPUT = {
    "fired": True, "revisitThreshold": 3, "checkpoints": 7, "skipped": 2,
    "groups": [{"signature": "semantic_loop:97a932d8", "hash": HASH_97, "count": 3,
                "eventIndices": [0, 3, 6]}],
}
INPUT = load_event("semantic_loop")["input"]


def test_execute_over_http_gives_the_spec_answer_and_charges_one_credit(server: Server):
    answer = server.execute(SKILL, INPUT)
    assert answer.status == 200, answer.body
    body = answer.json()
    assert list(body) == ["executionId", "skillKey", "skillVersion", "output", "billing"]
    assert (body["skillKey"], body["skillVersion"]) == (SKILL, "1.0.0")
    assert body["output"] == SPEC_OUTPUT
    assert body["billing"] == {"credits": 1}


def test_per_call_threshold_over_http(server: Server):
    answer = server.execute(SKILL, {**INPUT, "thresholds": {"revisit_threshold": 4},
                                    "ignoreKeys": ["userId"]})
    output = answer.json()["output"]
    # without userId, "retry search" is visited 4 times: 0, 3, 5, 6
    assert output["revisitThreshold"] == 4
    assert [g["eventIndices"] for g in output["groups"]] == [[0, 3, 5, 6]]


def test_5001_events_is_429_not_retryable_without_retry_after(server: Server):
    answer = server.execute(SKILL, {"events": [{"type": "checkpoint"}] * 5001})
    assert answer.status == 429
    error = answer.json()["error"]
    assert (error["code"], error["retryable"]) == ("SEMANTIC_LOOP_EVENT_LIMIT_EXCEEDED", False)
    assert error["details"] == [{"path": "input.events",
                                 "issue": "must have at most 5000 events"}]
    assert "retry-after" not in answer.lower_headers()


def test_nan_in_the_body_is_a_validation_error(server: Server):
    body = ('{"skillKey": "agent.semantic_loop", "input": {"events": [{"type": "checkpoint", '
            '"metadata": {"' + MARK + '": NaN}}]}}').encode()
    answer = server.request(body)
    assert answer.status == 400
    assert answer.json()["error"]["code"] == "VALIDATION_ERROR"
    assert MARK not in answer.body.decode()


def test_deep_metadata_and_long_keys_are_validation_errors_naming_the_event(server: Server):
    deep: object = MARK
    for _ in range(65):
        deep = {MARK: deep}
    for metadata in (deep, {MARK * 1000: 1}):
        answer = server.execute(SKILL, {"events": [{"type": "tool_call"},
                                                   {"type": "checkpoint", "metadata": metadata}]})
        assert answer.status == 400
        error = answer.json()["error"]
        assert error["code"] == "VALIDATION_ERROR"
        assert error["details"][0]["path"] == "input.events.1.metadata"
        assert MARK not in answer.body.decode()


def test_a_hobby_tenant_can_run_it(server: Server):
    tenant = server.operator("tenants", "create", "--plan", "hobby")["tenantId"]
    key = server.operator("keys", "issue", tenant, "--skills", SKILL)["apiKey"]
    answer = server.execute(SKILL, INPUT, key=key)
    assert answer.status == 200, answer.body
    assert answer.json()["output"] == SPEC_OUTPUT


def test_no_submitted_content_in_the_server_output(server: Server):
    marked = {"events": [{"type": "checkpoint", "name": MARK,
                          "metadata": {MARK: MARK, "list": [MARK]}}] * 3}
    answer = server.execute(SKILL, marked)
    assert answer.status == 200
    assert MARK not in answer.body.decode() and MARK.lower() not in answer.body.decode()
    printed = server.printed()
    assert "loopsense: ready" in printed  # the capture is real
    assert MARK not in printed and MARK.lower() not in printed


def test_cli_execute_runs_the_sample(capsys):
    code = main(["execute", SKILL, str(ROOT / "events" / "samples" / "semantic_loop.json")])
    out, _ = capsys.readouterr()
    assert code == 0
    assert json.loads(out) == SPEC_OUTPUT


def test_cli_execute_prints_the_envelope_for_a_bad_input(capsys, tmp_path):
    path = tmp_path / "input.json"
    path.write_text(json.dumps({"events": [{"type": "checkpoint", "metadata": {MARK * 2000: 1}}]}))
    code = main(["execute", SKILL, str(path)])
    out, err = capsys.readouterr()
    assert code == 1
    envelope = json.loads(out)
    assert envelope["error"]["code"] == "VALIDATION_ERROR"
    assert envelope["error"]["details"][0] == {
        "path": "input.events.0.metadata", "issue": "contains a key longer than 1024 characters"}
    assert MARK not in out + err
