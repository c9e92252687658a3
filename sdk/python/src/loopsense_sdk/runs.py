"""``client.runs``: the stateful runs API (``/v1/runs/{runId}/...``): the run monitor
(docs/runs.md), working memory, lessons, events, the circuit break, snapshots, restore and the
briefing (docs/recover.md).

    signal = client.runs.signal(run_id, agent_id="ari")
    if signal.is_looping and signal.confidence >= 0.7:
        result = client.runs.circuit_break(run_id, reason="repeated_tool_call")
        briefing = client.runs.context(run_id, query="resume ticket 2214", max_token_budget=1500)

Each method is one request (the listing ones, ``memory`` and ``snapshot``, follow the pages to
the end), with ``execute``'s rules (loopsense_sdk.client): typed errors, retries of what the
server marks retryable within the client's deadline, and for ``steps``, ``circuit_break`` and
``restore`` one ``Idempotency-Key`` per call, sent again on each retry, so a retry after a lost
answer is applied (and charged) once: the server answers the replay with the first answer. The
other writes are idempotent by nature: ``register`` is an upsert, ``config`` and
``put_memory`` PUTs, and a ``reset`` retried before any new step leaves the segment where the
first one put it. ``delete_memory``'s effect is too, not its answer: a retry after a lost
answer finds the key gone and raises ``NotFoundError`` (RUN_MEMORY_NOT_FOUND), which then
means it was deleted. ``add_lesson`` is not idempotent: a retry after a lost answer may store
the lesson twice.

Answers are frozen dataclasses with attributes (``signal.is_looping``), each keeping the
whole wire answer in ``raw`` for fields newer than this SDK. While the tenant's monitor is off
(``monitor_disabled``), a signal reads as "nothing found" (not looping, confidence 0,
``continue``), so an orchestrator keeps running unchanged.

Adding a route: one plan (a generator yielding its ``call``, loopsense_sdk.plan), one line in
``Runs`` and one in ``AsyncRuns``, one answer class.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Unpack, cast

from loopsense_sdk import routes as R
from loopsense_sdk.plan import Namespace, Plan, asynchronous, call, keyed, synchronous
from loopsense_sdk.routes import Route
from loopsense_sdk.types import (
    RunDetail,
    RunFinding,
    RunMonitorConfig,
    RunPage,
    RunRule,
    RunStep,
    RunSummary,
)

if TYPE_CHECKING:
    from loopsense_sdk.tracker import AsyncTracker, Policy, Tracker

__all__ = ["AgentReset", "AsyncRuns", "Briefing", "CircuitBreak", "Finding", "Lesson",
           "MemoryWrite", "Recommendation", "Restore", "Retention", "RunAgent", "RunConfig",
           "RunReset", "Runs", "Signal", "StepsResult"]



@dataclass(frozen=True)
class Retention:
    """How long the run's items live after their last write."""

    days: int
    expires_at: str  # ISO-8601, UTC

    @classmethod
    def of(cls, raw: Any) -> Retention | None:
        return cls(raw["days"], raw["expiresAt"]) if isinstance(raw, dict) else None


@dataclass(frozen=True)
class Finding:
    rule: RunRule
    severity: Literal["warning", "critical"]
    count: int
    rationale: str
    step_indices: tuple[int, ...]

    @classmethod
    def of(cls, raw: RunFinding) -> Finding:
        return cls(raw["rule"], raw["severity"], raw["count"], raw["rationale"],
                   tuple(raw["stepIndices"]))


@dataclass(frozen=True)
class Recommendation:
    action: Literal["continue", "nudge", "break"]
    nudge: str | None = None  # nudge and break: the text to inject into the agent's context

    @classmethod
    def of(cls, raw: Any) -> Recommendation:
        if not isinstance(raw, dict):
            return CONTINUE
        return cls(raw["action"], raw.get("nudge"))


CONTINUE = Recommendation("continue")


def _findings(raw: Any) -> tuple[Finding, ...]:
    return tuple(Finding.of(f) for f in raw or ())


