"""Working memory, lessons, events, the circuit break, snapshots, restore and the briefing
(loopsense.platform.runs.recover) in-process on the embedded DynamoDB with template.yaml's tables,
and on moto: the break under concurrent writes, concurrent breaks, the store failing at each
request of a break, restore byte for byte, tenant isolation, the break's constant writes.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from moto import mock_aws

from loopsense.errors import LoopsenseError
from loopsense.platform.http.auth import Identity
from loopsense.platform.runs.monitor import DAY_S, Runs
from loopsense.platform.runs.recover import MAX_VALUE, Recover
from loopsense.platform.runs.store import RunStore
from loopsense.settings import Settings
from loopsense.store.accounts import Accounts
from loopsense.store.dynamo import Dynamo, make_client, to_item
from loopsense.store.metering import Metering
from loopsense_local.tables import create_tables
from tests.concurrency import all_at_once
from tests.integration.runs.test_runs_service import (
    Clock,
    Counting,
    call,
    service,
    steps,
    tenant,
    with_client,
)


def retried(send: Callable[[], Any]) -> Any:
    """``send()`` retried as a client retries RUN_WRITE_CONFLICT (retryable: nothing was
    applied), at once: racing writers that all retry can win eight times in a row."""
    for _ in range(20):
        try:
            return send()
        except LoopsenseError as error:
            assert error.code == "RUN_WRITE_CONFLICT"
    raise AssertionError("lost 20 races in a row")


class Ticking(Clock):
    """25 ms pass at every reading: the requests of a test spread over virtual seconds, under
    the team plan's 50 requests per second."""

    def __call__(self) -> Any:
        with LOCK:
            self.now += timedelta(milliseconds=25)
            return self.now


LOCK = threading.Lock()


def recover(client: Any, clock: Clock | None = None) -> tuple[Recover, Counting]:
    runs, counting = service(client, clock or Ticking())
    return Recover(runs), counting


def through(rec: Recover, client: Any) -> Recover:
    """``rec`` on another client (counting or failing requests), the plan cache kept warm."""
    runs = with_client(rec.runs, client)
    runs.plans = rec.runs.plans
    return Recover(runs)


def put(rec: Recover, who: Identity, run: str, key: str, value: Any) -> dict[str, Any]:
    return rec.put(who, run, key, json.dumps(value).encode())


def memory(rec: Recover, who: Identity, run: str) -> dict[str, Any]:
    """All of working memory, page by page."""
    entries: dict[str, Any] = {}
    query: dict[str, str] = {"limit": "1000"}
    while True:
        page = rec.get_all(who, run, query)
        entries.update(page["entries"])
        if page["next"] is None:
            return entries
        query = {"limit": "1000", "after": page["next"]}


def snapshot(rec: Recover, who: Identity, run: str, sid: str) -> dict[str, Any]:
    entries: dict[str, Any] = {}
    query: dict[str, str] = {"limit": "1000"}
    while True:
        page = rec.snapshot(who, run, sid, query)
        entries.update(page["entries"])
        if page["next"] is None:
            return entries
        query = {"limit": "1000", "after": page["next"]}


def brk(rec: Recover, who: Identity, run: str, key: str | None = None, **body: Any
        ) -> dict[str, Any]:
    raw = {"reason": "repeated_tool_call", **body}
    return rec.circuit_break(who, run, raw, json.dumps(raw).encode(), key)


def events(rec: Recover, who: Identity, run: str) -> list[dict[str, Any]]:
    return rec.events(who, run, {})["events"]


# ---- working memory ----------------------------------------------------------------------------


def test_memory_put_get_delete_and_list(client):
    rec, _ = recover(client)
    who = tenant()
    assert put(rec, who, "r", "plan", {"step": 1, "items": [1.5, "x", None]})["created"]
    assert not put(rec, who, "r", "plan", {"step": 2})["created"]
    put(rec, who, "r", "ticket", 2214)
    assert rec.get(who, "r", "plan")["value"] == {"step": 2}
    listed = rec.get_all(who, "r", {})
    assert (listed["count"], listed["entries"], listed["next"]) == (
        2, {"plan": {"step": 2}, "ticket": 2214}, None)
    assert rec.delete(who, "r", "plan")["deleted"]
    with pytest.raises(LoopsenseError) as caught:
        rec.get(who, "r", "plan")
    assert caught.value.code == "RUN_MEMORY_NOT_FOUND"
    with pytest.raises(LoopsenseError) as caught:
        rec.delete(who, "r", "plan")
    assert caught.value.code == "RUN_MEMORY_NOT_FOUND"
    assert rec.get_all(who, "r", {})["count"] == 1


