"""Skill agent.loops v1.0.0: step_count, identical_call, similar_call and time_budget.

See spec/loops.md and docs/skills/loops.md (the output shape, the vectorizer, the decisions).
The top-level input is strict (unknown fields, wrong types are VALIDATION_ERROR); events keep
any other fields the agent emits (ignored). An llm_call without a model or a user_message is
skipped and counted, not rejected: telemetry is best effort, and one half-written event must
not hide the other signatures.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, NotRequired

from pydantic import BaseModel, ConfigDict, Field, with_config
from typing_extensions import TypedDict

from loopsense.core.buckets import duration_bucket, step_bucket
from loopsense.core.instants import MAX_MS, MIN_MS, from_epoch_ms, parse_iso
from loopsense.core.signatures import hash8, template
from loopsense.errors import validation_error
from loopsense.platform.access.catalog import CATALOG
from loopsense.skills.limits import check_event_count, check_input_size
from loopsense.skills.thresholds import PLAN_CAP, effective
from loopsense.validation import ANSWER, STRICT, validate

MAX_EVENTS = 10_000
# 10,000 events of ~400-character messages are about 4.5 MiB; the router's Lambda payload
# limit is 6 MB. Measured on the input object as compact JSON, like every skill's size limit.
MAX_INPUT_BYTES = 5 * 1024 * 1024
MAX_EMBEDDING_DIMENSIONS = 8_192
MAX_DURATION_MS = 9_007_199_254_740_991  # 2**53 - 1: exact in every JSON implementation
LIMIT = "LOOPS_EVENT_LIMIT_EXCEEDED"

THRESHOLD_NAMES = tuple(CATALOG["agent.loops"].thresholds)  # the order of its output


FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]


@with_config(ConfigDict(extra="ignore", strict=True))
class LoopsEvent(TypedDict):
    """A telemetry event. Fields other than these are the agent's own and are ignored."""

    type: str
    timestamp: NotRequired[Any]  # ISO-8601 text or epoch ms; checked by _instant
    model: NotRequired[str | None]
    user_message: NotRequired[str | None]
    embedding: NotRequired[
        Annotated[list[FiniteFloat], Field(min_length=1, max_length=MAX_EMBEDDING_DIMENSIONS)]
        | None
    ]


@with_config(STRICT)
class LoopsThresholds(TypedDict, total=False):
    """Per-call overrides; values are checked by skills.thresholds (types and bounds)."""

    step_count_threshold: Any
    identical_call_min_repeats: Any
    similar_call_distance_threshold: Any
    similar_call_min_cluster_size: Any
    time_budget_ms: Any


class LoopsInput(BaseModel):
    model_config = STRICT
    events: list[LoopsEvent] = Field(min_length=1, max_length=MAX_EVENTS)
    durationMs: int | None = Field(None, ge=0, le=MAX_DURATION_MS)
    startedAt: str | None = Field(None, max_length=64)
    endedAt: str | None = Field(None, max_length=64)
    thresholds: LoopsThresholds | None = None


# The answer's shapes (docs/skills/loops.md): a finding carries the fields of its sub-signature.
Sub = Literal["step_count", "identical_call", "similar_call", "time_budget"]


@with_config(ANSWER)
class LoopsFinding(TypedDict):
    signature: str
    sub: Sub
    eventIndices: list[int]
    playbook: Sub
    count: NotRequired[int]  # step_count, identical_call, similar_call
    distinctMessages: NotRequired[int]  # similar_call
    durationMs: NotRequired[int]  # time_budget
    durationSource: NotRequired[Literal["durationMs", "startedAt/endedAt", "timestamps"]]


@with_config(ANSWER)
class LoopsStats(TypedDict):
    events: int
    llmCalls: int
    llmCallsSkipped: int
    vectors: Literal["embedding", "lexical"] | None
    embeddingsIgnored: str | None
    timestamps: int
    timestampsOutOfOrder: int
    durationMs: int | None
    durationSource: Literal["durationMs", "startedAt/endedAt", "timestamps"] | None
    timeBudgetEvaluated: bool
    timeBudgetNotEvaluatedReason: str | None


@with_config(ANSWER)
class LoopsAppliedThresholds(TypedDict):
    step_count_threshold: int
    identical_call_min_repeats: int
    similar_call_distance_threshold: float
    similar_call_min_cluster_size: int
    time_budget_ms: int


@with_config(ANSWER)
class LoopsOutput(TypedDict):
    fired: bool
    findings: list[LoopsFinding]
    stats: LoopsStats
    thresholds: LoopsAppliedThresholds


@dataclass(frozen=True, slots=True)
class Applied:
    step_count_threshold: int
    identical_call_min_repeats: int
    similar_call_distance_threshold: float
    similar_call_min_cluster_size: int
    time_budget_ms: int

    def as_dict(self) -> dict[str, int | float]:
        return {name: getattr(self, name) for name in THRESHOLD_NAMES}


