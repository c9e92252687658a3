"""The runs API's routes (docs/runs.md): HTTP API (payload 2.0) events onto the run monitor
(platform/runs/monitor.py) and recover (platform/runs/recover.py), every failure onto the one
error envelope. Dispatched on ``routeKey`` like the settings routes (platform/settings/routes.py
says why).
"""

from __future__ import annotations

from typing import Any

from loopsense.platform.access.idempotency import KEY_HEADER, check_key
from loopsense.platform.http.answer import Route, dispatch
from loopsense.platform.http.contract import GATE_ERRORS, Contract
from loopsense.platform.http.request import Request, json_body
from loopsense.platform.runs.monitor import MAX_BODY, MAX_STEPS_BODY, Runs
from loopsense.platform.runs.recover import DEFAULT_PAGE, MAX_PAGE, Recover
from loopsense.platform.runs.views import DEFAULT_LIMIT, MAX_LIMIT, RunViews

RUN = "/v1/runs/{runId}"


def _steps(runs: Runs, identity: Any, request: Request) -> dict[str, Any]:
    key = check_key(request.header(KEY_HEADER))
    raw = json_body(request.body, MAX_STEPS_BODY)
    return runs.steps(identity, request.params.get("runId", ""), raw, request.body, key)


def _body(request: Request) -> Any:
    return json_body(request.body, MAX_BODY) if request.body else None


def _run(request: Request) -> str:
    return request.params.get("runId", "")


def _keyed(request: Request) -> tuple[Any, bytes, str | None]:
    """A body and its Idempotency-Key (circuit break, restore)."""
    return _body(request), request.body, check_key(request.header(KEY_HEADER))


ROUTES: dict[str, Route] = {
    # reading runs (platform/runs/views.py)
    "GET /v1/runs": lambda runs, who, request: RunViews(runs).list(who, request.query),
    f"GET {RUN}": lambda runs, who, request: RunViews(runs).detail(who, _run(request)),
    f"POST {RUN}/steps": _steps,
    f"POST {RUN}/agents": lambda runs, who, request: runs.register(
        who, request.params.get("runId", ""), _body(request)),
    f"GET {RUN}/signal": lambda runs, who, request: runs.signal(
        who, request.params.get("runId", ""), request.query.get("agentId")),
    f"POST {RUN}/reset": lambda runs, who, request: runs.reset(
        who, request.params.get("runId", ""), _body(request)),
    f"PUT {RUN}/config": lambda runs, who, request: runs.set_config(
        who, request.params.get("runId", ""), _body(request)),
    # working memory, lessons, events, the circuit break, snapshots, the briefing
    f"PUT {RUN}/memory/{{key}}": lambda runs, who, request: Recover(runs).put(
        who, _run(request), request.params.get("key", ""), request.body),
    f"GET {RUN}/memory/{{key}}": lambda runs, who, request: Recover(runs).get(
        who, _run(request), request.params.get("key", "")),
    f"DELETE {RUN}/memory/{{key}}": lambda runs, who, request: Recover(runs).delete(
        who, _run(request), request.params.get("key", "")),
    f"GET {RUN}/memory": lambda runs, who, request: Recover(runs).get_all(
        who, _run(request), request.query),
    f"POST {RUN}/lessons": lambda runs, who, request: Recover(runs).add_lesson(
        who, _run(request), _body(request)),
    f"GET {RUN}/lessons": lambda runs, who, request: Recover(runs).lessons(
        who, _run(request), request.query),
    f"GET {RUN}/events": lambda runs, who, request: Recover(runs).events(
        who, _run(request), request.query),
    f"POST {RUN}/circuit-break": lambda runs, who, request: Recover(runs).circuit_break(
        who, _run(request), *_keyed(request)),
    f"GET {RUN}/snapshots/{{snapshotId}}": lambda runs, who, request: Recover(runs).snapshot(
        who, _run(request), request.params.get("snapshotId", ""), request.query),
    f"POST {RUN}/snapshots/{{snapshotId}}/restore": lambda runs, who, request: Recover(
        runs).restore(who, _run(request), request.params.get("snapshotId", ""),
                      *_keyed(request)),
    f"POST {RUN}/context": lambda runs, who, request: Recover(runs).context(
        who, _run(request), _body(request)),
}


_M, _R = "loopsense.platform.runs.monitor", "loopsense.platform.runs.recover"
_A = "loopsense.platform.runs.answers"
# Every runs route: the gate (agent.run_monitor's grant and plan, the rate), a runId to check.
_RUN = ("VALIDATION_ERROR", *GATE_ERRORS)
_WRITE = (*_RUN, "RUN_WRITE_CONFLICT")
# The flow a client follows: register, steps, signal, circuit break, restore.
_SAME_RUN = (("runId", "$request.path.runId"),)
_ON_THE_RUN = ((f"POST {RUN}/steps", _SAME_RUN), (f"GET {RUN}/signal", _SAME_RUN),
               (f"POST {RUN}/circuit-break", _SAME_RUN), (f"GET {RUN}", _SAME_RUN))
_PAGE = (("limit", f"at most this many (1..{MAX_PAGE}, default {DEFAULT_PAGE})"),
         ("after", "the `next` cursor of the previous page"))
