"""The runs API's rules in-process (loopsense.platform.runs.monitor) on the embedded DynamoDB with
template.yaml's tables: steps one by one and batched, concurrent batches of one agent, retried
batches, rate limit and quota in the batch's own write, retention, the store's request count;
and the same flow on moto (real DynamoDB semantics for BatchGetItem and transactions).
"""

from __future__ import annotations

import json
import random
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from moto import mock_aws

from loopsense.core.monitor.monitor import new_state, observe
from loopsense.errors import LoopsenseError
from loopsense.platform.http.auth import Identity
from loopsense.platform.runs import views
from loopsense.platform.runs.monitor import DAY_S, MAX_BREAK_AGENTS, MAX_STORED, Runs
from loopsense.platform.runs.store import RunStore, decode
from loopsense.settings import Settings
from loopsense.store.accounts import Accounts, Plan
from loopsense.store.dynamo import Dynamo, make_client
from loopsense.store.metering import Metering
from loopsense_local.embedded import EmbeddedDynamoDB
from loopsense_local.tables import create_tables
from tests.concurrency import all_at_once
from tests.integration.runs.conftest import CONFIG

START = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


class Counting:
    """A DynamoDB client that counts the requests made through it, by operation."""

    def __init__(self, client: Any) -> None:
        self.client, self.calls = client, []
        self.lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.client, name)

        def call(**kwargs: Any) -> Any:
            with self.lock:
                self.calls.append(name)
            return method(**kwargs)

        return call


@pytest.fixture(scope="module")
def conflicting() -> Iterator[Any]:
    """A store in the engine's conflict mode: each transaction holds its items 2 ms, and what
    meets one is refused with TransactionConflict, as on DynamoDB."""
    embedded = EmbeddedDynamoDB("127.0.0.1", 0, transaction_hold_s=0.002)
    in_process = embedded.client()
    create_tables(in_process, CONFIG)
    yield in_process


@pytest.fixture(params=["serialized", "conflicts"])
def racing(request: pytest.FixtureRequest, client: Any, conflicting: Any) -> Any:
    """The store of the tests that race writers: serialized, and with DynamoDB's conflicts."""
    return client if request.param == "serialized" else conflicting


def service(client: Any, clock: Clock | None = None) -> tuple[Runs, Counting]:
    counting = Counting(client)
    db = Dynamo(counting)
    return Runs(RunStore(db, CONFIG.runs_table), Accounts(db, CONFIG), Metering(db, CONFIG),
                clock or Clock()), counting


def tenant(plan: str = "team", **settings: Any) -> Identity:
    return Identity(f"t-{uuid.uuid4().hex[:8]}", "key_1", plan, ("*",), settings)


def call(action: str, args: Any, result: Any = "same", outcome: str = "neutral",
         agent: str = "ari") -> dict[str, Any]:
    return {"agentId": agent, "kind": "tool_call", "action": action, "args": args,
            "result": result, "outcome": outcome}


def state_of(runs: Runs, who: Identity, run: str, agent: str = "ari") -> dict[str, Any]:
    found = runs.store.agent(who.tenant_id, run, agent)
    assert found is not None
    return found.body["monitor"]


def sequential(steps: list[dict[str, Any]], runs: Runs, who: Identity) -> dict[str, Any]:
    """The state a sequential run of ``steps`` reaches (the config the runs API applies)."""
    config = runs.monitor_config(runs.admit(who), None, 0, None)
    state = new_state()
    for step in steps:
        state, _ = observe(state, step, config)
    return json.loads(json.dumps(state))


def steps(runs: Runs, who: Identity, run: str, batch: list[dict[str, Any]],
          key: str | None = None) -> dict[str, Any]:
    body = json.dumps({"steps": batch}).encode()
    return runs.steps(who, run, json.loads(body), body, key)


# ---- steps, signal, register --------------------------------------------------------------


