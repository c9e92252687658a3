"""The runs API's routes (docs/runs.md): HTTP API (payload 2.0) events onto loopsense.platform.runs,
every failure onto the one error envelope. Dispatched on ``routeKey`` like the settings routes
(platform/settings_api.py says why).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from loopsense.errors import LoopsenseError
from loopsense.platform.auth import identity_from_context
from loopsense.platform.http import Request, json_body, json_response, request_from_event
from loopsense.platform.idempotency import KEY_HEADER, check_key
from loopsense.platform.routes import answer
from loopsense.platform.runs import MAX_BODY, MAX_STEPS_BODY, Runs

RUN = "/v1/runs/{runId}"
Action = Callable[[Runs, Any, Request], dict[str, Any]]


def _steps(runs: Runs, identity: Any, request: Request) -> dict[str, Any]:
    key = check_key(request.header(KEY_HEADER))
    raw = json_body(request.body, MAX_STEPS_BODY)
    return runs.steps(identity, request.params.get("runId", ""), raw, request.body, key)


def _body(request: Request) -> Any:
    return json_body(request.body, MAX_BODY) if request.body else None


ROUTES: dict[str, Action] = {
    f"POST {RUN}/steps": _steps,
    f"POST {RUN}/agents": lambda runs, who, request: runs.register(
        who, request.params.get("runId", ""), _body(request)),
    f"GET {RUN}/signal": lambda runs, who, request: runs.signal(
        who, request.params.get("runId", ""), request.query.get("agentId")),
    f"POST {RUN}/reset": lambda runs, who, request: runs.reset(
        who, request.params.get("runId", ""), _body(request)),
    f"PUT {RUN}/config": lambda runs, who, request: runs.set_config(
        who, request.params.get("runId", ""), _body(request)),
}


def handle(event: dict[str, Any], runs: Runs) -> dict[str, Any]:
    """An HTTP API (payload 2.0) event of one of the runs routes -> its response."""
    request = request_from_event(event)
    route = str(event.get("routeKey") or f"{request.method} {request.path}")

    def run(log: dict[str, Any]) -> dict[str, Any]:
        identity = identity_from_context(request.authorizer)
        log["tenant"] = identity.tenant_id
        action = ROUTES.get(route)
        if action is None:
            raise LoopsenseError("ROUTE_NOT_FOUND", "no such route")
        log["route"] = route
        return json_response(200, action(runs, identity, request),
                             {"X-Request-Id": request.request_id})

    return answer("runs", request, run)