def test_memory_pages_in_key_order(client):
    rec, _ = recover(client)
    who = tenant()
    for i in range(25):
        put(rec, who, "r", f"k{i:02d}", i)
    first = rec.get_all(who, "r", {"limit": "10"})
    assert list(first["entries"]) == [f"k{i:02d}" for i in range(10)]
    assert first["next"] == "k09"
    rest = rec.get_all(who, "r", {"limit": "1000", "after": "k09"})
    assert list(rest["entries"]) == [f"k{i:02d}" for i in range(10, 25)]
    assert rest["next"] is None


def test_values_over_32_kib_are_refused_naming_the_limit(client):
    rec, _ = recover(client)
    who = tenant()
    big = json.dumps("s" * MAX_VALUE).encode()
    with pytest.raises(LoopsenseError) as caught:
        rec.put(who, "r", "big", big)
    assert caught.value.code == "VALIDATION_ERROR"
    assert caught.value.details[0].path == "value" and "32768" in caught.value.message
    assert put(rec, who, "r", "fits", "s" * (MAX_VALUE - 2))["created"]


@pytest.mark.parametrize(("key", "body", "path"), [
    ("has/slash", b"1", "key"), ("x" * 257, b"1", "key"), ("", b"1", "key"),
    ("ok", b"{not json", "value"), ("ok", b"NaN", "value"),
])
def test_bad_keys_and_values_name_the_field(client, key, body, path):
    rec, _ = recover(client)
    with pytest.raises(LoopsenseError) as caught:
        rec.put(tenant(), "r", key, body)
    assert (caught.value.code, caught.value.details[0].path) == ("VALIDATION_ERROR", path)


def test_lessons_are_listed_in_order_and_paginated(client):
    clock = Clock()
    rec, _ = recover(client, clock)
    who = tenant()
    made = []
    for i in range(5):  # ids sort by creation time (milliseconds)
        made.append(rec.add_lesson(who, "r", {"text": f"lesson {i}", "tags": ["t"]}))
        clock.now += timedelta(milliseconds=1)
    assert made[0]["kind"] == "lesson" and made[0]["retention"]["days"] == 14
    first = rec.lessons(who, "r", {"limit": "3"})
    assert [x["text"] for x in first["lessons"]] == ["lesson 0", "lesson 1", "lesson 2"]
    rest = rec.lessons(who, "r", {"after": first["next"]})
    assert [x["text"] for x in rest["lessons"]] == ["lesson 3", "lesson 4"]
    for bad, path in (({"text": ""}, "text"), ({"text": "x", "kind": "loop_detected"}, "kind"),
                      ({"text": "x", "tags": ["a"] * 17}, "tags")):
        with pytest.raises(LoopsenseError) as caught:
            rec.add_lesson(who, "r", bad)
        assert caught.value.details[0].path == path


# ---- the circuit break -------------------------------------------------------------------------


def test_the_break_snapshots_clears_resets_and_logs(client):
    rec, _ = recover(client)
    who = tenant()
    steps(rec.runs, who, "r", [call("export_status", {"id": 7})] * 6)
    assert rec.runs.signal(who, "r", "ari")["signal"]["is_looping"]
    before = {f"k{i}": {"i": i, "f": 0.1 * i} for i in range(12)}
    for key, value in before.items():
        put(rec, who, "r", key, value)
    pre = rec.get_all(who, "r", {})
    answer = brk(rec, who, "r")
    assert answer["broken"] is True
    assert answer["summary"] == {"entries": 12, "reason": "repeated_tool_call"}
    assert answer["agentsReset"] == ["ari"]
    assert memory(rec, who, "r") == {}
    assert rec.get_all(who, "r", {})["count"] == 0
    shot = rec.snapshot(who, "r", answer["snapshotId"], {})
    assert json.dumps(shot["entries"]) == json.dumps(pre["entries"])  # byte for byte
    assert shot["reason"] == "repeated_tool_call" and shot["kind"] == "loop_detected"
    signal = rec.runs.signal(who, "r", "ari")
    assert signal["signal"]["findings"] == [] and signal["segmentStart"] == 6
    [event] = events(rec, who, "r")
    assert (event["seq"], event["type"], event["snapshotId"]) == (
        1, "CIRCUIT_BROKEN", answer["snapshotId"])
    lessons = rec.lessons(who, "r", {})["lessons"]
    assert [(x["kind"], x["tags"]) for x in lessons] == [("loop_detected",
                                                           ["repeated_tool_call"])]