def test_one_by_one_and_batched_reach_the_same_state_and_answer(client):
    runs, _ = service(client)
    who = tenant()
    trace = [call("export_status", {"id": 7}) for _ in range(6)] + [
        call("read", {"path": f"f{i}"}, i) for i in range(4)] + [
        call("export_status", {"id": 7}) for _ in range(3)]
    singles = [runs.steps(who, "one", s, json.dumps(s).encode(), None) for s in trace]
    batched = steps(runs, who, "batch", trace)
    assert state_of(runs, who, "one") == state_of(runs, who, "batch") == sequential(
        trace, runs, who)
    for field in ("signals", "findings", "recommendation", "sequence", "segmentStart"):
        assert singles[-1][field] == batched[field], field
    assert batched["accepted"] == len(trace) and batched["firstIndex"] == 0
    assert [s["firstIndex"] for s in singles] == list(range(len(trace)))


def test_the_signal_names_the_repeated_tool_and_recommends_a_nudge(client):
    runs, _ = service(client)
    who = tenant()
    answer = steps(runs, who, "r1", [call("export_status", {"id": 7})] * 6)
    assert answer["findings"][0]["rationale"] == (
        "tool export_status called 6 times with identical arguments and identical results")
    assert answer["recommendation"]["action"] == "nudge"
    signal = runs.signal(who, "r1", "ari")
    assert signal["monitor_disabled"] is False
    verdict = signal["signal"]
    assert verdict["is_looping"] and verdict["confidence"] >= 0.7
    assert verdict["findings"] == answer["findings"]
    assert verdict["recommendation"] == answer["recommendation"]
    # Re-inspecting counts no nudge: the next identical call is the break.
    assert runs.signal(who, "r1", "ari") == signal
    assert steps(runs, who, "r1", [call("export_status", {"id": 7})])[
        "recommendation"]["action"] == "break"


def test_registering_keeps_the_state_and_sets_the_objective_for_drift(client):
    runs, _ = service(client)
    who = tenant()
    steps(runs, who, "r", [call("a", {"i": i}) for i in range(3)])
    registered = runs.register(who, "r", {"agentId": "ari", "role": "support",
                                          "objectiveEmbedding": [1.0, 0.0]})
    assert registered["sequence"] == 3 and registered["objectiveDimensions"] == 2
    away = [{**call("b", {"i": i}), "embedding": [0.0, 1.0]} for i in range(5)]
    answer = steps(runs, who, "r", away)
    assert answer["signals"]["drift_score"] == 1.0
    assert "drift" in {f["rule"] for f in answer["findings"]}
    unknown = steps(runs, who, "other", away)  # never registered: drift unknown
    assert unknown["signals"]["drift_score"] == -1


def test_an_unknown_agent_or_run_is_not_found(client):
    runs, _ = service(client)
    who = tenant()
    for run, agent in (("nothing", "ari"), ("r", "bob")):
        with pytest.raises(LoopsenseError) as caught:
            runs.signal(who, run, agent)
        assert caught.value.code == "RUN_AGENT_NOT_FOUND"


def test_tenants_never_see_each_others_runs(client):
    runs, _ = service(client)
    owner, other = tenant(), tenant()
    steps(runs, owner, "shared-name", [call("x", {})] * 6)
    with pytest.raises(LoopsenseError) as caught:
        runs.signal(other, "shared-name", "ari")
    assert caught.value.code == "RUN_AGENT_NOT_FOUND"
    assert steps(runs, other, "shared-name", [call("x", {})])["sequence"] == 1
    assert state_of(runs, owner, "shared-name")["next"] == 6


# ---- reset and config -----------------------------------------------------------------------


def test_reset_starts_the_signals_afresh_and_keeps_counting_steps(client):
    runs, _ = service(client)
    who = tenant()
    steps(runs, who, "r", [call("x", {})] * 6)
    steps(runs, who, "r", [call("y", {}, agent="bob")] * 4)
    assert runs.reset(who, "r", {"agentId": "ari"}) == {
        "runId": "r", "reset": [{"agentId": "ari", "segmentStart": 6}]}
    assert runs.signal(who, "r", "ari")["signal"]["findings"] == []
    assert runs.signal(who, "r", "bob")["signal"]["is_looping"]
    everyone = runs.reset(who, "r", None)
    assert [a["agentId"] for a in everyone["reset"]] == ["ari", "bob"]
    assert runs.signal(who, "r", "bob")["signal"]["findings"] == []
    assert steps(runs, who, "r", [call("x", {})])["firstIndex"] == 6
    with pytest.raises(LoopsenseError) as caught:
        runs.reset(who, "r", {"agentId": "nobody"})
    assert caught.value.code == "RUN_AGENT_NOT_FOUND"