@dataclass(frozen=True)
class Signal:
    """``GET /v1/runs/{runId}/signal``: the agent's verdict now (re-reading it counts
    nothing). ``sequence``, ``segment_start`` and ``retention`` are None while the monitor is
    off."""

    run_id: str
    agent_id: str
    monitor_disabled: bool
    is_looping: bool
    is_stuck: bool
    is_drifting: bool
    is_novelty_starved: bool
    loop_score: float  # 0..1
    drift_score: float  # 0..2, -1 when unknown (no objective)
    novelty_score: float  # 0..1
    confidence: float  # 0..1: the strongest finding's strength
    rationale: str
    findings: tuple[Finding, ...]
    recommendation: Recommendation
    sequence: int | None
    segment_start: int | None
    retention: Retention | None
    raw: dict[str, Any]

    @classmethod
    def of(cls, raw: dict[str, Any]) -> Signal:
        verdict: dict[str, Any] = raw.get("signal") or {}
        return cls(
            run_id=raw["runId"], agent_id=raw["agentId"],
            monitor_disabled=bool(raw.get("monitor_disabled")),
            is_looping=bool(verdict.get("is_looping")), is_stuck=bool(verdict.get("is_stuck")),
            is_drifting=bool(verdict.get("is_drifting")),
            is_novelty_starved=bool(verdict.get("is_novelty_starved")),
            loop_score=float(verdict.get("loop_score", 0.0)),
            drift_score=float(verdict.get("drift_score", -1)),
            novelty_score=float(verdict.get("novelty_score", 1.0)),
            confidence=float(verdict.get("confidence", 0.0)),
            rationale=str(verdict.get("rationale", "")),
            findings=_findings(verdict.get("findings")),
            recommendation=Recommendation.of(verdict.get("recommendation")),
            sequence=raw.get("sequence"), segment_start=raw.get("segmentStart"),
            retention=Retention.of(raw.get("retention")), raw=raw)


@dataclass(frozen=True)
class StepsResult:
    """``POST /v1/runs/{runId}/steps``: the signals, findings and recommendation after the
    batch's last step. While the monitor is off only ``accepted`` is meaningful (nothing was
    stored or charged): no findings, ``continue``, the numbers None."""

    run_id: str
    agent_id: str
    accepted: int
    monitor_disabled: bool
    repeated: bool  # a loop rule fired
    stagnant: bool  # a stuck rule fired
    drift_score: float
    novelty_score: float
    findings: tuple[Finding, ...]
    recommendation: Recommendation
    first_index: int | None  # the batch's first step in the agent's run
    sequence: int | None  # steps applied so far
    segment_start: int | None
    execution_id: str | None
    credits: int  # charged for this batch (0 while the monitor is off)
    retention: Retention | None
    raw: dict[str, Any]

    @classmethod
    def of(cls, raw: dict[str, Any]) -> StepsResult:
        signals: dict[str, Any] = raw.get("signals") or {}
        return cls(
            run_id=raw["runId"], agent_id=raw["agentId"], accepted=raw["accepted"],
            monitor_disabled=bool(raw.get("monitor_disabled")),
            repeated=bool(signals.get("repeated")), stagnant=bool(signals.get("stagnant")),
            drift_score=float(signals.get("drift_score", -1)),
            novelty_score=float(signals.get("novelty_score", 1.0)),
            findings=_findings(raw.get("findings")),
            recommendation=Recommendation.of(raw.get("recommendation")),
            first_index=raw.get("firstIndex"), sequence=raw.get("sequence"),
            segment_start=raw.get("segmentStart"), execution_id=raw.get("executionId"),
            credits=int((raw.get("billing") or {}).get("credits", 0)),
            retention=Retention.of(raw.get("retention")), raw=raw)


@dataclass(frozen=True)
class RunAgent:
    """``POST /v1/runs/{runId}/agents``: the agent as registered."""

    run_id: str
    agent_id: str
    role: str | None
    objective_dimensions: int | None
    sequence: int  # steps applied so far (registering again keeps the state)
    retention: Retention | None
    raw: dict[str, Any]

    @classmethod
    def of(cls, raw: dict[str, Any]) -> RunAgent:
        return cls(raw["runId"], raw["agentId"], raw.get("role"), raw.get("objectiveDimensions"),
                   raw["sequence"], Retention.of(raw.get("retention")), raw)


