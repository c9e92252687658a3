"""The API's request and answer types, as they travel on the wire (camelCase kept):
generated from its OpenAPI document by `scripts/openapi` (loopsense_local.sdk_types)
in the loopsense repository; do not edit. TypedDicts: plain dicts at run time
(``json.dumps`` them, index them), checked by mypy/pyright. The runs API's answers are
also dataclasses of their own (loopsense_sdk.runs), built from these."""

# ruff: noqa: E501
from __future__ import annotations

from typing import Any, Generic, Literal, NotRequired, TypedDict, TypeVar

__all__ = [
    'AffectedExecution',
    'AgentReset',
    'AgentView',
    'Batch',
    'BatchAnswer',
    'Billing',
    'BreakAnswer',
    'BreakBody',
    'BreakSummary',
    'BriefingItem',
    'ConfigAnswer',
    'ContextAnswer',
    'ContextBody',
    'Credits',
    'DetectorThreshold',
    'DetectorThresholds',
    'DetectorThresholdsUpdate',
    'Empty',
    'EndAnswer',
    'EndBody',
    'EventsAccepted',
    'EventsPage',
    'ExecuteResponse',
    'ExecutionEnded',
    'FailureGroup',
    'FailureGroupDay',
    'FailureGroupDetail',
    'FailureGroupExecution',
    'FailureGroupPage',
    'FailureGroupView',
    'FailureGroupsPage',
    'FileInput',
    'FileOutput',
    'FileUpload',
    'Flagged',
    'GroupDay',
    'Lesson',
    'LessonAdded',
    'LessonBody',
    'LessonsPage',
    'ListedAgent',
    'LoopDetectEvent',
    'LoopDetectFileInput',
    'LoopDetectInput',
    'LoopDetectOutput',
    'LoopDetectSpan',
    'LoopsAppliedThresholds',
    'LoopsEvent',
    'LoopsFileInput',
    'LoopsFinding',
    'LoopsInput',
    'LoopsOutput',
    'LoopsStats',
    'LoopsThresholds',
    'MemoryDeleted',
    'MemoryEntry',
    'MemoryPage',
    'MemorySet',
    'MonitorConfig',
    'MonitorFinding',
    'MonitorOff',
    'Playbook',
    'Recommendation',
    'Registered',
    'Registration',
    'Replaced',
    'ResetAnswer',
    'ResetBody',
    'RestoreAnswer',
    'Retention',
    'Routing',
    'RunAgentView',
    'RunDetail',
    'RunEvent',
    'RunFinding',
    'RunListed',
    'RunMonitorConfig',
    'RunMonitorFileInput',
    'RunMonitorInput',
    'RunMonitorOutput',
    'RunPage',
    'RunRecommendation',
    'RunRule',
    'RunSignal',
    'RunStep',
    'RunSummary',
    'RunTimelineEntry',
    'RunTimelineFinding',
    'RunToolPolicy',
    'RunsPage',
    'SemanticLoopEvent',
    'SemanticLoopFileInput',
    'SemanticLoopGroup',
    'SemanticLoopInput',
    'SemanticLoopOutput',
    'SemanticLoopThresholds',
    'Severity',
    'SeverityRouting',
    'Signal',
    'SignalAnswer',
    'SignalSummary',
    'SkillKey',
    'SkillMonitorConfig',
    'SnapshotPage',
    'Step',
    'StepBatch',
    'StepSignals',
    'StepsAnswer',
    'TelemetryEvent',
    'TelemetryRetention',
    'TelemetrySettings',
    'ThresholdView',
    'ThresholdViews',
    'ThresholdsAnswer',
    'ThresholdsPatch',
    'TimeBudgetAnswer',
    'TimeBudgetConfig',
    'TimeBudgetPatch',
    'TimelineEntry',
    'TimelineFinding',
    'ToolConfig',
    'Usage',
    'UsageAnswer',
    'UsageCredits',
    'UsageDay',
]

SkillKey = Literal["agent.loop_detect", "agent.loops", "agent.run_monitor", "agent.semantic_loop"]
OutputT = TypeVar("OutputT")


class AffectedExecution(TypedDict):
    executionId: str
    firedAt: str


class AgentReset(TypedDict):
    agentId: str
    segmentStart: int


