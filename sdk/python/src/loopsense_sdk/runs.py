"""``client.runs``: the stateful runs API (``/v1/runs/{runId}/...``, docs/runs.md).

Each method is one request, with ``execute``'s rules (loopsense_sdk.client): typed errors,
retries of what the server marks retryable within the client's deadline, and for ``steps``
one ``Idempotency-Key`` per call, sent again on each retry, so a retried batch is applied and
charged once (the server answers the replay with the first answer). The other writes are
idempotent by nature: ``register`` is an upsert, ``config`` a PUT, and a ``reset`` retried
before any new step leaves the segment where the first one put it.

Answers are frozen dataclasses with attributes (``signal.is_looping``), each keeping the
whole wire answer in ``raw`` for fields newer than this SDK. While the tenant's monitor is off
(``monitor_disabled``), a signal reads as "nothing found" (not looping, confidence 0,
``continue``), so an orchestrator keeps running unchanged.

Adding a route: one method that builds its body and calls ``self._send``, one answer class.
"""

from __future__ import annotations

import urllib.parse
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Unpack, cast

from loopsense_sdk.types import RunFinding, RunMonitorConfig, RunRule, RunStep

__all__ = ["AgentReset", "Finding", "Recommendation", "Retention", "RunAgent", "RunConfig",
           "RunReset", "Runs", "Signal", "StepsResult"]

# (method, path, JSON body or None, extra headers) -> the parsed 2xx answer, with the client's
# retries; raises a LoopsenseError (Client._send).
Send = Callable[[str, str, Any, Mapping[str, str]], Any]


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


class Runs:
    """The runs API of one client (``client.runs``); see the module's docstring."""

    def __init__(self, send: Send) -> None:
        self._send_json = send

    def register(self, run_id: str, *, agent_id: str, role: str | None = None,
                 objective_embedding: Sequence[float] | None = None) -> RunAgent:
        """Register (or update) an agent of the run: its role and objective (for drift).
        Registering again replaces both (absent: cleared) and keeps the agent's state."""
        body: dict[str, Any] = {"agentId": agent_id}
        if role is not None:
            body["role"] = role
        if objective_embedding is not None:
            body["objectiveEmbedding"] = list(objective_embedding)
        return RunAgent.of(self._send("POST", run_id, "agents", body))

    def steps(self, run_id: str, steps: Sequence[RunStep], *, agent_id: str | None = None,
              idempotency_key: str | None = None) -> StepsResult:
        """Send a batch of one agent's steps (1..500, in order); the verdict after the last.
        Each step carries ``agentId``; ``agent_id=`` fills it in where a step has none. The
        Idempotency-Key (a uuid4, or yours) makes a retried batch apply and charge once."""
        batch = [dict(step) if agent_id is None else {"agentId": agent_id, **step}
                 for step in steps]
        key = idempotency_key if idempotency_key is not None else str(uuid.uuid4())
        return StepsResult.of(self._send("POST", run_id, "steps", {"steps": batch},
                                         headers={"Idempotency-Key": key}))

    def signal(self, run_id: str, *, agent_id: str) -> Signal:
        """The agent's verdict now: ``RunAgentNotFoundError`` if the run has no such agent."""
        return Signal.of(self._send("GET", run_id, "signal", query={"agentId": agent_id}))

    def reset(self, run_id: str, *, agent_id: str | None = None) -> RunReset:
        """A reset point (segment, nudge counts, last recommendation emptied; the step count
        goes on) for one agent, or for every agent of the run."""
        body = {"agentId": agent_id} if agent_id is not None else {}
        return RunReset.of(self._send("POST", run_id, "reset", body))

    def config(self, run_id: str, **settings: Unpack[RunMonitorConfig]) -> RunConfig:
        """Set the run's config (agent.run_monitor's ``config`` names and bounds, without
        ``objective_embedding``: objectives are per agent, ``register``); it replaces the
        previous one and applies to every agent from its next step."""
        return RunConfig.of(self._send("PUT", run_id, "config", dict(settings)))

    def _send(self, method: str, run_id: str, route: str, body: Any = None, *,
              query: Mapping[str, str] | None = None,
              headers: Mapping[str, str] | None = None) -> dict[str, Any]:
        # run ids are A-Z a-z 0-9 . _ : - (anything else is quoted and refused by the server)
        path = f"/v1/runs/{urllib.parse.quote(run_id, safe=':')}/{route}"
        if query:
            path += "?" + urllib.parse.urlencode(query)
        return cast(dict[str, Any], self._send_json(method, path, body, headers or {}))
