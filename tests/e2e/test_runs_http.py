"""The runs API over real HTTP against `loopsense serve` (routes from template.yaml, the
authorizer, the one envelope): register, steps one by one and batched, signal, reset, config,
the monitor's off switch, the plan gate, tenant isolation, retried batches, retention."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.server import Response, Server

RUN = "/v1/runs/e2e-run"
CALL = {"agentId": "ari", "kind": "tool_call", "action": "export_status", "args": {"id": 7},
        "result": {"state": "pending", "durationMs": 12}, "outcome": "neutral"}


def post(server: Server, path: str, body: Any, **kwargs: Any) -> Response:
    return server.request(body, path=path, **kwargs)


def signal(server: Server, run: str, agent: str = "ari", **kwargs: Any) -> Response:
    return server.request(b"", path=f"{run}/signal?agentId={agent}", method="GET", **kwargs)


def error(answer: Response) -> dict[str, Any]:
    body = answer.json()
    assert set(body) == {"error", "requestId"}
    found: dict[str, Any] = body["error"]
    return found


def test_register_steps_and_signal(server):
    registered = post(server, f"{RUN}/agents", {"agentId": "ari", "role": "support"})
    assert registered.status == 200, registered.body
    assert registered.json()["retention"]["days"] == 14
    for i in range(5):
        answer = post(server, f"{RUN}/steps", {**CALL, "result": {"state": "pending",
                                                                 "durationMs": i}})
        assert answer.status == 200 and answer.json()["firstIndex"] == i
    sixth = post(server, f"{RUN}/steps", CALL).json()
    assert sixth["signals"]["repeated"] is True
    assert sixth["findings"][0] == {
        "rule": "repeated_call", "severity": "critical", "count": 6,
        "rationale": "tool export_status called 6 times with identical arguments and "
                     "identical results", "stepIndices": [0, 1, 2, 3, 4, 5]}
    assert sixth["recommendation"]["action"] == "nudge"
    verdict = signal(server, RUN)
    assert verdict.status == 200
    body = verdict.json()
    assert body["monitor_disabled"] is False and body["sequence"] == 6
    assert body["signal"]["is_looping"] and body["signal"]["confidence"] >= 0.7
    assert body["retention"]["expiresAt"].endswith("Z")


def test_a_batch_answers_for_its_last_step(server):
    batch = [{**CALL, "agentId": "bob", "action": a} for a in ("a", "b") * 4]
    answer = post(server, "/v1/runs/batch/steps", {"steps": batch})
    assert answer.status == 200
    body = answer.json()
    assert (body["accepted"], body["firstIndex"], body["sequence"]) == (8, 0, 8)
    assert "cycle" in {f["rule"] for f in body["findings"]}


def test_reset_and_config(server):
    run = "/v1/runs/reset-config"
    post(server, f"{run}/steps", {"steps": [CALL] * 6})
    reset = post(server, f"{run}/reset", {"agentId": "ari"})
    assert reset.json() == {"runId": "reset-config",
                            "reset": [{"agentId": "ari", "segmentStart": 6}]}
    assert signal(server, run).json()["signal"]["findings"] == []
    config = server.request({"repeat_warn": 3, "disabled_rules": ["novelty"]},
                            path=f"{run}/config", method="PUT")
    assert config.status == 200 and config.json()["config"]["repeat_warn"] == 3
    answer = post(server, f"{run}/steps", {"steps": [CALL] * 3}).json()
    assert [f["rule"] for f in answer["findings"]] == ["repeated_call"]
    bad = server.request({"repeat_warn": 1000}, path=f"{run}/config", method="PUT")
    assert bad.status == 400
    assert error(bad)["details"] == [{"path": "config.repeat_warn",
                                      "issue": "must be from 2 to 100"}]


def test_retried_batches_are_applied_once_and_answered_byte_for_byte(server):
    run = "/v1/runs/retried"
    headers = {"Idempotency-Key": "batch-0001"}
    first = post(server, f"{run}/steps", {"steps": [CALL] * 3}, headers=headers)
    again = post(server, f"{run}/steps", {"steps": [CALL] * 3}, headers=headers)
    assert first.status == again.status == 200 and first.body == again.body
    assert signal(server, run).json()["sequence"] == 3
    other = post(server, f"{run}/steps", {"steps": [CALL] * 2}, headers=headers)
    assert other.status == 409 and error(other)["code"] == "IDEMPOTENCY_KEY_REUSED"


def test_the_hobby_plan_is_refused_in_the_envelope(server, operator):
    _, key = operator.new_tenant("hobby")
    for answer in (post(server, f"{RUN}/steps", CALL, key=key), signal(server, RUN, key=key)):
        assert answer.status == 403
        assert error(answer)["code"] == "SKILL_NOT_AVAILABLE_FOR_PLAN"


def test_another_tenant_sees_nothing_of_a_run(server, operator):
    post(server, "/v1/runs/private/steps", {"steps": [CALL] * 6})
    _, key = operator.new_tenant("team")
    answer = signal(server, "/v1/runs/private", key=key)
    assert answer.status == 404 and error(answer)["code"] == "RUN_AGENT_NOT_FOUND"
    mine = post(server, "/v1/runs/private/steps", CALL, key=key).json()
    assert mine["sequence"] == 1 and mine["findings"] == []
    assert signal(server, "/v1/runs/private").json()["sequence"] == 6


def test_the_monitor_off_switch(server, operator):
    _, key = operator.new_tenant("team")
    off = server.request({"monitor_disabled": True, "run_retention_days": 3}, key=key,
                         path="/v1/detector-thresholds", method="PUT")
    assert off.status == 200, off.body
    assert off.json()["thresholds"]["monitor_disabled"]["type"] == "boolean"
    answer = post(server, "/v1/runs/off/steps", {"steps": [CALL] * 6}, key=key)
    assert answer.json() == {"runId": "off", "agentId": "ari", "accepted": 6,
                             "monitor_disabled": True}
    assert signal(server, "/v1/runs/off", key=key).json()["signal"] is None
    server.request({"monitor_disabled": None}, key=key, path="/v1/detector-thresholds",
                   method="PUT")
    on = post(server, "/v1/runs/off/steps", CALL, key=key).json()
    assert on["sequence"] == 1 and on["retention"]["days"] == 3


@pytest.mark.parametrize(("path", "method", "body", "field"), [
    ("/v1/runs/x/steps", "POST", {"steps": [{"kind": "message"}]}, "steps.0.agentId"),
    ("/v1/runs/x/steps", "POST", {"steps": [{**CALL, "outcome": "SECRET-VALUE"}]},
     "steps.0.outcome"),
    ("/v1/runs/x/steps", "POST", b"not json", "body"),
    ("/v1/runs/x/agents", "POST", {"agentId": "ari", "objectiveEmbedding": [0.0, 0.0]},
     "objectiveEmbedding"),
    ("/v1/runs/x/config", "PUT", {"SECRET-VALUE": 1}, "config"),
    ("/v1/runs/x/signal", "GET", b"", "agentId"),
])
def test_bad_input_is_enveloped_naming_the_field(server, path, method, body, field):
    answer = server.request(body, path=path, method=method)
    assert answer.status == 400
    found = error(answer)
    assert found["details"][0]["path"] == field
    assert found["code"] == ("RUN_BATCH_INVALID" if field == "steps.0.agentId"
                             else "VALIDATION_ERROR")
    assert b"SECRET-VALUE" not in answer.body and b"not json" not in answer.body


def test_without_a_key_it_is_unauthorized(server):
    answer = post(server, f"{RUN}/steps", CALL, key=None)
    assert answer.status == 401 and error(answer)["code"] == "UNAUTHORIZED"


def test_steps_bodies_are_capped(server):
    big = json.dumps({"steps": [{**CALL, "args": {"pad": "x" * 5000}}] * 500}).encode()
    answer = post(server, "/v1/runs/big/steps", big)
    assert answer.status == 400
    assert error(answer)["details"][0]["path"] == "body"


def test_concurrent_batches_over_http_are_each_applied_once(server, operator):
    from tests.concurrency import all_at_once

    tenant, key = operator.new_tenant("enterprise")  # 500 requests/s: no rate limit here
    threads, batches, size = 8, 3, 4
    firsts: list[int] = []

    def sender(thread: int) -> None:
        for b in range(batches):
            batch = [{**CALL, "args": {"thread": thread, "batch": b, "i": i}}
                     for i in range(size)]
            headers = {"Idempotency-Key": f"t{thread}-b{b}"}
            for _ in range(20):  # a retryable conflict: send the same request again
                answer = post(server, "/v1/runs/busy/steps", {"steps": batch}, key=key,
                              headers=headers)
                if answer.status != 409:
                    break
                assert error(answer)["code"] == "RUN_WRITE_CONFLICT"
            assert answer.status == 200, answer.body
            firsts.append(answer.json()["firstIndex"])

    all_at_once([lambda t=t: sender(t) for t in range(threads)])
    total = threads * batches * size
    assert sorted(firsts) == list(range(0, total, size))
    assert signal(server, "/v1/runs/busy", key=key).json()["sequence"] == total
    assert operator.usage(tenant)["used"] == threads * batches


READ = {"kind": "tool_call", "action": "read_file", "args": {"path": "SECRET-PATH-77/a.md"},
        "result": {"text": "SECRET-TEXT-77"}, "outcome": "positive"}


def test_the_same_call_across_agents_of_a_run_is_flagged(server):
    """A manager and two sub-agents each read the same file once: run_repeated_call on the
    third, in the POST answer, GET signal and GET /v1/runs/{runId}; never quoting content."""
    run = "/v1/runs/e2e-across"
    for agent in ("manager", "sub-1"):
        first = post(server, f"{run}/steps", {**READ, "agentId": agent}).json()
        assert first["findings"] == [] and first["recommendation"]["action"] == "continue"
    third = post(server, f"{run}/steps", {**READ, "agentId": "sub-2"})
    assert third.status == 200, third.body
    found = third.json()["findings"]
    assert found == [{"rule": "run_repeated_call", "severity": "warning", "count": 3,
                      "rationale": "tool read_file called 3 times with identical arguments "
                                   "by 3 agents of this run", "stepIndices": [0]}]
    assert third.json()["recommendation"]["action"] == "nudge"
    assert "SECRET" not in third.body.decode()
    verdict = signal(server, run, "sub-2").json()["signal"]
    assert verdict["ever_flagged"] == {"run_repeated_call": {"step": 0, "severity": "warning"}}
    assert [f["rule"] for f in verdict["findings"]] == ["run_repeated_call"]
    detail = server.request(b"", path=run, method="GET").json()
    by_agent = {a["agentId"]: a["signal"] for a in detail["agents"]}
    assert by_agent["sub-2"] == verdict  # and the others' (their latest call is that one)
    assert [f["rule"] for f in by_agent["manager"]["findings"]] == ["run_repeated_call"]
    # Another result is progress (the count starts again); a reset of every agent forgets.
    changed = post(server, f"{run}/steps", {**READ, "agentId": "manager",
                                            "result": {"text": "new"}}).json()
    assert changed["findings"] == []
    assert post(server, f"{run}/reset", {}).status == 200
    again = post(server, f"{run}/steps", {**READ, "agentId": "sub-1"}).json()
    assert again["findings"] == []


def test_run_repeated_call_threshold_per_tool_and_switch(server):
    run = "/v1/runs/e2e-across-config"
    put = server.request({"run_repeat_warn": 2, "tools": {"poll_me": {"poll": True}}},
                         path=f"{run}/config", method="PUT")
    assert put.status == 200, put.body
    post(server, f"{run}/steps", {**READ, "agentId": "a"})
    second = post(server, f"{run}/steps", {**READ, "agentId": "b"}).json()
    assert [f["rule"] for f in second["findings"]] == ["run_repeated_call"]
    for agent in ("a", "b", "c"):  # a polling tool is never counted
        polled = post(server, f"{run}/steps", {**READ, "action": "poll_me",
                                               "agentId": agent}).json()
        assert polled["findings"] == []
    bad = server.request({"run_repeat_warn": 1}, path=f"{run}/config", method="PUT")
    assert bad.status == 400 and "run_repeat_warn" in error(bad)["message"]
    off = "/v1/runs/e2e-across-off"
    server.request({"disabled_rules": ["run_repeated_call"]}, path=f"{off}/config",
                   method="PUT")
    for agent in ("a", "b", "c", "d"):
        assert post(server, f"{off}/steps", {**READ, "agentId": agent}).json()["findings"] == []

