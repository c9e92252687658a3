"""Typed inputs and outputs of the v1 skills, as they travel on the wire (camelCase kept).

TypedDicts: plain dicts at run time (``json.dumps`` them, index them), checked by mypy/pyright.
The contracts are docs/skills/*.md of the loopsense repository.
"""

from __future__ import annotations

from typing import Any, Generic, Literal, NotRequired, Required, TypedDict, TypeVar

__all__ = [
    "Billing",
    "ExecuteResponse",
    "LoopDetectEvent",
    "LoopDetectInput",
    "LoopDetectOutput",
    "LoopDetectSpan",
    "LoopsFinding",
    "LoopsInput",
    "LoopsOutput",
    "LoopsStats",
    "LoopsThresholds",
    "SemanticLoopGroup",
    "SemanticLoopInput",
    "SemanticLoopOutput",
    "SemanticLoopThresholds",
    "SkillKey",
    "TelemetryEvent",
]

SkillKey = Literal["agent.loop_detect", "agent.semantic_loop", "agent.loops"]

OutputT = TypeVar("OutputT")


class Billing(TypedDict):
    credits: int


class ExecuteResponse(TypedDict, Generic[OutputT]):
    """The 200 answer of ``POST /v1/execute``; ``output`` is the skill's own object."""

    executionId: str
    skillKey: str
    skillVersion: str
    output: OutputT
    billing: Billing


# ---- agent.loop_detect ------------------------------------------------------------------------
class LoopDetectEvent(TypedDict, total=False):
    """One action; ``None`` is the same as absent, ``""`` is a value. No other fields."""

    action: Required[str]
    target: str | None
    stateFingerprint: str | None
    outcome: str | None


class LoopDetectInput(TypedDict, total=False):
    events: Required[list[LoopDetectEvent]]  # 2..5,000
    window: int  # 2..200, default 20
    repeatThreshold: int  # 2..20, default 3
    similarity: Literal["EXACT", "ACTION_TARGET"]  # default EXACT


class LoopDetectSpan(TypedDict):
    start: int
    end: int
    cycleLength: int
    repeats: int


class LoopDetectOutput(TypedDict):
    loopDetected: bool
    similarity: Literal["EXACT", "ACTION_TARGET"]
    window: int
    repeatThreshold: int
    cycleLength: int  # 0 when nothing is found
    confidence: Literal["HIGH", "MEDIUM", "NONE"]
    eventIndices: list[int]
    spans: list[LoopDetectSpan]


# ---- telemetry events (agent.semantic_loop, agent.loops) --------------------------------------
class TelemetryEvent(TypedDict, total=False):
    """A telemetry event shared by agent.semantic_loop (reads ``checkpoint`` events' ``metadata``)
    and agent.loops (reads ``llm_call`` events; every event counts as a step). Other fields are
    allowed by the server (a plain ``dict`` works everywhere a TelemetryEvent is accepted)."""

    type: Required[str]  # "checkpoint", "llm_call", "tool_call", your own
    name: str
    metadata: Any
    timestamp: str | int | float  # ISO-8601 or epoch milliseconds
    model: str | None
    user_message: str | None
    embedding: list[float]


# ---- agent.semantic_loop ----------------------------------------------------------------------
class SemanticLoopThresholds(TypedDict, total=False):
    revisit_threshold: int  # 2..1000, default 3


class SemanticLoopInput(TypedDict, total=False):
    events: Required[list[TelemetryEvent]]  # 1..5,000
    thresholds: SemanticLoopThresholds
    ignoreKeys: list[str]  # up to 64, matched after lowercasing, at any depth


class SemanticLoopGroup(TypedDict):
    signature: str  # "semantic_loop:<8 hex>" (semantic_signature(metadata) locally)
    hash: str  # 64 hex (canonical_hash(metadata) locally)
    count: int
    eventIndices: list[int]


class SemanticLoopOutput(TypedDict):
    fired: bool
    revisitThreshold: int
    checkpoints: int
    skipped: int
    groups: list[SemanticLoopGroup]


# ---- agent.loops ------------------------------------------------------------------------------
class LoopsThresholds(TypedDict, total=False):
    step_count_threshold: int  # 2..10,000, default 10
    identical_call_min_repeats: int  # 2..100, default 3
    similar_call_distance_threshold: float  # 0.05..0.50, default 0.20
    similar_call_min_cluster_size: int  # 2..100, default 3
    time_budget_ms: int  # 1,000..the plan's cap, default 60,000


class LoopsInput(TypedDict, total=False):
    events: Required[list[TelemetryEvent]]  # 1..10,000
    durationMs: int
    startedAt: str  # together with endedAt
    endedAt: str
    thresholds: LoopsThresholds


class LoopsFinding(TypedDict):
    signature: str  # "loops/identical_call_<8 hex>", "loops/step_count_10+", ...
    sub: Literal["step_count", "identical_call", "similar_call", "time_budget"]
    eventIndices: list[int]
    playbook: str  # GET /v1/playbooks/{playbook}
    count: NotRequired[int]  # step_count, identical_call, similar_call
    distinctMessages: NotRequired[int]  # similar_call
    durationMs: NotRequired[int]  # time_budget
    durationSource: NotRequired[str]  # time_budget


class LoopsStats(TypedDict):
    events: int
    llmCalls: int
    llmCallsSkipped: int
    vectors: Literal["lexical", "embedding"] | None
    embeddingsIgnored: str | None
    timestamps: int
    timestampsOutOfOrder: int
    durationMs: int | None
    durationSource: str | None
    timeBudgetEvaluated: bool
    timeBudgetNotEvaluatedReason: str | None


class LoopsOutput(TypedDict):
    fired: bool
    findings: list[LoopsFinding]
    stats: LoopsStats
    thresholds: LoopsThresholds
