"""Skill agent.loop_detect v1.0.0: the earliest block of actions repeated back to back.

See spec/loop_detect.md. The schema is strict (unknown fields, wrong types and numeric strings
are VALIDATION_ERROR); the run-time limits below get the skill's own codes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, NotRequired

from pydantic import BaseModel, Field, PrivateAttr, with_config
from typing_extensions import TypedDict

from loopsense.core.cycles import find_cycle
from loopsense.errors import validation_error
from loopsense.skills.limits import check_input_size, objects_input_size
from loopsense.validation import STRICT, validate

MIN_EVENTS = 2
MAX_EVENTS = 5_000
SCHEMA_MAX_EVENTS = 10_001
MAX_INPUT_BYTES = 2 * 1024 * 1024
SIMILARITIES = ("EXACT", "ACTION_TARGET")
WINDOW = (2, 20, 200)  # least, default, most
REPEATS = (2, 3, 20)

INVALID = "LOOP_EVENTS_INVALID"
LIMIT = "LOOP_EVENT_LIMIT_EXCEEDED"

@with_config(STRICT)
class LoopDetectEvent(TypedDict):
    """Validated as plain dicts: twice as fast as 5,000 model instances (benchmarks/)."""

    action: str
    target: NotRequired[str | None]
    stateFingerprint: NotRequired[str | None]
    outcome: NotRequired[str | None]


class LoopDetectInput(BaseModel):
    model_config = STRICT
    events: list[LoopDetectEvent] = Field(min_length=1, max_length=SCHEMA_MAX_EVENTS)
    window: int = Field(WINDOW[1], ge=WINDOW[0], le=WINDOW[2])
    repeatThreshold: int = Field(REPEATS[1], ge=REPEATS[0], le=REPEATS[2])
    # Any string passes the model; one outside SIMILARITIES is LOOP_EVENTS_INVALID (the
    # document lists them).
    similarity: Annotated[str, Field(json_schema_extra={"enum": list(SIMILARITIES)})] = "EXACT"
    # The EXACT keys, when parse() read the events without pydantic (they come with the check).
    _exact_keys: list[tuple[str | None, ...]] | None = PrivateAttr(None)


class LoopDetectSpan(BaseModel):
    start: int
    end: int
    cycleLength: int
    repeats: int


class LoopDetectOutput(BaseModel):
    loopDetected: bool
    similarity: Literal["EXACT", "ACTION_TARGET"]
    window: int
    repeatThreshold: int
    cycleLength: int
    confidence: Literal["NONE", "MEDIUM", "HIGH"]
    eventIndices: list[int]
    spans: list[LoopDetectSpan]


def parse(raw: Any) -> LoopDetectInput:
    fast = _read_plain(raw)
    if fast is None:
        check_input_size(raw, MAX_INPUT_BYTES, LIMIT)
        parsed = validate(LoopDetectInput, raw)
    else:
        parsed, measure = fast
        check_input_size(raw, MAX_INPUT_BYTES, LIMIT, measure)
    if len(parsed.events) < MIN_EVENTS:
        raise validation_error("input.events", f"must have at least {MIN_EVENTS} events", INVALID)
    if len(parsed.events) > MAX_EVENTS:
        raise validation_error("input.events", f"must have at most {MAX_EVENTS} events", LIMIT)
    if parsed.similarity not in SIMILARITIES:
        raise validation_error("input.similarity", "must be EXACT or ACTION_TARGET", INVALID)
    return parsed


_FIELDS = frozenset(LoopDetectInput.model_fields)
_OPTIONAL = ("target", "stateFingerprint", "outcome")
_TEXT = {str, type(None)}


def _read_plain(raw: Any) -> tuple[LoopDetectInput, Any] | None:
    """An input already in the schema's shape read without pydantic, with a faster measure of
    its size: the events' types checked column by column in C loops, their EXACT keys built on
    the way. Only what the schema surely accepts passes, and no explicit null (it cannot be told
    from a missing key by counting); anything else is None: pydantic then decides, and names
    what is wrong (tests/unit/test_loop_detect_skill.py holds the two ways to the same answer)."""
    if type(raw) is not dict or not raw.keys() <= _FIELDS:
        return None
    events, window = raw.get("events"), raw.get("window", WINDOW[1])
    threshold, similarity = raw.get("repeatThreshold", REPEATS[1]), raw.get("similarity", "")
    if (type(events) is not list or not 1 <= len(events) <= SCHEMA_MAX_EVENTS
            or type(window) is not int or not WINDOW[0] <= window <= WINDOW[2]
            or type(threshold) is not int or not REPEATS[0] <= threshold <= REPEATS[2]
            or type(similarity) is not str or set(map(type, events)) != {dict}):
        return None
    try:
        keys: list[tuple[str | None, ...]] = [
            (e["action"], e.get("target"), e.get("stateFingerprint"), e.get("outcome"))
            for e in events]
    except KeyError:
        return None
    actions, *optional = zip(*keys, strict=True)
    if set(map(type, actions)) != {str}:
        return None
    counts = {"action": len(events)}
    texts = ["".join(actions)]
    for name, column in zip(_OPTIONAL, optional, strict=True):
        types = set(map(type, column))
        if not types <= _TEXT:
            return None
        absent = column.count(None) if type(None) in types else 0  # counting compares: slow
        counts[name] = len(column) - absent
        texts.append("".join(filter(None, column)) if absent else "".join(column))
    # Each event has its action, the optional fields it holds and any unknown ones: the total
    # is the count of strings only if no event has an unknown field or a null.
    if sum(map(len, events)) != sum(counts.values()):
        return None
    parsed = LoopDetectInput.model_construct(**raw)
    parsed._exact_keys = keys
    values = "".join(texts)
    return parsed, lambda raw: objects_input_size(raw, "events", counts, values)


def _keys(parsed: LoopDetectInput) -> list[tuple[str | None, ...]]:
    if parsed.similarity == "ACTION_TARGET":
        return [(e["action"], e.get("target")) for e in parsed.events]
    if parsed._exact_keys is not None:
        return parsed._exact_keys
    return [(e["action"], e.get("target"), e.get("stateFingerprint"), e.get("outcome"))
            for e in parsed.events]


def detect(parsed: LoopDetectInput) -> LoopDetectOutput:
    span = find_cycle(_keys(parsed), parsed.window, parsed.repeatThreshold)
    applied = LoopDetectOutput(
        loopDetected=False, similarity=parsed.similarity,  # type: ignore[arg-type]  # checked
        window=parsed.window, repeatThreshold=parsed.repeatThreshold,
        cycleLength=0, confidence="NONE", eventIndices=[], spans=[],
    )
    if span is None:
        return applied
    high = span.repeats >= 2 * parsed.repeatThreshold
    return applied.model_copy(update={
        "loopDetected": True,
        "cycleLength": span.cycle_length,
        "confidence": "HIGH" if high else "MEDIUM",
        "eventIndices": list(range(span.start, span.end + 1)),
        "spans": [LoopDetectSpan(start=span.start, end=span.end, cycleLength=span.cycle_length,
                          repeats=span.repeats)],
    })


def run(raw: Any, tenant_thresholds: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Validate ``input`` and search it; raises LoopsenseError on bad input.

    loop_detect's parameters are per call only; ``tenant_thresholds`` is the skills' uniform
    signature (skills/thresholds.py).
    """
    return detect(parse(raw)).model_dump()