class AgentView(TypedDict):
    """One agent of GET /v1/runs/{runId}: its whole signal."""

    agentId: str
    createdAt: str | None
    lastActivity: str | None
    recommendation: Recommendation | None
    role: str | None
    segmentStart: int
    sequence: int
    signal: Signal | None


class Batch(TypedDict):
    events: list[LoopsEvent]
    seq: NotRequired[int | None]


class BatchAnswer(TypedDict):
    accepted: int
    duplicate: bool
    executionId: str
    fired: list[str]
    seq: int


class Billing(TypedDict):
    credits: int


class BreakAnswer(TypedDict):
    agentsReset: list[str]
    broken: Literal[True]
    retention: Retention
    runId: str
    snapshotId: str
    summary: BreakSummary


class BreakBody(TypedDict):
    agentId: NotRequired[str | None]
    reason: str


class BreakSummary(TypedDict):
    entries: int
    reason: str


class BriefingItem(TypedDict):
    createdAt: str
    entries: NotRequired[int]
    id: str
    score: float
    type: Literal["lesson", "snapshot"]


class ConfigAnswer(TypedDict):
    config: dict[str, Any]
    retention: Retention
    runId: str


class ContextAnswer(TypedDict):
    context_block: str
    items: list[BriefingItem]
    max_token_budget: int
    runId: str
    tokens: int


class ContextBody(TypedDict):
    max_token_budget: NotRequired[int]
    query: str


class Credits(TypedDict):
    quota: int
    used: int


class EndAnswer(TypedDict):
    alreadyEnded: bool
    ended: Literal[True]
    executionId: str
    fired: list[str]


class EndBody(TypedDict):
    durationMs: NotRequired[int | None]


class EventsPage(TypedDict):
    events: list[RunEvent]
    next: str | None
    runId: str


class FailureGroupDetail(TypedDict):
    canonicalState: str | None
    executions: list[AffectedExecution]
    group: FailureGroupView
    playbook: Playbook
    timeline: list[GroupDay]


FailureGroupView = TypedDict('FailureGroupView', {
    'class': 'Literal["loops", "semantic_loop", "tool_calls"]',
    'executions': 'int',
    'firstSeen': 'str',
    'lastSeen': 'str',
    'playbook': 'str',
    'severity': 'Literal["critical", "info", "warning"]',
    'signature': 'str',
    'sub': 'str',
})


class FailureGroupsPage(TypedDict):
    items: list[FailureGroupView]
    nextCursor: str | None


class FileInput(TypedDict):
    fileRef: str


class FileOutput(TypedDict):
    """An execute ``output`` too large to inline: GET ``downloadUrl`` before ``expiresAt`` for the output's JSON, ``bytes`` long, exactly what ``output`` would have held."""

    bytes: int
    downloadUrl: str
    expiresAt: str
    fileRef: str
    method: Literal["GET"]


class FileUpload(TypedDict):
    """POST /v1/files: a fileRef, and where to PUT its bytes before ``expiresAt``."""

    expiresAt: str
    fileRef: str
    maxBytes: int
    method: Literal["PUT"]
    uploadUrl: str


class Flagged(TypedDict):
    severity: Literal["critical", "warning"]
    step: int


class GroupDay(TypedDict):
    day: str
    executions: int


class Lesson(TypedDict):
    createdAt: str
    kind: Literal["fact", "lesson", "loop_detected", "replaced_by_restore"]
    lessonId: str
    snapshotId: NotRequired[str]
    tags: list[str]
    text: str


class LessonAdded(TypedDict):
    createdAt: str
    kind: Literal["fact", "lesson", "loop_detected", "replaced_by_restore"]
    lessonId: str
    retention: Retention
    runId: str
    snapshotId: NotRequired[str]
    tags: list[str]
    text: str


class LessonBody(TypedDict):
    kind: NotRequired[str]
    tags: NotRequired[list[str]]
    text: str


class LessonsPage(TypedDict):
    lessons: list[Lesson]
    next: str | None
    runId: str


class ListedAgent(TypedDict):
    agentId: str
    createdAt: str | None
    lastActivity: str | None
    recommendation: Recommendation | None
    role: str | None
    segmentStart: int
    sequence: int
    signal: SignalSummary | None


