"""Typed inputs and outputs of the v1 skills and of the other routes (loopsense_sdk.routes), as
they travel on the wire (camelCase kept). The runs API's answers are dataclasses of their own
(loopsense_sdk.runs) built from these.

TypedDicts: plain dicts at run time (``json.dumps`` them, index them), checked by mypy/pyright.
The contracts are docs/skills/*.md of the loopsense repository.
"""

from __future__ import annotations

from typing import Any, Generic, Literal, NotRequired, Required, TypedDict, TypeVar

__all__ = [
    "FailureGroupDay",
    "RunAgentView",
    "RunDetail",
    "RunPage",
    "RunSummary",
    "Usage",
    "UsageDay",
    "Billing",
    "DetectorThreshold",
    "DetectorThresholds",
    "DetectorThresholdsUpdate",
    "EventsAccepted",
    "ExecutionEnded",
    "FailureGroup",
    "FailureGroupDetail",
    "FailureGroupExecution",
    "FailureGroupPage",
    "Playbook",
    "Severity",
    "SeverityRouting",
    "TelemetrySettings",
    "TimeBudgetConfig",
    "ExecuteResponse",
    "FileOutput",
    "FileUpload",
    "LoopDetectEvent",
    "LoopDetectFileInput",
    "LoopDetectInput",
    "LoopDetectOutput",
    "LoopDetectSpan",
    "LoopsFileInput",
    "LoopsFinding",
    "LoopsInput",
    "LoopsOutput",
    "LoopsStats",
    "LoopsThresholds",
    "RunFinding",
    "RunMonitorConfig",
    "RunMonitorFileInput",
    "RunMonitorInput",
    "RunMonitorOutput",
    "RunRecommendation",
    "RunRule",
    "RunSignal",
    "RunStep",
    "RunTimelineEntry",
    "RunTimelineFinding",
    "RunToolPolicy",
    "SemanticLoopFileInput",
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


class LoopDetectParams(TypedDict, total=False):
    window: int  # 2..200, default 20
    repeatThreshold: int  # 2..20, default 3
    similarity: Literal["EXACT", "ACTION_TARGET"]  # default EXACT


class LoopDetectInput(LoopDetectParams, total=False):
    events: Required[list[LoopDetectEvent]]  # 2..5,000


class LoopDetectFileInput(LoopDetectParams, total=False):
    fileRef: Required[str]  # the events in a file: Client.upload's ref (docs/files.md)


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


class SemanticLoopParams(TypedDict, total=False):
    thresholds: SemanticLoopThresholds
    ignoreKeys: list[str]  # up to 64, matched after lowercasing, at any depth


class SemanticLoopInput(SemanticLoopParams, total=False):
    events: Required[list[TelemetryEvent]]  # 1..5,000


class SemanticLoopFileInput(SemanticLoopParams, total=False):
    fileRef: Required[str]  # the events in a file: Client.upload's ref


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


class LoopsParams(TypedDict, total=False):
    durationMs: int
    startedAt: str  # together with endedAt
    endedAt: str
    thresholds: LoopsThresholds


class LoopsInput(LoopsParams, total=False):
    events: Required[list[TelemetryEvent]]  # 1..10,000


class LoopsFileInput(LoopsParams, total=False):
    fileRef: Required[str]  # the events in a file: Client.upload's ref


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
                  "repeated_query", "stagnation", "condensation_loop", "drift", "novelty",
                  "similar_call", "same_result", "state_revisit", "run_repeated_call"]


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
    similar_warn: int
    similar_critical: int
    same_result_warn: int
    run_repeat_warn: int
    same_result: bool  # any result repeated to differing arguments counts (same_result)
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
    similar_warn: int
    similar_critical: int
    similar_args: float
    same_result_warn: int
    revisit_threshold: int
    run_repeat_warn: int
    monologue_similar: float
    monologue_run: int
    tools: dict[str, RunToolPolicy]  # up to 256 tools
    disabled_rules: list[RunRule]
    reset_on_user_message: bool
    reset_on_repeated_user_message: bool
    ignore_keys: list[str]  # up to 64
    objective_embedding: list[float]  # stateless only: the runs API registers it per agent


class RunMonitorParams(TypedDict, total=False):
    config: RunMonitorConfig | None


class RunMonitorInput(RunMonitorParams, total=False):
    steps: Required[list[RunStep]]  # 1..5,000, at most 2 MiB


class RunMonitorFileInput(RunMonitorParams, total=False):
    fileRef: Required[str]  # the steps in a file: Client.upload's ref


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


# ---- telemetry ingestion (POST /v1/executions/{executionId}/events, /end) ---------------------
class EventsAccepted(TypedDict):
    executionId: str
    seq: int
    accepted: int
    duplicate: bool  # the same batch (Idempotency-Key or seq) again: counted once
    fired: list[str]  # signatures this request recorded


class ExecutionEnded(TypedDict):
    executionId: str
    ended: bool
    alreadyEnded: bool
    fired: list[str]


# ---- failure groups (GET /v1/failure-groups, /v1/failure-groups/{signature}) ------------------
Severity = Literal["critical", "warning", "info"]

