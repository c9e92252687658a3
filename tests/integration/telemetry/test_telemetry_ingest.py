"""Streaming ingestion on the embedded store (the engine `loopsense serve` runs): incremental
detectors find what the stateless skills find, each (execution, signature) is recorded once
under concurrent and retried batches, and a batch cut short by a crash is finished by its retry.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import partial
from typing import Any

import pytest

from loopsense.core.buckets import step_buckets_crossed
from loopsense.core.signatures import hash8
from loopsense.errors import LoopsenseError
from loopsense.platform.telemetry import tool_calls
from loopsense.platform.telemetry.failure_groups import FailureGroups
from loopsense.platform.telemetry.ingest import Ingestion
from loopsense.platform.telemetry.store import TelemetryStore
from loopsense.skills import loops, semantic_loop
from tests.concurrency import all_at_once

CAP = 3_600_000


@dataclass
class Stack:
    store: TelemetryStore
    ingestion: Ingestion
    groups: FailureGroups


@pytest.fixture(scope="module")
def stack(telemetry_store: TelemetryStore) -> Stack:
    store = telemetry_store
    return Stack(store, Ingestion(store, lambda plan: CAP), FailureGroups(store))


def _execution(rng: random.Random) -> list[dict[str, Any]]:
    """A random execution: repeated and drifting llm_calls, checkpoints, other events."""
    events: list[dict[str, Any]] = []
    start = 1_700_000_000_000
    for i in range(rng.randint(1, 140)):
        kind = rng.random()
        if kind < 0.45:
            event: dict[str, Any] = {"type": "llm_call", "model": rng.choice(["a", "b"])}
            if rng.random() < 0.5:
                event["user_message"] = rng.choice(["plan the trip", "Plan the trip ",
                                                    "what is 2+2"])
            else:
                event["user_message"] = f"retry search attempt {rng.randint(1, 9)} for paris"
        elif kind < 0.75:
            event = {"type": "checkpoint", "name": rng.choice(["p", "q"]),
                     "metadata": {"step": rng.randint(0, 3), "Plan": rng.choice([" A", "a"])}}
        else:
            event = {"type": rng.choice(["tool_call", "message"])}
            if event["type"] == "tool_call" and rng.random() < 0.7:  # the tool_calls class
                event.update(name=rng.choice(["search", "book"]),
                             arguments={"city": rng.choice(["Paris", "paris ", "Oslo"])})
        if rng.random() < 0.7:
            event["timestamp"] = start + i * rng.randint(100, 2_000)
        events.append(event)
    return events


def _batches(rng: random.Random, events: list[Any]) -> list[list[Any]]:
    cuts = sorted(rng.sample(range(1, len(events)), k=min(len(events) - 1, rng.randint(0, 6))))
    bounds = [0, *cuts, len(events)]
    return [events[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


def _stateless(events: list[Any], thresholds: dict[str, Any]) -> set[str]:
    found = {f["signature"] for f in loops.run({"events": events}, thresholds)["findings"]}
    found |= {g["signature"] for g in semantic_loop.run({"events": events}, thresholds)["groups"]}
    # The tool_calls class has no stateless skill: its rules over the whole execution (its own
    # cases are in tests/unit/telemetry/test_tool_calls.py).
    return found | set(tool_calls.signatures(events, thresholds))


@pytest.mark.parametrize("seed", range(40))
def test_streamed_findings_are_the_stateless_skills_findings(stack, seed):
    rng = random.Random(seed)
    events = _execution(rng)
    thresholds = {"step_count_threshold": rng.choice([2, 10, 30]),
                  "identical_call_min_repeats": rng.choice([2, 3]),
                  "revisit_threshold": rng.choice([2, 3, 5]),
                  "similar_call_min_cluster_size": rng.choice([2, 3]),
                  "time_budget_ms": rng.choice([1_000, 60_000])}
    tenant, execution = f"eq{seed}", f"x{seed}"
    fired: list[str] = []
    for batch in _batches(rng, events):
        fired += stack.ingestion.add(tenant, "team", thresholds, execution, {"events": batch},
                                     None)["fired"]
    fired += stack.ingestion.end(tenant, execution, None)["fired"]
    assert len(fired) == len(set(fired)), "a signature recorded twice"
    expected = _stateless(events, thresholds)
    # Streaming records every step bucket crossed; the stateless skill reports the last one.
    steps = {f"loops/step_count_{b}"
             for b in step_buckets_crossed(0, len(events), thresholds["step_count_threshold"])}
    assert set(fired) == (expected | steps)
    assert {s for s in expected if "step_count" in s} <= steps


def test_eight_concurrent_writers_with_retries_record_each_signature_once(stack):
    loop = [{"type": "llm_call", "model": "m", "user_message": "search flights"},
            {"type": "checkpoint", "name": "plan", "metadata": {"city": "Paris"}},
            {"type": "tool_call"}] * 40  # 120 events: step buckets 10+, 50+, 100+
    batches = [loop[i:i + 10] for i in range(0, len(loop), 10)]
    calls = []
    for number, batch in enumerate(batches):
        send = partial(stack.ingestion.add, "conc", "team", {}, "e1", {"events": batch},
                       f"batch-{number}")
        calls += [send] * (3 if number % 3 == 0 else 1)  # every third batch sent three times
    answers = all_at_once(calls)
    fired = [s for a in answers for s in a["fired"]]
    assert sorted(fired) == sorted(set(fired))
    state = stack.store.execution("conc", "e1")
    assert state is not None and state["events"] == len(loop)  # every batch counted once
    assert sorted({a["seq"] for a in answers}) == list(range(len(batches)))
    stack.ingestion.end("conc", "e1", None)
    items = stack.groups.list("conc", {})["items"]
    assert {g["signature"] for g in items} == set(fired) == (
        _stateless(loop, {}) | {"loops/step_count_10+", "loops/step_count_50+"})
    assert len(items) == 5 and all(g["executions"] == 1 for g in items)


def test_a_batch_cut_short_is_finished_by_its_retry(stack, monkeypatch):
    batch = {"events": [{"type": "llm_call", "model": "m", "user_message": "again"}] * 3}
    real_fire = stack.store.fire

    def crash(*args: Any, **kwargs: Any) -> bool:
        raise RuntimeError("killed")

    monkeypatch.setattr(stack.store, "fire", crash)
    with pytest.raises(RuntimeError):
        stack.ingestion.add("crash", "team", {}, "c1", batch, "only-key")
    monkeypatch.setattr(stack.store, "fire", real_fire)
    retried = stack.ingestion.add("crash", "team", {}, "c1", batch, "only-key")
    signature = f"loops/identical_call_{hash8('m', 'again')}"
    assert retried["duplicate"] is True and retried["fired"] == [signature]  # it finished it
    again = stack.ingestion.add("crash", "team", {}, "c1", batch, "only-key")
    assert again == {**retried, "fired": []}
    group = stack.groups.list("crash", {})["items"]
    assert [(g["signature"], g["executions"]) for g in group] == [(signature, 1)]
    assert stack.store.execution("crash", "c1")["events"] == 3  # type: ignore[index]


def test_seq_rules_ack_a_replayed_seq_and_refuse_a_gap(stack):
    one = {"events": [{"type": "tool_call"}], "seq": 0}
    assert stack.ingestion.add("seq", "team", {}, "s1", one, None)["duplicate"] is False
    assert stack.ingestion.add("seq", "team", {}, "s1", one, None)["duplicate"] is True
    with pytest.raises(LoopsenseError) as gap:
        stack.ingestion.add("seq", "team", {}, "s1", {"events": [{"type": "x"}], "seq": 2}, None)
    assert gap.value.code == "EXECUTION_BATCH_OUT_OF_ORDER" and gap.value.kind.retryable
    assert stack.store.execution("seq", "s1")["events"] == 1  # type: ignore[index]


def test_the_sweeper_ends_and_evaluates_an_idle_execution(stack):
    now = [1_800_000_000_000]
    ingestion = Ingestion(stack.store, lambda plan: CAP, clock=lambda: now[0])
    slow = [{"type": "llm_call", "model": "m", "user_message": f"retry {i} of the job"}
            for i in range(4)]
    ingestion.add("idle", "team", {"time_budget_ms": 1_000}, "i1",
                  {"events": [*slow[:2], {"type": "tool_call", "timestamp": 0},
                              {"type": "tool_call", "timestamp": 5_000}, *slow[2:]]}, None)
    ingestion.sweep()  # (other tests' executions are long idle at this clock)
    assert "endedAt" not in stack.store.execution("idle", "i1")  # type: ignore[operator]
    now[0] += 1_001
    assert ingestion.sweep() == 1
    assert stack.store.execution("idle", "i1")["evaluated"] is True  # type: ignore[index]
    signatures = {g["signature"] for g in FailureGroups(stack.store).list("idle", {})["items"]}
    assert "loops/time_budget_1s+" in signatures
    assert any(s.startswith("loops/similar_call_") for s in signatures)
    assert ingestion.sweep() == 0  # evaluated once
    with pytest.raises(LoopsenseError) as ended:
        ingestion.add("idle", "team", {}, "i1", {"events": [{"type": "x"}]}, None)
    assert ended.value.code == "EXECUTION_ENDED"