class LoopDetectEvent(TypedDict):
    """Validated as plain dicts: twice as fast as 5,000 model instances (benchmarks/)."""

    action: str
    outcome: NotRequired[str | None]
    stateFingerprint: NotRequired[str | None]
    target: NotRequired[str | None]


class LoopDetectFileInput(TypedDict):
    """LoopDetectInput by file: its events in the file `fileRef` names (Client.upload), its other parameters beside it."""

    fileRef: str
    repeatThreshold: NotRequired[int]
    similarity: NotRequired[Literal["ACTION_TARGET", "EXACT"]]
    window: NotRequired[int]


class LoopDetectInput(TypedDict):
    events: list[LoopDetectEvent]
    repeatThreshold: NotRequired[int]
    similarity: NotRequired[Literal["ACTION_TARGET", "EXACT"]]
    window: NotRequired[int]


class LoopDetectOutput(TypedDict):
    confidence: Literal["HIGH", "MEDIUM", "NONE"]
    cycleLength: int
    eventIndices: list[int]
    loopDetected: bool
    repeatThreshold: int
    similarity: Literal["ACTION_TARGET", "EXACT"]
    spans: list[LoopDetectSpan]
    window: int


class LoopDetectSpan(TypedDict):
    cycleLength: int
    end: int
    repeats: int
    start: int


class LoopsAppliedThresholds(TypedDict):
    identical_call_min_repeats: int
    similar_call_distance_threshold: float
    similar_call_min_cluster_size: int
    step_count_threshold: int
    time_budget_ms: int


class LoopsEvent(TypedDict):
    """A telemetry event. Fields other than these are the agent's own and are ignored."""

    embedding: NotRequired[list[float] | None]
    model: NotRequired[str | None]
    timestamp: NotRequired[Any]
    type: str
    user_message: NotRequired[str | None]


class LoopsFileInput(TypedDict):
    """LoopsInput by file: its events in the file `fileRef` names (Client.upload), its other parameters beside it."""

    durationMs: NotRequired[int | None]
    endedAt: NotRequired[str | None]
    fileRef: str
    startedAt: NotRequired[str | None]
    thresholds: NotRequired[LoopsThresholds | None]


class LoopsFinding(TypedDict):
    count: NotRequired[int]
    distinctMessages: NotRequired[int]
    durationMs: NotRequired[int]
    durationSource: NotRequired[Literal["durationMs", "startedAt/endedAt", "timestamps"]]
    eventIndices: list[int]
    playbook: Literal["identical_call", "similar_call", "step_count", "time_budget"]
    signature: str
    sub: Literal["identical_call", "similar_call", "step_count", "time_budget"]


class LoopsInput(TypedDict):
    durationMs: NotRequired[int | None]
    endedAt: NotRequired[str | None]
    events: list[LoopsEvent]
    startedAt: NotRequired[str | None]
    thresholds: NotRequired[LoopsThresholds | None]


class LoopsOutput(TypedDict):
    findings: list[LoopsFinding]
    fired: bool
    stats: LoopsStats
    thresholds: LoopsAppliedThresholds


class LoopsStats(TypedDict):
    durationMs: int | None
    durationSource: Literal["durationMs", "startedAt/endedAt", "timestamps"] | None
    embeddingsIgnored: str | None
    events: int
    llmCalls: int
    llmCallsSkipped: int
    timeBudgetEvaluated: bool
    timeBudgetNotEvaluatedReason: str | None
    timestamps: int
    timestampsOutOfOrder: int
    vectors: Literal["embedding", "lexical"] | None


class LoopsThresholds(TypedDict):
    """Per-call overrides; values are checked by skills.thresholds (types and bounds)."""

    identical_call_min_repeats: NotRequired[Any]
    similar_call_distance_threshold: NotRequired[Any]
    similar_call_min_cluster_size: NotRequired[Any]
    step_count_threshold: NotRequired[Any]
    time_budget_ms: NotRequired[Any]


class MemoryDeleted(TypedDict):
    deleted: Literal[True]
    key: str
    runId: str


class MemoryEntry(TypedDict):
    key: str
    retention: Retention
    runId: str
    updatedAt: str
    value: Any


class MemoryPage(TypedDict):
    count: int
    entries: dict[str, Any]
    next: str | None
    runId: str


class MemorySet(TypedDict):
    created: bool
    key: str
    retention: Retention
    runId: str