def test_a_break_makes_the_same_writes_whatever_the_memory_size(client):
    rec, counting = recover(client)
    who = tenant()
    steps(rec.runs, who, "small", [call("x", {})])
    steps(rec.runs, who, "large", [call("x", {})])
    for i in range(3):
        put(rec, who, "small", f"k{i}", i)
    for i in range(300):
        put(rec, who, "large", f"k{i}", i)
    calls, items = {}, {}
    for run in ("small", "large"):
        recording = Recording(client)
        assert brk(through(rec, recording), who, run,
                   agentId="ari")["summary"]["entries"] in (3, 300)
        calls[run], items[run] = recording.calls, recording.items
    # reads: the head, the agent; one transaction; the head again (the count it froze)
    assert calls["small"] == calls["large"] == [
        "get_item", "get_item", "transact_write_items", "get_item"]
    # the transaction: rate counter, head, snapshot lesson, event, agent
    assert items["small"] == items["large"] == [5]


class Recording(Counting):
    """Counts requests and the items of each transaction."""

    def __init__(self, client: Any) -> None:
        super().__init__(client)
        self.items: list[int] = []

    def __getattr__(self, name: str) -> Any:
        method = super().__getattr__(name)

        def call(**kwargs: Any) -> Any:
            if name == "transact_write_items":
                self.items.append(len(kwargs["TransactItems"]))
            return method(**kwargs)

        return call


def test_a_retried_break_with_its_key_is_one_break(client):
    rec, _ = recover(client)
    who = tenant()
    put(rec, who, "r", "a", 1)
    first = brk(rec, who, "r", key="break-1")
    put(rec, who, "r", "b", 2)
    again = brk(rec, who, "r", key="break-1")
    assert again == first
    assert memory(rec, who, "r") == {"b": 2}
    assert len(events(rec, who, "r")) == 1
    with pytest.raises(LoopsenseError) as caught:
        brk(rec, who, "r", key="break-1", agentId="ari")
    assert caught.value.code == "IDEMPOTENCY_KEY_REUSED"


def test_an_unknown_agent_is_not_found_and_nothing_changes(client):
    rec, _ = recover(client)
    who = tenant()
    put(rec, who, "r", "a", 1)
    with pytest.raises(LoopsenseError) as caught:
        brk(rec, who, "r", agentId="nobody")
    assert caught.value.code == "RUN_AGENT_NOT_FOUND"
    assert memory(rec, who, "r") == {"a": 1} and events(rec, who, "r") == []


def test_writes_racing_two_breaks_lose_nothing_and_land_once(client):
    """8 threads write 1,000 distinct entries while two breaks run: each entry is in exactly
    one snapshot or in working memory."""
    rec, _ = recover(client)
    who = tenant()
    steps(rec.runs, who, "busy", [call("x", {})])
    written: list[str] = []
    lock = threading.Lock()
    midway = threading.Event()  # waited on, not polled: a spinning thread starves the writers
    breaks: list[dict[str, Any]] = []

    def writer(thread: int) -> None:
        for i in range(125):
            key = f"t{thread}-{i:03d}"
            retried(lambda key=key, i=i: put(rec, who, "busy", key, {"t": thread, "i": i}))
            with lock:
                written.append(key)
                if len(written) >= 300:
                    midway.set()

    def breaker() -> None:
        midway.wait(timeout=120)
        breaks.append(retried(lambda: brk(rec, who, "busy")))

    all_at_once([lambda t=t: writer(t) for t in range(8)] + [breaker, breaker])
    assert len(written) == 1000 and len(breaks) == 2
    places: dict[str, list[str]] = {}
    for answer in breaks:
        shot = snapshot(rec, who, "busy", answer["snapshotId"])
        assert answer["summary"]["entries"] == len(shot)
        for key in shot:
            places.setdefault(key, []).append(answer["snapshotId"])
    for key in memory(rec, who, "busy"):
        places.setdefault(key, []).append("memory")
    assert sorted(places) == sorted(written)
    assert all(len(where) == 1 for where in places.values())
    assert [e["type"] for e in events(rec, who, "busy")] == ["CIRCUIT_BROKEN"] * 2


