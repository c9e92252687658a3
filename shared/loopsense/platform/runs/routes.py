"""The runs API's routes (docs/runs.md): HTTP API (payload 2.0) events onto the run monitor
(platform/runs/monitor.py) and recover (platform/runs/recover.py), every failure onto the one
error envelope. Dispatched on ``routeKey`` like the settings routes (platform/settings/routes.py
says why).
"""

from __future__ import annotations

from typing import Any

from loopsense.platform.access.idempotency import KEY_HEADER, check_key
from loopsense.platform.http.answer import Route, dispatch
from loopsense.platform.http.request import Request, json_body
from loopsense.platform.runs.monitor import MAX_BODY, MAX_STEPS_BODY, Runs
from loopsense.platform.runs.recover import Recover
from loopsense.platform.runs.views import RunViews

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


def handle(event: dict[str, Any], runs: Runs) -> dict[str, Any]:
    """An HTTP API (payload 2.0) event of one of the runs routes -> its response."""
    return dispatch(event, runs, ROUTES, "runs")
