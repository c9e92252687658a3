"""Telemetry ingestion, failure groups, severity routing and retention over HTTP against a real
`loopsense serve` (spec/failure_groups.md). Each test uses its own tenant."""

from __future__ import annotations

import threading
import urllib.parse
from typing import Any

import pytest

from loopsense.core.signatures import hash8
from tests.concurrency import all_at_once
from tests.e2e.server import Operator, Response, Server

MARK = "SECRET-CONTENT-7c1e"

LOOP = [{"type": "llm_call", "model": "gpt-x", "user_message": "find a hotel in Paris"},
        {"type": "tool_call", "name": "search"},
        {"type": "checkpoint", "name": "plan", "metadata": {"City": " Paris ", "step": 2}}]
IDENTICAL = f"loops/identical_call_{hash8('gpt-x', 'find a hotel in Paris')}"


def _send(server: Server, key: str, execution: str, body: Any,
          headers: dict[str, str] | None = None) -> Response:
    return server.request(body, key=key, headers=headers,
                          path=f"/v1/executions/{execution}/events")


def _end(server: Server, key: str, execution: str, body: Any = None) -> Response:
    return server.request(body if body is not None else {}, key=key,
                          path=f"/v1/executions/{execution}/end")


def _groups(server: Server, key: str, query: str = "") -> dict[str, Any]:
    answer = server.request(b"", key=key, method="GET", path=f"/v1/failure-groups{query}")
    assert answer.status == 200, answer.body
    body: dict[str, Any] = answer.json()
    return body


def _group(server: Server, key: str, signature: str) -> Response:
    segment = urllib.parse.quote(signature, safe="")
    return server.request(b"", key=key, method="GET", path=f"/v1/failure-groups/{segment}")


@pytest.fixture
def tenant(operator: Operator) -> str:
    return operator.new_tenant("team")[1]


def test_eight_concurrent_writers_with_retries_count_the_execution_once(server, tenant):
    events = LOOP * 20  # 60 events: identical_call, semantic_loop, step_count 10+ and 50+
    batches = [events[i:i + 5] for i in range(0, len(events), 5)]
    lock = threading.Lock()
    answers: list[Response] = []

    def writer(number: int) -> None:
        for index in range(number, len(batches), 8):  # 8 writers share the batches
            for _ in range(3 if index % 4 == 0 else 1):  # some batches retried twice
                answer = _send(server, tenant, "loop-1", {"events": batches[index]},
                               {"Idempotency-Key": f"b-{index}"})
                with lock:
                    answers.append(answer)

    all_at_once([lambda n=n: writer(n) for n in range(8)])  # type: ignore[misc]
    assert all(a.status == 200 for a in answers), [a.body for a in answers if a.status != 200]
    fired = [s for a in answers for s in a.json()["fired"]]
    assert sorted(fired) == sorted(set(fired))  # each signature recorded by one request only
    assert sum(a.json()["duplicate"] for a in answers) == 2 * len(range(0, len(batches), 4))
    ended = _end(server, tenant, "loop-1")
    assert ended.status == 200
    items = {g["signature"]: g for g in _groups(server, tenant)["items"]}
    assert set(items) == set(fired) | set(ended.json()["fired"])
    assert {IDENTICAL, "loops/step_count_10+", "loops/step_count_50+"} <= set(items)
    assert any(s.startswith("tool_calls/repeated_call_") for s in ended.json()["fired"])
    assert all(g["executions"] == 1 for g in items.values())