class MonitorConfig(TypedDict):
    """``config`` without the thresholds (checked by name, against their bounds)."""

    condensation_limit: NotRequired[int]
    content_chunk_chars: NotRequired[int]
    content_repeats: NotRequired[int]
    cycle_repeats: NotRequired[int]
    cycle_window: NotRequired[int]
    disabled_rules: NotRequired[list[Literal["condensation_loop", "content_loop", "cycle", "drift", "error_streak", "monologue", "novelty", "repeated_call", "repeated_query", "run_repeated_call", "same_result", "similar_call", "stagnation", "state_revisit"]]]
    drift_threshold: NotRequired[float]
    error_streak: NotRequired[int]
    history_size: NotRequired[int]
    ignore_keys: NotRequired[list[str]]
    monologue_limit: NotRequired[int]
    monologue_run: NotRequired[int]
    monologue_similar: NotRequired[float]
    novelty_floor: NotRequired[float]
    novelty_window: NotRequired[int]
    nudges_before_break: NotRequired[int]
    poll_warn: NotRequired[int]
    repeat_critical: NotRequired[int]
    repeat_warn: NotRequired[int]
    reset_on_repeated_user_message: NotRequired[bool]
    reset_on_user_message: NotRequired[bool]
    revisit_threshold: NotRequired[int]
    run_repeat_warn: NotRequired[int]
    same_result_warn: NotRequired[int]
    similar_args: NotRequired[float]
    similar_critical: NotRequired[int]
    similar_warn: NotRequired[int]
    stagnation_threshold: NotRequired[int]
    tools: NotRequired[dict[str, ToolConfig]]


class MonitorFinding(TypedDict):
    count: int
    rationale: str
    rule: Literal["condensation_loop", "content_loop", "cycle", "drift", "error_streak", "monologue", "novelty", "repeated_call", "repeated_query", "run_repeated_call", "same_result", "similar_call", "stagnation", "state_revisit"]
    severity: Literal["critical", "warning"]
    stepIndices: list[int]


class MonitorOff(TypedDict):
    """A step batch or a signal while the tenant's monitor is off: nothing stored or charged."""

    accepted: NotRequired[int]
    agentId: str
    monitor_disabled: Literal[True]
    runId: str
    signal: NotRequired[None]


class Playbook(TypedDict):
    markdown: str
    name: str
    title: str


class Recommendation(TypedDict):
    action: Literal["break", "continue", "nudge"]
    nudge: NotRequired[str]


class Registered(TypedDict):
    agentId: str
    objectiveDimensions: int | None
    retention: Retention
    role: str | None
    runId: str
    sequence: int


class Registration(TypedDict):
    agentId: str
    objectiveEmbedding: NotRequired[list[float] | None]
    role: NotRequired[str | None]


class Replaced(TypedDict):
    entries: int
    snapshotId: str


class ResetAnswer(TypedDict):
    reset: list[AgentReset]
    runId: str


class ResetBody(TypedDict):
    agentId: NotRequired[str | None]


class RestoreAnswer(TypedDict):
    entries: int
    replaced: Replaced
    restored: Literal[True]
    retention: Retention
    runId: str
    snapshotId: str


class Retention(TypedDict):
    days: int
    expiresAt: str


class Routing(TypedDict):
    loops: Literal["critical", "info", "warning"]
    semantic_loop: Literal["critical", "info", "warning"]
    tool_calls: Literal["critical", "info", "warning"]


class RunDetail(TypedDict):
    agents: list[AgentView]
    config: dict[str, Any] | None
    lastActivity: str | None
    retention: Retention
    runId: str


class RunEvent(TypedDict):
    agentIds: NotRequired[list[str]]
    at: str
    entries: NotRequired[int]
    reason: NotRequired[str]
    replacedSnapshotId: NotRequired[str]
    seq: int
    snapshotId: str
    type: Literal["CIRCUIT_BROKEN", "MEMORY_RESTORED"]


class RunListed(TypedDict):
    agents: list[ListedAgent]
    lastActivity: str | None
    runId: str


class RunMonitorFileInput(TypedDict):
    """RunMonitorInput by file: its events in the file `fileRef` names (Client.upload), its other parameters beside it."""

    config: NotRequired[SkillMonitorConfig | None]
    fileRef: str


