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
    "RunFinding",
    "RunMonitorConfig",
    "RunMonitorInput",
    "RunMonitorOutput",
    "RunRecommendation",
    "RunRule",
    "RunSignal",
    "RunStep",
    "RunTimelineEntry",
    "RunTimelineFinding",
    "RunToolPolicy",
    "SemanticLoopGroup",
    "SemanticLoopInput",
    "SemanticLoopOutput",
    "SemanticLoopThresholds",
    "SkillKey",
    "TelemetryEvent",
]

SkillKey = Literal["agent.loop_detect", "agent.semantic_loop", "agent.loops", "agent.run_monitor"]

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


# ---- agent.run_monitor (and the runs API, which answers with the same signal) -----------------
RunRule = Literal["repeated_call", "cycle", "error_streak", "monologue", "content_loop",
                  "repeated_query", "stagnation", "condensation_loop", "drift", "novelty"]


class RunStep(TypedDict, total=False):
    """One step of an agent's run. No other fields (the runs API requires ``agentId``)."""

    kind: Required[str]  # "tool_call", "llm_call", "message", "user_message", "thought", ...
    agentId: str  # one agent per call
    action: str  # the tool's name: required for a tool_call
    args: Any
    result: Any  # only its canonical hash is used
    outcome: Literal["positive", "negative", "neutral", "error"] | None
    model: str
    text: str
    metadata: Any  # a checkpoint's state
    embedding: list[float]  # 1..4,096, the same length in every step


class RunToolPolicy(TypedDict, total=False):
    exempt: bool  # never counted
    poll: bool  # always polling: warning at poll_warn, never critical
    repeat_warn: int
    repeat_critical: int
    poll_warn: int
    ignore_keys: list[str]  # this tool's own volatile keys


class RunMonitorConfig(TypedDict, total=False):
    """Overrides the tenant's settings (docs/skills/run_monitor.md, config: bounds there)."""

    repeat_warn: int
    repeat_critical: int
    poll_warn: int
    cycle_window: int
    cycle_repeats: int
    error_streak: int
    monologue_limit: int
    content_chunk_chars: int
    content_repeats: int
    stagnation_threshold: int
    condensation_limit: int
    drift_threshold: float
    novelty_window: int
    novelty_floor: float
    history_size: int
    nudges_before_break: int
    tools: dict[str, RunToolPolicy]  # up to 256 tools
    disabled_rules: list[RunRule]
    reset_on_user_message: bool
    ignore_keys: list[str]  # up to 64
    objective_embedding: list[float]  # stateless only: the runs API registers it per agent


class RunMonitorInput(TypedDict, total=False):
    steps: Required[list[RunStep]]  # 1..5,000, at most 2 MiB
    config: RunMonitorConfig | None


class RunFinding(TypedDict):
    rule: RunRule
    severity: Literal["warning", "critical"]
    count: int
    rationale: str
    stepIndices: list[int]


class RunRecommendation(TypedDict):
    action: Literal["continue", "nudge", "break"]
    nudge: NotRequired[str]  # nudge and break: the text to inject


class RunSignal(TypedDict):
    """The monitor's verdict: agent.run_monitor's output holds it, the runs API's ``signal``
    answers it."""

    is_looping: bool
    is_stuck: bool
    is_drifting: bool
    is_novelty_starved: bool
    loop_score: float  # 0..1
    drift_score: float  # 0..2, -1 when unknown
    novelty_score: float  # 0..1
    confidence: float  # 0..1
    source: Literal["rule"]
    rationale: str
    findings: list[RunFinding]
    recommendation: RunRecommendation


class RunTimelineFinding(TypedDict):
    rule: RunRule
    severity: Literal["warning", "critical"]


class RunTimelineEntry(TypedDict):
    index: int
    findings: list[RunTimelineFinding]
    action: Literal["continue", "nudge", "break"]


class RunMonitorOutput(RunSignal):
    steps: int
    segmentStart: int  # the first step of the current segment
    timeline: list[RunTimelineEntry]  # every step that had findings