def test_one_loop_in_five_executions_is_one_group_of_five(server, tenant, operator):
    for n in range(5):
        assert _send(server, tenant, f"run-{n}", {"events": LOOP * 4}).status == 200
        assert _end(server, tenant, f"run-{n}", {"durationMs": 1_000}).status == 200
    other = [{"type": "llm_call", "model": "gpt-x", "user_message": "book it"}] * 3
    assert _send(server, tenant, "run-other", {"events": other}).status == 200
    items = {g["signature"]: g for g in _groups(server, tenant)["items"]}
    assert items[IDENTICAL]["executions"] == 5
    assert items["loops/step_count_10+"]["executions"] == 5
    assert items[f"loops/identical_call_{hash8('gpt-x', 'book it')}"]["executions"] == 1
    semantic = [g for g in items.values() if g["class"] == "semantic_loop"]
    assert len(semantic) == 1 and semantic[0]["executions"] == 5
    assert semantic[0]["playbook"] == "semantic_loop" and semantic[0]["severity"] == "warning"
    # Newest lastSeen first.
    seen = [g["lastSeen"] for g in _groups(server, tenant)["items"]]
    assert seen == sorted(seen, reverse=True)

    detail = _group(server, tenant, semantic[0]["signature"])
    assert detail.status == 200, detail.body
    body = detail.json()
    assert body["group"] == semantic[0]
    assert body["canonicalState"] == '{"city":"paris","step":2}'
    assert body["playbook"]["name"] == "semantic_loop"
    assert "visited-set" in body["playbook"]["markdown"]
    assert sorted(e["executionId"] for e in body["executions"]) == [f"run-{n}" for n in range(5)]

    # Another tenant, same execution ids and the same loop: its own groups only.
    _, stranger = operator.new_tenant("team")
    assert _groups(server, stranger)["items"] == []
    assert _group(server, stranger, IDENTICAL).status == 404
    assert _send(server, stranger, "run-0", {"events": LOOP * 4}).status == 200
    assert {g["executions"] for g in _groups(server, stranger)["items"]} == {1}
    assert {g["signature"]: g for g in _groups(server, tenant)["items"]}[IDENTICAL][
        "executions"] == 5


def test_listing_pages_and_filters(server, tenant):
    for n in range(4):
        calls = [{"type": "llm_call", "model": "m", "user_message": f"question {n}"}] * 3
        assert _send(server, tenant, f"p-{n}", {"events": calls}).status == 200
    checkpoint = [{"type": "checkpoint", "metadata": {"s": 1}}] * 3
    assert _send(server, tenant, "p-s", {"events": checkpoint}).status == 200
    seen: list[str] = []
    cursor = None
    while True:
        query = "?limit=2" + (f"&cursor={cursor}" if cursor else "")
        page = _groups(server, tenant, query)
        assert len(page["items"]) <= 2
        seen += [g["signature"] for g in page["items"]]
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert len(seen) == len(set(seen)) == 5
    assert [g["class"] for g in _groups(server, tenant, "?class=semantic_loop")["items"]] == [
        "semantic_loop"]
    assert len(_groups(server, tenant, "?class=loops&severity=warning")["items"]) == 4
    assert _groups(server, tenant, "?severity=critical")["items"] == []
    for bad in ("?limit=0", "?limit=101", "?class=nope", "?severity=loud", "?cursor=%25%25"):
        answer = server.request(b"", key=tenant, method="GET", path=f"/v1/failure-groups{bad}")
        assert answer.status == 400, bad
        assert answer.json()["error"]["code"] == "VALIDATION_ERROR"


def test_routing_changes_the_severity_shown_never_the_counts(server, tenant):
    for n in range(3):
        assert _send(server, tenant, f"r-{n}", {"events": LOOP * 4}).status == 200
    before = {g["signature"]: g for g in _groups(server, tenant)["items"]}
    routed = server.request({"loops": "info"}, key=tenant, method="PUT",
                            path="/v1/severity-routing")
    assert routed.status == 200 and routed.json() == {"loops": "info", "semantic_loop": "warning",
                                                       "tool_calls": "warning"}
    after = {g["signature"]: g for g in _groups(server, tenant)["items"]}
    assert set(after) == set(before)
    for signature, group in after.items():
        expected = "info" if group["class"] == "loops" else "warning"
        assert group["severity"] == expected
        assert {**group, "severity": None} == {**before[signature], "severity": None}
    assert len(_groups(server, tenant, "?severity=info")["items"]) == len(
        [g for g in after.values() if g["class"] == "loops"])
    # All or nothing; errors name the field, never echo the value.
    bad = server.request({"loops": "critical", "semantic_loop": MARK}, key=tenant, method="PUT",
                         path="/v1/severity-routing")
    assert bad.status == 400 and MARK not in bad.body.decode()
    assert bad.json()["error"]["details"][0]["path"] == "semantic_loop"
    current = server.request(b"", key=tenant, method="GET", path="/v1/severity-routing")
    assert current.json() == {"loops": "info", "semantic_loop": "warning",
                              "tool_calls": "warning"}