class RunMonitorInput(TypedDict):
    config: NotRequired[SkillMonitorConfig | None]
    steps: list[Step]


class RunMonitorOutput(TypedDict):
    confidence: float
    drift_score: float
    ever_flagged: dict[str, Flagged]
    findings: list[MonitorFinding]
    first_flagged: int | None
    is_drifting: bool
    is_looping: bool
    is_novelty_starved: bool
    is_stuck: bool
    loop_score: float
    novelty_score: float
    rationale: str
    recommendation: Recommendation
    segmentStart: int
    source: Literal["rule"]
    steps: int
    timeline: list[TimelineEntry]


class RunsPage(TypedDict):
    items: list[RunListed]
    nextCursor: str | None


class SemanticLoopEvent(TypedDict):
    """A telemetry event. Checkpoints' ``name`` and ``metadata`` are checked in ``parse``: a field of the same name on another event type is not this skill's business."""

    metadata: NotRequired[Any]
    name: NotRequired[Any]
    type: str


class SemanticLoopFileInput(TypedDict):
    """SemanticLoopInput by file: its events in the file `fileRef` names (Client.upload), its other parameters beside it."""

    fileRef: str
    ignoreKeys: NotRequired[list[str]]
    thresholds: NotRequired[SemanticLoopThresholds | None]


class SemanticLoopGroup(TypedDict):
    count: int
    eventIndices: list[int]
    hash: str
    signature: str


class SemanticLoopInput(TypedDict):
    events: list[SemanticLoopEvent]
    ignoreKeys: NotRequired[list[str]]
    thresholds: NotRequired[SemanticLoopThresholds | None]


class SemanticLoopOutput(TypedDict):
    checkpoints: int
    fired: bool
    groups: list[SemanticLoopGroup]
    revisitThreshold: int
    skipped: int


class SemanticLoopThresholds(TypedDict):
    revisit_threshold: NotRequired[Any]


class SeverityRouting(TypedDict):
    loops: NotRequired[Literal["critical", "info", "warning"]]
    semantic_loop: NotRequired[Literal["critical", "info", "warning"]]
    tool_calls: NotRequired[Literal["critical", "info", "warning"]]


class Signal(TypedDict):
    confidence: float
    drift_score: float
    ever_flagged: dict[str, Flagged]
    findings: list[MonitorFinding]
    first_flagged: int | None
    is_drifting: bool
    is_looping: bool
    is_novelty_starved: bool
    is_stuck: bool
    loop_score: float
    novelty_score: float
    rationale: str
    recommendation: Recommendation
    source: Literal["rule"]


class SignalAnswer(TypedDict):
    agentId: str
    monitor_disabled: Literal[False]
    retention: Retention
    runId: str
    segmentStart: int
    sequence: int
    signal: Signal


class SignalSummary(TypedDict):
    """The signal without its findings and recommendation (a listing of runs shows it)."""

    confidence: float
    drift_score: float
    ever_flagged: dict[str, Flagged]
    first_flagged: int | None
    is_drifting: bool
    is_looping: bool
    is_novelty_starved: bool
    is_stuck: bool
    loop_score: float
    novelty_score: float
    rationale: str
    source: Literal["rule"]


class SkillMonitorConfig(TypedDict):
    """``config`` without the thresholds (checked by name, against their bounds)."""

    condensation_limit: NotRequired[int]
    content_chunk_chars: NotRequired[int]
    content_repeats: NotRequired[int]
    cycle_repeats: NotRequired[int]
    cycle_window: NotRequired[int]
    disabled_rules: NotRequired[list[Literal["condensation_loop", "content_loop", "cycle", "drift", "error_streak", "monologue", "novelty", "repeated_call", "repeated_query", "run_repeated_call", "same_result", "similar_call", "stagnation", "state_revisit"]]]
    drift_threshold: NotRequired[float]
    error_streak: NotRequired[int]
    history_size: NotRequired[int]
    ignore_keys: NotRequired[list[str]]
    monologue_limit: NotRequired[int]
    monologue_run: NotRequired[int]
    monologue_similar: NotRequired[float]
    novelty_floor: NotRequired[float]
    novelty_window: NotRequired[int]
    nudges_before_break: NotRequired[int]
    objective_embedding: NotRequired[list[float] | None]
    poll_warn: NotRequired[int]
    repeat_critical: NotRequired[int]
    repeat_warn: NotRequired[int]
    reset_on_repeated_user_message: NotRequired[bool]
    reset_on_user_message: NotRequired[bool]
    revisit_threshold: NotRequired[int]
    run_repeat_warn: NotRequired[int]
    same_result_warn: NotRequired[int]
    similar_args: NotRequired[float]
    similar_critical: NotRequired[int]
    similar_warn: NotRequired[int]
    stagnation_threshold: NotRequired[int]
    tools: NotRequired[dict[str, ToolConfig]]