CONTRACTS: dict[str, Contract] = {
    "GET /v1/runs": Contract("the tenant's live runs, newest first", _RUN, query=(
        ("limit", f"at most this many runs (1..{MAX_LIMIT}, default {DEFAULT_LIMIT})"),
        ("cursor", "the `nextCursor` of the previous page")),
        answer=f"{_A}:RunsPage"),
    f"GET {RUN}": Contract("one run: its agents, their signals and timelines",
                           (*_RUN, "RUN_NOT_FOUND"),
                           answer=f"{_A}:RunDetail"),
    f"POST {RUN}/steps": Contract(
        "steps of one agent (one step, or {steps: [...]}) -> the run's signal",
        (*_WRITE, "RUN_BATCH_INVALID", "IDEMPOTENCY_KEY_REUSED", "IDEMPOTENCY_IN_PROGRESS"),
        body=(f"{_M}:StepBatch", "loopsense.skills.run_monitor:Step"), idempotent=True,
        links=_ON_THE_RUN,
        answer=f"{_A}:StepsOrOff"),
    f"POST {RUN}/agents": Contract("register an agent (its role, its objective)", _WRITE,
                                   body=(f"{_M}:Registration",), links=_ON_THE_RUN,
                                   answer=f"{_A}:Registered"),
    f"GET {RUN}/signal": Contract("an agent's current signal", (*_RUN, "RUN_AGENT_NOT_FOUND"),
                                  query=(("agentId", "the agent (default: the only one)"),),
                                  answer=f"{_A}:SignalOrOff"),
    f"POST {RUN}/reset": Contract("reset an agent's (or every agent's) monitor state",
                                  (*_WRITE, "RUN_AGENT_NOT_FOUND"), body=(f"{_M}:ResetBody",),
                                  answer=f"{_A}:ResetAnswer"),
    f"PUT {RUN}/config": Contract("the run's monitor config (thresholds, tools, rules)", _WRITE,
                                  body_schema="MonitorConfig",
                                  answer=f"{_A}:ConfigAnswer"),
    f"PUT {RUN}/memory/{{key}}": Contract("set one working-memory entry (any JSON value)",
                                          (*_WRITE, "RUN_MEMORY_FULL"), body_schema="Any",
                                          answer=f"{_A}:MemorySet"),
    f"GET {RUN}/memory/{{key}}": Contract("one working-memory entry",
                                          (*_RUN, "RUN_MEMORY_NOT_FOUND"),
                                          answer=f"{_A}:MemoryEntry"),
    f"DELETE {RUN}/memory/{{key}}": Contract("delete one working-memory entry",
                                             (*_WRITE, "RUN_MEMORY_NOT_FOUND"),
                                             answer=f"{_A}:MemoryDeleted"),
    f"GET {RUN}/memory": Contract("the run's working memory, a page at a time", _RUN,
                                  query=_PAGE,
                                  answer=f"{_A}:MemoryPage"),
    f"POST {RUN}/lessons": Contract("add a lesson or a fact", _WRITE,
                                    body=(f"{_R}:LessonBody",),
                                    answer=f"{_A}:LessonAdded"),
    f"GET {RUN}/lessons": Contract("the run's lessons, a page at a time", _RUN, query=_PAGE,
                                   answer=f"{_A}:LessonsPage"),
    f"GET {RUN}/events": Contract("the run's events (breaks, restores), a page at a time", _RUN,
                                  query=_PAGE,
                                  answer=f"{_A}:EventsPage"),
    f"POST {RUN}/circuit-break": Contract(
        "snapshot and clear working memory, reset the monitor",
        (*_WRITE, "RUN_AGENT_NOT_FOUND", "IDEMPOTENCY_KEY_REUSED", "IDEMPOTENCY_IN_PROGRESS"),
        body=(f"{_R}:BreakBody",), idempotent=True, links=tuple(
            (route, (*_SAME_RUN, ("snapshotId", "$response.body#/snapshotId")))
            for route in (f"POST {RUN}/snapshots/{{snapshotId}}/restore",
                          f"GET {RUN}/snapshots/{{snapshotId}}")),
        answer=f"{_A}:BreakAnswer"),
    f"GET {RUN}/snapshots/{{snapshotId}}": Contract(
        "one snapshot of working memory, a page at a time", (*_RUN, "RUN_SNAPSHOT_NOT_FOUND"),
        query=_PAGE,
        answer=f"{_A}:SnapshotPage"),
    f"POST {RUN}/snapshots/{{snapshotId}}/restore": Contract(
        "restore working memory from a snapshot",
        (*_WRITE, "RUN_SNAPSHOT_NOT_FOUND", "IDEMPOTENCY_KEY_REUSED",
         "IDEMPOTENCY_IN_PROGRESS"), body_schema="Empty", idempotent=True,
         answer=f"{_A}:RestoreAnswer"),
    f"POST {RUN}/context": Contract("a briefing of the run within a token budget", _RUN,
                                    body=(f"{_R}:ContextBody",),
                                    answer=f"{_A}:ContextAnswer"),
}


def handle(event: dict[str, Any], runs: Runs) -> dict[str, Any]:
    """An HTTP API (payload 2.0) event of one of the runs routes -> its response."""
    return dispatch(event, runs, ROUTES, "runs")