FailureGroup = TypedDict("FailureGroup", {
    "signature": str,  # "loops/identical_call_1f0c2a9e", "semantic_loop:97a932d8"
    "class": Literal["loops", "semantic_loop", "tool_calls"],
    "sub": str,
    "severity": Severity,  # the tenant's routing of the class, applied when read
    "executions": int,
    "firstSeen": str,
    "lastSeen": str,
    "playbook": str,  # GET /v1/playbooks/{playbook}
})


class FailureGroupPage(TypedDict):
    items: list[FailureGroup]  # newest lastSeen first
    nextCursor: str | None


class FailureGroupExecution(TypedDict):
    executionId: str
    firedAt: str


class Playbook(TypedDict):
    """GET /v1/playbooks/{name}."""

    name: str
    title: str
    markdown: str


class FailureGroupDetail(TypedDict):
    group: FailureGroup
    executions: list[FailureGroupExecution]  # the 20 most recent
    playbook: Playbook
    canonicalState: str | None  # semantic_loop: the revisited state while telemetry is kept
    timeline: list[FailureGroupDay]  # affected executions per day (UTC), oldest first


class FailureGroupDay(TypedDict):
    day: str  # "2026-12-01"
    executions: int


# ---- tenant settings --------------------------------------------------------------------------
class SeverityRouting(TypedDict, total=False):
    """GET/PUT /v1/severity-routing (a PUT takes any subset; the answer has every class)."""

    loops: Severity
    semantic_loop: Severity
    tool_calls: Severity


class TelemetrySettings(TypedDict, total=False):
    """GET/PUT /v1/telemetry-settings (a PUT takes any subset; the answer has both)."""

    telemetry_retention_days: int  # 1..365
    group_retention_days: int  # 1..730


class DetectorThreshold(TypedDict):
    value: int | float | bool  # what the detectors apply today
    default: int | float | bool
    min: int | float | bool
    max: int | float | bool  # time_budget_ms: the plan's cap
    type: Literal["integer", "number", "boolean"]
    configured: int | float | bool | None  # your own setting; None: the default applies
    used_by: str


class DetectorThresholds(TypedDict):
    """GET/PUT /v1/detector-thresholds: every threshold, in the table's order."""

    plan: str
    thresholds: dict[str, DetectorThreshold]


# A PUT /v1/detector-thresholds: any subset of the names GET lists (the telemetry detectors',
# the run monitor's, run_retention_days, monitor_disabled); None goes back to the default.
DetectorThresholdsUpdate = dict[str, int | float | bool | None]


class TimeBudgetConfig(TypedDict):
    """GET/PUT /v1/me/time-budget-config."""

    time_budget_ms: int  # applied: the configured or default value, clamped to the plan's cap
    max_time_budget_ms: int
    plan: str
    configured_time_budget_ms: int | None
    default_time_budget_ms: int
    clamped: bool


# ---- reading runs, usage (docs/runs.md "Reading runs", docs/dashboard.md) ---------------------
class RunAgentView(TypedDict):
    agentId: str
    role: str | None
    sequence: int  # steps applied
    segmentStart: int
    createdAt: str | None
    lastActivity: str | None
    # the merged verdict (GET .../signal's ``signal``; in a listing without its findings),
    # None while the monitor is off
    signal: dict[str, Any] | None
    recommendation: dict[str, Any] | None  # {"action": "continue" | "nudge" | "break", ...}


class RunSummary(TypedDict):
    runId: str
    lastActivity: str
    agents: list[RunAgentView]


class RunPage(TypedDict):
    """GET /v1/runs: live runs, newest activity first."""

    items: list[RunSummary]
    nextCursor: str | None


class RunDetail(TypedDict):
    """GET /v1/runs/{runId}: every live agent with its full signal (findings, rationale)."""

    runId: str
    lastActivity: str
    agents: list[RunAgentView]
    config: dict[str, Any] | None
    retention: dict[str, Any]


class UsageDay(TypedDict):
    day: str  # "2026-12-01" (UTC)
    calls: int  # charged calls
    bySkill: dict[str, int]


class UsageCredits(TypedDict):
    used: int
    quota: int


class FileOutput(TypedDict):
    """An execute ``output`` too large to inline (over the 6 MB a response may carry): GET
    ``downloadUrl`` before ``expiresAt`` for the output's JSON, ``bytes`` long. ``execute``
    fetches it for you; ``execute_any(..., fetch_output=False)`` hands it over as it is."""

    fileRef: str
    downloadUrl: str
    method: Literal["GET"]
    expiresAt: str
    bytes: int


class FileUpload(TypedDict):
    """POST /v1/files: a fileRef and where to PUT its bytes (JSON array or JSON Lines, at most
    ``maxBytes``) before ``expiresAt``; then ``execute(skill, {"fileRef": ...})``."""

    fileRef: str
    uploadUrl: str
    method: Literal["PUT"]
    expiresAt: str
    maxBytes: int


class Usage(TypedDict):
    """GET /v1/usage: this period's credits against the plan's, the last 30 days' calls."""

    plan: str
    period: str  # "2026-12"
    credits: UsageCredits
    days: list[UsageDay]  # oldest first, today last