class SnapshotPage(TypedDict):
    agentIds: NotRequired[list[str]]
    createdAt: str
    entries: dict[str, Any]
    kind: Literal["loop_detected", "replaced_by_restore"]
    next: str | None
    reason: NotRequired[str]
    restoredFrom: NotRequired[str]
    retention: Retention
    runId: str
    snapshotId: str


class Step(TypedDict):
    """Validated as plain dicts (5,000 model instances cost twice as much, benchmarks/)."""

    action: NotRequired[str]
    agentId: NotRequired[str]
    args: NotRequired[Any]
    embedding: NotRequired[list[float]]
    kind: str
    metadata: NotRequired[Any]
    model: NotRequired[str]
    outcome: NotRequired[Literal["error", "negative", "neutral", "positive"] | None]
    result: NotRequired[Any]
    text: NotRequired[str]


class StepBatch(TypedDict):
    steps: list[Step]


class StepSignals(TypedDict):
    drift_score: float
    novelty_score: float
    repeated: bool
    stagnant: bool


class StepsAnswer(TypedDict):
    accepted: int
    agentId: str
    billing: Billing
    executionId: str
    findings: list[MonitorFinding]
    firstIndex: int
    recommendation: Recommendation
    retention: Retention
    runId: str
    segmentStart: int
    sequence: int
    signals: StepSignals


class TelemetryRetention(TypedDict):
    group_retention_days: int
    telemetry_retention_days: int


class TelemetrySettings(TypedDict):
    group_retention_days: NotRequired[int]
    telemetry_retention_days: NotRequired[int]


class ThresholdView(TypedDict):
    configured: int | float | bool | None
    default: int | float | bool
    max: int | float | bool | None
    min: int | float | bool | None
    type: Literal["boolean", "integer", "number"]
    used_by: str
    value: int | float | bool


class ThresholdViews(TypedDict):
    condensation_limit: ThresholdView
    content_chunk_chars: ThresholdView
    content_repeats: ThresholdView
    cycle_repeats: ThresholdView
    cycle_window: ThresholdView
    drift_threshold: ThresholdView
    error_streak: ThresholdView
    history_size: ThresholdView
    identical_call_min_repeats: ThresholdView
    monitor_disabled: ThresholdView
    monologue_limit: ThresholdView
    monologue_run: ThresholdView
    monologue_similar: ThresholdView
    novelty_floor: ThresholdView
    novelty_window: ThresholdView
    nudges_before_break: ThresholdView
    poll_warn: ThresholdView
    repeat_critical: ThresholdView
    repeat_warn: ThresholdView
    revisit_threshold: ThresholdView
    run_repeat_warn: ThresholdView
    run_retention_days: ThresholdView
    same_result_warn: ThresholdView
    similar_args: ThresholdView
    similar_call_distance_threshold: ThresholdView
    similar_call_min_cluster_size: ThresholdView
    similar_critical: ThresholdView
    similar_warn: ThresholdView
    stagnation_threshold: ThresholdView
    step_count_threshold: ThresholdView
    time_budget_ms: ThresholdView


class ThresholdsAnswer(TypedDict):
    plan: str
    thresholds: ThresholdViews