@dataclass(frozen=True)
class AgentReset:
    agent_id: str
    segment_start: int  # the index the agent's new segment starts at


@dataclass(frozen=True)
class RunReset:
    """``POST /v1/runs/{runId}/reset``: the agents reset."""

    run_id: str
    agents: tuple[AgentReset, ...]
    raw: dict[str, Any]

    @classmethod
    def of(cls, raw: dict[str, Any]) -> RunReset:
        return cls(raw["runId"], tuple(AgentReset(a["agentId"], a["segmentStart"])
                                       for a in raw["reset"]), raw)


@dataclass(frozen=True)
class RunConfig:
    """``PUT /v1/runs/{runId}/config``: the config stored."""

    run_id: str
    config: RunMonitorConfig
    retention: Retention | None
    raw: dict[str, Any]

    @classmethod
    def of(cls, raw: dict[str, Any]) -> RunConfig:
        return cls(raw["runId"], cast(RunMonitorConfig, raw["config"]),
                   Retention.of(raw.get("retention")), raw)


@dataclass(frozen=True)
class MemoryWrite:
    """``PUT /v1/runs/{runId}/memory/{key}``: the entry stored."""

    run_id: str
    key: str
    created: bool  # False: it replaced the key's value
    retention: Retention | None
    raw: dict[str, Any]

    @classmethod
    def of(cls, raw: dict[str, Any]) -> MemoryWrite:
        return cls(raw["runId"], raw["key"], bool(raw["created"]),
                   Retention.of(raw.get("retention")), raw)


@dataclass(frozen=True)
class Lesson:
    """A lesson of the run: one the agent added (kind ``lesson``) or a snapshot's (kinds
    ``loop_detected``: a circuit break, ``replaced_by_restore``: the memory a restore
    replaced), whose ``snapshot_id`` ``snapshot`` and ``restore`` take."""

    lesson_id: str
    kind: str
    text: str
    tags: tuple[str, ...]
    created_at: str  # ISO-8601, UTC
    snapshot_id: str | None
    raw: dict[str, Any]

    @classmethod
    def of(cls, raw: dict[str, Any]) -> Lesson:
        return cls(raw["lessonId"], raw["kind"], raw["text"], tuple(raw.get("tags") or ()),
                   raw["createdAt"], raw.get("snapshotId"), raw)


@dataclass(frozen=True)
class CircuitBreak:
    """``POST /v1/runs/{runId}/circuit-break``: working memory saved as snapshot
    ``snapshot_id`` (``entries`` of them), cleared, the agents' monitors reset, CIRCUIT_BROKEN
    logged, as one atomic step."""

    run_id: str
    broken: bool
    snapshot_id: str
    entries: int
    reason: str
    agents_reset: tuple[str, ...]
    retention: Retention | None
    raw: dict[str, Any]

    @classmethod
    def of(cls, raw: dict[str, Any]) -> CircuitBreak:
        summary: dict[str, Any] = raw["summary"]
        # ``snapshot_id``: what servers before the contract's camelCase answered
        snapshot = raw["snapshotId"] if "snapshotId" in raw else raw["snapshot_id"]
        return cls(raw["runId"], bool(raw["broken"]), snapshot, summary["entries"],
                   summary["reason"], tuple(raw.get("agentsReset") or ()),
                   Retention.of(raw.get("retention")), raw)


@dataclass(frozen=True)
class Restore:
    """``POST /v1/runs/{runId}/snapshots/{snapshotId}/restore``: working memory is the
    snapshot's (``entries``); the memory it replaced is kept as snapshot
    ``replaced_snapshot_id``."""

    run_id: str
    snapshot_id: str
    entries: int
    replaced_snapshot_id: str
    replaced_entries: int
    retention: Retention | None
    raw: dict[str, Any]

    @classmethod
    def of(cls, raw: dict[str, Any]) -> Restore:
        replaced: dict[str, Any] = raw["replaced"]
        return cls(raw["runId"], raw["snapshotId"], raw["entries"], replaced["snapshotId"],
                   replaced["entries"], Retention.of(raw.get("retention")), raw)