def test_two_concurrent_breaks_take_disjoint_snapshots(client):
    rec, _ = recover(client)
    who = tenant()
    for i in range(50):
        put(rec, who, "r", f"k{i}", i)
    answers = all_at_once([lambda: brk(rec, who, "r")] * 2)
    assert all(a["broken"] for a in answers)
    counts = sorted(a["summary"]["entries"] for a in answers)
    assert counts == [0, 50]  # the second break found the memory the first had cleared
    shots = [snapshot(rec, who, "r", a["snapshotId"]) for a in answers]
    assert sorted(len(s) for s in shots) == [0, 50]
    assert [e["seq"] for e in events(rec, who, "r")] == [1, 2]


# ---- faults: the store failing at each request of a break --------------------------------------


class FailAt(Counting):
    """Fails the ``n``-th request (0-based, any operation); ``after``: the request is made
    first and its answer lost (the store applied it, the caller never hears)."""

    def __init__(self, client: Any, n: int, after: bool) -> None:
        super().__init__(client)
        self.n, self.after = n, after

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.client, name)

        def call(**kwargs: Any) -> Any:
            with self.lock:
                index = len(self.calls)
                self.calls.append(name)
            if index == self.n and not self.after:
                raise EndpointConnectionError(endpoint_url="x")
            answer = method(**kwargs)
            if index == self.n:
                raise EndpointConnectionError(endpoint_url="x")
            return answer

        return call


def state(rec: Recover, who: Identity, run: str) -> tuple[Any, ...]:
    shots = [x for x in rec.lessons(who, run, {})["lessons"] if x["kind"] == "loop_detected"]
    return (memory(rec, who, run), [e["type"] for e in events(rec, who, run)],
            len(shots), rec.runs.signal(who, run, "ari")["segmentStart"])


@pytest.mark.parametrize("after", [False, True])
@pytest.mark.parametrize("n", range(4))  # the break's four requests (see the test above)
def test_a_store_failing_during_a_break_leaves_old_or_new_and_a_retry_is_one_break(
        client, n, after):
    rec, _ = recover(client)
    who = tenant()
    steps(rec.runs, who, "r", [call("x", {})] * 3)
    for i in range(5):
        put(rec, who, "r", f"k{i}", i)
    old = state(rec, who, "r")
    failing = through(rec, FailAt(client, n, after))
    with pytest.raises(LoopsenseError) as caught:
        brk(failing, who, "r", key="k-1", agentId="ari")
    assert caught.value.code in ("PLAN_ELIGIBILITY_UNAVAILABLE", "TENANT_RATE_LIMITED")
    now = state(rec, who, "r")
    new = ({}, ["CIRCUIT_BROKEN"], 1, 3)
    assert now in (old, new)
    answer = brk(rec, who, "r", key="k-1", agentId="ari")  # the client retries
    assert answer["summary"]["entries"] == 5
    assert state(rec, who, "r") == new
    assert snapshot(rec, who, "r", answer["snapshotId"]) == {f"k{i}": i for i in range(5)}


def test_a_transaction_conflict_in_a_break_is_read_again(client):
    from tests.integration.runs.test_runs_service import Failing

    rec, _ = recover(client)
    who = tenant()
    put(rec, who, "r", "a", 1)
    conflict = ClientError({"Error": {"Code": "TransactionCanceledException", "Message": "x"},
                            "CancellationReasons": [{"Code": "None"},
                                                    {"Code": "TransactionConflict"}]},
                           "TransactWriteItems")
    flaky = through(rec, Failing(client, conflict, 2))
    assert brk(flaky, who, "r")["summary"]["entries"] == 1
    assert len(events(rec, who, "r")) == 1


# ---- restore -----------------------------------------------------------------------------------


def test_restore_replaces_memory_byte_for_byte_and_keeps_what_it_replaced(client):
    rec, _ = recover(client)
    who = tenant()
    for i in range(30):
        put(rec, who, "r", f"k{i:02d}", {"i": i, "x": [0.1, 1e-7, "é", None]})
    pre = rec.get_all(who, "r", {})
    sid = brk(rec, who, "r")["snapshotId"]
    put(rec, who, "r", "new", "written after the break")
    put(rec, who, "r", "k00", "overwritten")
    restored = rec.restore(who, "r", sid, None, b"", "restore-1")
    assert restored["entries"] == 30 and restored["replaced"]["entries"] == 2
    after = rec.get_all(who, "r", {})
    assert json.dumps(after["entries"]) == json.dumps(pre["entries"])
    assert after["count"] == 30
    replaced = snapshot(rec, who, "r", restored["replaced"]["snapshotId"])
    assert replaced == {"k00": "overwritten", "new": "written after the break"}
    assert rec.restore(who, "r", sid, None, b"", "restore-1") == restored  # a retry: once
    assert [e["type"] for e in events(rec, who, "r")] == ["CIRCUIT_BROKEN", "MEMORY_RESTORED"]
    put(rec, who, "r", "k01", "changed after restore")  # the snapshot stays as it was
    assert snapshot(rec, who, "r", sid)["k01"] == {"i": 1, "x": [0.1, 1e-7, "é", None]}
    with pytest.raises(LoopsenseError) as caught:
        rec.restore(who, "r", "0000000000000-00000000", None, b"", None)
    assert caught.value.code == "RUN_SNAPSHOT_NOT_FOUND"


