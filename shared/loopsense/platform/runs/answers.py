"""What the runs API answers (docs/runs.md, docs/recover.md): the shapes of the dicts
monitor.py, recover.py and views.py build, for the OpenAPI document (each route's Contract
names its answer here) and through it the SDKs' types. Not used to build answers (a step batch
stays plain dicts); tests/e2e/test_contract_answers.py validates real answers against the
document, so a shape here cannot drift from what a handler returns.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from pydantic import with_config
from typing_extensions import TypedDict

from loopsense.platform.access.answers import Billing
from loopsense.skills.run_monitor import (
    MonitorFinding,
    Recommendation,
    Signal,
    SignalSummary,
)
from loopsense.validation import ANSWER

Cursor = str | None  # the next page's cursor, or null on the last page


@with_config(ANSWER)
class Retention(TypedDict):
    days: int
    expiresAt: str


@with_config(ANSWER)
class StepSignals(TypedDict):
    repeated: bool
    stagnant: bool
    drift_score: float
    novelty_score: float


@with_config(ANSWER)
class StepsAnswer(TypedDict):
    runId: str
    agentId: str
    accepted: int
    firstIndex: int
    sequence: int
    segmentStart: int
    signals: StepSignals
    findings: list[MonitorFinding]
    recommendation: Recommendation
    executionId: str
    billing: Billing
    retention: Retention


@with_config(ANSWER)
class MonitorOff(TypedDict):
    """A step batch or a signal while the tenant's monitor is off: nothing stored or charged."""

    runId: str
    agentId: str
    monitor_disabled: Literal[True]
    accepted: NotRequired[int]  # a step batch
    signal: NotRequired[None]  # a signal


@with_config(ANSWER)
class SignalAnswer(TypedDict):
    runId: str
    agentId: str
    monitor_disabled: Literal[False]
    sequence: int
    segmentStart: int
    signal: Signal
    retention: Retention


@with_config(ANSWER)
class Registered(TypedDict):
    runId: str
    agentId: str
    role: str | None
    objectiveDimensions: int | None
    sequence: int
    retention: Retention


@with_config(ANSWER)
class AgentReset(TypedDict):
    agentId: str
    segmentStart: int


@with_config(ANSWER)
class ResetAnswer(TypedDict):
    runId: str
    reset: list[AgentReset]


@with_config(ANSWER)
class ConfigAnswer(TypedDict):
    runId: str
    config: dict[str, Any]  # as sent (PUT .../config's body)
    retention: Retention


# working memory -------------------------------------------------------------------------------
@with_config(ANSWER)
class MemorySet(TypedDict):
    runId: str
    key: str
    created: bool
    retention: Retention


@with_config(ANSWER)
class MemoryEntry(TypedDict):
    runId: str
    key: str
    value: Any
    updatedAt: str
    retention: Retention


@with_config(ANSWER)
class MemoryDeleted(TypedDict):
    runId: str
    key: str
    deleted: Literal[True]


@with_config(ANSWER)
class MemoryPage(TypedDict):
    runId: str
    count: int
    entries: dict[str, Any]
    next: Cursor


# lessons and events ---------------------------------------------------------------------------
@with_config(ANSWER)
class Lesson(TypedDict):
    lessonId: str
    kind: Literal["lesson", "fact", "loop_detected", "replaced_by_restore"]
    text: str
    tags: list[str]
    createdAt: str
    snapshotId: NotRequired[str]  # a break's or a restore's snapshot


@with_config(ANSWER)
class LessonAdded(Lesson):
    runId: str
    retention: Retention


@with_config(ANSWER)
class LessonsPage(TypedDict):
    runId: str
    lessons: list[Lesson]
    next: Cursor


@with_config(ANSWER)
class RunEvent(TypedDict):
    seq: int
    type: Literal["CIRCUIT_BROKEN", "MEMORY_RESTORED"]
    at: str
    snapshotId: str
    reason: NotRequired[str]  # CIRCUIT_BROKEN
    agentIds: NotRequired[list[str]]  # CIRCUIT_BROKEN: the agents it reset
    entries: NotRequired[int]  # MEMORY_RESTORED
    replacedSnapshotId: NotRequired[str]  # MEMORY_RESTORED


@with_config(ANSWER)
class EventsPage(TypedDict):
    runId: str
    events: list[RunEvent]
    next: Cursor


# the circuit break, snapshots, restore --------------------------------------------------------
@with_config(ANSWER)
class BreakSummary(TypedDict):
    entries: int
    reason: str


@with_config(ANSWER)
class BreakAnswer(TypedDict):
    runId: str
    broken: Literal[True]
    snapshotId: str
    summary: BreakSummary
    agentsReset: list[str]
    retention: Retention


@with_config(ANSWER)
class Replaced(TypedDict):
    snapshotId: str
    entries: int


@with_config(ANSWER)
class RestoreAnswer(TypedDict):
    runId: str
    restored: Literal[True]
    snapshotId: str
    entries: int
    replaced: Replaced
    retention: Retention


@with_config(ANSWER)
class SnapshotPage(TypedDict):
    runId: str
    snapshotId: str
    kind: Literal["loop_detected", "replaced_by_restore"]
    createdAt: str
    entries: dict[str, Any]
    next: Cursor
    retention: Retention
    reason: NotRequired[str]  # loop_detected
    agentIds: NotRequired[list[str]]  # loop_detected
    restoredFrom: NotRequired[str]  # replaced_by_restore


@with_config(ANSWER)
class BriefingItem(TypedDict):
    type: Literal["lesson", "snapshot"]
    id: str
    score: float
    createdAt: str
    entries: NotRequired[int]  # a snapshot: its entries shown


@with_config(ANSWER)
class ContextAnswer(TypedDict):
    runId: str
    context_block: str
    items: list[BriefingItem]
    tokens: int
    max_token_budget: int


# reading runs (views.py) ----------------------------------------------------------------------
@with_config(ANSWER)
class ListedAgent(TypedDict):
    agentId: str
    role: str | None
    sequence: int
    segmentStart: int
    createdAt: str | None
    lastActivity: str | None
    recommendation: Recommendation | None  # null while the monitor is off
    signal: SignalSummary | None


@with_config(ANSWER)
class AgentView(ListedAgent):
    """One agent of GET /v1/runs/{runId}: its whole signal."""

    signal: Signal | None  # type: ignore[misc]  # the summary's, with findings


@with_config(ANSWER)
class RunListed(TypedDict):
    runId: str
    lastActivity: str | None
    agents: list[ListedAgent]


@with_config(ANSWER)
class RunsPage(TypedDict):
    items: list[RunListed]
    nextCursor: Cursor


@with_config(ANSWER)
class RunDetail(TypedDict):
    runId: str
    lastActivity: str | None
    agents: list[AgentView]
    config: dict[str, Any] | None
    retention: Retention


# A step batch's and a signal's answers while the monitor is on, or off.
StepsOrOff = StepsAnswer | MonitorOff
SignalOrOff = SignalAnswer | MonitorOff
