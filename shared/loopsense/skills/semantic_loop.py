"""Skill agent.semantic_loop v1.0.0: the same checkpointed state revisited within one execution.

See spec/semantic_loop.md. Each checkpoint's ``metadata`` is put in the canonical form
(loopsense.core.canonical) and hashed with SHA-256; every hash shared by ``revisit_threshold``
or more checkpoints is a group, signature ``semantic_loop:<first 8 hex>``. Other event types
are skipped and counted. The answer holds indices, counts and hashes, never submitted content.

The input schema is strict (unknown fields in ``input`` and ``thresholds``, wrong types:
VALIDATION_ERROR). Events are telemetry events shared with other detectors, so an event may
carry fields this skill does not read (``timestamp``, a tool's arguments...); they are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, NotRequired

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, with_config
from typing_extensions import TypedDict

from loopsense.core.canonical import MAX_KEY_LENGTH, CanonicalError, canonical_hash, canonical_key
from loopsense.errors import validation_error
from loopsense.skills.limits import check_event_count, check_input_size
from loopsense.skills.thresholds import effective
from loopsense.validation import STRICT, validate

MIN_EVENTS = 1
MAX_EVENTS = 5_000
MAX_INPUT_BYTES = 2 * 1024 * 1024
MAX_IGNORE_KEYS = 64
CHECKPOINT = "checkpoint"
SIGNATURE_PREFIX = "semantic_loop:"

LIMIT = "SEMANTIC_LOOP_EVENT_LIMIT_EXCEEDED"



@with_config(ConfigDict(extra="allow", strict=True))
class SemanticLoopEvent(TypedDict):
    """A telemetry event. Checkpoints' ``name`` and ``metadata`` are checked in ``parse``: a
    field of the same name on another event type is not this skill's business."""

    type: str
    name: NotRequired[Any]  # a checkpoint's: a string
    metadata: NotRequired[Any]  # a checkpoint's state (absent: {})


@with_config(STRICT)
class SemanticLoopThresholds(TypedDict):
    # Any here: skills.thresholds.effective checks type and bounds, the same way for all skills.
    revisit_threshold: NotRequired[Any]


IgnoreKey = Annotated[str, StringConstraints(max_length=MAX_KEY_LENGTH)]


class SemanticLoopInput(BaseModel):
    model_config = STRICT
    events: list[SemanticLoopEvent] = Field(min_length=MIN_EVENTS)
    thresholds: SemanticLoopThresholds | None = None
    ignoreKeys: list[IgnoreKey] = Field(default_factory=list, max_length=MAX_IGNORE_KEYS)


class SemanticLoopGroup(BaseModel):
    signature: str
    hash: str
    count: int
    eventIndices: list[int]


class SemanticLoopOutput(BaseModel):
    fired: bool
    revisitThreshold: int
    checkpoints: int
    skipped: int
    groups: list[SemanticLoopGroup]


def parse(raw: Any) -> SemanticLoopInput:
    check_input_size(raw, MAX_INPUT_BYTES, LIMIT)
    check_event_count(raw, MAX_EVENTS, LIMIT)
    parsed = validate(SemanticLoopInput, raw)
    for index, event in enumerate(parsed.events):
        if event["type"] == CHECKPOINT:
            name = event.get("name")
            if name is not None and not isinstance(name, str):
                raise validation_error(f"input.events.{index}.name", "must be a string")
    return parsed


def detect(parsed: SemanticLoopInput,
           tenant_thresholds: Mapping[str, Any] | None = None) -> SemanticLoopOutput:
    threshold: int = effective("revisit_threshold", parsed.thresholds, tenant_thresholds)
    ignore = frozenset(canonical_key(k) for k in parsed.ignoreKeys)
    by_hash: dict[str, list[int]] = {}  # insertion order = order of first occurrence
    checkpoints = 0
    for index, event in enumerate(parsed.events):
        if event["type"] != CHECKPOINT:
            continue
        checkpoints += 1
        metadata: Any = event.get("metadata", {})  # absent hashes as {}; null is the value null
        try:
            digest = canonical_hash(metadata, ignore)
        except CanonicalError as exc:
            raise validation_error(f"input.events.{index}.metadata", exc.issue) from None
        by_hash.setdefault(digest, []).append(index)
    groups = [
        SemanticLoopGroup(signature=SIGNATURE_PREFIX + digest[:8], hash=digest, count=len(indices),
                 eventIndices=indices)
        for digest, indices in by_hash.items() if len(indices) >= threshold
    ]
    return SemanticLoopOutput(fired=bool(groups), revisitThreshold=threshold,
                              checkpoints=checkpoints, skipped=len(parsed.events) - checkpoints,
                              groups=groups)


def run(raw: Any, tenant_thresholds: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Validate ``input``, hash its checkpoints, group the revisits; raises LoopsenseError.

    ``revisit_threshold``: the call's ``thresholds`` > the tenant's setting > 3
    (skills/thresholds.py).
    """
    return detect(parse(raw), tenant_thresholds).model_dump()