def test_the_run_config_applies_from_the_next_step_and_is_checked_like_the_skills(client):
    runs, _ = service(client)
    who = tenant()
    steps(runs, who, "r", [call("poll", {})] * 4)
    assert runs.signal(who, "r", "ari")["signal"]["is_looping"]
    runs.set_config(who, "r", {"repeat_warn": 10, "repeat_critical": 12,
                               "disabled_rules": ["novelty"]})
    assert steps(runs, who, "r", [call("poll", {})])["findings"] == []
    for bad, path in (({"repeat_warn": 1}, "config.repeat_warn"),
                      ({"nonsense": 1}, "config"),
                      ({"disabled_rules": ["nope"]}, "config.disabled_rules"),
                      ({"objective_embedding": [1.0]}, "config.objective_embedding"),
                      ([], "config")):
        with pytest.raises(LoopsenseError) as caught:
            runs.set_config(who, "r", bad)
        assert caught.value.code == "VALIDATION_ERROR"
        assert caught.value.details[0].path == path
        assert "nonsense" not in caught.value.message


# ---- who may, and what it costs --------------------------------------------------------------


def test_the_hobby_plan_and_a_key_without_the_grant_are_refused(client):
    runs, _ = service(client)
    with pytest.raises(LoopsenseError) as caught:
        steps(runs, tenant("hobby"), "r", [call("x", {})])
    assert caught.value.code == "SKILL_NOT_AVAILABLE_FOR_PLAN"
    assert "team and enterprise" in caught.value.message
    scoped = Identity("t-scoped", "key_2", "team", ("agent.loop_detect",), {})
    with pytest.raises(LoopsenseError) as caught:
        runs.signal(scoped, "r", "ari")
    assert caught.value.code == "SKILL_NOT_ACCESSIBLE"


def test_a_batch_is_charged_one_credit_and_leaves_a_usage_record(client):
    runs, _ = service(client)
    who = tenant()
    steps(runs, who, "r", [call("x", {"i": i}) for i in range(10)])
    runs.steps(who, "r", call("x", {}), b"{}", None)
    runs.signal(who, "r", "ari")  # reads are free
    period = START.strftime("%Y-%m")
    assert runs.metering.used(who.tenant_id, period) == 2
    records = runs.metering.records(who.tenant_id, period)
    assert [(r.skill_key, r.credits) for r in records] == [("runs.steps", 1)] * 2


def test_rate_limit_and_quota_refuse_the_batch_and_write_nothing(client):
    clock = Clock()
    runs, _ = service(client, clock)
    runs.plans.accounts.set_plan(Plan("tight", 2, 2, ("*",), 600_000))
    who = tenant("tight")
    steps(runs, who, "r", [call("x", {})])
    steps(runs, who, "r", [call("x", {})])
    with pytest.raises(LoopsenseError) as caught:  # a third request in the same second
        steps(runs, who, "r", [call("x", {})])
    assert caught.value.code == "TENANT_RATE_LIMITED"
    clock.now += timedelta(seconds=1)
    with pytest.raises(LoopsenseError) as caught:  # 2 credits a month, both used
        steps(runs, who, "r", [call("x", {})])
    assert caught.value.code == "QUOTA_EXCEEDED" and caught.value.retry_after_seconds()
    assert state_of(runs, who, "r")["next"] == 2


# ---- concurrency and retries ---------------------------------------------------------------


