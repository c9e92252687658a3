"""Recover, don't kill, over real HTTP against `loopsense serve` (docs/recover.md): the spec's
walkthrough (register, steps until the signal says looping with confidence >= 0.7, circuit
break, briefing) as the README shows it; working memory, lessons, events; a break under 8
concurrent writers; concurrent breaks; retried breaks; restore byte for byte; the 32 KiB
limit; tenant isolation of every route; run data never in the server's output."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.concurrency import all_at_once
from tests.e2e.server import DEV_KEY, Response, Server, start_server

CALL = {"agentId": "ari", "kind": "tool_call", "action": "export_status", "args": {"job": 42},
        "result": {"state": "pending"}, "outcome": "neutral"}


def req(server: Server, method: str, path: str, body: Any = b"", key: str | None = DEV_KEY,
        headers: dict[str, str] | None = None) -> Response:
    """One request, sent again after Retry-After while the team plan's 50 requests per second
    are used up (as a careful client does)."""
    for _ in range(10):
        answer = server.request(body, key=key, path=path, method=method, headers=headers)
        if answer.status != 429:
            return answer
        time.sleep(float(answer.headers.get("Retry-After", "1")))
    return answer


def ok(answer: Response) -> dict[str, Any]:
    assert answer.status == 200, answer.body
    body: dict[str, Any] = answer.json()
    return body


def error(answer: Response) -> dict[str, Any]:
    body = answer.json()
    assert set(body) == {"error", "requestId"}
    found: dict[str, Any] = body["error"]
    return found


def entries_bytes(answer: Response) -> bytes:
    """The raw bytes of the ``entries`` object of a memory or snapshot page."""
    return answer.body.split(b'"entries": ', 1)[1].rsplit(b', "next": ', 1)[0]


def all_entries(server: Server, path: str, key: str = DEV_KEY) -> dict[str, Any]:
    entries: dict[str, Any] = {}
    query = "?limit=1000"
    while True:
        page = ok(req(server, "GET", path + query, key=key))
        entries.update(page["entries"])
        if page["next"] is None:
            return entries
        query = f"?limit=1000&after={page['next']}"


# ---- the walkthrough (README, "Recover, don't kill") --------------------------------------------


def test_the_walkthrough(server):
    run = "/v1/runs/run-2214"
    ok(req(server, "POST", f"{run}/agents", {"agentId": "ari", "role": "support"}))
    ok(req(server, "PUT", f"{run}/memory/ticket", {"id": 2214, "status": "export pending"}))
    ok(req(server, "PUT", f"{run}/memory/attempts", 6))
    ok(req(server, "POST", f"{run}/lessons",
           {"text": "the export service times out for tickets with attachments",
            "tags": ["export"]}))
    sent = 0
    while True:  # steps until the signal says looping with confidence >= 0.7
        ok(req(server, "POST", f"{run}/steps", CALL))
        sent += 1
        signal = ok(req(server, "GET", f"{run}/signal?agentId=ari"))["signal"]
        if signal["is_looping"] and signal["confidence"] >= 0.7:
            break
        assert sent < 20
    assert sent == 6
    broken = ok(req(server, "POST", f"{run}/circuit-break", {"reason": "repeated_tool_call"}))
    assert broken["broken"] is True
    assert broken["summary"] == {"entries": 2, "reason": "repeated_tool_call"}
    assert ok(req(server, "GET", f"{run}/memory"))["entries"] == {}
    assert ok(req(server, "GET", f"{run}/signal?agentId=ari"))["signal"]["findings"] == []
    briefing = ok(req(server, "POST", f"{run}/context",
                      {"query": "resume ticket 2214", "max_token_budget": 1500}))
    assert [i["type"] for i in briefing["items"]] == ["snapshot", "lesson"]
    assert briefing["items"][0]["id"] == broken["snapshotId"]
    assert '"status": "export pending"' in briefing["context_block"]
    assert briefing["tokens"] <= 1500
    events = ok(req(server, "GET", f"{run}/events"))["events"]
    assert [(e["seq"], e["type"], e["snapshotId"]) for e in events] == [
        (1, "CIRCUIT_BROKEN", broken["snapshotId"])]


# ---- working memory, lessons, events -------------------------------------------------------------


def test_memory_routes(server):
    run = "/v1/runs/mem"
    assert ok(req(server, "PUT", f"{run}/memory/a.b:c-d_e", {"x": [1, 2.5, None]}))["created"]
    assert ok(req(server, "GET", f"{run}/memory/a.b:c-d_e"))["value"] == {"x": [1, 2.5, None]}
    listed = ok(req(server, "GET", f"{run}/memory"))
    assert (listed["count"], listed["entries"]) == (1, {"a.b:c-d_e": {"x": [1, 2.5, None]}})
    assert ok(req(server, "DELETE", f"{run}/memory/a.b:c-d_e"))["deleted"] is True
    missing = req(server, "GET", f"{run}/memory/a.b:c-d_e")
    assert missing.status == 404 and error(missing)["code"] == "RUN_MEMORY_NOT_FOUND"


def test_values_over_32_kib_are_refused_with_the_limit_named(server):
    value = json.dumps("v" * 40_000).encode()
    answer = req(server, "PUT", "/v1/runs/big/memory/k", value)
    assert answer.status == 400
    found = error(answer)
    assert found["details"] == [{"path": "value",
                                 "issue": "must be at most 32768 bytes (32 KiB) of JSON"}]
    assert b"vvvv" not in answer.body


@pytest.mark.parametrize(("method", "path", "body", "field"), [
    ("PUT", "/v1/runs/x/memory/k", b"{oops", "value"),
    ("POST", "/v1/runs/x/lessons", {"text": ""}, "text"),
    ("POST", "/v1/runs/x/circuit-break", {"reason": "r", "SECRET": 1}, "body"),
    ("POST", "/v1/runs/x/context", {"query": "q", "max_token_budget": 10}, "max_token_budget"),
    ("GET", "/v1/runs/x/events?limit=0", b"", "limit"),
    ("GET", "/v1/runs/x/snapshots/nope", b"", "snapshotId"),
    ("POST", "/v1/runs/x/snapshots/0000000000000-00000000/restore", {"merge": True}, "body"),
])
def test_bad_input_is_enveloped_naming_the_field(server, method, path, body, field):
    answer = req(server, method, path, body)
    assert answer.status == 400, answer.body
    found = error(answer)
    assert found["code"] == "VALIDATION_ERROR"
    assert found["details"][0]["path"] == field
    assert b"SECRET" not in answer.body and b"oops" not in answer.body


def test_lessons_and_events_paginate(server):
    run = "/v1/runs/pages"
    for i in range(3):
        ok(req(server, "POST", f"{run}/lessons", {"text": f"lesson {i}"}))
        time.sleep(0.002)  # ids sort by the millisecond of creation
    first = ok(req(server, "GET", f"{run}/lessons?limit=2"))
    rest = ok(req(server, "GET", f"{run}/lessons?after={first['next']}"))
    assert [x["text"] for x in first["lessons"] + rest["lessons"]] == [
        "lesson 0", "lesson 1", "lesson 2"]
    for _ in range(3):
        ok(req(server, "POST", f"{run}/circuit-break", {"reason": "test"}))
    page = ok(req(server, "GET", f"{run}/events?limit=2"))
    assert [e["seq"] for e in page["events"]] == [1, 2] and page["next"] == "2"
    more = ok(req(server, "GET", f"{run}/events?after=2"))
    assert [e["seq"] for e in more["events"]] == [3] and more["next"] is None


# ---- the break under load, concurrent and retried ------------------------------------------------


def test_a_break_under_eight_concurrent_writers_loses_nothing(server, operator):
    _, key = operator.new_tenant("enterprise")  # 500 requests/s
    run = "/v1/runs/busy"
    written: list[str] = []
    breaks: list[dict[str, Any]] = []
    lock = threading.Lock()

    def retried(*request: Any) -> Response:
        for _ in range(20):  # retryable answers: send the same request again, as clients do
            answer = req(server, *request, key=key)
            if answer.status not in (409, 429):
                return answer
            assert error(answer)["retryable"] is True
        return answer

    def writer(thread: int) -> None:
        for i in range(125):
            name = f"t{thread}-{i:03d}"
            answer = retried("PUT", f"{run}/memory/{name}", {"t": thread, "i": i})
            assert answer.status == 200, answer.body
            with lock:
                written.append(name)

    def breaker(after: int) -> None:
        while True:
            with lock:
                if len(written) >= after:
                    break
            time.sleep(0.005)
        breaks.append(ok(retried("POST", f"{run}/circuit-break",
                                 {"reason": "repeated_tool_call"})))

    all_at_once([lambda t=t: writer(t) for t in range(8)] + [lambda: breaker(300),
                                                               lambda: breaker(600)])
    assert len(written) == 1000 and len(breaks) == 2
    places: dict[str, int] = {}
    for answer in breaks:
        shot = all_entries(server, f"{run}/snapshots/{answer['snapshotId']}", key)
        assert len(shot) == answer["summary"]["entries"]
        for name in shot:
            places[name] = places.get(name, 0) + 1
    for name in all_entries(server, f"{run}/memory", key):
        places[name] = places.get(name, 0) + 1
    assert breaks[0]["summary"]["entries"] > 0  # the first break found >= 300 entries
    assert sorted(places) == sorted(written)  # none lost
    assert set(places.values()) == {1}  # none in two places


def test_two_concurrent_breaks_each_take_a_disjoint_snapshot(server):
    run = "/v1/runs/twice"
    for i in range(20):
        ok(req(server, "PUT", f"{run}/memory/k{i}", i))
    answers = [ok(a) for a in all_at_once(
        [lambda: req(server, "POST", f"{run}/circuit-break", {"reason": "r"})] * 2)]
    assert sorted(a["summary"]["entries"] for a in answers) == [0, 20]
    shots = [all_entries(server, f"{run}/snapshots/{a['snapshotId']}") for a in answers]
    assert sorted(len(s) for s in shots) == [0, 20]


def test_a_retried_break_is_one_break_answered_byte_for_byte(server):
    run = "/v1/runs/retried-break"
    ok(req(server, "PUT", f"{run}/memory/a", 1))
    headers = {"Idempotency-Key": "break-0001"}
    first = req(server, "POST", f"{run}/circuit-break", {"reason": "r"}, headers=headers)
    ok(req(server, "PUT", f"{run}/memory/b", 2))
    again = req(server, "POST", f"{run}/circuit-break", {"reason": "r"}, headers=headers)
    assert first.status == again.status == 200 and first.body == again.body
    assert ok(req(server, "GET", f"{run}/memory"))["entries"] == {"b": 2}
    assert len(ok(req(server, "GET", f"{run}/events"))["events"]) == 1
    reused = req(server, "POST", f"{run}/circuit-break", {"reason": "other"}, headers=headers)
    assert reused.status == 409 and error(reused)["code"] == "IDEMPOTENCY_KEY_REUSED"


def test_restore_gives_the_memory_back_byte_for_byte_after_new_writes(server):
    run = "/v1/runs/restore"
    for i in range(15):
        ok(req(server, "PUT", f"{run}/memory/k{i:02d}",
               {"i": i, "f": 0.1 * i, "s": "é€😀", "n": [None, True, 1e-9]}))
    before = req(server, "GET", f"{run}/memory")
    sid = ok(req(server, "POST", f"{run}/circuit-break", {"reason": "r"}))["snapshotId"]
    snapshot = req(server, "GET", f"{run}/snapshots/{sid}")
    assert entries_bytes(snapshot) == entries_bytes(before)
    ok(req(server, "PUT", f"{run}/memory/k00", "changed"))
    ok(req(server, "PUT", f"{run}/memory/new", "new"))
    restored = ok(req(server, "POST", f"{run}/snapshots/{sid}/restore", b""))
    assert restored["entries"] == 15 and restored["replaced"]["entries"] == 2
    assert entries_bytes(req(server, "GET", f"{run}/memory")) == entries_bytes(before)
    replaced = all_entries(server, f"{run}/snapshots/{restored['replaced']['snapshotId']}")
    assert replaced == {"k00": "changed", "new": "new"}  # restore replaces, loses nothing
    types = [e["type"] for e in ok(req(server, "GET", f"{run}/events"))["events"]]
    assert types == ["CIRCUIT_BROKEN", "MEMORY_RESTORED"]


# ---- tenants ---------------------------------------------------------------------------------


def test_no_route_reaches_another_tenants_run(server, operator):
    run = "/v1/runs/private-run"
    ok(req(server, "PUT", f"{run}/memory/secret", "owner"))
    ok(req(server, "POST", f"{run}/lessons", {"text": "owner lesson"}))
    sid = ok(req(server, "POST", f"{run}/circuit-break", {"reason": "r"}))["snapshotId"]
    ok(req(server, "PUT", f"{run}/memory/secret", "owner again"))
    _, key = operator.new_tenant("team")
    expected = [
        ("GET", f"{run}/memory/secret", b"", 404),
        ("DELETE", f"{run}/memory/secret", b"", 404),
        ("GET", f"{run}/snapshots/{sid}", b"", 404),
        ("POST", f"{run}/snapshots/{sid}/restore", b"", 404),
    ]
    for method, path, body, status in expected:
        answer = req(server, method, path, body, key=key)
        assert answer.status == status, (method, path)
        assert b"owner" not in answer.body
    assert ok(req(server, "GET", f"{run}/memory", key=key))["entries"] == {}
    assert ok(req(server, "GET", f"{run}/lessons", key=key))["lessons"] == []
    assert ok(req(server, "GET", f"{run}/events", key=key))["events"] == []
    assert ok(req(server, "POST", f"{run}/context", {"query": "owner"}, key=key))[
        "items"] == []
    ok(req(server, "PUT", f"{run}/memory/secret", "intruder", key=key))
    ok(req(server, "POST", f"{run}/lessons", {"text": "intruder lesson"}, key=key))
    broken = ok(req(server, "POST", f"{run}/circuit-break", {"reason": "r"}, key=key))
    assert broken["summary"]["entries"] == 1  # its own run of the same name
    assert ok(req(server, "GET", f"{run}/memory/secret"))["value"] == "owner again"
    assert len(ok(req(server, "GET", f"{run}/events"))["events"]) == 1
    assert [x["text"] for x in ok(req(server, "GET", f"{run}/lessons"))["lessons"]
            if x["kind"] == "lesson"] == ["owner lesson"]
    hobby = operator.new_tenant("hobby")[1]
    refused = req(server, "GET", f"{run}/memory", key=hobby)
    assert refused.status == 403 and error(refused)["code"] == "SKILL_NOT_AVAILABLE_FOR_PLAN"


# ---- data handling ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def own_server() -> Iterator[Server]:
    running = start_server("--test-skills")
    yield running
    running.stop()


def test_run_data_never_reaches_the_servers_output(own_server):
    server = own_server
    mark = f"MARK{uuid.uuid4().hex}"
    run = f"/v1/runs/{mark}"
    ok(req(server, "PUT", f"{run}/memory/{mark}", {mark: mark}))
    ok(req(server, "GET", f"{run}/memory/{mark}"))
    ok(req(server, "POST", f"{run}/lessons", {"text": mark, "tags": [mark[:60]]}))
    sid = ok(req(server, "POST", f"{run}/circuit-break", {"reason": mark[:60]}))["snapshotId"]
    ok(req(server, "GET", f"{run}/snapshots/{sid}"))
    ok(req(server, "POST", f"{run}/snapshots/{sid}/restore", b""))
    ok(req(server, "POST", f"{run}/context", {"query": mark}))
    req(server, "PUT", f"{run}/memory/{mark}", json.dumps(mark * 1000).encode())  # refused
    printed = server.stop()
    assert "runs" in printed  # the metadata lines are there
    assert mark[:24].lower() not in printed.lower()
