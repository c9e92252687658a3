"""Streaming telemetry ingestion (spec/failure_groups.md, "Ingestion"): the rules.

A batch is checked whole before anything is written (a bad batch changes nothing). It then takes the
execution's next seq in one transaction with its events (platform/telemetry/store.py ``claim``), and
is applied: agent.loops' step_count and identical_call and agent.semantic_loop's checkpoint hashes
are per-execution counters, counted once per batch seq, and a signature fires when its counter
reaches the threshold, recorded once per (execution, signature). A retried batch (same
Idempotency-Key, or a seq already taken) re-applies its stored events, which counts nothing twice
and finishes what a crash left half done. similar_call and time_budget need the whole execution:
they are evaluated at ``end``, or by the sweeper once the execution has been idle for its time
budget, with agent.loops' own functions on the stored events, so they find what the stateless skill
finds.

An execution's thresholds are the tenant's when its first batch arrives, kept for its life: one
execution is judged by one set of values, however long it runs.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from loopsense import jsonio
from loopsense.core.buckets import step_buckets_crossed
from loopsense.core.canonical import CanonicalError, canonical_json
from loopsense.core.instants import DAY_S, stamp
from loopsense.core.signatures import hash8, pair_json
from loopsense.errors import LoopsenseError, validation_error
from loopsense.platform.access.gate import execution_thresholds
from loopsense.platform.access.idempotency import check_key, key_reused
from loopsense.platform.access.retry import until_written
from loopsense.platform.telemetry import tool_calls
from loopsense.platform.telemetry.store import (
    MAX_STORED_BATCH_BYTES,
    Fire,
    TelemetryStore,
    pack,
    unpack,
)
from loopsense.skills import loops
from loopsense.skills.semantic_loop import CHECKPOINT, SIGNATURE_PREFIX
from loopsense.store.dynamo import ConditionFailed
from loopsense.validation import SAFE_ID, STRICT, validate

MAX_BATCH_EVENTS = 500
MAX_SEQ = 2**31 - 1
EXECUTION_ID = SAFE_ID
INVALID = "EXECUTION_EVENTS_INVALID"
DEFAULT_TELEMETRY_DAYS = 14
DEFAULT_GROUP_DAYS = 90
# Counter writes of one batch in flight at once (boto3 clients are thread-safe).
COUNT_WORKERS = 8
SWEEP_BATCH = 25
SWEEP_ROUNDS = 40


class Batch(BaseModel):
    model_config = STRICT
    events: list[loops.LoopsEvent] = Field(min_length=1, max_length=MAX_BATCH_EVENTS)
    seq: int | None = Field(None, ge=0, le=MAX_SEQ)


class EndBody(BaseModel):
    model_config = STRICT
    durationMs: int | None = Field(None, ge=0, le=loops.MAX_DURATION_MS)


@dataclass
class Checked:
    """A valid batch: its events as sent, and what it adds to each counter."""

    events: list[dict[str, Any]]
    seq: int | None
    digest: str  # SHA-256 of the events as stored: a retried batch is the same batch
    identical: dict[str, tuple[int, str]] = field(default_factory=dict)  # sha -> (n, hash8)
    states: dict[str, tuple[int, str]] = field(default_factory=dict)  # sha -> (n, canonical)


def _invalid(error: LoopsenseError) -> LoopsenseError:
    return LoopsenseError(INVALID, error.message, error.details)


def check_execution_id(execution: str) -> str:
    if not EXECUTION_ID.fullmatch(execution):
        raise validation_error("executionId", "must be 1..128 of A-Z a-z 0-9 . _ : -")
    return execution


def check_batch(body: Any) -> Checked:
    """The batch, checked whole (EXECUTION_EVENTS_INVALID naming the field, or
    EXECUTION_EVENT_LIMIT_EXCEEDED over 500 events), and its counter increments."""
    events = body.get("events") if isinstance(body, dict) else None
    if isinstance(events, list) and len(events) > MAX_BATCH_EVENTS:
        raise validation_error("events", f"must have at most {MAX_BATCH_EVENTS} events",
                               "EXECUTION_EVENT_LIMIT_EXCEEDED")
    try:
        batch = validate(Batch, body, prefix="")
    except LoopsenseError as error:
        raise _invalid(error) from None
    raw: list[dict[str, Any]] = body["events"]
    checked = Checked(raw, batch.seq, "")
    for index, event in enumerate(raw):
        path = f"events.{index}"
        if event.get("timestamp") is not None:
            try:
                loops._instant(event["timestamp"], f"{path}.timestamp")
            except LoopsenseError as error:
                raise _invalid(error) from None
        if event["type"] == "llm_call":
            model, message = event.get("model"), event.get("user_message")
            if model is not None and message is not None:
                text = pair_json(model, message)
                key = hashlib.sha256(text.encode("utf-8")).hexdigest()
                count = checked.identical.get(key, (0, ""))[0]
                checked.identical[key] = (count + 1, hash8(model, message))
        elif event["type"] == CHECKPOINT:
            name = event.get("name")
            if name is not None and not isinstance(name, str):
                raise validation_error(f"{path}.name", "must be a string", INVALID)
            try:
                state = canonical_json(event.get("metadata", {}))
            except CanonicalError as exc:
                raise validation_error(f"{path}.metadata", exc.issue, INVALID) from None
            key = hashlib.sha256(state.encode("utf-8")).hexdigest()
            count = checked.states.get(key, (0, ""))[0]
            checked.states[key] = (count + 1, state)
    stored = jsonio.dumps(raw).encode("utf-8")
    checked.digest = hashlib.sha256(stored).hexdigest()
    if len(pack(raw)) > MAX_STORED_BATCH_BYTES:
        raise validation_error("events", f"must compress to at most {MAX_STORED_BATCH_BYTES} "
                                         "bytes (send smaller batches)", INVALID)
    return checked


@dataclass(frozen=True, slots=True)
class Retention:
    telemetry_days: int
    group_days: int

    @classmethod
    def of(cls, settings: dict[str, Any]) -> Retention:
        return cls(int(settings.get("telemetryRetentionDays", DEFAULT_TELEMETRY_DAYS)),
                   int(settings.get("groupRetentionDays", DEFAULT_GROUP_DAYS)))


def too_many_batches() -> LoopsenseError:
    return LoopsenseError("EXECUTION_BATCH_OUT_OF_ORDER",
                          "too many concurrent batches for this execution", retry_after=1)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class Ingestion:
    """Batches in, signatures recorded. ``plan_cap(plan)``: the plan's max time_budget_ms."""

    def __init__(self, store: TelemetryStore, plan_cap: Callable[[str], int],
                 clock: Callable[[], int] = _now_ms) -> None:
        self.store = store
        self.plan_cap = plan_cap
        self.clock = clock
        self._pool = ThreadPoolExecutor(COUNT_WORKERS, thread_name_prefix="telemetry-count")

    # ---- batches -----------------------------------------------------------------------------
    def add(self, tenant: str, plan: str, stored_thresholds: Any, execution: str, body: Any,
            idempotency_key: str | None) -> dict[str, Any]:
        check_execution_id(execution)
        key = check_key(idempotency_key)
        checked = check_batch(body)
        retention = Retention.of(self.store.settings(tenant))

        def attempt() -> dict[str, Any] | None:
            state = self.store.execution(tenant, execution)
            if key is not None:
                known = self.store.idempotency_key(tenant, execution, key)
                if known is not None:
                    if known["digest"] != checked.digest:
                        raise key_reused("batch")
                    return self._resume(tenant, execution, int(known["seq"]), state, retention)
            if state is not None and "endedAt" in state:
                raise LoopsenseError("EXECUTION_ENDED", "the execution has ended; it takes no "
                                                        "more events")
            next_seq = int(state["nextSeq"]) if state else 0
            if checked.seq is not None and checked.seq < next_seq:
                return self._resume(tenant, execution, checked.seq, state, retention)
            if checked.seq is not None and checked.seq > next_seq:
                raise LoopsenseError("EXECUTION_BATCH_OUT_OF_ORDER",
                                     f"seq: the next batch expected is seq {next_seq}",
                                     retry_after=1)
            if state is None:
                thresholds = execution_thresholds(tenant, stored_thresholds,
                                                  self.plan_cap(plan))
            else:
                thresholds = jsonio.loads(state["thresholds"])
            before = int(state["events"]) if state else 0
            now = self.clock()
            try:
                self.store.claim(
                    tenant, execution, next_seq, events=checked.events, digest=checked.digest,
                    total=before + len(checked.events), thresholds=jsonio.dumps(thresholds),
                    key=key, now_ms=now, idle_at=now + int(thresholds["time_budget_ms"]),
                    expires_at=now // 1000 + retention.telemetry_days * DAY_S)
            except ConditionFailed:
                return None  # another batch took this seq (or the execution ended): look again
            fired = self._apply(tenant, execution, next_seq, checked, before, thresholds,
                                retention, fresh=True)
            return {"executionId": execution, "seq": next_seq, "accepted": len(checked.events),
                    "duplicate": False, "fired": fired}

        return until_written(attempt, too_many_batches)

    def _resume(self, tenant: str, execution: str, seq: int, state: dict[str, Any] | None,
                retention: Retention) -> dict[str, Any]:
        """A batch seen before: acknowledged; if a crash left it half applied, finished."""
        stored = self.store.batch(tenant, execution, seq)
        if stored is None or state is None:  # its telemetry expired (TTL): nothing left to do
            return {"executionId": execution, "seq": seq, "accepted": 0, "duplicate": True,
                    "fired": []}
        fired: list[str] = []
        if not stored.get("applied"):  # cut short, or still being applied by the first request
            checked = check_batch({"events": unpack(stored["events"])})
            fired = self._apply(tenant, execution, seq, checked, int(stored["offset"]),
                                jsonio.loads(state["thresholds"]), retention, fresh=False)
        # ``fired``: what this request recorded, so every signature is reported by exactly one
        # request (the one whose record won), even when a retry finished the batch.
        return {"executionId": execution, "seq": seq, "accepted": int(stored["n"]),
                "duplicate": True, "fired": fired}

    def _apply(self, tenant: str, execution: str, seq: int, checked: Checked, before: int,
               thresholds: dict[str, Any], retention: Retention, fresh: bool) -> list[str]:
        now = self.clock()
        telemetry_exp = now // 1000 + retention.telemetry_days * DAY_S
        fires = [Fire(f"loops/step_count_{label}", "loops", "step_count")
                 for label in step_buckets_crossed(before, before + len(checked.events),
                                                   int(thresholds["step_count_threshold"]))]
        counted = [("i#" + sha, n, int(thresholds["identical_call_min_repeats"]),
                    Fire(f"loops/identical_call_{suffix}", "loops", "identical_call"))
                   for sha, (n, suffix) in sorted(checked.identical.items())]
        counted += [("s#" + sha, n, int(thresholds["revisit_threshold"]),
                     Fire(SIGNATURE_PREFIX + sha[:8], "semantic_loop", "semantic_loop", state))
                    for sha, (n, state) in sorted(checked.states.items())]
        # One write per distinct counter, independent of each other: sent concurrently (the
        # results come back in order, so the answer's order does not depend on timing).
        afters = self._pool.map(
            lambda c: self.store.count(tenant, execution, c[0], c[1], seq, telemetry_exp),
            counted)
        for (_, amount, threshold, fire), after in zip(counted, afters, strict=True):
            # Fresh: fire on crossing. A retry may find its ADD done already: fire if reached
            # (recording is idempotent, so a signature fired before stays recorded once).
            if after >= threshold and (not fresh or after - amount < threshold):
                fires.append(fire)
        fired = self._record(tenant, execution, fires, retention)
        self.store.mark_applied(tenant, execution, seq)
        return fired

    def _record(self, tenant: str, execution: str, fires: list[Fire],
                retention: Retention) -> list[str]:
        now = self.clock()
        recorded = []
        for fire in fires:
            if self.store.fire(tenant, execution, fire, stamp(now),
                               now // 1000 + retention.telemetry_days * DAY_S,
                               now // 1000 + retention.group_days * DAY_S):
                recorded.append(fire.signature)
        return recorded

    # ---- the end of an execution -------------------------------------------------------------
    def end(self, tenant: str, execution: str, body: Any) -> dict[str, Any]:
        check_execution_id(execution)
        parsed = validate(EndBody, {} if body is None else body, prefix="")
        try:
            self.store.end(tenant, execution, parsed.durationMs, self.clock())
            already = False
        except ConditionFailed:
            if self.store.execution(tenant, execution) is None:
                raise LoopsenseError("EXECUTION_NOT_FOUND", "no events were sent for this "
                                                            "executionId") from None
            already = True  # /end again: acknowledged; evaluated below if a crash stopped it
        return {"executionId": execution, "ended": True, "alreadyEnded": already,
                "fired": self.evaluate(tenant, execution)}

    def evaluate(self, tenant: str, execution: str) -> list[str]:
        """similar_call, time_budget and the tool-call rules over the whole (ended) execution,
        once."""
        state = self.store.execution(tenant, execution)
        if state is None or state.get("evaluated"):
            return []
        thresholds = jsonio.loads(state["thresholds"])
        applied = loops.Applied(**{n: thresholds[n] for n in loops.THRESHOLD_NAMES})
        # Every event was checked when its batch arrived: no need to validate them again.
        parsed = loops.LoopsInput.model_construct(
            events=self.store.events(tenant, execution), durationMs=state.get("durationMs"),
            startedAt=None, endedAt=None, thresholds=None)
        calls, _, _ = loops.llm_calls(parsed)
        use_embeddings, _ = loops.embeddings_usable(calls)
        span, _, _ = loops.duration(parsed)
        findings = [
            *loops.similar_call(calls, applied.similar_call_distance_threshold,
                                applied.similar_call_min_cluster_size, use_embeddings),
            *loops.time_budget(span, applied.time_budget_ms),
        ]
        fires = [Fire(f["signature"], "loops", f["sub"]) for f in findings]
        fires += [Fire(signature, tool_calls.CLASS, signature.split("/", 1)[1].rsplit("_", 1)[0])
                  for signature in tool_calls.signatures(parsed.events, thresholds)]
        fired = self._record(tenant, execution, fires, Retention.of(self.store.settings(tenant)))
        self.store.mark_evaluated(tenant, execution)
        return fired

    def sweep(self) -> int:
        """End and evaluate the executions idle past their time budget; how many. Pages of
        SWEEP_BATCH until none is left or SWEEP_ROUNDS pages are done (the next run goes on)."""
        done = 0
        for _ in range(SWEEP_ROUNDS):
            idle = self.store.idle(self.clock(), SWEEP_BATCH)
            for tenant, execution in idle:
                # ConditionFailed: ended by /end meanwhile, or earlier and its evaluation was
                # cut short; evaluating is what is left to do either way.
                with contextlib.suppress(ConditionFailed):
                    self.store.end(tenant, execution, None, self.clock())
                self.evaluate(tenant, execution)
            done += len(idle)
            if len(idle) < SWEEP_BATCH:
                break
        return done