@dataclass(frozen=True, slots=True)
class LlmCall:
    index: int  # in input.events
    model: str
    message: str
    embedding: list[float] | None


@dataclass(frozen=True, slots=True)
class Duration:
    ms: int | None
    source: str | None  # "durationMs", "startedAt/endedAt", "timestamps"
    span: tuple[int, int] | None  # event indices of the earliest and latest timestamps
    reason: str | None  # why there is no duration


# --------------------------------------------------------------------------------------------
# Input


def parse(raw: Any) -> LoopsInput:
    check_event_count(raw, MAX_EVENTS, LIMIT)
    check_input_size(raw, MAX_INPUT_BYTES, LIMIT)
    return validate(LoopsInput, raw)


def applied_thresholds(parsed: LoopsInput, tenant: Mapping[str, Any] | None) -> Applied:
    per_call = parsed.thresholds
    tenant = tenant or {}
    values = {name: effective(name, per_call, tenant) for name in THRESHOLD_NAMES}
    cap = tenant.get(PLAN_CAP)
    if isinstance(cap, int) and not isinstance(cap, bool) and values["time_budget_ms"] > cap:
        values["time_budget_ms"] = cap  # "capped by the plan" (spec/thresholds.md)
    return Applied(**values)


def _instant(value: Any, path: str) -> int:
    if isinstance(value, str):
        parsed = parse_iso(value)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        parsed = from_epoch_ms(value)
    else:
        parsed = None
    if parsed is None:
        raise validation_error(path, "must be an ISO-8601 date-time or epoch milliseconds "
                                     "(a number from year 1 to 9999)")
    return parsed


def _iso_instant(value: str, path: str) -> int:
    parsed = parse_iso(value)
    if parsed is None:
        raise validation_error(path, "must be an ISO-8601 date-time")
    return parsed


def duration(parsed: LoopsInput) -> tuple[Duration, int, int]:
    """The execution's duration (spec order: durationMs, endedAt - startedAt, the span of the
    event timestamps), the number of timestamps, and how many go back in time."""
    stamps: list[tuple[int, int]] = []
    for i, event in enumerate(parsed.events):
        value = event.get("timestamp")
        if type(value) is int and MIN_MS <= value <= MAX_MS:  # epoch ms as from_epoch_ms reads
            stamps.append((value, i))
        elif value is not None:
            stamps.append((_instant(value, f"input.events.{i}.timestamp"), i))
    backwards = sum(1 for (a, _), (b, _) in zip(stamps, stamps[1:], strict=False) if b < a)
    if (parsed.startedAt is None) != (parsed.endedAt is None):
        missing = "input.endedAt" if parsed.endedAt is None else "input.startedAt"
        raise validation_error(missing, "is required when the other of startedAt/endedAt "
                                        "is given")
    if parsed.startedAt is not None and parsed.endedAt is not None:
        started = _iso_instant(parsed.startedAt, "input.startedAt")
        ended = _iso_instant(parsed.endedAt, "input.endedAt")
        if ended < started:
            raise validation_error("input.endedAt", "must not be before input.startedAt")
    if parsed.durationMs is not None:
        return Duration(parsed.durationMs, "durationMs", None, None), len(stamps), backwards
    if parsed.startedAt is not None:
        return Duration(ended - started, "startedAt/endedAt", None, None), len(stamps), backwards
    if len(stamps) >= 2:
        first, last = min(stamps), max(stamps, key=lambda s: (s[0], -s[1]))
        return (Duration(last[0] - first[0], "timestamps", (first[1], last[1]), None),
                len(stamps), backwards)
    reason = ("no durationMs, no startedAt/endedAt, and fewer than two event timestamps")
    return Duration(None, None, None, reason), len(stamps), backwards


def llm_calls(parsed: LoopsInput) -> tuple[list[LlmCall], int, int]:
    """The llm_call events that can be evaluated, the number of llm_calls, and how many were
    skipped (no model or no user_message)."""
    calls: list[LlmCall] = []
    total = 0
    for i, event in enumerate(parsed.events):
        if event["type"] != "llm_call":
            continue
        total += 1
        model, message = event.get("model"), event.get("user_message")
        if model is None or message is None:
            continue
        calls.append(LlmCall(i, model, message, event.get("embedding")))
    return calls, total, total - len(calls)


# --------------------------------------------------------------------------------------------
# Sub-signatures


def finding(sub: str, suffix: str, **fields: Any) -> dict[str, Any]:
    return {"signature": f"loops/{sub}_{suffix}", "sub": sub, **fields, "playbook": sub}


def step_count(events: int, threshold: int) -> list[dict[str, Any]]:
    if events < threshold:
        return []
    return [finding("step_count", step_bucket(events), count=events,
                    eventIndices=[threshold - 1])]


def identical_call(calls: list[LlmCall], min_repeats: int) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str], list[int]] = {}
    for call in calls:
        groups.setdefault((call.model, call.message), []).append(call.index)
    return [finding("identical_call", hash8(model, message), count=len(indices),
                    eventIndices=indices)
            for (model, message), indices in groups.items() if len(indices) >= min_repeats]