class ThresholdsPatch(TypedDict):
    condensation_limit: NotRequired[int | None]
    content_chunk_chars: NotRequired[int | None]
    content_repeats: NotRequired[int | None]
    cycle_repeats: NotRequired[int | None]
    cycle_window: NotRequired[int | None]
    drift_threshold: NotRequired[float | None]
    error_streak: NotRequired[int | None]
    history_size: NotRequired[int | None]
    identical_call_min_repeats: NotRequired[int | None]
    monitor_disabled: NotRequired[bool | None]
    monologue_limit: NotRequired[int | None]
    monologue_run: NotRequired[int | None]
    monologue_similar: NotRequired[float | None]
    novelty_floor: NotRequired[float | None]
    novelty_window: NotRequired[int | None]
    nudges_before_break: NotRequired[int | None]
    poll_warn: NotRequired[int | None]
    repeat_critical: NotRequired[int | None]
    repeat_warn: NotRequired[int | None]
    revisit_threshold: NotRequired[int | None]
    run_repeat_warn: NotRequired[int | None]
    run_retention_days: NotRequired[int | None]
    same_result_warn: NotRequired[int | None]
    similar_args: NotRequired[float | None]
    similar_call_distance_threshold: NotRequired[float | None]
    similar_call_min_cluster_size: NotRequired[int | None]
    similar_critical: NotRequired[int | None]
    similar_warn: NotRequired[int | None]
    stagnation_threshold: NotRequired[int | None]
    step_count_threshold: NotRequired[int | None]
    time_budget_ms: NotRequired[int | None]


class TimeBudgetAnswer(TypedDict):
    clamped: bool
    configured_time_budget_ms: int | None
    default_time_budget_ms: int
    max_time_budget_ms: int
    plan: str
    time_budget_ms: int


class TimeBudgetPatch(TypedDict):
    time_budget_ms: int | None


class TimelineEntry(TypedDict):
    action: Literal["break", "continue", "nudge"]
    findings: list[TimelineFinding]
    index: int


class TimelineFinding(TypedDict):
    rule: Literal["condensation_loop", "content_loop", "cycle", "drift", "error_streak", "monologue", "novelty", "repeated_call", "repeated_query", "run_repeated_call", "same_result", "similar_call", "stagnation", "state_revisit"]
    severity: Literal["critical", "warning"]
    stepIndices: list[int]


class ToolConfig(TypedDict):
    exempt: NotRequired[bool]
    ignore_keys: NotRequired[list[str]]
    poll: NotRequired[bool]
    poll_warn: NotRequired[Any]
    repeat_critical: NotRequired[Any]
    repeat_warn: NotRequired[Any]
    run_repeat_warn: NotRequired[Any]
    same_result: NotRequired[bool]
    same_result_warn: NotRequired[Any]
    similar_critical: NotRequired[Any]
    similar_warn: NotRequired[Any]


class UsageAnswer(TypedDict):
    credits: Credits
    days: list[UsageDay]
    period: str
    plan: str


class UsageDay(TypedDict):
    bySkill: dict[str, int]
    calls: int
    day: str


class ExecuteResponse(TypedDict, Generic[OutputT]):
    """The 200 answer of ``POST /v1/execute``; ``output`` is the skill's own: LoopDetectOutput (agent.loop_detect), LoopsOutput (agent.loops), RunMonitorOutput (agent.run_monitor), SemanticLoopOutput (agent.semantic_loop)."""

    billing: Billing
    executionId: str
    output: OutputT
    skillKey: SkillKey
    skillVersion: str


DetectorThreshold = ThresholdView
DetectorThresholds = ThresholdsAnswer
DetectorThresholdsUpdate = ThresholdsPatch
Empty = dict[str, Any]
EventsAccepted = BatchAnswer
ExecutionEnded = EndAnswer
FailureGroup = FailureGroupView
FailureGroupDay = GroupDay
FailureGroupExecution = AffectedExecution
FailureGroupPage = FailureGroupsPage
RunAgentView = AgentView
RunFinding = MonitorFinding
RunMonitorConfig = SkillMonitorConfig
RunPage = RunsPage
RunRecommendation = Recommendation
RunRule = Literal["condensation_loop", "content_loop", "cycle", "drift", "error_streak", "monologue", "novelty", "repeated_call", "repeated_query", "run_repeated_call", "same_result", "similar_call", "stagnation", "state_revisit"]
RunSignal = Signal
RunStep = Step
RunSummary = RunListed
RunTimelineEntry = TimelineEntry
RunTimelineFinding = TimelineFinding
RunToolPolicy = ToolConfig
Severity = Literal["critical", "info", "warning"]
TelemetryEvent = LoopsEvent | SemanticLoopEvent
TimeBudgetConfig = TimeBudgetAnswer
Usage = UsageAnswer
UsageCredits = Credits