def test_concurrent_batches_of_one_agent_lose_and_double_count_nothing(racing):
    runs, _ = service(racing)
    who = tenant()
    threads, batches, size = 8, 4, 5
    rng = random.Random(13)
    sent: dict[str, list[dict[str, Any]]] = {}
    answers: dict[str, dict[str, Any]] = {}
    lock = threading.Lock()

    def sender(thread: int) -> None:
        for b in range(batches):
            batch = [call(rng.choice("abc"), {"t": thread, "i": rng.randrange(3)},
                          rng.randrange(2)) for _ in range(size)]
            key = f"t{thread}-b{b}"
            with lock:
                sent[key] = batch
            for _ in range(20):  # what a careful client does on a retryable conflict
                try:
                    answer = steps(runs, who, "busy", batch, key)
                    break
                except LoopsenseError as error:
                    assert error.code == "RUN_WRITE_CONFLICT"
            with lock:
                answers[key] = answer

    all_at_once([lambda t=t: sender(t) for t in range(threads)])
    total = threads * batches * size
    final = state_of(runs, who, "busy")
    assert final["next"] == total
    order = sorted(answers, key=lambda k: answers[k]["firstIndex"])
    assert [answers[k]["firstIndex"] for k in order] == list(range(0, total, size))
    replayed = [s for k in order for s in sent[k]]
    assert final == sequential(replayed, runs, who)
    assert runs.metering.used(who.tenant_id, START.strftime("%Y-%m")) == threads * batches


def test_a_retried_batch_is_applied_once_and_answered_the_same(client):
    runs, _ = service(client)
    who = tenant()
    batch = [call("x", {"i": i}) for i in range(3)]
    first = steps(runs, who, "r", batch, key="retry-1")
    again = steps(runs, who, "r", batch, key="retry-1")
    assert again == first
    assert state_of(runs, who, "r")["next"] == 3
    assert runs.metering.used(who.tenant_id, START.strftime("%Y-%m")) == 1
    with pytest.raises(LoopsenseError) as caught:
        steps(runs, who, "r", batch[:1], key="retry-1")
    assert caught.value.code == "IDEMPOTENCY_KEY_REUSED"
    assert steps(runs, who, "r", batch)["sequence"] == 6  # without a key: applied again


def test_duplicates_racing_with_one_key_are_applied_once(racing):
    runs, _ = service(racing)
    who = tenant()
    batch = [call("x", {"i": i}) for i in range(4)]
    answers = all_at_once([lambda: steps(runs, who, "race", batch, key="same")] * 6)
    assert all(a == answers[0] for a in answers)
    assert state_of(runs, who, "race")["next"] == 4
    assert runs.metering.used(who.tenant_id, START.strftime("%Y-%m")) == 1


def test_a_step_batch_costs_two_store_requests(client):
    runs, counting = service(client)
    who = tenant()
    runs.set_config(who, "r", {"repeat_warn": 5})
    steps(runs, who, "r", [call("x", {})])  # warms the plan cache
    for size in (1, 50):
        counting.calls.clear()
        steps(runs, who, "r", [call("x", {"i": i}) for i in range(size)], key=f"k{size}")
        assert counting.calls == ["batch_get_item", "transact_write_items"]


# ---- retention -----------------------------------------------------------------------------


def raw_items(runs: Runs, who: Identity, run: str) -> list[dict[str, Any]]:
    return runs.store.db.query(runs.store.table, KeyConditionExpression="pk = :pk",
                               ExpressionAttributeValues={":pk": {"S": f"{who.tenant_id}#{run}"}})


def test_every_item_expires_retention_days_after_the_runs_last_write(client):
    clock = Clock()
    runs, _ = service(client, clock)
    who = tenant(run_retention_days=3)
    runs.set_config(who, "r", {"repeat_warn": 5})
    clock.now += timedelta(days=2)
    answer = steps(runs, who, "r", [call("x", {})])
    expected = int(clock.now.timestamp()) + 3 * DAY_S
    assert answer["retention"] == {"days": 3, "expiresAt": "2026-12-05T12:00:00.000Z"}
    items = raw_items(runs, who, "r")
    assert sorted(i["sk"] for i in items) == ["AGENT#ari", "CALLS", "CONFIG"]
    # the config and the run's view of its calls live on with the run
    assert {i["expiresAt"] for i in items} == {expected}