@dataclass(frozen=True)
class Briefing:
    """``POST /v1/runs/{runId}/context``: the briefing of a fresh attempt, within the budget
    (``tokens`` is the server's estimate)."""

    run_id: str
    context_block: str
    items: tuple[dict[str, Any], ...]  # what it holds, most relevant first: type, id, tokens
    tokens: int
    max_token_budget: int
    raw: dict[str, Any]

    @classmethod
    def of(cls, raw: dict[str, Any]) -> Briefing:
        return cls(raw["runId"], raw["context_block"], tuple(raw["items"]), raw["tokens"],
                   raw["max_token_budget"], raw)


# ---- the plans: each method once (loopsense_sdk.plan) ---------------------------------------
def _register(run_id: str, *, agent_id: str, role: str | None = None,
              objective_embedding: Sequence[float] | None = None) -> Plan[RunAgent]:
    """Register (or update) an agent of the run: its role and objective (for drift).
    Registering again replaces both (absent: cleared) and keeps the agent's state."""
    body: dict[str, Any] = {"agentId": agent_id}
    if role is not None:
        body["role"] = role
    if objective_embedding is not None:
        body["objectiveEmbedding"] = list(objective_embedding)
    return RunAgent.of((yield call(R.RUN_AGENTS, body, runId=run_id)))


def _steps(run_id: str, steps: Sequence[RunStep], *, agent_id: str | None = None,
           idempotency_key: str | None = None) -> Plan[StepsResult]:
    """Send a batch of one agent's steps (1..500, in order); the verdict after the last.
    Each step carries ``agentId``; ``agent_id=`` fills it in where a step has none. The
    Idempotency-Key (a uuid4, or yours) makes a retried batch apply and charge once."""
    batch = [dict(step) if agent_id is None else {"agentId": agent_id, **step}
             for step in steps]
    return StepsResult.of((yield call(R.RUN_STEPS, {"steps": batch}, runId=run_id,
                                      headers=keyed(idempotency_key))))


def _signal(run_id: str, *, agent_id: str) -> Plan[Signal]:
    """The agent's verdict now: ``RunAgentNotFoundError`` if the run has no such agent."""
    return Signal.of((yield call(R.RUN_SIGNAL, runId=run_id, query={"agentId": agent_id})))


def _reset(run_id: str, *, agent_id: str | None = None) -> Plan[RunReset]:
    """A reset point (segment, nudge counts, last recommendation emptied; the step count
    goes on) for one agent, or for every agent of the run."""
    body = {"agentId": agent_id} if agent_id is not None else {}
    return RunReset.of((yield call(R.RUN_RESET, body, runId=run_id)))


def _config(run_id: str, **settings: Unpack[RunMonitorConfig]) -> Plan[RunConfig]:
    """Set the run's config (agent.run_monitor's ``config`` names and bounds, without
    ``objective_embedding``: objectives are per agent, ``register``); it replaces the
    previous one and applies to every agent from its next step."""
    return RunConfig.of((yield call(R.RUN_CONFIG, dict(settings), runId=run_id)))


def _put_memory(run_id: str, key: str, value: Any) -> Plan[MemoryWrite]:
    """Store a JSON value of at most 32 KiB under ``key`` (1..256 of
    ``A-Z a-z 0-9 . _ : -``); a run holds at most 10,000 (``RUN_MEMORY_FULL``)."""
    # the body is the value itself; None is sent as JSON null (None means no body)
    body = b"null" if value is None else value
    return MemoryWrite.of((yield call(R.RUN_MEMORY_PUT, body, runId=run_id, key=key)))


def _get_memory(run_id: str, key: str) -> Plan[Any]:
    """The value under ``key``; ``NotFoundError`` (RUN_MEMORY_NOT_FOUND) if there is none."""
    return (yield call(R.RUN_MEMORY_GET, runId=run_id, key=key))["value"]