def embeddings_usable(calls: list[LlmCall]) -> tuple[bool, str | None]:
    """Whether similar_call uses the client's embeddings, and if not while some were sent,
    why (spec: only when every llm_call has one, all of one dimension)."""
    sent = [c.embedding for c in calls if c.embedding is not None]
    if not sent:
        return False, None
    if len(sent) < len(calls):
        return False, "some llm_calls have no embedding"
    if len({len(e) for e in sent}) > 1:
        return False, "the embeddings do not all have the same dimension"
    return True, None


def similar_call(calls: list[LlmCall], threshold: float, min_size: int,
                 use_embeddings: bool) -> list[dict[str, Any]]:
    by_model: dict[str, list[LlmCall]] = {}
    for call in calls:
        by_model.setdefault(call.model, []).append(call)
    groups = [(model, group) for model, group in by_model.items() if len(group) >= min_size]
    if not groups:
        return []  # no model has enough calls for a cluster: numpy need not even be imported

    import numpy as np

    from loopsense.core.lexvec import vectorize
    from loopsense.core.similarity import similar_components

    found: list[dict[str, Any]] = []
    for model, group in groups:
        if use_embeddings:
            matrix = np.asarray([c.embedding for c in group], dtype=np.float64)
            norms = np.linalg.norm(matrix, axis=1)
            unit = np.zeros_like(matrix)
            np.divide(matrix, norms[:, None], out=unit, where=norms[:, None] > 0)
            labels = similar_components(unit.astype(np.float32), threshold)
            node_of: np.ndarray = np.arange(len(group))
        else:
            # Identical messages have identical vectors: vectorize each distinct message once
            # (idf counts distinct messages), then give every event its message's component.
            distinct: dict[str, int] = {}
            node_of = np.fromiter((distinct.setdefault(c.message, len(distinct)) for c in group),
                                  dtype=np.int64, count=len(group))
            labels = similar_components(vectorize(list(distinct)), threshold)
        event_label = labels[node_of]
        sizes = np.bincount(event_label, minlength=labels.size)
        # Events grouped by label once (stable: ascending within a label), not rescanned per label.
        by_label = np.argsort(event_label, kind="stable")
        ends = np.cumsum(sizes)
        for label in np.flatnonzero(sizes >= min_size).tolist():
            members = [group[i] for i in by_label[ends[label] - sizes[label]:ends[label]].tolist()]
            messages = {c.message for c in members}
            if len(messages) == 1:
                continue  # all identical: identical_call's finding, not ours
            found.append(finding("similar_call", hash8(model, template(members[0].message)),
                                 count=len(members), eventIndices=[c.index for c in members],
                                 distinctMessages=len(messages)))
    return found


def time_budget(span: Duration, budget_ms: int) -> list[dict[str, Any]]:
    if span.ms is None or span.ms <= budget_ms:
        return []
    indices = list(span.span) if span.span is not None else []
    return [finding("time_budget", duration_bucket(span.ms), durationMs=span.ms,
                    durationSource=span.source, eventIndices=indices)]


# --------------------------------------------------------------------------------------------
# The skill


def detect(parsed: LoopsInput, applied: Applied) -> dict[str, Any]:
    span, timestamps, backwards = duration(parsed)
    calls, llm_total, skipped = llm_calls(parsed)
    use_embeddings, ignored = embeddings_usable(calls)
    by_first = lambda f: f["eventIndices"][0]  # noqa: E731 - the one sort key
    findings = [
        *step_count(len(parsed.events), applied.step_count_threshold),
        *sorted(identical_call(calls, applied.identical_call_min_repeats), key=by_first),
        *sorted(similar_call(calls, applied.similar_call_distance_threshold,
                             applied.similar_call_min_cluster_size, use_embeddings),
                key=by_first),
        *time_budget(span, applied.time_budget_ms),
    ]
    return {
        "fired": bool(findings),
        "findings": findings,
        "stats": {
            "events": len(parsed.events),
            "llmCalls": llm_total,
            "llmCallsSkipped": skipped,
            "vectors": None if not calls else "embedding" if use_embeddings else "lexical",
            "embeddingsIgnored": ignored,
            "timestamps": timestamps,
            "timestampsOutOfOrder": backwards,
            "durationMs": span.ms,
            "durationSource": span.source,
            "timeBudgetEvaluated": span.ms is not None,
            "timeBudgetNotEvaluatedReason": span.reason,
        },
        "thresholds": applied.as_dict(),
    }


def run(raw: Any, tenant_thresholds: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Validate ``input`` and run the four sub-signatures; raises LoopsenseError on bad input.

    ``tenant_thresholds``: the tenant's threshold values by name (and optionally
    ``max_time_budget_ms``, the plan's cap), handed over by the router.
    """
    parsed = parse(raw)
    return detect(parsed, applied_thresholds(parsed, tenant_thresholds))