def test_an_expired_agent_reads_as_absent_and_starts_afresh(client):
    clock = Clock()
    runs, _ = service(client, clock)
    who = tenant()
    steps(runs, who, "r", [call("x", {})] * 6)
    clock.now += timedelta(days=14, seconds=1)  # TTL deletes lazily: the item is still there
    with pytest.raises(LoopsenseError) as caught:
        runs.signal(who, "r", "ari")
    assert caught.value.code == "RUN_AGENT_NOT_FOUND"
    answer = steps(runs, who, "r", [call("x", {})])
    assert answer["sequence"] == 1 and answer["findings"] == []


def test_an_expired_config_is_neither_applied_nor_brought_back(client):
    clock = Clock()
    runs, _ = service(client, clock)
    who = tenant()
    runs.set_config(who, "r", {"repeat_warn": 2})
    config_expiry = int(clock.now.timestamp()) + 14 * DAY_S
    clock.now += timedelta(days=15)
    answer = steps(runs, who, "r", [call("x", {})] * 3)
    assert answer["findings"] == []  # the default repeat_warn (4) applies again
    config = [i for i in raw_items(runs, who, "r") if i["sk"] == "CONFIG"]
    assert config[0]["expiresAt"] == config_expiry


# ---- monitor off, bad input ------------------------------------------------------------------


def test_with_the_monitor_off_steps_are_answered_but_not_stored_or_charged(client):
    runs, _ = service(client)
    off = tenant(monitor_disabled=True)
    answer = steps(runs, off, "r", [call("x", {})] * 3)
    assert answer == {"runId": "r", "agentId": "ari", "accepted": 3, "monitor_disabled": True}
    assert runs.signal(off, "r", "ari") == {"runId": "r", "agentId": "ari",
                                            "monitor_disabled": True, "signal": None}
    assert raw_items(runs, off, "r") == []
    assert runs.metering.used(off.tenant_id, START.strftime("%Y-%m")) == 0
    with pytest.raises(LoopsenseError):  # still validated
        steps(runs, off, "r", [{"kind": "tool_call", "agentId": "ari"}])


@pytest.mark.parametrize(("body", "path", "code"), [
    ({"steps": []}, "steps", "VALIDATION_ERROR"),
    ({"steps": [{"kind": "message"}]}, "steps.0.agentId", "RUN_BATCH_INVALID"),
    ({"steps": [{"kind": "tool_call", "agentId": "a"}]}, "steps.0.action", "RUN_BATCH_INVALID"),
    ({"steps": [{"kind": "message", "agentId": "a"}, {"kind": "message", "agentId": "b"}]},
     "steps.1.agentId", "RUN_BATCH_INVALID"),
    ({"steps": [{"kind": "message", "agentId": "a", "secret_field": 1}]}, "steps.0",
     "VALIDATION_ERROR"),
    ({"steps": [{"kind": "message", "agentId": "a"}] * 501}, "steps", "RUN_BATCH_INVALID"),
    ({"agentId": "a", "kind": "message", "embedding": [1.0, "x"]}, "steps.0.embedding.1",
     "VALIDATION_ERROR"),
])
def test_bad_steps_name_the_field_and_write_nothing(client, body, path, code):
    runs, _ = service(client)
    who = tenant()
    with pytest.raises(LoopsenseError) as caught:
        runs.steps(who, "r", body, json.dumps(body).encode(), None)
    assert (caught.value.code, caught.value.details[0].path) == (code, path)
    assert "secret_field" not in caught.value.message
    assert raw_items(runs, who, "r") == []


def test_a_state_past_the_item_limit_is_refused_whole(client):
    runs, _ = service(client)
    who = tenant()
    rng = random.Random(1)
    runs.set_config(who, "big", {"history_size": 1000})
    wide = [{"agentId": "ari", "kind": "message", "text": str(i),
             "embedding": [rng.random() for _ in range(4096)]} for i in range(40)]
    with pytest.raises(LoopsenseError) as caught:
        steps(runs, who, "big", wide)
    assert caught.value.code == "RUN_BATCH_INVALID" and str(MAX_STORED) in caught.value.message
    assert [i["sk"] for i in raw_items(runs, who, "big")] == ["CONFIG"]