def test_a_restore_that_fails_midway_changes_nothing(client):
    rec, _ = recover(client)
    who = tenant()
    for i in range(60):
        put(rec, who, "r", f"k{i:02d}", i)
    sid = brk(rec, who, "r")["snapshotId"]
    put(rec, who, "r", "kept", True)
    recording = Counting(client)
    through(rec, recording).restore(who, "r", sid, None, b"", None)
    second_batch = [i for i, c in enumerate(recording.calls) if c == "batch_write_item"][1]
    rec.restore(who, "r", rec.lessons(who, "r", {})["lessons"][-1]["snapshotId"], None, b"",
                None)  # back to the memory before
    assert memory(rec, who, "r") == {"kept": True}
    failing = through(rec, FailAt(client, second_batch, False))  # amid the copies
    with pytest.raises(LoopsenseError):
        failing.restore(who, "r", sid, None, b"", "r-1")
    assert memory(rec, who, "r") == {"kept": True}
    assert rec.restore(who, "r", sid, None, b"", "r-1")["entries"] == 60
    assert memory(rec, who, "r") == {f"k{i:02d}": i for i in range(60)}


class Throttled(Counting):
    """BatchWriteItem writes only the first half of each request and hands the rest back as
    UnprocessedItems, as DynamoDB does under throttling."""

    def __getattr__(self, name: str) -> Any:
        method = super().__getattr__(name)
        if name != "batch_write_item":
            return method

        def call(RequestItems: dict[str, Any]) -> Any:  # noqa: N803 (boto3's name)
            (table, writes), = RequestItems.items()
            half = max(1, len(writes) // 2)
            method(RequestItems={table: writes[:half]})
            return {"UnprocessedItems": {table: writes[half:]} if writes[half:] else {}}

        return call


def test_a_restore_copies_25_entries_a_request_and_sends_leftovers_again(client,
                                                                          monkeypatch):
    import loopsense.store.dynamo as dynamo

    pauses: list[float] = []
    monkeypatch.setattr(dynamo.time, "sleep", pauses.append)
    rec, _ = recover(client)
    who = tenant()
    for i in range(60):
        put(rec, who, "r", f"k{i:02d}", {"i": i})
    sid = brk(rec, who, "r")["snapshotId"]
    throttled = Throttled(client)
    assert through(rec, throttled).restore(who, "r", sid, None, b"", None)["entries"] == 60
    assert memory(rec, who, "r") == {f"k{i:02d}": {"i": i} for i in range(60)}
    assert "put_item" not in throttled.calls
    # 25, 25 and 10 entries, each sent until nothing is left over: halves written of 25 (12,
    # 6, 3, 2, 1, 1) and of 10 (5, 2, 1, 1, 1)
    assert throttled.calls.count("batch_write_item") == 6 + 6 + 5
    assert pauses[:5] == [0.05, 0.1, 0.2, 0.4, 0.8]


# ---- tenants, retention ------------------------------------------------------------------------


def test_another_tenant_reaches_nothing_of_a_run(client):
    rec, _ = recover(client)
    owner, other = tenant(), tenant()
    put(rec, owner, "shared", "secret", "owner's")
    rec.add_lesson(owner, "shared", {"text": "owner's lesson"})
    sid = brk(rec, owner, "shared")["snapshotId"]
    put(rec, owner, "shared", "secret", "owner's again")
    with pytest.raises(LoopsenseError) as caught:
        rec.get(other, "shared", "secret")
    assert caught.value.code == "RUN_MEMORY_NOT_FOUND"
    with pytest.raises(LoopsenseError) as caught:
        rec.delete(other, "shared", "secret")
    assert caught.value.code == "RUN_MEMORY_NOT_FOUND"
    assert rec.get_all(other, "shared", {})["entries"] == {}
    assert rec.lessons(other, "shared", {})["lessons"] == []
    assert events(rec, other, "shared") == []
    for action in (lambda: rec.snapshot(other, "shared", sid, {}),
                   lambda: rec.restore(other, "shared", sid, None, b"", None)):
        with pytest.raises(LoopsenseError) as caught:
            action()
        assert caught.value.code == "RUN_SNAPSHOT_NOT_FOUND"
    assert rec.context(other, "shared", {"query": "owner"})["items"] == []
    assert brk(rec, other, "shared")["summary"]["entries"] == 0  # its own, empty, run
    assert memory(rec, owner, "shared") == {"secret": "owner's again"}


def test_every_item_carries_the_runs_retention(client):
    clock = Clock()
    rec, _ = recover(client, clock)
    who = tenant(run_retention_days=2)
    put(rec, who, "r", "a", 1)
    rec.add_lesson(who, "r", {"text": "x"})
    answer = brk(rec, who, "r")
    expected = int(clock.now.timestamp()) + 2 * DAY_S
    assert answer["retention"]["days"] == 2
    items = rec.store.db.query(rec.store.table, KeyConditionExpression="pk = :pk",
                               ExpressionAttributeValues={":pk": {"S": f"{who.tenant_id}#r"}})
    entries = rec.store.db.query(
        rec.store.table, KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": f"{who.tenant_id}#r#MEMORY"}})
    assert {i["sk"].split("#")[0] for i in items} == {"MEMORY", "LESSON", "EVENT"}
    assert all(i["expiresAt"] == expected for i in items + entries)
    clock.now += timedelta(days=2, seconds=1)  # expired, not yet deleted: absent
    assert rec.lessons(who, "r", {})["lessons"] == []
    assert events(rec, who, "r") == []


# ---- the briefing ------------------------------------------------------------------------------


def test_the_briefing_ranks_by_relevance_and_fits_the_budget(client):
    clock = Clock()
    rec, _ = recover(client, clock)
    who = tenant()
    rec.add_lesson(who, "r", {"text": "the export service times out on ticket exports"})
    clock.now += timedelta(seconds=1)
    rec.add_lesson(who, "r", {"text": "customer prefers email over phone"})
    clock.now += timedelta(seconds=1)
    put(rec, who, "r", "ticket", {"id": 2214, "status": "export pending"})
    brk(rec, who, "r")
    brief = rec.context(who, "r", {"query": "resume ticket 2214 export",
                                   "max_token_budget": 1500})
    assert [i["type"] for i in brief["items"]] == ["snapshot", "lesson", "lesson"]
    assert brief["items"][1]["score"] > brief["items"][2]["score"]
    assert brief["tokens"] <= 1500
    assert '"status": "export pending"' in brief["context_block"]
    for budget in (50, 60, 80, 120):
        small = rec.context(who, "r", {"query": "resume ticket 2214 export",
                                       "max_token_budget": budget})
        assert small["tokens"] <= budget
        assert len(small["context_block"].encode()) <= budget * 4


def test_the_briefing_breaks_ties_by_recency(client):
    clock = Clock()
    rec, _ = recover(client, clock)
    who = tenant()
    for _ in range(3):
        rec.add_lesson(who, "r", {"text": "same words every time"})
        clock.now += timedelta(seconds=1)
    brief = rec.context(who, "r", {"query": "unrelated zebra", "max_token_budget": 1000})
    created = [i["createdAt"] for i in brief["items"]]
    assert created == sorted(created, reverse=True) and len(created) == 3


# ---- moto: the same on DynamoDB's own semantics ----------------------------------------------


def test_the_flow_on_moto():
    with mock_aws():
        config = Settings()
        create_tables(make_client(config), config)
        db = Dynamo(make_client(config))
        rec = Recover(Runs(RunStore(db, config.runs_table), Accounts(db, config),
                           Metering(db, config), Clock()))
        who = tenant()
        steps(rec.runs, who, "r", [call("x", {})] * 6)
        for i in range(5):
            put(rec, who, "r", f"k{i}", {"i": i})
        rec.delete(who, "r", "k4")
        answer = brk(rec, who, "r", key="b1")
        assert answer["summary"]["entries"] == 4 and memory(rec, who, "r") == {}
        assert brk(rec, who, "r", key="b1") == answer
        put(rec, who, "r", "later", 1)
        restored = rec.restore(who, "r", answer["snapshotId"], None, b"", None)
        assert restored["replaced"]["entries"] == 1
        assert memory(rec, who, "r") == {f"k{i}": {"i": i} for i in range(4)}
        assert [e["type"] for e in events(rec, who, "r")] == ["CIRCUIT_BROKEN",
                                                              "MEMORY_RESTORED"]
        assert rec.context(who, "r", {"query": "k1"})["items"]


# ---- limits, and steps racing a break ----------------------------------------------------------


def test_working_memory_beyond_its_entry_limit_is_refused(client, monkeypatch):
    import loopsense.platform.runs.recover as module

    monkeypatch.setattr(module, "MAX_ENTRIES", 3)
    rec, _ = recover(client)
    who = tenant()
    for i in range(3):
        put(rec, who, "r", f"k{i}", i)
    put(rec, who, "r", "k0", "overwriting is not growing")
    with pytest.raises(LoopsenseError) as caught:
        put(rec, who, "r", "k3", 3)
    assert (caught.value.code, caught.value.status) == ("RUN_MEMORY_FULL", 409)
    assert "3 entries" in caught.value.message
    rec.delete(who, "r", "k2")
    assert put(rec, who, "r", "k3", 3)["created"]
    brk(rec, who, "r")  # a break empties it
    assert put(rec, who, "r", "k9", 9)["created"]


def test_a_bad_page_cursor_names_the_field(client):
    rec, _ = recover(client)
    for call_, path in ((lambda: rec.get_all(tenant(), "r", {"after": "bad/key"}), "after"),
                        (lambda: rec.lessons(tenant(), "r", {"after": "x"}), "after"),
                        (lambda: rec.events(tenant(), "r", {"after": "-1"}), "after"),
                        (lambda: rec.get_all(tenant(), "r", {"limit": "1001"}), "limit")):
        with pytest.raises(LoopsenseError) as caught:
            call_()
        assert caught.value.details[0].path == path


def test_step_batches_racing_a_break_are_each_applied_once(client):
    """The break's agent reset is conditional on the agent's version: a batch that raced it is
    applied before the reset or after it, and the step count is exact."""
    rec, _ = recover(client)
    who = tenant()
    steps(rec.runs, who, "race", [call("x", {})])

    def sender(thread: int) -> list[int]:
        return [retried(lambda b=b: steps(rec.runs, who, "race", [call("y", {"t": thread})] * 2,
                                          key=f"t{thread}-{b}"))["firstIndex"]
                for b in range(5)]

    results = all_at_once([lambda t=t: sender(t) for t in range(4)] +
                          [lambda: retried(lambda: brk(rec, who, "race", agentId="ari"))])
    firsts = sorted(f for r in results[:4] for f in r)
    assert firsts == list(range(1, 41, 2))
    signal = rec.runs.signal(who, "race", "ari")
    assert signal["sequence"] == 41
    assert signal["segmentStart"] in {1 + 2 * i for i in range(21)}  # at a batch boundary
    assert results[4]["agentsReset"] == ["ari"]


def test_one_idempotency_key_restores_one_snapshot(client):
    rec, _ = recover(client)
    who = tenant()
    put(rec, who, "r", "a", 1)
    first = brk(rec, who, "r")["snapshotId"]
    put(rec, who, "r", "b", 2)
    second = brk(rec, who, "r")["snapshotId"]
    rec.restore(who, "r", first, None, b"", "restore-key")
    with pytest.raises(LoopsenseError) as caught:
        rec.restore(who, "r", second, None, b"", "restore-key")
    assert caught.value.code == "IDEMPOTENCY_KEY_REUSED"
    assert memory(rec, who, "r") == {"a": 1}


def test_a_break_without_an_agent_resets_every_agent_of_the_run_up_to_eight(client):
    rec, _ = recover(client)
    who = tenant()
    for name in ("ari", "bob"):
        steps(rec.runs, who, "two", [call("x", {}, agent=name)] * 6)
    assert brk(rec, who, "two")["agentsReset"] == ["ari", "bob"]
    assert all(rec.runs.signal(who, "two", n)["signal"]["findings"] == [] for n in ("ari", "bob"))
    for i in range(9):
        steps(rec.runs, who, "nine", [call("x", {}, agent=f"a{i}")])
    with pytest.raises(LoopsenseError) as caught:
        brk(rec, who, "nine")
    assert caught.value.details[0].path == "agentId" and "8" in caught.value.message
    assert events(rec, who, "nine") == []
    assert brk(rec, who, "nine", agentId="a3")["agentsReset"] == ["a3"]


# ---- expiry: TTL deletes late and in no order ---------------------------------------------------


def head_item(rec: Recover, who: Identity, run: str) -> dict[str, str]:
    return {"pk": f"{who.tenant_id}#{run}", "sk": "MEMORY"}


def test_an_expired_head_not_yet_deleted_is_absent(client):
    clock = Clock()
    rec, _ = recover(client, clock)
    who = tenant(run_retention_days=14)
    put(rec, who, "r", "plan", 1)
    clock.now += timedelta(days=20)  # every item expired, none deleted yet
    listed = rec.get_all(who, "r", {})
    assert (listed["count"], listed["entries"]) == (0, {})
    with pytest.raises(LoopsenseError) as caught:
        rec.get(who, "r", "plan")
    assert caught.value.code == "RUN_MEMORY_NOT_FOUND"
    assert put(rec, who, "r", "plan", 2)["created"]
    assert rec.get_all(who, "r", {})["count"] == 1
    assert rec.get(who, "r", "plan")["value"] == 2


def test_a_run_whose_head_alone_was_deleted_breaks_and_restores(client):
    clock = Clock()
    rec, _ = recover(client, clock)
    who = tenant(run_retention_days=14)
    steps(rec.runs, who, "r", [call("x", {})])
    put(rec, who, "r", "plan", 1)
    first = brk(rec, who, "r")["snapshotId"]
    put(rec, who, "r", "plan", 2)
    brk(rec, who, "r")
    rec.store.db.call("delete_item", TableName=rec.store.table,
                      Key=to_item(head_item(rec, who, "r")))  # the head alone, by TTL
    put(rec, who, "r", "plan", 3)
    assert brk(rec, who, "r")["summary"]["entries"] == 1  # not RUN_WRITE_CONFLICT
    assert [e["seq"] for e in events(rec, who, "r")] == [1, 2, 3]
    assert rec.restore(who, "r", first, None, b"", None)["entries"] == 1
    assert memory(rec, who, "r") == {"plan": 1}
    assert [e["seq"] for e in events(rec, who, "r")] == [1, 2, 3, 4]


def test_an_expired_head_not_yet_deleted_breaks_on_fresh_memory(client):
    clock = Clock()
    rec, _ = recover(client, clock)
    who = tenant(run_retention_days=14)
    steps(rec.runs, who, "r", [call("x", {})])
    put(rec, who, "r", "old", 1)
    brk(rec, who, "r")
    put(rec, who, "r", "old", 2)
    clock.now += timedelta(days=20)
    steps(rec.runs, who, "r", [call("x", {})])
    answer = brk(rec, who, "r")
    assert answer["summary"]["entries"] == 0  # nothing live was frozen
    assert snapshot(rec, who, "r", answer["snapshotId"]) == {}
    assert [e["seq"] for e in events(rec, who, "r")] == [2]  # 1 expired, not deleted
    assert memory(rec, who, "r") == {}


@pytest.mark.parametrize("deleted", [False, True])
def test_entries_expired_by_ttl_free_their_place_in_a_full_memory(client, monkeypatch, deleted):
    import loopsense.platform.runs.recover as module

    monkeypatch.setattr(module, "MAX_ENTRIES", 3)
    clock = Clock()
    rec, _ = recover(client, clock)
    who = tenant(run_retention_days=14)
    put(rec, who, "r", "k0", 0)
    clock.now += timedelta(days=10)
    put(rec, who, "r", "k1", 1)
    put(rec, who, "r", "k2", 2)
    clock.now += timedelta(days=5)  # k0 expired (and, or not, deleted); the head lives on
    if deleted:
        generation = rec.store.head(who.tenant_id, "r", int(clock.now.timestamp())).generation
        rec.store.db.call("delete_item", TableName=rec.store.table, Key=to_item(
            {"pk": f"{who.tenant_id}#r#MEMORY", "sk": f"{generation}#k0"}))
    assert rec.get_all(who, "r", {})["count"] == 2
    assert put(rec, who, "r", "k3", 3)["created"]  # not RUN_MEMORY_FULL
    listed = rec.get_all(who, "r", {})
    assert (listed["count"], sorted(listed["entries"])) == (3, ["k1", "k2", "k3"])
    assert rec.store.head(who.tenant_id, "r", int(clock.now.timestamp())).count == 3
    with pytest.raises(LoopsenseError) as caught:  # three live entries do fill it
        put(rec, who, "r", "k4", 4)
    assert caught.value.code == "RUN_MEMORY_FULL"