def _delete_memory(run_id: str, key: str) -> Plan[None]:
    """Delete ``key``; ``NotFoundError`` (RUN_MEMORY_NOT_FOUND) if there is none."""
    yield call(R.RUN_MEMORY_DELETE, runId=run_id, key=key)


def _memory(run_id: str) -> Plan[dict[str, Any]]:
    """All of working memory, ``{key: value}`` in key order."""
    return (yield from _entries(R.RUN_MEMORY, runId=run_id))


def _add_lesson(run_id: str, text: str, *, tags: Sequence[str] = (),
                kind: str = "lesson") -> Plan[Lesson]:
    """Add a lesson (it outlives circuit breaks; the briefing ranks it by relevance)."""
    body = {"text": text, "tags": list(tags), "kind": kind}
    return Lesson.of((yield call(R.RUN_LESSONS_ADD, body, runId=run_id)))


def _lessons(run_id: str) -> Plan[tuple[Lesson, ...]]:
    """Every lesson of the run, oldest first."""
    pages = yield from _pages(R.RUN_LESSONS, runId=run_id)
    return tuple(Lesson.of(x) for page in pages for x in page["lessons"])


def _events(run_id: str) -> Plan[tuple[dict[str, Any], ...]]:
    """The run's event log, oldest first: ``{"seq", "type", "at", ...its details}``."""
    pages = yield from _pages(R.RUN_EVENTS, runId=run_id)
    return tuple(x for page in pages for x in page["events"])


def _circuit_break(run_id: str, *, reason: str, agent_id: str | None = None,
                   idempotency_key: str | None = None) -> Plan[CircuitBreak]:
    """Snapshot working memory, clear it, reset the monitor of ``agent_id`` (or of every
    agent of the run) and log CIRCUIT_BROKEN, as one atomic step."""
    body: dict[str, Any] = {"reason": reason}
    if agent_id is not None:
        body["agentId"] = agent_id
    return CircuitBreak.of((yield call(R.RUN_CIRCUIT_BREAK, body, runId=run_id,
                                       headers=keyed(idempotency_key))))


def _snapshot(run_id: str, snapshot_id: str) -> Plan[dict[str, Any]]:
    """The working memory a break (or a restore) saved, ``{key: value}`` in key order;
    ``NotFoundError`` (RUN_SNAPSHOT_NOT_FOUND) for an id this run never returned."""
    return (yield from _entries(R.RUN_SNAPSHOT, runId=run_id, snapshotId=snapshot_id))


def _restore(run_id: str, snapshot_id: str, *,
             idempotency_key: str | None = None) -> Plan[Restore]:
    """Replace working memory with the snapshot's; the replaced memory is kept as a
    snapshot of its own."""
    return Restore.of((yield call(R.RUN_RESTORE, {}, runId=run_id, snapshotId=snapshot_id,
                                  headers=keyed(idempotency_key))))


def _context(run_id: str, *, query: str, max_token_budget: int = 1500) -> Plan[Briefing]:
    """The briefing of a fresh attempt: the latest snapshot and the lessons most relevant
    to ``query``, within ``max_token_budget`` tokens."""
    body = {"query": query, "max_token_budget": max_token_budget}
    return Briefing.of((yield call(R.RUN_CONTEXT, body, runId=run_id)))


# reading runs (docs/runs.md, "Reading runs")
def _list(*, limit: int | None = None, cursor: str | None = None) -> Plan[RunPage]:
    """One page of the tenant's live runs, newest activity first (``limit`` 1..50, default
    20), each with its agents' signal and recommendation; ``nextCursor`` continues it."""
    query = {name: str(value) for name, value in (("limit", limit), ("cursor", cursor))
             if value is not None}
    return cast(RunPage, (yield call(R.RUNS_LIST, query=query)))


def _get(run_id: str) -> Plan[RunDetail]:
    """A run: each live agent with its full signal (findings with their rationale) and
    recommendation, and the run's config; ``NotFoundError`` (RUN_NOT_FOUND) when the run
    has no live agent."""
    return cast(RunDetail, (yield call(R.RUN_GET, runId=run_id)))