def test_run_ids_are_checked(client):
    runs, _ = service(client)
    with pytest.raises(LoopsenseError) as caught:
        runs.signal(tenant(), "bad#id", "ari")
    assert caught.value.details[0].path == "runId"


# ---- moto: the same flow on DynamoDB's own semantics ------------------------------------------


def test_the_flow_on_moto():
    with mock_aws():
        config = Settings()
        create_tables(make_client(config), config)
        db = Dynamo(make_client(config))
        runs = Runs(RunStore(db, config.runs_table), Accounts(db, config), Metering(db, config),
                    Clock())
        who = tenant()
        runs.register(who, "r", {"agentId": "ari", "objectiveEmbedding": [1.0, 0.0]})
        runs.set_config(who, "r", {"repeat_critical": 5})
        first = steps(runs, who, "r", [call("x", {})] * 5, key="k")
        assert first["findings"][0]["severity"] == "critical"
        assert steps(runs, who, "r", [call("x", {})] * 5, key="k") == first
        assert runs.signal(who, "r", "ari")["sequence"] == 5
        assert runs.reset(who, "r", None)["reset"] == [{"agentId": "ari", "segmentStart": 5}]
        runs.plans.accounts.set_plan(Plan("team", 1, 50, ("*",), 600_000))
        runs.plans._plans.clear()
        with pytest.raises(LoopsenseError) as caught:
            steps(runs, who, "r", [call("x", {})])
        assert caught.value.code == "QUOTA_EXCEEDED"


# ---- faults ----------------------------------------------------------------------------------


class Failing(Counting):
    """Fails the first ``times`` transactions with ``error``."""

    def __init__(self, client: Any, error: Exception, times: int) -> None:
        super().__init__(client)
        self.error, self.times = error, times

    def __getattr__(self, name: str) -> Any:
        method = super().__getattr__(name)
        if name != "transact_write_items":
            return method

        def call(**kwargs: Any) -> Any:
            if self.times > 0:
                self.times -= 1
                raise self.error
            return method(**kwargs)

        return call


def with_client(runs: Runs, client: Any) -> Runs:
    db = Dynamo(client)
    return Runs(RunStore(db, CONFIG.runs_table), Accounts(db, CONFIG), Metering(db, CONFIG),
                runs.clock)


def test_a_store_that_is_down_answers_503_and_changes_nothing(client):
    from botocore.exceptions import EndpointConnectionError

    runs, _ = service(client)
    who = tenant()
    steps(runs, who, "r", [call("x", {})])
    down = with_client(runs, Failing(client, EndpointConnectionError(endpoint_url="x"), 1))
    with pytest.raises(LoopsenseError) as caught:
        steps(down, who, "r", [call("x", {})])
    assert caught.value.code == "PLAN_ELIGIBILITY_UNAVAILABLE"
    assert caught.value.retry_after_seconds()
    assert state_of(runs, who, "r")["next"] == 1


def test_a_transaction_conflict_is_a_lost_race_read_again(client):
    from botocore.exceptions import ClientError

    runs, _ = service(client)
    who = tenant()
    conflict = ClientError({"Error": {"Code": "TransactionCanceledException", "Message": "x"},
                            "CancellationReasons": [{"Code": "None"}] * 3 + [
                                {"Code": "TransactionConflict"}]}, "TransactWriteItems")
    flaky = with_client(runs, Failing(client, conflict, 2))
    assert steps(flaky, who, "r", [call("x", {})] * 2)["sequence"] == 2
    assert state_of(runs, who, "r")["next"] == 2
    assert runs.metering.used(who.tenant_id, START.strftime("%Y-%m")) == 1
    hopeless = with_client(runs, Failing(client, conflict, 100))
    with pytest.raises(LoopsenseError) as caught:
        steps(hopeless, who, "r", [call("x", {})])
    assert (caught.value.code, caught.value.status) == ("RUN_WRITE_CONFLICT", 409)
    assert state_of(runs, who, "r")["next"] == 2