def test_retention_is_shown_and_set_per_tenant(server, tenant, operator):
    get = server.request(b"", key=tenant, method="GET", path="/v1/telemetry-settings")
    assert get.json() == {"telemetry_retention_days": 14, "group_retention_days": 90}
    put = server.request({"telemetry_retention_days": 3}, key=tenant, method="PUT",
                         path="/v1/telemetry-settings")
    assert put.json() == {"telemetry_retention_days": 3, "group_retention_days": 90}
    for body in ({"telemetry_retention_days": 366}, {"group_retention_days": 0},
                 {"group_retention_days": "90"}, {MARK: 1}, [1]):
        answer = server.request(body, key=tenant, method="PUT", path="/v1/telemetry-settings")
        assert answer.status == 400 and MARK not in answer.body.decode()
    _, other = operator.new_tenant("team")
    assert server.request(b"", key=other, method="GET", path="/v1/telemetry-settings").json()[
        "telemetry_retention_days"] == 14


@pytest.mark.parametrize(("body", "status", "code", "path"), [
    ({"events": [{"type": 3}]}, 400, "EXECUTION_EVENTS_INVALID", "events.0.type"),
    ({"events": [{"type": "llm_call", "model": 1, "user_message": MARK}]}, 400,
     "EXECUTION_EVENTS_INVALID", "events.0.model"),
    ({"events": [{"type": "x", "timestamp": MARK}]}, 400, "EXECUTION_EVENTS_INVALID",
     "events.0.timestamp"),
    (b'{"events": [{"type": "checkpoint", "metadata": {"v": 1e999}}]}', 400,
     "EXECUTION_EVENTS_INVALID", "body"),  # refused as parsed (jsonio: finite numbers only)
    (b'{"events": [', 400, "EXECUTION_EVENTS_INVALID", "body"),
    ({"events": []}, 400, "EXECUTION_EVENTS_INVALID", "events"),
    ({"events": [{"type": "x"}], MARK: 1}, 400, "EXECUTION_EVENTS_INVALID", "body"),
    ({"events": [{"type": "x"}] * 501}, 429, "EXECUTION_EVENT_LIMIT_EXCEEDED", "events"),
    ({"events": [{"type": "x"}], "seq": 5}, 409, "EXECUTION_BATCH_OUT_OF_ORDER", None),
])
def test_bad_batches_are_refused_whole_and_change_nothing(server, tenant, body, status, code,
                                                          path):
    good = [{"type": "llm_call", "model": "m", "user_message": "same"}] * 2
    assert _send(server, tenant, "bad-1", {"events": good}).status == 200
    answer = _send(server, tenant, "bad-1", body)
    assert answer.status == status, answer.body
    error = answer.json()["error"]
    assert error["code"] == code
    if path is not None:
        assert error["details"][0]["path"] == path
    assert MARK not in answer.body.decode()
    # Nothing of it applied: one more identical call now fires (2 + 1 = 3), as if it never came.
    after = _send(server, tenant, "bad-1", {"events": good[:1]})
    assert after.json()["seq"] == 1
    assert after.json()["fired"] == [f"loops/identical_call_{hash8('m', 'same')}"]


def test_a_finished_execution_takes_no_more_events(server, tenant):
    assert _send(server, tenant, "done-1", {"events": LOOP}).status == 200
    assert _end(server, tenant, "done-1", {"durationMs": 5}).status == 200
    again = _end(server, tenant, "done-1")
    assert again.status == 200 and again.json()["alreadyEnded"] is True
    late = _send(server, tenant, "done-1", {"events": LOOP * 4})
    assert late.status == 409
    assert late.json()["error"]["code"] == "EXECUTION_ENDED"
    assert late.json()["error"]["retryable"] is False
    assert _groups(server, tenant)["items"] == []
    assert _end(server, tenant, "never-sent").status == 404
    bad_id = _send(server, tenant, "a" * 129, {"events": LOOP})
    assert bad_id.status == 400 and bad_id.json()["error"]["details"][0]["path"] == "executionId"


def test_an_idempotency_key_reused_for_another_batch_is_refused(server, tenant):
    first = _send(server, tenant, "k-1", {"events": LOOP}, {"Idempotency-Key": "one"})
    assert first.status == 200
    other = _send(server, tenant, "k-1", {"events": LOOP * 2}, {"Idempotency-Key": "one"})
    assert other.status == 409 and other.json()["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"


def test_telemetry_routes_need_a_key(server):
    for method, path in (("POST", "/v1/executions/e/events"), ("GET", "/v1/failure-groups"),
                         ("PUT", "/v1/severity-routing")):
        answer = server.request({"events": LOOP}, key=None, method=method, path=path)
        assert answer.status == 401 and answer.json()["error"]["code"] == "UNAUTHORIZED"