def _pages(route: Route, **params: str) -> Plan[list[dict[str, Any]]]:
    pages: list[dict[str, Any]] = []
    query = {"limit": "1000"}
    while True:
        page = yield call(route, query=query, params=params)
        pages.append(page)
        if page.get("next") is None:
            return pages
        query = {"limit": "1000", "after": str(page["next"])}


def _entries(route: Route, **params: str) -> Plan[dict[str, Any]]:
    entries: dict[str, Any] = {}
    for page in (yield from _pages(route, **params)):
        entries.update(page["entries"])
    return entries


class Runs(Namespace):
    """The runs API of one client (``client.runs``); see the module's docstring."""

    def track(self, run_id: str, *, agent_id: str, policy: Policy = "nudge",
              timeout: float = 2.0, max_pending: int = 10_000) -> Tracker:
        """A run tracker for one agent (loopsense_sdk.tracker): each step answered within
        ``timeout`` seconds, never raising into the agent but, with ``policy="stop"``,
        ``AgentLoopDetected`` after a nudge."""
        from loopsense_sdk.tracker import Tracker

        return Tracker(self._client, run_id, agent_id=agent_id, policy=policy, timeout=timeout,
                       max_pending=max_pending)

    register = synchronous(_register)
    steps = synchronous(_steps)
    signal = synchronous(_signal)
    reset = synchronous(_reset)
    config = synchronous(_config)
    put_memory = synchronous(_put_memory)
    get_memory = synchronous(_get_memory)
    delete_memory = synchronous(_delete_memory)
    memory = synchronous(_memory)
    add_lesson = synchronous(_add_lesson)
    lessons = synchronous(_lessons)
    events = synchronous(_events)
    circuit_break = synchronous(_circuit_break)
    snapshot = synchronous(_snapshot)
    restore = synchronous(_restore)
    context = synchronous(_context)
    list = synchronous(_list)
    get = synchronous(_get)

    def all(self, *, page_size: int = 50) -> Iterator[RunSummary]:
        """Every live run, following the pages."""
        cursor: str | None = None
        while True:
            page = self.list(limit=page_size, cursor=cursor)
            yield from page["items"]
            cursor = page["nextCursor"]
            if cursor is None:
                return


class AsyncRuns(Namespace):
    """The runs API of an asyncio client (``AsyncClient.runs``): ``Runs``' methods, awaited."""

    def track(self, run_id: str, *, agent_id: str, policy: Policy = "nudge",
              timeout: float = 2.0, max_pending: int = 10_000) -> AsyncTracker:
        """``Runs.track`` for asyncio agents: the same tracker, its methods awaited."""
        from loopsense_sdk.tracker import AsyncTracker

        sync = self._client._sync_client().runs.track(
            run_id, agent_id=agent_id, policy=policy, timeout=timeout, max_pending=max_pending)
        return AsyncTracker(sync)

    register = asynchronous(_register)
    steps = asynchronous(_steps)
    signal = asynchronous(_signal)
    reset = asynchronous(_reset)
    config = asynchronous(_config)
    put_memory = asynchronous(_put_memory)
    get_memory = asynchronous(_get_memory)
    delete_memory = asynchronous(_delete_memory)
    memory = asynchronous(_memory)
    add_lesson = asynchronous(_add_lesson)
    lessons = asynchronous(_lessons)
    events = asynchronous(_events)
    circuit_break = asynchronous(_circuit_break)
    snapshot = asynchronous(_snapshot)
    restore = asynchronous(_restore)
    context = asynchronous(_context)
    list = asynchronous(_list)
    get = asynchronous(_get)

    async def all(self, *, page_size: int = 50) -> AsyncIterator[RunSummary]:
        """Every live run, following the pages: ``async for run in ....all()``."""
        cursor: str | None = None
        while True:
            page = await self.list(limit=page_size, cursor=cursor)
            for run in page["items"]:
                yield run
            cursor = page["nextCursor"]
            if cursor is None:
                return