def test_resetting_every_agent_is_one_transaction_and_one_request(client):
    clock = Clock()
    runs, counting = service(client, clock)
    runs.plans.accounts.set_plan(Plan("three", 1000, 3, ("*",), 600_000))
    who = tenant("three")
    names = [f"a{i}" for i in range(5)]
    for name in names:  # five requests, one a second
        steps(runs, who, "r", [call("x", {}, agent=name)])
        clock.now += timedelta(seconds=1)
    counting.calls.clear()
    answer = runs.reset(who, "r", None)  # one request of the three a second
    assert [a["agentId"] for a in answer["reset"]] == names
    assert [c for c in counting.calls if c != "get_item"] == ["query", "transact_write_items"]
    assert [state_of(runs, who, "r", n)["segmentStart"] for n in names] == [
        a["segmentStart"] for a in answer["reset"]]
    runs.reset(who, "r", None)
    runs.reset(who, "r", None)
    with pytest.raises(LoopsenseError) as caught:  # the fourth in the same second
        runs.reset(who, "r", None)
    assert caught.value.code == "TENANT_RATE_LIMITED"


def test_resetting_more_agents_than_one_transaction_takes_needs_an_agent_id(client):
    clock = Clock()
    runs, _ = service(client, clock)
    who = tenant()
    for i in range(MAX_BREAK_AGENTS + 1):
        steps(runs, who, "r", [call("x", {}, agent=f"a{i}")])
    before = state_of(runs, who, "r", "a0")
    with pytest.raises(LoopsenseError) as caught:
        runs.reset(who, "r", None)
    assert caught.value.code == "VALIDATION_ERROR"
    assert caught.value.details[0].path == "agentId"
    assert str(MAX_BREAK_AGENTS) in caught.value.details[0].issue
    assert state_of(runs, who, "r", "a0") == before
    assert runs.reset(who, "r", {"agentId": "a0"})["reset"][0]["agentId"] == "a0"


def test_a_listing_past_many_expired_runs_reads_a_bounded_number_and_goes_on_by_cursor(
        client, monkeypatch):
    """Expired runs linger in the byActivity index until TTL deletes them, each costing a Query
    to skip: a page stops at MAX_RUN_READS runs read, with a cursor that loses nothing."""
    monkeypatch.setattr(views, "MAX_RUN_READS", 2)
    clock = Clock()
    runs, counting = service(client, clock)
    lasting = tenant(run_retention_days=30)
    for run in ("old-1", "old-2"):
        steps(runs, lasting, run, [call("x", {})])
        clock.now += timedelta(seconds=1)
    brief = Identity(lasting.tenant_id, "key_1", "team", ("*",), {"run_retention_days": 1})
    for run in ("gone-1", "gone-2", "gone-3"):
        steps(runs, brief, run, [call("x", {})])
        clock.now += timedelta(seconds=1)
    clock.now += timedelta(days=2)  # the three newest have expired; TTL has not deleted them
    pages, cursor = [], None
    while True:
        counting.calls.clear()
        page = views.RunViews(runs).list(lasting, {"cursor": cursor} if cursor else {})
        assert counting.calls.count("query") <= 1 + 2  # the index page, two runs
        pages.append([item["runId"] for item in page["items"]])
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert pages == [[], ["old-2"], ["old-1"]]


def test_the_runs_view_of_calls_counts_every_agent_and_keeps_no_content(client):
    runs, counting = service(client)
    who = tenant()
    secret = {"path": "SECRET-7f3/notes.md"}
    for n, agent in enumerate(("m", "w1", "w2", "m")):
        counting.calls.clear()
        body = {"steps": [{**call("fetch", secret, {"text": "SECRET-7f3"}), "agentId": agent}]}
        raw = json.dumps(body).encode()
        answer = runs.steps(who, "r", json.loads(raw), raw, None)
        if n:  # the first also reads the plan (then cached)
            assert counting.calls == ["batch_get_item", "transact_write_items"]
        rules = [f["rule"] for f in answer["findings"]]
        assert rules == (["run_repeated_call"] if n >= 2 else [])
    item = next(i for i in raw_items(runs, who, "r") if i["sk"] == "CALLS")
    view = decode(bytes(item["body"].value))
    assert [kept[0] for kept in view["calls"].values()] == [4]
    assert b"SECRET" not in json.dumps(view).encode() and len(view["calls"]) == 1

